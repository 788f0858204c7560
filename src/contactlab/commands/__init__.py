"""CLI subcommands: each module defines ``register(app: typer.Typer)``.

Shared helpers for the commands: :func:`console` (rich output that is not cut at 80 columns
when it goes to a file or a pipe), :func:`interrupt_exit_on_sigterm`, and :func:`status_text`
(one spelling of a solver status everywhere: the ``Status`` name, e.g. ``SOLVED``; defined with
``Solution`` in contactlab/solution.py).
"""
from __future__ import annotations

import signal
import sys

from ..solution import status_text  # noqa: F401  (its home is contactlab.solution)


def console(stderr: bool = False, quiet: bool = False):
    """A rich Console; on a non-terminal stream lines are not wrapped or cut at 80 columns."""
    from rich.console import Console
    import os
    stream = sys.stderr if stderr else sys.stdout
    tty = hasattr(stream, "isatty") and stream.isatty()
    width = 100_000
    if tty:
        try:
            width = os.get_terminal_size(stream.fileno()).columns or 80   # a pty may report 0 x 0
        except (OSError, ValueError):
            width = 80
    return Console(stderr=stderr, quiet=quiet, width=width, soft_wrap=not tty)


def interrupt_exit_on_sigterm() -> None:
    """Treat SIGTERM like Ctrl-C (KeyboardInterrupt), so that partial output is kept and marked."""
    def handler(signum, frame):
        raise KeyboardInterrupt
    try:
        signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread (e.g. under a test runner thread)
        pass

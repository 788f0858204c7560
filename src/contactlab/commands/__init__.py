"""CLI subcommands: each module defines ``register(app: typer.Typer)``.

Shared helpers for the commands: :func:`console` (rich output that is not cut at 80 columns
when it goes to a file or a pipe), :func:`interrupt_exit_on_sigterm`, :func:`status_text`
(one spelling of a solver status everywhere: the ``Status`` name, e.g. ``SOLVED``).
"""
from __future__ import annotations

import signal
import sys


def console(stderr: bool = False, quiet: bool = False):
    """A rich Console; on a non-terminal stream lines are not wrapped or cut at 80 columns."""
    from rich.console import Console
    import os
    stream = sys.stderr if stderr else sys.stdout
    tty = hasattr(stream, "isatty") and stream.isatty()
    width = 100_000
    if tty:
        try:
            width = os.get_terminal_size(stream.fileno()).columns
        except (OSError, ValueError):
            width = 80
    return Console(stderr=stderr, quiet=quiet, width=width, soft_wrap=not tty)


def status_text(status) -> str:
    """A solver status as the CLI prints it everywhere (text and JSON): the enum name, ``SOLVED``."""
    return getattr(status, "name", str(status).upper())


def interrupt_exit_on_sigterm() -> None:
    """Treat SIGTERM like Ctrl-C (KeyboardInterrupt), so that partial output is kept and marked."""
    def handler(signum, frame):
        raise KeyboardInterrupt
    try:
        signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread (e.g. under a test runner thread)
        pass


def check_output(path, flag: str, *, suffixes: tuple[str, ...] | None = None, folder: bool = False):
    """Refuse, before any work, an output the command could not write (ParamError naming ``flag``):
    a directory where a file is wanted (or a file where a folder is), a special file (a device is
    never replaced by a rename), a suffix outside ``suffixes``, or a folder where no file can be
    created (tried: a temporary file is made and removed there, which also creates missing parents)."""
    import os
    import tempfile
    from pathlib import Path

    from ..errors import ParamError
    path = Path(path)
    if folder:
        if path.exists() and not path.is_dir():
            raise ParamError(f"{flag} {path} is a file; give a folder")
        where = path
    else:
        if path.is_dir():
            raise ParamError(f"{flag} {path} is a directory; give a file name")
        if path.exists() and not path.is_file():
            raise ParamError(f"{flag} {path} is not a regular file; give a file name")
        if suffixes is not None and path.suffix.lower() not in suffixes:
            raise ParamError(f"{flag} writes {' or '.join(suffixes)} files; got {str(path)!r}")
        where = path.parent
    try:
        where.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".contactlab-write-test.", dir=where)
        os.close(fd)
        os.unlink(tmp)
    except OSError as exc:
        raise ParamError(f"{flag} {path}: cannot write there ({exc.strerror or exc})") from None


def write_failed(exc: OSError, what) -> str:
    """The one line for an output that could not be written (disk full, permissions, ...)."""
    return f"error: could not write {what} ({exc.strerror or exc}); any previous file there is left as it was"

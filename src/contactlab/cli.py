"""The ``contactlab`` command. Each module in ``contactlab.commands`` adds its subcommands."""
from __future__ import annotations

import importlib
import pkgutil
import sys
import warnings

import typer

from . import commands


def _version(value: bool):
    if value:
        from . import __version__
        typer.echo(f"contactlab {__version__}")
        raise typer.Exit(0)


app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="Multi-rigid-body contact dynamics on certified complementarity solvers.")


@app.callback()
def _root(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                       help="print the version and exit")):
    """Multi-rigid-body contact dynamics on certified complementarity solvers."""


for _mod in sorted(m.name for m in pkgutil.iter_modules(commands.__path__)):
    if not _mod.startswith("_"):
        importlib.import_module(f"{commands.__name__}.{_mod}").register(app)


class RepeatedWarnings:
    """Show each distinct warning (category, message, place) once; count the repeats and print one
    summary line at the end. ``warnings.catch_warnings``/``np.errstate`` blocks reset Python's own
    once-per-place registry, which is how thousands of identical lines reached the terminal."""

    def __init__(self, stream=None):
        self.stream = stream
        self.seen: dict[tuple, int] = {}
        self._orig = None

    def _show(self, message, category, filename, lineno, file=None, line=None):
        key = (category, str(message), filename, lineno)
        self.seen[key] = self.seen.get(key, 0) + 1
        if self.seen[key] == 1:
            self._orig(message, category, filename, lineno, file or self.stream, line)

    def __enter__(self):
        self._orig, warnings.showwarning = warnings.showwarning, self._show
        return self

    def __exit__(self, *exc):
        warnings.showwarning = self._orig
        extra = {k: n - 1 for k, n in self.seen.items() if n > 1}
        if extra:
            total = sum(extra.values())
            worst = max(extra, key=extra.get)
            print(f"({total} repeated warning(s) not shown; most: {extra[worst]} x "
                  f"{worst[0].__name__}: {worst[1]} at {worst[2]}:{worst[3]})", file=self.stream or sys.stderr)


def main() -> None:
    """Entry point. BLAS runs on CONTACTLAB_BLAS_THREADS threads (default 1): contact problems are
    many small dense solves, for which thread start-up costs more than it saves (contactlab/blas.py). Repeated warnings are shown once (:class:`RepeatedWarnings`).
    Help and usage errors wrap at the terminal's width, and at 80 columns into a file or pipe (rich's
    default); the commands' own results are not cut there (:func:`contactlab.commands.console`)."""
    from .blas import blas_threads, default_threads

    with blas_threads(default_threads()), RepeatedWarnings():
        app()

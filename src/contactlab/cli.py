"""The ``contactlab`` command. Each module in ``contactlab.commands`` adds its subcommands."""
from __future__ import annotations

import importlib
import pkgutil

import typer

from . import commands

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="Multi-rigid-body contact dynamics on certified complementarity solvers.")

for _mod in sorted(m.name for m in pkgutil.iter_modules(commands.__path__)):
    if not _mod.startswith("_"):
        importlib.import_module(f"{commands.__name__}.{_mod}").register(app)


def main() -> None:
    """Entry point. BLAS runs on CONTACTLAB_BLAS_THREADS threads (default 1): contact problems are
    many small dense solves, for which thread start-up costs more than it saves (30x slower
    measured on a loaded 2-core machine)."""
    import os

    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=int(os.environ.get("CONTACTLAB_BLAS_THREADS", "1")), user_api="blas"):
        app()

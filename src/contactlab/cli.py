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
    app()

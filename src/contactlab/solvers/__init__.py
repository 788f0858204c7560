"""Solvers: every module in this package registers its methods on import (DESIGN.md)."""
import importlib
import pkgutil

from .registry import SolverSpec, available_solvers, get_solver, register, solve

for _mod in sorted(m.name for m in pkgutil.iter_modules(__path__)):
    if _mod != "registry" and not _mod.startswith("_"):
        importlib.import_module(f"{__name__}.{_mod}")

__all__ = ["solve", "register", "available_solvers", "get_solver", "SolverSpec"]

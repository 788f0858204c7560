"""Moved: the exact-cone Trinkle-Pang formulation lives beside its model, in
:mod:`contactlab.models.trinkle_pang_cone` (it solves, so it stands above the solvers). Its names stay
importable from here for one release, loaded on first use (the one import that runs up a layer,
allowed by name in tests/project/test_layering.py)."""
from __future__ import annotations

_MOVED = ("TPConeResult", "trinkle_pang_cone_problem", "solve_trinkle_pang_cone_exact")


def __getattr__(name: str):
    if name in _MOVED:
        from ..models import trinkle_pang_cone
        return getattr(trinkle_pang_cone, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

"""Contact models: each module turns one :class:`~contactlab.mechanics.ConstraintSystem` into a
problem for the solvers and maps the solution back (DESIGN.md, docs/architecture.md).

A model is a module in this package that defines
    NAME: str                      the name used by ``--model`` and :func:`get_model`
    Options: frozen dataclass      its options (defaults documented)
    build(system, options) -> Built       models/built.py: Built(problem, rows, state)
    recover(system, built, solution, options) -> StepResult     models/common.py (one result type,
                                           one set of contact modes MODE_*)
and optionally ``DEFAULT_METHOD`` (solver used when none is given), ``FREE_BODIES_DEFAULT``
(``(method, options)``: the certified fast combination taken instead when neither a method nor
options are given and every moving body is free; :func:`contactlab.sim.simulator.model_default`),
``DESCRIPTION`` and
    warm_start(system, previous, match, options) -> z0 or None: this step's starting point from the
    previous step's StepResult with contacts matched by ``match`` (collision.match_indices); without
    it the simulator reuses the previous answer as it is when its size is unchanged.
(Until every model returns a Built, a bare problem is accepted: ``built.problem_of`` unwraps either.)

Stage capabilities (optional): what the simulator's step stages (:mod:`contactlab.sim.stages`) may do with a
model's problem besides ``build`` and ``recover``; the stages are chosen from these, never from the
model's name:
    sweep_heights(system, options, gravity) -> (n,)   each row's height, for top-down sweeps
    rows_available(options) -> bool, rows(system, options) -> (H, q, cfm, lo, hi, findex, mu)
                                   the problem without its matrix H W H' + cfm I (matrix-free sweeps,
                                   a warm start certified without the matrix)
    COMPILED_STEP: str             the rows the simulator's compiled step builds itself on scenes of
                                   free bodies ("box-rows": :mod:`contactlab.sim.box_kernels`, box friction's)
Adding a file is enough: modules are discovered on first use. Modules without ``NAME`` (such as
``common``, ``built``, ``rk4``) are helpers and are skipped.
"""
from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType

from ..errors import ModelError

_MODELS: dict[str, ModuleType] | None = None


def _discover() -> dict[str, ModuleType]:
    global _MODELS
    if _MODELS is None:
        found = {}
        for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
            if info.name.startswith("_") or info.name == "common":
                continue
            mod = importlib.import_module(f"{__name__}.{info.name}")
            name = getattr(mod, "NAME", None)
            if isinstance(name, str) and callable(getattr(mod, "build", None)):
                if name in found:
                    raise RuntimeError(f"contact model {name!r} defined twice")
                found[name] = mod
        _MODELS = found
    return _MODELS


def available_models() -> dict[str, ModuleType]:
    """Registered contact models by name."""
    return dict(_discover())


def get_model(name: str) -> ModuleType:
    models = _discover()
    if name not in models:
        raise ModelError(f"unknown contact model {name!r}; known models: {', '.join(sorted(models))}")
    return models[name]


def make_options(model: ModuleType, options: dict | None = None):
    """The model's ``Options`` from a dict, raising :class:`ModelError` on unknown keys."""
    import dataclasses
    options = dict(options or {})
    cls = getattr(model, "Options", None)
    if cls is None:
        if options:
            raise ModelError(f"model {model.NAME!r} takes no options, got {sorted(options)}")
        return None
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(options) - names)
    if unknown:
        raise ModelError(f"unknown option(s) {unknown} for model {model.NAME!r}; known: {sorted(names)}")
    return cls(**options)


__all__ = ["available_models", "get_model", "make_options"]

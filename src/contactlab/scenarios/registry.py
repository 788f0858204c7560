"""The catalogue of named scenes: :func:`register_scene`, :func:`make_scene`, :func:`scene_parameters`.

It imports no scene module: the package (``contactlab.scenarios``) imports them and registers each,
so a scene module may build other scenes by name through this module without an import circle.
"""
from __future__ import annotations

import inspect
from pathlib import Path

from ..errors import ModelError

SCENES: dict = {}   # name -> builder; filled by the package (contactlab/scenarios/__init__.py)


def register_scene(name: str, builder) -> None:
    """Add a named scene (a function of keyword parameters with defaults returning a Scene)."""
    if name in SCENES and SCENES[name] is not builder:
        raise RuntimeError(f"scene {name!r} registered twice")
    SCENES[name] = builder


def scene_parameters(name: str) -> dict:
    if name not in SCENES:
        raise ModelError(f"unknown scene {name!r}; built-in scenes: {', '.join(sorted(SCENES))} (or a .toml/.json/.urdf file)")
    return {k: p.default for k, p in inspect.signature(SCENES[name]).parameters.items()}


def _coerce(name: str, key: str, value, default):
    if not isinstance(value, str) or isinstance(default, str):
        return value
    try:
        if isinstance(default, bool):
            if value.lower() in ("1", "true", "yes", "on"):
                return True
            if value.lower() in ("0", "false", "no", "off"):
                return False
            raise ValueError(value)
        if isinstance(default, int):
            return int(value)
        if isinstance(default, float):
            return float(value)
    except ValueError:
        raise ModelError(f"scene {name!r}: parameter {key}={value!r} is not a {type(default).__name__}") from None
    return value


#: the largest count (an int scene parameter with a positive default: bodies, bumps, ...) a scene is
#: built with: 1e11 boxes used to run the builder out of memory instead of being refused
MAX_COUNT = 10_000


def make_scene(name: str, **params):
    """Build a named scene, or load a scene file when ``name`` ends in .toml/.json."""
    if name not in SCENES and Path(name).is_dir():
        raise ModelError(f"{name} is a directory; give a scene name or a .toml/.json/.urdf scene file")
    if Path(name).suffix.lower() in (".toml", ".json"):
        from .io import load_scene
        if params:
            raise ModelError("--set parameters apply to built-in scenes only; edit the scene file instead")
        return load_scene(name)
    if Path(name).suffix.lower() == ".urdf":
        return _urdf_scene(name, **params)
    defaults = scene_parameters(name)
    unknown = sorted(set(params) - set(defaults))
    if unknown:
        raise ModelError(f"scene {name!r} has no parameter(s) {unknown}; parameters: {defaults}")
    args = {k: _coerce(name, k, v, defaults[k]) for k, v in params.items()}
    for k, v in args.items():   # counts: an int parameter with a positive default must be positive
        d = defaults[k]
        if isinstance(d, int) and not isinstance(d, bool) and d > 0 and isinstance(v, int) and not 0 < v <= MAX_COUNT:
            raise ModelError(f"scene {name!r}: parameter {k}={v!r} must be from 1 to {MAX_COUNT} (default {d!r}); "
                             "a count is checked before the scene is built")
    scene = SCENES[name](**args)
    if not any(getattr(b, "kind", "dynamic") != "fixed" for b in scene.bodies):
        raise ModelError(f"scene {name!r} with {args} has no moving bodies; nothing to simulate")
    return scene


URDF_PARAMETERS = {"fixed_base": True, "ground": False, "z": 0.0}


def _urdf_scene(path, **params):
    """A URDF mechanism as a scene: ``fixed_base`` (default True), ``ground`` (a plane at z = 0,
    default False), ``z`` (base height, default 0)."""
    from ..mechanics.scene import Body, Shape
    from ..mechanics.urdf import load_urdf
    unknown = sorted(set(params) - set(URDF_PARAMETERS))
    if unknown:
        raise ModelError(f"a URDF scene has no parameter(s) {unknown}; parameters: {URDF_PARAMETERS}")
    args = {k: _coerce(str(path), k, params.get(k, d), d) for k, d in URDF_PARAMETERS.items()}
    scene = load_urdf(path, fixed_base=args["fixed_base"], position=(0.0, 0.0, float(args["z"])))
    if args["ground"]:
        scene.bodies.insert(0, Body("ground", kind="fixed", shapes=[Shape("halfspace", normal=(0, 0, 1))]))
    return scene

"""Named scenes. ``make_scene(name, **params)``; ``scene_parameters(name)`` lists the parameters
with their defaults (``contactlab simulate SCENE --set KEY=VALUE``). A SCENE may also be a path to
a TOML or JSON scene file (:mod:`contactlab.scenarios.io`)."""
from __future__ import annotations

import inspect
from pathlib import Path

from ..errors import ModelError
from . import incline, pendulum, pile, stack

SCENES = {"incline": incline.build, "stack": stack.build, "pendulum-chain": pendulum.build, "pile": pile.build}


def register_scene(name: str, builder) -> None:
    """Add a named scene (a function of keyword parameters with defaults returning a Scene)."""
    if name in SCENES and SCENES[name] is not builder:
        raise RuntimeError(f"scene {name!r} registered twice")
    SCENES[name] = builder


def scene_parameters(name: str) -> dict:
    if name not in SCENES:
        raise ModelError(f"unknown scene {name!r}; built-in scenes: {', '.join(sorted(SCENES))} (or a .toml/.json file)")
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


def make_scene(name: str, **params):
    """Build a named scene, or load a scene file when ``name`` ends in .toml/.json."""
    if Path(name).suffix.lower() in (".toml", ".json"):
        from .io import load_scene
        if params:
            raise ModelError("--set parameters apply to built-in scenes only; edit the scene file instead")
        return load_scene(name)
    defaults = scene_parameters(name)
    unknown = sorted(set(params) - set(defaults))
    if unknown:
        raise ModelError(f"scene {name!r} has no parameter(s) {unknown}; parameters: {defaults}")
    args = {k: _coerce(name, k, v, defaults[k]) for k, v in params.items()}
    return SCENES[name](**args)


__all__ = ["SCENES", "make_scene", "scene_parameters", "register_scene"]

# issue 5: the box-gripper of drumwright Sec. VII-A (its module also holds the paper's 12-point contact grid)
from . import box_gripper as _box_gripper  # noqa: E402

register_scene("box-gripper", _box_gripper.build)

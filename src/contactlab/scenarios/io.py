"""Scenes as TOML or JSON files (``contactlab simulate my_scene.toml``).

The file mirrors the dataclasses of :mod:`contactlab.mechanics.scene`::

    name = "ramp"
    mu = 0.4
    gravity = [0, 0, -9.81]
    [settings]
    dt = 0.005
    [[bodies]]
    name = "ground"
    kind = "fixed"
    [[bodies.shapes]]
    kind = "halfspace"
    normal = [0, 0, 1]
    [[bodies]]
    name = "box"
    position = [0, 0, 0.1]
    [[bodies.shapes]]
    kind = "box"
    size = [0.2, 0.2, 0.2]
    [[joints]]           # optional
    name = "hinge"
    kind = "revolute"
    parent = "world"
    child = "box"
    [joints.motor]       # optional
    target_velocity = 1.0
    max_force = 5.0

    [[urdf]]             # optional: a URDF mechanism added to the scene
    path = "arm.urdf"    # relative to the scene file
    fixed_base = true
    position = [0, 0, 0]

Unknown keys are errors naming the key and the table they appear in. The full format is in
docs/scene-files.md.
"""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np

from ..errors import ModelError
from ..mechanics.mass_ratio import check_mass_ratio
from ..files import atomic_write
from ..mechanics.scene import Body, Joint, Motor, Scene, Settings, Shape


def _make(cls, data: dict, where: str, nested: dict | None = None):
    if not isinstance(data, dict):
        raise ModelError(f"{where} must be a table/object, got {type(data).__name__}")
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - names)
    if unknown:
        raise ModelError(f"{where}: unknown key(s) {unknown}; known keys: {sorted(names)}")
    args = dict(data)
    for key, fn in (nested or {}).items():
        if key in args and args[key] is not None:
            args[key] = fn(args[key], f"{where}.{key}")
    for k, v in list(args.items()):
        if isinstance(v, list) and k not in ("shapes", "bodies", "joints", "vertices", "inertia"):
            args[k] = tuple(v)
    try:
        return cls(**args)
    except TypeError as exc:
        raise ModelError(f"{where}: {exc}") from None


def scene_from_dict(data: dict, *, validate: bool = True) -> Scene:
    """A :class:`Scene` from plain data (as parsed from TOML or JSON), then validated: a ModelError
    names what is wrong, including two dynamic bodies whose mass ratio is above
    :data:`contactlab.mechanics.MAX_MASS_RATIO` (or the limit of a
    :func:`contactlab.mechanics.mass_ratio_limit` block)."""
    shapes = lambda lst, w: [_make(Shape, s, f"{w}[{i}]") for i, s in enumerate(lst)]
    bodies = lambda lst, w: [_make(Body, b, f"{w}[{i}]", {"shapes": shapes}) for i, b in enumerate(lst)]
    motor = lambda m, w: _make(Motor, m, w)
    joints = lambda lst, w: [_make(Joint, j, f"{w}[{i}]", {"motor": motor}) for i, j in enumerate(lst)]
    settings = lambda s, w: _make(Settings, s, w)
    scene = _make(Scene, data, "scene", {"bodies": bodies, "joints": joints, "settings": settings})
    scene.bodies, scene.joints = list(scene.bodies), list(scene.joints)
    scene.pair_mu = dict(scene.pair_mu or {})
    if validate:
        scene.validate()
        check_mass_ratio(scene)      # a ratio the certified solvers cannot resolve
    return scene


def _plain(x):
    if dataclasses.is_dataclass(x):
        return {f.name: _plain(getattr(x, f.name)) for f in dataclasses.fields(x)
                if getattr(x, f.name) is not None}
    if isinstance(x, dict):
        return {k: _plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple, np.ndarray)):
        return [_plain(v) for v in x]
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, float) and not np.isfinite(x):
        return 1e300 if x > 0 else -1e300
    return x


def scene_to_dict(scene: Scene) -> dict:
    return _plain(scene)


def load_scene(path) -> Scene:
    """Read a scene from ``.toml`` or ``.json``; a ModelError names what is wrong, including two dynamic
    bodies whose mass ratio is above :data:`contactlab.mechanics.MAX_MASS_RATIO` (or the limit of a
    :func:`contactlab.mechanics.mass_ratio_limit` block)."""
    path = Path(path)
    if not path.exists():
        raise ModelError(f"no such scene file: {path}")
    if not path.is_file():
        raise ModelError(f"{path} is not a scene file (a directory?); give a .toml or .json file")
    try:
        text = path.read_text()
        if path.suffix.lower() == ".toml":
            import tomllib
            data = tomllib.loads(text)
        elif path.suffix.lower() == ".json":
            data = json.loads(text)
        else:
            raise ModelError(f"scene files are .toml or .json, got {path.suffix!r}")
    except (ValueError, json.JSONDecodeError) as exc:   # UnicodeDecodeError included
        if isinstance(exc, ModelError):
            raise
        raise ModelError(f"{path}: cannot parse ({exc})") from None
    except RecursionError:
        raise ModelError(f"{path}: cannot parse (nested too deeply; a scene file is a few levels deep)") from None
    try:
        return _with_urdf(data, path) if isinstance(data, dict) and "urdf" in data else scene_from_dict(data)
    except OverflowError as exc:    # an integer beyond any float, e.g. 10**400 written out
        raise ModelError(f"{path}: a number is too large ({exc}); every value must be a finite float") from None


_URDF_KEYS = {"path", "fixed_base", "position", "name"}


def _with_urdf(data: dict, path: Path) -> Scene:
    """A scene file whose ``[[urdf]]`` entries (path relative to the scene file, fixed_base,
    position, name) add each URDF's links and joints to the file's own bodies and joints."""
    from ..mechanics.urdf import load_urdf
    data = dict(data)
    entries = data.pop("urdf")
    entries = entries if isinstance(entries, list) else [entries]
    scene = scene_from_dict(data, validate=False)
    bodies, joints = list(scene.bodies), list(scene.joints)
    for i, e in enumerate(entries):
        if not isinstance(e, dict) or "path" not in e:
            raise ModelError(f"{path}: urdf[{i}] must be a table with at least path = \"robot.urdf\"")
        unknown = sorted(set(e) - _URDF_KEYS)
        if unknown:
            raise ModelError(f"{path}: urdf[{i}]: unknown key(s) {unknown}; known keys: {sorted(_URDF_KEYS)}")
        if not isinstance(e["path"], str) or not e["path"].strip():
            raise ModelError(f"{path}: urdf[{i}].path must be the file name of a URDF, got {e['path']!r}")
        position = e.get("position", (0.0, 0.0, 0.0))
        try:
            position = np.asarray(position, dtype=np.float64)
        except (TypeError, ValueError):
            position = None
        if position is None or position.shape != (3,) or not np.isfinite(position).all():
            raise ModelError(f"{path}: urdf[{i}].position must be three finite numbers, got {e.get('position')!r}")
        name = e.get("name")
        if name is not None and not isinstance(name, str):
            raise ModelError(f"{path}: urdf[{i}].name must be a string, got {name!r}")
        robot = load_urdf(path.parent / e["path"], fixed_base=bool(e.get("fixed_base", True)),
                          position=tuple(position), name=name)
        bodies += robot.bodies
        joints += robot.joints
    scene.bodies, scene.joints = bodies, joints
    scene.validate()
    check_mass_ratio(scene)          # across the file's bodies and the robots' links
    return scene


def save_scene(scene: Scene, path) -> Path:
    """Write ``scene`` as JSON (atomically)."""
    text = json.dumps(scene_to_dict(scene), indent=1)
    return atomic_write(path, lambda tmp: Path(tmp).write_text(text))

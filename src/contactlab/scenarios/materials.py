"""Material friction table of GraspIt! (src/world.cpp; GraspIt! model data §1.2).

arechavaleta §V-A: a plastic hand on a glass object has mu = 0.2 (Fig. 2, the object slips), a rubber
hand mu = 1.0 (Fig. 3, the grasp holds); the table is wood (wood-glass 0.3). The table is
symmetric; each cell holds the static and kinetic coefficient. Contact models here take one mu per
contact: :func:`friction` returns the static value (GraspIt! switches to the kinetic value above a
relative speed of 1 mm/s; we do not, see docs/grasping.md).
"""
from __future__ import annotations

from ..errors import ModelError

MATERIALS = ("glass", "metal", "plastic", "wood", "rubber", "stone")

# upper triangle, row material first: (static, kinetic)
_TABLE = {
    ("glass", "glass"): (0.2, 0.1), ("glass", "metal"): (0.2, 0.1), ("glass", "plastic"): (0.2, 0.1),
    ("glass", "wood"): (0.3, 0.2), ("glass", "rubber"): (1.0, 0.9), ("glass", "stone"): (0.3, 0.2),
    ("metal", "metal"): (0.2, 0.1), ("metal", "plastic"): (0.2, 0.1), ("metal", "wood"): (0.3, 0.2),
    ("metal", "rubber"): (1.0, 0.9), ("metal", "stone"): (0.4, 0.3),
    ("plastic", "plastic"): (0.3, 0.2), ("plastic", "wood"): (0.4, 0.3), ("plastic", "rubber"): (1.0, 0.9),
    ("plastic", "stone"): (0.4, 0.3),
    ("wood", "wood"): (0.4, 0.3), ("wood", "rubber"): (1.0, 0.9), ("wood", "stone"): (0.6, 0.5),
    ("rubber", "rubber"): (2.0, 1.9), ("rubber", "stone"): (1.5, 1.4),
    ("stone", "stone"): (0.7, 0.6),
}


def check_material(where: str, name: str) -> str:
    """``name`` if it is a known material, else a ModelError naming ``where`` and the choices."""
    if name not in MATERIALS and name != "frictionless":
        raise ModelError(f"{where} must be one of {', '.join(MATERIALS)} (or frictionless), got {name!r}")
    return name


def friction(a: str, b: str, kinetic: bool = False) -> float:
    """Coulomb coefficient between materials ``a`` and ``b`` (order free)."""
    check_material("material", a)
    check_material("material", b)
    if "frictionless" in (a, b):
        return 0.0
    pair = _TABLE.get((a, b)) or _TABLE[(b, a)]
    return pair[1] if kinetic else pair[0]


def pair_friction(bodies_a: dict, bodies_b: dict) -> dict:
    """``Scene.pair_mu`` entries {"a/b": mu} for every body of ``bodies_a`` against every body of
    ``bodies_b`` (each a {body name: material} map)."""
    return {f"{x}/{y}": friction(ma, mb) for x, ma in bodies_a.items() for y, mb in bodies_b.items() if x != y}

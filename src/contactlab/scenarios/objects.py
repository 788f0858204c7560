"""Grasped objects on a table (arechavaleta §V-A; GraspIt! model data §1.5).

``glass`` is GraspIt!'s stemmed wine glass (models/objects/glass.iv at its 0.75 scale, 183.8 mm
tall, 200 g) as a convex decomposition of its outer profile (spec §1.5, radii about the glass
axis): the foot disc, the stem, the flare under the bowl (the convex hull of its rings: its
profile is locally convex, so the hull fills it slightly) and the bowl from its base ring to the
rim (the profile is concave there, r'' < 0, so the solid of revolution is itself convex and its
hull is exact up to the facets). The bowl is hollow in GraspIt! but a grasp only meets its outer
wall, so the pieces are solid. Mass properties: a thin shell of glass over the outer surface
(area-weighted), the mass GraspIt! lists (200 g); the inertia is of that shell (GraspIt! derives
it from the mesh; its value is not in the files).

``cylinder``, ``box`` and ``sphere`` are simple props of about the bowl's size (ours). Every object
lies with its long axis along the body's x axis.
"""
from __future__ import annotations

import numpy as np

from ..errors import ModelError
from ..mechanics.scene import Body, Shape

OBJECTS = ("glass", "cylinder", "box", "sphere")

# (radius mm, position along the axis mm), spec §1.5 (after GraspIt!'s 0.75 scale)
GLASS_FOOT = ((52.1, -101.3), (52.1, -98.7))
GLASS_STEM = ((4.82, -98.7), (4.82, -47.0))
GLASS_FLARE = ((4.96, -47.0), (5.40, -45.5), (6.08, -44.2), (6.97, -43.1), (8.07, -42.1), (9.33, -41.3),
               (10.74, -40.8), (12.26, -40.5))
GLASS_BOWL = ((12.26, -40.5), (16.39, -40.0), (20.36, -39.0), (24.16, -37.7), (27.76, -36.1), (31.16, -34.1),
              (34.34, -31.9), (37.27, -29.3), (39.95, -26.5), (42.34, -23.4), (44.45, -20.2), (46.24, -16.7),
              (47.70, -13.1), (48.82, -9.4), (49.58, -5.5), (49.95, -1.5), (49.93, 2.6), (49.49, 6.7),
              (37.67, 82.5))
# the bowl rings kept in the collision hull (every ring would give ~19 table contacts along a line)
GLASS_BOWL_KEEP = (0, 3, 6, 9, 12, 15, 17, 18)


def _rings(profile, facets: int, axis_shift: float = 0.0) -> np.ndarray:
    """Vertices (m) of the rings (r, x) about the x axis, ``facets`` per ring, one vertex at the
    bottom (-z) so a glass lying on a table rests on vertices."""
    ang = -0.5 * np.pi + 2.0 * np.pi * np.arange(facets) / facets
    out = [np.column_stack([np.full(facets, x), r * np.cos(ang), r * np.sin(ang)]) for r, x in profile]
    V = np.vstack(out) * 1e-3
    V[:, 0] -= axis_shift
    return V


def _shell_mass_properties(profile, mass: float) -> tuple[float, np.ndarray]:
    """Centre (along x, m) and inertia about it of a thin shell of ``mass`` over the surface of
    revolution of ``profile`` (a polyline of (r mm, x mm)), area-weighted."""
    P = np.asarray(profile, dtype=np.float64) * 1e-3
    r0, x0, r1, x1 = P[:-1, 0], P[:-1, 1], P[1:, 0], P[1:, 1]
    t = (np.arange(64) + 0.5) / 64
    r = r0[:, None] + (r1 - r0)[:, None] * t
    x = x0[:, None] + (x1 - x0)[:, None] * t
    ds = np.hypot(r1 - r0, x1 - x0)[:, None] / 64
    dA = 2.0 * np.pi * r * ds                   # area of each band
    w = dA / dA.sum() * mass
    xc = float(np.sum(w * x))
    Ixx = float(np.sum(w * r * r))                       # about the axis
    Iyy = float(np.sum(w * (0.5 * r * r + (x - xc) ** 2)))   # about a diameter through the centre
    return xc, np.diag([Ixx, Iyy, Iyy])


def glass_profile() -> list:
    """The outer profile (r mm, x mm) from the foot rim to the glass rim, for mass properties."""
    return [(0.0, -101.3), *GLASS_FOOT, (4.82, -98.7), GLASS_STEM[1], *GLASS_FLARE[1:], *GLASS_BOWL[1:], (0.0, 82.5)]


def make_object(kind: str, *, name: str = "object", mass: float = 0.2, position=(0.0, 0.0, 0.0),
                facets: int = 16, size: float = 0.05, centre: float = 0.0) -> Body:
    """The object ``kind`` resting with its axis along x, its lowest point at ``position``'s z
    (the table top), centred over ``position``'s x, y. ``size``: radius (half height) of the props;
    ``centre``: the point of the glass axis (m, from GraspIt!'s origin) put at ``position``'s x."""
    if kind not in OBJECTS:
        raise ModelError(f"object must be one of {', '.join(OBJECTS)}, got {kind!r}")
    if not mass > 0:
        raise ModelError(f"object mass must be > 0, got {mass}")
    x, y, z = (float(c) for c in position)
    if kind == "glass":
        xc, inertia = _shell_mass_properties(glass_profile(), mass)
        bowl = [GLASS_BOWL[i] for i in GLASS_BOWL_KEEP]
        shapes = [Shape("convex", vertices=_rings(p, facets, xc), name=f"glass_{nm}")
                  for nm, p in (("foot", GLASS_FOOT), ("stem", GLASS_STEM), ("flare", GLASS_FLARE), ("bowl", bowl))]
        rmax = max(r for r, _ in GLASS_FOOT) * 1e-3
        # lying on its side: the foot rim (r 52.1 mm) is lower than the bowl (r 49.95 mm), so the
        # axis starts tilted; put the body's axis at the foot's radius, the glass settles on the table
        return Body(name, mass=mass, inertia=inertia, position=(x + xc - float(centre), y, z + rmax), shapes=shapes)
    s = float(size)
    if kind == "cylinder":
        from ..mechanics.rotation import quat_from_axis_angle
        q = tuple(quat_from_axis_angle((0.0, 1.0, 0.0), 0.5 * np.pi))
        shape = Shape("cylinder", radius=s, length=3.0 * s, orientation=q, name="cylinder")
        r2, L2 = s * s, (3.0 * s) ** 2
        inertia = np.diag([0.5 * mass * r2, mass * (3 * r2 + L2) / 12, mass * (3 * r2 + L2) / 12])
        return Body(name, mass=mass, inertia=inertia, position=(x, y, z + s), shapes=[shape])
    if kind == "box":
        dims = (3.0 * s, 1.6 * s, 1.6 * s)
        return Body(name, mass=mass, position=(x, y, z + 0.8 * s), shapes=[Shape("box", size=dims, name="box")])
    return Body(name, mass=mass, position=(x, y, z + s), shapes=[Shape("sphere", radius=s, name="sphere")])

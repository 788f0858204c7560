"""``count`` boxes named ``box0``.. dropped into a bin (ground and four walls)."""
from __future__ import annotations

import numpy as np

from ..errors import ParamError
from ..mechanics.rotation import quat_from_rotvec, quat_to_matrix
from ..mechanics.scene import Body, Scene, Settings, Shape


def build(count: int = 20, size: float = 0.2, mass: float = 1.0, mu: float = 0.5, dt: float = 0.01,
          seed: int = 0, spacing: float = 1.3, friction_directions: int = 4,
          max_layers: int | None = None) -> Scene:
    """Boxes on a square grid of pitch ``spacing * size`` in layers above the bin, each turned by a
    random small rotation (seeded) that keeps it inside its grid cell (no box starts overlapping
    another); the bin's inner width fits the grid.

    A layer holds 25 boxes (5 x 5) by default, so the pile is a tower ``count / 25`` boxes high.
    ``max_layers``: at most this many layers; the grid widens (``ceil(sqrt(count / max_layers))``
    boxes a side, where that exceeds the default) so that a large pile is a wide one of bounded height
    instead of a tower that topples (a 400-box-high tower at 10,000 boxes does, as a real one would).
    With ``None`` (the default), or where the default grid already has at most ``max_layers`` layers,
    the scene is the default one, box for box."""
    rng = np.random.default_rng(int(seed))
    count = int(count)
    per_side = max(1, int(np.ceil(np.sqrt(count / max(1.0, np.ceil(count / 25))))))
    if max_layers is not None:
        if int(max_layers) < 1:
            raise ParamError(f"max_layers must be a positive number of layers (got {max_layers!r}), or None")
        per_side = max(per_side, int(np.ceil(np.sqrt(count / int(max_layers)))))
    per_layer = per_side * per_side
    pitch = spacing * size
    width = per_side * pitch + size
    t = 0.1
    wall_h = 0.6 * max(1.0, np.ceil(count / per_layer)) * size + size
    bodies = [Body("ground", kind="fixed", shapes=[Shape("halfspace", normal=(0, 0, 1))])]
    walls = [((width / 2 + t / 2, 0, wall_h / 2), (t, width + 2 * t, wall_h)),
             ((-width / 2 - t / 2, 0, wall_h / 2), (t, width + 2 * t, wall_h)),
             ((0, width / 2 + t / 2, wall_h / 2), (width, t, wall_h)),
             ((0, -width / 2 - t / 2, wall_h / 2), (width, t, wall_h))]
    bodies.append(Body("bin", kind="fixed", shapes=[Shape("box", size=s, position=p) for p, s in walls]))
    for i in range(count):
        layer, k = divmod(i, per_layer)
        gx, gy = divmod(k, per_side)
        pos = ((gx - (per_side - 1) / 2) * pitch, (gy - (per_side - 1) / 2) * pitch, size + layer * pitch)
        rv = rng.normal(scale=0.2, size=3)
        # the turned box's bounding box must stay inside its grid cell, or neighbours start overlapping
        # (at spacing 1.3 a turn of ~0.4 rad already reaches the next cell): shrink the turn until it fits
        while np.max(np.abs(quat_to_matrix(quat_from_rotvec(rv))) @ np.full(3, size / 2)) > 0.5 * pitch - 1e-3 * size:
            rv = 0.5 * rv
        q = quat_from_rotvec(rv)
        bodies.append(Body(f"box{i}", mass=mass, position=pos, orientation=tuple(q),
                           shapes=[Shape("box", size=(size, size, size))]))
    return Scene(name="pile", bodies=bodies, mu=mu, settings=Settings(dt=dt, friction_directions=friction_directions))

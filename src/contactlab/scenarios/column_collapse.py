"""``column-collapse``: a column of seven blocks that falls apart, its motionless set changing as
blocks come to rest (after loomis-balkcom Fig. 1: changes at frames 60 and 195; small friction).

Blocks ``b0`` (bottom) .. ``b6`` (top), ``width`` x ``depth`` x ``height``, moving in the x-z plane,
and two fixed walls on the ground, ``wall5`` m to the right and ``wall6`` m to the left. The top
two blocks (mass ``top_mass``) are knocked off the column, b5 at ``push5`` m/s and b6 at ``push6``
m/s (the other way): they fly off, land, and slide (``mu`` small; not at all with the
frictionless model) until they come to rest against their wall. Motionless sets: {b0..b4} (five
of seven, the paper's segment with the largest saving), then one more block each time one comes
to rest. With the frictionless model (the paper's, Dantzig) the set changes twice, at frames 79
and 193 (the paper: 60 and 195); other models give other frames (``docs/computation-reuse.md``).
The departing b5 nudges b4 (2 mm/s, under the motionless tolerance). Unlike the paper's column,
ours does not topple as a whole: a toppling column's frames come from a chaotic collapse (in our
frictionless trials it changed five times), these from the pushes.
"""
from __future__ import annotations

from ..mechanics.scene import Body, Scene, Settings, Shape


def build(count: int = 7, width: float = 0.4, depth: float = 0.4, height: float = 0.2, mass: float = 1.0,
          top_mass: float = 0.1, mu: float = 0.05, push5: float = 2.0, push6: float = -2.5, wall5: float = 0.9,
          wall6: float = 5.0, dt: float = 0.01) -> Scene:
    ground = Body("ground", kind="fixed", shapes=[Shape("halfspace", normal=(0, 0, 1), offset=0.0)])
    walls = [Body(f"wall{k}", kind="fixed", position=(x, 0.0, 0.5), shapes=[Shape("box", size=(0.2, 1.0, 1.0))])
             for k, x in ((5, wall5 + 0.1), (6, -wall6 - 0.1))]
    push = {count - 2: push5, count - 1: push6}
    bodies = [ground, *walls] + [
        Body(f"b{i}", mass=top_mass if i in push else mass, position=(0.0, 0.0, height / 2 + i * height),
             linear_velocity=(push.get(i, 0.0), 0.0, 0.0), shapes=[Shape("box", size=(width, depth, height))])
        for i in range(int(count))]
    return Scene(name="column-collapse", bodies=bodies, mu=mu, settings=Settings(dt=dt))

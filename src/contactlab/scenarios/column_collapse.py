"""``column-collapse``: a column of seven blocks whose motionless set changes twice
(loomis-balkcom Fig. 1: changes at frames 60 and 195; small friction).

Blocks ``b0`` (bottom) .. ``b6`` (top), ``width`` x ``depth`` x ``height`` cubes' column on the
ground, moving in the x-z plane. The top two are pushed along x: b5 at mu g h ``stop5`` and b6 at
mu g h ``stop6`` m/s. Kinetic friction (``mu``, small) decelerates both by mu g (b5 is braked by b4
with 2 mu m g and dragged by b6 with mu m g), so b5 comes to rest on b4 after ``stop5`` steps and
b6 on b5 after ``stop6`` steps. Motionless sets: {b0..b4} (five of seven, the paper's segment with
the largest saving), then {b0..b5} from frame ``stop5``, then all seven from frame ``stop6``.
Unlike the paper's column the blocks come apart by sliding, not toppling: the frames of the
changes are set by the pushes, not by a chaotic collapse (``docs/computation-reuse.md``). With a
frictionless model the pushed blocks slide on for ever (one motionless set, {b0..b4}).
"""
from __future__ import annotations

from ..mechanics.scene import Body, Scene, Settings, Shape


def build(count: int = 7, width: float = 0.4, depth: float = 0.4, height: float = 0.2, mass: float = 1.0,
          mu: float = 0.05, stop5: int = 60, stop6: int = 195, dt: float = 0.002) -> Scene:
    g = 9.81
    ground = Body("ground", kind="fixed", shapes=[Shape("halfspace", normal=(0, 0, 1), offset=0.0)])
    push = {count - 2: mu * g * dt * stop5, count - 1: mu * g * dt * stop6}
    bodies = [ground] + [Body(f"b{i}", mass=mass, position=(0.0, 0.0, height / 2 + i * height),
                              linear_velocity=(push.get(i, 0.0), 0.0, 0.0),
                              shapes=[Shape("box", size=(width, depth, height))]) for i in range(int(count))]
    return Scene(name="column-collapse", bodies=bodies, mu=mu, settings=Settings(dt=dt))

"""``count`` cubes named ``box0``.. stacked on the ground (box0 at the bottom)."""
from __future__ import annotations

from ..mechanics.scene import Body, Scene, Settings, Shape


def build(count: int = 10, size: float = 0.2, mass: float = 1.0, mu: float = 0.5, dt: float = 0.01,
          offset: float = 0.0, friction_directions: int = 4) -> Scene:
    """Each box touches the one below (phi = 0); ``offset`` shifts box i by i*offset along x."""
    ground = Body("ground", kind="fixed", shapes=[Shape("halfspace", normal=(0, 0, 1), offset=0.0)])
    boxes = [Body(f"box{i}", mass=mass, position=(i * offset, 0.0, size / 2 + i * size),
                  shapes=[Shape("box", size=(size, size, size))]) for i in range(int(count))]
    return Scene(name="stack", bodies=[ground, *boxes], mu=mu,
                 settings=Settings(dt=dt, friction_directions=friction_directions))

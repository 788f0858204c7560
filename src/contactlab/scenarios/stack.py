"""``count`` cubes named ``box0``.. stacked on the ground (box0 at the bottom); ``columns`` such
stacks side by side (3 cube sizes apart: separate islands), named on from ``box{count}``."""
from __future__ import annotations

from ..mechanics.scene import Body, Scene, Settings, Shape


def build(count: int = 10, size: float = 0.2, mass: float = 1.0, mu: float = 0.5, dt: float = 0.01,
          offset: float = 0.0, friction_directions: int = 4, columns: int = 1) -> Scene:
    """Each box touches the one below (phi = 0); ``offset`` shifts box i by i*offset along x; column c
    stands at y = 3 c size."""
    ground = Body("ground", kind="fixed", shapes=[Shape("halfspace", normal=(0, 0, 1), offset=0.0)])
    n = int(count)
    boxes = [Body(f"box{c * n + i}", mass=mass, position=(i * offset, 3.0 * c * size, size / 2 + i * size),
                  shapes=[Shape("box", size=(size, size, size))]) for c in range(int(columns)) for i in range(n)]
    return Scene(name="stack", bodies=[ground, *boxes], mu=mu,
                 settings=Settings(dt=dt, friction_directions=friction_directions))

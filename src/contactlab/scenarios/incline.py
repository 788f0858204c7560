"""A box or sphere named ``body`` resting on a plane tilted by ``angle_deg`` about the y axis."""
from __future__ import annotations

import numpy as np

from ..errors import ModelError
from ..mechanics.rotation import quat_from_axis_angle
from ..mechanics.scene import Body, Scene, Settings, Shape


def build(shape: str = "box", angle_deg: float = 20.0, mu: float = 0.5, size: float = 0.2, mass: float = 1.0,
          friction_directions: int = 4, dt: float = 0.01, speed: float = 0.0) -> Scene:
    """The plane passes through the origin with normal R_y(angle) e_z; the body touches it at the
    origin, optionally sliding down the slope at ``speed``. Downhill is +x rotated by the angle,
    the first tangent of every contact frame, so a 4-direction pyramid is aligned with the slope."""
    th = np.radians(float(angle_deg))
    n = np.array([np.sin(th), 0.0, np.cos(th)])
    down = np.array([np.cos(th), 0.0, -np.sin(th)])
    q = quat_from_axis_angle([0, 1, 0], th)
    if shape == "box":
        geo = Shape("box", size=(size, size, size))
    elif shape == "sphere":
        geo = Shape("sphere", radius=size / 2)
    else:
        raise ModelError(f"incline shape must be 'box' or 'sphere', got {shape!r}")
    ground = Body("ground", kind="fixed", shapes=[Shape("halfspace", normal=tuple(n), offset=0.0)])
    body = Body("body", mass=mass, position=tuple(n * size / 2), orientation=tuple(q),
                linear_velocity=tuple(speed * down), shapes=[geo])
    return Scene(name="incline", bodies=[ground, body], mu=mu,
                 settings=Settings(dt=dt, friction_directions=friction_directions))

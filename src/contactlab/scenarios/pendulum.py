"""``links`` boxes named ``link0``.. joined by revolute joints about y, hung from the world."""
from __future__ import annotations

import numpy as np

from ..mechanics.scene import Body, Joint, Scene, Settings, Shape


def build(links: int = 5, length: float = 0.3, mass: float = 1.0, limit_deg: float = 60.0,
          start_deg: float = 0.0, dt: float = 0.01, height: float = 3.0) -> Scene:
    """Link i spans [i*length, (i+1)*length] along x rotated by -``start_deg`` about y (0: horizontal)
    from the pivot (0, 0, height). Joint i (``joint{i}``) has limits +-``limit_deg``
    (joint 0, to the world, is unlimited). No ground: the chain swings freely."""
    th = np.radians(start_deg)
    ex = np.array([np.cos(th), 0.0, -np.sin(th)])
    pivot = np.array([0.0, 0.0, height])
    from ..mechanics.rotation import quat_from_axis_angle
    q = tuple(quat_from_axis_angle([0, 1, 0], th))
    bodies, joints = [], []
    w = 0.05
    for i in range(int(links)):
        c = pivot + (i + 0.5) * length * ex
        bodies.append(Body(f"link{i}", mass=mass, position=tuple(c), orientation=q,
                           shapes=[Shape("box", size=(length, w, w))]))
        lim = None if i == 0 else np.radians(limit_deg)
        joints.append(Joint(f"joint{i}", "revolute", "world" if i == 0 else f"link{i - 1}", f"link{i}",
                            anchor=tuple(pivot + i * length * ex), axis=(0, 1, 0),
                            lower=None if lim is None else -lim, upper=lim))
    return Scene(name="pendulum-chain", bodies=bodies, joints=joints, settings=Settings(dt=dt))

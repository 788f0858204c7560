"""``reuse-slowdown``: five blocks ``a``..``e`` whose motionless set has three segments
(loomis-balkcom Fig. 4: only a and b move for 41 frames, then c, d and e as well for 46 frames,
then all blocks).

A massive plinth ``p`` (mass ``base_mass``) on the ground; on it ``e``, ``d``, ``c`` stacked, shifted
right by ``shift`` (their centre of mass still over p); on c, ``b`` and then ``a``, both sliding
right at ``push`` m/s. With the frictionless model (the paper's) nothing brakes a and b: their
load moves right at a constant rate until the centre of mass of {a..e} passes p's right edge
(frame ``trigger``), when c, d, e (carrying a, b) tip over that edge; the tipping group pushes p
sideways through the tilted contact (frictionless), slowly, p being heavy (a plinth), until p's
speed passes the motionless tolerance: then every block moves. With the defaults the motionless
set changes after frames 41 and 85 (segments of 41 and 44 frames; the paper: 41 and 46).
"""
from __future__ import annotations

from ..mechanics.scene import Body, Scene, Settings, Shape


def build(width: float = 0.4, depth: float = 0.4, height: float = 0.2, mass: float = 1.0, base_mass: float = 1400.0,
          shift: float = 0.15, trigger: int = 39, mu: float = 0.05, dt: float = 0.01) -> Scene:
    # the centre of mass of {a..e} reaches p's right edge (width / 2) when a and b have slid
    # 5 (w/2) / 2 - 3 shift / 2 - shift from their start at x = shift
    travel = 2.5 * (width / 2) - 1.5 * shift - shift
    push = travel / (trigger * dt)
    ground = Body("ground", kind="fixed", shapes=[Shape("halfspace", normal=(0, 0, 1), offset=0.0)])
    box = [Shape("box", size=(width, depth, height))]
    names = ["p", "e", "d", "c", "b", "a"]
    bodies = [ground] + [Body(n, mass=base_mass if n == "p" else mass,
                              position=(0.0 if n == "p" else shift, 0.0, height / 2 + k * height),
                              linear_velocity=(push if n in "ab" else 0.0, 0.0, 0.0), shapes=list(box))
                         for k, n in enumerate(names)]
    return Scene(name="reuse-slowdown", bodies=bodies, mu=mu, settings=Settings(dt=dt))

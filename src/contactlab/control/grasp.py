"""The grasp script of arechavaleta §V-A as a simulator controller.

Phases (one call before every step, ``Simulator(..., controllers=[script])``):

1. ``settle``: the object settles on the table for ``settle`` s, motors hold the pre-shape;
2. ``close``: each finger's flexion motor drives its DOF at ``close_speed`` with at most
   ``max_torque`` (a force-limited velocity motor, GraspIt!'s DOF controller with maxEffort) until
   the finger stalls: its rate stays below ``stall_fraction x close_speed`` for ``stall_time`` s
   (after at least ``min_close`` s); the motors keep pushing afterwards, so the stalled fingers
   squeeze with ``max_torque``. ``close_timeout`` ends the phase if a finger never stalls;
3. ``lift``: the wrist (a kinematic body) rises by ``lift`` m at ``lift_speed`` m/s;
4. ``hold``: the wrist stops for ``hold`` s.

:meth:`GraspScript.summary` gives the run's ``"grasp"`` entry of ``contactlab simulate --json``:
``lifted`` (the object rose by more than half the lift), ``object_drop_m`` (the wrist's rise
minus the object's), ``max_contacts``, plus the hold phase's largest drift of the object relative
to the palm (``hold_drift_m``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..errors import ModelError
from ..mechanics.rotation import quat_to_matrix
from .pd import JointReader

PHASES = ("settle", "close", "lift", "hold", "done")


def joint_rate(sim, name: str, index: dict | None = None) -> float:
    """Rate of a revolute joint's coordinate: axis . (omega_child - omega_parent) (the compiled
    :class:`~contactlab.control.pd.JointReader`; ``index`` is accepted for compatibility, unused)."""
    return float(JointReader(sim.model, [name])(sim.data)[1][0])


def relative_pose(sim, a: int, b: int) -> np.ndarray:
    """Position of body b in body a's frame: R(q_a)' (p_b - p_a), R' u = u + 2 w (u x r) + 2 r x (r x u)
    for the unit quaternion q_a = (w, r) (the conjugate's rotation; scalar arithmetic, as the script
    runs before every step)."""
    d = sim.data
    w, x, y, z = d.quaternion[a].tolist()
    pa, pb = d.position[a].tolist(), d.position[b].tolist()
    u0, u1, u2 = pb[0] - pa[0], pb[1] - pa[1], pb[2] - pa[2]
    c0, c1, c2 = u1 * z - u2 * y, u2 * x - u0 * z, u0 * y - u1 * x           # u x r
    e0, e1, e2 = y * c2 - z * c1, z * c0 - x * c2, x * c1 - y * c0           # r x (u x r) = -r x (r x u)
    return np.array([u0 + 2.0 * (w * c0 - e0), u1 + 2.0 * (w * c1 - e1), u2 + 2.0 * (w * c2 - e2)])


@dataclass
class GraspScript:
    """Close until stall, lift, hold (see the module docstring). ``fingers``: the flexion joints
    with motors (a tuple, each limited to ``max_torque``, or a {joint: force limit} mapping); ``wrist``: the kinematic body that carries the hand; ``obj``: the grasped body.
    It calls no BLAS (``uses_blas``, :class:`~contactlab.sim.Simulator`'s controller protocol)."""
    #: the controller protocol's declaration (Simulator): no matrix product or np.linalg in any phase
    uses_blas = False
    fingers: tuple
    wrist: str = "palm"
    obj: str = "object"
    close_speed: float = 1.0
    max_torque: float = 2.5
    lift: float = 0.1
    lift_speed: float = 0.1
    hold: float = 2.0
    settle: float = 0.05
    min_close: float = 0.05
    stall_fraction: float = 0.05
    stall_time: float = 0.05
    close_timeout: float = 1.5
    # state (reset when a simulation starts at step 0)
    phase: str = field(default="settle", init=False)
    events: dict = field(default_factory=dict, init=False)
    _stalled: np.ndarray = field(default=None, init=False)     # seconds each finger has been slow
    _reader: object = field(default=None, init=False)          # the fingers' JointReader
    _start: dict = field(default_factory=dict, init=False)
    _grasp_rel: object = field(default=None, init=False)
    _hold_drift: float = field(default=0.0, init=False)
    _lifted_by: float = field(default=0.0, init=False)

    def __post_init__(self):
        for nm in ("close_speed", "max_torque", "lift_speed", "stall_time", "close_timeout"):
            if not float(getattr(self, nm)) > 0:
                raise ModelError(f"grasp script: {nm} must be > 0, got {getattr(self, nm)}")
        if not self.fingers:
            raise ModelError("grasp script: fingers (the flexion joints to close) is empty")

    @property
    def duration(self) -> float:
        """A run long enough for every phase: settle + the close timeout + lift + hold, plus 0.05 s
        for the phase changes, which happen at step boundaries."""
        return float(self.settle + self.close_timeout + self.lift / self.lift_speed + self.hold + 0.05)

    def reset(self, sim) -> None:
        self.phase = "settle"
        self.events = {}
        self._reader = JointReader(sim.model, list(self.fingers))
        self._stalled = np.zeros(len(self.fingers))
        iw, io = sim.model.index(self.wrist), sim.model.index(self.obj)
        self._start = {"wrist_z": float(sim.data.position[iw, 2]), "object_z": float(sim.data.position[io, 2]),
                       "iw": iw, "io": io}
        self._grasp_rel, self._hold_drift, self._lifted_by = None, 0.0, 0.0

    def _enter(self, phase: str, t: float) -> None:
        self.phase = phase
        self.events[phase] = t

    def __call__(self, sim) -> None:
        if sim.data.steps == 0 or not self._start:
            self.reset(sim)
        t, h = sim.data.time, sim.h
        iw, io = self._start["iw"], self._start["io"]
        if self.phase == "settle" and t >= self.settle - 1e-12:
            for j in self.fingers:
                limit = self.fingers[j] if isinstance(self.fingers, dict) else self.max_torque
                sim.set_motor(j, target_velocity=self.close_speed, max_force=limit)
            self._enter("close", t)
        elif self.phase == "close":
            since = t - self.events["close"]
            slow = np.abs(self._reader(sim.data)[1]) < self.stall_fraction * self.close_speed
            self._stalled = np.where(slow & (since >= self.min_close), self._stalled + h, 0.0)
            stalled = bool((self._stalled >= self.stall_time - 1e-12).all())
            if stalled or since >= self.close_timeout:
                self.events["stalled"] = stalled
                self._grasp_rel = relative_pose(sim, iw, io)
                self._enter("lift", t)
        if self.phase == "lift":
            rose = sim.data.position[iw, 2] - self._start["wrist_z"]
            left = self.lift - rose
            if left <= 1e-12:
                sim.set_velocity(self.wrist, linear=(0.0, 0.0, 0.0))
                self._lifted_by = float(rose)
                self._grasp_rel = relative_pose(sim, iw, io)
                self._enter("hold", t)
            else:
                sim.set_velocity(self.wrist, linear=(0.0, 0.0, min(self.lift_speed, left / h)))
        elif self.phase == "hold":
            d0, d1, d2 = (relative_pose(sim, iw, io) - self._grasp_rel).tolist()
            self._hold_drift = max(self._hold_drift, math.sqrt(d0 * d0 + d1 * d1 + d2 * d2))   # |d| without BLAS
            if t - self.events["hold"] >= self.hold - 1e-12:
                self._enter("done", t)

    def object_drop(self, sim) -> float:
        """The wrist's rise minus the object's rise since the start (m)."""
        iw, io = self._start["iw"], self._start["io"]
        return float((sim.data.position[iw, 2] - self._start["wrist_z"]) -
                     (sim.data.position[io, 2] - self._start["object_z"]))

    def summary(self, sim, trajectory=None) -> dict:
        """The ``"grasp"`` entry of ``contactlab simulate --json`` (keep: lifted, object_drop_m, max_contacts)."""
        if not self._start:
            return {"grasp": {"lifted": False, "object_drop_m": 0.0, "max_contacts": 0}}
        drop = self.object_drop(sim)
        recs = getattr(trajectory, "records", None) or []
        rose = float(sim.data.position[self._start["io"], 2] - self._start["object_z"])
        return {"grasp": {"lifted": bool(self.lift > 0 and rose > 0.5 * self.lift), "object_drop_m": drop,
                          "max_contacts": int(max((r.contacts for r in recs), default=0)),
                          "phase": self.phase, "hold_drift_m": float(self._hold_drift),
                          "stalled": bool(self.events.get("stalled", False))}}

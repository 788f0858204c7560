"""Trot gait generator and raised-cosine swing trajectories (drumwright §VII-B; the Pacer gait of
scenario-specs §2.2: period 0.7 s, duty factor 0.75, phase offsets LF 0.25, RF 0.75, LH 0.75,
RH 0.25, step height 0.015 m, forward speed 0.05 m/s).

Every foot has a phase ``p = (t / period + offset) mod 1``; it is in stance for ``p < duty`` and
swings for the rest of the cycle. A stance foot moves backwards in the base frame at the
commanded speed ``v`` (so a foot that does not slip pushes the base forward at ``v``), over
``L = v * duty * period`` from ``+L/2`` to ``-L/2`` about its nominal position; a swinging foot
returns forwards along a raised cosine: ``x = -L/2 + L (1 - cos(pi s)) / 2``, ``z = height (1 - cos(2 pi s)) / 2``
with ``s`` the swing progress in [0, 1] (zero velocity at lift-off and touch-down in z).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import ParamError
from ..kernels._jit import jit, jit_inline

#: phase offsets of the paper's trot, feet ordered LF, RF, LH, RH
TROT_OFFSETS = (0.25, 0.75, 0.75, 0.25)


@dataclass(frozen=True)
class Gait:
    """A periodic gait: ``period`` (s), ``duty`` (stance share of the cycle), per-foot phase
    ``offsets``, swing ``step_height`` (m) and the commanded forward ``velocity`` (m/s, base x)."""
    period: float = 0.7
    duty: float = 0.75
    offsets: tuple = TROT_OFFSETS
    step_height: float = 0.015
    velocity: float = 0.05

    def __post_init__(self):
        if not (np.isfinite(self.period) and self.period > 0):
            raise ParamError(f"Gait.period must be > 0 s, got {self.period!r}")
        if not 0.0 < self.duty < 1.0:
            raise ParamError(f"Gait.duty must lie in (0, 1) (stance share of the cycle), got {self.duty!r}")
        if len(self.offsets) == 0 or not np.all(np.isfinite(self.offsets)):
            raise ParamError(f"Gait.offsets must be finite phase offsets, one per foot, got {self.offsets!r}")
        if not (np.isfinite(self.step_height) and self.step_height >= 0):
            raise ParamError(f"Gait.step_height must be >= 0 m, got {self.step_height!r}")
        if not np.isfinite(self.velocity):
            raise ParamError(f"Gait.velocity must be finite, got {self.velocity!r}")

    @property
    def feet(self) -> int:
        return len(self.offsets)

    @property
    def stride(self) -> float:
        """Distance the base covers per cycle (m): velocity x period."""
        return self.velocity * self.period

    @property
    def stance_length(self) -> float:
        """Distance a stance foot travels backwards in the base frame (m): velocity x duty x period."""
        return self.velocity * self.duty * self.period

    def phase(self, t: float) -> np.ndarray:
        """Phase of every foot in [0, 1) at time ``t``."""
        return _phase(float(t), float(self.period), self._offsets)

    def stance(self, t: float) -> np.ndarray:
        """True for the feet in stance at time ``t``."""
        return stance_kernel(float(t), float(self.period), float(self.duty), self._offsets)

    def foot_offsets(self, t: float, scale: float = 1.0) -> np.ndarray:
        """(feet, 3) displacement of each foot target from its nominal position, in the base frame;
        ``scale`` in [0, 1] shrinks stride and step height (a soft start)."""
        return foot_offsets_kernel(float(t), float(self.period), float(self.duty), self._offsets,
                                   float(self.stance_length * scale), float(self.step_height), float(scale))

    @property
    def _offsets(self) -> np.ndarray:
        return np.asarray(self.offsets, dtype=np.float64)


@jit_inline
def foot_phase(u, offset):
    """A foot's phase p = (t / period + offset) mod 1 in [0, 1) (module docstring; drumwright §VII-B),
    from u = t / period: the one place the phase is formed, for :meth:`Gait.phase` (:func:`_phase`)
    and the compiled controller's stance feet and foot targets (:func:`stance_into`,
    :func:`foot_offsets_into`), so that the two agree bit for bit."""
    return np.mod(u + offset, 1.0)


@jit
def _phase(t, period, offsets):
    """(feet,): each foot's :func:`foot_phase` at time t."""
    out = np.empty(offsets.size)
    u = t / period
    for f in range(offsets.size):
        out[f] = foot_phase(u, offsets[f])
    return out


@jit
def stance_kernel(t, period, duty, offsets):
    """Per foot: in stance at time t (phase < duty)."""
    out = np.empty(offsets.size, dtype=np.bool_)
    stance_into(t, period, duty, offsets, out)
    return out


@jit
def stance_into(t, period, duty, offsets, out):
    """:func:`stance_kernel` into ``out`` (feet,) bool: each foot's phase (:func:`foot_phase`) below ``duty``."""
    u = t / period
    for f in range(offsets.size):
        out[f] = foot_phase(u, offsets[f]) < duty


@jit
def foot_offsets_kernel(t, period, duty, offsets, stance_length, step_height, scale):
    """(feet, 3) foot-target offsets (module docstring): stance x = L (1/2 - p / duty); swing
    progress s = (p - duty) / (1 - duty), x = L (-1/2 + (1 - cos(pi s)) / 2),
    z = scale height (1 - cos(2 pi s)) / 2; L = ``stance_length`` (already scaled)."""
    out = np.empty((offsets.size, 3))
    foot_offsets_into(t, period, duty, offsets, stance_length, step_height, scale, out)
    return out


@jit
def foot_offsets_into(t, period, duty, offsets, stance_length, step_height, scale, out):
    """:func:`foot_offsets_kernel` into ``out`` (feet, 3), each foot's phase by :func:`foot_phase`."""
    u = t / period
    for f in range(offsets.size):
        p = foot_phase(u, offsets[f])
        out[f, 0] = out[f, 1] = out[f, 2] = 0.0
        if p < duty:                                                   # stance: +L/2 -> -L/2, speed v
            out[f, 0] = stance_length * (0.5 - p / duty)
        else:
            s = (p - duty) / (1.0 - duty)                              # swing progress 0 -> 1
            out[f, 0] = stance_length * (-0.5 + 0.5 * (1.0 - np.cos(np.pi * s)))
            out[f, 2] = scale * step_height * 0.5 * (1.0 - np.cos(2.0 * np.pi * s))

"""Trajectories to HDF5 (h5py), written atomically: per-step records and body poses."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import h5py
import numpy as np

from ..problems.io import atomic_write


RECORD_FIELDS = ("time", "contacts", "lcp_size", "iterations", "pivots", "residual", "success", "rescued",
                 "kinetic_energy", "energy", "energy_gain", "contact_energy_gain", "max_penetration",
                 "solve_time", "joint_error")


@dataclass
class StepRecord:
    time: float
    contacts: int
    lcp_size: int
    iterations: int
    pivots: int
    residual: float
    success: bool
    status: str
    rescued: bool
    kinetic_energy: float
    energy: float
    energy_gain: float
    contact_energy_gain: float
    max_penetration: float
    solve_time: float
    joint_error: float


@dataclass
class Trajectory:
    """Per-step records and (optionally) body poses; ``metrics()`` summarises a run."""
    body_names: list
    records: list = field(default_factory=list)
    positions: list = field(default_factory=list)
    quaternions: list = field(default_factory=list)
    error: str | None = None  # why the run stopped early (an unusable step), else None

    def column(self, name: str) -> np.ndarray:
        return np.array([getattr(r, name) for r in self.records])

    def metrics(self) -> dict:
        if not self.records:
            return {"max_penetration": 0.0, "max_energy_gain": 0.0, "solver_failures": 0,
                    "lcp_variables_mean": 0.0, "lcp_variables_max": 0, "solve_time_s": 0.0}
        n = self.column("lcp_size")
        return {"max_penetration": float(max(0.0, self.column("max_penetration").max())),
                "max_energy_gain": float(max(0.0, np.nanmax(self.column("contact_energy_gain")))),
                "solver_failures": int(np.sum(~self.column("success").astype(bool))),
                "lcp_variables_mean": float(n.mean()), "lcp_variables_max": int(n.max()),
                "solve_time_s": float(self.column("solve_time").sum())}


def write_trajectory(path, traj, *, attrs: dict | None = None) -> Path:
    """Write ``traj`` (a :class:`~contactlab.sim.Trajectory`) to ``path``.

    Layout: ``/steps/<field>`` one value per step (time, contacts, lcp_size, iterations, pivots,
    residual, success, kinetic_energy, energy, energy_gain, max_penetration, solve_time,
    joint_error, status), ``/bodies/names``, ``/bodies/position`` (steps+1, nb, 3) and
    ``/bodies/orientation`` (steps+1, nb, 4) when poses were recorded, ``/metrics`` as attributes.
    """
    def write(tmp):
        with h5py.File(tmp, "w") as f:
            g = f.create_group("steps")
            for name in RECORD_FIELDS:
                g.create_dataset(name, data=traj.column(name) if traj.records else np.zeros(0))
            g.create_dataset("status", data=np.array([r.status for r in traj.records], dtype="S"))
            b = f.create_group("bodies")
            b.create_dataset("names", data=np.array(traj.body_names, dtype="S"))
            if traj.positions:
                b.create_dataset("position", data=np.array(traj.positions), compression="gzip")
                b.create_dataset("orientation", data=np.array(traj.quaternions), compression="gzip")
            m = f.create_group("metrics")
            for k, v in traj.metrics().items():
                m.attrs[k] = v
            for k, v in (attrs or {}).items():
                f.attrs[k] = v if isinstance(v, (int, float, str)) else json.dumps(v)
    return atomic_write(path, write)


def read_trajectory(path) -> dict:
    """The file's datasets as a dict of arrays (``steps/...``, ``bodies/...``) plus ``metrics`` and ``attrs``."""
    out = {}
    with h5py.File(path, "r") as f:
        f.visititems(lambda name, obj: out.__setitem__(name, obj[()]) if isinstance(obj, h5py.Dataset) else None)
        out["metrics"] = dict(f["metrics"].attrs)
        out["attrs"] = dict(f.attrs)
    return out

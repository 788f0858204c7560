"""Per-step records of a run (:class:`StepRecord`, :class:`Trajectory`) and their HDF5 files.

HDF5 layout (``simulate --out FILE``, :func:`write_trajectory`, :class:`TrajectoryWriter`)::

    /steps/<field>        one value per step, fields RECORD_FIELDS plus status (see StepRecord)
    /bodies/names         body names (bytes)
    /bodies/position      (steps + 1, bodies, 3) world positions, row 0 the initial state
    /bodies/orientation   (steps + 1, bodies, 4) unit quaternions (w, x, y, z)
    /metrics              attributes: Trajectory.metrics() of the steps in the file
    file attributes       scene, model, method, dt, duration, ... as given by the writer's caller;
                          complete (bool), steps_written (int), and when the run was cut short
                          interrupted (str: why, e.g. "SIGINT at step 812")

The file is written incrementally: it is created beside the target under a temporary name, each
flushed chunk of steps is appended, and the finished (or interrupted) file is renamed into place.
A partial file is a valid trajectory whose ``complete`` attribute is False.
"""
from __future__ import annotations

import json
import os
import sys
import tempfile
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import h5py
import numpy as np

from ..solution import Status

RECORD_FIELDS = ("time", "contacts", "lcp_size", "iterations", "pivots", "residual", "success", "rescued",
                 "kinetic_energy", "energy", "energy_gain", "contact_energy_gain", "max_penetration",
                 "solve_time", "joint_error", "plausible")


@dataclass
class StepRecord:
    """What one time step did. ``time`` (s) after the step; ``contacts`` contact points found;
    ``lcp_size`` variables of the complementarity problem; ``iterations``/``pivots`` of the solver;
    ``residual`` the certified residual of its answer; ``success`` the method certified the step
    itself; ``status`` the solver's Status name (``SOLVED``, ``MAX_ITERATIONS``, ...); ``rescued``
    a fallback solver certified a step the method did not; ``kinetic_energy``/``energy`` (J,
    energy = kinetic + potential) after the step; ``energy_gain`` energy change over the step
    (NaN when motors act); ``contact_energy_gain`` energy the contact impulses added (> 0 is
    unphysical); ``max_penetration`` deepest overlap (m) after the step; ``solve_time`` seconds in
    the solver; ``joint_error`` largest joint constraint violation after projection; ``plausible``
    the step's motion is one its velocities and forces explain, else ``fault`` says what moved how
    far (:mod:`contactlab.sim.faults`; ``fault`` is not stored in files, ``plausible`` is)."""
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
    plausible: bool = True
    fault: str = ""

    @classmethod
    def solved(cls, time, contacts, lcp_size, iterations, residual, kinetic_energy, energy, energy_gain,
               contact_energy_gain, max_penetration, solve_time, joint_error, pivots=0,
               status="SOLVED") -> "StepRecord":
        """The record of a step the method certified itself (``success``, not rescued, plausible until a
        fault is set; ``status`` a Status name), the values already of their fields' types: the
        same record as the constructor's, each field stored in the dataclass' field order (as
        ``__init__`` stores them: ``vars(record)`` reads the same, in CPython's shared-key layout of
        the class's instances) without ``__init__``'s and ``__post_init__``'s calls (a compiled step's
        few microseconds of Python: sim/grasp_step.py; a rollout's records, sim/robot_rollout.py)."""
        rec = _new(cls)
        rec.time = time
        rec.contacts = contacts
        rec.lcp_size = lcp_size
        rec.iterations = iterations
        rec.pivots = pivots
        rec.residual = residual
        rec.success = True
        rec.status = status
        rec.rescued = False
        rec.kinetic_energy = kinetic_energy
        rec.energy = energy
        rec.energy_gain = energy_gain
        rec.contact_energy_gain = contact_energy_gain
        rec.max_penetration = max_penetration
        rec.solve_time = solve_time
        rec.joint_error = joint_error
        rec.plausible = True
        rec.fault = ""
        return rec

    def __post_init__(self):
        # one spelling of a status everywhere: the Status name ("SOLVED"), also when given the enum or its value
        if self.status.__class__ is str and self.status in _STATUS_NAMES:
            return
        name = getattr(self.status, "name", None)
        if name is None and isinstance(self.status, str):
            name = self.status.upper()
        self.status = str(name)


_new = object.__new__


@dataclass
class Trajectory:
    """Per-step records and body poses of a run; ``metrics()`` summarises it.

    ``positions``/``quaternions`` hold one (bodies, 3)/(bodies, 4) array per recorded state (the
    initial state, then one per step) when the run recorded poses; use :meth:`poses`, which warns
    and raises when they were not recorded. ``attrs``: the file attributes when read back.
    Dict-style access (``traj["steps/time"]``, ``traj["bodies/position"]``, ``traj["metrics"]``,
    ``traj["attrs"]``) mirrors the HDF5 layout.
    """
    body_names: list
    records: list = field(default_factory=list)
    positions: list = field(default_factory=list)
    quaternions: list = field(default_factory=list)
    error: str | None = None  # why the run stopped early (an unusable step), else None
    attrs: dict = field(default_factory=dict)

    def column(self, name: str) -> np.ndarray:
        return np.array([getattr(r, name) for r in self.records])

    def poses(self) -> tuple[np.ndarray, np.ndarray]:
        """``(positions, quaternions)`` as (states, bodies, 3) and (states, bodies, 4) arrays."""
        if not self.positions:
            msg = ("this trajectory has no poses: run with record_poses=True "
                   "(Simulator.run(..., record_poses=True); 'simulate --out' always records them)")
            warnings.warn(msg, stacklevel=2)
            raise ValueError(msg)
        return np.array(self.positions), np.array(self.quaternions)

    def __getitem__(self, key: str):
        if key.startswith("steps/"):
            name = key.split("/", 1)[1]
            if name == "status":
                return np.array([r.status for r in self.records], dtype="S")
            if name not in RECORD_FIELDS:
                raise KeyError(f"{key}: step fields are {', '.join(RECORD_FIELDS)}, status")
            return self.column(name)
        if key == "bodies/names":
            return np.array(self.body_names, dtype="S")
        if key == "bodies/position":
            return self.poses()[0]
        if key == "bodies/orientation":
            return self.poses()[1]
        if key == "metrics":
            return self.metrics()
        if key == "attrs":
            return self.attrs
        raise KeyError(key)

    def metrics(self) -> dict:
        if not self.records:
            return {"max_penetration": 0.0, "max_energy_gain": 0.0, "solver_failures": 0,
                    "lcp_variables_mean": 0.0, "lcp_variables_max": 0, "solve_time_s": 0.0, "physics_faults": 0}
        n = self.column("lcp_size")
        return {"max_penetration": float(max(0.0, self.column("max_penetration").max())),
                "max_energy_gain": float(max(0.0, np.nanmax(self.column("contact_energy_gain")))),
                "solver_failures": int(np.sum(~self.column("success").astype(bool))),
                "lcp_variables_mean": float(n.mean()), "lcp_variables_max": int(n.max()),
                "solve_time_s": float(self.column("solve_time").sum()),
                # steps whose motion their velocities and forces do not explain (faults.step_fault)
                "physics_faults": int(sum(not r.plausible for r in self.records))}


def _attr(v):
    return v if isinstance(v, (bool, int, float, str, np.integer, np.floating)) else json.dumps(v)


class _signals_deferred:
    """Block SIGINT/SIGTERM in this thread for the duration (delivered on exit)."""

    def __enter__(self):
        import signal
        self.old = None
        if hasattr(signal, "pthread_sigmask"):
            self.old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
        return self

    def __exit__(self, *exc):
        if self.old is not None:
            import signal
            signal.pthread_sigmask(signal.SIG_SETMASK, self.old)
        return False


#: True once HDF5 failed to close a trajectory file (disk full): the process must then end by
#: ``os._exit`` after its output, not by the interpreter's shutdown (``contactlab simulate`` does)
UNCLOSABLE = False


class TrajectoryWriter:
    """Writes a trajectory to HDF5 while it runs: :meth:`append` flushes the steps added to a
    :class:`Trajectory` since the last call; :meth:`close` finishes the file (``complete`` True or
    False with ``interrupted``) and renames it onto ``path``; :meth:`abort` discards it.

    >>> w = TrajectoryWriter("run.h5", traj.body_names, attrs={"scene": "stack"})  # doctest: +SKIP
    >>> while ...: sim.run(0.5, trajectory=traj, record_poses=True); w.append(traj)  # doctest: +SKIP
    >>> w.close(traj)                                                                # doctest: +SKIP
    """

    def __init__(self, path, body_names, *, attrs: dict | None = None):
        from ..files import _FILE_MODE
        self.path = Path(path)
        if self.path.is_dir():
            raise IsADirectoryError(f"{self.path} is a directory")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{self.path.name}.", suffix=".partial", dir=self.path.parent)
        os.close(fd)
        os.chmod(tmp, _FILE_MODE)
        self.tmp = tmp
        self.f = None
        self.failed = False         # a write of this file failed: HDF5 can no longer close it safely
        _quiet_h5py_deallocs()      # a failed write is reported once, by the call that failed
        try:
            with _h5py_stderr():
                self._create(tmp, body_names, attrs)
        except (OSError, RuntimeError) as exc:    # the disk full at the file's creation
            self.failed = True
            err = _write_error(exc, self.path)
            with _h5py_stderr(failed=True):
                try:
                    self.abort()
                except Exception:
                    pass
            raise err from None

    def _create(self, tmp, body_names, attrs) -> None:
        self.f = h5py.File(tmp, "w")
        self.n_steps = 0
        self.n_poses = 0
        nb = len(body_names)
        g = self.f.create_group("steps")
        for name in RECORD_FIELDS:
            g.create_dataset(name, shape=(0,), maxshape=(None,), dtype="f8", chunks=(256,))
        g.create_dataset("status", shape=(0,), maxshape=(None,), dtype="S24", chunks=(256,))
        b = self.f.create_group("bodies")
        b.create_dataset("names", data=np.array(list(body_names), dtype="S"))
        b.create_dataset("position", shape=(0, nb, 3), maxshape=(None, nb, 3), dtype="f8",
                         chunks=(max(1, min(64, 65536 // max(nb, 1))), max(nb, 1), 3), compression="gzip")
        b.create_dataset("orientation", shape=(0, nb, 4), maxshape=(None, nb, 4), dtype="f8",
                         chunks=(max(1, min(64, 65536 // max(nb, 1))), max(nb, 1), 4), compression="gzip")
        self.f.create_group("metrics")
        for k, v in (attrs or {}).items():
            self.f.attrs[k] = _attr(v)
        self.f.attrs["complete"] = False
        self.f.attrs["steps_written"] = 0
        self.f.flush()

    def append(self, traj: Trajectory) -> None:
        """Write the steps and poses added since the last call, then flush the file. SIGINT and
        SIGTERM wait until the chunk is written: an interrupt never lands inside an HDF5 write."""
        with _signals_deferred():
            try:
                with _h5py_stderr():
                    self._append(traj)
            except RuntimeError as exc:      # h5py's report of a failed write (EFBIG, ENOSPC): an OSError
                self.failed = True
                raise _write_error(exc, self.path) from None

    def _append(self, traj: Trajectory) -> None:
        recs = traj.records[self.n_steps:]
        n_pose = min(len(traj.positions), len(traj.quaternions), len(traj.records) + 1)
        if recs:
            k0, k1 = self.n_steps, self.n_steps + len(recs)
            for name in RECORD_FIELDS:
                d = self.f["steps"][name]
                d.resize((k1,))
                d[k0:k1] = np.array([getattr(r, name) for r in recs], dtype=float)
            d = self.f["steps/status"]
            d.resize((k1,))
            d[k0:k1] = np.array([r.status for r in recs], dtype="S24")
            self.n_steps = k1
        if n_pose > self.n_poses:
            for name, src in (("position", traj.positions), ("orientation", traj.quaternions)):
                d = self.f["bodies"][name]
                d.resize((n_pose,) + d.shape[1:])
                d[self.n_poses:n_pose] = np.array(src[self.n_poses:n_pose])
            self.n_poses = n_pose
        self.f.attrs["steps_written"] = self.n_steps
        self.f.flush()

    def close(self, traj: Trajectory, *, interrupted: str | None = None, extra=None) -> Path:
        """Append what is left, write metrics and ``complete``/``interrupted``, rename onto ``path``.
        ``extra(h5file)`` may add groups (e.g. the replay viewer's) before the file is closed."""
        try:
            self._append(traj)
            part = Trajectory(traj.body_names, traj.records[:self.n_steps])
            for k, v in part.metrics().items():
                self.f["metrics"].attrs[k] = v
            self.f.attrs["complete"] = interrupted is None and traj.error is None
            if interrupted is not None:
                self.f.attrs["interrupted"] = interrupted
            if traj.error:
                self.f.attrs["error"] = traj.error
            if extra is not None:
                extra(self.f)
            self.f.close()
            os.replace(self.tmp, self.path)
        except RuntimeError as exc:
            self.failed = True
            _quiet_h5py_deallocs()
            self.abort()
            raise _write_error(exc, self.path) from None
        except BaseException:
            self.abort()
            raise
        return self.path

    def abort(self) -> None:
        """Close and delete the temporary file (the target path is left as it was). After a failed
        write the file is not closed: HDF5's close of a file whose write failed (disk full while its
        steps were flushed) crashed the process (SIGSEGV inside ``H5Fclose``); the file is unlinked
        and the process is marked :data:`UNCLOSABLE` (``simulate`` then ends by ``os._exit``)."""
        global UNCLOSABLE
        try:
            if self.f is not None and self.failed:
                UNCLOSABLE = True
                _quiet_h5py_deallocs()
            elif self.f is not None:
                self.f.close()
        except Exception:
            # HDF5 could not write the file's last metadata (disk full) and keeps it half open: its
            # own clean-up at exit would then crash the process (SIGSEGV, "slist already enabled")
            UNCLOSABLE = True
            _quiet_h5py_deallocs()
            raise
        finally:
            if os.path.exists(self.tmp):
                os.unlink(self.tmp)


def _quiet_h5py_deallocs() -> None:
    """After a failed HDF5 write (disk full), each h5py object of that file freed later fails its own
    write and prints "Exception ignored in h5py._objects.ObjectID.__dealloc__" with a traceback: those
    (and only those) are dropped from the process's unraisable-exception hook; the failure itself is
    raised by the h5py call that wrote (flush, close) and reported once, as an OSError."""
    previous = sys.unraisablehook
    if getattr(previous, "_contactlab_h5py", False):
        return

    def hook(unraisable):
        if "h5py" in f"{unraisable.object!r} {unraisable.err_msg}":
            return
        previous(unraisable)
    hook._contactlab_h5py = True
    sys.unraisablehook = hook


class _h5py_stderr:
    """Within the block, what is printed on stderr is held back: shown at the end if the block
    succeeds, dropped if it raises (or with ``failed``). On a full disk h5py prints a traceback for
    each temporary object it frees while writing (its own "Exception ignored"), before the write
    that failed raises; the failure is then reported once, as an OSError, by the caller."""

    def __init__(self, failed: bool = False):
        self.failed = failed

    def __enter__(self):
        import io
        self.held, self.previous = io.StringIO(), sys.stderr
        sys.stderr = self.held
        return self

    def __exit__(self, kind, exc, tb):
        sys.stderr = self.previous
        if kind is None and not self.failed and self.held.getvalue():
            self.previous.write(self.held.getvalue())
        return False


def _write_error(exc: BaseException, path) -> OSError:
    """An OSError for a write HDF5 could not do (h5py raises RuntimeError or OSError with the C
    library's message, e.g. "errno = 28, error message = 'No space left on device'"): the errno it
    names, else EIO."""
    import errno as _errno
    import re
    _quiet_h5py_deallocs()
    if isinstance(exc, OSError) and exc.errno:
        return OSError(exc.errno, exc.strerror or str(exc), str(path))
    found = re.search(r"errno = (\d+)", str(exc))
    code = int(found.group(1)) if found else _errno.EIO
    why = os.strerror(code) if found else f"HDF5 write failed: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
    return OSError(code, why, str(path))


def write_trajectory(path, traj: Trajectory, *, attrs: dict | None = None, extra=None) -> Path:
    """Write ``traj`` to ``path`` (layout in the module docstring), atomically."""
    w = TrajectoryWriter(path, traj.body_names, attrs=attrs)
    return w.close(traj, extra=extra)


_INT_FIELDS = {"contacts", "lcp_size", "iterations", "pivots"}
_STATUS_NAMES = frozenset(s.name for s in Status)     # StepRecord's statuses as they are stored
_BOOL_FIELDS = {"success", "rescued", "plausible"}


def read_trajectory(path) -> Trajectory:
    """Read a file written by :func:`write_trajectory` or ``simulate --out`` back as a
    :class:`Trajectory` (records, poses, ``attrs`` with the file attributes)."""
    path = Path(path)
    with h5py.File(path, "r") as f:
        cols = {name: f["steps"][name][()] for name in RECORD_FIELDS if name in f["steps"]}
        status = [s.decode() for s in f["steps/status"][()]] if "status" in f["steps"] else []
        n = len(status)
        names = [s.decode() for s in f["bodies/names"][()]]
        pos = f["bodies/position"][()] if "bodies/position" in f else np.zeros((0, len(names), 3))
        quat = f["bodies/orientation"][()] if "bodies/orientation" in f else np.zeros((0, len(names), 4))
        attrs = {k: (v.item() if isinstance(v, np.generic) else v) for k, v in f.attrs.items()}
    records = []
    for k in range(n):
        kw = {}
        for name in RECORD_FIELDS:
            v = cols[name][k] if name in cols else np.nan
            kw[name] = int(v) if name in _INT_FIELDS else bool(v) if name in _BOOL_FIELDS else float(v)
        records.append(StepRecord(status=status[k], **kw))
    return Trajectory(names, records, list(pos), list(quat), error=attrs.get("error"), attrs=attrs)

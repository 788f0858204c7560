"""Trajectory files (issue 18): read back as a Trajectory, written incrementally, a valid partial
file after Ctrl-C, normal permissions, a clear message when poses were not recorded."""
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from contactlab.scenarios import make_scene
from contactlab.sim import Simulator, StepRecord, Trajectory, read_trajectory, write_trajectory
from contactlab.sim.recorder import RECORD_FIELDS, TrajectoryWriter


def test_round_trip_is_a_trajectory(tmp_path):
    sim = Simulator(make_scene("stack", count=2))
    traj = sim.run(0.05, record_poses=True)
    write_trajectory(tmp_path / "t.h5", traj, attrs={"scene": "stack", "params": {"count": 2}})
    back = read_trajectory(tmp_path / "t.h5")
    assert isinstance(back, Trajectory) and back.body_names == traj.body_names
    assert back.records == traj.records                       # every field of every step, exactly
    assert all(isinstance(r, StepRecord) for r in back.records)
    p, q = back.poses()
    assert p.shape == (6, 3, 3) and np.array_equal(p, np.array(traj.positions)) and q.shape == (6, 3, 4)
    assert back.attrs["scene"] == "stack" and back.attrs["complete"] is True
    assert back.metrics() == traj.metrics() and back["steps/time"].shape == (5,)
    mask = os.umask(0)
    os.umask(mask)
    assert os.stat(tmp_path / "t.h5").st_mode & 0o777 == 0o666 & ~mask


def test_poses_not_recorded_warns_and_raises():
    traj = Simulator(make_scene("stack", count=1)).run(0.02)
    with pytest.warns(UserWarning, match="record_poses=True"), pytest.raises(ValueError, match="no poses"):
        traj.poses()


def test_writer_appends_chunks_and_keeps_old_file_until_done(tmp_path):
    path = tmp_path / "run.h5"
    path.write_text("older run")
    sim = Simulator(make_scene("stack", count=1))
    traj = Trajectory(list(sim.model.names))
    w = TrajectoryWriter(path, traj.body_names, attrs={"scene": "stack"})
    for _ in range(3):
        sim.run(0.02, trajectory=traj, record_poses=True)
        w.append(traj)
        assert path.read_text() == "older run"                # the target is replaced only at the end
    w.close(traj, interrupted="test stop")
    back = read_trajectory(path)
    assert len(back.records) == 6 and back.attrs["complete"] is False and back.attrs["interrupted"] == "test stop"
    assert np.allclose(back.column("time"), 0.01 * np.arange(1, 7))
    assert set(RECORD_FIELDS) <= set(vars(back.records[0]))
    assert not [f for f in os.listdir(tmp_path) if f != "run.h5"]   # no temporary left behind


@pytest.mark.slow
def test_sigint_keeps_a_valid_partial_file(tmp_path):
    out = tmp_path / "pile.h5"
    # 10,000 s (a million steps): the run must still be going when the signal comes, however fast the engine
    cmd = [sys.executable, "-c", "from contactlab.cli import main; main()", "simulate", "pile", "--set", "count=6",
           "--duration", "10000", "--out", str(out)]
    # the child handles SIGINT as Python does by default, whatever an earlier test left in this process
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    t0 = time.time()
    while not any(f.endswith(".partial") for f in os.listdir(tmp_path)) and time.time() - t0 < 60:
        time.sleep(0.2)
    # some chunks written: the partial file grows past its empty datasets (with a cold numba cache the
    # first steps compile for many seconds, so a fixed wait could interrupt before the first chunk)
    partial = tmp_path / next(f for f in os.listdir(tmp_path) if f.endswith(".partial"))
    size0 = partial.stat().st_size
    while partial.exists() and partial.stat().st_size <= size0 and time.time() - t0 < 300:
        time.sleep(0.2)
    time.sleep(1.0)
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 130, (p.returncode, err)
    assert "interrupted: wrote" in err and "partial" in err
    back = read_trajectory(out)
    n = len(back.records)
    assert 0 < n < 100000 and back.attrs["complete"] is False and "SIGINT" in back.attrs["interrupted"]
    assert back.attrs["steps_written"] == n and back.poses()[0].shape[0] == n + 1
    assert np.allclose(back.column("time"), 0.01 * np.arange(1, n + 1))
    assert not [f for f in os.listdir(tmp_path) if f != "pile.h5"]


def test_a_solved_record_is_the_constructors():
    """StepRecord.solved (a certified step's record stored field by field, sim/grasp_step.py) is the
    record the constructor makes of the same values: equal, the same field types, the same attribute
    order, and a fault set afterwards reads as the constructor's record's."""
    values = (0.25, 5, 18, 7, 3.5e-12, 1.25, -0.5, 1e-6, 2e-9, 4e-5, 3e-5, 1e-7)
    t, nc, n, it, res, ke, e, eg, cg, pen, secs, je = values
    made = StepRecord(time=t, contacts=nc, lcp_size=n, iterations=it, pivots=0, residual=res, success=True,
                      status="SOLVED", rescued=False, kinetic_energy=ke, energy=e, energy_gain=eg,
                      contact_energy_gain=cg, max_penetration=pen, solve_time=secs, joint_error=je)
    fast = StepRecord.solved(*values)
    assert fast == made and type(fast) is StepRecord
    assert list(vars(fast)) == list(vars(made)) == [*RECORD_FIELDS[:7], "status", *RECORD_FIELDS[7:], "fault"]
    assert [type(v) for v in vars(fast).values()] == [type(v) for v in vars(made).values()]
    fast.fault, made.fault = "moved", "moved"
    assert fast == made and fast != StepRecord.solved(*values)

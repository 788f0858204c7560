"""contactlab.batch.sweep (issue 17) on a real dask.distributed LocalCluster (processes on the
loopback interface), on joblib and serially: identical rows; a worker killed mid-sweep loses and
duplicates no row; Ctrl-C leaves a valid, resumable Parquet file; a hanging row becomes a failed
row; a raising row becomes an error row."""
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pandas as pd
import pytest

from contactlab.batch import expand_grid, row_key, row_seed, sweep

VARYING = ("wall_s", "host", "pid", "time_s")   # differ between runs by nature; everything else must not


# tasks: module-level so that workers import them by reference
def draw(a, b, seed):
    rng = np.random.default_rng(seed)
    return {"x": float(a * b + rng.standard_normal()), "k": int(rng.integers(1 << 30)), "label": f"{a}-{b}"}


def slow_row(i, seed):
    time.sleep(0.25)        # 40 rows: 10 s, so the sweep is still running when the test's SIGINT comes
    return {"i2": i * i}


def die_once(i, marker):
    if i == 3 and not os.path.exists(marker):
        open(marker, "w").close()
        os.kill(os.getpid(), signal.SIGKILL)      # the worker process dies while running this row
    time.sleep(0.05)
    return {"i2": i * i, "pid_seen": os.getpid()}


def hang(i):
    if i == 1:
        while True:
            time.sleep(0.01)
    return {"i2": i * i}


def boom(i):
    if i == 2:
        raise RuntimeError("no good")
    return {"i2": i * i}


def _stable(df):
    return df.drop(columns=[c for c in df.columns if c in VARYING or c.endswith("time_s")])


@pytest.fixture(scope="module")
def cluster():
    from dask.distributed import Client, LocalCluster
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=":0") as lc, Client(lc) as client:
        yield client


def test_grid_rows_and_seeds():
    rows = expand_grid({"a": [1, 2], "b": ["x", "y", "z"]}, repeat=2)
    assert len(rows) == 12 and rows[0] == {"a": 1, "b": "x", "repeat": 0} and rows[1]["repeat"] == 1
    keys = [row_key("t", r) for r in rows]
    assert len(set(keys)) == 12
    # a row's seed depends on the sweep seed and the row only, not on its position
    assert row_seed(0, row_key("t", {"repeat": 0, "b": "x", "a": 1})) == row_seed(0, keys[0])
    assert row_seed(1, keys[0]) != row_seed(0, keys[0])
    assert expand_grid([{"a": 1}, {"a": 5, "c": 2}]) == [{"a": 1, "repeat": 0}, {"a": 5, "c": 2, "repeat": 0}]


def test_error_and_timeout_rows_serial(tmp_path):
    df = sweep(boom, {"i": [1, 2, 3]}, progress=False)
    assert list(df["status"]) == ["ok", "error", "ok"] and "RuntimeError: no good" in df["error"][1]
    assert list(df["i2"][[0, 2]]) == [1, 9]
    t0 = time.perf_counter()
    df = sweep(hang, {"i": [0, 1, 2]}, timeout=0.5, progress=False)
    assert list(df["status"]) == ["ok", "timeout", "ok"] and time.perf_counter() - t0 < 10


def test_resume_skips_finished_rows(tmp_path):
    out = tmp_path / "r.parquet"
    first = sweep(draw, {"a": [1, 2], "b": [3]}, out=out, progress=False)
    more = sweep(draw, {"a": [1, 2, 4], "b": [3]}, out=out, progress=False)
    assert len(more) == 3 and more["row_id"].is_unique
    kept = more[more["row_id"].isin(first["row_id"])]
    assert list(kept["wall_s"]) == list(first["wall_s"])          # not rerun: the stored rows
    assert pd.read_parquet(out).equals(more)
    assert oct(os.stat(out).st_mode & 0o777) != oct(0o600)


@pytest.mark.slow
def test_serial_joblib_and_dask_rows_identical(cluster):
    grid = {"case": ["data-set-1", "data-set-2", "data-set-3", "data-set-4"], "method": ["bilinear-lp", "mip"]}
    serial = sweep("quasistatic", grid, seed=7, progress=False)
    local = sweep("quasistatic", grid, seed=7, workers=2, progress=False)
    dask = sweep("quasistatic", grid, seed=7, scheduler=cluster, progress=False)
    mip = serial[serial["method"] == "mip"]
    assert len(serial) == 8 and set(mip["status"]) <= {"SOLVED", "NO_SOLUTION"}   # the exact method decides each
    assert list(mip["status"]) == ["SOLVED", "SOLVED", "SOLVED", "NO_SOLUTION"]    # data set 4 jams (paper)
    pd.testing.assert_frame_equal(_stable(serial), _stable(local))
    pd.testing.assert_frame_equal(_stable(serial), _stable(dask))
    assert dask["pid"].nunique() >= 1 and (dask["pid"] != os.getpid()).all()
    # a function task with random draws: bit for bit on every engine
    g = {"a": [1, 2, 3], "b": [0.5, 2.0]}
    ref = sweep(draw, g, seed=3, progress=False)
    pd.testing.assert_frame_equal(_stable(ref), _stable(sweep(draw, g, seed=3, scheduler=cluster, progress=False)))


@pytest.mark.slow
def test_dask_worker_killed_mid_sweep_loses_no_row(cluster, tmp_path):
    marker = str(tmp_path / "killed")
    df = sweep(die_once, {"i": list(range(12)), "marker": [marker]}, scheduler=cluster, progress=False,
               out=tmp_path / "k.parquet")
    assert os.path.exists(marker)                             # a worker really died
    assert sorted(df["i"]) == list(range(12)) and df["row_id"].is_unique
    assert (df["status"] == "ok").all() and list(df["i2"]) == [i * i for i in range(12)]
    assert len(pd.read_parquet(tmp_path / "k.parquet")) == 12


@pytest.mark.slow
def test_dask_hanging_row_times_out(cluster):
    df = sweep(hang, {"i": [0, 1, 2]}, timeout=1.0, scheduler=cluster, progress=False)
    assert list(df["status"]) == ["ok", "timeout", "ok"] and "time limit" in df["error"][1]


@pytest.mark.slow
def test_ctrl_c_leaves_a_valid_resumable_file(tmp_path):
    out = tmp_path / "s.parquet"
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    cmd = [sys.executable, "-c", "from contactlab.cli import main; main()", "sweep", "tests.test_batch:slow_row",
           "--grid", "i=" + ",".join(str(i) for i in range(40)), "--out", str(out), "--json"]
    # the child handles SIGINT as Python does by default, whatever an earlier test left in this process
    p = subprocess.Popen(cmd, cwd=root, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    t0 = time.time()
    while not out.exists() and time.time() - t0 < 60:
        time.sleep(0.1)
    time.sleep(0.5)
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 130 and "rerun the same command to resume" in err, err
    part = pd.read_parquet(out)
    assert 0 < len(part) < 40 and part["row_id"].is_unique and (part["status"] == "ok").all()
    r = subprocess.run(cmd, cwd=root, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    import json
    rec = json.loads(r.stdout)
    assert rec["rows"] == 40 and rec["failed"] == 0 and rec["out"] == str(out)
    full = pd.read_parquet(out)
    assert sorted(full["i"]) == list(range(40)) and full["row_id"].is_unique
    assert set(part["row_id"]) <= set(full["row_id"])
    assert full.set_index("row_id").loc[part["row_id"], "wall_s"].tolist() == part["wall_s"].tolist()

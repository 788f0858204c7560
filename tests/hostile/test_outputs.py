"""Outputs never lost (issue 40): the file named is the file written, targets are checked before
the work, two writers of one output take turns (rows merged), a full disk leaves the previous file
intact with one line, and a sweep row whose worker process crashes is a failed row, not a lost sweep."""
import errno
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

import contactlab as cl
from contactlab.cli import app

ROOT = Path(__file__).resolve().parents[2]
runner = CliRunner()


@pytest.fixture
def problem(tmp_path):
    M, q = np.array([[2.0, 1.0], [1.0, 2.0]]), np.array([-3.0, 0.0])   # z = (1.5, 0), w = (0, 1.5)
    return cl.save(cl.LCP(M, q), tmp_path / "p.npz")


@pytest.mark.parametrize("name", ["result.txt", "result.csv", "result.json", "result.npz"])
def test_solve_out_writes_the_file_named(tmp_path, problem, name):
    out = tmp_path / "o" / name
    res = runner.invoke(app, ["solve", str(problem), "--method", "lemke", "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert sorted(p.name for p in out.parent.iterdir()) == [name]      # no hidden file beside it
    if name.endswith(".npz"):
        with np.load(out) as f:
            z, w = f["z"], f["w"]
    elif name.endswith(".json"):
        rec = json.loads(out.read_text())
        z, w = np.array(rec["z"]), np.array(rec["w"])
        assert rec["status"] == "SOLVED"
    else:
        table = np.loadtxt(out, delimiter="," if name.endswith(".csv") else None, skiprows=1)
        z, w = table[:, 0], table[:, 1]
    assert np.allclose(z, [1.5, 0.0]) and np.allclose(w, [0.0, 1.5])


def test_solve_out_refuses_an_unknown_suffix_or_a_folder_before_solving(tmp_path, problem):
    for out, why in ((tmp_path / "r.xyz", "--out writes .npz"), (tmp_path, "is a directory"),
                     (Path("/proc/contactlab-x.npz"), "cannot write there")):
        res = runner.invoke(app, ["solve", str(problem), "--out", str(out)])
        assert res.exit_code == 2 and why in res.output and "status" not in res.output, res.output


def test_a_full_disk_leaves_the_previous_result_intact(tmp_path, problem, monkeypatch):
    out = tmp_path / "result.npz"
    out.write_bytes(b"previous result")
    real_savez = np.savez

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(np, "savez", full)
    res = runner.invoke(app, ["solve", str(problem), "--out", str(out)])
    monkeypatch.setattr(np, "savez", real_savez)
    assert res.exit_code == 1 and "Traceback" not in res.output
    assert "error: could not write" in res.output and "No space left on device" in res.output
    assert out.read_bytes() == b"previous result" and sorted(p.name for p in tmp_path.iterdir()) == ["p.npz", "result.npz"]


def test_sweep_and_reproduce_check_their_outputs_before_the_work(tmp_path):
    res = runner.invoke(app, ["sweep", "tests.hostile_tasks:slow", "--grid", "i=1", "--out", str(tmp_path)])
    assert res.exit_code == 2 and "is a directory" in res.output
    res = runner.invoke(app, ["sweep", "tests.hostile_tasks:slow", "--grid", "i=1", "--out", "/proc/x/r.parquet"])
    assert res.exit_code == 2 and "cannot write there" in res.output
    (tmp_path / "file").write_text("")
    res = runner.invoke(app, ["reproduce", "--only", "x", "--out", str(tmp_path / "file")])
    assert res.exit_code == 2 and "is a file; give a folder" in res.output


def _cli(*args, **kw):
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}"}
    return subprocess.Popen([sys.executable, "-c", "from contactlab.cli import main; main()", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT, **kw)


def test_two_sweeps_on_one_output_take_turns_and_keep_every_row(tmp_path):
    """Each sweep used to replace the other's file (one run's rows vanished, both exited 0)."""
    out = tmp_path / "rows.parquet"
    a = _cli("sweep", "tests.hostile_tasks:slow", "--grid", "i=0,1,2,3", "--out", str(out), "-q")
    time.sleep(0.5)
    b = _cli("sweep", "tests.hostile_tasks:slow", "--grid", "i=10,11,12,13", "--out", str(out), "-q")
    outs = [p.communicate(timeout=300) for p in (a, b)]
    assert (a.returncode, b.returncode) == (0, 0), outs
    df = pd.read_parquet(out)
    assert sorted(df["i"]) == [0, 1, 2, 3, 10, 11, 12, 13]
    assert sorted(df["square"]) == sorted(i * i for i in (0, 1, 2, 3, 10, 11, 12, 13))
    assert not any(p.name.endswith(".lock") for p in tmp_path.iterdir())


def test_a_row_that_crashes_its_worker_is_a_failed_row(tmp_path):
    """Row i = 3 kills its worker with SIGSEGV; the five others finish and the sweep writes six rows."""
    out = tmp_path / "rows.parquet"
    p = _cli("sweep", "tests.hostile_tasks:crash_on", "--grid", "i=0,1,2,3,4,5", "--workers", "2",
             "--out", str(out), "--json")
    stdout, stderr = p.communicate(timeout=600)
    assert p.returncode == 0, stderr[-2000:]
    assert json.loads(stdout.strip().splitlines()[-1])["failed"] == 1
    df = pd.read_parquet(out).sort_values("i")
    assert list(df["i"]) == [0, 1, 2, 3, 4, 5]
    bad = df[df["i"] == 3].iloc[0]
    assert bad["status"] == "error" and "worker process died" in bad["error"]
    good = df[df["i"] != 3]
    assert (good["status"] == "ok").all() and list(good["square"]) == [0, 1, 4, 16, 25]

"""Outputs never lost (issue 40): the file named is the file written, targets are checked before
the work, two writers of one output take turns (rows merged), a full disk leaves the previous file
intact with one line, and a sweep row whose worker process crashes is a failed row, not a lost sweep."""
import errno
import json
import os
import signal
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


def test_a_serial_sweep_row_that_crashes_is_a_failed_row_and_strict_exits_1(tmp_path):
    """Without --workers, rows run one at a time in one worker process: row i = 3 (SIGSEGV) is a
    failed row naming the signal, the others finish; exit 0, or 1 with --strict (one error line)."""
    out = tmp_path / "rows.parquet"
    p = _cli("sweep", "tests.hostile_tasks:crash_on", "--grid", "i=0,1,2,3,4,5", "--out", str(out), "--json")
    stdout, stderr = p.communicate(timeout=600)
    assert p.returncode == 0, stderr[-2000:]
    assert json.loads(stdout.strip().splitlines()[-1])["failed"] == 1
    df = pd.read_parquet(out).sort_values("i")
    assert list(df["i"]) == [0, 1, 2, 3, 4, 5]
    bad = df[df["i"] == 3].iloc[0]
    assert bad["status"] == "error" and "worker process died" in bad["error"] and "SIGSEGV" in bad["error"]
    assert (df[df["i"] != 3]["status"] == "ok").all() and list(df[df["i"] != 3]["square"]) == [0, 1, 4, 16, 25]
    strict = tmp_path / "strict.parquet"
    p = _cli("sweep", "tests.hostile_tasks:crash_on", "--grid", "i=2,3", "--out", str(strict), "--strict", "-q")
    stdout, stderr = p.communicate(timeout=600)
    assert p.returncode == 1, stderr[-2000:]
    errors = [ln for ln in stderr.splitlines() if ln.startswith("error:")]
    assert errors == [f"error: 1 of 2 rows failed (--strict); their reasons are in the error column of {strict}"]
    assert "Traceback" not in stderr and len(pd.read_parquet(strict)) == 2
    p = _cli("sweep", "tests.hostile_tasks:crash_on", "--grid", "i=0,1", "--out", str(tmp_path / "ok.parquet"),
             "--strict", "-q")
    assert p.communicate(timeout=600) and p.returncode == 0


def test_a_serial_sweep_in_this_process_keeps_memory_errors_as_rows():
    """isolate=False runs rows in this process; a MemoryError is an error row, the sweep goes on."""
    from contactlab.batch import sweep
    from tests.hostile_tasks import out_of_memory
    df = sweep(out_of_memory, {"i": [0, 1, 2]}, progress=False, isolate=False)
    assert list(df["status"]) == ["ok", "error", "ok"] and df["error"][1].startswith("MemoryError")
    assert list(df["square"][[0, 2]]) == [0, 4]


@pytest.mark.parametrize("limit", [4096, 65536])
def test_simulate_out_past_a_file_size_limit_leaves_the_previous_file_intact(tmp_path, limit):
    """A real write failure (not a mock): the process may write files of ``limit`` bytes at most
    (RLIMIT_FSIZE, SIGXFSZ ignored, so a write past it fails with EFBIG as on a full disk): at the
    file's creation (4 KiB) or while the steps are flushed (64 KiB). Exit 1, one error line naming
    the file, no traceback, the previous file byte for byte, no temporary file left beside it."""
    import resource
    out = tmp_path / "run.h5"
    out.write_bytes(b"previous trajectory")

    def cap():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    p = _cli("simulate", "stack", "--duration", "1", "--out", str(out), "-q", preexec_fn=cap)
    stdout, stderr = p.communicate(timeout=600)
    assert p.returncode == 1, (stdout[-1000:], stderr[-2000:])
    assert "Traceback" not in stderr and stdout == ""
    assert stderr.splitlines() == [f"error: could not write {out} (File too large); any previous file there is "
                                   "left as it was"]
    assert out.read_bytes() == b"previous trajectory" and [p.name for p in tmp_path.iterdir()] == ["run.h5"]

"""CLI outputs found lost or crashing by issue 40's second campaign (docs/robustness.md): a full disk
while `simulate --out` flushed a larger run's steps (HDF5's close of the failed file: SIGSEGV) or
while `--export-fclib` wrote a step's problem (same crash), `--out` and `--html` naming one file
(the page replaced the trajectory), `replay --html` onto its own trajectory (the trajectory was
replaced), `replay --speed inf` / `--max-contacts -5` accepted, and `--dt 1e-300` (an
OverflowError traceback from the fault check)."""
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import h5py
import pytest

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"


def cli(args, tmp, limit=None):
    def cap():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        import resource
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}"}
    return subprocess.run([sys.executable, "-c", "from contactlab.cli import main; main()", *args], capture_output=True,
                          text=True, env=env, cwd=tmp, timeout=600, preexec_fn=cap if limit else None)


def one_error(p, code, contains):
    assert p.returncode == code, (p.returncode, p.stderr[-2000:])
    assert "Traceback" not in p.stderr + p.stdout
    lines = [ln for ln in p.stderr.splitlines() if ln.startswith("error:")]
    assert len(lines) == 1 and contains in lines[0], p.stderr[-2000:]


def test_a_full_disk_while_steps_are_flushed_is_one_line_not_a_crash(tmp_path):
    """6 boxes for 0.5 s pass 64 KiB while the steps are flushed (the file was created first)."""
    out = tmp_path / "run.h5"
    out.write_bytes(b"previous")
    p = cli(["simulate", "pile", "--set", "count=6", "--duration", "0.5", "--out", str(out), "-q"], tmp_path, 65536)
    one_error(p, 1, f"could not write {out} (File too large)")
    assert out.read_bytes() == b"previous" and [q.name for q in tmp_path.iterdir()] == ["run.h5"]


def test_a_full_disk_while_exporting_fclib_is_one_line_naming_the_folder(tmp_path):
    p = cli(["simulate", "stack", "--set", "count=2", "--duration", "0.05", "--export-fclib", str(tmp_path / "fc"),
             "-q"], tmp_path, 1024)
    one_error(p, 1, f"could not write --export-fclib {tmp_path / 'fc'} (File too large)")
    assert list((tmp_path / "fc").iterdir()) == []


def test_simulate_refuses_one_file_for_two_outputs_and_a_step_too_short(tmp_path):
    same = tmp_path / "same.h5"
    one_error(cli(["simulate", "stack", "--out", str(same), "--html", str(same)], tmp_path), 2,
              "--out and --html name the same file")
    scene = tmp_path / "s.json"
    shutil.copy(ROOT / "tests" / "data" / "stack2_traj.h5", tmp_path / "t.h5")
    one_error(cli(["simulate", "stack", "--set", "count=1", "--dt", "1e-300", "--duration", "1e-299"], tmp_path), 2,
              "dt must be at least 1e-09 s")
    assert not same.exists() and not scene.exists()


@pytest.mark.parametrize("args, contains", [
    (["--speed", "inf"], "--speed must be a finite number > 0"),
    (["--max-contacts", "-5"], "--max-contacts must be >= 0"),
])
def test_replay_refuses_bad_options(tmp_path, args, contains):
    shutil.copy(DATA / "stack2_traj.h5", tmp_path / "t.h5")
    p = cli(["replay", str(tmp_path / "t.h5"), "--html", str(tmp_path / "r.html"), *args], tmp_path)
    assert p.returncode == 2 and contains in p.stderr and "Traceback" not in p.stderr, p.stderr[-1500:]
    assert not (tmp_path / "r.html").exists()


def test_replay_onto_its_own_trajectory_is_refused_and_the_trajectory_kept(tmp_path):
    traj = tmp_path / "t.h5"
    shutil.copy(DATA / "stack2_traj.h5", traj)
    before = traj.read_bytes()
    one_error(cli(["replay", str(traj), "--html", str(traj)], tmp_path), 2, "is the trajectory file itself")
    assert traj.read_bytes() == before
    h5py.File(traj, "r").close()


def test_replay_on_a_full_disk_is_a_write_error_not_an_unreadable_trajectory(tmp_path):
    traj = tmp_path / "t.h5"
    shutil.copy(DATA / "stack2_traj.h5", traj)
    page = tmp_path / "r.html"
    page.write_text("previous")
    one_error(cli(["replay", str(traj), "--html", str(page)], tmp_path, 4096), 1, f"could not write {page}")
    assert page.read_text() == "previous"


def test_a_scene_with_a_nan_margin_is_refused(tmp_path):
    """margin = nan passed the `< 0` test and ran with NaN contact distances (exit 0)."""
    from contactlab.errors import ModelError
    from contactlab.scenarios.io import load_scene
    scene = tmp_path / "s.toml"
    scene.write_text('[settings]\nmargin = nan\n[[bodies]]\nname = "b"\nmass = 1.0\n'
                     '[[bodies.shapes]]\nkind = "sphere"\nradius = 0.1\n')
    with pytest.raises(ModelError, match="settings.slop, settings.margin and settings.cfm must be finite"):
        load_scene(scene)


def test_a_signal_whose_interrupt_a_callback_swallows_is_still_seen(tmp_path):
    """SIGTERM during `simulate --out` ran its handler inside a callback of h5py's object clean-up:
    Python printed the KeyboardInterrupt as "Exception ignored" and the run went on to exit 0 (the
    campaign's case M53). The signal is now remembered (the loop checks it) and not printed."""
    code = ("import os, signal\nfrom contactlab.commands import interrupt_exit_on_sigterm, interrupt_pending\n"
            "interrupt_exit_on_sigterm()\nclass D:\n    def __del__(self):\n"
            "        os.kill(os.getpid(), signal.SIGTERM)\n        for _ in range(100): pass\n"
            "d = D()\ndel d\nprint('pending', interrupt_pending())\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 0 and p.stdout.strip() == "pending True", (p.stdout, p.stderr[-1500:])
    assert "Exception ignored" not in p.stderr and "Traceback" not in p.stderr, p.stderr[-1500:]


def test_plot_checks_its_figure_target_first_and_a_full_disk_is_a_write_error(tmp_path):
    """plot's --out is checked before the trajectory is read (a folder where nothing can be written is
    one line naming --out, exit 2; it was reported as an unreadable trajectory after the work), a
    trajectory named as its own figure is refused, and a full disk while the figure is written is a
    write error (exit 1) that leaves the previous figure."""
    traj = tmp_path / "t.h5"
    shutil.copy(DATA / "stack2_traj.h5", traj)
    one_error(cli(["plot", str(traj), "--out", "/proc/x.png"], tmp_path), 2, "--out /proc/x.png: cannot write there")
    one_error(cli(["plot", str(tmp_path / "missing.h5"), "--out", "/proc/x.png"], tmp_path), 2, "--out")
    fig = tmp_path / "t.png"
    shutil.copy(traj, fig)
    before = fig.read_bytes()
    one_error(cli(["plot", str(fig), "--out", str(fig)], tmp_path), 2, "is the trajectory file itself")
    assert fig.read_bytes() == before
    fig = tmp_path / "f.png"
    fig.write_bytes(b"previous")
    one_error(cli(["plot", str(traj), "--out", str(fig)], tmp_path, 4096), 1, f"could not write {fig}")
    assert fig.read_bytes() == b"previous"
    p = cli(["plot", str(traj), "--out", str(fig)], tmp_path)
    assert p.returncode == 0 and fig.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

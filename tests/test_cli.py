"""The CLI as a newcomer meets it (issue 18): --version, solve's options and z/w, bad files in one
line, scenes and their parameters in --help, URDF scenes, bad --set values, overlapping bodies,
method names, one spelling of statuses, no 80-column cut on non-terminal output."""
import json
import os

import numpy as np
from typer.testing import CliRunner

import contactlab as cl
from contactlab.cli import app
from contactlab.commands import status_text

runner = CliRunner()

DOUBLE = """<?xml version="1.0"?>
<robot name="double">
  <link name="base"/>
  <link name="l1">
    <inertial><origin xyz="0.25 0 0"/><mass value="2"/>
      <inertia ixx="0.001" ixy="0" ixz="0" iyy="0.0425" iyz="0" izz="0.0425"/></inertial>
    <collision><origin xyz="0.25 0 0"/><geometry><box size="0.5 0.05 0.05"/></geometry></collision>
  </link>
  <joint name="j1" type="continuous"><parent link="base"/><child link="l1"/>
    <origin xyz="0 0 2"/><axis xyz="0 1 0"/></joint>
</robot>
"""


def test_version():
    r = runner.invoke(app, ["--version"])
    assert r.exit_code == 0 and r.output.strip() == f"contactlab {cl.__version__}"


def test_solve_prints_z_w_and_takes_options(tmp_path):
    M = np.array([[2.0, 1.0], [1.0, 2.0]])
    q = np.array([-5.0, -6.0])
    cl.save(cl.LCP(M, q), tmp_path / "p.npz")
    r = runner.invoke(app, ["solve", str(tmp_path / "p.npz"), "--method", "pgs", "--option", "tol=1e-12",
                            "--option", "max_sweeps=5000", "--json"])
    assert r.exit_code == 0, r.output
    rec = json.loads(r.stdout)
    z = np.linalg.solve(M, -q)                 # both components positive: w = 0 at the solution
    assert np.allclose(rec["z"], z, atol=1e-9) and np.allclose(rec["w"], 0, atol=1e-9)
    assert rec["options"] == {"tol": 1e-12, "max_sweeps": 5000} and rec["status"] == "SOLVED"
    assert 0 <= rec["time_s"] < 5 and "load_s" in rec
    r = runner.invoke(app, ["solve", str(tmp_path / "p.npz"), "--option", "tol"])
    assert r.exit_code == 2 and "KEY=VALUE" in r.output
    r = runner.invoke(app, ["solve", str(tmp_path / "p.npz"), "--method", "pgs", "--option", "no_such_option=1"])
    assert r.exit_code == 2 and "no_such_option" in r.output


def test_bad_problem_files_give_one_line(tmp_path):
    np.savez(tmp_path / "pickled.npz", M=np.array([object(), object()], dtype=object), q=np.ones(2))
    np.savez(tmp_path / "noq.npz", M=np.eye(2))
    (tmp_path / "junk.npz").write_text("not an archive")
    cases = {"pickled.npz": "pickled", "noq.npz": "'q'", "junk.npz": "not a .npz archive", ".": "is a directory",
             "missing.npz": "no such file"}
    for name, words in cases.items():
        r = runner.invoke(app, ["solve", str(tmp_path / name)])
        assert r.exit_code == 2, (name, r.output)
        assert words in r.output and "Traceback" not in r.output and len(r.output.strip().splitlines()) == 1, r.output


def test_status_printed_one_way():
    assert status_text(cl.Status.SOLVED) == "SOLVED" and status_text(cl.Status.NO_SOLUTION) == "NO_SOLUTION"
    r = runner.invoke(app, ["quasistatic", "data-set-2", "--json"])
    assert json.loads(r.stdout)["status"] == "SOLVED"
    from contactlab.sim.recorder import StepRecord
    rec = StepRecord(0.0, 0, 0, 0, 0, 0.0, True, "solved", False, 0, 0, 0, 0, 0, 0, 0)
    assert rec.status == "SOLVED" and StepRecord(*[0] * 7, cl.Status.MAX_ITERATIONS, *[0] * 8).status == "MAX_ITERATIONS"


def test_quasistatic_mode_enumeration_name_and_old_alias():
    r = runner.invoke(app, ["quasistatic", "data-set-2", "--method", "mode-enumeration", "--json"])
    assert r.exit_code == 0 and json.loads(r.stdout)["method"] == "mode-enumeration"
    r = runner.invoke(app, ["quasistatic", "data-set-2", "--method", "enumerate", "--json"])
    assert json.loads(r.stdout)["method"] == "mode-enumeration" and "old spelling" in r.stderr
    r = runner.invoke(app, ["quasistatic", "data-set-2", "--method", "lemke"])
    assert r.exit_code == 2 and "mode-enumeration" in r.output


def test_simulate_help_lists_every_registered_scene_with_defaults():
    from contactlab.scenarios import SCENES, scene_parameters
    r = runner.invoke(app, ["simulate", "--help"], env={"COLUMNS": "2000"})
    assert r.exit_code == 0
    for name in SCENES:
        assert f"{name}:" in r.output
        k, v = next(iter(scene_parameters(name).items()))
        assert f"{k}={v!r}" in r.output


def test_simulate_bad_values_and_methods(tmp_path):
    r = runner.invoke(app, ["simulate", "stack", "--set", "count=-3"])
    assert r.exit_code == 2 and "count=-3" in r.output
    r = runner.invoke(app, ["simulate", str(tmp_path)])
    assert r.exit_code == 2 and "is a directory" in r.output
    r = runner.invoke(app, ["simulate", "stack", "--set", "count=1", "--duration", "0.01", "--out", str(tmp_path)])
    assert r.exit_code == 2 and "is a directory" in r.output
    r = runner.invoke(app, ["simulate", "stack", "--set", "count=1", "--method", "nope"])
    assert r.exit_code == 2 and "unknown method 'nope'" in r.output
    accepted = {m.strip() for m in r.output.split("methods for model 'stewart-trinkle':")[1].split(",")}
    lcp = cl.LCP(np.eye(2), -np.ones(2))      # the model's problems are LCPs: the methods taking any LCP,
    general = {n for n, spec in cl.available_solvers().items() if spec.accepts(lcp)}
    assert "st-box" not in general            # and st-box, which takes only a pyramid LCP of free bodies:
    assert accepted == {"auto", "st-box"} | general   # the one-box stack's is one
    boxed_only = [n for n, spec in cl.available_solvers().items() if not spec.accepts(lcp)]
    assert boxed_only, "some registered method takes no LCP"
    r = runner.invoke(app, ["simulate", "stack", "--set", "count=1", "--method", boxed_only[0]])
    assert r.exit_code == 2 and "does not accept" in r.output and boxed_only[0] not in r.output.split(":")[-1]


def test_simulate_urdf_and_overlap_warning(tmp_path):
    (tmp_path / "double.urdf").write_text(DOUBLE)
    r = runner.invoke(app, ["simulate", str(tmp_path / "double.urdf"), "--duration", "0.05", "--json"])
    assert r.exit_code == 0, r.output
    assert set(json.loads(r.stdout)["bodies"]) == {"l1"}
    scene = ('name = "overlap"\n[[bodies]]\nname = "ground"\nkind = "fixed"\n[[bodies.shapes]]\nkind = "halfspace"\n'
             '[[bodies]]\nname = "ball"\nposition = [0, 0, 0.07]\n[[bodies.shapes]]\nkind = "sphere"\nradius = 0.1\n'
             '[[urdf]]\npath = "double.urdf"\n')
    (tmp_path / "s.toml").write_text(scene)
    r = runner.invoke(app, ["simulate", str(tmp_path / "s.toml"), "--duration", "0.01", "--json"])
    assert r.exit_code == 0, r.output
    assert "overlapping" in r.stderr and "ball/ground" in r.stderr and "0.03 m" in r.stderr
    assert set(json.loads(r.stdout)["bodies"]) == {"ball", "l1"}
    r = runner.invoke(app, ["simulate", str(tmp_path / "s.toml"), "--strict"])
    assert r.exit_code == 2 and "ball/ground by 0.03 m" in r.output


def test_non_terminal_output_is_not_cut_at_80_columns():
    import subprocess
    import sys
    code = ("from contactlab.commands import console; c = console();"
            "c.print('x' * 150 + ' end')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={**os.environ}).stdout
    assert out.strip() == "x" * 150 + " end"


def test_repeated_warnings_are_shown_once():
    import subprocess
    import sys
    code = ("import warnings\nfrom contactlab.cli import RepeatedWarnings\nwith RepeatedWarnings():\n"
            "    for _ in range(500):\n"
            "        with warnings.catch_warnings():\n"          # resets Python's once-per-place registry
            "            warnings.simplefilter('default')\n"
            "            warnings.warn('overflow encountered in dot', RuntimeWarning)\n")
    err = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stderr
    assert err.count("overflow encountered in dot") == 2, err   # the warning once, the summary line once
    assert "499 repeated warning(s) not shown" in err


def test_help_and_usage_errors_into_a_pipe_wrap_at_80_columns():
    """A file or pipe gets help and errors at 80 columns (no padding to an unbounded width), and the
    stack's defaults are still all there."""
    import subprocess
    import sys
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    run = lambda *args: subprocess.run([sys.executable, "-c", "from contactlab.cli import main; main()", *args],
                                       capture_output=True, text=True, env=env)
    top = run("--help")
    assert top.returncode == 0 and len(top.stdout.encode()) < 10_000
    out = run("simulate", "--help").stdout
    assert max(len(ln) for ln in out.splitlines()) <= 80
    assert "count=10" in out and "friction_directions=4" in " ".join(out.split())
    bad = run("simulate", "--no-such-option")
    assert bad.returncode == 2 and "--no-such-option" in bad.stderr
    assert max(len(ln) for ln in bad.stderr.splitlines()) <= 80 and len(bad.stderr) < 2_000


def test_highs_prints_no_banner_from_a_command():
    """The quasistatic command's LPs and MIP run HiGHS: nothing of HiGHS reaches stdout or stderr."""
    import subprocess
    import sys
    for method in ("bilinear-lp", "mip"):
        r = subprocess.run([sys.executable, "-c", "from contactlab.cli import main; main()", "quasistatic",
                            "data-set-1", "--method", method, "--json"], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        assert "HiGHS" not in r.stdout + r.stderr and "Copyright" not in r.stdout + r.stderr
        assert json.loads(r.stdout)["modes"]


def test_a_pseudo_terminal_of_unknown_size_still_gets_the_output():
    """A pty that reports 0 x 0 (script, some CI runners) printed nothing at width 0; now 80 columns."""
    import subprocess
    import sys
    code = ("import os, pty, sys\n"
            "pid, fd = pty.fork()\n"
            "if pid == 0:\n"
            "    from contactlab.cli import main; sys.argv = ['contactlab', 'plan', 'pyramid-6']; main()\n"
            "out = b''\n"
            "while True:\n"
            "    try:\n"
            "        chunk = os.read(fd, 4096)\n"
            "    except OSError:\n"
            "        break\n"
            "    if not chunk:\n"
            "        break\n"
            "    out += chunk\n"
            "os.waitpid(pid, 0)\n"
            "sys.stdout.write(out.decode(errors='replace'))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300).stdout
    assert "stable disassembly" in out and "6 blocks" in out


def test_python_dash_m_contactlab_is_the_contactlab_command():
    """``python -m contactlab`` (src/contactlab/__main__.py) runs the same app as the console script:
    its commands and their exit codes (a source tree without the installed script)."""
    import subprocess
    import sys
    run = subprocess.run([sys.executable, "-m", "contactlab", "--help"], capture_output=True, text=True)
    assert run.returncode == 0 and "simulate" in run.stdout and "reproduce" in run.stdout
    bad = subprocess.run([sys.executable, "-m", "contactlab", "no-such-command"], capture_output=True, text=True)
    assert bad.returncode != 0

"""User mistakes as one-line errors (issue 40): the CLI exits 2 with one ``error:`` line and no
traceback; the API raises a contactlab error naming the argument. Each case used to end in a raw
traceback (OverflowError, MemoryError, RecursionError, IsADirectoryError, a numba TypingError, an
IndexError in plot/replay) or in a silent wrong answer."""
import shutil
import warnings
from pathlib import Path
from types import SimpleNamespace

import h5py
import numpy as np
import pytest
from typer.testing import CliRunner

import contactlab as cl
from contactlab.cli import app
from contactlab.errors import ModelError, ParamError

DATA = Path(__file__).parents[1] / "data"
runner = CliRunner()


def one_line_error(args, *, contains: str, code: int = 2):
    res = runner.invoke(app, args)
    text = res.output
    assert res.exit_code == code, (args, res.exit_code, text[-1500:], res.exception)
    assert "Traceback" not in text and not isinstance(res.exception, (AssertionError, TypeError, KeyError))
    lines = [ln for ln in text.splitlines() if ln.startswith("error:")]
    assert len(lines) == 1 and contains in lines[0], (args, text[-1500:])
    return lines[0]


URDF_HEAD = '<?xml version="1.0"?>\n<robot name="r">\n'
LINK = ('<link name="{name}"><inertial><mass value="1"/><inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" '
        'iyz="0"/></inertial>{collision}</link>\n')


def write_urdf(path: Path, *, origin="0 0 0", mesh: str | None = None) -> Path:
    col = "" if mesh is None else f'<collision><geometry><mesh filename="{mesh}"/></geometry></collision>'
    path.write_text(URDF_HEAD + LINK.format(name="base", collision="") + LINK.format(name="arm", collision=col)
                    + f'<joint name="j" type="revolute"><parent link="base"/><child link="arm"/>'
                      f'<origin xyz="{origin}"/><axis xyz="0 0 1"/>'
                      f'<limit lower="-1" upper="1" effort="1" velocity="1"/></joint>\n</robot>\n')
    return path


def test_simulate_mistakes_are_one_line_errors(tmp_path):
    one_line_error(["simulate", "stack", "--duration", "inf"], contains="--duration must be a finite")
    one_line_error(["simulate", "stack", "--duration", "nan"], contains="--duration must be a finite")
    one_line_error(["simulate", "stack", "--set", "friction_directions=100000"],
                   contains="friction_directions=100000 must be from 1 to 10000")
    one_line_error(["simulate", "stack", "--set", "friction_directions=66"],
                   contains="friction_directions must be an even number from 2 to 64")
    one_line_error(["simulate", "stack", "--set", "count=99999999999"], contains="must be from 1 to 10000")
    nested = tmp_path / "nested.json"
    nested.write_text("[" * 100_000 + "]" * 100_000)
    one_line_error(["simulate", str(nested)], contains="nested too deeply")
    dot = tmp_path / "dot.toml"
    dot.write_text('[[urdf]]\npath = "."\n')
    one_line_error(["simulate", str(dot)], contains="is not a URDF file")
    one_line_error(["simulate", str(write_urdf(tmp_path / "nan.urdf", origin="0 nan 0"))],
                   contains="joint 'j' has a non-finite origin")
    one_line_error(["simulate", str(write_urdf(tmp_path / "mesh.urdf", mesh="gone.stl"))],
                   contains="URDF link 'arm': collision mesh 'gone.stl' cannot be read")
    one_line_error(["simulate", "stack", "--out", "/proc/contactlab-x.h5"], contains="cannot write there")
    one_line_error(["simulate", "stack", "--html", str(tmp_path)], contains="is a directory")


def test_missing_mesh_is_a_warning_naming_the_link_when_allowed(tmp_path):
    from contactlab.mechanics.urdf import allowing_missing_meshes, load_urdf
    path = write_urdf(tmp_path / "mesh.urdf", mesh="gone.stl")
    with pytest.raises(ModelError, match="link 'arm'.*--allow-missing-meshes"):
        load_urdf(path)
    for kwargs in ({"allow_missing_meshes": True}, {}):
        with warnings.catch_warnings(record=True) as seen, allowing_missing_meshes(bool(not kwargs)):
            warnings.simplefilter("always")
            scene = load_urdf(path, **kwargs)
        assert any("URDF link 'arm'" in str(w.message) for w in seen)
        assert [b.shapes for b in scene.bodies if b.name == "arm"] == [[]]


def test_solver_option_and_warm_start_mistakes_name_the_argument():
    p = cl.LCP(np.array([[2.0, 1.0], [1.0, 2.0]]), np.array([-1.0, -1.0]))
    with pytest.raises(ParamError, match="max_iterations=100000000000000000000000 .* too large"):
        cl.solve(p, "pgs", max_iterations=10 ** 23)
    with pytest.raises(ParamError, match=r"tol=10000000\.\.\. \(401 digits\)"):
        cl.solve(p, "pgs", tol=10 ** 400)
    for bad in ((["a"], [1.0]), ([0.5], [1.0]), ([0, 1], [1.0]), ([[0]], [[1.0]]), ([-1], [0.0])):
        with pytest.raises(ParamError, match="warm_start pair"):
            cl.solve(p, "dantzig", warm_start=bad)
    with pytest.raises(ParamError, match="warm_start z_sub contains NaN"):
        cl.solve(p, "dantzig", warm_start=([0], [np.nan]))
    with pytest.raises(ParamError, match="warm_start contains NaN"):
        cl.solve(p, "qp", warm_start=np.array([np.nan, 0.0]))
    with pytest.raises(ParamError, match="warm_start must be"):
        cl.solve(p, "qp", warm_start="zero")
    one_line_error(["solve", str(DATA / "barrett_wood_step565.npz"), "--method", "pgs", "-o",
                    "max_iterations=100000000000000000000000"], contains="too large")


def test_interior_point_solves_rows_with_lo_equal_hi():
    """lo_0 = hi_0 = 0.3 fixes z_0; row 1 then reads w_1 = z_1 + 1.15 with -1 <= z_1 <= 1, so z_1 = -1
    (w_1 = 0.15 > 0 at the lower bound): z = (0.3, -1) exactly, as pgs and lemke find."""
    M, q = np.array([[2.0, 0.5], [0.5, 1.0]]), np.array([-1.0, 1.0])
    sol = cl.solve(cl.BoxedLCP(M, q, lo=[0.3, -1.0], hi=[0.3, 1.0]), "interior-point")
    assert sol.status == cl.Status.SOLVED and np.allclose(sol.z, [0.3, -1.0], atol=1e-9)
    sol = cl.solve(cl.BoxedLCP(M, q, lo=[0.3, 0.2], hi=[0.3, 0.2]), "interior-point")
    assert sol.status == cl.Status.SOLVED and np.array_equal(sol.z, [0.3, 0.2])


def test_simulator_run_refuses_a_non_finite_or_negative_duration():
    from contactlab.scenarios import make_scene
    from contactlab.sim import Simulator
    sim = Simulator(make_scene("stack", count=1), "stewart-trinkle")
    for bad in (float("nan"), float("inf"), -1, "1"):
        with pytest.raises(ParamError, match="duration must be a finite number of seconds >= 0"):
            sim.run(bad)


def test_the_dense_pyramid_is_refused_before_it_is_allocated():
    """count=5000 boxes (20000 contacts) asked for a 107 GiB dense matrix: a MemoryError after
    seconds. The size is checked from the counts alone, before any array is built."""
    from contactlab.models.stewart_trinkle import _parts
    sys_ = SimpleNamespace(nc=20000, d=4, nl=0, nm=0, ndof=30000)
    with pytest.raises(ModelError, match="120000 rows .* 107.3 GiB"):
        _parts(sys_)


def _mutate(src: Path, dst: Path, fn) -> Path:
    shutil.copy(src, dst)
    with h5py.File(dst, "a") as f:
        fn(f)
    return dst


def _replace(f, name, data):
    del f[name]
    f[name] = data


@pytest.mark.parametrize("damage, contains", [
    (lambda f: _replace(f, "steps/time", f["steps/time"][:3]), "(time has 3; the others 5)"),
    (lambda f: _replace(f, "bodies/names", np.array([b"a"])), "bodies/names lists 1 bodies"),
    (lambda f: _replace(f, "replay/contact_offset", np.array([0, 5, 2, 9, 9, 9, 9])), "contact_offset must rise"),
    (lambda f: _replace(f, "replay/position", f["replay/position"][:2]), "(position has 2; the others 6)"),
])
def test_plot_and_replay_refuse_inconsistent_trajectory_files(tmp_path, damage, contains):
    bad = _mutate(DATA / "stack2_traj.h5", tmp_path / "bad.h5", damage)
    one_line_error(["plot", str(bad), "--out", str(tmp_path / "p.png")], contains=contains)
    one_line_error(["replay", str(bad), "--html", str(tmp_path / "r.html")], contains=contains)


@pytest.mark.parametrize("module, call, contains", [
    ("noslip", lambda m, s: m.build(s), r"no-slip problem needs dense arrays of 20\.1 GiB \(M 30000 x 30000"),
    ("viscous", lambda m, s: m._rows(s, m.Options()), r"viscous problem needs dense arrays of 20\.1 GiB \(M 30000 x 30000"),
    ("trinkle_pang", lambda m, s: m.build(s), r"trinkle-pang problem needs dense arrays of 127\.4 GiB"),
])
def test_the_dense_models_refuse_a_step_too_large_before_allocating(module, call, contains):
    """The models that scatter a step into dense arrays (no-slip with motors, viscous, Trinkle-Pang)
    check the arrays' size from the counts alone, as Stewart-Trinkle does: 5,000 boxes (30,000 dofs,
    20,000 contacts) are a ModelError naming the model and the sizes, not a MemoryError."""
    import importlib
    mod = importlib.import_module(f"contactlab.models.{module}")
    sys_ = SimpleNamespace(nc=20000, d=4, nl=0, nm=1, nj=0, ndof=30000)
    with pytest.raises(ModelError, match=contains + r".*limit 4 GiB\); use fewer bodies, or model box-friction"):
        call(mod, sys_)


def test_a_run_too_long_to_record_is_refused_by_name():
    """run(1e300) used to start a run that could never end (nor fit its records in memory)."""
    from contactlab.errors import ParamError
    from contactlab.scenarios import make_scene
    from contactlab.sim import Simulator
    from contactlab.sim.simulator import MAX_RUN_STEPS
    sim = Simulator(make_scene("stack", count=1))
    for duration in (1e300, (MAX_RUN_STEPS + 1) * sim.h):
        with pytest.raises(ParamError, match=r"duration .* steps of .* run it in parts"):
            sim.run(duration)
    assert sim.data.steps == 0


def test_simulate_refuses_a_duration_too_long_to_record():
    from typer.testing import CliRunner

    from contactlab.cli import app
    r = CliRunner().invoke(app, ["simulate", "stack", "--duration", "1e300"])
    assert r.exit_code == 2 and "--duration 1e+300 s is 1e+302 steps" in r.output and "Traceback" not in r.output

"""`contactlab simulate` (its JSON is a public contract), scene files, HDF5 trajectories."""
import json

import numpy as np
import pytest
from typer.testing import CliRunner

from contactlab.cli import app
from contactlab.errors import ModelError
from contactlab.scenarios import make_scene
from contactlab.scenarios.io import load_scene, save_scene
from contactlab.sim import Simulator, read_trajectory, write_trajectory

runner = CliRunner()


def test_simulate_json_contract_and_physics():
    r = runner.invoke(app, ["simulate", "incline", "--set", "angle_deg=30", "--set", "mu=0.3",
                            "--duration", "0.5", "--dt", "0.01", "--model", "stewart-trinkle", "--method", "lemke",
                            "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert set(out) == {"scene", "model", "method", "steps", "bodies", "metrics"}
    assert (out["scene"], out["model"], out["method"], out["steps"]) == ("incline", "stewart-trinkle", "lemke", 50)
    body = out["bodies"]["body"]
    assert set(body) == {"position", "orientation", "linear_velocity", "angular_velocity"}
    assert len(body["position"]) == 3 and len(body["orientation"]) == 4
    assert set(out["metrics"]) == {"max_penetration", "max_energy_gain", "solver_failures", "lcp_variables_mean",
                                   "lcp_variables_max", "solve_time_s", "physics_faults"}
    th = np.radians(30)
    speed = np.linalg.norm(body["linear_velocity"])
    assert speed == pytest.approx(9.81 * (np.sin(th) - 0.3 * np.cos(th)) * 0.5, rel=1e-3)
    assert out["metrics"]["solver_failures"] == 0


def test_simulate_writes_hdf5_and_reports_bad_input(tmp_path):
    path = tmp_path / "stack.h5"
    r = runner.invoke(app, ["simulate", "stack", "--set", "count=2", "--duration", "0.05", "--out", str(path), "--json"])
    assert r.exit_code == 0, r.output
    data = read_trajectory(path)
    assert data["steps/time"].shape == (5,)
    assert data["bodies/position"].shape == (6, 3, 3)
    assert data["metrics"]["solver_failures"] == 0
    assert np.all(data["steps/contacts"] == 8)
    r = runner.invoke(app, ["simulate", "incline", "--set", "shape=cone", "--json"])
    assert r.exit_code == 2 and "shape" in r.output
    r = runner.invoke(app, ["simulate", "stack", "--set", "height=3"])
    assert r.exit_code == 2 and "height" in r.output
    r = runner.invoke(app, ["simulate", "stack", "--model", "no-such-model"])
    assert r.exit_code == 2 and "no-such-model" in r.output


def test_scene_files_round_trip_and_name_unknown_keys(tmp_path):
    scene = make_scene("pendulum-chain", links=2)
    save_scene(scene, tmp_path / "chain.json")
    again = load_scene(tmp_path / "chain.json")
    a, b = Simulator(scene), Simulator(again)
    a.run(0.1), b.run(0.1)
    assert np.array_equal(a.data.position, b.data.position)
    (tmp_path / "bad.toml").write_text('name = "x"\n[[bodies]]\nname = "b"\nmas = 2.0\n')
    with pytest.raises(ModelError, match="mas"):
        load_scene(tmp_path / "bad.toml")
    (tmp_path / "ok.toml").write_text(
        'name = "drop"\n[settings]\ndt = 0.01\n[[bodies]]\nname = "ground"\nkind = "fixed"\n'
        '[[bodies.shapes]]\nkind = "halfspace"\n[[bodies]]\nname = "ball"\nposition = [0, 0, 0.5]\n'
        '[[bodies.shapes]]\nkind = "sphere"\nradius = 0.1\n')
    r = runner.invoke(app, ["simulate", str(tmp_path / "ok.toml"), "--duration", "1.0", "--json"])
    assert r.exit_code == 0, r.output
    ball = json.loads(r.stdout)["bodies"]["ball"]
    assert ball["position"][2] == pytest.approx(0.1, abs=2e-4)     # landed and resting on the plane


def test_trajectory_records_are_consistent(tmp_path):
    sim = Simulator(make_scene("stack", count=1), "stewart-trinkle")
    traj = sim.run(0.1, record_poses=True)
    write_trajectory(tmp_path / "t.h5", traj, attrs={"scene": "stack"})
    d = read_trajectory(tmp_path / "t.h5")
    assert np.allclose(d["steps/time"], 0.01 * np.arange(1, 11))
    assert d["attrs"]["scene"] == "stack"
    assert np.all(d["steps/lcp_size"] == 4 * 6)   # 4 corners x (1 normal + 4 directions + 1 lambda)


def test_unusable_step_stops_the_run_and_keeps_the_steps():
    """A step with no usable answer raises SimulationError inside step(); run() keeps the steps so
    far, records why, and the state is the last good one (never NaN)."""
    import numpy as np
    import contactlab as cl
    from contactlab.scenarios import make_scene
    from contactlab.sim import Simulator
    sim = Simulator(make_scene("stack", count=2), "stewart-trinkle", "lemke", fallback=False)
    sim.run(0.05)
    good = sim.data.position.copy()
    original = cl.solvers.registry.get_solver("lemke").func

    def garbage(problem, opts, warm):  # a solver that claims nothing and returns nonsense
        return cl.Solution(z=np.full(problem.n, 1e6), w=np.empty(0), status=cl.Status.MAX_ITERATIONS)
    import dataclasses
    spec = cl.solvers.registry.get_solver("lemke")
    cl.solvers.registry._REGISTRY["lemke"] = dataclasses.replace(spec, func=garbage)
    try:
        traj = sim.run(0.05)
    finally:
        cl.solvers.registry._REGISTRY["lemke"] = dataclasses.replace(spec, func=original)
    assert traj.error and "no usable answer" in traj.error and len(traj.records) == 0
    np.testing.assert_array_equal(sim.data.position, good)


def test_simulate_fixed_budget_reports_the_residual_of_every_step():
    """--iterations K: at most K sweeps per step, the answers applied, and the residual reached per
    step in the JSON equals the recorded one (the same run through the Python API)."""
    r = runner.invoke(app, ["simulate", "stack", "--set", "count=4", "--duration", "0.05", "--model", "box-friction",
                            "--method", "pgs", "--iterations", "3", "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["iterations"] == 3 and len(out["residual_per_step"]) == out["steps"] == 5
    sim = Simulator(make_scene("stack", count=4), "box-friction", "pgs", iterations=3)
    traj = sim.run(0.05)
    assert np.allclose(out["residual_per_step"], traj.column("residual"), rtol=1e-9, atol=1e-15)
    assert max(r.iterations for r in traj.records) <= 3
    bad = runner.invoke(app, ["simulate", "stack", "--model", "box-friction", "--iterations", "0", "--json"])
    assert bad.exit_code == 2 and "iterations" in bad.output


def test_simulate_w_step_tol_stops_sweeps_as_bullet_does():
    """--w-step-tol TOL with --iterations K: the sweeps per step (in the JSON) are those of the
    Python API's run with solver_options w_step_tol, fewer than without it on a resting pile."""
    args = ["simulate", "pile", "--set", "count=6", "--duration", "0.4", "--model", "box-friction",
            "--method", "pgs", "--iterations", "50", "--json"]
    r = runner.invoke(app, args + ["--w-step-tol", "3.16e-4"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    full = json.loads(runner.invoke(app, args).stdout)
    assert out["w_step_tol"] == 3.16e-4 and sum(out["sweeps_per_step"]) < sum(full["sweeps_per_step"])
    sim = Simulator(make_scene("pile", count=6), "box-friction", "pgs", iterations=50,
                    solver_options={"w_step_tol": 3.16e-4})
    traj = sim.run(0.4)
    assert out["sweeps_per_step"] == [int(x) for x in traj.column("iterations")]
    bad = runner.invoke(app, ["simulate", "stack", "--model", "box-friction", "--w-step-tol", "1e-4", "--json"])
    assert bad.exit_code == 2 and "--iterations" in bad.output
    # a method without that stop: our error at once, naming the option and the method (no traceback)
    bad = runner.invoke(app, ["simulate", "stack", "--model", "box-friction", "--method", "box-qp", "--iterations", "5",
                              "--w-step-tol", "1e-4", "--json"])
    assert bad.exit_code == 2 and "w_step_tol" in bad.output and "box-qp" in bad.output


def test_box_friction_without_a_method_is_its_certified_fast_combination():
    """``--model box-friction`` alone on free bodies: box-qp with the previous step's bounds (the
    model's FREE_BODIES_DEFAULT), every step certified and a 10-box stack at rest to 1e-6 m over 1 s
    (its DEFAULT_METHOD pgs, with bounds coupled to the current impulse, certified 0 of 50 steps on
    this stack). Options, a budget or joints keep the model's DEFAULT_METHOD; the choice is said."""
    from contactlab.models import box_friction
    sim = Simulator(make_scene("stack", count=10), "box-friction")
    assert (sim.method, sim.model_options.coupling) == ("box-qp", "previous") and sim.stages.compiled
    assert "without a method" in sim.default_choice
    x0 = sim.data.position.copy()
    traj = sim.run(1.0)
    assert all(r.success and not r.rescued for r in traj.records)
    assert np.abs(sim.data.position - x0).max() < 1e-6
    given = Simulator(make_scene("stack", count=2), "box-friction", model_options={"coupling": "current"})
    assert (given.method, given.default_choice) == (box_friction.DEFAULT_METHOD, None)
    budget = Simulator(make_scene("stack", count=2), "box-friction", iterations=20)
    assert budget.method == box_friction.DEFAULT_METHOD and budget.default_choice is None
    chain = Simulator(make_scene("pendulum-chain", links=2), "box-friction")
    assert chain.method == box_friction.DEFAULT_METHOD and chain.default_choice is None
    r = runner.invoke(app, ["simulate", "stack", "--set", "count=2", "--duration", "0.05", "--model", "box-friction",
                            "--json"])
    out = json.loads(r.stdout)
    assert (out["model"], out["method"]) == ("box-friction", "box-qp") and "without a method" in out["model_choice"]


def test_the_default_model_is_the_compiled_certified_box_engine_on_free_bodies():
    """No model given: box friction by box-qp where every moving body is free (every step certified,
    a resting stack stays put); Stewart-Trinkle where there are joints, or where a method is given."""
    sim = Simulator(make_scene("stack", count=3))
    assert (sim.model_name, sim.method) == ("box-friction", "box-qp") and sim.stages.compiled
    assert "free bodies" in sim.default_choice and sim.model_options.coupling == "previous"
    x0 = sim.data.position.copy()
    traj = sim.run(1.0)
    assert all(r.success for r in traj.records) and traj.metrics()["solver_failures"] == 0
    assert np.abs(sim.data.position - x0).max() < 1e-6
    chain = Simulator(make_scene("pendulum-chain", links=2))
    assert chain.model_name == "stewart-trinkle" and "joints" in chain.default_choice
    pile = Simulator(make_scene("pile", count=20))      # impacts: every step certified by box-qp itself
    traj = pile.run(0.6)
    assert all(r.success and not r.rescued for r in traj.records)
    assert traj.metrics()["max_penetration"] < 1e-3
    given = Simulator(make_scene("stack", count=1), None, "lemke")
    assert (given.model_name, given.method) == ("stewart-trinkle", "lemke")
    assert Simulator(make_scene("stack", count=1), "frictionless").default_choice is None
    r = runner.invoke(app, ["simulate", "stack", "--set", "count=2", "--duration", "0.05", "--json"])
    out = json.loads(r.stdout)
    assert (out["model"], out["method"]) == ("box-friction", "box-qp") and "free bodies" in out["model_choice"]
    r = runner.invoke(app, ["simulate", "stack", "--set", "count=2", "--duration", "0.05"])
    assert "model box-friction, method box-qp (default for this scene" in r.stdout

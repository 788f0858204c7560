"""The box gripper's Table I row measured as drumwright ran it (Sec. VII-A): the solver option
``warm_basis`` (solvers/lemke.py ``LemkeOptions``) reaches the compiled Stewart-Trinkle step
(sim/st_stages.py ``CompiledSTStages.plan``), its cold and warm runs apply the same motion, and
the report's verdict reads the cold run."""
import numpy as np
import pytest

from contactlab.errors import ParamError
from contactlab.problems import LCP
from contactlab.scenarios.box_gripper import (DEFAULT_CONFIGS, PAPER_ST, make_simulator, method_label, paper_row,
                                              ratios)
from contactlab.sim.st_stages import CompiledSTStages
from contactlab.solvers import solve

STEPS = 6


def _run(warm_basis):
    opts = None if warm_basis is None else {"warm_basis": warm_basis}
    sim = make_simulator("stewart-trinkle", "lemke", solver_options=opts)
    records = [sim.step() for _ in range(STEPS)]
    return sim, records


def test_cold_and_warm_basis_give_the_same_trajectory_and_the_option_reaches_the_kernel():
    warm_sim, warm = _run(None)             # the default: the warm basis
    cold_sim, cold = _run(False)
    assert type(warm_sim.stages) is CompiledSTStages and type(cold_sim.stages) is CompiledSTStages
    assert warm_sim.stages.warm_basis is True and cold_sim.stages.warm_basis is False
    # every step certified in both runs (each answer is the LCP's within solve()'s threshold)
    assert all(r.status == "SOLVED" for r in warm + cold)
    # the same first step (no previous basis), then Lemke's pivots from scratch against none:
    # the warm run's steps after the first take the previous basis's certified answer
    assert cold[0].pivots == warm[0].pivots > 0
    assert all(c.pivots > 0 for c in cold)
    assert sum(c.pivots for c in cold[1:]) > sum(w.pivots for w in warm[1:])
    assert sum(w.pivots == 0 for w in warm[1:]) >= STEPS // 2
    # golden-style comparison: two certified answers of each step's LCP (relative residual
    # <= 1e-6, cfm 1e-6) move the bodies alike; positions to 1e-8 m (the held boxes' drift over
    # these steps is ~1e-9 m), velocities to 1e-6 m/s, quaternions to 1e-8
    a, b = warm_sim.data, cold_sim.data
    assert np.max(np.abs(a.position - b.position)) < 1e-8
    assert np.max(np.abs(a.quaternion - b.quaternion)) < 1e-8
    assert np.max(np.abs(a.linear_velocity - b.linear_velocity)) < 1e-6
    assert np.max(np.abs(a.angular_velocity - b.angular_velocity)) < 1e-6
    # and the gripper holds the boxes in both (drumwright Fig. 1): less than 1 um of vertical motion
    held = [i for i, n in enumerate(cold_sim.model.names) if n.startswith("box")]
    assert np.max(np.abs(b.position[held, 2] - 1.0)) < 1e-6


@pytest.mark.parametrize("bad", ["no", 0, 1.0, None])
def test_a_bad_warm_basis_is_our_error_naming_the_option(bad):
    with pytest.raises(ParamError, match="warm_basis"):
        make_simulator("stewart-trinkle", "lemke", solver_options={"warm_basis": bad})
    with pytest.raises(ParamError, match="warm_basis"):
        solve(LCP(np.eye(2), np.array([-1.0, 1.0])), "lemke", warm_basis=bad)


def test_solve_accepts_warm_basis_and_it_changes_nothing_there():
    # a single LCP has no previous step: Lemke starts from its artificial basis either way
    rng = np.random.default_rng(3)
    G = rng.standard_normal((6, 6))
    M, q = G @ G.T + 0.1 * np.eye(6), rng.standard_normal(6)
    ref = solve(LCP(M, q), "lemke")
    for flag in (True, False):
        s = solve(LCP(M, q), "lemke", warm_basis=flag)
        assert s.status.name == "SOLVED" and s.pivots == ref.pivots
        np.testing.assert_array_equal(s.z, ref.z)
    # the answer is the LCP's: z >= 0, w = M z + q >= 0, z'w = 0 (checked here, not by the library)
    w = M @ ref.z + q
    assert ref.z.min() >= 0 and w.min() >= -1e-12 and abs(ref.z @ w) < 1e-10


def _row(model, method, total, cpu):
    return {"model": model, "method": method, "steps": 10, "total_s_mean": total, "cpu_s_mean": cpu,
            "method_per_step_s": 1.0, "solve_per_step_s": 1.0, "held": True, "held_trials": 3, "trials": 3,
            "drift_m": 0.0}


def test_the_paper_row_and_ratios_read_the_cold_run():
    cfg = DEFAULT_CONFIGS[0]
    assert method_label(cfg[1], cfg[2]) == PAPER_ST and cfg[2] == {"warm_basis": False}
    cold = _row("stewart-trinkle", PAPER_ST, 0.5, 0.6)
    warm = _row("stewart-trinkle", "lemke", 0.1, 0.1)
    ppm = _row("no-slip", "ppm", 0.1, 0.1)
    assert paper_row(cold) == (10.9681, 2.1812) and paper_row(warm) is None
    text = ratios([warm, cold, ppm])
    # the cold run's CPU-time ratio first (0.6 / 0.1), the warm basis's beside it (0.1 / 0.1)
    assert "the paper's) / no-slip+PPM = 6.00 (paper 6.58; wall time 5.00)" in text
    assert "not the paper's experiment): 1.00" in text


def test_the_report_verdict_reads_the_cold_run():
    from contactlab.reproduce.sec_box_gripper import summarize
    seen = []

    class Ctx:
        def summary(self, paper, item, **kw):
            seen.append((paper, item, kw))

    rows = [_row("stewart-trinkle", "lemke", 0.1, 0.1), _row("no-slip", "ppm", 0.1, 0.1)]
    cold = _row("stewart-trinkle", PAPER_ST, 0.6, 0.6)
    summarize(Ctx(), rows + [cold])
    table_one = [kw for paper, item, kw in seen if item == "Table I"][0]
    assert table_one["agrees"] is True and "6.00x" in table_one["ours"] and "1.00x" in table_one["ours"]
    seen.clear()
    cold["cpu_s_mean"] = 0.2        # 2x: outside 6.58 / 1.5, whatever the warm run gives
    cold.update(stages_per_step_s={"detect": 1e-3, "solve": 2e-2}, pivots_per_step=200.0, compiled_steps=5)
    summarize(Ctx(), rows + [cold])
    table_one = [kw for paper, item, kw in seen if item == "Table I"][0]
    assert table_one["agrees"] is False and "200 pivots/step" in table_one["reason"]
    assert "compresses" in table_one["reason"]
    seen.clear()
    cold["cpu_s_mean"] = 1.2        # 12x: above the band, said as such
    summarize(Ctx(), rows + [cold])
    table_one = [kw for paper, item, kw in seen if item == "Table I"][0]
    assert table_one["agrees"] is False and "above the paper's band" in table_one["reason"]


@pytest.mark.parametrize("contacts", ["grid", "coal"])
def test_the_noslip_steps_with_the_actuators_are_compiled_the_general_paths_bits(contacts):
    """drumwright Sec. VII-A's no-slip/PPM row: the grippers' force-limited actuators (their active set,
    models/noslip.py build) run in the compiled call (sim/noslip_kernels.py ``noslip_motor_step``):
    every step taken by it and certified, the state, impulses (the motors' at their push limit,
    +-50 N x dt) and records bit for bit the general stages' (``compiled=False``), and the boxes held."""
    from contactlab.scenarios.box_gripper import run_box_gripper
    a = make_simulator("no-slip", "ppm", contacts=contacts)
    b = make_simulator("no-slip", "ppm", contacts=contacts)
    b.compiled = False
    for k in range(12):
        ra, rb = a.step(), b.step()
        assert a.last_solution.info.get("compiled_step") and not b.last_solution.info.get("compiled_step")
        assert ra.success and ra.status == rb.status == "SOLVED" and ra.pivots == rb.pivots
        for x, y in ((a.data.position, b.data.position), (a.data.quaternion, b.data.quaternion),
                     (a.data.linear_velocity, b.data.linear_velocity)):
            assert np.array_equal(x, y), k
        for name in ("v_next", "normal", "tangent", "joint", "motor"):
            assert np.array_equal(getattr(a.data.result, name), getattr(b.data.result, name)), (name, k)
        assert a.data.result.info == b.data.result.info
    # both actuators saturated, pushing the boxes together: +50 N x 0.01 s on the left, -0.5 on the right
    assert np.array_equal(a.data.result.motor, [0.5, -0.5]) and a.data.result.info["motor_saturated"]
    held = [i for i, n in enumerate(a.model.names) if n.startswith("box")]
    assert np.max(np.abs(a.data.position[held, 2] - 1.0)) < 1e-6
    run = run_box_gripper("no-slip", "ppm", steps=10, contacts=contacts)
    assert run.compiled_steps == 10 and run.held and run.statuses == {"SOLVED": 10}

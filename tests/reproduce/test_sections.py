"""Report sections pivoting, iterative and replays tell the truth (issue 18): a crash or an
uncertified answer is a FAILED cell, never a time; a replay that stopped early is FAILED; the
synthetic Table I is labelled as such and every method the section expects to certify does."""
import numpy as np

import contactlab as cl
import contactlab.viz.replay as viz_replay
from contactlab.problems.generators import murty
from contactlab.reproduce import Failed, ReportContext, sec_iterative, sec_pivoting, sec_replays


def test_pivoting_uncertified_and_crashing_cells_read_failed(tmp_path):
    ctx = ReportContext(tmp_path, quick=True)
    P = murty(6)                                      # Lemke needs 2^6 = 64 pivots here
    t, pivots, _, _, status = sec_pivoting._attempt(ctx, lambda: cl.solve(P, "lemke", max_iterations=5), 1)
    assert isinstance(t, Failed) and status == "MAX_ITERATIONS" and pivots < 64

    def crash():
        raise ZeroDivisionError("boom")
    t, *_, status = sec_pivoting._attempt(ctx, crash, 1)
    assert isinstance(t, Failed) and "ZeroDivisionError" in t.reason and status == "RAISED"
    t, pivots, *_, status = sec_pivoting._attempt(ctx, lambda: cl.solve(P, "lemke"), 1)
    assert isinstance(t, float) and t > 0 and pivots == 64 and status == "SOLVED"
    assert len(ctx.failures) == 2


def test_replay_that_stopped_early_is_failed(tmp_path, monkeypatch):
    real = viz_replay.record_replay

    def stops_after_two_steps(sim, duration, **kw):
        traj, data = real(sim, 2 * sim.h, **kw)
        if sim.scene.name == "pile" and len(sim.scene.bodies) > 3:
            traj.error = "step 3 (t = 0.03 s): no usable answer (test)"
        return traj, data

    monkeypatch.setattr(viz_replay, "record_replay", stops_after_two_steps)
    monkeypatch.setattr(sec_replays, "REPLAYS", [
        ("pile", {"count": 1}, "box-friction", "pgs-sm", 0.02, 0.02, "one box"),
        ("pile", {"count": 3}, "box-friction", "pgs-sm", 0.02, 0.02, "three boxes")])
    ctx = ReportContext(tmp_path, quick=True)
    md = sec_replays.run(ctx)
    rows = [line for line in md.splitlines() if line.startswith("| [pile")]
    assert len(rows) == 2
    assert "ran to the end" in rows[0] and "**FAILED**" not in rows[0]
    assert "**FAILED** (stopped early" in rows[1] and "no usable answer (test)" in rows[1]
    assert len(ctx.failures) == 1 and "wall s" not in md


def test_iterative_section_is_labelled_and_its_certifying_methods_certify(tmp_path):
    ctx = ReportContext(tmp_path, quick=True)
    md = sec_iterative.run(ctx)
    assert "synthetic stress test, not the paper's experiment" in md
    assert "Differences from the paper beyond 3x" in md
    # lemke, pgs-sm (grasp family) and pgs-sm, interior-point (ill-conditioned) certify every problem
    assert ctx.failures == [], ctx.failures
    share = [float(s.split("reduction is ")[1].split(" %")[0]) for s in md.splitlines() if "reduction is " in s]
    assert len(share) == 2 and all(np.isfinite(share))


def test_grasp_replay_runs_the_whole_script_and_judges_fig1_from_it(tmp_path):
    """The hand5 replay runs its grasp script to the end (close, lift, hold; stopped when the script
    is done, before its close-timeout duration when the fingers stall) and arechavaleta Fig. 1's row
    reads that run: here a script without a lift (lift 0, 0.05 s close) gives 'not lifted'
    and a run cut before the hold gives no verdict."""
    from contactlab.scenarios import make_scene
    from contactlab.sim import Simulator

    def run(seconds):
        sc = make_scene("hand5-grasp", hold=0.02, close_timeout=0.05, lift=0.0, lift_speed=0.1)
        sim = Simulator(sc, "box-friction", "pgs-sm", model_options=sec_replays._model_options("hand5-grasp",
                        "box-friction"), controllers=sc.controllers)
        traj, data = sec_replays._record(sim, seconds(sc), sc.script)
        return sc, sim, traj, data

    sc, sim, traj, data = run(lambda sc: sc.duration)
    assert sc.script.phase == "done" and sim.data.time <= sc.duration + 1e-9
    assert data.frames == len(traj.records) + 1          # one frame per step and the start
    assert sc.script.events["hold"] >= sc.script.events["lift"] > sc.script.events["close"]
    ctx = ReportContext(tmp_path, quick=False)
    sec_replays._fig1(ctx, sc, sim, traj, sc.duration)
    (row,) = ctx.summaries
    assert row["item"] == "Fig. 1" and row["agrees"] is False and "not lifted" in row["ours"]
    sc, sim, traj, data = run(lambda sc: 0.03)
    assert sc.script.phase != "done"
    ctx = ReportContext(tmp_path, quick=False)
    sec_replays._fig1(ctx, sc, sim, traj, 0.03)
    (row,) = ctx.summaries
    assert row["agrees"] is None and "before the end of the grasp script" in row["reason"]

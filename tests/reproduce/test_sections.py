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

"""3D replays of the papers' scenes: one self-contained HTML page per scene (viz.replay), linked
from the report so a reader can watch what the tables measure."""
from __future__ import annotations

import numpy as np

TITLE = "3D replays of the papers' scenes"
ORDER = 950

# (scene, scene parameters, contact model, method, seconds, seconds in --quick, what it shows); seconds
# "script": the scene's grasp script to its end (``_record``)
REPLAYS = [
    ("box-gripper", {}, "no-slip", "ppm", 1.0, 0.3, "drumwright Sec. VII-A: the box gripper (no-slip, PPM)"),
    ("barrett-grasp", {"material": "rubber"}, "box-friction", "pgs-sm", 2.0, 1.0,
     "arechavaleta Fig. 3: rubber fingers lift the glass (box friction, PGS-SM)"),
    ("barrett-grasp", {"material": "plastic"}, "box-friction", "pgs-sm", 2.0, 1.0,
     "arechavaleta Fig. 2: plastic fingers let the glass slip (box friction, PGS-SM)"),
    # the whole grasp script (close, lift 10 cm, hold 2 s), ended when the script is done (the fingers
    # stall before the close timeout): arechavaleta Fig. 1's row reads this run
    ("hand5-grasp", {}, "box-friction", "pgs-sm", "script", 0.5, "arechavaleta Fig. 1: five-finger hand and rubber ball"),
    ("quadruped", {}, "no-slip", "ppm", 3.0, 0.5, "drumwright Sec. VII-B: the trotting quadruped (no-slip, PPM)"),
    # the paper's model and method (frictionless, Dantzig), as in sec_reuse; stewart-trinkle's friction LCP is
    # outside dantzig's classes (P / PSD) and stopped at step 45 (NUMERICAL_FAILURE, residual 7.6e-3)
    ("column-collapse", {}, "frictionless", "dantzig", 3.0, 0.5, "loomis-balkcom Fig. 1: a column of 7 blocks collapses"),
    ("pile", {"count": 100}, "box-friction", "box-qp", 2.0, 0.5, "a 100-box pile falling into its bin (not a paper's experiment; certified by box-qp with friction bounds from the previous normals, issue 11)"),
]


#: replay label -> the papers' figures it shows (beside their rows in the report's opening table)
FIGURES = {"box-gripper": [("drumwright", "Fig. 1")], "barrett-grasp-rubber": [("arechavaleta", "Fig. 3")],
           "barrett-grasp-plastic": [("arechavaleta", "Fig. 2")], "hand5-grasp": [("arechavaleta", "Fig. 1")],
           "quadruped": [("drumwright", "Fig. 2")], "column-collapse": [("loomis-balkcom", "Fig. 1")]}


def _record(sim, seconds: float, script=None, chunk: float = 0.25):
    """:func:`viz.replay.record_replay` for ``seconds``, or, with a grasp ``script``, until the script
    is done (close, lift, hold; its ``duration`` is the longest it can take: the close timeout) in
    runs of ``chunk`` s continuing one trajectory."""
    from ..viz.replay import ReplayRecorder, record_replay
    if script is None:
        return record_replay(sim, seconds)
    rec = ReplayRecorder(sim)
    sim.add_controller(rec.capture)
    traj = None
    try:
        while True:
            left = seconds - sim.data.time
            if left < 0.5 * sim.h or (traj is not None and (traj.error or script.phase == "done")):
                break
            traj = sim.run(min(chunk, left), trajectory=traj)
    finally:
        sim.controllers.remove(rec.capture)
    rec.capture(sim)
    return traj, rec.data()


def _fig1(ctx, scene, sim, traj, seconds: float) -> None:
    """arechavaleta Fig. 1 from the replay's own run: does the five-fingered hand lift the ball and
    hold it to the end of the script?"""
    script = scene.script
    if script.phase != "done":
        ctx.summary("arechavaleta", "Fig. 1", paper_value="the five-fingered hand picks up the rubber ball",
                    ours=f"replay of {sim.data.time:.2f} s (script phase at its end: {script.phase})", agrees=None,
                    reason="the replay stops before the end of the grasp script (lift and hold)"
                    + (f": {traj.error}" if traj.error else ""))
        return
    g = scene.summary(sim, traj)["grasp"]
    held = bool(g["lifted"])      # the ball is still up at the end of the hold
    drop = 1e3 * g["object_drop_m"]
    rel = f"{-drop:.1f} mm more than the wrist (pressed up into the hand)" if drop < 0 else f"{drop:.1f} mm less than the wrist"
    ctx.summary("arechavaleta", "Fig. 1", paper_value="the five-fingered hand picks up the rubber ball",
                ours=f"{'lifted and held' if held else 'not lifted'} in the replay's run of the whole script: closed "
                f"{script.events['lift'] - script.events['close']:.2f} s, wrist lifted {1e3 * script.lift:.0f} mm, held "
                f"{script.hold:g} s; the ball rose {rel}, moved {g['hold_drift_m']:.1e} m in the hand during the hold, "
                f"{g['max_contacts']} contacts at most", agrees=held, reason="" if held else "the ball was not lifted")


def _model_options(scene: str, model: str) -> dict | None:
    """The grasp scenes run with the grasping section's model options (arechavaleta's layout: joints
    eliminated as in eq. 15, friction bounds from the previous normals). With box-friction's defaults
    (joint rows kept, bounds coupled to the current normals) the rubber glass grasp is not a convex QP
    and pgs-sm stopped at its cycle cap on 156 of 200 steps (relative residual ~1e-3; neither 10x the
    cycles nor 1e5 PGS sweeps reached 1e-8): answers applied uncertified."""
    from ..scenarios.grasp_runs import PAPER_MODEL, PAPER_MODEL_OPTIONS
    if scene == "pile" and model == "box-friction":
        # arechavaleta §IV-C eq. 16: bounds from the previous step's normals make each step a convex
        # bound-constrained QP, which box-qp certifies (docs/benchmarks-sim.md: 0 uncertified pile steps)
        return {"coupling": "previous"}
    return dict(PAPER_MODEL_OPTIONS) if scene.endswith("-grasp") and model == PAPER_MODEL else None


def run(ctx) -> str:
    from ..reproduce import markdown_table
    from ..scenarios import SCENES, make_scene
    from ..sim import Simulator
    from ..viz.replay import replay_html
    rows, missing = [], []
    for scene, params, model, method, seconds, quick_seconds, what in REPLAYS:
        if scene not in SCENES:
            missing.append(scene)
            continue
        label = scene + "".join(f"-{v}" for v in params.values())
        sc = make_scene(scene, **params)   # a scene may carry its controllers (grasp script, gait)
        script = getattr(sc, "script", None) if seconds == "script" and not ctx.quick else None
        dur = quick_seconds if ctx.quick else (sc.duration if seconds == "script" else seconds)
        sim = Simulator(sc, model, method, model_options=_model_options(scene, model),
                        controllers=getattr(sc, "controllers", ()))
        # nothing here is timed (speed is measured in the other sections and benchmarks/): the run goes
        # through ctx.warm_up, which tells the report that its numba compilation is not in a timing
        traj, data = ctx.warm_up(_record, sim, dur, script)
        rel = f"replays/{label}.html"
        replay_html(data, ctx.out_dir / rel, title=f"{label}: {what}")
        size = (ctx.out_dir / rel).stat().st_size / 1e6
        ok = np.asarray([r.success for r in traj.records], dtype=bool)
        rescued = np.asarray([r.rescued for r in traj.records], dtype=bool)
        statuses = sorted({r.status for r in traj.records if not r.success})
        certified = f"{int(ok.sum())}/{ok.size}"
        if ok.size and not ok.all():
            certified += (f" (others: {', '.join(statuses)}; {int(rescued.sum())} rescued by a fallback, "
                          f"{int((~ok & ~rescued).sum())} applied uncertified)")
        status = ctx.failed(f"stopped early at t = {data.time[-1]:.2f} of {dur:g} s: {traj.error}") if traj.error \
            else ("ran to the end" if script is None else f"ran to the end of the grasp script ({script.phase})")
        mopts = _model_options(scene, model)
        model_cell = model + (" (" + ", ".join(f"{k}={v}" for k, v in mopts.items()) + ")" if mopts else "")
        for paper, item in FIGURES.get(label, ()):
            ctx.summary_figure(paper, item, rel)
        if label == "hand5-grasp":
            _fig1(ctx, sc, sim, traj, dur)
        rows.append([f"[{label}]({rel})", what, model_cell, method, f"{data.time[-1]:.2f}", data.frames,
                     int(data.contacts.max(initial=0)), f"{size:.1f}", certified, status])
        if hasattr(ctx, "advance"):
            ctx.advance(label)
    out = ["Each link opens an interactive replay (play / pause / speed / time slider; drag to orbit, "
           "right-drag to pan, scroll to zoom; 'Open Controls' toggles contact points and the normal (blue) and "
           "friction (green) force arrows). Pages are self-contained and open offline. 'steps certified' "
           "counts the steps the method itself certified (a fallback's rescue is not counted as the method's "
           "success); a run that stopped before its simulated time reads **FAILED**. No wall time is given: "
           "replays are not benchmarks (speed is measured in the other sections and in benchmarks/).", "",
           markdown_table(["replay", "shows", "model", "method", "simulated s", "frames", "max contacts", "MB",
                           "steps certified", "run"], rows), "",
           "Model choices: the grasp replays use the grasping section's options (joints eliminated as in "
           "arechavaleta eq. 15, friction bounds from the previous step's normals); with box-friction's "
           "defaults (joint rows kept, bounds coupled to the current normals: not a convex QP) pgs-sm stopped at "
           "its cycle cap on 156 of the rubber glass's 200 steps (MAX_ITERATIONS, relative residual ~1e-3; 10x "
           "the cycles or 1e5 PGS sweeps still stalled near 5e-6) and 49 of hand5's 100, and those answers were "
           "applied uncertified. The column collapse runs the paper's frictionless model with Dantzig (as in the "
           "computation-reuse section); with stewart-trinkle, whose friction LCP is neither P nor PSD (outside "
           "dantzig's classes, see `contactlab solvers`), dantzig returned NUMERICAL_FAILURE at step 45 "
           "(residual 7.6e-3) and the run stopped; lemke runs that model to the end. The pile runs box "
           "friction with bounds from the previous step's normals (arechavaleta §IV-C: a convex "
           "bound-constrained QP per step) solved by box-qp, which certifies pile steps (issue 11)."]
    if missing:
        out += ["", "Scenes not built in this version (no replay): " + ", ".join(sorted(set(missing))) + "."]
    return "\n".join(out)

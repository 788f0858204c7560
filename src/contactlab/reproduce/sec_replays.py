"""3D replays of the papers' scenes: one self-contained HTML page per scene (viz.replay), linked
from the report so a reader can watch what the tables measure."""
from __future__ import annotations

import time

TITLE = "3D replays of the papers' scenes"
ORDER = 950

# (scene, scene parameters, contact model, method, seconds, seconds in --quick, what it shows)
REPLAYS = [
    ("box-gripper", {}, "no-slip", "ppm", 1.0, 0.3, "drumwright Sec. VII-A: the box gripper (no-slip, PPM)"),
    ("barrett-grasp", {"material": "rubber"}, "box-friction", "pgs-sm", 2.0, 1.0,
     "arechavaleta Fig. 3: rubber fingers lift the glass (box friction, PGS-SM)"),
    ("barrett-grasp", {"material": "plastic"}, "box-friction", "pgs-sm", 2.0, 1.0,
     "arechavaleta Fig. 2: plastic fingers let the glass slip (box friction, PGS-SM)"),
    ("hand5-grasp", {}, "box-friction", "pgs-sm", 2.0, 0.5, "arechavaleta Fig. 1: five-finger hand and rubber ball"),
    ("quadruped", {}, "no-slip", "ppm", 3.0, 0.5, "drumwright Sec. VII-B: the trotting quadruped (no-slip, PPM)"),
    ("column-collapse", {}, "stewart-trinkle", "dantzig", 3.0, 0.5, "loomis-balkcom Fig. 1: a column of 7 blocks collapses"),
    ("pile", {"count": 100}, "box-friction", "pgs-sm", 1.0, 0.1, "a 100-box pile (not a paper's experiment)"),
]


def run(ctx) -> str:
    from ..reproduce import markdown_table
    from ..scenarios import SCENES, make_scene
    from ..sim import Simulator
    from ..viz.replay import record_replay, replay_html
    rows, missing = [], []
    for scene, params, model, method, seconds, quick_seconds, what in REPLAYS:
        if scene not in SCENES:
            missing.append(scene)
            continue
        label = scene + "".join(f"-{v}" for v in params.values())
        dur = quick_seconds if ctx.quick else seconds
        t0 = time.perf_counter()
        sc = make_scene(scene, **params)   # a scene may carry its controllers (grasp script, gait)
        sim = Simulator(sc, model, method, controllers=getattr(sc, "controllers", ()))
        traj, data = record_replay(sim, dur)
        rel = f"replays/{label}.html"
        replay_html(data, ctx.out_dir / rel, title=f"{label}: {what}")
        size = (ctx.out_dir / rel).stat().st_size / 1e6
        status = "stopped early: " + traj.error if traj.error else "ran"
        rows.append([f"[{label}]({rel})", what, model, method, f"{data.time[-1]:.2f}", data.frames,
                     int(data.contacts.max(initial=0)), f"{size:.1f}", status, f"{time.perf_counter() - t0:.1f}"])
        if hasattr(ctx, "advance"):
            ctx.advance(label)
    out = ["Each link opens an interactive replay (play / pause / speed / time slider; drag to orbit, "
           "right-drag to pan, scroll to zoom; 'Open Controls' toggles contact points and the normal (blue) and "
           "friction (green) force arrows). Pages are self-contained and open offline.", "",
           markdown_table(["replay", "shows", "model", "method", "simulated s", "frames", "max contacts", "MB",
                           "run", "wall s"], rows)]
    if missing:
        out += ["", "Scenes not built in this version (no replay): " + ", ".join(sorted(set(missing))) + "."]
    return "\n".join(out)

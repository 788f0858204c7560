"""Sweeps (issue 17): a real ``contactlab.batch.sweep`` in the report. Stick/slide outcome of a
box on an incline over mu x angle against Coulomb's tan(angle) > mu; in full mode also the Barrett
hand's grasp outcome (lifted or not) over hand material x object material (arechavaleta §V)."""
from __future__ import annotations

import numpy as np

from . import markdown_table

TITLE = "Sweeps: outcome maps from contactlab.batch.sweep"
ORDER = 900
ALONE = True    # its sweeps start worker processes of their own: run by itself, not beside other sections

G = 9.81


def incline_row(mu: float, angle_deg: float, seed: int = 0) -> dict:
    """Slide a box down an incline for 0.3 s; report its speed along the slope and the outcome."""
    from ..scenarios import make_scene
    from ..sim import Simulator
    sim = Simulator(make_scene("incline", angle_deg=angle_deg, mu=mu), "box-friction", "pgs")
    traj = sim.run(0.3)
    th = np.radians(angle_deg)
    down = np.array([np.cos(th), 0.0, -np.sin(th)])
    speed = float(sim.data.linear_velocity[1] @ down)
    return {"speed": speed, "slides": bool(speed > 1e-4), "solver_failures": traj.metrics()["solver_failures"],
            "error": traj.error}


def _incline(ctx):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ..batch import failed_count, sweep
    mus = [0.2, 0.4, 0.6] if ctx.quick else [0.2, 0.3, 0.4, 0.5, 0.6, 0.7]
    angles = [10.0, 20.0, 30.0, 40.0] if ctx.quick else [10.0, 15.0, 20.0, 25.0, 30.0, 35.0]
    ctx.warm_up(incline_row, 0.5, 20.0)     # JIT start-up outside the sweep
    df = sweep(incline_row, {"mu": mus, "angle_deg": angles}, progress=False)
    ctx.advance("incline sweep")
    rows, wrong = [], 0
    grid = np.zeros((len(mus), len(angles)))
    for _, r in df.iterrows():
        predicted = np.tan(np.radians(r["angle_deg"])) > r["mu"]
        if r["status"] != "ok":
            rows.append([r["mu"], r["angle_deg"], "slide" if predicted else "stick", ctx.failed(str(r["error"])), "", ""])
            continue
        a_pred = max(0.0, G * (np.sin(np.radians(r["angle_deg"])) - r["mu"] * np.cos(np.radians(r["angle_deg"]))))
        # agreement: the speed after 0.3 s is Coulomb's a t to 1 mm/s + 1 % (the outcome follows)
        ok = abs(r["speed"] - a_pred * 0.3) <= 1e-3 + 1e-2 * a_pred * 0.3
        wrong += not ok
        grid[mus.index(r["mu"]), angles.index(r["angle_deg"])] = 1.0 if r["slides"] else 0.0
        rows.append([r["mu"], r["angle_deg"], "slide" if predicted else "stick", "slide" if r["slides"] else "stick",
                     f"{r['speed']:.4f} (Coulomb {a_pred * 0.3:.4f})", "yes" if ok else ctx.failed("wrong outcome")])
    fig, ax = plt.subplots(figsize=(5, 3.6))
    da, dm = (angles[1] - angles[0]) / 2, (mus[1] - mus[0]) / 2     # cells centred on the grid points
    ax.imshow(grid, origin="lower", cmap="coolwarm", vmin=0, vmax=1, aspect="auto",
              extent=(angles[0] - da, angles[-1] + da, mus[0] - dm, mus[-1] + dm))
    th = np.linspace(angles[0] - da, angles[-1] + da, 100)
    ax.plot(th, np.tan(np.radians(th)), "k--", label="tan(angle) = mu")
    ax.set_xlabel("incline angle (deg)")
    ax.set_ylabel("mu")
    ax.set_ylim(mus[0] - dm, mus[-1] + dm)
    ax.set_title("box on an incline: red slides, blue sticks")
    ax.legend(loc="upper left", fontsize=8)
    link = ctx.figure("sweep_incline_outcome", fig)
    text = [f"`sweep(incline_row, {{'mu': {mus}, 'angle_deg': {angles}}})` (box-friction / pgs, 0.3 s each, "
            f"{len(df)} rows, {failed_count(df)} failed, {wrong} speed(s) differing from Coulomb's "
            "a = g (sin - mu cos) by more than 1 mm/s + 1 %; slide means tan(angle) > mu).", "", link, "",
            markdown_table(["mu", "angle deg", "Coulomb", "simulated", "speed after 0.3 s m/s", "agrees"], rows)]
    return "\n".join(text)


def _grasp(ctx):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ..batch import failed_count, sweep
    from ..scenarios import SCENES
    from ..scenarios.materials import friction
    if "barrett-grasp" not in SCENES:
        return "The barrett-grasp scene is not registered in this build; no grasp sweep."
    hands, objects = ["plastic", "rubber"], ["glass", "metal", "wood"]
    df = sweep("simulate", {"scene": ["barrett-grasp"], "material": hands, "object_material": objects,
                            "duration": [4.0]}, workers=2, progress=False)
    ctx.advance("grasp sweep")
    rows = []
    grid = np.full((len(hands), len(objects)), np.nan)
    for _, r in df.iterrows():
        mu = friction(r["material"], r["object_material"])
        lifted = r.get("grasp.lifted")
        if r["status"] != "ok" or lifted is None or (isinstance(lifted, float) and np.isnan(lifted)):
            rows.append([r["material"], r["object_material"], mu, ctx.failed(str(r.get("error"))[:120]), ""])
            continue
        grid[hands.index(r["material"]), objects.index(r["object_material"])] = float(bool(lifted))
        rows.append([r["material"], r["object_material"], mu, "lifted" if lifted else "dropped",
                     f"{r.get('grasp.object_drop_m', float('nan')):.3g}"])
    fig, ax = plt.subplots(figsize=(4.5, 2.8))
    ax.imshow(grid, cmap="RdYlGn", vmin=0, vmax=1, aspect="auto")
    ax.set_xticks(range(len(objects)), [f"{o}\nmu {friction(hands[0], o):g}/{friction(hands[1], o):g}" for o in objects])
    ax.set_yticks(range(len(hands)), hands)
    ax.set_title("Barrett grasp: green lifted, red dropped, white failed")
    link = ctx.figure("sweep_grasp_outcome", fig)
    return "\n".join([f"`contactlab sweep simulate barrett-grasp --grid material={','.join(hands)} "
                      f"--grid object_material={','.join(objects)} --grid duration=4 --workers 2`: {len(df)} rows, "
                      f"{failed_count(df)} failed.", "", link, "",
                      markdown_table(["hand", "object", "mu", "outcome", "object drop m"], rows)])


def run(ctx) -> str:
    parts = ["### Box on an incline: mu x angle", "", _incline(ctx)]
    if not ctx.quick:
        parts += ["", "### Barrett hand: grasp outcome over hand x object material", "", _grasp(ctx)]
    else:
        parts += ["", "(The Barrett grasp sweep, hand x object material, runs in full mode only.)"]
    return "\n".join(parts)

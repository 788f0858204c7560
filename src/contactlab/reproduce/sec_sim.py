"""Simulation validation and speed (issue 4): incline (Coulomb), resting stacks, joints, steps/s."""
from __future__ import annotations

import time

import numpy as np

from . import markdown_table

TITLE = "Time stepping: physics checks and simulation speed"
ORDER = 40

G = 9.81


def _incline(ctx, rows, series):
    from ..scenarios import make_scene
    from ..sim import Simulator
    cases = [(20.0, 0.5), (30.0, 0.3)] if ctx.quick else [(20.0, 0.5), (30.0, 0.3), (35.0, 0.5), (40.0, 0.6)]
    configs = [("stewart-trinkle", "lemke"), ("box-friction", "pgs")]
    T = 0.5 if ctx.quick else 1.0
    for angle, mu in cases:
        th = np.radians(angle)
        down = np.array([np.cos(th), 0.0, -np.sin(th)])
        a_pred = max(0.0, G * (np.sin(th) - mu * np.cos(th)))
        for model, method in configs:
            sim = Simulator(make_scene("incline", angle_deg=angle, mu=mu), model, method)
            v = []
            for _ in range(int(round(T / sim.h))):
                sim.step()
                v.append(float(sim.data.linear_velocity[1] @ down))
            a_sim = v[-1] / T
            err = abs(a_sim - a_pred) / a_pred if a_pred > 0 else abs(a_sim)
            rows.append([f"{angle:g}", f"{mu:g}", "slide" if np.tan(th) > mu else "stick", f"{model}/{method}",
                         a_pred, a_sim, f"{err:.2e}" + ("" if a_pred > 0 else " m/s^2 (abs)")])
            if model == "stewart-trinkle":
                series.append((angle, mu, sim.h * np.arange(1, len(v) + 1), np.array(v), a_pred))
            ctx.advance(f"incline {angle} deg {model}")


def _stacks(ctx, rows):
    from ..scenarios import make_scene
    from ..sim import Simulator
    T = 0.5 if ctx.quick else 3.0
    for count, model, method in [(1, "stewart-trinkle", "lemke"), (5, "stewart-trinkle", "lemke"),
                                 (10, "box-friction", "pgs"), (10, "box-friction", "pgs-sm"), (10, "frictionless", "lemke")]:
        sim = Simulator(make_scene("stack", count=count), model, method)
        x0 = sim.data.position.copy()
        traj = sim.run(T)
        m = traj.metrics()
        rows.append([count, f"{model}/{method}", f"{T:g}", float(np.abs(sim.data.position - x0).max()),
                     m["max_energy_gain"], m["max_penetration"], m["solver_failures"], len(traj.records),
                     m["lcp_variables_mean"]])
        ctx.advance(f"stack {count} {model}/{method}")


def _chain(ctx, rows):
    from ..mechanics.system import joint_rows
    from ..scenarios import make_scene
    from ..sim import Simulator
    limit = 30.0
    sim = Simulator(make_scene("pendulum-chain", links=4, limit_deg=limit), "stewart-trinkle", "lemke")
    worst = 0.0
    steps = 30 if ctx.quick else 150
    recs = []
    for _ in range(steps):
        recs.append(sim.step())
        worst = max(worst, float(np.degrees(np.abs(joint_rows(sim.model, sim.data, sim.h)[3].coordinate[1:])).max()))
    E = np.array([r.energy for r in recs])
    rows.append([4, steps, max(r.joint_error for r in recs), worst, limit, float(E.max() - E[0])])
    ctx.advance("pendulum chain")


def _speed(ctx, rows):
    from ..scenarios import make_scene
    from ..sim import Simulator
    sizes = [10] if ctx.quick else [10, 50]
    for n in sizes:
        for model, method in [("stewart-trinkle", "lemke"), ("box-friction", "pgs"), ("frictionless", "lemke")]:
            if model == "stewart-trinkle" and n > 10:
                continue
            sim = Simulator(make_scene("stack", count=n), model, method)
            sim.step()
            k, t0 = 0, time.perf_counter()
            solve = 0.0
            while k < (10 if ctx.quick else 30) and time.perf_counter() - t0 < 10:
                solve += sim.step().solve_time
                k += 1
            wall = time.perf_counter() - t0
            rows.append([n, f"contactlab {model}/{method}", k / wall, f"{solve / wall:.0%}"])
            ctx.advance(f"speed {n} {model}")
        try:
            import pybullet as p
        except ImportError:
            continue
        scene = make_scene("stack", count=n)
        cid = p.connect(p.DIRECT)
        p.setGravity(0, 0, -G, physicsClientId=cid)
        p.setTimeStep(scene.settings.dt, physicsClientId=cid)
        p.createMultiBody(0, p.createCollisionShape(p.GEOM_PLANE, physicsClientId=cid), physicsClientId=cid)
        for b in scene.bodies[1:]:
            col = p.createCollisionShape(p.GEOM_BOX, halfExtents=[0.1] * 3, physicsClientId=cid)
            p.createMultiBody(b.mass, col, basePosition=list(b.position), physicsClientId=cid)
        t0 = time.perf_counter()
        for _ in range(200):
            p.stepSimulation(physicsClientId=cid)
        rows.append([n, "pybullet (peer)", 200 / (time.perf_counter() - t0), "—"])
        p.disconnect(cid)


def run(ctx) -> str:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    inc, series, stacks, chain, speed = [], [], [], [], []
    _incline(ctx, inc, series)
    _stacks(ctx, stacks)
    _chain(ctx, chain)
    _speed(ctx, speed)
    fig, ax = plt.subplots(figsize=(6, 3.5))
    for angle, mu, t, v, a in series:
        ax.plot(t, v, label=f"{angle:g} deg, mu {mu:g} (simulated)")
        ax.plot(t, a * t, "k:", lw=1)
    ax.set_xlabel("time (s)")
    ax.set_ylabel("speed down the slope (m/s)")
    ax.set_title("Box on an incline, stewart-trinkle/lemke; dotted: g(sin - mu cos) t")
    ax.legend(fontsize=7)
    link = ctx.figure("sim_incline", fig)
    out = [
        "Every number below is computed by this run (`contactlab.sim.Simulator`, dt = 0.01 s, friction "
        "pyramid d = 4 aligned with the slope).",
        "",
        "### Box on an incline: Coulomb's stick/slide threshold and acceleration",
        "Predicted acceleration g(sin theta - mu cos theta) when tan theta > mu, else 0 (sticking).",
        "",
        markdown_table(["angle", "mu", "regime", "model/method", "predicted a (m/s^2)", "simulated a", "rel. error"], inc),
        "",
        link,
        "",
        "### Resting stacks",
        "Drift: largest displacement of any box; energy gain: largest kinetic energy added by constraint "
        "impulses in one step (KE(v+) - KE(v + h M^-1 f)); penetration: deepest contact at the start of a step "
        "(slop 1e-4 m).",
        "",
        markdown_table(["boxes", "model/method", "time (s)", "drift (m)", "max energy gain (J)", "max penetration (m)",
                        "method failures", "steps", "mean LCP size"], stacks),
        "",
        "### Pendulum chain with joint limits (stewart-trinkle/lemke)",
        "",
        markdown_table(["links", "steps", "max joint error (m or rad)", "largest joint angle (deg)", "limit (deg)",
                        "energy rise (J)"], chain),
        "",
        "### Speed (steps per second on this machine, stack of N boxes at rest)",
        "",
        markdown_table(["N", "engine", "steps/s", "solver share"], speed),
        "",
        "The full benchmark (stacks and piles up to 500 boxes, ODE and PyBullet side by side) is "
        "`benchmarks/bench_sim.py`; results in docs/benchmarks-sim.md.",
    ]
    return "\n".join(out)

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
                                 (10, "box-friction", "box-qp"), (10, "box-friction", "pgs-sm"),
                                 (10, "box-friction", "pgs"), (10, "frictionless", "lemke")]:
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


def _bullet_stop() -> dict:
    """Bullet's sequential-impulse stop with PyBullet's default threshold, as pgs options."""
    from ..solvers.pgs import BULLET_W_STEP_TOL
    return {"w_step_tol": BULLET_W_STEP_TOL}


def _speed(ctx, rows):
    """Stack of N boxes at rest, side by side: contactlab certified (box-friction/box-qp), contactlab
    fixed budget (pgs, 50 sweeps, PyBullet's default budget; and with Bullet's stop as well, pgs
    ``w_step_tol``), PyBullet (at most 50 iterations, stopping at its default
    solverResidualThreshold) and MuJoCo where installed."""
    from ..scenarios import make_scene
    from ..sim import Simulator
    sizes = [10] if ctx.quick else [10, 100]
    steps = 50 if ctx.quick else 200
    for n in sizes:
        scene = make_scene("stack", count=n)
        x0 = np.array([b.position for b in scene.bodies[1:]])
        for label, method, budget, options in [("contactlab certified (box-qp)", "box-qp", None, None),
                                               ("contactlab fixed-50 (pgs)", "pgs", 50, None),
                                               ("contactlab fixed-50 + Bullet's stop (pgs)", "pgs", 50, _bullet_stop())]:
            sim = Simulator(make_scene("stack", count=n), "box-friction", method, iterations=budget,
                            solver_options=options)
            ctx.warm_up(sim.step)       # untimed: its kernels compile or load here
            t0, fails = time.perf_counter(), 0
            for _ in range(steps):
                fails += not sim.step().success
            wall = time.perf_counter() - t0
            rows.append([n, label, steps / wall, 1e3 * wall / steps, float(np.abs(sim.data.position[1:] - x0).max()),
                         fails])
            ctx.advance(f"speed {n} {label}")
        try:
            from ..quiet import native_output_silenced
            with native_output_silenced(stderr=True):      # pybullet prints its build time on import
                import pybullet as p
            cid = p.connect(p.DIRECT)
            p.setGravity(0, 0, -G, physicsClientId=cid)
            p.setTimeStep(scene.settings.dt, physicsClientId=cid)
            p.createMultiBody(0, p.createCollisionShape(p.GEOM_PLANE, physicsClientId=cid), physicsClientId=cid)
            ids = []
            for b in scene.bodies[1:]:
                col = p.createCollisionShape(p.GEOM_BOX, halfExtents=[0.1] * 3, physicsClientId=cid)
                ids.append(p.createMultiBody(b.mass, col, basePosition=list(b.position), physicsClientId=cid))
                p.changeDynamics(ids[-1], -1, lateralFriction=scene.mu, physicsClientId=cid)
            t0 = time.perf_counter()
            for _ in range(steps):
                p.stepSimulation(physicsClientId=cid)
            wall = time.perf_counter() - t0
            pos = np.array([p.getBasePositionAndOrientation(i, physicsClientId=cid)[0] for i in ids])
            rows.append([n, "pybullet (peer, at most 50 iterations, its default stop)", steps / wall, 1e3 * wall / steps,
                         float(np.abs(pos - x0).max()), "—"])
            p.disconnect(cid)
        except ImportError:
            pass
        try:
            import mujoco
            body = "".join('<body pos="%g %g %g"><freejoint/><geom type="box" size="0.1 0.1 0.1" mass="1"/></body>'
                           % tuple(b.position) for b in scene.bodies[1:])
            m = mujoco.MjModel.from_xml_string(
                '<mujoco><option timestep="0.01"/><default><geom friction="%g 0.005 0.0001"/></default>'
                '<worldbody><geom type="plane" size="0 0 1"/>%s</worldbody></mujoco>' % (scene.mu, body))
            d = mujoco.MjData(m)
            t0 = time.perf_counter()
            for _ in range(steps):
                mujoco.mj_step(m, d)
            wall = time.perf_counter() - t0
            rows.append([n, "mujoco (peer, default Newton solver)", steps / wall, 1e3 * wall / steps,
                         float(np.abs(d.xpos[1:] - x0).max()), "—"])
        except ImportError:
            pass
        ctx.advance(f"speed {n} peers")


def _pile(ctx, rows):
    """N boxes dropped into a bin: certified (box-friction with the previous step's normals as
    friction bounds, arechavaleta §IV-C, solved by box-qp) and the fixed 50-sweep budget."""
    from ..scenarios import make_scene
    from ..sim import Simulator
    n, steps = (20, 40) if ctx.quick else (100, 150)
    for label, method, budget, coupling, options in [
            ("certified (box-qp, previous-normal bounds)", "box-qp", None, "previous", None),
            ("fixed-50 (pgs, current-normal bounds)", "pgs", 50, "current", None),
            ("fixed-50 + Bullet's stop (pgs, current-normal bounds)", "pgs", 50, "current", _bullet_stop())]:
        def run(k, method=method, budget=budget, coupling=coupling, options=options):
            sim = Simulator(make_scene("pile", count=n), "box-friction", method, iterations=budget,
                            model_options={"coupling": coupling}, solver_options=options)
            for _ in range(k):
                sim.step()
            return sim
        # untimed: a whole run first, so the kernels its later steps call (a pile's islands grow as
        # it lands, fast turns are corrected) compile or load here, not inside the timing
        ctx.warm_up(run, steps + 1)
        sim = run(1)
        t0, recs, res = time.perf_counter(), [], []
        for _ in range(steps):
            recs.append(sim.step())
            res.append(float(sim.last_solution.relative_residual))
        wall = time.perf_counter() - t0
        rows.append([n, label, steps, steps / wall, 1e3 * wall / steps, sum(not r.success for r in recs),
                     max(res), max(r.max_penetration for r in recs)])
        ctx.advance(f"pile {n} {label}")


def run(ctx) -> str:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    inc, series, stacks, chain, speed, pile = [], [], [], [], [], []
    _incline(ctx, inc, series)
    _stacks(ctx, stacks)
    _chain(ctx, chain)
    _speed(ctx, speed)
    _pile(ctx, pile)
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
        "### Speed (stack of N boxes at rest, this machine, one run side by side; not a paper experiment)",
        "Drift: largest displacement of any box over the run; uncertified: steps whose answer was not "
        "certified (the fixed budget applies them anyway).",
        "",
        markdown_table(["N", "engine", "steps/s", "ms/step", "drift (m)", "uncertified steps"], speed),
        "",
        "### Pile of boxes dropped into a bin (this machine; not a paper experiment)",
        "Uncertified: steps whose answer `solve()` did not certify (relative residual > 1e-6); penetration: "
        "deepest contact at the start of a step.",
        "",
        markdown_table(["N", "mode", "steps", "steps/s", "ms/step", "uncertified steps", "max rel. residual",
                        "max penetration (m)"], pile),
        "",
        "The full benchmark (stacks and piles of 10-2000 boxes, PyBullet, MuJoCo and ODE side by side, "
        "stage times, fitted growth exponents) is `benchmarks/bench_sim.py`; results in docs/benchmarks-sim.md.",
    ]
    return "\n".join(out)

"""Simulation benchmark (issue 11): time per step against the number of boxes, side by side with
PyBullet, MuJoCo and (where its Python binding is installed) ODE, on the same scenes in one run.

    .venv/bin/python benchmarks/bench_sim.py [--sizes 10 100 500 1000 2000] [--scenes stack pile]
        [--steps 200] [--budget 20] [--drift-seconds 10] [--repeat 1 --repeat-max 100] [--settle 0]
        [--json benchmarks/results/sim.json]
        [--figure docs/figures/bench_sim_time_vs_boxes.png] [--out table.md]

Engines (each runs the same bodies: positions, orientations, 0.2 m cubes of 1 kg, friction 0.5,
dt 0.01, gravity -9.81):
* ``contactlab certified``: box-friction solved by box-qp (projected Newton, then its interior
  point); stacks with the friction box on the current normal (arechavaleta eq. 16-17), piles with
  the box from the previous step's matched normal (arechavaleta §IV-C, eq. 16: a convex
  bound-constrained QP); every step certified or counted as a failure, fallbacks as in sim/fallback.py.
* ``contactlab default``: ``Simulator(scene)`` with no model, method or options, what ``contactlab
  simulate FILE`` runs (issue 37 goal 1: the default path against PyBullet); the method and coupling
  it chose are reported.
* ``contactlab fixed-50``: box-friction, pgs capped at 50 sweeps (``iterations=50``, PyBullet's default
  budget), the answer applied whatever its residual (the residual reached is reported); the sweeps
  run matrix-free on the rows and the 6x6 blocks of M^-1 (kernels/pgs_matrix_free/: the
  Delassus matrix is never formed, as in the engines' sequential impulses).
* ``contactlab fixed-50+stop``: as fixed-50, with Bullet's stop as well (pgs ``w_step_tol`` =
  sqrt(1e-7): a sweep in which no row corrected its own w by more than 3.16e-4 m/s ends the step's
  sweeps), the rule PyBullet's default run follows; compare it with ``pybullet``.
* ``pybullet``: default settings (at most 50 solver iterations, stopping early once the largest
  squared velocity correction of a sweep is <= its ``solverResidualThreshold`` 1e-7; its own contact
  slop/ERP).
* ``pybullet no-stop``: ``solverResidualThreshold=0``: all 50 iterations every step, the rule of our
  fixed-50 (which stops early only at a certified 1e-7 relative residual); compare it with
  ``contactlab fixed-50``.
* ``mujoco``: the boxes as MJCF free bodies on a plane, default solver (Newton, soft contacts).
  Both peers' models come from scene_export.py (shared with bench_engines.py); PyBullet gets
  sqrt(mu) on every body, since it multiplies two bodies' coefficients (before 2026-12-02 this
  script gave every body mu, so its PyBullet runs had friction 0.25 where ours had 0.5).
* ``ode``: ``quickStep`` (20 iterations) when ``/usr/bin/python3 -c "import ode"`` works.
PyBullet, MuJoCo and ours run in this one process on the same C allocator settings, contactlab/heap.py's
(the memory a step frees stays in the process), set at the start as a Simulator sets them when built
(ODE runs in a process of its own).
``--settle K`` steps every scene K times, untimed, before its warm-up step (ours, PyBullet and MuJoCo; not
ODE): the time of a settled pile rather than a landing one (drift is then measured from the start).
``--repeat K`` runs every configuration of up to ``--repeat-max`` boxes K times, the engines taking turns,
and reports each engine's median run with its spread (a 0.1 ms step is at the mercy of this virtual
machine's noisy spells: one run's 10-box figures moved by 30-60 % between runs).
Every configuration runs at most ``--steps`` steps or ``--budget`` wall seconds after one warm-up step
(numba compilation excluded: also a throwaway warm-up run per mode, :func:`_warm_up`). Reported: steps, steps/s, ms per step, ms per stage (ours), contacts,
iterations, largest relative residual (ours), failures (uncertified steps), drift of a stack (largest
displacement of any box), largest penetration. ``--drift-seconds`` adds the 10-box stack run (``--drift-sizes``: those stacks) for that
long (drift goal <= 1e-6 m over 10 s).
"""
from __future__ import annotations

import os
os.environ.setdefault("CONTACTLAB_JIT", "compile")   # time compiled kernels, not interpreted first calls (kernels/_jit.py)

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from contactlab.heap import keep_freed_memory  # noqa: E402
sys.path.insert(0, str(ROOT / "benchmarks"))
from scene_export import mjcf, pybullet_free_bodies  # noqa: E402
from contactlab.files import atomic_write  # noqa: E402
from contactlab.scenarios import make_scene  # noqa: E402
from contactlab.scenarios.io import scene_to_dict  # noqa: E402
from contactlab.sim import Simulator  # noqa: E402
from contactlab.solvers.pgs import BULLET_W_STEP_TOL  # noqa: E402

STAGES = ("detect", "build", "solve", "integrate", "record")


#: the clock every runner reads (``--clock``): wall time, or with ``--clock cpu`` the process's CPU time,
#: which on a shared machine leaves out the time another process held the core (every engine here
#: runs its step on the calling thread: BLAS on one thread, no solver threads)
CLOCK = time.perf_counter

#: ``--settle K``: every engine steps its scene K times before the warm-up step and the clock (a settled
#: pile: the 10,000-box pile's top layer starts 104 m up, ~460 steps of fall); not ODE's runs (own process)
SETTLE = 0


def _dynamic_positions(scene):
    return np.array([b.position for b in scene.bodies if b.kind == "dynamic"], dtype=float)


def _summary(engine, scene_name, n, steps, wall, pos0, pos, **extra):
    out = {"engine": engine, "scene": scene_name, "n": n, "steps": steps,
           "steps_per_s": steps / wall if wall > 0 else float("nan"),
           "ms_per_step": 1e3 * wall / steps if steps else float("nan"),
           "drift": float(np.abs(np.asarray(pos) - pos0).max()) if scene_name == "stack" and steps else float("nan")}
    out.update(extra)
    return out


_WARM = set()


def _warm_up(fixed):
    """Once per process and mode: 40 steps of a 50-box pile, of six 4-box stacks, of three 8-box
    stacks (islands factorised by body-pair groups) and of a 6-box pile (the compiled box-friction
    step, sim/box_step.py), 5 steps of a 100-box stack and 60 of a 100-box pile (one island of 1,200
    rows, the body-space interior point of a landing pile) in throwaway simulators, so every compiled
    kernel the timed runs use (the interior point, the islands, the position correction, ...) is
    compiled or loaded from numba's cache before any clock starts: numba loads a cached kernel at its
    first call, 1-10 ms each, which fell inside the first timed steps of whichever run met it first
    (a 100-box pile's steps 1-40: ~3 ms per step; a 10-box pile's 200-step mean: 0.14 instead of
    0.11 ms), and compiles one the cache lacks there (cold cache: the certified 100-box stack and pile
    1.4 -> 2.3 and 1.9 -> 9.8 ms a step before the last two scenes were added)."""
    if fixed in _WARM:
        return
    _WARM.add(fixed)
    for name, kw, coupling, steps in (("pile", {"count": 50}, "previous", 40),
                                      ("stack", {"count": 4, "columns": 6}, "current", 40),
                                      ("stack", {"count": 8, "columns": 3}, "current", 40),
                                      ("pile", {"count": 6}, "previous", 40), ("stack", {"count": 100}, "current", 5),
                                      ("pile", {"count": 100}, "previous", 60)):
        sim = Simulator(make_scene(name, **kw), "box-friction", "pgs" if fixed else "box-qp", iterations=fixed,
                        model_options={"coupling": "current" if fixed else coupling})
        for _ in range(steps):
            sim.step()
    if not fixed:       # a kernel compiled per index type (scipy's CSR indices are int32 or int64): both
        from contactlab.kernels.box_qp import csr_masked
        for t in (np.int32, np.int64):
            csr_masked(np.array([0, 1, 2], dtype=t), np.array([0, 1], dtype=t), np.ones(2), np.ones(2, dtype=np.bool_))


def run_contactlab(scene_name, n, steps, budget, fixed=None, options=None, label=None, default=False):
    _warm_up(fixed)
    scene = make_scene(scene_name, count=n)
    method = "pgs" if fixed else "box-qp"
    coupling = "previous" if (scene_name == "pile" and not fixed) else "current"
    if default:      # what a user gets with no model or method: Simulator(scene), as `contactlab simulate FILE`
        sim = Simulator(scene)
        method, coupling = sim.method, getattr(sim.model_options, "coupling", "?")
    else:
        sim = Simulator(scene, "box-friction", method, iterations=fixed, model_options={"coupling": coupling},
                        solver_options=options)
    engine = label or ("contactlab " + (f"fixed-{fixed}" if fixed else "default" if default else "certified"))
    pos0 = _dynamic_positions(scene)
    live = np.flatnonzero(sim.model.dof_start >= 0)
    for _ in range(SETTLE):                       # untimed: the scene after it landed (--settle)
        sim.step()
    sim.step()                                    # warm-up (this scene's first step)
    recs, sols, timings = [], [], []
    t0 = CLOCK()
    try:       # per step only what a user's loop keeps (the record); the bookkeeping after the clock
        while len(recs) < steps and CLOCK() - t0 < budget:
            recs.append(sim.step())
            sols.append(sim.last_solution)
            timings.append(sim.timing)
    except Exception as exc:   # a certified run that stops (SimulationError) is reported as such
        return {"engine": engine, "scene": scene_name,
                "n": n, "error": f"{type(exc).__name__}: {exc}"[:200], "steps": len(recs)}
    wall = CLOCK() - t0
    rel = [float(s.relative_residual) for s in sols]
    stage = {k: sum(t.get(k, 0.0) for t in timings) for k in STAGES}
    k = max(1, len(recs))
    return _summary(engine, scene_name, n, len(recs), wall,
                    pos0, sim.data.position[live],
                    method=f"box-friction({coupling})/{method}", stage_ms={s: 1e3 * v / k for s, v in stage.items()},
                    contacts=float(np.mean([r.contacts for r in recs])) if recs else 0.0,
                    iterations=float(np.mean([r.iterations for r in recs])) if recs else 0.0,
                    residual_max=float(np.max(rel)) if rel else float("nan"),
                    failures=int(sum(not r.success for r in recs)),
                    penetration=float(max((r.max_penetration for r in recs), default=0.0)))


def run_pybullet(scene_name, n, steps, budget, residual_threshold=None, label="pybullet"):
    try:
        import pybullet as p
    except ImportError:
        return None
    scene = make_scene(scene_name, count=n)
    cid = p.connect(p.DIRECT)
    if residual_threshold is not None:
        p.setPhysicsEngineParameter(solverResidualThreshold=residual_threshold, physicsClientId=cid)
    p.setGravity(*scene.gravity, physicsClientId=cid)
    p.setTimeStep(scene.settings.dt, physicsClientId=cid)
    ids = pybullet_free_bodies(p, cid, scene)     # friction sqrt(mu) per body: PyBullet multiplies the two
    pos0 = _dynamic_positions(scene)
    for _ in range(SETTLE):
        p.stepSimulation(physicsClientId=cid)
    p.stepSimulation(physicsClientId=cid)
    k, pen = 0, 0.0
    t0 = CLOCK()
    while k < steps and CLOCK() - t0 < budget:
        p.stepSimulation(physicsClientId=cid)
        k += 1
    wall = CLOCK() - t0
    pts = p.getContactPoints(physicsClientId=cid)
    pen = max([0.0] + [-c[8] for c in pts])
    pos = [p.getBasePositionAndOrientation(i, physicsClientId=cid)[0] for i in ids]
    p.disconnect(cid)
    return _summary(label, scene_name, n, k, wall, pos0, pos, contacts=float(len(pts)), penetration_final=float(pen))


def run_mujoco(scene_name, n, steps, budget):
    try:
        import mujoco
    except ImportError:
        return None
    scene = make_scene(scene_name, count=n)
    m = mujoco.MjModel.from_xml_string(mjcf(scene))
    d = mujoco.MjData(m)
    pos0 = _dynamic_positions(scene)
    for _ in range(SETTLE):
        mujoco.mj_step(m, d)
    mujoco.mj_step(m, d)
    k, pen, ncon = 0, 0.0, []
    t0 = CLOCK()
    while k < steps and CLOCK() - t0 < budget:
        mujoco.mj_step(m, d)
        ncon.append(d.ncon)
        k += 1
    wall = CLOCK() - t0
    pen = max([0.0] + [-float(d.contact[i].dist) for i in range(d.ncon)])
    pos = d.xpos[1:1 + len(pos0)].copy()
    return _summary("mujoco", scene_name, n, k, wall, pos0, pos, contacts=float(np.mean(ncon)) if ncon else 0.0,
                    iterations=float(d.solver_niter[0]), penetration_final=pen)


ODE_SCRIPT = r'''
import json, sys, time, ode
scene = json.load(open(sys.argv[1])); steps = int(sys.argv[2]); budget = float(sys.argv[3]); quick = sys.argv[4] == "quick"
world = ode.World(); world.setGravity(scene["gravity"]); world.setERP(0.2); world.setCFM(1e-8)
if quick: world.setQuickStepNumIterations(20)
space = ode.HashSpace(); group = ode.JointGroup(); bodies = []; keep = []
dt = scene["settings"]["dt"]; mu = scene["mu"]
for b in scene["bodies"]:
    for s in b.get("shapes", []):
        if s["kind"] in ("halfspace", "plane"):
            keep.append(ode.GeomPlane(space, s.get("normal", [0, 0, 1]), s.get("offset", 0.0))); continue
        g = ode.GeomBox(space, lengths=s["size"])
        pos = [b["position"][i] + s.get("position", [0, 0, 0])[i] for i in range(3)]
        if b.get("kind", "dynamic") == "fixed":
            g.setPosition(pos); keep.append(g); continue
        body = ode.Body(world); m = ode.Mass(); m.setBoxTotal(b["mass"], *s["size"]); body.setMass(m)
        body.setPosition(pos); body.setQuaternion(b["orientation"]); g.setBody(body); bodies.append(body); keep.append(g)
def near(args, g1, g2):
    for c in ode.collide(g1, g2):
        c.setMu(mu); c.setBounce(0.0)
        j = ode.ContactJoint(world, group, c); j.attach(g1.getBody(), g2.getBody())
def step():
    space.collide(None, near)
    (world.quickStep if quick else world.step)(dt)
    group.empty()
step(); k = 0; t0 = time.perf_counter()
while k < steps and time.perf_counter() - t0 < budget:
    step(); k += 1
wall = time.perf_counter() - t0
print(json.dumps({"steps": k, "wall": wall, "pos": [list(b.getPosition()) for b in bodies]}))
'''


def run_ode(scene_name, n, steps, budget, quick=True):
    py = "/usr/bin/python3"
    if not Path(py).exists() or subprocess.run([py, "-c", "import ode"], capture_output=True).returncode:
        return None
    scene = make_scene(scene_name, count=n)
    with tempfile.TemporaryDirectory() as d:
        f = Path(d) / "scene.json"
        f.write_text(json.dumps(scene_to_dict(scene)))
        env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
        r = subprocess.run([py, "-c", ODE_SCRIPT, str(f), str(steps), str(budget), "quick" if quick else "step"],
                           capture_output=True, text=True, env=env, timeout=budget * 3 + 60)
    engine = f"ode {'quickStep' if quick else 'step'}"
    if r.returncode:
        return {"engine": engine, "scene": scene_name, "n": n, "error": r.stderr.strip().splitlines()[-1:]}
    out = json.loads(r.stdout.strip().splitlines()[-1])
    return _summary(engine, scene_name, n, out["steps"], out["wall"], _dynamic_positions(scene), out["pos"])


RUNNERS = {"contactlab certified": lambda s, n, k, b: run_contactlab(s, n, k, b),
           "contactlab default": lambda s, n, k, b: run_contactlab(s, n, k, b, default=True),
           "contactlab fixed-50": lambda s, n, k, b: run_contactlab(s, n, k, b, fixed=50),
           "contactlab fixed-50+stop": lambda s, n, k, b: run_contactlab(
               s, n, k, b, fixed=50, options={"w_step_tol": BULLET_W_STEP_TOL}, label="contactlab fixed-50+stop"),
           "pybullet": run_pybullet,
           "pybullet no-stop": lambda s, n, k, b: run_pybullet(s, n, k, b, residual_threshold=0.0,
                                                               label="pybullet no-stop"),
           "mujoco": run_mujoco, "ode quickStep": run_ode}


SOLVER_STUDY = [("pgs", "current", {"max_sweeps": 10000, "tol": 1e-7}),
                ("box-qp", "current", {}),
                ("pgs", "previous", {"max_sweeps": 10000, "tol": 1e-7}),
                ("pgs-sm", "previous", {"max_outer": 100}),
                ("box-qp", "previous", {"algorithm": "newton"}),
                ("box-qp", "previous", {}),
                ("interior-point", "previous", {}),
                ("qp", "previous", {})]


def solver_study(n, at_steps, fixed=50):
    """Recorded pile LCPs: run the pile with the fixed budget to each step of ``at_steps``, build
    that step's box-friction problem with current (findex) and previous-normal bounds, and solve it
    with each method of SOLVER_STUDY (cold start): iterations, time, relative residual, certified."""
    from contactlab import solve
    from contactlab.mechanics.system import build_system
    from contactlab.models import get_model, make_options
    sim = Simulator(make_scene("pile", count=n), "box-friction", "pgs", iterations=fixed)
    bf = get_model("box-friction")
    rows = []
    for target in at_steps:
        while sim.data.steps < target:
            sim.step()
        contacts = sim.world.detect(sim.data, sweep=sim._sweep())
        from contactlab.collision import match_previous
        contacts.normal_guess = match_previous(sim.data.contacts, sim.data.result.normal, contacts, 0.021)
        sys_ = build_system(sim.model, sim.data, contacts, sim.h)
        for method, coupling, opts in SOLVER_STUDY:
            prob = bf.build(sys_, make_options(bf, {"coupling": coupling}))
            prob = getattr(prob, "problem", prob)
            t0 = time.perf_counter()
            sol = solve(prob, method, **opts)
            label = method + "".join(f" {k}={v}" for k, v in opts.items() if k == "algorithm")
            rows.append({"n": n, "step": target, "contacts": int(sys_.nc), "lcp": int(prob.n), "method": label,
                         "coupling": coupling, "iterations": int(sol.iterations), "time_s": time.perf_counter() - t0,
                         "relative_residual": float(sol.relative_residual), "certified": bool(sol.success)})
            print(json.dumps(rows[-1]), flush=True)
    return rows


def repeated_runs(engines, scene_name, n, steps, budget, repeat):
    """Each engine's run of one scene, ``repeat`` times with the engines taking turns (round k starts
    at engine k), so a noisy spell of the machine falls on every engine alike; per engine the run of
    median ms per step, with ``repeats`` and ``ms_range`` (fastest, slowest) where repeat > 1."""
    runs = {e: [] for e in engines}
    for k in range(repeat):
        for engine in engines[k % len(engines):] + engines[:k % len(engines)]:
            r = RUNNERS[engine](scene_name, n, steps, budget)
            if r is not None:
                runs[engine].append(r)
    out = []
    for engine in engines:
        timed = sorted((r for r in runs[engine] if np.isfinite(r.get("ms_per_step", np.nan))),
                       key=lambda r: r["ms_per_step"])
        if not timed:
            out.extend(runs[engine][:1])
            continue
        r = timed[(len(timed) - 1) // 2]
        if repeat > 1:
            r["repeats"] = len(timed)
            r["ms_range"] = [timed[0]["ms_per_step"], timed[-1]["ms_per_step"]]
        out.append(r)
    return out


def exponent(rows, engine, scene):
    """Least-squares slope of log(ms per step) against log(boxes): time ~ N^slope."""
    pts = [(r["n"], r["ms_per_step"]) for r in rows if r.get("engine") == engine and r.get("scene") == scene
           and "error" not in r and r.get("steps", 0) > 0]
    if len(pts) < 2:
        return float("nan")
    x, y = np.log([p[0] for p in pts]), np.log([p[1] for p in pts])
    return float(np.polyfit(x, y, 1)[0])


def figure(rows, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    scenes = sorted({r["scene"] for r in rows})
    fig, axes = plt.subplots(1, len(scenes), figsize=(5.5 * len(scenes), 4.2), squeeze=False)
    for ax, scene in zip(axes[0], scenes):
        for engine in RUNNERS:
            pts = sorted((r["n"], r["ms_per_step"]) for r in rows if r.get("engine") == engine and
                         r.get("scene") == scene and "error" not in r and r.get("steps", 0) > 0)
            if pts:
                ax.loglog(*zip(*pts), "o-", label=f"{engine} (slope {exponent(rows, engine, scene):.2f})")
        ax.set_xlabel("boxes")
        ax.set_ylabel("ms per step")
        ax.set_title(scene)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, lambda tmp: fig.savefig(tmp, dpi=110, format="png"))
    plt.close(fig)


def table(rows) -> str:
    fmt = lambda v, f="{:.3g}": "—" if v is None or (isinstance(v, float) and not np.isfinite(v)) else f.format(v)
    lines = ["| scene | N | engine | steps | steps/s | ms/step | ms detect / build / solve / integrate | contacts | "
             "iterations | max rel. residual | uncertified steps | drift (m) | penetration (m) |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    spread = lambda r: (f" ({r['ms_range'][0]:.3g}-{r['ms_range'][1]:.3g}, {r['repeats']} runs)"
                        if "ms_range" in r else "")
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['scene']} | {r['n']} | {r['engine']} | {r.get('steps', 0)} | error: {r['error']} "
                         "| | | | | | | | |")
            continue
        st = r.get("stage_ms")
        stages = " / ".join(f"{st[k]:.2f}" for k in ("detect", "build", "solve", "integrate")) if st else "—"
        pen = r.get("penetration", r.get("penetration_final"))
        lines.append(f"| {r['scene']} | {r['n']} | {r['engine']} | {r['steps']} | {fmt(r['steps_per_s'])} | "
                     f"{fmt(r['ms_per_step'])}{spread(r)} | {stages} | {fmt(r.get('contacts'), '{:.0f}')} | "
                     f"{fmt(r.get('iterations'), '{:.1f}')} | {fmt(r.get('residual_max'), '{:.1e}')} | "
                     f"{r.get('failures', '—')} | {fmt(r.get('drift'), '{:.2g}')} | {fmt(pen, '{:.2g}')} |")
    return "\n".join(lines)


#: our modes and the PyBullet run each is compared with (the same stopping rule)
PAIRS = (("contactlab default", "pybullet"), ("contactlab certified", "pybullet"), ("contactlab fixed-50", "pybullet no-stop"),
         ("contactlab fixed-50+stop", "pybullet"))


def ratios(rows) -> str:
    """Ours / PyBullet, ms per step, per mode, scene and size: the median runs' ratio, and where the
    configuration was repeated the fastest runs' (``ms_range[0]``; a noisy spell of the machine only
    adds time, and the engines took turns) after a slash."""
    by = {(r["engine"], r["scene"], r["n"]): r for r in rows if "error" not in r and r.get("steps", 0) > 0}
    sizes = sorted({r["n"] for r in by.values()})
    lines = ["| ours / peer | " + " | ".join(f"{n} boxes" for n in sizes) + " |", "|---" * (len(sizes) + 1) + "|"]
    for scene in sorted({r["scene"] for r in by.values()}, reverse=True):
        for ours, peer in PAIRS:
            cells = []
            for n in sizes:
                a, b = by.get((ours, scene, n)), by.get((peer, scene, n))
                if a is None or b is None:
                    cells.append("—")
                    continue
                cell = f"{a['ms_per_step'] / b['ms_per_step']:.2f}"
                if "ms_range" in a and "ms_range" in b:
                    cell += f" / {a['ms_range'][0] / b['ms_range'][0]:.2f}"
                cells.append(cell)
            lines.append(f"| {ours.replace('contactlab ', '')} {scene} / {peer} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10, 100, 500, 1000, 2000])
    ap.add_argument("--scenes", nargs="+", default=["stack", "pile"])
    ap.add_argument("--engines", nargs="+", default=list(RUNNERS), choices=list(RUNNERS))
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--budget", type=float, default=20.0, help="wall seconds per configuration")
    ap.add_argument("--certified-max", type=int, default=2000,
                    help="largest pile run in certified mode")
    ap.add_argument("--drift-seconds", type=float, default=10.0, help="10-box stack drift run (0: skip)")
    ap.add_argument("--drift-sizes", type=int, nargs="+", default=[10],
                    help="the stacks the drift run covers (default: the 10-box one)")
    ap.add_argument("--repeat", type=int, default=1,
                    help="runs of each configuration up to --repeat-max boxes, the engines taking turns; the "
                         "median run is reported (its spread in ms_range)")
    ap.add_argument("--repeat-max", type=int, default=100, help="largest scene run --repeat times")
    ap.add_argument("--out", type=Path, default=None, help="also write the raw Markdown table here")
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                    help="time steps (and the --budget) by wall time or by the process's CPU time (a shared machine)")
    ap.add_argument("--figure", type=Path, default=None)
    ap.add_argument("--settle", type=int, default=0, metavar="K",
                    help="untimed steps before the clock (ours, PyBullet, MuJoCo; not ODE): a settled pile")
    ap.add_argument("--solver-study", type=int, nargs="*", default=None, metavar="STEP",
                    help="only the recorded-LCP solver study: pile of --sizes[0] boxes at these steps")
    a = ap.parse_args(argv)
    global CLOCK, SETTLE
    CLOCK = time.process_time if a.clock == "cpu" else time.perf_counter
    SETTLE = max(0, a.settle)
    keep_freed_memory()     # what a Simulator sets when built, set first: every engine runs on the same allocator
    if a.solver_study is not None:
        rows = solver_study(a.sizes[0], a.solver_study or [40, 80])
        if a.json:
            atomic_write(a.json, lambda tmp: Path(tmp).write_text(json.dumps(rows, indent=1)))
        lines = ["| N | step | contacts | LCP size | method | bounds | iterations | time (s) | rel. residual | certified |",
                 "|---|---|---|---|---|---|---|---|---|---|"]
        lines += [f"| {r['n']} | {r['step']} | {r['contacts']} | {r['lcp']} | {r['method']} | {r['coupling']} | "
                  f"{r['iterations']} | {r['time_s']:.3g} | {r['relative_residual']:.2e} | {r['certified']} |" for r in rows]
        print("\n".join(lines))
        return rows, "\n".join(lines)
    rows = []
    for scene_name in a.scenes:
        for n in a.sizes:
            engines = [e for e in a.engines
                       if not (e == "contactlab certified" and scene_name == "pile" and n > a.certified_max)]
            for r in repeated_runs(engines, scene_name, n, a.steps, a.budget, a.repeat if n <= a.repeat_max else 1):
                r["clock"] = a.clock
                rows.append(r)
                print(json.dumps(r), flush=True)
    drift_rows = []
    if a.drift_seconds > 0:
        k = int(round(a.drift_seconds / 0.01))
        for n in a.drift_sizes:
            for engine in a.engines:
                r = RUNNERS[engine]("stack", n, k, 10 * a.budget)
                if r is not None:
                    r["engine"] += f" ({a.drift_seconds:g} s)"
                    drift_rows.append(r)
                    print(json.dumps(r), flush=True)
    slopes = {f"{e} / {s}": exponent(rows, e, s) for e in a.engines for s in a.scenes}
    if a.json:
        atomic_write(a.json, lambda tmp: Path(tmp).write_text(json.dumps(
            {"rows": rows, "drift": drift_rows, "exponents": slopes}, indent=1)))
    if a.figure:
        figure(rows, a.figure)
    header = (f"Clock: {a.clock}. Run: `{' '.join(['python', 'benchmarks/bench_sim.py', *(argv if argv is not None else sys.argv[1:])])}` "
              f"on {platform.processor() or platform.machine()}, {os.cpu_count()} cores, load average "
              f"{os.getloadavg()[0]:.1f}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}.\n")
    text = (header + "\n" + table(rows) + "\n\nOurs / PyBullet, ms per step (median runs; fastest runs after the "
            "slash where repeated):\n\n" + ratios(rows) + "\n\nStack drift runs:\n\n" + table(drift_rows) +
            "\n\nFitted exponents (ms per step ~ N^slope):\n\n" +
            "\n".join(f"- {k}: {v:.2f}" for k, v in slopes.items() if np.isfinite(v)) + "\n")
    print(text)
    if a.out:
        atomic_write(a.out, lambda tmp: Path(tmp).write_text(text))
    return rows, text


if __name__ == "__main__":
    main()

"""Simulation benchmark (issue 4): steps per second and the solver's share of a step for stacks and
piles of N boxes, per contact model and method, side by side with PyBullet and ODE on the same scene.

    .venv/bin/python benchmarks/bench_sim.py [--sizes 10 20 50 100 200 500] [--steps 30] [--budget 60]
                                             [--json results.json] [--out table.md]

Peers (optional; installed by benchmarks/setup_peers.sh): PyBullet (pip, in the venv) and ODE
(Debian python3-pyode, run under /usr/bin/python3 in a subprocess). Each engine runs the same
bodies (positions, orientations, sizes, masses, friction 0.5, dt 0.01). ODE runs both its
``step`` (Dantzig LCP) and ``quickStep`` (PGS, 20 iterations). Every configuration runs at most
``--steps`` steps or ``--budget`` seconds after one warm-up step (numba compilation excluded).
"""
from __future__ import annotations

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

from contactlab.problems.io import atomic_write  # noqa: E402
from contactlab.scenarios import make_scene  # noqa: E402
from contactlab.scenarios.io import scene_to_dict  # noqa: E402
from contactlab.sim import Simulator  # noqa: E402

CONFIGS = [("stewart-trinkle", "lemke", 20), ("box-friction", "pgs", 10 ** 9), ("box-friction", "pgs-sm", 10 ** 9),
           ("frictionless", "lemke", 50)]     # (model, method, largest N it is run on)


def drift(scene, positions):
    p0 = np.array([b.position for b in scene.bodies if b.kind == "dynamic"])
    return float(np.abs(np.asarray(positions) - p0).max())


def run_contactlab(scene_name, n, model, method, steps, budget):
    scene = make_scene(scene_name, count=n)
    sim = Simulator(scene, model, method)
    sim.step()                                    # warm-up (numba caches, imports)
    live = [i for i in range(sim.model.nb) if sim.model.dof_start[i] >= 0]
    recs = []
    t0 = time.perf_counter()
    while len(recs) < steps and time.perf_counter() - t0 < budget:
        recs.append(sim.step())
    wall = time.perf_counter() - t0
    solve = sum(r.solve_time for r in recs)
    return {"engine": f"contactlab {model}/{method}", "steps": len(recs), "steps_per_s": len(recs) / wall,
            "solver_share": solve / wall, "lcp_mean": float(np.mean([r.lcp_size for r in recs])),
            "failures": int(sum(not r.success for r in recs)),
            "drift": drift(scene, sim.data.position[live]) if scene_name == "stack" else float("nan")}


def run_pybullet(scene_name, n, steps, budget):
    try:
        import pybullet as p
    except ImportError:
        return None
    scene = make_scene(scene_name, count=n)
    cid = p.connect(p.DIRECT)
    p.setGravity(*scene.gravity, physicsClientId=cid)
    p.setTimeStep(scene.settings.dt, physicsClientId=cid)
    ids = []
    for b in scene.bodies:
        for s in b.shapes:
            w, x, y, z = b.orientation
            if s.kind == "halfspace":
                col = p.createCollisionShape(p.GEOM_PLANE, planeNormal=list(s.normal), physicsClientId=cid)
                bid = p.createMultiBody(0, col, basePosition=list(b.position), physicsClientId=cid)
            else:
                col = p.createCollisionShape(p.GEOM_BOX, halfExtents=[0.5 * v for v in s.size], physicsClientId=cid)
                pos = np.asarray(b.position) + np.asarray(s.position)
                mass = 0.0 if b.kind == "fixed" else b.mass
                bid = p.createMultiBody(mass, col, basePosition=list(pos), baseOrientation=[x, y, z, w],
                                        physicsClientId=cid)
                if b.kind != "fixed":
                    ids.append(bid)
            p.changeDynamics(bid, -1, lateralFriction=scene.mu, restitution=0.0, physicsClientId=cid)
    p.stepSimulation(physicsClientId=cid)
    k = 0
    t0 = time.perf_counter()
    while k < steps and time.perf_counter() - t0 < budget:
        p.stepSimulation(physicsClientId=cid)
        k += 1
    wall = time.perf_counter() - t0
    pos = [p.getBasePositionAndOrientation(i, physicsClientId=cid)[0] for i in ids]
    p.disconnect(cid)
    return {"engine": "pybullet", "steps": k, "steps_per_s": k / wall, "solver_share": float("nan"),
            "lcp_mean": float("nan"), "failures": 0,
            "drift": drift(scene, pos) if scene_name == "stack" else float("nan")}


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


def run_ode(scene_name, n, steps, budget, quick):
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
    if r.returncode:
        return {"engine": f"ode {'quickStep' if quick else 'step'}", "error": r.stderr.strip().splitlines()[-1:]}
    out = json.loads(r.stdout.strip().splitlines()[-1])
    return {"engine": f"ode {'quickStep' if quick else 'step'}", "steps": out["steps"],
            "steps_per_s": out["steps"] / out["wall"], "solver_share": float("nan"), "lcp_mean": float("nan"),
            "failures": 0, "drift": drift(scene, out["pos"]) if scene_name == "stack" else float("nan")}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10, 20, 50, 100, 200, 500])
    ap.add_argument("--scenes", nargs="+", default=["stack", "pile"])
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--budget", type=float, default=60.0, help="seconds per configuration")
    ap.add_argument("--out", type=Path, default=None, help="also write the raw Markdown table here")
    ap.add_argument("--json", type=Path, default=None)
    a = ap.parse_args(argv)
    rows = []
    for scene_name in a.scenes:
        for n in a.sizes:
            results = []
            for model, method, nmax in CONFIGS:
                if n <= nmax:
                    results.append(run_contactlab(scene_name, n, model, method, a.steps, a.budget))
            for r in (run_pybullet(scene_name, n, a.steps, a.budget), run_ode(scene_name, n, a.steps, a.budget, False),
                      run_ode(scene_name, n, a.steps, a.budget, True)):
                if r is not None:
                    results.append(r)
            for r in results:
                r.update(scene=scene_name, n=n)
                rows.append(r)
                print(json.dumps(r), flush=True)
    if a.json:
        atomic_write(a.json, lambda tmp: Path(tmp).write_text(json.dumps(rows, indent=1)))
    fmt = lambda v, f="{:.3g}": "—" if v is None or (isinstance(v, float) and not np.isfinite(v)) else f.format(v)
    lines = ["| scene | N | engine | steps | steps/s | solver share | mean LCP size | method failures | max drift (m) |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['scene']} | {r['n']} | {r['engine']} | error: {r['error']} | | | | | |")
            continue
        lines.append(f"| {r['scene']} | {r['n']} | {r['engine']} | {r['steps']} | {fmt(r['steps_per_s'])} | "
                     f"{fmt(r['solver_share'], '{:.0%}')} | {fmt(r['lcp_mean'], '{:.0f}')} | {r['failures']} | "
                     f"{fmt(r['drift'], '{:.2g}')} |")
    table = "\n".join(lines)
    header = (f"Run: `{' '.join(['python', 'benchmarks/bench_sim.py', *(argv or sys.argv[1:])])}` on "
              f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
              f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}.\n")
    print(table)
    text = "# Simulation benchmark (raw table)\n\n" + header + "\n" + table + "\n"
    if a.out:
        atomic_write(a.out, lambda tmp: Path(tmp).write_text(text))
    return rows, text


if __name__ == "__main__":
    main()

"""An FCLIB benchmark: export a pile's frictional contact problems as FCLIB files, solve them with
every exact-cone method, and draw the performance profile (Dolan-More) of the methods.

``contactlab simulate pile --set count=12 --duration 0.4 --export-fclib problems/`` writes the same
files from the command line; ``contactlab.load`` reads FCLIB HDF5 files from elsewhere (fclib.org,
Siconos) just as well.
"""
import os
import time
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

import contactlab as cl
from contactlab.problems.fclib import StepExporter
from contactlab.scenarios import make_scene
from contactlab.sim import Simulator

out = Path(os.environ.get("CONTACTLAB_DOCS_OUT", "."))

# 1. the problems: every step of a falling 12-box pile with contacts, as FCLIB files (exact Coulomb cone)
sim = Simulator(make_scene("pile", count=12), "stewart-trinkle")
exporter = StepExporter(out / "problems", title="pile of 12 boxes")
sim.add_controller(exporter)
sim.run(0.4)
files = exporter.written[-8:]                       # the last 8 steps: the pile at rest, most contacts
problems = [cl.load(f) for f in files]
print(f"{len(exporter.written)} FCLIB files written; benchmarking the last {len(files)}: "
      f"{min(p.nc for p in problems)}-{max(p.nc for p in problems)} contacts each")

# 2. every method on every problem, certified by solve()'s own residual (tol TOL, 10 s cap)
TOL = 1e-4     # Gauss-Seidel (nsgs) stalls near 3e-5 on these hyperstatic piles; the Newton methods reach 1e-8
methods = ("nsgs", "newton-ac", "newton-fb", "prox")
times = np.full((len(problems), len(methods)), np.inf)     # inf: not solved to tol
for j, method in enumerate(methods):
    cl.solve(problems[0], method, tol=TOL, max_time=10.0)   # warm-up: numba compiles outside the timing
    for i, p in enumerate(problems):
        t0 = time.perf_counter()
        sol = cl.solve(p, method, tol=TOL, max_time=10.0)
        dt = time.perf_counter() - t0
        if sol.success and sol.residual <= TOL:
            times[i, j] = dt
    solved = np.isfinite(times[:, j])
    print(f"{method:10s} solved {solved.sum()}/{len(problems)}, median time "
          f"{1e3 * np.median(times[solved, j]) if solved.any() else float('nan'):.2f} ms")

# 3. performance profile: the fraction of problems each method solves within tau times the best time
ratio = times / times.min(axis=1, keepdims=True)
taus = np.logspace(0, 2, 200)
fig, ax = plt.subplots(figsize=(5.5, 3.3))
for j, method in enumerate(methods):
    ax.step(taus, [(ratio[:, j] <= t).mean() for t in taus], where="post", label=method)
ax.set_xscale("log"); ax.set_xlabel("tau (time / best time)"); ax.set_ylabel("fraction solved")
ax.set_ylim(0, 1.05); ax.legend(); fig.tight_layout()
fig.savefig(out / "performance_profile.png", dpi=90)
for f in (out / "problems").glob("*.hdf5"):
    if f not in files:
        f.unlink()                                  # keep only the benchmarked files beside the page

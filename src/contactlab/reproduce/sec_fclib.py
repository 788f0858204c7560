"""Frictional contact problems of record: the exact-cone Coulomb solvers on the FCLIB / Siconos samples
shipped in ``contactlab/data/fclib`` and on problems exported from contactlab's own stacks and piles (FCLIB files written by
``simulate --export-fclib``'s exporter). contactlab only; the side-by-side comparison with Siconos and
the performance profiles are benchmarks/bench_fclib.py (docs/fclib.md)."""
from __future__ import annotations

import tempfile
import time
from pathlib import Path

import numpy as np

from .. import data
from . import markdown_table

TITLE = "Frictional contact problems of record: exact-cone Coulomb solvers (FCLIB)"
ORDER = 60

METHODS = ("nsgs", "newton-ac", "newton-fb", "prox", "pyramid")
TOLS = (1e-4, 1e-8)


def _export(scene: str, steps: int, keep: int, directory: Path, **params) -> list[Path]:
    """The exact-cone problems of the last ``keep`` of ``steps`` steps of ``contactlab simulate
    SCENE`` (its default model and method): the exporter is attached for those steps only."""
    from ..problems.fclib import StepExporter
    from ..scenarios import make_scene
    from ..sim import Simulator
    sim = Simulator(make_scene(scene, **params))
    sim.run((steps - keep) * sim.h)
    exp = StepExporter(directory, title=scene)
    sim.add_controller(exp)
    sim.run(keep * sim.h)
    exp(sim)
    return exp.written[-keep:]


def run(ctx) -> str:
    import contactlab as cl
    quick = ctx.quick
    cap = 2.0 if quick else 3.0     # seconds per solve; the 7,002-contact granular sample reaches it
    warm = cl.FrictionContact(np.eye(3) * 2, [-1.0, 0.3, 0.1], [0.5])
    for m in METHODS:
        ctx.warm_up(cl.solve, warm, m)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        coll = {"fclib-samples": [data.path("fclib", "fclib_local_problem_test.hdf5")]
                + ([] if quick else [data.path("fclib", "fc2d_granularflowonwall_07002_00801.dat")])}
        coll["contactlab-stack"] = _export("stack", 3 if quick else 20, 2 if quick else 5, tmp / "stack")
        coll["contactlab-pile"] = _export("pile", 40 if quick else 80, 2 if quick else 5, tmp / "pile",
                                          count=8 if quick else 30)
        ctx.advance("exported problems")
        rows, cone = [], []
        pyramid_runs = {}   # the pyramid route's answer per problem: its inner LCP does not depend on tol
        for name, files in coll.items():
            probs = [cl.load(f) for f in files]
            if not probs:
                rows.append([name, 0, "-", "-", ctx.failed("no problem files"), "-", "-"])
                continue
            sizes = f"{min(p.nc for p in probs)}-{max(p.nc for p in probs)}"
            for tol in TOLS:
                for m in METHODS:
                    times, res, ok = [], [], 0
                    for k, p in enumerate(probs):
                        if m == "pyramid" and p.nc * 10 > 1500:   # PyramidOptions.max_variables
                            continue
                        opts = {"tol": tol} if m == "pyramid" else {"tol": tol, "max_time": cap}
                        t0 = time.perf_counter()
                        try:
                            if m == "pyramid" and (name, k) in pyramid_runs:
                                sol, dt = pyramid_runs[name, k]
                            else:
                                sol = cl.solve(p, m, **opts)
                                dt = time.perf_counter() - t0
                                if m == "pyramid":
                                    pyramid_runs[name, k] = sol, dt
                        except Exception as exc:   # a solver bug shows in the report instead of ending it
                            rows.append([name, len(probs), tol, m, ctx.failed(f"raised {type(exc).__name__}"), "-", "-"])
                            break
                        res.append(sol.residual)
                        if sol.residual <= tol and dt <= cap:
                            ok += 1
                            times.append(dt)
                        if m == "pyramid" and tol == TOLS[-1]:
                            cone.append([name, p.nc, sol.info["pyramid_status"], sol.info["cone_error"]])
                    else:
                        if res:
                            rows.append([name, f"{len(res)} (nc {sizes})", tol, m, f"{ok}/{len(res)}",
                                         float(np.median(times)) if times else "-", float(np.max(res))])
                    ctx.advance(f"{name} {m} {tol:g}")
    table = markdown_table(["collection", "problems", "tol", "method", "solved", "median time of solved (s)",
                            "worst final residual"], rows)
    cone_t = markdown_table(["collection", "contacts", "pyramid LCP status (lemke, d = 8)",
                             "exact-cone residual of its answer"], cone)
    return "\n\n".join([
        f"Residual: contactlab's one definition for friction (natural map of the De Saxce formulation, "
        f"relative, scale-free; problems/friction_contact.py). Solved = residual <= tol within the {cap:g} s cap (the pyramid route solves its LCP "
        f"once per problem, and each tolerance judges that answer's exact-cone residual). "
        "Stack and pile problems are exported steps of `contactlab simulate` scenes (exact Coulomb cone, the "
        "scene's mu); the fclib sample is FCLIB's own boxes-stack test problem. Siconos side by side: "
        "benchmarks/bench_fclib.py and docs/fclib.md.",
        table, "#### The pyramid route measured against the exact cone", cone_t])

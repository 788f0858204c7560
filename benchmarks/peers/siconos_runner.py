"""Times Siconos' LCP solvers in their own process (run with the system /usr/bin/python3, where the
Debian package python3-siconos lives). Called by benchmarks/bench_pivoting.py.

Usage: /usr/bin/python3 benchmarks/peers/siconos_runner.py TASKS.json RESULTS.npz

TASKS.json: {"problems": {"name": "path/to/problem.npz" (arrays M, q)},
             "runs": [{"problem": name, "solver": "LEMKE" | "PIVOT" | "ENUM", "reps": int, "budget": s, "itermax": int}]}
(each solve is repeated while under reps and under budget seconds in all; at least once)
RESULTS.npz: for run k: z_k (last answer), and a JSON string "meta" with times (s, per repetition), info, iterations.
Only the driver call is timed: linearComplementarity_driver(LCP, z, w, SolverOptions).
"""
import json
import sys
import time

import numpy as np
import siconos.numerics as sn

SOLVERS = {"LEMKE": sn.SICONOS_LCP_LEMKE, "PIVOT": sn.SICONOS_LCP_PIVOT, "ENUM": sn.SICONOS_LCP_ENUM}


def main(tasks_path, out_path):
    with open(tasks_path) as f:
        tasks = json.load(f)
    problems = {}
    for name, path in tasks["problems"].items():
        with np.load(path) as d:
            problems[name] = (np.ascontiguousarray(d["M"], dtype=float), np.ascontiguousarray(d["q"], dtype=float))
    arrays, meta = {}, []
    for k, run in enumerate(tasks["runs"]):
        M, q = problems[run["problem"]]
        n = q.size
        times, info, iters = [], None, None
        z = np.zeros(n)
        budget = float(run.get("budget", 1e9))
        while len(times) < int(run["reps"]) and sum(times) < budget:
            lcp = sn.LCP(M, q)
            options = sn.SolverOptions(SOLVERS[run["solver"]])
            options.iparam[sn.SICONOS_IPARAM_MAX_ITER] = int(run["itermax"])
            z = np.zeros(n)
            w = np.zeros(n)
            t0 = time.perf_counter()
            info = sn.linearComplementarity_driver(lcp, z, w, options)
            times.append(time.perf_counter() - t0)
            iters = int(options.iparam[sn.SICONOS_IPARAM_ITER_DONE])
        arrays[f"z_{k}"] = z
        meta.append({"times": times, "info": int(info), "iterations": iters, "itermax": int(run["itermax"])})
    arrays["meta"] = np.array(json.dumps(meta))
    np.savez(out_path, **arrays)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

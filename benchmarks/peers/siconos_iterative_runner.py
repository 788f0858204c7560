"""Times Siconos' iterative (and a few other) LCP solvers in their own process, for benchmarks/bench_iterative.py.

Run with the system /usr/bin/python3 (Debian python3-siconos lives there; no scipy needed):
    /usr/bin/python3 benchmarks/peers/siconos_iterative_runner.py TASKS.json RESULTS.npz

TASKS.json: {"problems": {"name": "path.npz" (dense M, q)},
             "runs": [{"problem": name, "solver": "PGS" | "PSOR" | "RPGS" | "CPG" | "NEWTON_FB" |
                       "NEWTON_MIN" | "CONVEXQP_PG" | "LEMKE" | "AVI_CAOFERRIS", "tol": float, "itermax": int,
                       "reps": int, "budget": seconds}]}
RESULTS.npz: z_k per run (last answer) and "meta" (JSON: times per repetition, info, iterations, Siconos' own
error measure). Only linearComplementarity_driver(LCP, z, w, SolverOptions) is timed.
"""
import json
import sys
import time

import numpy as np
import siconos.numerics as sn

SOLVERS = {"PGS": sn.SICONOS_LCP_PGS, "PSOR": sn.SICONOS_LCP_PSOR, "RPGS": sn.SICONOS_LCP_RPGS,
           "CPG": sn.SICONOS_LCP_CPG, "NEWTON_FB": sn.SICONOS_LCP_NEWTON_FB_FBLSA,
           "NEWTON_MIN": sn.SICONOS_LCP_NEWTON_MIN_FBLSA, "CONVEXQP_PG": sn.SICONOS_LCP_CONVEXQP_PG,
           "LEMKE": sn.SICONOS_LCP_LEMKE, "AVI_CAOFERRIS": sn.SICONOS_LCP_AVI_CAOFERRIS}


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
        times, info, iters, err = [], -1, -1, float("nan")
        z = np.zeros(n)
        budget = float(run.get("budget", 1e9))
        while len(times) < int(run["reps"]) and sum(times) < budget:
            lcp = sn.LCP(M, q)
            options = sn.SolverOptions(SOLVERS[run["solver"]])
            options.iparam[sn.SICONOS_IPARAM_MAX_ITER] = int(run["itermax"])
            options.dparam[sn.SICONOS_DPARAM_TOL] = float(run["tol"])
            z = np.zeros(n)
            w = np.zeros(n)
            t0 = time.perf_counter()
            try:
                info = sn.linearComplementarity_driver(lcp, z, w, options)
            except Exception as exc:  # a peer's failure is a result, not a crash of the benchmark
                info = f"error: {exc}"
                times.append(time.perf_counter() - t0)
                break
            times.append(time.perf_counter() - t0)
            iters = int(options.iparam[sn.SICONOS_IPARAM_ITER_DONE])
            err = float(options.dparam[sn.SICONOS_DPARAM_RESIDU])
        arrays[f"z_{k}"] = z
        meta.append({"times": times, "info": info if isinstance(info, str) else int(info), "iterations": iters,
                     "error": err})
    arrays["meta"] = np.array(json.dumps(meta))
    np.savez(out_path, **arrays)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

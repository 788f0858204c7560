"""Times Siconos' frictional contact solvers in their own process (system /usr/bin/python3, where the
Debian package python3-siconos lives). Called by benchmarks/bench_fclib.py.

Usage: /usr/bin/python3 benchmarks/peers/siconos_fc_runner.py TASK.json RESULT.npz

TASK.json: {"problem": "path/to/problem.dat" (Siconos FrictionContact text file),
            "runs": [{"solver": "NSGS" | "NSN_AC" | "NSN_FB" | "PROX" | "ADMM", "tol": float, "itermax": int}]}
RESULT.npz: r_k, u_k (answer of run k) and "meta" (JSON: time_s, info, iterations, siconos_error per run).
Only the driver call is timed (fc3d_driver / fc2d_driver from r = u = 0).
"""
import json
import sys
import time

import numpy as np
import siconos.numerics as sn

SOLVERS_3D = {"NSGS": sn.SICONOS_FRICTION_3D_NSGS, "NSN_AC": sn.SICONOS_FRICTION_3D_NSN_AC,
              "NSN_FB": sn.SICONOS_FRICTION_3D_NSN_FB, "PROX": sn.SICONOS_FRICTION_3D_PROX,
              "ADMM": sn.SICONOS_FRICTION_3D_ADMM}
SOLVERS_2D = {"NSGS": sn.SICONOS_FRICTION_2D_NSGS, "LEMKE": sn.SICONOS_FRICTION_2D_LEMKE}


def main(task_path, out_path):
    with open(task_path) as f:
        task = json.load(f)
    prob = sn.frictionContactProblemFromFile(task["problem"])
    n = prob.dimension * prob.numberOfContacts
    arrays, meta = {}, []
    for k, run in enumerate(task["runs"]):
        table = SOLVERS_3D if prob.dimension == 3 else SOLVERS_2D
        if run["solver"] not in table:
            meta.append({"skipped": f"no {prob.dimension}D solver {run['solver']}"})
            continue
        options = sn.SolverOptions(table[run["solver"]])
        options.iparam[sn.SICONOS_IPARAM_MAX_ITER] = int(run["itermax"])
        options.dparam[sn.SICONOS_DPARAM_TOL] = float(run["tol"])
        r, u = np.zeros(n), np.zeros(n)
        t0 = time.perf_counter()
        if prob.dimension == 3:
            info = sn.fc3d_driver(prob, r, u, options)
        else:
            info = sn.fc2d_driver(prob, r, u, options)
        dt = time.perf_counter() - t0
        arrays[f"r_{k}"], arrays[f"u_{k}"] = r, u
        meta.append({"time_s": dt, "info": int(info), "iterations": int(options.iparam[sn.SICONOS_IPARAM_ITER_DONE]),
                     "siconos_error": float(options.dparam[sn.SICONOS_DPARAM_RESIDU])})
    arrays["meta"] = np.array(json.dumps(meta))
    np.savez(out_path, **arrays)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

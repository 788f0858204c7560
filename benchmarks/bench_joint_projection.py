"""Joint projection against the number of joints (mechanics/joint_projection.py): the time of
``Simulator.project_joints`` (a Newton step onto the joint manifold and its check) on pendulum
chains of 5 to 200 links after a 1 um drift of every body, median of 20 calls.

    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_joint_projection.py [--links 5 50 200]

J W J' is factored by a block Cholesky over the joints' row groups, leaf-first (no fill on a tree),
so the time grows with the joints rather than with their cube (a dense factorisation's).
"""
from __future__ import annotations

import os
os.environ.setdefault("CONTACTLAB_JIT", "compile")   # time compiled kernels, not interpreted first calls (kernels/_jit.py)

import argparse
import os
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from contactlab.scenarios import make_scene  # noqa: E402
from contactlab.sim.simulator import Simulator  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--links", type=int, nargs="+", default=[5, 50, 200])
    ap.add_argument("--calls", type=int, default=20)
    args = ap.parse_args(argv)
    print("| links | joint rows | project_joints ms (median) | joint error after |")
    print("|---|---|---|---|")
    for links in args.links:
        sim = Simulator(make_scene("pendulum-chain", links=links), "stewart-trinkle", "lemke")
        sim.step()
        times, err = [], float("nan")
        for _ in range(args.calls):
            sim.data.position += 1e-6          # a drift the projection has to remove
            t = time.perf_counter()
            err = sim.project_joints()
            times.append(time.perf_counter() - t)
        rows = sim.last_system.J.shape[0]
        print(f"| {links} | {rows} | {1e3 * np.median(times):.3f} | {err:.1e} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

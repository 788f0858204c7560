"""The legged robots' fused step (sim/robot_step.py) against the stages it stands for, in one tree
(docs/benchmarks-robots.md, seventh session): ``Simulator.run`` in chunks of 200 steps as ``contactlab simulate`` runs it,
``fused`` on and off alternately, CPU time (``time.process_time``) over 5,000 steps after 200; and,
with ``--outside``, the CPU inside the compiled physics call (``tree_noslip_step``, thread time
around it) and the rest of the step.

    .venv/bin/python benchmarks/bench_fused.py [--robots quadruped solo12] [--steps 5000] [--outside]

Run it with ``PYTHONPATH`` of a tree without the fused step to time that tree's stages alone
(``fused`` is then absent and both rows are the stages')."""
from __future__ import annotations

import os
os.environ.setdefault("CONTACTLAB_JIT", "compile")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import time  # noqa: E402


def run(robot: str, fused: bool, steps: int, outside: bool) -> str:
    from contactlab.scenarios import make_scene
    from contactlab.sim import Simulator
    from contactlab.sim import tree_kernels as TK
    from contactlab.sim.recorder import Trajectory
    inside = [0]
    kernel = TK.tree_noslip_step
    if outside:
        def call(*a):
            t0 = time.thread_time_ns()
            try:
                return kernel(*a)
            finally:
                inside[0] += time.thread_time_ns() - t0
        TK.tree_noslip_step = call
    try:
        sc = make_scene(robot)
        sim = Simulator(sc, "no-slip", None, controllers=getattr(sc, "controllers", ()))
        if hasattr(sim, "fused"):
            sim.fused = fused
        traj = Trajectory(list(sim.model.names))
        sim.run(200 * sim.h, trajectory=traj)
        inside[0] = 0
        t0 = time.process_time()
        while len(traj.records) < steps + 200:
            sim.run(200 * sim.h, trajectory=traj)
        t = (time.process_time() - t0) / steps
    finally:
        TK.tree_noslip_step = kernel
    line = (f"{robot} {'fused' if getattr(sim, 'fused', False) else 'stages'}: {t * 1e6:.0f} us CPU/step, "
            f"{sim.h / t:.2f}x real time")
    if outside:
        c = inside[0] / steps / 1e3
        line += f"; physics call {c:.0f} us, outside it {t * 1e6 - c:.0f} us"
    return line


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--robots", nargs="*", default=["quadruped", "solo12"])
    ap.add_argument("--steps", type=int, default=5000)
    ap.add_argument("--outside", action="store_true")
    a = ap.parse_args(argv)
    for robot in a.robots:
        for fused in (True, False, True, False):
            print(run(robot, fused, a.steps, a.outside), flush=True)
    print(f"load average at the end: {' / '.join(f'{x:.1f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

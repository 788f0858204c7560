"""CPU seconds a warm process spends loading numba's cached machine code at a legged robot's first
``Simulator.run`` (the rollout and the fused step's kernels), and the kernels it compiled (none when
the cache holds them all).

    NUMBA_CACHE_DIR=<a warmed cache> CONTACTLAB_JIT=compile PYTHONPATH=src python benchmarks/probe_cache_load.py [quadruped|solo12]

Run it after ``contactlab warmup`` (or profile_compile.py) filled that cache: the first chunk's
CPU time less a later chunk's is the load (the steps themselves take tenths of a millisecond).
"""
from __future__ import annotations

import sys
import time

from numba.core import event


def main() -> None:
    scene = sys.argv[1] if len(sys.argv) > 1 else "quadruped"
    from contactlab.scenarios import make_scene
    from contactlab.sim import Simulator
    compiled = []

    class L(event.Listener):
        def on_start(self, ev):
            compiled.append(ev.data["dispatcher"].py_func.__qualname__)

        def on_end(self, ev):
            pass

    sc = make_scene(scene)
    sim = Simulator(sc, "no-slip", None, controllers=list(sc.controllers))
    with event.install_listener("numba:compile", L()):
        t0 = time.process_time()
        sim.run(200 * sim.h)
        first = time.process_time() - t0
        t0 = time.process_time()
        sim.run(200 * sim.h)
        second = time.process_time() - t0
    print(f"{scene}: first 200 steps {first:.3f} CPU s, next 200 {second:.3f} CPU s, load ~{first - second:.3f} s; "
          f"compiled {len(compiled)}: {compiled[:8]}")


if __name__ == "__main__":
    main()

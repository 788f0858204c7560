"""Cold numba compile time per compile unit: each ``contactlab warmup`` task run one after another in
one process, with numba's ``numba:compile`` events timed (CPU seconds, ``time.process_time``).

numba compiles each jitted function that a call reaches as its own unit (typing, lowering, LLVM
optimisation and code generation), and each unit links the optimised modules of its callees into
its own and optimises and emits them again: a unit's cost grows with its whole call tree. The
report lists, per dispatcher, the CPU seconds spent in its own units (nested callee units
excluded), how many signatures it compiled, and the time of each task.

    NUMBA_CACHE_DIR=$(mktemp -d) PYTHONPATH=src python benchmarks/profile_compile.py [--kinds simulate] [--only TEXT]

Run it with a fresh ``NUMBA_CACHE_DIR`` (cold); a warm cache loads instead and reports nothing.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import defaultdict

from numba.core import event


class _Timer(event.Listener):
    """Self CPU seconds per dispatcher, from nested ``numba:compile`` events."""

    def __init__(self):
        self.stack = []
        self.self_s = defaultdict(float)
        self.total_s = defaultdict(float)
        self.sigs = defaultdict(list)

    def on_start(self, ev):
        self.stack.append([ev.data["dispatcher"], ev.data["args"], time.process_time(), 0.0])

    def on_end(self, ev):
        disp, args, t0, child = self.stack.pop()
        total = time.process_time() - t0
        name = f"{disp.py_func.__module__}.{disp.py_func.__qualname__}"
        self.self_s[name] += total - child
        if not any(name == f"{d.py_func.__module__}.{d.py_func.__qualname__}" for d, *_ in self.stack):
            self.total_s[name] += total
        self.sigs[name].append(str(args))
        if self.stack:
            self.stack[-1][3] += total


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kinds", nargs="+", default=["simulate", "solve"])
    ap.add_argument("--only", default=None, help="run the tasks whose label contains this text")
    ap.add_argument("--top", type=int, default=40)
    ap.add_argument("--json", default=None, help="write the figures here")
    args = ap.parse_args(argv)
    if not os.environ.get("NUMBA_CACHE_DIR"):
        sys.exit("set NUMBA_CACHE_DIR to a fresh folder (a cold cache)")
    from contactlab import warmup
    from contactlab.kernels._jit import compile_always

    timer = _Timer()
    per_task = []
    t_all = time.process_time()
    with event.install_listener("numba:compile", timer), compile_always():
        for task in warmup.tasks(tuple(args.kinds)):
            if args.only and args.only not in task.label:
                continue
            t0 = time.process_time()
            label, _, err = warmup.run_task(task)
            per_task.append((label, time.process_time() - t0, err))
            print(f"{per_task[-1][1]:8.1f} s  {label}{'  ERROR ' + err if err else ''}", flush=True)
    total = time.process_time() - t_all
    print(f"\nall tasks: {total:.1f} CPU s; compile units (self CPU s, signatures, incl. callees):")
    rows = sorted(timer.self_s.items(), key=lambda kv: -kv[1])
    for name, s in rows[:args.top]:
        print(f"{s:8.1f} {len(timer.sigs[name]):3d} {timer.total_s[name]:8.1f}  {name}")
    print(f"compile total (self): {sum(timer.self_s.values()):.1f} s over {len(rows)} functions, "
          f"{sum(len(v) for v in timer.sigs.values())} signatures")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"total": total, "tasks": per_task,
                       "units": {n: {"self": s, "total": timer.total_s[n], "sigs": timer.sigs[n]} for n, s in rows}},
                      f, indent=1)


if __name__ == "__main__":
    main()

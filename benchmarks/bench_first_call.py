"""Time to the first answer (issue 38): import, first ``solve()`` per method and first simulation
steps per contact model, each in a fresh process, on a cold numba cache (an empty
``NUMBA_CACHE_DIR``) and then warm (the caches that run wrote), with the number of kernels
compiled per module; and the CLI's first ``contactlab simulate stack`` (default duration). Peers
answer in under a second after ``pip install`` (PyBullet, MuJoCo: compiled ahead of time).

Both JIT modes of kernels/_jit.py: ``tiered`` (the default: kernels without machine code run
interpreted until compiling pays) and ``compile`` (every kernel compiled at its first call, as
plain numba; what ``contactlab warmup`` does ahead of use).

    .venv/bin/python benchmarks/bench_first_call.py [--methods lemke pgs ...] [--models ...]
        [--jit tiered compile] [--json benchmarks/results/first_call.json]

Each cold case gets its own empty cache, so its figure is what a new user pays for that call alone
(kernels shared between cases are compiled again in each). "cold CPU" is the process's CPU time (user +
system), the figure that does not depend on the load; the others are wall times. Run it on a quiet machine: compile
time is CPU time.
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROBE = r"""
import json, sys, time
t0 = time.perf_counter()
import contactlab as cl
t1 = time.perf_counter()
kind, name = sys.argv[1], sys.argv[2]
if kind == "solve":
    from contactlab.warmup import _problems
    problem = _problems(name)[0]
    t2 = time.perf_counter()
    cl.solve(problem, method=name)
else:
    from contactlab.scenarios import make_scene
    from contactlab.sim import Simulator
    model, method = name.split("/")
    sim = Simulator(make_scene("stack", count=2), model, None if method == "default" else method)
    t2 = time.perf_counter()
    sim.step()
t3 = time.perf_counter()
import resource
ru = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"import_s": t1 - t0, "first_call_s": t3 - t2, "total_s": t3 - t0, "cpu_s": ru.ru_utime + ru.ru_stime}))
"""


CLI = r"""
import sys, time
t0 = time.perf_counter()
from contactlab.cli import main
sys.argv = ["contactlab", *sys.argv[1:]]
try:
    main()
except SystemExit as exc:
    if exc.code:
        raise
import json, resource
ru = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"import_s": 0.0, "first_call_s": time.perf_counter() - t0, "total_s": time.perf_counter() - t0,
                  "cpu_s": ru.ru_utime + ru.ru_stime}))
"""


def _probe(kind: str, name: str, cache: Path, jit: str) -> dict:
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache), OPENBLAS_NUM_THREADS="1", CONTACTLAB_JIT=jit)
    argv = [sys.executable, "-c", CLI, *name.split()] if kind == "cli" else [sys.executable, "-c", PROBE, kind, name]
    t0 = time.perf_counter()
    r = subprocess.run(argv, capture_output=True, text=True, env=env)
    if r.returncode:
        return {"error": r.stderr.strip().splitlines()[-1] if r.stderr.strip() else f"exit {r.returncode}"}
    out = json.loads(r.stdout.strip().splitlines()[-1])
    out["process_s"] = time.perf_counter() - t0
    return out


def _kernels_by_module(cache: Path) -> dict[str, int]:
    counts = collections.Counter(p.name.split(".")[0] for p in cache.rglob("*.nbi"))
    return dict(counts.most_common())


def main() -> None:
    import contactlab as cl
    from contactlab.models import available_models
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--methods", nargs="*", default=sorted(set(cl.available_solvers()) - {"auto"}))
    ap.add_argument("--models", nargs="*", default=sorted(available_models()))
    ap.add_argument("--jit", nargs="*", default=["tiered", "compile"], choices=["tiered", "compile"])
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    cases = [("cli", "simulate stack")]
    cases += [("solve", m) for m in args.methods]
    cases += [("simulate", f"{m}/{'box-qp' if m == 'box-friction' else 'default'}") for m in args.models]
    rows = []
    print(f"{'case':34s} {'jit':8s} {'import':>7s} {'cold call':>10s} {'warm call':>10s} {'cold process':>13s} "
          f"{'cold CPU':>9s} kernels")
    for kind, name in cases:
        for jit in args.jit:
            with tempfile.TemporaryDirectory() as tmp:
                cache = Path(tmp)
                cold = _probe(kind, name, cache, jit)
                warm = _probe(kind, name, cache, jit)
                kernels = _kernels_by_module(cache)
            row = {"kind": kind, "name": name, "jit": jit, "cold": cold, "warm": warm, "kernels": kernels}
            rows.append(row)
            if "error" in cold or "error" in warm:
                print(f"{kind + ' ' + name:34s} {jit:8s} error: {cold.get('error') or warm.get('error')}")
                continue
            print(f"{kind + ' ' + name:34s} {jit:8s} {cold['import_s']:7.2f} {cold['first_call_s']:10.2f} "
                  f"{warm['first_call_s']:10.3f} {cold['process_s']:13.2f} {cold['cpu_s']:9.2f} {sum(kernels.values())} "
                  f"({', '.join(f'{k} {v}' for k, v in list(kernels.items())[:4])})", flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()

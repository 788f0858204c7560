"""Sweep throughput (issue 17): rows per second of a sweep of short simulations, serially, on
joblib (loky, 2 processes) and on a dask.distributed LocalCluster with 1 and 2 worker processes
(loopback), and each engine's per-row overhead (a task that does nothing).

    .venv/bin/python benchmarks/bench_batch.py [--rows 40] [--long-rows 4] [--out DIR]

Every engine is started and warmed up (workers spawned, contactlab imported, numba caches
loaded) before its timings: a sweep's start-up is reported separately. Results go to
DIR/batch.json and DIR/batch.md (default: out/bench, not tracked).
"""
from __future__ import annotations

import os
os.environ.setdefault("CONTACTLAB_JIT", "compile")   # time compiled kernels, not interpreted first calls (kernels/_jit.py)

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from contactlab.batch import sweep  # noqa: E402
from contactlab.files import atomic_write  # noqa: E402


def noop(i):
    return {}


def timed(engine, task, grid, **kw):
    t0 = time.perf_counter()
    df = sweep(task, grid, progress=False, **kw, **engine)
    wall = time.perf_counter() - t0
    assert (df["status"] == "ok").all(), df[df["status"] != "ok"][["status", "error"]]
    return wall, df


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=40, help="short-simulation rows per engine")
    ap.add_argument("--noop-rows", type=int, default=200, help="empty rows per engine (per-row overhead)")
    ap.add_argument("--long-rows", type=int, default=4, help="rows of ~1-2 s each (speed-up), 0 to skip")
    ap.add_argument("--out", type=Path, default=ROOT / "out" / "bench", help="output folder")
    a = ap.parse_args()
    from bench_batch import noop as noop_ref   # importable by reference on the workers
    from dask.distributed import Client, LocalCluster

    short = {"scene": ["stack"], "count": [2], "duration": [0.1], "mu": [0.2 + 0.01 * i for i in range(a.rows)]}
    long = {"scene": ["stack"], "count": [5], "duration": [1.5], "mu": [0.3 + 0.01 * i for i in range(a.long_rows)]}
    rows = []
    clusters = []
    try:
        engines = [("serial", {}, 1), ("joblib, 2 processes", {"workers": 2}, 2)]
        for n in (1, 2):
            lc = LocalCluster(n_workers=n, threads_per_worker=1, processes=True, host="127.0.0.1",
                              dashboard_address=":0")
            client = Client(lc)
            clusters.append((lc, client))
            engines.append((f"LocalCluster, {n} worker(s)", {"scheduler": client}, n))
        for name, eng, n in engines:
            t0 = time.perf_counter()
            sweep("simulate", {"scene": ["stack"], "count": [2], "duration": [0.02], "mu": [0.1 * k for k in range(2 * n)]},
                  progress=False, **eng)                                        # start + warm the workers
            sweep(noop_ref, {"i": list(range(2 * n))}, progress=False, **eng)
            startup = time.perf_counter() - t0
            w_noop, _ = timed(eng, noop_ref, {"i": list(range(a.noop_rows))})
            w_short, df = timed(eng, "simulate", short)
            row = {"engine": name, "processes": n, "warm_up_s": startup,
                   "noop_rows": a.noop_rows, "noop_wall_s": w_noop,
                   "overhead_ms_per_row": 1e3 * w_noop / a.noop_rows,
                   "overhead_ms_per_row_per_process": 1e3 * w_noop * n / a.noop_rows,
                   "short_rows": a.rows, "short_row_task_s_median": float(df["wall_s"].median()),
                   "short_rows_per_s": a.rows / w_short}
            if a.long_rows:
                w_long, dl = timed(eng, "simulate", long)
                row.update(long_rows=a.long_rows, long_row_task_s_median=float(dl["wall_s"].median()),
                           long_rows_per_s=a.long_rows / w_long)
            rows.append(row)
            print(json.dumps(row), flush=True)
    finally:
        for lc, client in clusters:
            client.close()
            lc.close()
    base = rows[0]
    lines = [f"Machine: {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f} at the end.", "",
             "| engine | rows/s (short sims) | speed-up | rows/s (long sims) | speed-up | overhead ms/row "
             "(wall) | overhead ms/row x processes | warm-up s |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['engine']} | {r['short_rows_per_s']:.3g} | {r['short_rows_per_s'] / base['short_rows_per_s']:.2f} "
                     f"| {r.get('long_rows_per_s', float('nan')):.3g} | "
                     f"{r.get('long_rows_per_s', float('nan')) / base.get('long_rows_per_s', float('nan')):.2f} "
                     f"| {r['overhead_ms_per_row']:.3g} | {r['overhead_ms_per_row_per_process']:.3g} | {r['warm_up_s']:.1f} |")
    text = "\n".join(lines) + "\n"
    print(text)
    atomic_write(a.out / "batch.json", lambda tmp: Path(tmp).write_text(json.dumps(rows, indent=1)))
    atomic_write(a.out / "batch.md", lambda tmp: Path(tmp).write_text(text))
    print(f"wrote {a.out / 'batch.md'}")


if __name__ == "__main__":
    main()

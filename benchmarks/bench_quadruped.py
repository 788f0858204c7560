"""Trotting quadruped benchmark (drumwright §VII-B, Tables II-III): the whole 10 s run timed per
contact model and solver (collision, dynamics, control, LCP solve), per-step LCP size, pivots and
solve time, contacts per step, locomotion outcome; side by side in one run.

    .venv/bin/python benchmarks/bench_quadruped.py [--duration 10] [--quick] [--configs no-slip:ppm ...]
        [--json benchmarks/results/quadruped.json] [--figures docs/figures] [--mu-v 0.1] [--repeats 3]

``--quick`` runs 1 s. Each configuration is preceded by an untimed 10-step warm-up (numba caches).
``--repeats N`` runs the configurations in turn N times (round by round, so a change of the machine's
load falls on all of them alike); the tables use each configuration's run of median CPU time, and
the CPU-time ratios of every round are printed and saved (``rounds`` in the JSON).
"""
from __future__ import annotations

import os
os.environ.setdefault("CONTACTLAB_JIT", "compile")   # time compiled kernels, not interpreted first calls (kernels/_jit.py)

import argparse
import json
import os
import platform
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

from contactlab.files import atomic_write  # noqa: E402
from contactlab.reproduce.sec_quadruped import CONFIGS, figures, run_all, tables  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--duration", type=float, default=10.0)
    ap.add_argument("--quick", action="store_true", help="1 s runs")
    ap.add_argument("--configs", nargs="*", default=[f"{m}:{s}" for m, s in CONFIGS], help="model:method ...")
    ap.add_argument("--json", default=None, help="write the summary numbers here")
    ap.add_argument("--figures", default=None, help="folder for the four figures (png)")
    ap.add_argument("--logs", default=None, help="write the per-step logs here (.npz)")
    ap.add_argument("--mu-v", type=float, default=None, help="viscous coefficient (N s/m) for viscous configs (default: the model's 0.1)")
    ap.add_argument("--repeats", type=int, default=1, help="rounds of all configurations (median run reported)")
    args = ap.parse_args(argv)
    if args.repeats < 1:
        ap.error("--repeats must be at least 1")
    duration = 1.0 if args.quick else args.duration
    configs = [tuple(c.split(":", 1)) for c in args.configs]
    results = []

    def save():
        rows = []
        for r in results:
            rec = r["records"]
            rows.append({k: r[k] for k in ("model", "method", "duration", "steps", "error", "wall_s", "cpu_s", "collision_s",
                                           "control_s", "solve_s", "dynamics_s", "summary", "metrics")} | {
                "contacts": {"min": int(rec["contacts"].min()), "max": int(rec["contacts"].max()),
                             "mean": float(rec["contacts"].mean()), "std": float(rec["contacts"].std())},
                "lcp_size_mean": float(rec["lcp_size"].mean()), "lcp_size_max": int(rec["lcp_size"].max()),
                "pivots_mean": float(rec["pivots"].mean()), "pivots_max": int(rec["pivots"].max()),
                "solve_us_mean": float(1e6 * rec["solve_time"].mean())})
        text = json.dumps({"duration": duration, "machine": platform.processor() or platform.machine(),
                           "python": sys.version.split()[0], "load_avg": os.getloadavg(), "runs": rows,
                           "repeats": args.repeats, "rounds": rounds},
                          indent=1, default=float)
        atomic_write(args.json, lambda tmp: open(tmp, "w").write(text))

    rounds = []                  # per round: {config: cpu_s}

    def median_runs():
        """Each configuration's run of median CPU time over the rounds so far."""
        out = []
        for i, cfg in enumerate(configs):
            runs = sorted((rnd[i] for rnd in all_runs if len(rnd) > i), key=lambda r: r["cpu_s"])
            if runs:
                out.append(runs[(len(runs) - 1) // 2])
        return out

    all_runs = []
    for k in range(args.repeats):
        this = []
        all_runs.append(this)
        for cfg in configs:
            opts = {"mu_v": args.mu_v} if (args.mu_v is not None and cfg[0] == "viscous") else None
            run_all(0.01, None, [cfg], opts)                 # warm-up, untimed
            t0 = time.time()
            r = run_all(duration, None, [cfg], opts)[0]
            this.append(r)
            print(f"{cfg[0]}/{cfg[1]}: {r['steps']} steps, wall {r['wall_s']:.1f} s, cpu {r['cpu_s']:.1f} s "
                  f"(collision {r['collision_s']:.1f}, dynamics {r['dynamics_s']:.1f}, control {r['control_s']:.1f}, "
                  f"solve {r['solve_s']:.2f}); {r['summary']}; load {os.getloadavg()[0]:.1f}; "
                  f"finished {time.strftime('%H:%M:%S')} ({time.time() - t0:.0f} s)"
                  + (f"; round {k + 1}/{args.repeats}" if args.repeats > 1 else ""), flush=True)
            results[:] = median_runs()
            if args.json:
                save()
        rounds.append({f"{c[0]}:{c[1]}": r["cpu_s"] for c, r in zip(configs, this)})
        if args.json:
            save()
    if args.logs:
        import numpy as np
        np.savez_compressed(args.logs, **{f"{k}:{r['model']}:{r['method']}:{key}": v for r in results
                                           for k in ("log", "records") for key, v in r[k].items()})
    if args.repeats > 1:
        print()
        for a, b in (("no-slip:ppm", "stewart-trinkle:lemke"), ("viscous:ppm", "viscous:lemke")):
            ratios = [rnd[a] / rnd[b] for rnd in rounds if a in rnd and b in rnd]
            if ratios:
                print(f"CPU time {a} / {b} by round: " + ", ".join(f"{x:.3f}" for x in ratios)
                      + f"; median {sorted(ratios)[(len(ratios) - 1) // 2]:.3f}")
    print()
    print(tables(results))
    if args.figures:
        from pathlib import Path
        d = Path(args.figures)
        d.mkdir(parents=True, exist_ok=True)
        for name, fig in figures(results).items():
            atomic_write(d / f"{name}.png", lambda tmp, f=fig: f.savefig(tmp, format="png", dpi=110, bbox_inches="tight"))
    return 0


if __name__ == "__main__":
    sys.exit(main())

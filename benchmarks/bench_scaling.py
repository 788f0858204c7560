"""Time per step against boxes on settled piles (issue 37: exponent <= 1.1): each pile (the ``pile``
scenario, seed 0, certified box friction by box-qp: the default for scene files) is run until it
rests, then ``--steps`` steps are timed in CPU time of this thread (``time.thread_time``: the machine
may be shared), and the growth exponent fitted on the logs between consecutive sizes and over all.

    OPENBLAS_NUM_THREADS=1 CONTACTLAB_JIT=compile .venv/bin/python benchmarks/bench_scaling.py \\
        --sizes 250 500 1000 2000 --json benchmarks/results/scaling.json

A pile of N boxes stacks 25 a layer: its towers are N / 25 boxes high and come to rest after about
max(120, N / 5) steps of 10 ms (``--settle``; the run reports the largest speed left). Solver
options can be given as JSON (``--solver-options '{"grouped_max": 600}'``) to compare settings.
``--falling``: the falling pile instead, steps 13-40 from its start timed (impacts: the islands change
every step). ``--state-dir DIR``: each settled pile's state (``Simulator.data``: poses, velocities, the last
contacts and impulses that warm-start the next step) is read from DIR where a run with the same size and
settling steps saved it, else settled and saved there, so that the settling (at 10,000 boxes, 2,000 steps)
is paid once and A/B runs of two versions time steps from the same state. ``--max-layers L``: the wide
piles of the ``pile`` scenario's ``max_layers`` (at most L layers; the saved states named
``pile{N}_layers{L}_...``), for sizes whose towers would topple.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import pickle
import sys
import time
from pathlib import Path

import numpy as np

from contactlab.scenarios import pile
from contactlab.sim import Simulator


def pile_name(count: int, max_layers: int | None = None) -> str:
    """The stem of a saved state's file name: ``pile{N}``, or ``pile{N}_layers{L}`` for ``max_layers`` L."""
    return f"pile{count}" if max_layers is None else f"pile{count}_layers{max_layers}"


def default_settle(count: int, max_layers: int | None = None) -> int:
    """Settling steps when none are given: max(120, N / 5) for towers of 25 a layer, and as for a tower of
    the same height (at most ``max_layers`` layers, 25 boxes each) for a wide pile."""
    return max(120, (count if max_layers is None else min(count, 25 * max_layers)) // 5)


def settled(count: int, settle: int | None, solver_options: dict,
            state_dir: Path | None = None, max_layers: int | None = None) -> tuple[Simulator, int, float, float]:
    """The pile of ``count`` boxes after its settling steps: (simulator, steps run, largest speed, the
    deepest contact over the settling steps (``StepRecord.max_penetration``, m)).
    ``state_dir``: the settled state read from there where saved (one step is run first, so that
    every kernel is compiled before the timed steps), else saved there after settling."""
    sim = Simulator(pile.build(count=count, seed=0, max_layers=max_layers), solver_options=solver_options or None)
    steps = settle if settle is not None else default_settle(count, max_layers)
    saved = None if state_dir is None else state_dir / f"{pile_name(count, max_layers)}_seed0_settle{steps}.pkl"
    if saved is not None and saved.exists():
        sim.step()
        with open(saved, "rb") as f:
            data, deepest = pickle.load(f)
        for fld in dataclasses.fields(data):
            setattr(sim.data, fld.name, getattr(data, fld.name))
        return sim, steps, float(np.abs(sim.data.linear_velocity).max()), deepest
    deepest = 0.0
    for _ in range(steps):
        rec = sim.step()
        deepest = max(deepest, float(rec.max_penetration))
        if not (rec.success or rec.rescued):
            raise SystemExit(f"{count} boxes: step {sim.data.steps} not certified ({rec.status})")
    if saved is not None:
        saved.parent.mkdir(parents=True, exist_ok=True)
        with open(saved.with_suffix(".tmp"), "wb") as f:
            pickle.dump((sim.data, deepest), f)
        os.replace(saved.with_suffix(".tmp"), saved)
    return sim, steps, float(np.abs(sim.data.linear_velocity).max()), deepest


def falling(count: int, solver_options: dict, max_layers: int | None = None) -> Simulator:
    """The pile of ``count`` boxes after its first 10 steps (3 more untimed in :func:`measure`): falling."""
    sim = Simulator(pile.build(count=count, seed=0, max_layers=max_layers), solver_options=solver_options or None)
    for _ in range(10):
        sim.step()
    return sim


def measure(sim: Simulator, steps: int) -> dict:
    """CPU ms a step (mean, median) over ``steps`` steps after 3 untimed ones, and what they did."""
    for _ in range(3):
        sim.step()
    cpu, its, contacts, certified, deepest = [], [], [], 0, 0.0
    for _ in range(steps):
        t = time.thread_time()
        rec = sim.step()
        cpu.append(time.thread_time() - t)
        its.append(rec.iterations)
        contacts.append(rec.contacts)
        certified += bool(rec.success or rec.rescued)
        deepest = max(deepest, float(rec.max_penetration))
    return {"cpu_ms_mean": 1e3 * float(np.mean(cpu)), "cpu_ms_median": 1e3 * float(np.median(cpu)),
            "iterations": float(np.mean(its)), "contacts": float(np.mean(contacts)), "certified": certified,
            "steps": steps, "max_penetration_mm": 1e3 * deepest}


def exponent(sizes, times) -> float:
    """The least-squares slope of log(time) against log(size)."""
    return float(np.polyfit(np.log(sizes), np.log(times), 1)[0])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[250, 500, 1000, 2000])
    ap.add_argument("--steps", type=int, default=30, help="timed steps per size")
    ap.add_argument("--settle", type=int, nargs="+", default=None,
                    help="settling steps: one for every size, or one a size (default max(120, N / 5))")
    ap.add_argument("--max-layers", type=int, default=None,
                    help="the pile scenario's max_layers: wide piles at most this many layers high")
    ap.add_argument("--solver-options", default="{}", help="box-qp options as JSON")
    ap.add_argument("--falling", action="store_true", help="time steps 13-40 of the falling pile instead")
    ap.add_argument("--state-dir", type=Path, default=None, help="settled states read from / saved to here")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    opts = json.loads(args.solver_options)
    settles = [None] * len(args.sizes) if args.settle is None else args.settle
    if len(settles) == 1:
        settles = settles * len(args.sizes)
    if len(settles) != len(args.sizes):
        ap.error("--settle: one value, or one for each of --sizes")
    rows = []
    for n, settle_n in zip(args.sizes, settles):
        if args.falling:
            row = {"boxes": n, "falling": True, **measure(falling(n, opts, args.max_layers), 28),
                   "load": os.getloadavg()[0]}
        else:
            sim, settle, speed, deep = settled(n, settle_n, opts, args.state_dir, args.max_layers)
            row = {"boxes": n, "settle_steps": settle, "max_speed": speed, "settle_penetration_mm": 1e3 * deep,
                   **measure(sim, args.steps), "load": os.getloadavg()[0]}
        rows.append(row)
        print(json.dumps(row), flush=True)
    sizes = [r["boxes"] for r in rows]
    out = {"rows": rows, "solver_options": opts, "max_layers": args.max_layers}
    if len(rows) > 1:
        for key in ("cpu_ms_mean", "cpu_ms_median"):
            t = [r[key] for r in rows]
            out[f"exponent_{key}"] = exponent(sizes, t)
            out[f"pairwise_{key}"] = [exponent(sizes[k:k + 2], t[k:k + 2]) for k in range(len(rows) - 1)]
        print(json.dumps({k: v for k, v in out.items() if k != "rows"}), flush=True)
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        tmp = args.json.with_suffix(".tmp")
        tmp.write_text(json.dumps(out, indent=1))
        os.replace(tmp, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())

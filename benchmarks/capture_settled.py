"""Settle a ``pile`` of N boxes (seed 0, the defaults of ``bench_scaling.py``) with checkpoints, resumable:
every ``--every`` steps the state is saved in ``bench_scaling.py``'s saved-state format
(``DIR/pile{N}_seed0_settle{k}.pkl``: ``(Simulator.data, deepest contact so far)``), so that any checkpoint
is a settled-state file that ``bench_scaling.py --state-dir DIR --settle k`` reads, and a run cut off resumes
from its latest checkpoint. Each step's progress (steps done, boxes moving faster than ``--moving`` m/s, the
largest speed, CPU and wall s a step) goes to ``DIR/pile{N}.log``. ``--max-layers L``: the pile scenario's
``max_layers`` (a wide pile at most L layers high), its files named ``pile{N}_layers{L}_seed0_settle{k}.pkl``
and ``pile{N}_layers{L}.log``; ``--rest-speed V``: stop at the first step whose largest box speed is below V
m/s, that step's state saved.

    OPENBLAS_NUM_THREADS=1 CONTACTLAB_JIT=compile .venv/bin/python benchmarks/capture_settled.py \\
        --sizes 500 1000 --state-dir states
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import pickle
import re
import sys
import time
from pathlib import Path

import numpy as np

from contactlab.scenarios import pile
from contactlab.sim import Simulator

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_scaling import default_settle, pile_name  # noqa: E402  (the saved-state names: one definition)


def save(path: Path, data, deepest: float) -> None:
    with open(path.with_suffix(".tmp"), "wb") as f:
        pickle.dump((data, deepest), f)
    os.replace(path.with_suffix(".tmp"), path)


def capture(count: int, target: int, every: int, state_dir: Path, moving: float,
            max_layers: int | None = None, rest_speed: float | None = None) -> None:
    name = pile_name(count, max_layers)
    log = open(state_dir / f"{name}.log", "a", buffering=1)
    sim = Simulator(pile.build(count=count, seed=0, max_layers=max_layers))
    done = sorted(int(m.group(1)) for p in state_dir.glob(f"{name}_seed0_settle*.pkl")
                  if (m := re.fullmatch(rf"{name}_seed0_settle(\d+)\.pkl", p.name)))
    deepest = 0.0
    if done:
        sim.step()  # compile first, as bench_scaling.settled does
        with open(state_dir / f"{name}_seed0_settle{done[-1]}.pkl", "rb") as f:
            data, deepest = pickle.load(f)
        for fld in dataclasses.fields(data):
            setattr(sim.data, fld.name, getattr(data, fld.name))
        print(f"# resumed at step {sim.data.steps}", file=log)
    while sim.data.steps < target:
        c, w = time.process_time(), time.time()
        rec = sim.step()
        c, w = time.process_time() - c, time.time() - w
        deepest = max(deepest, float(rec.max_penetration))
        speed = np.linalg.norm(sim.data.linear_velocity.reshape(-1, 3), axis=1)
        print(f"{count} step {sim.data.steps} moving {int((speed > moving).sum())} max_speed {speed.max():.4g} "
              f"cpu_s {c:.3f} wall_s {w:.3f} certified {bool(rec.success or rec.rescued)} "
              f"iters {rec.iterations} contacts {rec.contacts} load {os.getloadavg()[0]:.2f}", file=log)
        at_rest = rest_speed is not None and speed.max() < rest_speed
        if sim.data.steps % every == 0 or sim.data.steps == target or at_rest:
            save(state_dir / f"{name}_seed0_settle{sim.data.steps}.pkl", sim.data, deepest)
        if at_rest:
            print(f"# at rest after step {sim.data.steps}: largest speed {speed.max():.4g} < {rest_speed} m/s",
                  file=log)
            break
    log.close()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", required=True)
    ap.add_argument("--settle", type=int, default=None, help="steps (default max(120, N / 5), as bench_scaling)")
    ap.add_argument("--every", type=int, default=100, help="checkpoint every this many steps")
    ap.add_argument("--moving", type=float, default=0.01, help="a box moving: speed above this (m/s)")
    ap.add_argument("--state-dir", type=Path, required=True)
    ap.add_argument("--max-layers", type=int, default=None,
                    help="the pile scenario's max_layers (a wide pile of bounded height; default: towers of 25 a layer)")
    ap.add_argument("--rest-speed", type=float, default=None,
                    help="stop (and save that step's state) once the largest box speed is below this (m/s)")
    args = ap.parse_args(argv)
    args.state_dir.mkdir(parents=True, exist_ok=True)
    for n in args.sizes:
        capture(n, args.settle if args.settle is not None else default_settle(n, args.max_layers), args.every,
                args.state_dir, args.moving, args.max_layers, args.rest_speed)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Where a robot's step goes, and how fast the CLI runs it (issue 37 item 3; docs/benchmarks-robots.md).

    .venv/bin/python benchmarks/bench_robots.py [--robots quadruped solo12 barrett-grasp] [--steps 1000]
        [--warmup 30] [--cli] [--cli-duration 20.2] [--cli-base 0.2] [--json FILE]

``stages`` (always): a :class:`~contactlab.sim.Simulator` on each robot's scene as ``contactlab
simulate`` builds it (the legged robots with ``--model no-slip``, the grasp with the CLI's default),
its controllers attached; after ``--warmup`` steps, ``--steps`` steps with CPU time
(``time.process_time``) summed around each stage of ``Simulator.step`` (sim/stages.py: detect,
build, solve, certify, integrate, record: the methods of the stages the simulator planned, a model's
compiled stages or the general ones) and around the calls inside them named in ``PARTS``
(``build_system``, the joint and contact projections, the no-slip model's compiled step) and the
contact model's ``build`` and ``recover``; the controllers and the plausibility check (``step_fault``) run around the stages.
``cli`` (``--cli``): ``contactlab simulate ROBOT --json -q`` run for ``--cli-base`` seconds (0.2)
and for ``--cli-duration`` seconds (20.2), with each robot's scene parameters (``PARAMS``: the
grasp with rubber links); the extra simulated time over the extra CPU time of the
child (user + system) is the rate once started, the start-up (imports, numba caches, the scene)
left out (a base of one step would leave the loading of the kernels first used later to the long
run). Beside it, ``loop`` (with ``--cli``): the loop ``contactlab simulate`` runs
(``commands/simulate.py``: ``Simulator.run`` in chunks of ``CHUNK`` steps into one Trajectory, the robot's
controllers attached), ``--loop-steps`` steps after ``--warmup`` * 10 untimed ones, in this process: the same
rate without the two processes' start-up, whose CPU varies by tenths of a second between runs.

CPU time, not wall time: the development machine is shared (say the load beside any figure); BLAS
runs on one thread as in the CLI. Ratios mean something only when measured side by side in one run
(run two trees at once with their own ``PYTHONPATH``).
"""
from __future__ import annotations

import os
os.environ.setdefault("CONTACTLAB_JIT", "compile")   # time compiled kernels, not interpreted first calls
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import importlib  # noqa: E402
import json  # noqa: E402
import resource  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from collections import Counter  # noqa: E402
from pathlib import Path  # noqa: E402

#: the model each robot runs with (None: the CLI's default)
MODELS = {"quadruped": "no-slip", "solo12": "no-slip", "barrett-grasp": None}
#: scene parameters (``--set``) each robot runs with: the grasp with rubber links, which lift the glass
#: (issue 37's "Barrett grasp (rubber)"; bench_engines.py's scene)
PARAMS = {"barrett-grasp": {"material": "rubber"}}
STAGES = ("detect", "build", "solve", "certify", "integrate", "record")
#: (module, attribute path) of the calls timed inside the stages, by the label reported
PARTS = {"build_system": ("contactlab.sim.stages", "build_system"),
         "project_joints": ("contactlab.sim.simulator", "Simulator.project_joints"),
         "project_contacts": ("contactlab.sim.simulator", "Simulator.project_contacts"),
         "step_fault": ("contactlab.sim.faults", "step_fault"),
         "noslip_step (compiled)": ("contactlab.sim.noslip_kernels", "noslip_step"),
         "tree_noslip_step (compiled)": ("contactlab.sim.tree_kernels", "tree_noslip_step")}


def _wrap(owner, name: str, key: str, acc: Counter) -> None:
    fn = getattr(owner, name)

    def timed(*args, **kwargs):
        t0 = time.process_time()
        try:
            return fn(*args, **kwargs)
        finally:
            acc[key] += time.process_time() - t0
    setattr(owner, name, timed)


def stages(robot: str, steps: int, warmup: int) -> dict:
    """CPU seconds per step of each stage and part (module docstring) on ``robot``."""
    from contactlab.scenarios import make_scene
    from contactlab.sim import Simulator
    from contactlab.sim import stages as S
    sc = make_scene(robot, **PARAMS.get(robot, {}))
    sim = Simulator(sc, MODELS[robot], None, controllers=getattr(sc, "controllers", ()))
    for _ in range(warmup):
        sim.step()
    acc: Counter = Counter()
    planned = type(sim.stages)      # the planned stages (a model's compiled ones, or the general)
    for stage in STAGES:
        _wrap(planned, stage, stage, acc)
    for key, (module, path) in PARTS.items():
        try:
            owner = importlib.import_module(module)
        except ImportError:     # an older tree without that module (run side by side with main)
            continue
        *outer, name = path.split(".")
        for attr in outer:
            owner = getattr(owner, attr)
        _wrap(owner, name, key, acc)
    model = sim.contact_model
    for name, key in (("build", "model build"), ("recover", "model recover")):
        _wrap(model, name, key, acc)
    sim.controllers = [_timed_controller(fn, acc) for fn in sim.controllers]
    t0 = time.process_time()
    for _ in range(steps):
        sim.step()
    total = time.process_time() - t0
    per = {k: v / steps for k, v in acc.items()}
    return {"robot": robot, "model": sim.model_name, "method": sim.method, "stages": planned.__name__, "dt": sim.h,
            "steps": steps, "cpu_per_step": total / steps,
            "x_real_time": sim.h * steps / total, "parts": per}


#: steps a ``Simulator.run`` call takes in :func:`loop` (``commands/simulate.py`` runs 200 at a time)
CHUNK = 200


def loop(robot: str, steps: int, warmup: int) -> dict:
    """CPU seconds per step of the CLI's own loop on ``robot`` (module docstring), in this process."""
    from contactlab.scenarios import make_scene
    from contactlab.sim import Simulator
    from contactlab.sim.recorder import Trajectory
    sc = make_scene(robot, **PARAMS.get(robot, {}))
    sim = Simulator(sc, MODELS[robot], None, controllers=list(getattr(sc, "controllers", ())))
    traj = Trajectory(list(sim.model.names))
    sim.run(10 * warmup * sim.h, trajectory=traj)
    chunks = max(1, steps // CHUNK)
    t0 = time.process_time()
    for _ in range(chunks):
        sim.run(CHUNK * sim.h, trajectory=traj)
    per = (time.process_time() - t0) / (chunks * CHUNK)
    return {"robot": robot, "steps": chunks * CHUNK, "cpu_per_step": per, "x_real_time": sim.h / per}


def _timed_controller(fn, acc: Counter):
    def timed(sim):
        t0 = time.process_time()
        try:
            fn(sim)
        finally:
            acc["controllers"] += time.process_time() - t0
    return timed


def _child_cpu(args: list[str]) -> float:
    """CPU seconds (user + system) of ``contactlab simulate`` with ``args``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    exe = Path(sys.executable).with_name("contactlab")       # the console script beside this interpreter
    subprocess.run([str(exe), "simulate", *args, "--json", "-q"], check=True, stdout=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def cli(robot: str, duration: float, base: float) -> dict:
    """The CLI's rate once started: extra simulated seconds per extra CPU second (module docstring)."""
    extra = ["--model", MODELS[robot]] if MODELS[robot] else []
    for key, value in PARAMS.get(robot, {}).items():
        extra += ["--set", f"{key}={value}"]
    short = _child_cpu([robot, "--duration", repr(base), *extra])
    long = _child_cpu([robot, "--duration", repr(duration), *extra])
    # The start-up (imports, cache loads) varies by a few tenths of a second between the two processes; a
    # difference it swamps gives no rate (None), not a figure of billions.
    rate = (duration - base) / (long - short) if long - short > 0.1 * long else None
    return {"robot": robot, "duration": duration, "base": base, "base_cpu_s": short, "run_cpu_s": long,
            "x_real_time": rate}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--robots", nargs="*", default=list(MODELS), choices=list(MODELS))
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--warmup", type=int, default=30)
    ap.add_argument("--cli", action="store_true", help="also time contactlab simulate (start-up excluded)")
    ap.add_argument("--cli-duration", type=float, default=20.2)
    ap.add_argument("--cli-base", type=float, default=0.2)
    ap.add_argument("--loop-steps", type=int, default=5000, help="steps of the in-process CLI loop (with --cli)")
    ap.add_argument("--json", default=None, help="write the figures here")
    a = ap.parse_args(argv)
    out = {"load": os.getloadavg(), "stages": [], "cli": [], "loop": []}
    for robot in a.robots:
        lp = loop(robot, a.loop_steps, a.warmup) if a.cli else None   # first: stages() wraps classes
        r = stages(robot, a.steps, a.warmup)
        out["stages"].append(r)
        print(f"{robot} ({r['model']}/{r['method']}, {r['stages']}): {r['cpu_per_step'] * 1e6:.0f} us CPU/step, "
              f"{r['x_real_time']:.2f}x real time")
        for key, sec in sorted(r["parts"].items(), key=lambda kv: -kv[1]):
            print(f"    {key:28s} {sec * 1e6:8.1f} us")
        if a.cli:
            c = cli(robot, a.cli_duration, a.cli_base)
            out["cli"].append(c)
            rate = (f"{c['x_real_time']:.2f}x real time" if c["x_real_time"] is not None
                    else "the start-up's spread swamps the run: raise --cli-duration")
            print(f"    CLI: {c['base_cpu_s']:.2f} s CPU for {c['base']} s, {c['run_cpu_s']:.2f} s for "
                  f"{c['duration']} s: {rate}")
            out["loop"].append(lp)
            print(f"    CLI loop in process: {lp['cpu_per_step'] * 1e6:.1f} us CPU/step over {lp['steps']} steps, "
                  f"{lp['x_real_time']:.2f}x real time")
    print(f"load average at the end: {' / '.join(f'{x:.1f}' for x in os.getloadavg())}")
    if a.json:
        from contactlab.files import atomic_write
        atomic_write(a.json, lambda tmp: Path(tmp).write_text(json.dumps(out, indent=1)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

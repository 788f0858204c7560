"""Compile contactlab's numba kernels ahead of use, on every core: ``contactlab warmup``.

numba compiles a kernel the first time it is called and caches the machine code beside its source
(``cache=True``, kernels/_jit.py), so a new installation pays the compilation on its first solve or
simulation, one kernel after another on one core. :func:`warm_up` runs each solver method on small
problems of every matrix class it claims, and each contact model and scene family for a few steps,
as independent tasks spread over worker processes: the caches they write serve every later
process. The tasks call the public API only (what compiles is what users' calls need)."""
from __future__ import annotations

import os
import time
from dataclasses import dataclass

import numpy as np

from .errors import ParamError
from .quiet import loky_worker_replacements_quiet


@dataclass(frozen=True)
class Task:
    """One unit of compilation: a solver method on its problem classes, or a model on a scene."""
    kind: str              # "solve" or "simulate"
    name: str              # method, or "model/scene"

    @property
    def label(self) -> str:
        return f"{self.kind} {self.name}"


def _problems(method: str) -> list:
    """Small problems of every class ``method`` accepts (certified solves compile the same kernels
    as large ones: numba specialises on types, not sizes)."""
    import contactlab as cl
    from .problems import generators as gen
    from .models.quasistatic import build_ucp
    from .scenarios.quasistatic_data import data_set

    rng = np.random.default_rng(0)
    spec = cl.available_solvers()[method]
    names = {p.__name__ for p in spec.problems}
    out = []
    if "LCP" in names:
        out += [gen.random_spd(4, rng)]
        classes = set(spec.classes)
        if "psd" in classes:
            out.append(gen.random_psd(4, rng, rank=2))
        if "p" in classes:
            out.append(gen.random_p_matrix(4, rng))
        if "friction" in classes:
            out.append(gen.friction_pyramid_lcp(2, rng, d=4))
        if "factored" in classes:
            out.append(gen.box_stack_factored(2, rng))
    if "FactoredLCP" in names and method not in ("dantzig", "lemke"):
        out.append(gen.box_stack_factored(2, rng))
    if "BoxedLCP" in names or "boxed" in spec.classes:
        M = gen.spd_matrix(6, rng)
        out.append(cl.BoxedLCP(M, rng.standard_normal(6), np.r_[np.zeros(3), -np.ones(3)],
                               np.r_[np.full(3, np.inf), np.ones(3)]))
    if "boxed-coupled" in spec.classes or method in ("pgs-sm", "box-qp"):
        M = gen.spd_matrix(6, rng)
        findex = np.array([-1, 0, 0, -1, 3, 3])
        mu = np.array([0.0, 0.5, 0.5, 0.0, 0.5, 0.5])
        out.append(cl.BoxedLCP(M, rng.standard_normal(6), np.zeros(6), np.full(6, np.inf), findex=findex, mu=mu))
    if "FrictionContact" in names:
        out.append(cl.FrictionContact(np.eye(3) * 2.0, [-1.0, 0.3, 0.1], [0.5]))
    if "UCP" in names:
        out.append(build_ucp(data_set(1)))
    return out


#: (model, method or None, scene, parameters, steps): the model families and the scenes whose
#: kernels (boxes, joints, limits, motors, URDF robots) differ
SIMULATIONS = (
    ("stewart-trinkle", None, "stack", {"count": 2}, 3),
    ("box-friction", "box-qp", "stack", {"count": 2}, 3),
    ("box-friction", "box-qp", "pile", {"count": 4}, 3),
    ("box-friction", "box-qp", "stack", {"count": 100}, 2),    # the rows' sparse Delassus frames (mechanics/delassus.py)
    ("box-friction", "pgs", "stack", {"count": 2}, 3),
    ("frictionless", None, "stack", {"count": 2}, 3),
    ("no-slip", None, "stack", {"count": 2}, 3),
    ("viscous", None, "stack", {"count": 2}, 3),
    ("trinkle-pang", None, "stack", {"count": 2}, 3),
    ("stewart-trinkle", None, "pendulum-chain", {}, 3),
    ("no-slip", None, "quadruped", {}, 3),
    ("no-slip", None, "box-gripper", {}, 3),     # force-limited motors: their active set's call (sim/noslip_kernels.py)
    ("stewart-trinkle", "pgs-sm", "barrett-grasp", {}, 3),
    ("stewart-trinkle", None, "barrett-grasp", {"material": "rubber"}, 3),     # a first ``simulate barrett-grasp``
    ("frictionless", "dantzig", "column-collapse", {}, 3),
)
#: the robots also run with their scene's controllers through ``Simulator.run`` (label suffix
#: ``+controllers``): the fused robot step's controller kernel and the rollout that links the step's
#: kernels into one (sim/robot_rollout.py: one compile serves every legged robot of the scenes)
ROBOT_RUNS = (("no-slip", None, "quadruped", {}, 3),)
#: the simulations run with motionless-set reuse (loomis-balkcom §IV: its bookkeeping kernels, kernels/reuse.py)
REUSE = {("frictionless", "dantzig", "column-collapse")}


#: a scene of more bodies than this takes its count into its task's name (``.../stack@100``): its sizes
#: reach kernels the small scenes do not (sparse rows where the small ones are dense)
_NAMED_COUNT = 10


def _name(model: str, method: str | None, scene: str, params: dict) -> str:
    """A simulation task's name: ``model/method/scene``, ``@count`` for a large scene."""
    count = params.get("count", 0)
    return f"{model}/{method or 'default'}/{scene}" + (f"@{count}" if count > _NAMED_COUNT else "")


def tasks(kinds=("solve", "simulate")) -> list[Task]:
    """Every warm-up task, the slowest kinds first (simulations compile the most)."""
    import contactlab as cl
    out = []
    if "simulate" in kinds:
        out += [Task("simulate", _name(*entry[:4])) for entry in SIMULATIONS]
        out += [Task("simulate", _name(*entry[:4]) + "+controllers") for entry in ROBOT_RUNS]
    if "solve" in kinds:
        out += [Task("solve", name) for name in sorted(cl.available_solvers()) if name != "auto"]
    return out


def run_task(task: Task) -> tuple[str, float, str | None]:
    """Run one task in this process; (label, seconds, the error that stopped it or None)."""
    from .kernels._jit import compile_always
    t0 = time.perf_counter()
    try:
        with compile_always():      # compile now (not the interpreted first calls of kernels/_jit.py)
            _run(task)
    except Exception as exc:        # reported per task: one failure does not stop the others
        return task.label, time.perf_counter() - t0, f"{type(exc).__name__}: {exc}"
    return task.label, time.perf_counter() - t0, None


def _run(task: Task) -> None:
    import contactlab as cl
    if task.kind == "solve":
        for problem in _problems(task.name):
            cl.solve(problem, method=task.name)
    else:
        from .scenarios import make_scene
        from .sim import Simulator
        name, controlled, _ = task.name.partition("+")
        model, method, scene, params, steps = next(e for e in (ROBOT_RUNS if controlled else SIMULATIONS)
                                                   if _name(*e[:4]) == name)
        sc = make_scene(scene, **params)
        sim = Simulator(sc, model, method, reuse="motionless" if (model, method, scene) in REUSE else None,
                        controllers=list(getattr(sc, "controllers", ())) if controlled else None)
        if controlled:
            sim.run(steps * sim.h)
            return
        for _ in range(steps):
            sim.step()


def warm_up(jobs: int | None = None, kinds=("solve", "simulate"), progress=None) -> list[tuple[str, float, str | None]]:
    """Run every task on ``jobs`` worker processes (default: the cores this process may use);
    ``progress(label, seconds, done, total)`` after each. Returns (label, seconds, error or None)
    per task."""
    from joblib import Parallel, delayed
    todo = tasks(kinds)
    if jobs is None:
        jobs = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    if not (isinstance(jobs, int) and jobs >= 1):
        raise ParamError(f"jobs must be a positive whole number of worker processes, got {jobs!r}")
    results = []
    runner = Parallel(n_jobs=jobs, backend="loky", return_as="generator_unordered")
    with loky_worker_replacements_quiet():
        for label, seconds, error in runner(delayed(run_task)(t) for t in todo):
            results.append((label, seconds, error))
            if progress is not None:
                progress(label, seconds, len(results), len(todo))
    return results

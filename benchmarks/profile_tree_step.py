"""Where the compiled no-slip step in joint coordinates spends its time (issue 37; docs/benchmarks-robots.md, seventh session).

    .venv/bin/python benchmarks/profile_tree_step.py [--robots quadruped solo12] [--steps 300]
        [--calls 20] [--reps 200]

For each robot, a :class:`~contactlab.sim.Simulator` on the scene as ``contactlab simulate ROBOT
--model no-slip`` builds it, with its controllers, runs ``--steps`` steps (mid-trot), then the
arguments of the next ``--calls`` calls of :func:`contactlab.sim.tree_kernels.tree_noslip_step` are
recorded. On those states (restored before each call: the call writes the state):

* ``python``: CPU time of the call from Python (numba's dispatch: unboxing 34 arguments, boxing the
  26-entry result), ``compiled``: CPU time of the call from a compiled loop (no dispatch);
* the statements of the call's body, each timed in place: a copy of ``tree_noslip_step``'s source
  with a clock read (kernels/clock.py, the direct ``clock_gettime``) after every top-level statement,
  compiled apart (wall time inside the call, best of three passes; the clock reads add a little).

CPU and wall time on a shared machine: say the load beside any figure; compare trees side by side
(``PYTHONPATH``). BLAS on one thread, kernels compiled (``CONTACTLAB_JIT=compile``).
"""
from __future__ import annotations

import os
os.environ.setdefault("CONTACTLAB_JIT", "compile")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import ast  # noqa: E402
import copy  # noqa: E402
import inspect  # noqa: E402
import textwrap  # noqa: E402
import time  # noqa: E402

import numba  # noqa: E402
import numpy as np  # noqa: E402

#: the arguments tree_noslip_step writes (quaternion, position, linear and angular velocity, f)
WRITTEN = (11, 12, 13, 14, 15)


def record(robot: str, steps: int, calls: int) -> list[tuple]:
    """The arguments of ``calls`` calls of tree_noslip_step after ``steps`` steps of ``robot``."""
    from contactlab.scenarios import make_scene
    from contactlab.sim import Simulator
    from contactlab.sim import tree_kernels as TK
    sc = make_scene(robot)
    sim = Simulator(sc, "no-slip", None, controllers=getattr(sc, "controllers", ()))
    for _ in range(steps):
        sim.step()
    got, call = [], TK.tree_noslip_step

    def grab(*args):
        got.append(copy.deepcopy(args))
        return call(*args)
    TK.tree_noslip_step = grab
    try:
        for _ in range(calls):
            sim.step()
    finally:
        TK.tree_noslip_step = call
    if not got:
        raise SystemExit(f"{robot}: the step in joint coordinates was not planned")
    return got


def instrumented():
    """tree_noslip_step's source with ``TT[i] += clock`` after each top-level statement i, compiled in
    the module's namespace; returns (kernel, labels)."""
    from contactlab.kernels.clock import perf_counter
    from contactlab.sim import tree_kernels as TK
    src = textwrap.dedent(inspect.getsource(TK.tree_noslip_step.py_func))
    fn = ast.parse(src).body[0]
    fn.decorator_list = []
    fn.args.args.append(ast.arg(arg="TT"))
    body, labels = [], []
    lines = src.splitlines()
    for st in fn.body:
        body.append(st)
        if isinstance(st, (ast.Return, ast.Expr)) and isinstance(getattr(st, "value", None), ast.Constant):
            continue        # the docstring
        labels.append(lines[st.lineno - 1].strip()[:60])
        tick = ast.parse(f"_u = perf_counter(); TT[{len(labels) - 1}] += _u - _t; _t = _u").body
        body.extend(tick)
    fn.body = ast.parse("_t = perf_counter()").body + body
    ns = dict(vars(TK))
    ns["perf_counter"] = perf_counter
    exec(compile(ast.fix_missing_locations(ast.Module([fn], [])), "<instrumented>", "exec"), ns)
    return numba.njit(ns[fn.name]), labels


def profile(robot: str, steps: int, calls: int, reps: int) -> None:
    from contactlab.sim import tree_kernels as TK
    got = record(robot, steps, calls)
    kernel, labels = instrumented()
    call = TK.tree_noslip_step

    @numba.njit
    def compiled(args, saved, n):
        for _ in range(n):
            args[11][:] = saved[0]
            args[12][:] = saved[1]
            args[13][:] = saved[2]
            args[14][:] = saved[3]
            args[15][:] = saved[4]
            call(*args)

    @numba.njit
    def timed(args, saved, n, TT):
        for _ in range(n):
            args[11][:] = saved[0]
            args[12][:] = saved[1]
            args[13][:] = saved[2]
            args[14][:] = saved[3]
            args[15][:] = saved[4]
            kernel(*args, TT)

    py = comp = 0.0
    best = None
    for args in got:
        args = tuple(args)
        saved = tuple(args[i].copy() for i in WRITTEN)
        compiled(args, saved, 1)
        t0 = time.process_time()
        for _ in range(reps):
            for i, s in zip(WRITTEN, saved):
                args[i][:] = s
            call(*args)
        py += time.process_time() - t0
        t0 = time.process_time()
        for _ in range(reps):
            for i, s in zip(WRITTEN, saved):
                args[i][:] = s
        py -= time.process_time() - t0      # the restore, timed apart
        t0 = time.process_time()
        compiled(args, saved, reps)
        comp += time.process_time() - t0
    for _ in range(3):
        TT = np.zeros(len(labels))
        for args in got:
            args = tuple(args)
            saved = tuple(args[i].copy() for i in WRITTEN)
            timed(args, saved, reps, TT)
        best = TT if best is None else np.minimum(best, TT)
    n = reps * len(got)
    nc = got[0][17].size // 5
    print(f"{robot}: {n} calls, {nc} contacts at the first; CPU per call: python {py / n * 1e6:.1f} us, "
          f"compiled loop {comp / n * 1e6:.1f} us; load {os.getloadavg()[0]:.2f}")
    for label, t in zip(labels, best):
        if t / n * 1e6 >= 0.05:
            print(f"  {t / n * 1e6:6.2f} us  {label}")
    print(f"  {best.sum() / n * 1e6:6.2f} us  (sum, wall)")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--robots", nargs="+", default=["quadruped", "solo12"])
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--calls", type=int, default=20)
    ap.add_argument("--reps", type=int, default=200)
    a = ap.parse_args(argv)
    for robot in a.robots:
        profile(robot, a.steps, a.calls, a.reps)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

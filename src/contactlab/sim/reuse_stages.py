"""The solve and certify stages of a motionless-reuse run with Cottle-Dantzig (loomis-balkcom §IV,
``Simulator(..., "dantzig", reuse="motionless")``): the step's LCP straight to Dantzig's compiled
call, nothing else in the timed window.

The general stages (:class:`contactlab.sim.stages.Stages`) reach the same call through
``MotionlessReuse.solve`` (sim/reuse.py) and then certify the answer in Python (the island test,
the reuse's checks, ``Solution.success``, the rescue test). Each is a few microseconds, and inside a
step, where the rest of the step has evicted the caches, those microseconds are a fixed cost that a
warm-started solve pays as fully as a cold one: on the paper's seven-block column the warm start
saves ~30 us of ~80 per solve, so every fixed microsecond lowers the saving
(docs/computation-reuse.md). Here the solve stage makes one compiled call
(``solvers/pivoting.py DantzigWork.into``, kernels/pivoting.py ``dantzig_into``: numba's machine
code called without its dispatcher, z, w and the active set written into two arrays allocated
here, numbers returned) and builds the Solution from its result after it (``lean_solution``: the
one :meth:`~contactlab.solvers.pivoting.DantzigWork.direct` returns, bit for bit); the LCP time
(``StepRecord.solve_time``) is that allocation and call, as the compiled stages of
sim/box_stages.py time theirs. An answer the call returns is SOLVED and certified by the kernel
with solve()'s threshold, so certify has nothing left to test. Anything else (a problem or options
the call does not take, an answer it leaves to ``solve()``) goes through the general stages,
timed as they time it (the declined call's seconds included).
"""
from __future__ import annotations

import time

import numpy as np

from ..kernels import pivoting as K
from ..solvers.pivoting import lean_solution
from .stages import Stages, StepState, StepWork

#: StepWork.call of a step whose answer came from the lean call (certified by the kernel)
_LEAN = ("lean",)


class ReuseStages(Stages):
    """:class:`~contactlab.sim.stages.Stages` with the lean solve and certify of a motionless-reuse
    run whose method is dantzig with ``refine`` on (``MotionlessReuse.lean`` set); the other stages
    are the general ones (the warm start is the motionless set's, built in ``assemble``)."""

    @classmethod
    def plan(cls, sim, state: StepState):
        reuse = sim.reuse
        return cls(sim, state) if reuse is not None and getattr(reuse, "lean", None) is not None else None

    def solve(self, w: StepWork) -> None:
        problem, kwargs = w.problem, w.kwargs
        ws = kwargs.get("warm_start")
        reuse = self.sim.reuse
        if len(kwargs) - (ws is not None) != len(self.options_seen) or not reuse.lean_takes(problem, ws):
            return super().solve(w)
        max_pivots, tol = reuse.lean
        zw = reuse.cold if ws is None else ws
        M, q, n, work = problem.M, problem.q, problem.n, reuse.work
        w.t0 = time.perf_counter()
        if n > work.size:
            work.arrays(n)
        zwo, act = np.empty(2 * n), np.empty(n, dtype=np.int64)      # z and w, the active set
        out = work.into(M, q, zw, max_pivots, tol, work.f, work.i, work.b, zwo, act)
        w.t_solved = time.perf_counter()
        if work.into is K.dantzig_into:          # machine code for these types from now on
            work.bind(M, q, zw, max_pivots, tol, zwo, act)
        w.sol = sol = lean_solution(out, zwo, act, zw.shape[0], w.t_solved - w.t0)
        if sol is None:           # left to solve(): the general stages' solve and certify
            w.sol = reuse.solve(problem, kwargs)
            return
        w.call = _LEAN

    def certify(self, w: StepWork) -> None:
        if w.call is not _LEAN:
            return super().certify(w)
        w.primary_ok, w.rescued = True, False     # SOLVED and certified in the call (DantzigWork.lean)
        w.t_solve = w.t_solved - w.t0


#: the reuse stages, tried after the model-specific ones (sim/simulator.py ``plan_stages``)
REUSE_STAGES = (ReuseStages,)

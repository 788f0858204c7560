"""``mode-enumeration``: contact-mode enumeration in the spirit of Trinkle & Zeng (1994)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...errors import ParamError
from ...problems.ucp import UCP
from ...solution import Solution, Status
from ..registry import register
from ...blas import single_thread_blas
from .common import LPFailure, no_solution, setup_polyhedra


@dataclass(frozen=True)
class EnumerationOptions:
    """prune: test partial mode assignments and cut infeasible subtrees (else test every complete
    assignment, the classical exhaustive scheme); find_all: keep going after the first solution;
    max_candidates: give up (MAX_ITERATIONS) after this many candidate tests."""

    prune: bool = True
    find_all: bool = False
    max_candidates: int = 1_000_000

    def __post_init__(self):
        if self.max_candidates < 1:
            raise ParamError("max_candidates must be >= 1")


def mode_masks(problem: UCP):
    """Per group, the list of (x-zero indices, y-zero indices) of each mode."""
    if problem.contacts:
        nc = problem.contacts
        groups = []
        for i in range(nc):
            vn, vp, vm = i, nc + i, 2 * nc + i
            groups.append([((vn, vp, vm), ()),          # rolling: v = 0
                           ((vn, vm), (vp,)),           # sliding+: v_n = v- = 0, s+ = 0
                           ((vn, vp), (vm,)),           # sliding-: v_n = v+ = 0, s- = 0
                           ((), (vn, vp, vm))])         # breaking: c_n = s+ = s- = 0
        return groups, ("rolling", "sliding+", "sliding-", "breaking")
    return [[((i,), ()), ((), (i,))] for i in range(problem.m)], ("x=0", "y=0")


@register("mode-enumeration", problems=(UCP,), options=EnumerationOptions, convert=False,
          description="contact-mode enumeration (Trinkle-Zeng style), 4 modes per contact, LP tests",
          guarantees="decides by exhaustion (SOLVED or NO_SOLUTION); exponential in the number of contacts; "
                     "MAX_ITERATIONS past max_candidates")
@single_thread_blas
def mode_enumeration(problem: UCP, opts: EnumerationOptions, warm_start=None) -> Solution:
    """Contact-mode enumeration (Trinkle & Zeng 1994 style) on the uncoupled polyhedra.

    With ``problem.contacts``: per contact rolling (v = 0), sliding+ (v_n = v- = 0, s+ = 0), sliding-
    (v_n = v+ = 0, s- = 0) or breaking (c_n = s+ = s- = 0); these four cover every complementary
    pattern. Without it: per index x_i = 0 or y_i = 0. A candidate is an LP feasibility test on X and/or
    Y with those zeros. SOLVED (first or, with ``find_all``, every feasible assignment in
    ``info['modes']``), NO_SOLUTION when every assignment is infeasible, MAX_ITERATIONS past the budget.
    """
    counter = {"lps": 0, "simplex_iterations": 0}
    setup = setup_polyhedra(problem, counter)
    if setup is None:
        return no_solution(problem, Status.NO_SOLUTION, reason="X or Y is empty (inconsistent equations)",
                            candidates=0, lps=0, solutions=0)
    _, _, lpx, lpy = setup
    groups, names = mode_masks(problem)
    G, m = len(groups), problem.m
    info = {"candidates": 0, "complete_candidates_total": float(len(names)) ** G, "solutions": 0,
            "mode_names": list(names)}
    zx, zy = np.zeros(m, dtype=bool), np.zeros(m, dtype=bool)
    first: list = []
    modes_found: list = []

    def test(check_x: bool, check_y: bool):
        x = y = None
        if check_x:
            x, _ = lpx.solve(zero=zx)
            if x is None:
                return None, None
        if check_y:
            y, _ = lpy.solve(zero=zy)
            if y is None:
                return None, None
        return x, y

    def leaf() -> bool:
        """A complete mode assignment: with pruning both tests already passed on the way down."""
        if opts.prune:
            x, _ = lpx.solve(zero=zx)
            y, _ = lpy.solve(zero=zy)
        else:
            info["candidates"] += 1
            x, y = test(True, True)
        if x is None or y is None:
            return False
        info["solutions"] += 1
        if not first:
            first.append((x, y))
        modes_found.append([names[k] for k in assignment])
        return True

    assignment = [0] * G
    try:
        x_ok, y_ok = test(True, True)
        if x_ok is None or y_ok is None:
            return no_solution(problem, Status.NO_SOLUTION, reason="X or Y is empty (LP)", lps=counter["lps"], **info)

        def dfs(g: int) -> bool:
            if info["candidates"] >= opts.max_candidates:
                raise Budget
            if g == G:
                return leaf() and not opts.find_all
            for k, (xz, yz) in enumerate(groups[g]):
                xz, yz = list(xz), list(yz)
                oldx, oldy = zx[xz].copy(), zy[yz].copy()
                zx[xz] = True
                zy[yz] = True
                assignment[g] = k
                ok = True
                if opts.prune:
                    info["candidates"] += 1
                    x, y = test(True, False) if xz else (0, 0)
                    ok = x is not None
                    if ok and yz:
                        x, y = test(False, True)
                        ok = y is not None
                if ok and dfs(g + 1):
                    return True
                zx[xz] = oldx
                zy[yz] = oldy
            return False

        dfs(0)
    except Budget:
        info["lps"] = counter["lps"]
        if first:
            x, y = first[0]
            return Solution(z=UCP.stack(x, y), w=np.zeros(0), status=Status.SOLVED, iterations=info["candidates"],
                            info={**info, "modes": modes_found[:100], "complete": False})
        return no_solution(problem, Status.MAX_ITERATIONS, reason="max_candidates reached", **info)
    except LPFailure as exc:
        return no_solution(problem, Status.NUMERICAL_FAILURE, reason=f"HiGHS: {exc}", lps=counter["lps"], **info)
    info["lps"] = counter["lps"]
    info["modes"] = modes_found[:100]
    if not first:
        return no_solution(problem, Status.NO_SOLUTION, reason="every contact mode is infeasible", **info)
    x, y = first[0]
    return Solution(z=UCP.stack(x, y), w=np.zeros(0), status=Status.SOLVED, iterations=info["candidates"],
                    pivots=counter["simplex_iterations"], info={**info, "xTy": float(x @ y)})


class Budget(Exception):
    pass

"""``bilinear-lp``: Pang-Trinkle-Lo LP descent on min x'y (section 4, Steps 0-3) with the restart
variant of section 5; a heuristic: SOLVED or NO_SOLUTION_FOUND."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...errors import ParamError
from ...problems.ucp import UCP
from ...solution import Solution, Status
from ..registry import register
from ...blas import single_thread_blas
from .common import LPFailure, no_solution, setup_polyhedra
from .vertices import adjacent_vertices


@dataclass(frozen=True)
class BilinearOptions:
    """tol: stop at x'y <= tol * ||x||_1 ||y||_inf (the paper's 1e-10, scaled by the vertex
    size because HiGHS solves to 1e-9); variant: 'restart'
    (section 5: back to Step 1 after a random adjacent pair) or 'original' (section 4: repeat Step 3);
    max_restarts: random Step-3 moves allowed (the paper stopped after 20); seed: for those moves;
    max_pairs: a hard cap on (x, y) pairs."""

    tol: float = 1e-10
    variant: str = "restart"
    max_restarts: int = 20
    seed: int = 0
    max_pairs: int = 2000

    def __post_init__(self):
        if self.variant not in ("restart", "original"):
            raise ParamError(f"variant must be 'restart' or 'original', got {self.variant!r}")
        if self.tol <= 0 or self.max_restarts < 0 or self.max_pairs < 1:
            raise ParamError("tol must be > 0, max_restarts >= 0 and max_pairs >= 1")


@register("bilinear-lp", problems=(UCP,), options=BilinearOptions, convert=False,
          description="Pang-Trinkle-Lo LP descent on min x'y (Steps 0-3, restart variant)",
          guarantees="heuristic: a SOLVED answer is certified; NO_SOLUTION only when X or Y is empty; "
                     "otherwise failure is NO_SOLUTION_FOUND")
@single_thread_blas
def bilinear_lp(problem: UCP, opts: BilinearOptions, warm_start=None) -> Solution:
    """Pang-Trinkle-Lo section 4 (Steps 0-3) and the section-5 restart variant on min x'y over X x Y.

    SOLVED with a complementary vertex pair; NO_SOLUTION when X or Y is empty; NO_SOLUTION_FOUND after
    ``max_restarts`` random Step-3 moves (reason: cycling when a pair was revisited) or ``max_pairs``.
    """
    counter = {"lps": 0, "simplex_iterations": 0}
    setup = setup_polyhedra(problem, counter)
    if setup is None:
        return no_solution(problem, Status.NO_SOLUTION, reason="X or Y is empty (inconsistent equations)",
                            pairs=0, lps=0)
    (Ax, _), (Ay, _), lpx, lpy = setup
    rng = np.random.default_rng(opts.seed)
    info = {"pairs": 0, "lps": 0, "step3": 0, "restarts": 0, "revisits": 0, "variant": opts.variant}

    def finish(status, x, y, reason=""):
        info["lps"] = counter["lps"]
        info["xTy"] = float(best[0])
        if reason:
            info["reason"] = reason
        z = UCP.stack(x, y) if x is not None else np.full(problem.n, np.nan)
        return Solution(z=z, w=np.zeros(0), status=status, iterations=info["pairs"],
                        pivots=counter["simplex_iterations"], info=info)

    try:
        # Step 0: two LPs with a zero objective
        x, bx = lpx.solve()
        y, by = lpy.solve()
        if x is None or y is None:
            info["lps"] = counter["lps"]
            return no_solution(problem, Status.NO_SOLUTION, reason=f"{'X' if x is None else 'Y'} is empty (LP)",
                                **info)

        def small(x, y):
            # the paper's x'y <= 1e-10, relative to the size of the vertices (HiGHS works to 1e-9)
            return float(x @ y) <= opts.tol * float(x.sum()) * float(np.abs(y).max(initial=0))

        def key(x, y):
            return np.round(x, 8).tobytes() + np.round(y, 8).tobytes()

        obj = float(x @ y)
        best = [obj, x, y]
        visited = {key(x, y)}
        while True:
            if small(x, y):
                return finish(Status.SOLVED, x, y)
            if info["pairs"] >= opts.max_pairs:
                return finish(Status.NO_SOLUTION_FOUND, best[1], best[2], reason="pair limit")
            # Step 1: alternating LPs (14), (15)
            x1, bx1 = lpx.solve(cost=y)
            y1, by1 = lpy.solve(cost=x1)
            info["pairs"] += 1
            obj1 = float(x1 @ y1)
            if obj1 < best[0]:
                best[:] = [obj1, x1, y1]
            k1 = key(x1, y1)
            seen_before = set()
            if k1 in visited:
                info["revisits"] += 1
                seen_before = {k1}
            visited.add(k1)
            # Step 2 (a pair seen before would repeat the same path: treat it as stationary)
            if small(x1, y1) or (obj1 < obj - 1e-12 * max(1.0, obj) and k1 not in seen_before):
                x, y, bx, by, obj = x1, y1, bx1, by1, obj1
                continue
            x, y, bx, by, obj = x1, y1, bx1, by1, obj1   # stationary pair (16)
            # Step 3: adjacent extreme points; pairs already visited are not taken again (no cycling)
            while True:
                info["step3"] += 1
                Ex = np.vstack([x[None, :], adjacent_vertices(Ax, x, bx, 1e-10)])
                Ey = np.vstack([y[None, :], adjacent_vertices(Ay, y, by, 1e-10)])
                prod = Ex @ Ey.T
                prod[0, 0] = np.inf
                order = np.argsort(prod, axis=None)
                moved = False
                for flat in order:
                    i, j = np.unravel_index(int(flat), prod.shape)
                    if not prod[i, j] < obj - 1e-12 * max(1.0, obj):
                        break
                    if key(Ex[i], Ey[j]) not in visited:
                        moved = True
                        break
                if moved:
                    x, y, bx, by, obj = Ex[i], Ey[j], None, None, float(prod[i, j])
                    info["pairs"] += 1
                    visited.add(key(x, y))
                    if obj < best[0]:
                        best[:] = [obj, x, y]
                    break
                if info["restarts"] >= opts.max_restarts:
                    reason = "cycling (a pair was revisited)" if info["revisits"] else "restart limit"
                    return finish(Status.NO_SOLUTION_FOUND, best[1], best[2], reason=reason)
                info["restarts"] += 1
                if prod.size <= 1:
                    return finish(Status.NO_SOLUTION_FOUND, best[1], best[2], reason="no adjacent extreme point")
                flat = int(rng.integers(1, prod.size))   # a random pair other than the current one
                i, j = np.unravel_index(flat, prod.shape)
                x, y, bx, by, obj = Ex[i], Ey[j], None, None, float(prod[i, j])
                info["pairs"] += 1
                kk = key(x, y)
                if kk in visited:
                    info["revisits"] += 1
                visited.add(kk)
                if obj < best[0]:
                    best[:] = [obj, x, y]
                if small(x, y) or opts.variant == "restart":
                    break
    except LPFailure as exc:
        info["lps"] = counter["lps"]
        return no_solution(problem, Status.NUMERICAL_FAILURE, reason=f"HiGHS: {exc}", **info)

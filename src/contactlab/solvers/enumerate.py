"""Exhaustive enumeration of complementary bases, n <= 20: the reference solver of the tests."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import ParamError
from ..kernels.enumerate import enumerate_kernel
from ..problems import LCP
from ..solution import Solution, Status
from .registry import register

MAX_N = 20


@dataclass(frozen=True)
class EnumerateOptions:
    """max_solutions: stop after this many distinct complementary basic solutions (2 tells
    whether the basic solution is unique); tol: feasibility tolerance relative to max(1, |q|, |M|)."""
    max_solutions: int = 1
    tol: float = 1e-10


@register("enumerate", problems=(LCP,), options=EnumerateOptions,
          classes=("spd", "psd", "p", "friction", "boxed"),
          description="exhaustive search over the 2^n complementary bases (n <= 20)",
          guarantees="finds a basic solution whenever one exists; NO_SOLUTION is a proof up to the "
                     "feasibility tolerance")
def enumerate_solve(problem: LCP, opts: EnumerateOptions, warm_start=None) -> Solution:
    n = problem.n
    if n > MAX_N:
        raise ParamError(f"enumerate visits 2^n bases and accepts n <= {MAX_N}; got n = {n} (use lemke or dantzig)")
    if opts.max_solutions < 1:
        raise ParamError("max_solutions must be >= 1")
    M = np.ascontiguousarray(problem.dense_M())
    q = problem.q
    scale = max(1.0, float(np.abs(q).max(initial=0.0)), float(np.abs(M).max(initial=0.0)))
    out = np.zeros((opts.max_solutions, n))
    found, tested = enumerate_kernel(M, q, opts.tol * scale, opts.max_solutions, out)
    info = {"bases_tested": int(tested), "solutions_found": int(found)}
    if found:
        distinct = np.unique(np.round(out[:min(found, opts.max_solutions)], 12), axis=0)
        info["solutions"] = out[:min(found, opts.max_solutions)].copy()
        info["distinct_solutions"] = int(distinct.shape[0])
        return Solution(z=out[0].copy(), w=np.empty(0), status=Status.SOLVED, iterations=int(tested), info=info)
    return Solution(z=np.zeros(n), w=np.empty(0), status=Status.NO_SOLUTION, iterations=int(tested), info=info)

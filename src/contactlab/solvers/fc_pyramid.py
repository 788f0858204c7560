"""``pyramid``: the Stewart-Trinkle route for the exact-cone Coulomb problem.

The cone K_mu is replaced by an inscribed pyramid with ``d`` edges (Stewart and Trinkle 1996,
eq. 17-19; :meth:`FrictionContact.pyramid_lcp`) and the resulting LCP is solved by any LCP method
of the registry (``inner``, default ``lemke``). The lifted answer r = D beta is then measured
against the exact cone by the one residual: the method reports SOLVED only when that residual
is <= tol; otherwise NO_SOLUTION_FOUND with the pyramid's own status and the cone error in
``info`` (the pyramid answer is a different problem's solution, not a certified Coulomb one).
"""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import ParamError
from ..solution import Status
from ._fc_common import FC_PROBLEMS, finish, local_problem
from .registry import register


@dataclass(frozen=True)
class PyramidOptions:
    """inner: the LCP method; d: friction directions per contact (3D, >= 3; 2D always 2);
    tol: exact-cone residual accepted as SOLVED; max_variables: larger pyramid LCPs are refused (dense
    pivoting on the LCPs of 40-box piles takes minutes, docs/benchmarks-tuning.md: use nsgs /
    newton-ac / prox)."""

    inner: str = "lemke"
    d: int = 8
    tol: float = 1e-8
    max_variables: int = 1500

    def __post_init__(self):
        if self.d < 3:
            raise ValueError(f"d must be >= 3, got {self.d}")
        if not self.tol > 0:
            raise ValueError("tol must be > 0")


@register("pyramid", problems=FC_PROBLEMS, options=PyramidOptions, convert=False,
          description="Stewart-Trinkle pyramid LCP solved by an LCP method, measured against the exact cone",
          guarantees="as the inner LCP method; SOLVED only when the exact-cone residual <= tol")
def pyramid(problem, opts: PyramidOptions, warm_start=None):
    from .registry import solve
    lp = local_problem(problem)
    nvars = lp.nc * ((2 if lp.dim == 2 else opts.d) + 2)
    if nvars > opts.max_variables:
        raise ParamError(f"the pyramid LCP would have {nvars} variables > max_variables = {opts.max_variables}; "
                         "raise max_variables or use an exact-cone method (nsgs, newton-ac, prox)")
    lcp, lift = lp.pyramid_lcp(opts.d)
    inner = solve(lcp, opts.inner)
    r = lift(inner.z)
    cone_error = lp.residuals(r).natural
    ok = inner.success and cone_error <= opts.tol
    return finish(problem, r, Status.SOLVED if ok else Status.NO_SOLUTION_FOUND, inner.iterations,
                  pyramid_status=inner.status.name, pyramid_residual=inner.residual, cone_error=cone_error,
                  d=2 if lp.dim == 2 else opts.d, inner=opts.inner, lcp_n=lcp.n)

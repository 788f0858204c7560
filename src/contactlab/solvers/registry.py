"""The solver registry and :func:`solve`: validate -> trivial check -> dispatch -> residual -> Solution."""
from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import scipy.sparse as sp

from ..errors import ParamError, ProblemError, SolverNotFound
from ..problems import LCP, BoxedLCP, FactoredLCP, MixedLCP, Problem
from ..solution import SUCCESS_STATUSES, Solution, Status


@dataclass(frozen=True)
class NoOptions:
    """A solver without options."""


@dataclass(frozen=True)
class SolverSpec:
    name: str
    func: Callable[..., Solution]
    problems: tuple[type, ...]
    options: type = NoOptions
    description: str = ""
    guarantees: str = ""
    warm_start: bool = False
    converts: tuple[type, ...] = field(default=())  # types accepted via lcp_reduction()
    classes: tuple[str, ...] = field(default=())  # matrix classes it claims (see MATRIX_CLASSES)

    def accepts(self, problem: Problem) -> bool:
        return isinstance(problem, self.problems) or (
            LCP in self.problems and isinstance(problem, self.converts))

    def make_options(self, options: dict[str, Any]):
        if not options:
            return _default_options(self.options)
        names = {f.name for f in dataclasses.fields(self.options)}
        unknown = sorted(set(options) - names)
        if unknown:
            raise ParamError(f"unknown option(s) {unknown} for method {self.name!r}; "
                             f"known options: {sorted(names) or 'none'}")
        try:
            return self.options(**options)
        except (TypeError, ValueError) as exc:
            raise ParamError(f"bad options for {self.name!r}: {exc}") from None


#: Tags a solver may claim with ``register(..., classes=...)``; the registry-wide test suite
#: (tests/test_registry_suite.py) runs every solver on every class it claims.
MATRIX_CLASSES = {
    "spd": "symmetric positive definite LCP",
    "psd": "symmetric positive semi-definite, rank-deficient LCP",
    "p": "nonsymmetric P-matrix LCP",
    "friction": "Stewart-Trinkle friction-pyramid LCP (copositive-plus)",
    "factored": "FactoredLCP contact problem N M^-1 N'",
    "boxed": "BoxedLCP with static bounds and SPD M",
    "boxed-coupled": "BoxedLCP with friction-coupled bounds (findex, mu) and SPD M",
}

_REGISTRY: dict[str, SolverSpec] = {}
_DEFAULTS: dict[type, Any] = {}


def _default_options(cls: type):
    """The default options instance of a solver (frozen, so one instance serves every call)."""
    opts = _DEFAULTS.get(cls)
    if opts is None:
        opts = _DEFAULTS[cls] = cls()
    return opts
_CONVERTIBLE = (BoxedLCP, MixedLCP, FactoredLCP)


def register(name: str, *, problems: tuple[type, ...], options: type = NoOptions, description: str = "",
             guarantees: str = "", warm_start: bool = False, convert: bool = True,
             classes: tuple[str, ...] = ()):
    """Decorator adding ``func(problem, opts, warm_start) -> Solution`` to the registry.

    With ``convert`` (default), a solver registered for :class:`LCP` also accepts boxed (static
    bounds), mixed and factored problems through their ``lcp_reduction()``.
    """
    unknown = set(classes) - set(MATRIX_CLASSES)
    if unknown:
        raise RuntimeError(f"unknown matrix classes {sorted(unknown)}; known: {sorted(MATRIX_CLASSES)}")

    def deco(func):
        if name in _REGISTRY:
            raise RuntimeError(f"solver {name!r} registered twice")
        _REGISTRY[name] = SolverSpec(name, func, tuple(problems), options, description, guarantees,
                                     warm_start, _CONVERTIBLE if convert else (), tuple(classes))
        return func
    return deco


def available_solvers() -> dict[str, SolverSpec]:
    """Registered methods by name (plus ``auto``), each with its problem classes and guarantees."""
    return dict(sorted(_REGISTRY.items()))


def get_solver(method: str) -> SolverSpec:
    if method not in _REGISTRY:
        known = ", ".join(["auto", *sorted(_REGISTRY)])
        raise SolverNotFound(f"unknown method {method!r}; known methods: {known}")
    return _REGISTRY[method]


DENSE_BYTES_LIMIT = 4 * 2**30  # dense pivoting work arrays above this are refused with a clear error


def dense_matrix_for(method: str, problem, copies: int = 3) -> np.ndarray:
    """``problem.M`` as a C-contiguous dense array for a dense pivoting method, or a ParamError
    when ``copies`` dense n x n arrays would not fit (large sparse problems belong to pgs/pgs-sm)."""
    n = problem.n
    need = copies * 8 * n * n
    if need > DENSE_BYTES_LIMIT:
        raise ParamError(f"method {method!r} works on dense n x n arrays ({need / 2**30:.1f} GiB for n = {n}); "
                         "use an iterative method (pgs, pgs-sm) for large sparse problems")
    return np.ascontiguousarray(problem.dense_M())


def _symmetric_psd(M) -> bool:
    if sp.issparse(M):
        if abs(M - M.T).max() > 1e-12 * max(1.0, abs(M).max()):
            return False
        M = M.toarray() if M.shape[0] <= 3000 else None
        if M is None:
            return False
    if not np.allclose(M, M.T, rtol=0, atol=1e-12 * max(1.0, np.abs(M).max(initial=0.0))):
        return False
    try:
        np.linalg.cholesky(M + (1e-12 * max(1.0, np.abs(np.diag(M)).max(initial=0.0))) * np.eye(M.shape[0]))
        return True
    except np.linalg.LinAlgError:
        return False


def choose_method(problem: Problem) -> tuple[str, str]:
    """The method ``auto`` picks and why (recorded in ``info['auto']``)."""
    if isinstance(problem, FactoredLCP) and "ppm" in _REGISTRY:
        return "ppm", "factored contact LCP"
    if isinstance(problem, BoxedLCP):
        for m in ("pgs-sm", "pgs"):
            if m in _REGISTRY:
                return m, "boxed LCP"
        return "lemke", "boxed LCP (no iterative solver registered)"
    if isinstance(problem, (LCP, MixedLCP)):
        M = problem.M if isinstance(problem, LCP) else problem.to_lcp().M
        if _symmetric_psd(M) and "dantzig" in _REGISTRY:
            return "dantzig", "symmetric positive semi-definite matrix"
        return "lemke", "general matrix"
    for spec in _REGISTRY.values():
        if isinstance(problem, spec.problems):
            return spec.name, f"first solver registered for {type(problem).__name__}"
    raise SolverNotFound(f"no solver accepts a {type(problem).__name__}")


def solve(problem: Problem, method: str = "auto", *, warm_start=None, certify: float = 1e-6,
          **options) -> Solution:
    """Solve ``problem`` with ``method`` and certify the answer.

    The residual, complementarity and infeasibility are computed here from the returned z with
    the problem's own definition. A solver's claim of success whose residual exceeds
    ``max(certify, tol) * problem.scale()`` is reported as NUMERICAL_FAILURE (claim kept in info).
    """
    if not isinstance(problem, Problem):
        raise ProblemError(f"problem must be a contactlab problem (LCP, BoxedLCP, ...), got {type(problem).__name__}")
    auto_info = None
    if method == "auto":
        method, why = choose_method(problem)
        auto_info = {"method": method, "reason": why}
    spec = get_solver(method)
    if not spec.accepts(problem):
        raise ParamError(f"method {method!r} does not accept a {type(problem).__name__}; "
                         f"it solves {[t.__name__ for t in spec.problems]}")
    if warm_start is not None and not spec.warm_start:
        raise ParamError(f"method {method!r} takes no warm_start; use one of "
                         f"{[s.name for s in _REGISTRY.values() if s.warm_start]}")
    opts = spec.make_options(options)
    t0 = time.perf_counter()
    if problem.is_trivial():
        sol = Solution(z=np.zeros(problem.n), w=np.zeros(0), status=Status.TRIVIAL, method=method)
    else:
        if isinstance(problem, spec.problems):
            target, lift = problem, None
        else:
            target, lift = problem.lcp_reduction()
        sol = spec.func(target, opts, warm_start)
        if lift is not None:
            sol.info.setdefault("reduced_n", target.n)
            sol.z = lift(sol.z)
    sol.method = method
    if auto_info:
        sol.info["auto"] = auto_info
    z = np.asarray(sol.z, dtype=np.float64)
    sol.z = z
    if isinstance(problem, MixedLCP):
        sol.x = problem.recover_x(z)
        sol.w = problem.w(z, sol.x)
        r = problem.residuals(z, sol.x)
    else:
        sol.w = problem.w(z)
        r = problem.residuals(z, sol.w)
    sol.residual, sol.complementarity, sol.infeasibility = r.natural, r.complementarity, r.infeasibility
    sol.time_s = time.perf_counter() - t0
    threshold = max(certify, float(getattr(opts, "tol", 0.0) or 0.0)) * problem.scale()
    if sol.status in SUCCESS_STATUSES and not (sol.residual <= threshold and sol.infeasibility <= threshold):
        sol.info["claimed_status"] = sol.status.name
        sol.info["certify_threshold"] = threshold
        sol.status = Status.NUMERICAL_FAILURE
    return sol

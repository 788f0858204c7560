"""The solver registry and :func:`solve`: validate -> trivial check -> dispatch -> residual -> Solution."""
from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import scipy.sparse as sp

from ..errors import ParamError, ProblemError, SolverNotFound, raise_interrupt_behind
from ..kernels.tolerances import CERTIFY
from ..problems import LCP, BoxedLCP, FactoredLCP, MixedLCP, Problem
from ..problems.friction_contact import FrictionContact, GlobalFrictionContact
from ..problems.residual import certified_error
from ..problems.validation import is_psd, is_symmetric
from ..solution import SUCCESS_STATUSES, Solution, Status
from . import certificates


@dataclass(frozen=True)
class NoOptions:
    """A solver without options."""


#: old spellings of ``max_iterations`` (one vocabulary, issue 10); kept working as aliases
ALIASES = {"max_pivots": "max_iterations", "max_iter": "max_iterations", "max_sweeps": "max_iterations",
           "max_outer": "max_iterations", "max_pairs": "max_iterations", "max_rounds": "max_iterations",
           "max_candidates": "max_iterations"}

#: the options every iterative or pivoting method shares, listed once by ``contactlab solvers``
COMMON_OPTIONS = {
    "tol": "certified relative residual (scale-free, problems/residual.py); solve() checks max(certify, tol)",
    "max_iterations": "cap on iterations, sweeps, pivots, outer cycles, LP pairs, MIP rounds or "
                      "candidates (aliases: max_pivots, max_iter, max_sweeps, max_outer, max_pairs, "
                      "max_rounds, max_candidates)",
}


def _canonical_cap(options: dict[str, Any], names: set[str]) -> dict[str, Any]:
    """Map the iteration cap to the spelling the options class has: ``max_iterations`` or, for a
    class that still names it otherwise, its one old spelling. Given twice: ParamError."""
    given = [k for k in options if k == "max_iterations" or (k in ALIASES and k not in names)]
    if not given or (given == ["max_iterations"] and "max_iterations" in names):
        return options
    if len(given) > 1:
        raise ParamError(f"give the iteration cap once (max_iterations; aliases {sorted(ALIASES)}), got {given}")
    target = "max_iterations" if "max_iterations" in names else next(
        (a for a in ALIASES if a in names), None)
    if target is None:
        return options   # the method has no cap: the unknown-option error names the key
    options = dict(options)
    options[target] = options.pop(given[0])
    return options


def check_common(opts) -> None:
    """``__post_init__`` checks of the common options (tol > 0, max_iterations >= 1 or None); ParamError."""
    tol = getattr(opts, "tol", None)
    if tol is not None and not (isinstance(tol, (int, float)) and abs(tol) <= MAX_OPTION_INT
                                and np.isfinite(tol) and tol > 0):
        raise ParamError(f"tol must be a positive finite number, got {tol!r}")
    cap = getattr(opts, "max_iterations", None)
    if cap is not None and not (isinstance(cap, (int, np.integer)) and not isinstance(cap, bool)
                                and 1 <= cap <= MAX_OPTION_INT):
        raise ParamError(f"max_iterations must be an integer from 1 to 2**62 (or None for the default), got {cap!r}")


#: the largest integer an option may hold: compiled kernels take 64-bit integers
MAX_OPTION_INT = 2 ** 62


def _check_option_numbers(method: str, options: dict[str, Any]) -> None:
    """Every integer option fits the kernels' 64-bit integers and every float is a number (a
    Python int of 10**23 used to reach numba as an untyped object: a TypingError)."""
    for k, v in options.items():
        if isinstance(v, (int, np.integer)) and not isinstance(v, bool) and abs(int(v)) > MAX_OPTION_INT:
            text = str(v) if len(str(v)) <= 24 else f"{str(v)[:8]}... ({len(str(v))} digits)"
            raise ParamError(f"option {k}={text} for method {method!r} is too large (integers up to 2**62)")


def check_warm_start(warm_start):
    """A warm start as the methods read it, checked once by :func:`solve` (ParamError naming
    ``warm_start``): a pair ``(indices, z_sub)`` (a tuple: integer indices, distinct and >= 0, and
    as many finite values), or a finite vector (a Solution's ``z``). The Solution itself is passed
    on (a method may read more of it); a pair comes back as (int64 indices, float64 values). The
    methods check the lengths against their own problem's size."""
    if isinstance(warm_start, tuple) and len(warm_start) == 2:
        idx, zs = warm_start
        try:
            idx = np.asarray(idx)
            zs = np.asarray(zs, dtype=np.float64)
        except (TypeError, ValueError, OverflowError) as exc:
            raise ParamError(f"warm_start pair (indices, z_sub) is malformed ({exc})") from None
        if idx.size == 0:
            idx = idx.astype(np.int64)
        if idx.ndim > 1 or zs.ndim > 1 or idx.dtype.kind not in "iu" or idx.shape != zs.shape:
            raise ParamError("warm_start pair (indices, z_sub) needs a 1-D integer array of indices and "
                             f"as many values; got indices {idx.dtype} {idx.shape} and z_sub {zs.shape}")
        if idx.size and (int(idx.min()) < 0 or np.unique(idx).size != idx.size):
            raise ParamError("warm_start pair (indices, z_sub) needs distinct indices >= 0")
        if not np.isfinite(zs).all():
            raise ParamError("warm_start z_sub contains NaN or inf; every value must be finite")
        return idx.astype(np.int64).ravel(), zs.ravel()
    z = getattr(warm_start, "z", warm_start)
    try:
        if np.iscomplexobj(z):
            raise TypeError("complex values")
        z = np.asarray(z, dtype=np.float64)
    except (TypeError, ValueError, OverflowError) as exc:
        raise ParamError(f"warm_start must be a Solution, a vector of numbers or a pair (indices, z_sub) "
                         f"({exc})") from None
    if z.ndim > 1 and max(z.shape) != z.size:
        raise ParamError(f"warm_start must be a vector, got an array of shape {z.shape}")
    if not np.isfinite(z).all():
        raise ParamError("warm_start contains NaN or inf; every value must be finite")
    return warm_start if isinstance(warm_start, Solution) else z.ravel()


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
    refuse: Callable[[Any], str | None] | None = None  # LCP -> why it is outside the method's class
    #: checks of the certificate kinds the method claims beyond a Farkas vector:
    #: kind -> check(M, q, certificate) -> (accepted, reason); see solvers/certificates.py
    certificates: dict[str, Callable[..., tuple[bool, str]]] = field(default_factory=dict)
    referee_for: tuple[type, ...] = field(default=())  # problem types whose NO_SOLUTION claims it decides
    #: problem -> (method, reason) where the method's module decides ``auto``'s choice for problems of
    #: a structure it knows (st-box: Stewart-Trinkle LCPs of free bodies), else None; consulted by
    #: :func:`choose_method` before its general rules, so the registry imports no method's module
    claims_auto: Callable[[Any], tuple[str, str] | None] | None = None

    def refusal(self, problem: Problem) -> str | None:
        """Why the method refuses this LCP up front (a cheap test that M is outside the class the
        method is guaranteed for), or None."""
        if self.refuse is not None and isinstance(problem, LCP):
            return self.refuse(problem)
        return None

    def handles(self, problem: Problem) -> bool:
        """The problem's type is one the method solves (directly or through lcp_reduction())."""
        return isinstance(problem, self.problems) or (
            LCP in self.problems and isinstance(problem, self.converts))

    def accepts(self, problem: Problem) -> bool:
        """The method handles the type and does not refuse the matrix (what the simulator's fallback
        chain and ``simulate --method`` offer)."""
        return self.handles(problem) and self.refusal(problem) is None

    def make_options(self, options: dict[str, Any]):
        if not options:
            return _default_options(self.options)
        try:   # options are frozen: one instance serves every call with the same (hashable) values
            # (keyed in the order given: no sort, so a repeated call costs one lookup; a flat key of
            # three entries per option, built without a comprehension, the cheapest key measured)
            key = (self.options,)
            for k, v in options.items():
                key += (k, v.__class__, v)
            cached = _OPTIONS_CACHE.get(key)
        except TypeError:   # an unhashable value (an array, a list): build it each time
            key = cached = None
        if cached is not None:
            return cached
        opts = self._build_options(options)
        if key is not None and len(_OPTIONS_CACHE) < 4096:
            _OPTIONS_CACHE[key] = opts
        return opts

    def _build_options(self, options: dict[str, Any]):
        names = {f.name for f in dataclasses.fields(self.options)}
        options = _canonical_cap(options, names)
        _check_option_numbers(self.name, options)
        unknown = sorted(set(options) - names)
        if unknown:
            raise ParamError(f"unknown option(s) {unknown} for method {self.name!r}; "
                             f"known options: {sorted(names) or 'none'}")
        try:
            return self.options(**options)
        except ParamError:
            raise
        except (TypeError, ValueError) as exc:
            raise ParamError(f"bad options for {self.name!r}: {exc}") from None


#: Tags a solver may claim with ``register(..., classes=...)``; the registry-wide test suite
#: (tests/solvers/test_registry.py) runs every solver on every class it claims.
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
_REFEREES: dict[type, str] = {}   # problem type -> the method that decides NO_SOLUTION claims on it
_DEFAULTS: dict[type, Any] = {}
_OPTIONS_CACHE: dict[tuple, Any] = {}


def _default_options(cls: type):
    """The default options instance of a solver (frozen, so one instance serves every call)."""
    opts = _DEFAULTS.get(cls)
    if opts is None:
        opts = _DEFAULTS[cls] = cls()
    return opts
_CONVERTIBLE = (BoxedLCP, MixedLCP, FactoredLCP)


def register(name: str, *, problems: tuple[type, ...], options: type = NoOptions, description: str = "",
             guarantees: str = "", warm_start: bool = False, convert: bool = True,
             classes: tuple[str, ...] = (), refuse: Callable[[Any], str | None] | None = None,
             certificates: dict[str, Callable[..., tuple[bool, str]]] | None = None,
             referee_for: tuple[type, ...] = (),
             claims_auto: Callable[[Any], tuple[str, str] | None] | None = None):
    """Decorator adding ``func(problem, opts, warm_start) -> Solution`` to the registry.

    With ``convert`` (default), a solver registered for :class:`LCP` also accepts boxed (static
    bounds), mixed and factored problems through their ``lcp_reduction()``. ``certificates``: the
    checks of the certificate kinds the method claims beyond a Farkas vector, kept beside the
    method (``{kind: check(M, q, certificate) -> (accepted, reason)}``); ``referee_for``: problem
    types on which the method is an exact decision, so that :func:`solve` reruns it to check
    another method's NO_SOLUTION claim (the UCP's ``mip``); ``claims_auto``: problem -> (method,
    reason) or None, ``auto``'s choice for problems of a structure the method's module knows.
    """
    unknown = set(classes) - set(MATRIX_CLASSES)
    if unknown:
        raise RuntimeError(f"unknown matrix classes {sorted(unknown)}; known: {sorted(MATRIX_CLASSES)}")

    def deco(func):
        if name in _REGISTRY:
            raise RuntimeError(f"solver {name!r} registered twice")
        _REGISTRY[name] = SolverSpec(name, func, tuple(problems), options, description, guarantees,
                                     warm_start, _CONVERTIBLE if convert else (), tuple(classes), refuse,
                                     dict(certificates or {}), tuple(referee_for), claims_auto)
        for kind in referee_for:
            _REFEREES[kind] = name
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


def choose_method(problem: Problem) -> tuple[str, str]:
    """The method ``auto`` picks and why (recorded in ``info['auto']``)."""
    if isinstance(problem, FactoredLCP) and "ppm" in _REGISTRY:
        return "ppm", "factored contact LCP"
    if isinstance(problem, BoxedLCP):
        for m in ("pgs-sm", "pgs"):
            if m in _REGISTRY:
                return m, "boxed LCP"
        return "lemke", "boxed LCP (no iterative solver registered)"
    for spec in _REGISTRY.values():
        claim = spec.claims_auto(problem) if spec.claims_auto is not None else None
        if claim is not None:
            return claim
    if isinstance(problem, (LCP, MixedLCP)):
        # chosen by benchmarks/bench_pivoting.py (docs/benchmarks-pivoting.md, dantzig/lemke time):
        # lemke on positive definite M, dantzig on rank-deficient PSD contact M.
        # Both are guaranteed there and neither can claim NO_SOLUTION without a checked certificate.
        M = problem.M if isinstance(problem, LCP) else problem.to_lcp().M
        if is_symmetric(M) and "dantzig" in _REGISTRY and (not sp.issparse(M) or M.shape[0] <= 3000):
            Md = M.toarray() if sp.issparse(M) else M
            try:
                np.linalg.cholesky(Md)
                return "lemke", "symmetric positive definite (lemke measured faster than dantzig)"
            except np.linalg.LinAlgError:
                if is_psd(Md):
                    return "dantzig", "rank-deficient symmetric PSD (dantzig measured faster than lemke)"
        return "lemke", "general matrix (guaranteed for P and copositive-plus M)"

    if isinstance(problem, (FrictionContact, GlobalFrictionContact)) and "newton-ac" in _REGISTRY:
        # chosen by benchmarks/bench_fclib.py (docs/fclib.md): the fastest contactlab method at 1e-8
        # on every 3D collection; prox is the more robust (slower) one
        return "newton-ac", "exact-cone Coulomb problem (newton-ac measured fastest, docs/fclib.md)"
    for spec in _REGISTRY.values():
        if isinstance(problem, spec.problems):
            return spec.name, f"first solver registered for {type(problem).__name__}"
    raise SolverNotFound(f"no solver accepts a {type(problem).__name__}")


_CERTIFIED = "_certified_by_kernel"


def certified_by_kernel(sol: Solution, problem, w: np.ndarray, numbers: tuple,
                        relative: float | None = None) -> Solution:
    """Attach to ``sol`` the certification a solver's compiled call computed with the library's one
    residual kernel (kernels/residual.py ``lcp_certify_dense``, floor tolerances.NORMWISE_FLOOR; for a
    BoxedLCP ``boxed_certify_dense`` on its own bounds, findex and mu) on
    ``problem.M`` itself (dense, the very array) and ``problem.q`` at exactly ``sol.z``: ``w`` and its
    six numbers (absolute and scale-free natural, complementarity, infeasibility), which are what
    ``problem.certify_numbers(sol.z)`` would return. :func:`solve` then reads them instead of
    running the same pass again, provided ``problem`` is the problem it
    dispatched and ``sol.z`` is still that array; it applies its threshold as always. ``relative``:
    ``certified_error(numbers[3], numbers[5])`` when the caller computed it already (else computed here)."""
    if relative is None:
        relative = certified_error(numbers[3], numbers[5])
    sol.__dict__[_CERTIFIED] = (problem, sol.z, w, numbers, relative)
    return sol


def _check_claim(problem: Problem, target: Problem | None, spec: SolverSpec, info: dict) -> tuple[bool, str]:
    """Check a NO_SOLUTION claim; (accepted, reason). On a problem type with a referee method (the
    UCP's ``mip``) the referee decides; otherwise the certificate in ``info['certificate']`` is
    checked by solvers/certificates.py: a Farkas vector, or a kind the claiming method registered a
    check for."""
    referee = next((name for kind, name in _REFEREES.items() if isinstance(problem, kind)), None)
    if referee is not None:
        if referee == spec.name:
            return True, f"decided by method {referee} (exact on a {type(problem).__name__})"
        ref = solve(problem, method=referee)
        if ref.status is _NO_SOLUTION:
            return True, f"confirmed by method {referee} (checked by solve)"
        return False, f"the {referee} check says {ref.status.name}"
    return certificates.verify(problem, target, spec.name, info, spec.certificates)


# statuses read on every call (an Enum member read from its class costs ~70 ns in Python 3.11)
_SOLVED, _TRIVIAL, _NO_SOLUTION = Status.SOLVED, Status.TRIVIAL, Status.NO_SOLUTION
_INF = float("inf")


#: solve() polishes a MixedLCP's claimed answer whose certified residual misses the threshold by at
#: most this factor (:func:`_polish_mixed`); a larger miss is a wrong answer, not a rounding one
POLISH_FACTOR = 1e3


def _mixed_numbers(problem: MixedLCP, z: np.ndarray):
    """x, w and the six certificate numbers (absolute natural, complementarity, infeasibility, then
    the relative ones) of a MixedLCP at y = z: the equality rows included (problems/mixed.py)."""
    x = problem.recover_x(z)
    w = problem.w(z, x)
    r = problem.residuals(z, x)
    rel = problem.relative_residuals(z, w, x)
    return x, w, (r.natural, r.complementarity, r.infeasibility, rel.natural, rel.complementarity, rel.infeasibility)


def _polish_mixed(problem: MixedLCP, sol: Solution, threshold: float, c: tuple, certified: float):
    """A MixedLCP solved through its reduction (eq. 9-10) whose lifted answer misses the mixed
    problem's certificate by at most POLISH_FACTOR: a few rounds of block principal pivoting on the
    full mixed problem from the active set the solver found (:meth:`MixedLCP.polish`; Judice & Pires
    1994). The polished answer replaces the solver's only when the same certificate accepts it
    (checked again here by :func:`_mixed_numbers`); ``info['polish']`` records the attempt either
    way. Returns the certificate numbers and relative residual that stand."""
    got = problem.polish(sol.z, threshold)
    if got is None:
        sol.info["polish"] = {"accepted": False, "residual_before": certified}
        return c, certified
    z, rounds = got
    x, w, c2 = _mixed_numbers(problem, z)
    certified2 = certified_error(c2[3], c2[5])
    if not (certified2 <= threshold and c2[0] < _INF and c2[2] < _INF):
        sol.info["polish"] = {"accepted": False, "residual_before": certified}
        return c, certified
    sol.info["polish"] = {"accepted": True, "rounds": rounds, "residual_before": certified,
                          "method": "block principal pivoting (Judice & Pires 1994) on the mixed problem"}
    sol.z, sol.x, sol.w = z, x, w
    return c2, certified2


def solve(problem: Problem, method: str = "auto", *, warm_start=None, certify: float = CERTIFY,
          **options) -> Solution:
    """Solve ``problem`` with ``method`` and certify the answer.

    The residual, complementarity and infeasibility are computed here from the returned z with
    the problem's own definition (``residual`` etc. absolute; ``relative_residual`` scale-free,
    problems/residual.py ``lcp_relative``). A claim of success whose relative residual exceeds
    ``max(certify, tol)`` is reported as NUMERICAL_FAILURE (claim kept in ``info``), so SOLVED means
    the same at every scale. A claim of NO_SOLUTION stands only with a certificate that
    solvers/certificates.py checks here; otherwise it becomes NO_SOLUTION_FOUND.
    """
    if not isinstance(problem, Problem):
        hint = "; a contact model's build() returns a Built: pass its .problem" \
            if isinstance(getattr(problem, "problem", None), Problem) else ""
        raise ProblemError(f"problem must be a contactlab problem (LCP, BoxedLCP, ...), got {type(problem).__name__}"
                           + hint)
    if isinstance(certify, bool) or not isinstance(certify, (int, float, np.integer, np.floating)) \
            or not 0.0 <= float(certify) < _INF:
        raise ParamError(f"certify must be a finite relative residual >= 0 (default {CERTIFY:g}), got {certify!r}")
    auto_info = None
    if method == "auto":
        method, why = choose_method(problem)
        auto_info = {"method": method, "reason": why}
    spec = _REGISTRY.get(method) or get_solver(method)
    direct = isinstance(problem, spec.problems)
    if not direct and not spec.handles(problem):
        raise ParamError(f"method {method!r} does not accept a {type(problem).__name__}; "
                         f"it solves {[t.__name__ for t in spec.problems]}")
    if warm_start is not None:
        if not spec.warm_start:
            raise ParamError(f"method {method!r} takes no warm_start; use one of "
                             f"{[s.name for s in _REGISTRY.values() if s.warm_start]}")
        warm_start = check_warm_start(warm_start)
    opts = spec.make_options(options)
    t0 = time.perf_counter()
    target = None
    trivial = problem.is_trivial()
    why_not = None if trivial or spec.refuse is None else spec.refusal(problem)
    if trivial:
        sol = Solution(z=np.zeros(problem.n), w=np.zeros(0), status=_TRIVIAL, method=method)
    elif why_not is not None:   # an LCP outside the method's class: refused before any pivot, honestly
        sol = Solution(z=np.zeros(problem.n), w=np.zeros(0), status=Status.NO_SOLUTION_FOUND, method=method,
                       info={"reason": why_not, "refused": True})
    else:
        if direct:
            target, lift = problem, None
        else:
            target, lift = problem.lcp_reduction()
        try:
            sol = spec.func(target, opts, warm_start)
        except SystemError as exc:   # a Ctrl-C inside a compiled call (errors.interrupt_behind)
            raise_interrupt_behind(exc)
        if not isinstance(sol, Solution):       # a registered function of the user's that returned junk
            raise ParamError(f"method {method!r} returned a {type(sol).__name__}, not a Solution")
        if lift is not None:
            sol.info.setdefault("reduced_n", target.n)
            sol.z = lift(sol.z)
        if np.shape(sol.z) != (problem.n,):     # the certificate below reads n entries: no more, no fewer
            raise ParamError(f"method {method!r} returned z of shape {np.shape(sol.z)} for a problem of "
                             f"n = {problem.n}")
    sol.method = method
    if auto_info:
        sol.info["auto"] = auto_info
    status = sol.status
    pre = sol.__dict__.pop(_CERTIFIED, None)
    if pre is not None and pre[0] is problem and pre[1] is sol.z:
        # the solver's compiled call ran problem.certify_numbers' own kernel on this very z and on
        # problem's own (M, q) (see :func:`certified_by_kernel`): the same numbers, not recomputed
        _, _, sol.w, c, certified = pre
    else:
        certified = None
        z = np.ascontiguousarray(sol.z, dtype=np.float64)
        sol.z = z
        if isinstance(problem, MixedLCP):
            sol.x, sol.w, c = _mixed_numbers(problem, z)
        else:
            sol.w, c = problem.certify_numbers(z)
    if status is _TRIVIAL:
        certified = 0.0
    elif certified is None:
        certified = certified_error(c[3], c[5])
    tol = float(getattr(opts, "tol", 0.0) or 0.0)
    threshold = tol if tol > certify else certify   # max(certify, tol), without the call
    if (isinstance(problem, MixedLCP) and (status is _SOLVED or status in SUCCESS_STATUSES)
            and threshold < certified <= POLISH_FACTOR * threshold and c[0] < _INF and c[2] < _INF):
        c, certified = _polish_mixed(problem, sol, threshold, c, certified)
    sol.residual, sol.complementarity, sol.infeasibility = c[0], c[1], c[2]
    sol.relative_residual = certified
    if (status is _SOLVED or status is _TRIVIAL or status in SUCCESS_STATUSES) and not (
            certified <= threshold and c[0] < _INF and c[2] < _INF):
        # a certificate only from finite numbers: the relative residual within the threshold, and
        # the absolute natural residual and infeasibility finite (inf when z or w is not; NaN fails)
        sol.info["claimed_status"] = status.name
        sol.info["certify_threshold"] = threshold
        sol.status = Status.NUMERICAL_FAILURE
    elif status is _NO_SOLUTION:
        ok, why = _check_claim(problem, target, spec, sol.info)
        sol.info["certificate_check"] = why
        if not ok:
            sol.info["claimed_status"] = sol.status.name
            sol.status = Status.NO_SOLUTION_FOUND
    sol.time_s = time.perf_counter() - t0
    return sol

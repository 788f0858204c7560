"""The registered ``box-qp`` method: islands apart where the problem carries them, the compiled
projected Newton where every factorisation is dense, else the Python path (projected Newton, then
the interior point where it stalls); friction-coupled bounds by fixed-point bound updates."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import scipy.sparse as sp

from ...kernels.csr_blocks import diagonal_positions
from ...kernels.box_qp import INTERIOR, SOLVED, box_qp_dense_certified, island_blocks, new_factor_cache, no_groups
from ...problems import BoxedLCP
from ...solution import Solution, Status
from ..registry import certified_by_kernel, certified_error, register
from .interior_point import IPM_WARM_MAX, _ipm
from .islands import _islands
from .newton import _qp
from .options import BoxQPOptions
from .residual import _certified, _residual


def _box_qp(M, q, lo, hi, z, opts, tol, counter, mode, factors=None):
    """One QP with static bounds by ``mode[0]`` ("auto", "newton" or "ipm"; module docstring). Once
    "auto" needs the interior point, mode[0] becomes "ipm" for the rest of the solve: alternating
    methods in the bound updates of friction-coupled rows can cycle between two answers of a
    degenerate QP (both within tol, different bounds next). ``factors``: as :func:`_ipm`."""
    if mode[0] == "newton":
        return _qp(M, q, lo, hi, z, opts, tol, counter)
    warm = None
    if mode[0] == "auto" and opts.newton_steps > 0:
        small = q.size <= opts.small_n
        # on a large sparse problem (no compiled path), a start too poor for the interior point to
        # start from (IPM_WARM_MAX: new contacts, an impact) is too poor for full Newton steps
        # (on recorded piles every such try gave way to the interior point)
        warm = None if (small or not sp.issparse(M) or q.size <= opts.dense_max) else \
            _certified(M, q, lo, hi, np.clip(z, lo, hi), np.empty(q.size), np.empty((5, q.size)))[1]
        if warm is None or warm <= IPM_WARM_MAX:
            short = BoxQPOptions(tol=opts.tol, max_iterations=opts.max_iterations if small else opts.newton_steps,
                                 dense_max=opts.dense_max, armijo=opts.armijo)
            zn, w, ok = _qp(M, q, lo, hi, z, short, tol, counter, full_steps=not small)
            if ok:
                return zn, w, True
            warm = None
    mode[0] = "ipm"
    return _ipm(M, q, lo, hi, opts, tol, counter, z_warm=z, factors=factors, warm_residual=warm)


_DENSE_FACTORS: dict = {}


def _dense_factors(n: int):
    """The compiled Newton's factor cache for n rows (kernels/box_qp.py ``new_factor_cache``): one
    per problem size, the 8 sizes used last (a resting 10-box stack's next step reuses its factor:
    STALE)."""
    cache = _DENSE_FACTORS.pop(n, None)
    if cache is None:
        cache = new_factor_cache(n)
        while len(_DENSE_FACTORS) >= 8:
            del _DENSE_FACTORS[next(iter(_DENSE_FACTORS))]
    _DENSE_FACTORS[n] = cache
    return cache


dense_factor_cache = _dense_factors      # its public name (the compiled box-friction step's)


def _dense_islands(problem: BoxedLCP):
    """The block structure of a dense problem's islands for the compiled Newton (kernels/box_qp.py
    ``island_blocks``) where it carries them (``problem.islands`` = (count, label per row), as box
    friction's dense build sets them) and they are labels of its rows; else the dense solves. Labels
    that split rows M couples only slow the Newton down: the answer is certified on the whole M."""
    own = getattr(problem, "islands", None)
    if own is None:
        return no_groups()
    count, label = int(own[0]), np.asarray(own[1])
    if count <= 1 or label.size == 0 or label.shape != (problem.n,) or label.dtype.kind not in "iu" \
            or label.min() < 0 or label.max() >= count:
        return no_groups()
    return island_blocks(count, np.ascontiguousarray(label, dtype=np.int64))


def _compiled(problem: BoxedLCP, opts: BoxQPOptions, z, counter, mode):
    """The projected Newton QPs and bound updates of _solve in one compiled call (kernels/box_qp.py),
    where every factorisation is dense (dense M, or n <= dense_max) and projected Newton runs first.
    Returns a Solution, or (z, outer) where the interior point takes over: _solve goes on from bound
    update ``outer`` at z with mode "ipm"."""
    M, n = problem.M, problem.n
    sparse = sp.issparse(M)
    if (sparse and n > opts.dense_max) or not (mode[0] == "newton" or (mode[0] == "auto" and opts.newton_steps > 0)):
        return None
    A = M if (type(M) is np.ndarray and M.dtype == np.float64 and M.flags.c_contiguous) else \
        np.ascontiguousarray(M.toarray() if sparse else M, dtype=np.float64)
    newton_only = mode[0] == "newton"
    small = n <= opts.small_n
    steps, full = (opts.max_iterations, False) if newton_only or small else (opts.newton_steps, True)
    groups = _dense_islands(problem) if not sparse else no_groups()
    code, z, w, its, outer, wc, numbers = box_qp_dense_certified(
        A, problem.q, problem.lo, problem.hi, problem.findex, problem.mu, z, opts.tol, steps, opts.armijo, full,
        newton_only, opts.max_outer, *_dense_factors(n), *groups)
    counter[0] = its
    if code == SOLVED:
        sol = Solution(z=z, w=w, status=Status.SOLVED, iterations=its, info={"outer": outer})
        # certified in the same call on problem.M itself: solve() reads the numbers (registry.certified_by_kernel)
        return certified_by_kernel(sol, problem, wc, numbers) if A is problem.M else sol
    if code == INTERIOR:
        mode[0] = "ipm"
        return z, outer
    info = {"outer": outer} if not problem.has_coupling else {"outer": outer, "reason": "bound updates did not settle"}
    return Solution(z=z, w=w, status=Status.MAX_ITERATIONS, iterations=its, info=info)


def _proximal(problem: BoxedLCP, opts: BoxQPOptions, z0: np.ndarray) -> Solution:
    """``opts.proximal`` > 0 (options.py): one proximal-point step from the warm start z0 (Rockafellar,
    SIAM J. Control Optim. 14(5), 1976): the QP with M + rho I and q - rho z0, strongly convex with
    every eigenvalue at least rho, whose answer z1 is the original's where it certifies on the original
    problem (its w there is the proximal one less rho (z1 - z0)); else the original is solved from z0.
    The factors (H, W, cfm) of M = H W H' + cfm I become (H, W, cfm + rho)."""
    M = problem.M
    at = diagonal_positions(M.indptr, M.indices) if sp.issparse(M) else None
    full = at is not None and bool(np.all(at >= 0))     # a contact matrix's CSR holds its whole diagonal
    diag = M.data[at] if full else (M.diagonal() if sp.issparse(M) else np.diag(M))
    rho = opts.proximal * float(np.mean(diag))
    if not rho > 0.0:
        return _solve(problem, replace(opts, proximal=0.0), z0)
    if full:            # the same pattern, rho added to the diagonal's entries
        data = M.data.copy()
        data[at] += rho
        Mp = sp.csr_matrix((data, M.indices, M.indptr), shape=M.shape)
    else:
        Mp = (M + rho * sp.identity(problem.n, format="csr")).tocsr() if sp.issparse(M) else M + rho * np.eye(problem.n)
    st = problem.structure
    if st.factors is not None:
        H, W, cfm = st.factors
        st = replace(st, factors=(H, W, cfm + rho))
    prox = BoxedLCP.trusted(Mp, problem.q - rho * z0, problem.lo, problem.hi, problem.findex, problem.mu,
                            structure=st)
    plain = replace(opts, proximal=0.0)
    first = _solve(prox, plain, z0)
    z1 = np.ascontiguousarray(first.z, dtype=np.float64)
    w, c = problem.certify_numbers(z1)
    if first.status is Status.SOLVED and certified_error(c[3], c[5]) <= opts.tol:
        return Solution(z=z1, w=w, status=Status.SOLVED, iterations=first.iterations,
                        info={**first.info, "proximal": rho, "proximal_certified": True})
    # not certified: the original from the warm start itself, as without the option (from z1 instead, the
    # 10,000-box pile's 122,000-row island took the interior point 10 s, against 1.3 s from z0)
    done = _solve(problem, plain, z0)
    done.iterations += first.iterations
    done.info["proximal"] = rho
    done.info["proximal_certified"] = False
    return done


def _solve(problem: BoxedLCP, opts: BoxQPOptions, warm_start, compiled: bool = True) -> Solution:
    """``compiled=False``: the Python path throughout (the reference the compiled one is tested against)."""
    if opts.proximal > 0.0 and warm_start is not None and compiled:
        return _proximal(problem, opts, np.asarray(warm_start, dtype=np.float64))
    n = problem.n
    z = np.zeros(n) if warm_start is None else np.asarray(warm_start, dtype=np.float64).copy()
    counter = [0]
    mode = [opts.algorithm]
    first = 1
    if compiled:
        done = _islands(problem, opts, z, _solve, _python_path)
        if done is not None:
            return done
        done = _compiled(problem, opts, z, counter, mode)
        if isinstance(done, Solution):
            return done
        if done is not None:
            z, first = done
    return _python_path(problem, opts, z, counter, mode, first)


def _python_path(problem: BoxedLCP, opts: BoxQPOptions, z, counter, mode, first) -> Solution:
    """_solve in Python from z at bound update ``first`` in ``mode`` (after the compiled Newton, or
    from the start)."""
    M, q = problem.M, problem.q
    factors = getattr(problem, "factors", None)
    if not problem.has_coupling:
        lo, hi = problem.lo, problem.hi
        z = np.clip(z, lo, hi)
        z, w, ok = _box_qp(M, q, lo, hi, z, opts, opts.tol, counter, mode, factors)
        return Solution(z=z, w=w, status=Status.SOLVED if ok else Status.MAX_ITERATIONS,
                        iterations=counter[0], info={"outer": 1})
    for outer in range(first, opts.max_outer + 1):
        lo, hi = problem.bounds(z)
        z = np.clip(z, lo, hi)
        z, w, ok = _box_qp(M, q, lo, hi, z, opts, opts.tol, counter, mode, factors)
        lo2, hi2 = problem.bounds(z)
        if ok and _residual(M, q, z, w, lo2, hi2) <= opts.tol:
            return Solution(z=z, w=w, status=Status.SOLVED, iterations=counter[0], info={"outer": outer})
    return Solution(z=z, w=M @ z + q, status=Status.MAX_ITERATIONS, iterations=counter[0],
                    info={"outer": opts.max_outer, "reason": "bound updates did not settle"})


@register("box-qp", problems=(BoxedLCP,), options=BoxQPOptions, warm_start=True, convert=False,
          classes=("boxed",),
          description="projected Newton on the bound-constrained QP of a symmetric boxed LCP (exact "
                      "Newton steps on the free rows), a Mehrotra interior point where Newton stalls; "
                      "friction-coupled bounds by fixed-point bound updates",
          guarantees="algorithm='newton', static bounds, SPD M: converges to the exact solution "
                     "(Bertsekas 1982); the interior point is Mehrotra's heuristic (no proof); coupled "
                     "bounds: no guarantee; SOLVED only when the residual certifies the answer")
def box_qp_solve(problem, opts: BoxQPOptions, warm_start=None) -> Solution:
    return _solve(problem, opts, warm_start)

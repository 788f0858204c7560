"""``st-box``: the Stewart-Trinkle pyramid LCP of free bodies solved as box friction by box-qp.

With d = 4 friction directions (+t1, +t2, -t1, -t2) the pyramid's friction impulses
{sum_j beta_j d_j : beta >= 0, sum beta <= mu c_n} are the square with vertices +-mu c_n t1,
+-mu c_n t2: |f1| + |f2| <= mu c_n. In the axes e1 = (t1 + t2)/sqrt(2), e2 = (t1 - t2)/sqrt(2),
turned 45 degrees, that square is the box |g1|, |g2| <= mu c_n / sqrt(2) (f1 + f2 = sqrt(2) g1,
f1 - f2 = sqrt(2) g2, and |f1| + |f2| = max(|f1 + f2|, |f1 - f2|)). Conditions (8)-(9) of
arechavaleta (Stewart-Trinkle's pyramid) are the optimality conditions of the linear programme
min_beta (D'v+)'beta over that set, lambda its multiplier: the friction impulse dissipates the most
power over the square. The box friction of eq. (16)-(17) with the bounds coupled to the current
normal impulse says the same of its box (each g_i at the bound that opposes its own velocity,
free where that velocity is zero). The set is the same, so the two problems have the same (v+, c_n,
f) in exact arithmetic, and box friction's is a symmetric boxed LCP that box-qp solves on piles
where Lemke's pivots grow with n (docs/benchmarks-sim.md).

The answer is mapped to the pyramid's variables (c_n; beta, the least representation of f:
beta_0 = max(f1, 0), beta_2 = max(-f1, 0), beta_1 = max(f2, 0), beta_3 = max(-f2, 0), any
representation being optimal in the programme above; lambda = the sliding speed max_j -D_j' v+).
The model's cfm (on the normal, friction and lambda rows) is where the two problems differ: in the
box problem the same cfm on every row turns with the axes (the interior case u = -cfm f holds in
both), but the pyramid's lambda row, mu c_n - sum beta + cfm lambda, enlarges a sliding contact's
square by cfm lambda, and a contact without a normal impulse that slides keeps a friction impulse
of cfm lambda. The mapped answer misses these by ~cfm x speed, more than the certificate allows
where a separated contact slides fast. So the mapping is followed by arechavaleta's subspace
minimisation (§III-B, eq. 4) on the pyramid LCP itself: the active set is read off the mapped
answer (a row is basic where z_i, in units of max|z|, exceeds w_i, in units of its own terms: the
certificate's units), a sliding contact without friction gets the direction it slides against,
and w_B = 0 is solved on it (LU); rows with z_B < 0 leave, rows with w < 0 enter, a few rounds.
``solve()`` certifies the result on the pyramid LCP with its one residual; where it does not
certify, Lemke solves the problem (``fallback``), so the method's answer is Lemke's certificate or
its own.

The problem is recognised by its row groups (models/stewart_trinkle.py ``build``: normal, friction,
lambda and nothing else, four friction rows per contact): a scene of free bodies (no joint, limit
or motor rows). ``auto`` chooses this method for such LCPs from :data:`AUTO_MIN_ROWS` rows and
Lemke below (:func:`contactlab.solvers.registry.choose_method`).
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..kernels._jit import jit
from ..kernels.residual import lcp_certify_dense
from ..kernels.tolerances import CERTIFY, NORMWISE_FLOOR
from ..problems import LCP, BoxedLCP
from ..problems.residual import certified_error
from ..solution import Solution, Status
from .registry import check_common, register, solve

SQRT_HALF = float(np.sqrt(0.5))

#: ``auto`` takes this method for a Stewart-Trinkle LCP of free bodies (or an island of one) from
#: this many rows; Lemke below (docs/benchmarks-sim.md, "Stewart-Trinkle piles by box-qp")
AUTO_MIN_ROWS = 1500


@dataclass(frozen=True)
class STBoxOptions:
    """tol: the relative residual the answer must reach on the pyramid LCP (solve()'s certificate);
    max_iterations: box-qp's Newton steps per QP (None: its default); rounds: subspace minimisation
    rounds on the pyramid LCP after the mapping (arechavaleta §III-B); fallback: solve by Lemke where
    the mapped answer does not certify."""
    tol: float = CERTIFY
    max_iterations: int | None = None
    rounds: int = 6
    fallback: bool = True

    def __post_init__(self):
        check_common(self)
        if isinstance(self.rounds, bool) or not isinstance(self.rounds, (int, np.integer)) or self.rounds < 0:
            from ..errors import ParamError
            raise ParamError(f"rounds must be an integer >= 0, got {self.rounds!r}")


def pyramid_contacts(problem) -> int | str:
    """The number of contacts nc of a Stewart-Trinkle pyramid LCP of free bodies (rows [c_n (nc),
    beta (4 nc, contact by contact), lambda (nc)], as models/stewart_trinkle.py ``build`` groups them),
    or why ``problem`` is not one (a string)."""
    if type(problem) is not LCP:
        return f"a {type(problem).__name__}, not a Stewart-Trinkle LCP of free bodies"
    groups = problem.row_groups
    if not groups or not all(k in groups for k in ("normal", "friction", "lambda")):
        return "no Stewart-Trinkle row groups (normal, friction, lambda) on the problem"
    size = {k: s.stop - s.start for k, s in groups.items()}
    nc = size["normal"]
    if any(v for k, v in size.items() if k not in ("normal", "friction", "lambda")):
        return "joint-limit or motor rows: not a scene of free bodies"
    if not (groups["normal"].start == 0 and groups["friction"].start == nc and size["friction"] == 4 * nc
            and groups["lambda"].start == 5 * nc and size["lambda"] == nc and problem.n == 6 * nc):
        return "not four friction directions per contact in the rows [normal; friction; lambda]"
    return nc


def _refuse(problem) -> str | None:
    nc = pyramid_contacts(problem)
    return nc if isinstance(nc, str) else None


def _claims_auto(problem) -> tuple[str, str] | None:
    """``auto``'s choice on a Stewart-Trinkle LCP of free bodies, chosen on Stewart-Trinkle piles
    (docs/benchmarks-sim.md, "Stewart-Trinkle piles by box-qp"): st-box from AUTO_MIN_ROWS rows,
    Lemke below; None for any other problem."""
    if type(problem) is not LCP or not problem.row_groups or "lambda" not in problem.row_groups \
            or isinstance(pyramid_contacts(problem), str):
        return None
    if problem.n >= AUTO_MIN_ROWS:
        return "st-box", (f"Stewart-Trinkle LCP of free bodies, {problem.n} >= {AUTO_MIN_ROWS} rows "
                          "(box-qp on the pyramid as a box, Lemke where it does not certify)")
    return "lemke", f"Stewart-Trinkle LCP below {AUTO_MIN_ROWS} rows (Lemke measured faster there)"


@jit
def box_of_pyramid(M, q, nc):
    """The box-friction problem of a pyramid LCP (M dense, rows [c_n; beta; lambda]): rows [c_n (nc);
    g1 (nc); g2 (nc)] with g1 = (beta_0 + beta_1)/sqrt(2), g2 = (beta_0 - beta_1)/sqrt(2) rows of
    the pyramid (D_0 = t1, D_1 = t2): B = P M_11 P', qb = P q_1 on the [c_n; beta] block, whose matrix
    is H W H' + cfm I (the cfm turns with the axes); bounds g in +-mu c_n / sqrt(2) coupled to the
    contact's normal (findex), mu read off the lambda row (mu_i at column c_n,i).
    Returns (B, qb, lo, hi, findex, mub)."""
    m = 3 * nc
    rows = np.empty((m, 2), dtype=np.int64)
    coef = np.zeros((m, 2))
    for c in range(nc):
        rows[c, 0] = c
        rows[c, 1] = c
        coef[c, 0] = 1.0
        for k, s in ((1, 1.0), (2, -1.0)):
            r = k * nc + c
            rows[r, 0] = nc + 4 * c
            rows[r, 1] = nc + 4 * c + 1
            coef[r, 0] = SQRT_HALF
            coef[r, 1] = s * SQRT_HALF
    B = np.empty((m, m))
    qb = np.empty(m)
    for a in range(m):
        qb[a] = coef[a, 0] * q[rows[a, 0]] + coef[a, 1] * q[rows[a, 1]]
        for b in range(a, m):
            s = 0.0
            for u in range(2):
                if coef[a, u] != 0.0:
                    for v in range(2):
                        if coef[b, v] != 0.0:
                            s += coef[a, u] * coef[b, v] * M[rows[a, u], rows[b, v]]
            B[a, b] = s
            B[b, a] = s
    lo = np.zeros(m)
    hi = np.zeros(m)
    findex = np.full(m, -1, dtype=np.int64)
    mub = np.zeros(m)
    for c in range(nc):
        hi[c] = np.inf
        mu = M[5 * nc + c, c] * SQRT_HALF
        for r in (nc + c, 2 * nc + c):
            findex[r] = c
            mub[r] = mu
    return B, qb, lo, hi, findex, mub


@jit
def pyramid_of_box(zb, M, q, nc):
    """The pyramid's variables [c_n; beta; lambda] from box friction's answer [c_n; g1; g2]: f1 =
    (g1 + g2)/sqrt(2), f2 = (g1 - g2)/sqrt(2) in (t1, t2), beta its least representation on (+t1, +t2,
    -t1, -t2), lambda = max(0, max_j -(D_j' v+ + cfm beta_j)) with v+ from (c_n, beta) (the rows' w
    with lambda = 0)."""
    n = 6 * nc
    y = np.zeros(n)
    for c in range(nc):
        y[c] = max(zb[c], 0.0)
        g1 = zb[nc + c]
        g2 = zb[2 * nc + c]
        f1 = (g1 + g2) * SQRT_HALF
        f2 = (g1 - g2) * SQRT_HALF
        y[nc + 4 * c] = max(f1, 0.0)
        y[nc + 4 * c + 2] = max(-f1, 0.0)
        y[nc + 4 * c + 1] = max(f2, 0.0)
        y[nc + 4 * c + 3] = max(-f2, 0.0)
    nz = np.flatnonzero(y)
    for c in range(nc):
        lam = 0.0
        for j in range(4):
            r = nc + 4 * c + j
            w = q[r]
            for p in nz:
                w += M[r, p] * y[p]
            lam = max(lam, -w)
        y[5 * nc + c] = lam
    return y


@jit
def _consistent(basic, z, w, nc):
    """A contact whose lambda is basic and none of whose beta is gets the directions it slides
    against (the largest -D_j' v+ = -(w_j - lambda), ties within 1e-9): a contact without a normal
    impulse that slides keeps a friction impulse of cfm lambda there."""
    for c in range(nc):
        if not basic[5 * nc + c]:
            continue
        some = False
        for j in range(4):
            some = some or basic[nc + 4 * c + j]
        if some:
            continue
        lam = z[5 * nc + c]
        top = -np.inf
        for j in range(4):
            top = max(top, -(w[nc + 4 * c + j] - lam))
        for j in range(4):
            if -(w[nc + 4 * c + j] - lam) >= top - 1e-9 * abs(top):
                basic[nc + 4 * c + j] = True


@jit
def guess_basis(z, w, t, floor, nc):
    """The basic rows of the answer (z, w) (t: each row's term size, the certificate's unit with
    ``floor``): z_i / max|z| > w_i / max(t_i, floor), then :func:`_consistent`."""
    n = z.size
    zs = 0.0
    for i in range(n):
        zs = max(zs, abs(z[i]))
    basic = np.zeros(n, dtype=np.bool_)
    for i in range(n):
        u = max(t[i], floor)
        basic[i] = (z[i] / zs if zs > 0.0 else 0.0) > (w[i] / u if u > 0.0 else 0.0)
    _consistent(basic, z, w, nc)
    return basic


@jit
def next_basis(basic, z, w, t, floor, nc):
    """The next round's basic rows: those with z_i < 0 leave, those with w_i < -1e-9 max(t_i, floor)
    enter (arechavaleta §III-B's projection, with the rows the answer violates), then :func:`_consistent`.
    Returns (basis, changed)."""
    out = basic.copy()
    changed = False
    for i in range(z.size):
        if basic[i] and z[i] < 0.0:
            out[i] = False
            changed = True
        elif not basic[i] and w[i] < -1e-9 * max(t[i], floor):
            out[i] = True
            changed = True
    _consistent(out, np.maximum(z, 0.0), w, nc)
    return out, changed


@jit
def basis_solve(M, q, basic):
    """z with z_B solving M_BB z_B = -q_B (LU with partial pivoting) and z = 0 elsewhere; ok False
    where M_BB is singular."""
    idx = np.flatnonzero(basic)
    k = idx.size
    z = np.zeros(q.size)
    if k == 0:
        return z, True
    A = np.empty((k, k))
    b = np.empty(k)
    for a in range(k):
        b[a] = -q[idx[a]]
        for c in range(k):
            A[a, c] = M[idx[a], idx[c]]
    try:
        x = np.linalg.solve(A, b)
    except Exception:
        return z, False
    for a in range(k):
        z[idx[a]] = x[a]
    return z, True


def _certify(M, q, z):
    """(w, t, relative residual) of z on the LCP (M, q) with the library's one residual kernel."""
    n = q.size
    w, t = np.empty(n), np.empty(n)
    c = lcp_certify_dense(M, q, z, w, t, NORMWISE_FLOOR)
    return w, t, certified_error(c[3], c[5])


def polish(M, q, z, nc, rounds: int, tol: float):
    """Subspace minimisation on the pyramid LCP (M, q) from the mapped answer z: (z, relative
    residual, rounds run). Stops at the first certified z (or with the best one)."""
    floor = NORMWISE_FLOOR * float(np.max(np.abs(q), initial=0.0))
    w, t, rel = _certify(M, q, z)
    best = (z, rel)
    if rel <= tol or rounds == 0:
        return z, rel, 0
    basic = guess_basis(z, w, t, floor, nc)
    for k in range(1, rounds + 1):
        z, ok = basis_solve(M, q, basic)
        if not ok:
            break
        w, t, rel = _certify(M, q, z)
        if rel < best[1]:
            best = (z, rel)
        if rel <= tol:
            return z, rel, k
        basic, changed = next_basis(basic, z, w, t, floor, nc)
        if not changed:
            break
    return best[0], best[1], k


#: box-qp's bound updates (``max_outer``) for the box problem: an impact island's normals settle in
#: tens of updates, not box-qp's default 30 (docs/benchmarks-sim.md)
MAX_OUTER = 100

#: the box problem's relative residual targets tried in turn: box-qp's default, then one that fixes
#: the degenerate contacts' normals (four coplanar points per face are told apart by the cfm alone,
#: so a residual r leaves their share uncertain by ~r / cfm) closely enough for the subspace
#: minimisation to find the pyramid's active set
BOX_TOLS = (1e-7, 1e-9)


def _box_answer(M, q, nc, tol, warm):
    """box-qp's answer on the box-friction problem of the pyramid LCP (M, q) (CSR above box-qp's
    dense_max rows: its sparse factorisations)."""
    B, qb, lo, hi, findex, mub = box_of_pyramid(M, q, nc)
    if B.shape[0] > 200:
        B = sp.csr_matrix(B)
    box = BoxedLCP.trusted(B, qb, lo, hi, findex, mub)
    return solve(box, "box-qp", tol=tol, max_outer=MAX_OUTER, warm_start=warm)


@register("st-box", problems=(LCP,), options=STBoxOptions, convert=False, refuse=_refuse, claims_auto=_claims_auto,
          description="Stewart-Trinkle pyramid (d = 4, free bodies) as box friction in 45-degree axes by box-qp, "
                      "mapped back, subspace minimisation on the pyramid LCP, Lemke where it does not certify",
          guarantees="SOLVED only when the answer certifies on the pyramid LCP itself (the mapped one, or Lemke's "
                     "with fallback=True, whose guarantee on copositive-plus M it then has); refuses other LCPs")
def st_box_solve(problem: LCP, opts: STBoxOptions, warm_start=None) -> Solution:
    t0 = time.perf_counter()
    nc = pyramid_contacts(problem)
    M = problem.M if isinstance(problem.M, np.ndarray) else problem.dense_M()
    M = np.ascontiguousarray(M, dtype=np.float64)
    q = np.ascontiguousarray(problem.q, dtype=np.float64)
    tol = max(opts.tol, CERTIFY)
    iterations = rounds_run = 0
    z, rel, warm, box = None, np.inf, None, []
    for box_tol in BOX_TOLS:
        bs = _box_answer(M, q, nc, box_tol, warm)
        box.append(bs.status.name)
        iterations += int(bs.iterations)
        warm = np.ascontiguousarray(bs.z, dtype=np.float64)
        zk = pyramid_of_box(warm, M, q, nc)
        zk, relk, k = polish(M, q, zk, nc, int(opts.rounds), tol)
        rounds_run += k
        if relk < rel:
            z, rel = zk, relk
        if rel <= tol:
            break
    info = {"box": box, "rounds": rounds_run, "mapped_residual": rel, "answered_by": "st-box"}
    if z is not None and ((rel <= tol and np.all(np.isfinite(z))) or not opts.fallback):
        status = Status.SOLVED if rel <= tol else Status.NUMERICAL_FAILURE
        return Solution(z=z, w=np.empty(0), status=status, iterations=iterations + rounds_run, pivots=0, info=info,
                        time_s=time.perf_counter() - t0)
    if not opts.fallback:
        return Solution(z=np.zeros(problem.n), w=np.empty(0), status=Status.NUMERICAL_FAILURE,
                        iterations=iterations, info=info, time_s=time.perf_counter() - t0)
    ls = solve(problem, "lemke")      # the island box-qp's answer does not certify: Lemke's
    info["answered_by"] = "lemke"
    info.update({k: v for k, v in ls.info.items() if k not in info})
    return Solution(z=np.asarray(ls.z, dtype=np.float64), w=np.empty(0), status=ls.status,
                    iterations=iterations + rounds_run + int(ls.iterations), pivots=int(ls.pivots), info=info,
                    time_s=time.perf_counter() - t0)

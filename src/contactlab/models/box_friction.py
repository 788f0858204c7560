"""Box friction: the symmetric boxed LCP of arechavaleta eq. (16)-(17) (ODE's formulation).

One row per constraint direction, grouped by type: z = [c_j (nj, free), c_a (nm, |c_a| <= a_max),
c_l (nl, >= 0), c_n (nc, >= 0), c_s (nc), c_t (nc)], with
    w = H M^-1 H' z + cfm z + H v_free - rhs,   H = [J; A; L; N; S; T]
and the mid-function complementarity of the box. Friction rows are bounded by
|c_s|, |c_t| <= mu c_n: with ``coupling="current"`` through ``BoxedLCP(findex, mu)`` (the current
normal value; needs pgs or pgs-sm), with ``coupling="previous"`` by the fixed bounds mu c_n~ with
c_n~ the matched normal impulse of the previous step (eq. 16: "an estimate of c_n"; a contact
new this step gets ``new_contact_bound``), which any LCP method can solve after reduction.
The matrix is symmetric positive semi-definite; cfm > 0 makes it definite. With
``coupling="previous"`` and ``cfm_centre`` = theta > 0 the normal rows' cfm is centred at theta times
that same estimate: w's normal rows carry cfm (c_n - theta c_n~) instead of cfm c_n (q's normal rows
less theta cfm c_n~, :func:`centre_normals`): the same matrix, and a resting contact sinks by
(1 - theta) cfm c_n h a step instead of cfm c_n h.
With ``joints="schur"`` the joint rows are eliminated first (arechavaleta eq. 15, as in the paper's
PGS / PGS-SM runs): z = [c_a, c_l, c_n, c_s, c_t] with the matrix H P H', P = W - W J'(J W J')^-1 J W.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..errors import ModelError
from ..kernels._jit import jit
from ..kernels.components import body_pair_groups, row_block_components
from ..mechanics.kernels import delassus_dense, rows_times as _rows_times, rows_transpose_times as _rows_transpose_times
from ..mechanics.system import delassus, rows_times, rows_transpose_times, stack_rows
from ..problems import BoxedLCP, ProblemStructure
from .common import MODE_IMPULSE_TOL, MODE_SPEED_TOL, StepResult, _modes_of_rows, contact_modes, dense, f64

NAME = "box-friction"
DEFAULT_METHOD = "pgs"
#: given no method and no options, on scenes of free bodies only: each friction box from the
#: contact's normal impulse of the previous step (arechavaleta eq. 16, static bounds: a convex
#: bound-constrained QP each step), solved by box-qp, whose projected Newton reaches the minimiser
#: that solve() certifies, on the compiled steps. With the bounds coupled to the current normal
#: impulse (``coupling="current"``) no method has that guarantee: pgs stalls uncertified on
#: resting stacks (docs/benchmarks-sim.md)
FREE_BODIES_DEFAULT = ("box-qp", {"coupling": "previous"})
DESCRIPTION = "boxed LCP with friction box |c_t| <= mu c_n (arechavaleta eq. 16-17)"


@dataclass(frozen=True)
class Options:
    """coupling: "current" (findex, mu) or "previous" (static bounds from the last step);
    cfm: constraint force mixing on every row (plus settings.cfm); new_contact_bound: the normal
    impulse estimate for a contact with no match in the previous step ("previous" coupling);
    cfm_centre: theta in [0, 1], with "previous" coupling the normal rows' cfm centred at theta times
    that estimate c_n~ instead of at 0 (:func:`centre_normals`: a resting contact then sinks by
    (1 - theta) cfm c_n h a step instead of cfm c_n h); 0, the default: the problem of eq. 16-17 as
    written (centred, falling piles take more Newton steps: docs/benchmarks-sim.md, fifteenth session, drift15);
    dense_max: the most rows whose Delassus matrix is stored dense (above: CSR, factorised sparse;
    the crossover in docs/benchmarks-tuning.md)."""
    coupling: str = "current"
    cfm: float = 1e-8
    joints: str = "rows"       # "rows": joint rows are free rows of the LCP (ODE); "schur": eliminated (eq. 15)
    new_contact_bound: float = 0.0
    dense_max: int = 200
    cfm_centre: float = 0.0

    def __post_init__(self):
        if self.coupling not in ("current", "previous"):
            raise ModelError(f"box-friction coupling must be 'current' or 'previous', got {self.coupling!r}")
        if self.cfm < 0:
            raise ModelError("box-friction cfm must be >= 0")
        if not 0.0 <= self.cfm_centre <= 1.0:
            raise ModelError(f"box-friction cfm_centre must be in [0, 1], got {self.cfm_centre!r}")
        if self.cfm_centre and self.coupling != "previous":
            raise ModelError("box-friction cfm_centre needs coupling='previous' (its centre is the previous "
                             "step's normal impulse)")
        if self.joints not in ("rows", "schur"):
            raise ModelError(f"box-friction joints must be 'rows' or 'schur', got {self.joints!r}")


def _layout(sys, options=None):
    nj = 0 if (options is not None and options.joints == "schur") else sys.nj
    nm, nl, nc = sys.nm, sys.nl, sys.nc
    o_a = nj
    o_l = o_a + nm
    o_n = o_l + nl
    o_s = o_n + nc
    o_t = o_s + nc
    return o_a, o_l, o_n, o_s, o_t, o_t + nc


def _rows(sys) -> sp.csr_matrix:
    """H = [J; A; L; N; S; T], built once per step (kept on the system for recover)."""
    H = getattr(sys, "_box_rows", None)
    if H is None:
        if sys.NST is not None and not (sys.nj or sys.nm or sys.nl):   # contact rows only: build_system's stack
            H = sys.NST
        else:
            H = stack_rows((sys.J, sys.A, sys.L, sys.N, sys.S, sys.T), sys.ndof)
        sys._box_rows = H
    return H


def _bounds(sys, options: Options, n: int):
    """(lo, hi, findex, mu) of the rows (findex/mu None for ``coupling="previous"``: static bounds):
    joints free, motors +-a_max, limits and normals [0, inf), friction coupled to its normal by
    findex/mu (arechavaleta eq. 17) or, with coupling="previous", boxed by mu times the previous
    step's matched normal (eq. 16; ``new_contact_bound`` for a contact without one). One compiled pass."""
    o_a, o_l, o_n, o_s, o_t, _ = _layout(sys, options)
    current = options.coupling == "current"
    lo, hi, findex, mu = box_bounds(o_a, o_l, o_n, n, np.ascontiguousarray(sys.a_max, dtype=np.float64),
                                     np.ascontiguousarray(sys.mu, dtype=np.float64),
                                     np.ascontiguousarray(sys.normal_guess, dtype=np.float64),
                                     float(options.new_contact_bound), current)
    return (lo, hi, findex, mu) if current else (lo, hi, None, None)


@jit
def box_bounds(o_a, o_l, o_n, n, a_max, mu_c, guess, new_bound, current):
    """The arrays of :func:`_bounds` (layout offsets o_a, o_l, o_n; nc = len(mu_c) contacts)."""
    nc = mu_c.size
    o_s = o_n + nc
    lo = np.zeros(n)
    hi = np.full(n, np.inf)
    findex = np.full(n, -1, dtype=np.int64)
    mu = np.zeros(n)
    for i in range(o_a):
        lo[i] = -np.inf
    for i in range(o_l - o_a):
        lo[o_a + i], hi[o_a + i] = -a_max[i], a_max[i]
    for c in range(nc):
        for r in (o_s + c, o_s + nc + c):
            if current:
                findex[r] = o_n + c
                mu[r] = mu_c[c]
                hi[r] = 0.0
            else:
                b = mu_c[c] * normal_estimate(guess[c], new_bound)
                lo[r], hi[r] = -b, b
    return lo, hi, findex, mu


@jit
def normal_estimate(guess, new_bound):
    """A contact's estimate c_n~ of its normal impulse (arechavaleta eq. 16: "an estimate of c_n"):
    the matched previous step's normal impulse ``guess`` (NaN for a contact new this step: then
    ``new_bound``), at least 0. With ``coupling="previous"`` it scales the contact's friction box
    (:func:`box_bounds`) and centres its normal row's regularisation (:func:`centre_normals`)."""
    g = guess if np.isfinite(guess) else new_bound
    return max(g, 0.0)


@jit
def centre_normals(q, o_n, guess, new_bound, centre):
    """The cfm of the normal rows centred at a share of each contact's estimate instead of at 0, in
    place: q_i -= centre c_n~_i on the normal rows o_n.. o_n + nc (nc = ``guess.size``, c_n~
    :func:`normal_estimate`; ``centre`` = theta cfm, :func:`centre_of`; 0: nothing).

    Why: with cfm > 0 the problem of arechavaleta eq. (16)-(17) solves (A + cfm I) z + q = w, so a
    resting contact (w = 0, c_n > 0) is left the normal velocity N v+ = -cfm c_n: a sink of cfm
    times the weight the contact carries, every step, which position stabilisation (its slop)
    never sees; down a column of resting boxes it adds up level by level. Centred, the problem is
    the proximal step min 1/2 z'(A + cfm I) z + (q - theta cfm z~)'z over the same box: the same
    matrix (its conditioning and every solver's path unchanged), w = A z + q + cfm (z - theta z~),
    so a resting contact is left N v+ = cfm (theta c_n~ - c_n), -(1 - theta) cfm c_n once the
    impulses settle. It is still the boxed LCP (M, q - theta cfm c_n~) with M = A + cfm I positive
    definite, and that problem is what every solver solves and the certificate checks.

    The cost, and why it is an option: along A's small-eigenvalue directions u (eigenvalue lambda not
    far above cfm: a face's twist, a pile's internal forces, where the answer is pinned by cfm) the
    uncentred answer is u'z = -u'q / (lambda + cfm), a function of this step's q, and a settled
    step's warm start holds; centred it is the proximal-point iterate (theta cfm u'z~ - u'q) /
    (lambda + cfm), which carries the previous impulses and converges over many steps (with
    lambda << cfm, at rate theta), so while q changes (a falling or settling pile) the answer keeps
    moving from its warm start and Newton takes more steps (a centre projected onto range(A) does
    the same: those directions are small, not null). Only the normal rows: the friction rows keep
    their centre 0 (a static contact's tangent velocity -cfm c_t, a tangential creep the stacks do
    not show)."""
    if centre == 0.0:
        return
    for c in range(guess.size):
        q[o_n + c] -= centre * normal_estimate(guess[c], new_bound)


def centre_of(options: Options, cfm: float) -> float:
    """:func:`centre_normals`' ``centre``: theta (``options.cfm_centre``) times the rows' cfm with
    ``coupling="previous"`` (the estimate c_n~ is the previous step's), else 0."""
    return float(options.cfm_centre * cfm) if options.coupling == "previous" else 0.0


def _q(sys, H, options: Options) -> np.ndarray:
    """q = H v_free - rhs of the rows [J; A; L; N; S; T]: joint right-hand sides, motor targets,
    limit and normal biases, zero for friction (arechavaleta eq. 16-17); one compiled pass. Its
    normal rows centred (:func:`_centre`)."""
    H = H if (sp.issparse(H) and H.format == "csr") else sp.csr_matrix(H)
    q = q_kernel(H.indptr, H.indices, f64(H.data), sys.v_free(), f64(sys.j_rhs), f64(sys.a_target),
                 f64(sys.l_bias), f64(sys.n_bias))
    _centre(sys, q, options)
    return q


def _centre(sys, q, options: Options) -> None:
    """:func:`centre_normals` on q (the rows of :func:`_layout`) with the model's and the settings' cfm."""
    centre = centre_of(options, options.cfm + sys.cfm)
    if sys.nc and centre:
        centre_normals(q, _layout(sys, options)[2], f64(sys.normal_guess), float(options.new_contact_bound), centre)


@jit
def q_kernel(indptr, indices, data, v, j_rhs, a_target, l_bias, n_bias):
    """H v - [j_rhs; a_target; -l_bias; -n_bias; 0] row by row (the rows of :func:`_q`)."""
    n = indptr.size - 1
    out = np.empty(n)
    o_l = j_rhs.size + a_target.size
    o_n = o_l + l_bias.size
    o_s = o_n + n_bias.size
    for r in range(n):
        acc = 0.0
        for p in range(indptr[r], indptr[r + 1]):
            acc += data[p] * v[indices[p]]
        if r < j_rhs.size:
            acc -= j_rhs[r]
        elif r < o_l:
            acc -= a_target[r - j_rhs.size]
        elif r < o_n:
            acc += l_bias[r - o_l]
        elif r < o_s:
            acc += n_bias[r - o_n]
        out[r] = acc
    return out


def rows(sys, options: Options | None = None):
    """The problem of :func:`build` (``joints="rows"``) without its matrix, for matrix-free
    solvers (kernels/pgs_matrix_free/): (H, q, cfm, lo, hi, findex, mu) with the matrix
    H M^-1 H' + cfm I (findex = -1 everywhere, mu = 0 for ``coupling="previous"``)."""
    options = options or Options()
    if options.joints != "rows":
        raise ModelError("box-friction rows() needs joints='rows' (the Schur form has a dense matrix)")
    H = _rows(sys)
    n = H.shape[0]
    q = _q(sys, H, options)
    lo, hi, findex, mu = _bounds(sys, options, n)
    if findex is None:
        findex, mu = np.full(n, -1, dtype=np.int64), np.zeros(n)
    return H, q, options.cfm + sys.cfm, lo, hi, findex, mu


@jit
def row_heights(point, gravity, o_n, copies):
    """Each row's height for the sweep order of the matrix-free PGS (kernels/pgs_matrix_free/
    ``sweep_order``: the highest first), (o_n + copies nc,): the ``o_n`` rows before the contacts
    (joints, motors, limits) +inf, then ``copies`` blocks of nc rows ([N; S; T]: 3; N: 1), each
    contact's row at its point's height along -gravity (0 without gravity: H's order)."""
    nc = point.shape[0]
    g = np.sqrt(gravity[0] ** 2 + gravity[1] ** 2 + gravity[2] ** 2)
    height = np.full(o_n + copies * nc, np.inf)
    for i in range(nc):
        up = 0.0
        if g > 0.0:
            up = -(point[i, 0] * gravity[0] + point[i, 1] * gravity[1] + point[i, 2] * gravity[2]) / g
        for k in range(copies):
            height[o_n + k * nc + i] = up
    return height


def build(sys, options: Options | None = None) -> BoxedLCP:
    options = options or Options()
    o_a, o_l, o_n, o_s, o_t, n = _layout(sys, options)
    nc = sys.nc
    factors = None      # (H, W, cfm) of a sparse Delassus matrix assembled from the body blocks
    if options.joints == "schur" and sys.nj:
        from .common import refuse_dense
        refuse_dense("box-friction (joints by Schur complement)", {"H W H'": (n, n), "X": (sys.nj, n + 1)},
                     "use fewer bodies, or joints='rows' (sparse)")
        H = sp.vstack([sys.A, sys.L, sys.N, sys.S, sys.T], format="csr")
        rhs = np.concatenate([sys.a_target, -sys.l_bias, -sys.n_bias, np.zeros(2 * nc)])
        JW, HW = sys.J @ sys.Minv, H @ sys.Minv
        X = _joint_solve(sys, np.hstack([dense(JW @ H.T), (sys.J @ sys.v_free() - sys.j_rhs)[:, None]]))
        Mat = dense(HW @ H.T) - dense(HW @ sys.J.T) @ X[:, :-1] + (options.cfm + sys.cfm) * np.eye(n)
        Mat = 0.5 * (Mat + Mat.T)
        q = np.ascontiguousarray(H @ sys.v_free() - rhs - dense(HW @ sys.J.T) @ X[:, -1], dtype=np.float64)
        _centre(sys, q, options)
    else:
        H = _rows(sys)
        if sys.body_blocks and n <= options.dense_max and sp.issparse(H) and H.format == "csr":
            # the dense problem in one compiled call: Delassus matrix, q, bounds (_dense_parts)
            Mat, q, lo, hi, findex, mu, finite = _dense_parts(
                H.indptr.astype(np.int64, copy=False), H.indices.astype(np.int64, copy=False), f64(H.data),
                sys.W_blocks, float(options.cfm + sys.cfm), sys.v_free(), f64(sys.j_rhs), f64(sys.a_target),
                f64(sys.l_bias), f64(sys.n_bias), o_a, o_l, o_n, f64(sys.a_max), f64(sys.mu), f64(sys.normal_guess),
                float(options.new_contact_bound), options.coupling == "current",
                centre_of(options, options.cfm + sys.cfm))
            make = BoxedLCP.trusted if finite else BoxedLCP
            if options.coupling != "current" or not nc:
                findex = mu = None
            # box-qp factorises its Newton steps island by island
            structure = ProblemStructure(row_groups=_row_groups(o_a, o_l, o_n, o_s, n),
                                         islands=row_islands(H.indptr, H.indices, o_n, o_s))
            return make(Mat, q, lo, hi, findex, mu, structure=structure)
        if sys.W_blocks is not None:    # compiled: only row pairs sharing a body (mechanics/kernels.py)
            Mat = delassus(sys, H, options.cfm + sys.cfm, dense=n <= options.dense_max)
            factors = (H, sys.W_blocks, options.cfm + sys.cfm)
        else:
            Mat = H @ sys.Minv @ H.T + (options.cfm + sys.cfm) * sp.eye(n, format="csr")
            Mat = dense(Mat) if n <= options.dense_max else sp.csr_matrix(Mat)
        q = _q(sys, H, options)
    lo, hi, findex, mu = _bounds(sys, options, n)
    if findex is None or not nc:
        findex = mu = None
    # assembled here, finite with a finite state: the checks of the constructor only where q is not
    make = BoxedLCP.trusted if (np.isfinite(q).all() and (sp.issparse(Mat) or Mat.flags.c_contiguous)) else BoxedLCP
    return make(Mat, q, lo, hi, findex, mu, structure=_structure(sys, H, Mat, factors, o_a, o_l, o_n, o_s, n, nc))


def _row_groups(o_a, o_l, o_n, o_s, n) -> dict:
    """The problem's row kinds: joint, motor, limit, normal, friction rows, in that order."""
    return {"joint": slice(0, o_a), "motor": slice(o_a, o_l), "limit": slice(o_l, o_n),
            "normal": slice(o_n, o_s), "friction": slice(o_s, n)}


def _structure(sys, H, Mat, factors, o_a, o_l, o_n, o_s, n, nc) -> ProblemStructure:
    """The problem's row groups and, where its matrix is sparse, its islands, their body-pair
    groups and the factors (H, W, cfm) of its matrix (box-qp's interior point solves in body space)."""
    islands = groups = None
    sparse = sp.issparse(Mat)
    if sparse and sys.body_blocks:
        islands = row_islands(H.indptr, H.indices, o_n, o_s)
        if islands[0] > 1:              # box-qp factorises the islands' Newton steps over these groups
            if H is sys.NST:            # a contact's three rows share its bodies: its group, found once
                groups = np.tile(body_pair_groups(H.indptr[:nc + 1], H.indices), 3)
            else:
                groups = body_pair_groups(H.indptr, H.indices)
    return ProblemStructure(row_groups=_row_groups(o_a, o_l, o_n, o_s, n), islands=islands, body_groups=groups,
                            factors=factors if sparse else None)


@jit
def _dense_parts(indptr, indices, data, W, cfm, v, j_rhs, a_target, l_bias, n_bias, o_a, o_l, o_n, a_max, mu_c,
                 guess, new_bound, current, centre):
    """The dense problem of :func:`build` in one call: H W H' + cfm I (mechanics/kernels.py
    ``delassus_dense``), q (:func:`q_kernel`, its normal rows centred by :func:`centre_normals`), the
    bounds (:func:`box_bounds`) and whether q is finite. Returns (M, q, lo, hi, findex, mu, finite)."""
    n = indptr.size - 1
    Mat = delassus_dense(indptr, indices, data, W, n, np.full(n, cfm))
    q = q_kernel(indptr, indices, data, v, j_rhs, a_target, l_bias, n_bias)
    centre_normals(q, o_n, guess, new_bound, centre)
    lo, hi, findex, mu = box_bounds(o_a, o_l, o_n, n, a_max, mu_c, guess, new_bound, current)
    finite = True
    for i in range(n):
        if not np.isfinite(q[i]):
            finite = False
    return Mat, q, lo, hi, findex, mu, finite


@jit
def row_islands(indptr, indices, o_n, o_s):
    """(count, label per row) of the independent row groups of the rows [..; N; S; T] in CSR (normals
    o_n:o_s, then the friction rows of the same contacts in the same order): solvers/box_qp/ solves
    a sparse problem's apart and factorises a dense one's Newton steps island by island. Rows joined
    by the bodies they touch (:func:`~contactlab.kernels.components.row_block_components`), over the rows up to the
    normals only; a contact's friction rows S, T touch its normal's bodies and take its label.
    Compiled: the simulator's compiled step (:mod:`contactlab.sim.box_kernels`) finds the labels the build finds."""
    count, head = row_block_components(indptr[:o_s + 1], indices, np.full(o_s, -1, dtype=np.int64), 6)
    nc = o_s - o_n
    label = np.empty(o_s + 2 * nc, dtype=np.int64)
    label[:o_s] = head
    label[o_s:o_s + nc] = head[o_n:o_s]
    label[o_s + nc:] = head[o_n:o_s]
    return count, label


def warm_start(sys, previous: StepResult, match: np.ndarray, options: Options | None = None) -> np.ndarray:
    """This step's starting point from the previous step's impulses, contact by contact: a contact
    matched to a previous one (``match``, collision.match_indices: same shape pair, nearest point)
    starts from that one's normal and friction impulses, a new contact from 0; joint, motor and
    limit rows from the previous values where their counts are unchanged (else 0). Rows follow
    :func:`_layout` ([J; A; L; N; S; T], J omitted with ``joints="schur"``). A contact's rows no
    longer depend on the order collision reports it in, nor on contacts coming and going."""
    o_a, o_l, o_n, o_s, o_t, n = _layout(sys, options or Options())
    z = np.zeros(n)
    for lo_, hi_, prev in ((0, o_a, previous.joint), (o_a, o_l, previous.motor), (o_l, o_n, previous.limit)):
        if hi_ > lo_ and prev.size == hi_ - lo_:
            z[lo_:hi_] = prev
    matched_impulses(z, o_n, match, previous.normal, previous.tangent)
    return z


@jit
def matched_impulses(z, o_n, match, normal, tangent):
    """z's normal, S and T rows (from o_n, nc = match.size contacts each) from the matched previous
    contact's impulses (0 where match is -1)."""
    nc = match.size
    for i in range(nc):
        k = match[i]
        if k >= 0:
            z[o_n + i] = normal[k]
            z[o_n + nc + i] = tangent[k, 0]
            z[o_n + 2 * nc + i] = tangent[k, 1]


def _joint_solve(sys, B: np.ndarray) -> np.ndarray:
    """(J W J')^-1 B: Cholesky, or least squares when joint rows are redundant."""
    import scipy.linalg as sla
    A = dense(sys.J @ sys.Minv @ sys.J.T)
    try:
        return sla.cho_solve(sla.cho_factor(A, check_finite=False), B, check_finite=False)
    except np.linalg.LinAlgError:
        return sla.lstsq(A, B, check_finite=False)[0]


def recover(sys, problem, solution, options: Options | None = None) -> StepResult:
    options = options or Options()
    o_a, o_l, o_n, o_s, o_t, n = _layout(sys, options)
    z = np.asarray(solution.z, dtype=np.float64)
    if options.joints == "schur" and sys.nj:
        from .common import refuse_dense
        refuse_dense("box-friction (joints by Schur complement)", {"H W H'": (n, n), "X": (sys.nj, n + 1)},
                     "use fewer bodies, or joints='rows' (sparse)")
        H = sp.vstack([sys.A, sys.L, sys.N, sys.S, sys.T], format="csr")
        # c_j = -(J W J')^-1 (J W H' z + J v_free - j_rhs)   (arechavaleta, after eq. 17)
        joint = -_joint_solve(sys, sys.J @ (sys.Minv @ (H.T @ z)) + sys.J @ sys.v_free() - sys.j_rhs)
        v_next = sys.v_free() + sys.Minv @ (H.T @ z + sys.J.T @ joint)
    else:
        dv = solution.info.get("velocity_change") if isinstance(getattr(solution, "info", None), dict) else None
        H, S, T, Minv = _rows(sys), sys.S, sys.T, sys.Minv
        if (z.flags.c_contiguous and sys.nc and all(sp.issparse(X) and X.format == "csr" for X in (H, Minv, S))
                and sp.issparse(T) and S.indices is T.indices and S.indptr is T.indptr):
            # v+ = v_free + M^-1 H' z (or + the matrix-free solver's dv), the tangent impulses and the
            # contact modes in one compiled call
            if dv is None:
                v_next, tangent, modes = recover_parts(Minv.indptr, Minv.indices, Minv.data, H.indptr, H.indices,
                                                        H.data, z, sys.v_free(), o_n, S.indptr, S.indices, S.data,
                                                        T.data, MODE_IMPULSE_TOL, MODE_SPEED_TOL)
            else:
                v_next, tangent, modes = contact_parts(sys.v_free() + dv, z, o_n, S.indptr, S.indices, S.data,
                                                        T.data, MODE_IMPULSE_TOL, MODE_SPEED_TOL)
            return StepResult(v_next=v_next, normal=z[o_n:o_s], tangent=tangent, joint=z[:o_a], limit=z[o_l:o_n],
                              motor=z[o_a:o_l], modes=modes)
        if dv is None:
            dv = rows_times(Minv, rows_transpose_times(H, z))
        v_next = sys.v_free() + dv     # a matrix-free solver's M^-1 H' z (kernels/pgs_matrix_free/)
        joint = z[:o_a]
    normal = z[o_n:o_s]
    return StepResult(v_next=v_next, normal=normal, tangent=np.column_stack([z[o_s:o_t], z[o_t:n]]),
                      joint=joint, limit=z[o_l:o_n], motor=z[o_a:o_l],
                      modes=contact_modes(sys, v_next, normal))


@jit
def recover_parts(m_ptr, m_idx, m_data, h_ptr, h_idx, h_data, z, v_free, o_n, s_ptr, s_idx, s_data, t_data,
                   impulse_tol, speed_tol):
    """:func:`recover`'s arrays in one call: v+ = v_free + M^-1 (H' z) (mechanics/kernels.py
    ``rows_transpose_times`` then ``rows_times``), the (nc, 2) tangent impulses and the contact
    modes (models/common.py ``contact_modes`` on S and T sharing one pattern)."""
    v_next = v_free + _rows_times(m_ptr, m_idx, m_data, _rows_transpose_times(h_ptr, h_idx, h_data, z, v_free.size))
    return contact_parts(v_next, z, o_n, s_ptr, s_idx, s_data, t_data, impulse_tol, speed_tol)


@jit
def contact_parts(v_next, z, o_n, s_ptr, s_idx, s_data, t_data, impulse_tol, speed_tol):
    """(v_next, the (nc, 2) tangent impulses, the contact modes) of :func:`recover_parts`."""
    nc = s_ptr.size - 1
    tangent = np.empty((nc, 2))
    for c in range(nc):
        tangent[c, 0] = z[o_n + nc + c]
        tangent[c, 1] = z[o_n + 2 * nc + c]
    modes = _modes_of_rows(s_ptr, s_idx, s_data, t_data, v_next, z[o_n:o_n + nc].copy(), impulse_tol, speed_tol)
    return v_next, tangent, modes


#: the simulator's compiled step builds, solves and recovers these rows itself on scenes of free
#: bodies (:mod:`contactlab.models`, "stage capabilities"; :class:`contactlab.sim.box_stages.CompiledRowStages`)
#: and, with ``joints="schur"`` solved by pgs-sm, on jointed scenes
#: (:class:`contactlab.sim.box_joint_stages.CompiledSchurRowStages`)
COMPILED_STEP = "box-rows"


def rows_available(options: Options | None = None) -> bool:
    """Whether :func:`rows` gives this model's problem for ``options`` (the joint rows kept as rows,
    ``joints="rows"``; the Schur form's matrix is dense): the simulator may then solve it
    matrix-free or certify a warm start without its matrix."""
    return (options or Options()).joints == "rows"


def sweep_heights(sys, options: Options | None, gravity) -> np.ndarray:
    """Each row of :func:`build`'s problem's height against ``gravity`` (:func:`row_heights`: the
    rows before the contacts +inf, then [N; S; T] at their contact points), for sweeps that carry
    a stack's weight to the ground top down (pgs's ``height``, the matrix-free sweeps)."""
    point = np.ascontiguousarray(sys.contacts.point, dtype=np.float64).reshape(-1, 3) if sys.nc else np.zeros((0, 3))
    return row_heights(point, np.asarray(gravity, dtype=np.float64), _layout(sys, options or Options())[2], 3)


#: the old private spellings of the compiled pieces (the simulator's compiled step, :mod:`contactlab.sim.box_kernels`,
#: calls them by their public names inside its own kernels)
_box_bounds, _q_kernel, _matched_impulses, _recover_parts, _contact_parts = (box_bounds, q_kernel, matched_impulses,
                                                                            recover_parts, contact_parts)

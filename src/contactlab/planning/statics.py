"""Contacts, the acceleration LCP and the three stability tests of a sub-assembly, planar or 3D
(loomis-balkcom §III-A and §V).

The whole structure's contact rows are built once. For a sub-assembly S the contacts are those
whose bodies are both in S (or one is the ground), and its frictionless acceleration LCP is the
principal sub-problem of the whole structure's on those rows (the paper's eq. 8: J_12 = 0),

    a = A f + b,  A = J W J',  b = J W F_ext,  0 <= f  perp  a >= 0      (eqs. 1-4)

with W = M^-1 (diagonal: per block m, m, I in the plane; m, m, m, Ix, Iy, Iz in 3D). A node is stable when its block accelerations
W (F_ext + J' f) all vanish (tests ``dantzig`` and ``reuse``), or when the statics LP
J' f + F_ext = 0, f_n >= 0, |f_t| <= mu f_n is feasible (test ``lp``). Without friction the two
are the same question: the frictionless block accelerations are unique, and they vanish exactly
when an equilibrium f >= 0 exists (then (f, a = 0) solves the LCP).

Tolerances (ties): an acceleration counts as zero when |a| <= ``ACC_TOL`` g (rotational
accelerations times the block's half diagonal); the LP is feasible at HiGHS's primal feasibility
tolerance 1e-9 on rows scaled by the block weight. A configuration balanced exactly on an edge
(a tie) is stable under both tests in exact arithmetic; the built-in structures keep clear of
ties (``random_structure`` keeps 0.1 of margin).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import ParamError
from .blocks import Structure

ACC_TOL = 1e-8


class PlanningError(RuntimeError):
    """A stability test got no certified answer from its solver (a solver defect, not bad input)."""


class StaticsModel:
    """Contacts of a :class:`Structure` (the corners of the overlap of every touching pair of
    faces: two points in the plane, four in 3D; the ground is body -1), the rows J (normal) and T
    (tangents: one per contact in the plane, two in 3D, row c * ntan + k) over the coordinates
    (x, y, theta per planar block; x, y, z, wx, wy, wz per 3D box), A = J W J' and b = J W F_ext."""

    def __init__(self, s: Structure):
        self.structure = s
        n, dim = s.n, s.dim
        C = np.column_stack([s.x, s.y] + ([] if dim == 2 else [s.zc]))
        H = np.column_stack([s.hw, s.hh] + ([] if dim == 2 else [s.hd]))
        eps = 1e-9 * max(1.0, float(np.max(np.abs(np.concatenate([C.ravel(), H.ravel()])))))
        A_, B_, P_, N_ = [], [], [], []

        def corners(lo, hi, axis, level):
            """Corners of the box [lo, hi] on the axes other than ``axis``, at ``level`` on it."""
            others = [k for k in range(dim) if k != axis]
            pts = []
            for choice in np.ndindex(*(2,) * len(others)):
                p = np.empty(dim)
                p[axis] = level
                for k, c in zip(others, choice):
                    p[k] = (lo[k], hi[k])[c]
                pts.append(p)
            return pts

        for j in np.flatnonzero(np.abs(C[:, 1] - H[:, 1]) <= eps):          # on the ground
            for p in corners(C[j] - H[j], C[j] + H[j], 1, 0.0):
                A_.append(-1), B_.append(j), P_.append(p), N_.append(np.eye(dim)[1])
        for ax in range(dim):                                            # upper face of i on lower face of j
            touch = np.abs((C[:, ax] + H[:, ax])[:, None] - (C[:, ax] - H[:, ax])) <= eps
            for k in range(dim):
                if k != ax:
                    touch &= (np.minimum((C[:, k] + H[:, k])[:, None], C[:, k] + H[:, k])
                              - np.maximum((C[:, k] - H[:, k])[:, None], C[:, k] - H[:, k])) > eps
            for i, j in np.argwhere(touch):
                lo, hi = np.maximum(C[i] - H[i], C[j] - H[j]), np.minimum(C[i] + H[i], C[j] + H[j])
                for p in corners(lo, hi, ax, C[i, ax] + H[i, ax]):
                    A_.append(i), B_.append(j), P_.append(p), N_.append(np.eye(dim)[ax])
        self.body_a = np.array(A_, dtype=np.int64)
        self.body_b = np.array(B_, dtype=np.int64)
        nc = self.nc = self.body_a.size
        P = np.array(P_).reshape(nc, dim)
        Nrm = np.array(N_).reshape(nc, dim)
        if dim == 2:
            tans = [np.column_stack([-Nrm[:, 1], Nrm[:, 0]])]
        else:   # t1: the next axis after the normal's, t2 = n x t1
            t1 = np.roll(Nrm, 1, axis=1)
            tans = [t1, np.cross(Nrm, t1)]
        self.dof = dof = 3 if dim == 2 else 6
        self.ntan = len(tans)

        def rows(U):
            """Rows over the coordinates for unit directions U (nc, dim) at the contact points."""
            R = np.zeros((nc, dof * n))
            for sign, body in ((1.0, self.body_b), (-1.0, self.body_a)):
                ok = np.flatnonzero(body >= 0)
                bb = body[ok]
                r = P[ok] - C[bb]
                u = U[ok]
                rot = (r[:, 0] * u[:, 1] - r[:, 1] * u[:, 0])[:, None] if dim == 2 else np.cross(r, u)
                for c in range(dim):
                    R[ok, dof * bb + c] = sign * u[:, c]
                for c in range(rot.shape[1]):
                    R[ok, dof * bb + dim + c] = sign * rot[:, c]
            return R

        J = rows(Nrm)
        T = np.stack([rows(t) for t in tans], axis=1).reshape(nc * self.ntan, dof * n)
        self.J, self.T = J, T
        m = s.mass
        inv_i = 1.0 / np.atleast_2d(s.inertia.T).T
        self.W = np.column_stack([np.repeat(1 / m[:, None], dim, axis=1), inv_i]).ravel()
        F = np.zeros((n, dof))
        F[:, 1] = -m * s.g
        self.F = F.ravel()
        L = np.sqrt(s.hw ** 2 + s.hh ** 2 + (0.0 if dim == 2 else s.hd ** 2))
        lever = np.column_stack([np.ones((n, dim)), np.repeat(L[:, None], dof - dim, axis=1)])
        # per-coordinate scale turning an acceleration into units of g (rotations times half diagonal)
        self.acc_scale = lever.ravel() / s.g
        # per-coordinate scale of a force balance row (the block's weight, times half diagonal for moments)
        self.force_scale = 1.0 / (np.repeat(m * s.g, dof) * lever.ravel())
        WJt = self.W[:, None] * J.T
        self.A = J @ WJt
        self.b = J @ (self.W * self.F)
        # neighbours (for the planner's candidate blocks) and grounded blocks
        self.grounded = np.zeros(n, dtype=bool)
        self.grounded[self.body_b[self.body_a < 0]] = True
        self.neighbours = [set() for _ in range(n)]
        for a, b in zip(self.body_a, self.body_b):
            if a >= 0:
                self.neighbours[a].add(int(b))
                self.neighbours[b].add(int(a))

    def contacts_of(self, in_s: np.ndarray) -> np.ndarray:
        """Sorted indices of the contacts among the blocks in ``in_s`` (and the ground)."""
        ok_a = np.where(self.body_a >= 0, in_s[np.maximum(self.body_a, 0)], True)
        return np.flatnonzero(ok_a & in_s[self.body_b])

    def coords_of(self, in_s: np.ndarray) -> np.ndarray:
        return (self.dof * np.flatnonzero(in_s)[:, None] + np.arange(self.dof)).ravel()

    def acceleration(self, in_s: np.ndarray, idx: np.ndarray, f: np.ndarray) -> float:
        """max |block acceleration| of the sub-assembly under contact forces f (in units of g)."""
        cols = self.coords_of(in_s)
        acc = self.W[cols] * (self.F[cols] + self.J[np.ix_(idx, cols)].T @ f)
        return float(np.max(np.abs(acc * self.acc_scale[cols]), initial=0.0))


@dataclass
class NodeResult:
    """One stability test: ``stable``; ``pivots`` (simplex iterations or Dantzig pivots);
    ``majors`` (Dantzig major cycles); ``n`` contacts; ``k`` contacts of the warm start (Theorem 1
    bounds majors by n - k); ``idx``/``f``: the node's contacts and forces (kept for reuse)."""
    stable: bool
    pivots: int
    majors: int = 0
    n: int = 0
    k: int = 0
    size: int = 0
    idx: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    f: np.ndarray = field(default_factory=lambda: np.zeros(0))


def lp_feasible(model: StaticsModel, in_s: np.ndarray, mu: float | None = None) -> tuple[bool, int, np.ndarray]:
    """Statics LP of the sub-assembly with HiGHS (dual simplex, presolve off so that every
    pivot is counted): find f_n >= 0, f_t with |f_t| <= mu f_n (3D: each of the two tangential
    components <= mu f_n / sqrt 2, a pyramid inside the cone) and J' f_n + T' f_t = -F_ext on the
    sub-assembly's coordinates. Returns (feasible, simplex iterations, f_n)."""
    import highspy

    from ..highs import new_highs
    import scipy.sparse as sp

    mu = model.structure.mu if mu is None else float(mu)
    idx = model.contacts_of(in_s)
    cols = model.coords_of(in_s)
    k = idx.size
    if k == 0:
        return bool(cols.size == 0), 0, np.zeros(0)
    D = model.force_scale[cols][:, None]
    blocks = [D * model.J[np.ix_(idx, cols)].T]
    nt = model.ntan
    if mu > 0:   # tangent rows of these contacts; 3D: the inner pyramid |f_t1|, |f_t2| <= mu f_n / sqrt 2
        trow = (nt * idx[:, None] + np.arange(nt)).ravel()
        blocks.append(D * model.T[np.ix_(trow, cols)].T)
    Aeq = sp.csc_matrix(np.hstack(blocks))
    rhs = -model.force_scale[cols] * model.F[cols]
    nv = Aeq.shape[1]
    lower = np.concatenate([np.zeros(k), np.full(nv - k, -highspy.kHighsInf)])
    upper = np.full(nv, highspy.kHighsInf)
    row_lo, row_hi, mats = [rhs], [rhs], [Aeq]
    if mu > 0:   # |f_t| <= mu' f_n as two rows: f_t - mu' f_n <= 0, -f_t - mu' f_n <= 0
        me = mu if nt == 1 else mu / np.sqrt(2.0)
        E = sp.csc_matrix(np.repeat(np.eye(k), nt, axis=0))     # tangent row -> its contact
        I = sp.identity(k * nt, format="csc")
        mats.append(sp.hstack([-me * E, I]))
        mats.append(sp.hstack([-me * E, -I]))
        row_lo += [np.full(2 * k * nt, -highspy.kHighsInf)]
        row_hi += [np.zeros(2 * k * nt)]
    Afull = sp.csc_matrix(sp.vstack(mats))
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = nv, Afull.shape[0]
    lp.col_cost_ = np.zeros(nv)
    lp.col_lower_, lp.col_upper_ = lower, upper
    lp.row_lower_, lp.row_upper_ = np.concatenate(row_lo), np.concatenate(row_hi)
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = Afull.indptr.astype(np.int32)
    lp.a_matrix_.index_ = Afull.indices.astype(np.int32)
    lp.a_matrix_.value_ = Afull.data
    h = new_highs(presolve="off", primal_feasibility_tolerance=1e-9, dual_feasibility_tolerance=1e-9)
    h.passModel(lp)
    h.run()
    status = h.getModelStatus()
    its = int(h.getInfo().simplex_iteration_count)
    if status == highspy.HighsModelStatus.kOptimal:
        return True, its, np.asarray(h.getSolution().col_value)[:k]
    if status == highspy.HighsModelStatus.kInfeasible:
        return False, its, np.zeros(k)
    raise ParamError(f"statics LP ended with HiGHS status {h.modelStatusToString(status)}")


class StabilityTest:
    """A stability test of a node; ``__call__(in_s, parent)`` returns a :class:`NodeResult`.
    ``parent`` is the stable parent's result (the node less one block), or None at the root."""
    name = ""

    def __init__(self, model: StaticsModel):
        self.model = model

    def __call__(self, in_s: np.ndarray, parent: NodeResult | None) -> NodeResult:
        raise NotImplementedError


class LPTest(StabilityTest):
    """(a) statics LP (HiGHS simplex; pivots = simplex iterations), friction mu of the structure."""
    name = "lp"

    def __call__(self, in_s, parent):
        ok, its, f = lp_feasible(self.model, in_s)
        return NodeResult(bool(ok), its, size=int(in_s.sum()), n=int(f.size))


class DantzigTest(StabilityTest):
    """(b) Cottle-Dantzig on the node's frictionless acceleration LCP, from scratch."""
    name = "dantzig"
    reuse = False

    def __init__(self, model):
        super().__init__(model)
        if model.structure.mu > 0:
            raise ParamError(f"test {self.name!r} solves the frictionless acceleration LCP; structure "
                             f"{model.structure.name!r} has mu = {model.structure.mu}: use --test lp or mu = 0")

    def __call__(self, in_s, parent):
        from ..problems import LCP
        from ..solvers import solve
        m = self.model
        idx = m.contacts_of(in_s)
        size = int(in_s.sum())
        if idx.size == 0:
            return NodeResult(False, 0, size=size, idx=idx)
        kwargs, k = {}, 0
        if self.reuse and parent is not None and parent.idx.size:
            # Theorem 1: the parent's contacts are a subset of this node's; its solution solves the
            # principal sub-LCP on them (eq. 8), so Dantzig starts there
            kwargs["warm_start"] = (np.searchsorted(idx, parent.idx), parent.f)
            k = parent.idx.size
        # the solver's default pivot cap (20 n + 100): its degenerate tie rule keeps the rank-deficient
        # brickwork LCPs at a few n pivots from scratch (pyramid-91, n = 338: 1340)
        sol = solve(LCP(m.A[np.ix_(idx, idx)], m.b[idx]), method="dantzig", **kwargs)
        if not sol.success:
            raise PlanningError(f"dantzig gave {sol.status.name} on a node's acceleration LCP (n = {idx.size}); "
                             "the frictionless acceleration LCP of a structure always has a solution")
        stable = m.acceleration(in_s, idx, sol.z) <= ACC_TOL
        return NodeResult(bool(stable), int(sol.pivots), int(sol.iterations), int(idx.size), int(k), size,
                          idx, np.asarray(sol.z))


class ReuseTest(DantzigTest):
    """(c) Cottle-Dantzig warm-started from the stable parent's solution (loomis-balkcom Thm. 1)."""
    name = "reuse"
    reuse = True


TESTS = {"lp": LPTest, "dantzig": DantzigTest, "reuse": ReuseTest}


def make_test(name: str, model: StaticsModel) -> StabilityTest:
    if name not in TESTS:
        raise ParamError(f"unknown stability test {name!r}; use one of {', '.join(TESTS)}")
    return TESTS[name](model)

"""Seeded problem generators for tests, benchmarks and the report.

Every random generator takes a ``numpy.random.Generator`` ``rng`` (DESIGN.md convention 8) and
returns a contactlab problem. Matrix classes:

* :func:`random_spd` -- symmetric positive definite, chosen spectrum (condition number ``cond``);
* :func:`random_psd` -- symmetric positive semi-definite of a given rank;
* :func:`random_p_matrix` -- nonsymmetric P-matrix (SPD + skew-symmetric, so x'Mx > 0);
* :func:`friction_pyramid_lcp` -- Stewart--Trinkle / Anitescu--Potra velocity-level LCP with a
  linearised (pyramid) friction cone, built from random contact Jacobians of a few rigid bodies;
* :func:`box_stack_contact_lcp` / :func:`box_stack_factored` -- frictionless contact LCP
  N M^-1 N' of a random stack of boxes (PSD, rank-deficient with several contacts per face);
* :func:`box_column`, :func:`box_pyramid` -- the block structures of loomis-balkcom Table I;
* :func:`murty` -- Murty's (1978) example on which Lemke's method takes 2^n pivots;
* :func:`kostreva_cycling` -- Kostreva's (1979) degenerate example on which Lemke's method
  without a lexicographic ratio test cycles.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..errors import ProblemError
from .factored import FactoredLCP
from .lcp import LCP

__all__ = ["spd_matrix", "psd_matrix", "p_matrix", "random_spd", "random_psd", "random_p_matrix",
           "ContactSystem", "random_contact_system", "friction_pyramid_matrix", "friction_pyramid_lcp",
           "BoxStructure", "random_box_stack", "box_contacts", "box_column", "box_pyramid", "box_structure_factored",
           "box_stack_factored", "box_stack_contact_lcp", "murty", "kostreva_cycling"]

GRAVITY = 9.81


def _check_rng(rng) -> np.random.Generator:
    if not isinstance(rng, np.random.Generator):
        raise ProblemError("rng must be a numpy.random.Generator, e.g. numpy.random.default_rng(0)")
    return rng


def _check_n(name: str, n, minimum: int = 1) -> int:
    if not isinstance(n, (int, np.integer)) or n < minimum:
        raise ProblemError(f"{name} must be an integer >= {minimum}, got {n!r}")
    return int(n)


def _orthogonal(n: int, rng: np.random.Generator) -> np.ndarray:
    """A Haar-random orthogonal matrix (QR of a Gaussian matrix with the sign fix)."""
    Q, R = np.linalg.qr(rng.standard_normal((n, n)))
    return Q * np.sign(np.diag(R) + (np.diag(R) == 0))


# ----------------------------------------------------------------------------------------------
# Matrix classes
# ----------------------------------------------------------------------------------------------
def spd_matrix(n: int, rng: np.random.Generator, cond: float | None = None) -> np.ndarray:
    """Symmetric positive definite n x n matrix Q diag(lam) Q'.

    With ``cond``, the eigenvalues are geometrically spaced in [1, cond] (2-norm condition number
    exactly ``cond``); without, they are uniform in [1, 10].
    """
    n = _check_n("n", n)
    rng = _check_rng(rng)
    if cond is None:
        lam = rng.uniform(1.0, 10.0, n)
    else:
        if not cond >= 1.0 or not np.isfinite(cond):
            raise ProblemError(f"cond must be a finite number >= 1, got {cond!r}")
        lam = np.geomspace(1.0, float(cond), n) if n > 1 else np.array([1.0])
        lam = rng.permutation(lam)
    Q = _orthogonal(n, rng)
    M = (Q * lam) @ Q.T
    return 0.5 * (M + M.T)


def _n_rng_rank(n, rng, rank):
    """(rng, rank) from the (n, rng, rank) signature; the old order (n, rank, rng) still works."""
    if isinstance(rank, np.random.Generator) and not isinstance(rng, np.random.Generator):
        rng, rank = rank, rng
    if rank is None:
        rank = max(1, int(n) // 2)
    return rng, rank


def psd_matrix(n: int, rng: np.random.Generator, rank: int | None = None) -> np.ndarray:
    """Symmetric positive semi-definite n x n matrix B B' of exactly ``rank`` (default n // 2; B is
    n x rank, Gaussian). ``psd_matrix(n, rank, rng)`` (the old order) is accepted."""
    rng, rank = _n_rng_rank(n, rng, rank)
    n = _check_n("n", n)
    rank = _check_n("rank", rank, 0)
    if rank > n:
        raise ProblemError(f"rank must be <= n ({n}), got {rank}")
    B = _check_rng(rng).standard_normal((n, rank)) / np.sqrt(max(rank, 1))
    M = B @ B.T
    return 0.5 * (M + M.T)


def p_matrix(n: int, rng: np.random.Generator, skew: float = 1.0) -> np.ndarray:
    """Nonsymmetric P-matrix S + K: S SPD (spectrum in [1, 10]), K skew-symmetric of norm ~ ``skew`` * ||S||.

    x'(S + K)x = x'Sx > 0, so the matrix is positive definite (not symmetric) and hence every
    principal minor is positive (a P-matrix; Cottle, Pang & Stone, Thm 3.3.7).
    """
    S = spd_matrix(n, rng)
    G = rng.standard_normal((n, n))
    K = G - G.T
    norm = np.linalg.norm(K, 2) if n > 1 else 1.0
    if norm > 0:
        K *= skew * np.linalg.norm(S, 2) / norm
    return S + K


def _q(n: int, rng: np.random.Generator) -> np.ndarray:
    return rng.standard_normal(n)


def random_spd(n: int, rng: np.random.Generator, cond: float | None = None) -> LCP:
    """LCP(M, q) with M from :func:`spd_matrix` and q standard normal (unique solution)."""
    M = spd_matrix(n, rng, cond)
    return LCP(M, _q(n, rng))


def random_psd(n: int, rng: np.random.Generator, rank: int | None = None) -> LCP:
    """LCP(M, q) with M PSD of ``rank`` (default n // 2) and q = M y - s, y >= 0, s >= 0 random, y's = 0.

    q is built from a known complementary pair so the (possibly non-unique) problem is solvable:
    z = y, w = M y + q = s solves it. ``random_psd(n, rank, rng)`` (the old order) is accepted.
    """
    rng, rank = _n_rng_rank(n, rng, rank)
    M = psd_matrix(n, rng, rank)
    y = np.where(rng.random(n) < 0.5, rng.uniform(0.0, 1.0, n), 0.0)
    s = np.where(y > 0, 0.0, rng.uniform(0.0, 1.0, n))
    return LCP(M, s - M @ y)


def random_p_matrix(n: int, rng: np.random.Generator, skew: float = 1.0) -> LCP:
    """LCP(M, q) with M a nonsymmetric P-matrix (:func:`p_matrix`) and q standard normal."""
    M = p_matrix(n, rng, skew)
    return LCP(M, _q(n, rng))


# ----------------------------------------------------------------------------------------------
# Rigid bodies and contact Jacobians
# ----------------------------------------------------------------------------------------------
def _box_inertia(mass: float, half: np.ndarray) -> np.ndarray:
    """Principal moments of a solid box with half-extents ``half`` (3,)."""
    a, b, c = (2.0 * half) ** 2
    return mass / 12.0 * np.array([b + c, a + c, a + b])


def _contact_row_3d(point: np.ndarray, center: np.ndarray, direction: np.ndarray) -> np.ndarray:
    """Row mapping a body's (v, omega) in world frame to the point velocity along ``direction``."""
    r = point - center
    return np.concatenate([direction, np.cross(r, direction)])


def _contact_row_2d(point: np.ndarray, center: np.ndarray, direction: np.ndarray) -> np.ndarray:
    r = point - center
    return np.array([direction[0], direction[1], r[0] * direction[1] - r[1] * direction[0]])


@dataclass
class ContactSystem:
    """Contacts of a few rigid bodies (DESIGN.md notation).

    M (m, m) SPD mass matrix (6 dof per body: linear velocity, angular velocity, world frame); N (k, m) normal rows; D (k*d, m) friction-direction rows, grouped by
    contact; v (m,) velocities; f (m,) external forces; h step; mu (k,) friction coefficients.
    """

    M: np.ndarray
    N: np.ndarray
    D: np.ndarray
    v: np.ndarray
    f: np.ndarray
    h: float
    mu: np.ndarray
    d: int
    centers: np.ndarray | None = None   # (bodies, 3) body centres, where the (v, omega) rows are taken

    @property
    def v_free(self) -> np.ndarray:
        """Velocity without contact impulses: v + h M^-1 f."""
        return self.v + self.h * np.linalg.solve(self.M, self.f)


def random_contact_system(n_contacts: int, rng: np.random.Generator, *, d: int = 4, mu: float = 0.5,
                          bodies: int = 3, h: float = 0.01, velocity_scale: float = 0.5) -> ContactSystem:
    """``n_contacts`` random contacts among ``bodies`` free 3D rigid bodies (6 dof each) and the ground.

    Each contact joins a random body to another body or the ground, at a random point with a random
    unit normal; its ``d`` friction directions are spread evenly in the tangent plane (the pyramid of
    Stewart & Trinkle 1996). Rows give the velocity of the second body relative to the first.
    """
    k = _check_n("n_contacts", n_contacts)
    nb = _check_n("bodies", bodies)
    d = _check_n("d", d, 2)
    if not mu >= 0:
        raise ProblemError(f"mu must be >= 0, got {mu!r}")
    rng = _check_rng(rng)
    m = 6 * nb
    centers = rng.uniform(-1.0, 1.0, (nb, 3))
    M = np.zeros((m, m))
    for b in range(nb):
        mass = rng.uniform(0.5, 2.0)
        half = rng.uniform(0.1, 0.5, 3)
        R = _orthogonal(3, rng)
        M[6 * b:6 * b + 3, 6 * b:6 * b + 3] = mass * np.eye(3)
        M[6 * b + 3:6 * b + 6, 6 * b + 3:6 * b + 6] = (R * _box_inertia(mass, half)) @ R.T
    M = 0.5 * (M + M.T)
    N = np.zeros((k, m))
    D = np.zeros((k * d, m))
    angles = 2.0 * np.pi * np.arange(d) / d
    for c in range(k):
        b = int(rng.integers(nb))
        a = int(rng.integers(-1, nb))          # -1: the ground
        if a == b:
            a = -1
        p = centers[b] + rng.uniform(-0.5, 0.5, 3)
        n = rng.standard_normal(3)
        n /= np.linalg.norm(n)
        t1 = np.cross(n, [1.0, 0.0, 0.0] if abs(n[0]) < 0.9 else [0.0, 1.0, 0.0])
        t1 /= np.linalg.norm(t1)
        t2 = np.cross(n, t1)
        dirs = [n] + [np.cos(t) * t1 + np.sin(t) * t2 for t in angles]
        for j, u in enumerate(dirs):
            row = np.zeros(m)
            row[6 * b:6 * b + 6] += _contact_row_3d(p, centers[b], u)
            if a >= 0:
                row[6 * a:6 * a + 6] -= _contact_row_3d(p, centers[a], u)
            if j == 0:
                N[c] = row
            else:
                D[c * d + j - 1] = row
    v = velocity_scale * rng.standard_normal(m)
    f = np.zeros(m)
    for b in range(nb):
        f[6 * b + 2] = -GRAVITY * M[6 * b, 6 * b]
    return ContactSystem(M, N, D, v, f, float(h), np.full(k, float(mu)), d, centers)


def friction_pyramid_matrix(system: ContactSystem) -> tuple[np.ndarray, np.ndarray]:
    """(A, b) of the Stewart--Trinkle / Anitescu--Potra velocity-level LCP.

        [N M^-1 N'  N M^-1 D'  0 ] [c_n ]   [N v_free]
        [D M^-1 N'  D M^-1 D'  E ] [beta] + [D v_free]
        [mu         -E'        0 ] [lam ]   [0       ]

    with E (k d, k) block-diagonal of ones columns and mu = diag(mu_i) (Stewart & Trinkle 1996 eq. 23;
    Anitescu & Potra 1997). Variables: normal impulses, friction-direction impulses, and lambda
    (approximately the sliding speed).
    """
    s = system
    k, d = s.N.shape[0], s.d
    J = np.vstack([s.N, s.D])
    MinvJt = np.linalg.solve(s.M, J.T)
    G = J @ MinvJt
    G = 0.5 * (G + G.T)
    E = np.kron(np.eye(k), np.ones((d, 1)))
    A = np.zeros((k * (d + 2), k * (d + 2)))
    A[:k * (d + 1), :k * (d + 1)] = G
    A[k:k * (d + 1), k * (d + 1):] = E
    A[k * (d + 1):, :k] = np.diag(s.mu)
    A[k * (d + 1):, k:k * (d + 1)] = -E.T
    vf = s.v_free
    b = np.concatenate([s.N @ vf, s.D @ vf, np.zeros(k)])
    return A, b


def friction_pyramid_lcp(n_contacts: int, rng: np.random.Generator, d: int = 4, mu: float = 0.5,
                         bodies: int = 3, *, h: float = 0.01, velocity_scale: float = 0.5) -> LCP:
    """Velocity-level LCP with a ``d``-sided friction pyramid; size n_contacts * (d + 2).

    See :func:`friction_pyramid_matrix` for the matrix; the contacts come from
    :func:`random_contact_system`. The matrix is copositive-plus-like, not a P-matrix: Lemke's
    method processes it (Stewart & Trinkle 1996, Anitescu & Potra 1997); principal pivoting need not.
    """
    system = random_contact_system(n_contacts, rng, d=d, mu=mu, bodies=bodies, h=h,
                                   velocity_scale=velocity_scale)
    A, b = friction_pyramid_matrix(system)
    return LCP(A, b)


# ----------------------------------------------------------------------------------------------
# Box structures (stacks, columns, pyramids) and their frictionless contact LCPs
# ----------------------------------------------------------------------------------------------
@dataclass
class BoxStructure:
    """Axis-aligned boxes resting on each other and on the ground (z = 0, or y = 0 when planar).

    centers (b, dim), half (b, dim) half-extents, dim 2 (planar: x, y) or 3. The vertical axis is
    the last one.
    """

    centers: np.ndarray
    half: np.ndarray

    @property
    def dim(self) -> int:
        return self.centers.shape[1]

    @property
    def n_boxes(self) -> int:
        return self.centers.shape[0]

    def subset(self, indices) -> "BoxStructure":
        idx = np.asarray(indices, dtype=np.int64)
        return BoxStructure(self.centers[idx], self.half[idx])


def random_box_stack(n_boxes: int, rng: np.random.Generator, *, dim: int = 3,
                     new_tower: float = 0.2) -> BoxStructure:
    """A random stack: each box starts a new tower (probability ``new_tower``) or goes on a tower's top.

    Boxes get random sizes and a random horizontal offset that keeps them overlapping the box below.
    Towers stand far enough apart that boxes of different towers never touch.
    """
    nb = _check_n("n_boxes", n_boxes)
    if dim not in (2, 3):
        raise ProblemError(f"dim must be 2 (planar) or 3, got {dim!r}")
    rng = _check_rng(rng)
    centers = np.zeros((nb, dim))
    half = np.zeros((nb, dim))
    tops: list[int] = []           # index of the top box of each tower
    spacing = 2.0 + 0.6 * nb       # wider than any drift of a tower (offsets <= 0.3 per box)
    for i in range(nb):
        half[i] = rng.uniform(0.2, 0.5, dim)
        if not tops or rng.random() < new_tower:
            base = np.zeros(dim)
            base[0] = spacing * len(tops)
            centers[i] = base
            centers[i, -1] = half[i, -1]
            tops.append(i)
        else:
            t = int(rng.integers(len(tops)))
            below = tops[t]
            shift = rng.uniform(-1.0, 1.0, dim - 1) * 0.6 * np.minimum(half[below, :-1], half[i, :-1])
            centers[i, :-1] = centers[below, :-1] + shift
            centers[i, -1] = centers[below, -1] + half[below, -1] + half[i, -1]
            tops[t] = i
    return BoxStructure(centers, half)


def box_column(n_boxes: int, *, dim: int = 2, width: float = 1.0, height: float = 0.5) -> BoxStructure:
    """A column of equal blocks, one on another (loomis-balkcom Table I, "Column")."""
    nb = _check_n("n_boxes", n_boxes)
    half = np.tile(np.r_[np.full(dim - 1, width / 2), height / 2], (nb, 1))
    centers = np.zeros((nb, dim))
    centers[:, -1] = height / 2 + height * np.arange(nb)
    return BoxStructure(centers, half)


def box_pyramid(rows: int, *, dim: int = 2, width: float = 1.0, height: float = 0.5) -> BoxStructure:
    """A running-bond pyramid: ``rows`` blocks at the bottom, one fewer per row, each resting on two.

    rows = 13 gives 91 blocks (loomis-balkcom Table I, "Pyramid").
    """
    r = _check_n("rows", rows)
    centers, halves = [], []
    for level in range(r):
        for j in range(r - level):
            c = np.zeros(dim)
            c[0] = width * (j + 0.5 * level)
            c[-1] = height / 2 + height * level
            centers.append(c)
            halves.append(np.r_[np.full(dim - 1, width / 2), height / 2])
    return BoxStructure(np.array(centers), np.array(halves))


def _face_points(lo: np.ndarray, hi: np.ndarray, per_face: int) -> np.ndarray:
    """Contact points on the overlap of two faces: the ends of a segment (planar) spaced evenly,
    or a g x g grid over a rectangle (3D; g^2 = per_face, g >= 2, corners included)."""
    if lo.size == 1:
        return np.linspace(lo[0], hi[0], per_face)[:, None]
    g = int(round(np.sqrt(per_face)))
    xs, ys = np.linspace(lo[0], hi[0], g), np.linspace(lo[1], hi[1], g)
    X, Y = np.meshgrid(xs, ys, indexing="ij")
    return np.column_stack([X.ravel(), Y.ravel()])


def box_contacts(structure: BoxStructure, per_face: int | None = None, tol: float = 1e-9):
    """(lower, upper, point) for every contact, grouped by upper block in block order; lower = -1 for the ground.

    This is the row order of :func:`box_structure_factored`, so when every block rests only on earlier
    blocks, the contacts of the first k blocks are the leading rows (loomis-balkcom eq. 8).
    """
    if per_face is None:
        per_face = 4 if structure.dim == 3 else 2
    c, hf = structure.centers, structure.half
    bottoms, tops = c[:, -1] - hf[:, -1], c[:, -1] + hf[:, -1]
    out = []
    for u in range(structure.n_boxes):
        supports = [(-1, None)] if abs(bottoms[u]) <= tol else []
        supports += [(a, None) for a in range(structure.n_boxes) if a != u and abs(tops[a] - bottoms[u]) <= tol]
        for a, _ in supports:
            lo_u, hi_u = c[u, :-1] - hf[u, :-1], c[u, :-1] + hf[u, :-1]
            if a >= 0:
                lo = np.maximum(lo_u, c[a, :-1] - hf[a, :-1])
                hi = np.minimum(hi_u, c[a, :-1] + hf[a, :-1])
            else:
                lo, hi = lo_u, hi_u
            if np.any(hi - lo <= tol):
                continue
            for p in _face_points(lo, hi, per_face):
                out.append((a, u, np.r_[p, bottoms[u]]))
    return out


def box_structure_factored(structure: BoxStructure, rng: np.random.Generator | None = None, *,
                           contacts_per_face: int | None = None, h: float = 0.01,
                           velocity_scale: float = 0.0, density: float = 1.0,
                           sparse: bool = False) -> FactoredLCP:
    """Frictionless contact LCP of a box structure, factored: FactoredLCP(N, M, f).

    Velocity level (Anitescu & Potra 1997 without friction): q = N (v + h M^-1 f_g) = N M^-1 (M v + h f_g),
    so ``f`` passed to FactoredLCP is M v + h f_g. v is zero unless ``velocity_scale`` > 0 (then
    Gaussian, needs ``rng``). N rows: relative normal velocity (upper minus lower) at each contact;
    bodies have 6 dof (3D) or 3 dof (planar). ``contacts_per_face``: 4 (3D; a square number) or
    2 (planar) by default.
    """
    dim = structure.dim
    dof = 6 if dim == 3 else 3
    if contacts_per_face is None:
        contacts_per_face = 4 if dim == 3 else 2
    per = _check_n("contacts_per_face", contacts_per_face, 2)
    if dim == 3 and int(round(np.sqrt(per))) ** 2 != per:
        raise ProblemError(f"contacts_per_face must be a square number (a g x g grid) in 3D, got {per}")
    nb = structure.n_boxes
    m = dof * nb
    M = np.zeros((m, m))
    f = np.zeros(m)
    for b in range(nb):
        hb = structure.half[b]
        mass = density * float(np.prod(2.0 * hb))
        if dim == 3:
            M[6 * b:6 * b + 3, 6 * b:6 * b + 3] = mass * np.eye(3)
            M[6 * b + 3:6 * b + 6, 6 * b + 3:6 * b + 6] = np.diag(_box_inertia(mass, hb))
        else:
            M[3 * b, 3 * b] = M[3 * b + 1, 3 * b + 1] = mass
            M[3 * b + 2, 3 * b + 2] = mass * ((2 * hb[0]) ** 2 + (2 * hb[1]) ** 2) / 12.0
        f[dof * b + dim - 1] = -GRAVITY * mass
    contacts = box_contacts(structure, per)
    if not contacts:
        raise ProblemError("the structure has no contacts (no box rests on the ground or another box)")
    normal = np.zeros(dim)
    normal[-1] = 1.0
    row_of = _contact_row_3d if dim == 3 else _contact_row_2d
    N = np.zeros((len(contacts), m))
    for i, (a, u, p) in enumerate(contacts):
        N[i, dof * u:dof * u + dof] += row_of(p, structure.centers[u], normal)
        if a >= 0:
            N[i, dof * a:dof * a + dof] -= row_of(p, structure.centers[a], normal)
    if velocity_scale > 0:
        if rng is None:
            raise ProblemError("velocity_scale > 0 needs rng (a numpy.random.Generator)")
        v = velocity_scale * _check_rng(rng).standard_normal(m)
    else:
        v = np.zeros(m)
    forces = M @ v + h * f
    if sparse:
        return FactoredLCP(sp.csr_matrix(N), sp.csr_matrix(M), forces)
    return FactoredLCP(N, M, forces)


def box_stack_factored(n_boxes: int, rng: np.random.Generator, *, dim: int = 3,
                       contacts_per_face: int | None = None, velocity_scale: float = 0.1,
                       h: float = 0.01, sparse: bool = False) -> FactoredLCP:
    """FactoredLCP(N, M, f) of :func:`random_box_stack` (random velocities of scale ``velocity_scale``)."""
    structure = random_box_stack(n_boxes, rng, dim=dim)
    return box_structure_factored(structure, rng, contacts_per_face=contacts_per_face, h=h,
                                  velocity_scale=velocity_scale, sparse=sparse)


def box_stack_contact_lcp(n_boxes: int, rng: np.random.Generator, *, dim: int = 3,
                          contacts_per_face: int | None = None, velocity_scale: float = 0.1,
                          h: float = 0.01) -> LCP:
    """The explicit LCP (N M^-1 N', N M^-1 f) of :func:`box_stack_factored` (symmetric PSD)."""
    return box_stack_factored(n_boxes, rng, dim=dim, contacts_per_face=contacts_per_face,
                              velocity_scale=velocity_scale, h=h).to_lcp()


# ----------------------------------------------------------------------------------------------
# Textbook cases
# ----------------------------------------------------------------------------------------------
def murty(n: int) -> LCP:
    """Murty's (1978) exponential example for Lemke's method.

    M upper triangular with 1 on the diagonal and 2 above it (a P-matrix),
    q_i = -(2^i + 2^(i+1) + ... + 2^n) (1-based i). Lemke's method with covering vector e visits
    2^n bases: 2^n pivots counting the initial pivot of the artificial variable z0 (2^n - 1 after it).
    Murty, "Computational complexity of complementary pivot methods", Math. Prog. Study 7 (1978);
    Murty, Linear Complementarity, Linear and Nonlinear Programming (1988), section 6.
    The unique solution is z = (0, ..., 0, 2^n).
    """
    n = _check_n("n", n)
    M = np.triu(np.full((n, n), 2.0), 1) + np.eye(n)
    q = -np.array([sum(2.0 ** j for j in range(i, n + 1)) for i in range(1, n + 1)])
    return LCP(M, q)


def kostreva_cycling() -> LCP:
    """Kostreva's (1979) degenerate 3 x 3 example: M = [[1,2,0],[0,1,2],[2,0,1]], q = -e.

    The first ratio test ties in all three rows; Lemke's method with a smallest-index (non-
    lexicographic) tie break cycles, the lexicographic rule terminates. Unique solution z = e/3.
    Kostreva, "Cycling in linear complementarity problems", Math. Programming 16 (1979).
    """
    M = np.array([[1.0, 2.0, 0.0], [0.0, 1.0, 2.0], [2.0, 0.0, 1.0]])
    return LCP(M, -np.ones(3))

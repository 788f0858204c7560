"""Grasp-shaped boxed friction LCPs: the problem family of arechavaleta §IV-V (Table I).

A hand (palm welded to the arm, ``fingers`` chains of ``phalanges`` links on hinge joints) closes on a
cylindrical object that stands on a table. Contacts (4-12 in Table I): the object's base on the table
and phalanges on the object's side, several per link allowed (redundant rows, as in real grasps).
Velocity-level time stepping (arechavaleta eq. 5-13, Anitescu-Potra): with H = [L N D] the joint-limit,
normal and two tangent-direction rows (d = 2 friction directions, the friction box of eq. 16-17),
and J the joint rows,

* ``joints="schur"`` (paper eq. 15): the joints are eliminated,
  A = H'PH, P = M^-1 - M^-1 J (J'M^-1 J)^-1 J'M^-1, b = H'P a + H'M^-1 J (J'M^-1 J)^-1 eps;
* ``joints="rows"`` (ODE's layout): joint rows stay as free rows (-inf, inf) of the boxed LCP,
  A = [J H]' M^-1 [J H], b = [J H]' M^-1 a - [eps; 0];

with a = M v_t + h f_ext, plus CFM on the diagonal (paper §V-B: 1e-11). Friction rows are boxed by
+-mu c_n: ``friction="static"`` uses an estimate c~_n of the normal impulse (the paper's choice; the
BoxedLCP then has static bounds, so pivoting methods can solve it too), ``friction="coupled"`` uses
findex/mu so the bound follows the current normal value (ODE).
Rows are ordered [joints (rows layout only), limits, normals, tangents].
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import ProblemError
from .lcp import BoxedLCP

GRAVITY = 9.81


@dataclass
class GraspLCP:
    """A generated grasp problem and the meaning of its rows."""

    problem: BoxedLCP
    n_contacts: int
    rows: dict[str, np.ndarray] = field(default_factory=dict)   # kind -> row indices
    normal_estimate: np.ndarray | None = None                  # c~_n used for static friction boxes
    condition: float = float("nan")                            # 2-norm condition number of the matrix


def _cross_rows(r: np.ndarray, e: np.ndarray) -> np.ndarray:
    return np.concatenate([e, np.cross(r, e)])


def _tangents(nrm: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    a = np.array([1.0, 0.0, 0.0]) if abs(nrm[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    t1 = np.cross(nrm, a)
    t1 /= np.linalg.norm(t1)
    return t1, np.cross(nrm, t1)


def _box_inertia(m: float, half: np.ndarray) -> np.ndarray:
    a, b, c = 2 * half
    return m / 12.0 * np.array([b * b + c * c, a * a + c * c, a * a + b * b])


def grasp_lcp(n_contacts: int, rng: np.random.Generator, *, fingers: int = 3, phalanges: int = 3,
              mu_hand: float = 1.0, mu_table: float = 0.2, limits: int = 1, joints: str = "schur",
              friction: str = "static", cfm: float = 1e-11, h: float = 0.01,
              closing_speed: float = 0.05) -> GraspLCP:
    """A random grasp-shaped boxed LCP with ``n_contacts`` contacts (arechavaleta Table I: 4-12).

    ``fingers`` = 3 (Barrett-like) or 5 (human-like hand), ``limits`` joint-limit rows reached,
    ``mu_hand`` hand-object friction (paper: 0.2 plastic, 1.0 rubber), ``mu_table`` object-table.
    """
    if not isinstance(rng, np.random.Generator):
        raise ProblemError("rng must be a numpy.random.Generator, e.g. numpy.random.default_rng(0)")
    if not (isinstance(n_contacts, (int, np.integer)) and n_contacts >= 1):
        raise ProblemError(f"n_contacts must be an integer >= 1, got {n_contacts!r}")
    if joints not in ("schur", "rows"):
        raise ProblemError(f"joints must be 'schur' (arechavaleta eq. 15) or 'rows' (ODE layout), got {joints!r}")
    if friction not in ("static", "coupled"):
        raise ProblemError(f"friction must be 'static' or 'coupled', got {friction!r}")
    if fingers < 1 or phalanges < 1 or limits < 0 or cfm < 0:
        raise ProblemError("fingers, phalanges >= 1; limits, cfm >= 0")
    limits = min(limits, fingers * phalanges)

    # ---- bodies: 0 object, 1 palm, then phalanges finger by finger -----------------------
    R, height = 0.035 + 0.01 * rng.random(), 0.12
    m_obj = 0.1 + 0.3 * rng.random()
    nb = 2 + fingers * phalanges
    centers = np.zeros((nb, 3))
    masses = np.zeros(nb)
    inertias = np.zeros((nb, 3))
    centers[0] = [0.0, 0.0, height / 2]
    masses[0] = m_obj
    inertias[0] = [m_obj * (3 * R * R + height ** 2) / 12, m_obj * (3 * R * R + height ** 2) / 12, m_obj * R * R / 2]
    thick = 0.01
    palm_r = R + 0.05
    centers[1] = [-palm_r, 0.0, height / 2]
    masses[1] = 0.6
    inertias[1] = _box_inertia(0.6, np.array([0.015, 0.05, 0.05]))
    finger_angle = np.linspace(-0.9, 0.9, fingers) if fingers > 1 else np.zeros(1)
    finger_z = height / 2 + 0.035 * np.linspace(-1, 1, fingers) if fingers > 1 else np.array([height / 2])
    link_angle = np.zeros(nb)
    link_z = np.zeros(nb)
    anchors, parents, children = [], [], []
    for f in range(fingers):
        side = 1.0 if f % 2 == 0 else -1.0
        for k in range(phalanges):
            b = 2 + f * phalanges + k
            ang = np.pi + side * (0.45 + 0.55 * k) + 0.1 * finger_angle[f]
            link_angle[b], link_z[b] = ang, finger_z[f]
            rr = R + thick
            centers[b] = [rr * np.cos(ang), rr * np.sin(ang), finger_z[f]]
            m = 0.02 + 0.03 * rng.random()
            masses[b] = m
            inertias[b] = _box_inertia(m, np.array([0.02, 0.006, 0.008]))
            parent = 1 if k == 0 else b - 1
            anchors.append(0.5 * (centers[b] + centers[parent]))
            parents.append(parent)
            children.append(b)
    ndof = 6 * nb
    Minv = np.zeros(ndof)
    for b in range(nb):
        Minv[6 * b:6 * b + 3] = 1.0 / masses[b]
        Minv[6 * b + 3:6 * b + 6] = 1.0 / inertias[b]

    def body_row(b, p, e):
        row = np.zeros(ndof)
        row[6 * b:6 * b + 6] = _cross_rows(p - centers[b], e)
        return row

    # ---- joint rows: palm welded to the arm (6), hinges (5 each) -------------------------
    J = []
    for k in range(6):
        row = np.zeros(ndof)
        row[6 + k] = 1.0
        J.append(row)
    axis = np.array([0.0, 0.0, 1.0])
    perp = (np.array([1.0, 0.0, 0.0]), np.array([0.0, 1.0, 0.0]))
    for a, P, C in zip(anchors, parents, children):
        for e in np.eye(3):
            J.append(body_row(C, a, e) - body_row(P, a, e))
        for u in perp:
            row = np.zeros(ndof)
            row[6 * C + 3:6 * C + 6] = u
            row[6 * P + 3:6 * P + 6] -= u
            J.append(row)
    J = np.array(J)

    # ---- joint limits reached: relative rotation about the hinge must not close further ---
    L = []
    for j in rng.choice(len(children), size=limits, replace=False):
        row = np.zeros(ndof)
        row[6 * children[j] + 3:6 * children[j] + 6] = -axis
        row[6 * parents[j] + 3:6 * parents[j] + 6] += axis
        L.append(row)

    # ---- contacts ---------------------------------------------------------------------
    n_table = int(min(n_contacts, 3 if n_contacts >= 6 else 1 + (n_contacts >= 4)))
    n_hand = n_contacts - n_table
    Nrows, Drows, mus = [], [], []
    for k in range(n_table):
        th = 2 * np.pi * (k + rng.random() * 0.3) / max(n_table, 1)
        p = np.array([R * np.cos(th), R * np.sin(th), 0.0])
        nrm = np.array([0.0, 0.0, 1.0])
        t1, t2 = _tangents(nrm)
        Nrows.append(body_row(0, p, nrm))
        Drows += [body_row(0, p, t1), body_row(0, p, t2)]
        mus.append(mu_table)
    links = 2 + rng.choice(fingers * phalanges, size=n_hand, replace=n_hand > fingers * phalanges)
    for b in links:
        ang = link_angle[b] + 0.15 * (rng.random() - 0.5)
        p = np.array([R * np.cos(ang), R * np.sin(ang), link_z[b] + 0.01 * (rng.random() - 0.5)])
        nrm = -np.array([np.cos(ang), np.sin(ang), 0.0])  # from the link into the object
        t1, t2 = _tangents(nrm)
        Nrows.append(body_row(0, p, nrm) - body_row(b, p, nrm))
        Drows += [body_row(0, p, t1) - body_row(b, p, t1), body_row(0, p, t2) - body_row(b, p, t2)]
        mus.append(mu_hand)
    H = np.array(L + Nrows + Drows) if (L or Nrows) else np.zeros((0, ndof))

    # ---- velocities: fingers closing, object at rest under gravity, arm drifting ----------
    v = np.zeros(ndof)
    for b in range(2, nb):
        inward = -centers[b] * np.array([1.0, 1.0, 0.0])
        inward /= np.linalg.norm(inward)
        v[6 * b:6 * b + 3] = closing_speed * (1 + 0.3 * rng.random()) * inward
    v[6:9] = 0.01 * rng.standard_normal(3)
    v[:3] = 0.005 * rng.standard_normal(3)
    f_ext = np.zeros(ndof)
    for b in range(nb):
        f_ext[6 * b + 2] = -masses[b] * GRAVITY
    v_free = v + h * Minv * f_ext                       # M^-1 a with a = M v_t + h f_ext
    eps = -0.2 * 1e-4 * rng.standard_normal(J.shape[0]) / h   # eq. (10): -zeta dP / h

    nl, nc = len(L), n_contacts
    if joints == "schur":
        MJ = Minv[:, None] * J.T
        S = J @ MJ
        Sinv_JM = np.linalg.solve(S, MJ.T)               # (J'M^-1 J)^-1 J'M^-1
        HM = H * Minv
        A = HM @ H.T - (H @ MJ) @ (Sinv_JM @ H.T)
        # H P a = H M^-1 a - H M^-1 J S^-1 J' M^-1 a, with M^-1 a = v_free
        b = H @ v_free - (H @ MJ) @ np.linalg.solve(S, J @ v_free) + (H @ MJ) @ np.linalg.solve(S, eps)
        nj = 0
    else:
        HH = np.vstack([J, H])
        A = (HH * Minv) @ HH.T
        b = HH @ v_free - np.concatenate([eps, np.zeros(H.shape[0])])
        nj = J.shape[0]
    A = 0.5 * (A + A.T) + cfm * np.eye(A.shape[0])
    n = A.shape[0]
    r_lim = nj + np.arange(nl)
    r_nrm = nj + nl + np.arange(nc)
    r_tan = nj + nl + nc + np.arange(2 * nc)
    lo = np.zeros(n)
    hi = np.full(n, np.inf)
    lo[:nj], hi[:nj] = -np.inf, np.inf
    mu_rows = np.repeat(np.array(mus), 2)
    normal_of_tan = np.repeat(r_nrm, 2)
    est = masses[0] * GRAVITY * h * (0.3 + rng.random(nc))   # c~_n: impulse scale of holding the object
    if friction == "static":
        bound = mu_rows * np.repeat(est, 2)
        lo[r_tan], hi[r_tan] = -bound, bound
        problem = BoxedLCP(A, b, lo, hi)
    else:
        findex = np.full(n, -1, dtype=np.int64)
        findex[r_tan] = normal_of_tan
        mu = np.zeros(n)
        mu[r_tan] = mu_rows
        problem = BoxedLCP(A, b, lo, hi, findex, mu)
    rows = {"joint": np.arange(nj), "limit": r_lim, "normal": r_nrm, "tangent": r_tan}
    return GraspLCP(problem, n_contacts, rows, est if friction == "static" else None, float(np.linalg.cond(A)))

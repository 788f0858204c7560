"""Quasistatic planar manipulation as an uncoupled complementarity problem (Pang, Trinkle & Lo 1994).

A passive object touched at ``n_c`` points by a manipulator with ``n_theta`` joints; joints in
``alpha`` are position-controlled (``theta_dot`` given), the others effort-controlled (``tau``
given). :func:`build_ucp` forms the polyhedra X (velocities) and Y (forces) of section 2,
:func:`recover` maps a complementary pair back to forces, velocities and contact modes
(Proposition 1), and :func:`equation_residuals` checks eq. (2)-(10) from the physical quantities
alone, independently of X, Y and of any solver.

Shapes: ``W_n, W_t`` (n_q, n_c); ``J_n, J_t`` (n_c, n_theta); ``mu`` (n_c,); ``g_obj`` (n_q,);
``g_man`` (n_theta,). Variables of the UCP: ``x = [v_n; v_t+; v_t-]``, ``y = [c_n; s_t+; s_t-]``.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from ..errors import ModelError
from ..problems.ucp import UCP

MODES = ("rolling", "sliding+", "sliding-", "breaking")


def _mat(name, M, shape=None):
    try:
        M = np.array(M, dtype=np.float64, ndmin=2)
    except (TypeError, ValueError) as exc:
        raise ModelError(f"{name} must be a numeric matrix ({exc})") from None
    if M.ndim != 2:
        raise ModelError(f"{name} must be 2-D, got shape {M.shape}")
    if shape is not None:
        for axis, want in enumerate(shape):
            if want is not None and M.shape[axis] != want:
                raise ModelError(f"{name} has shape {M.shape}; expected {'columns' if axis else 'rows'} = {want}")
    if not np.all(np.isfinite(M)):
        raise ModelError(f"{name} contains NaN or inf")
    return M


def _vec(name, v, n):
    try:
        v = np.array(v, dtype=np.float64).ravel()
    except (TypeError, ValueError) as exc:
        raise ModelError(f"{name} must be a numeric vector ({exc})") from None
    if v.shape != (n,):
        raise ModelError(f"{name} has length {v.size}; expected {n}")
    if not np.all(np.isfinite(v)):
        raise ModelError(f"{name} contains NaN or inf")
    return v


def wrench_matrices(points, normals, tangents=None) -> tuple[np.ndarray, np.ndarray]:
    """``W_n, W_t`` (3, n_c) from contact points, inward normals and tangents (eq. 1).

    The default tangent is the normal turned +90 degrees, so that n x t points out of the plane.
    Columns are ``[n; r (x) n]`` with ``[a1, a2] (x) [b1, b2] = a1 b2 - a2 b1``.
    """
    r = _mat("points", points, (None, 2))
    n = _mat("normals", normals, (r.shape[0], 2))
    norms = np.linalg.norm(n, axis=1)
    if np.any(norms < 1e-12):
        raise ModelError("normals contains a zero vector; give each contact a unit inward normal")
    n = n / norms[:, None]
    if tangents is None:
        t = np.column_stack([-n[:, 1], n[:, 0]])
    else:
        t = _mat("tangents", tangents, (r.shape[0], 2))
        t = t / np.linalg.norm(t, axis=1)[:, None]
        if np.any(np.abs(np.sum(n * t, axis=1)) > 1e-6):
            raise ModelError("tangents must be perpendicular to normals")
    cross = lambda a, b: a[:, 0] * b[:, 1] - a[:, 1] * b[:, 0]  # noqa: E731
    W_n = np.vstack([n.T, cross(r, n)])
    W_t = np.vstack([t.T, cross(r, t)])
    return W_n, W_t


@dataclass
class QuasistaticTask:
    """The data of section 2: object wrenches, manipulator Jacobians, control split, loads, friction.

    ``alpha``: indices of position-controlled joints; ``theta_dot_alpha`` their velocities;
    ``tau_alpha_bar`` the efforts of the other joints (in increasing joint order).
    """

    W_n: np.ndarray
    W_t: np.ndarray
    J_n: np.ndarray
    J_t: np.ndarray
    mu: np.ndarray
    g_obj: np.ndarray
    g_man: np.ndarray
    alpha: np.ndarray
    theta_dot_alpha: np.ndarray
    tau_alpha_bar: np.ndarray
    name: str = ""

    def __post_init__(self):
        self.W_n = _mat("W_n", self.W_n)
        n_q, n_c = self.W_n.shape
        self.W_t = _mat("W_t", self.W_t, (n_q, n_c))
        self.J_n = _mat("J_n", self.J_n, (n_c, None))
        n_th = self.J_n.shape[1]
        self.J_t = _mat("J_t", self.J_t, (n_c, n_th))
        self.mu = _vec("mu", np.broadcast_to(np.asarray(self.mu, dtype=float), (n_c,)) if np.ndim(self.mu) == 0
                       else self.mu, n_c)
        if np.any(self.mu < 0):
            raise ModelError(f"mu must be >= 0 at every contact; got min {self.mu.min():g}")
        self.g_obj = _vec("g_obj", self.g_obj, n_q)
        self.g_man = _vec("g_man", self.g_man, n_th)
        alpha = np.asarray(self.alpha).ravel()
        if alpha.size and not np.issubdtype(alpha.dtype, np.integer):
            raise ModelError("alpha must hold integer joint indices")
        alpha = alpha.astype(np.int64)
        if np.any(alpha < 0) or np.any(alpha >= n_th):
            raise ModelError(f"alpha out of range: joint indices must lie in [0, {n_th})")
        if np.unique(alpha).size != alpha.size:
            raise ModelError("alpha has repeated joint indices")
        self.alpha = np.sort(alpha)
        self.theta_dot_alpha = _vec("theta_dot_alpha", self.theta_dot_alpha, self.alpha.size)
        self.tau_alpha_bar = _vec("tau_alpha_bar", self.tau_alpha_bar, n_th - self.alpha.size)

    # sizes
    @property
    def n_c(self) -> int:
        return self.W_n.shape[1]

    @property
    def n_q(self) -> int:
        return self.W_n.shape[0]

    @property
    def n_theta(self) -> int:
        return self.J_n.shape[1]

    @property
    def alpha_bar(self) -> np.ndarray:
        return np.setdiff1d(np.arange(self.n_theta), self.alpha)

    @property
    def J(self) -> np.ndarray:
        return np.vstack([self.J_n, self.J_t])

    @property
    def P(self) -> np.ndarray:
        """``[W^T  J_alpha-bar]`` (2 n_c, n_q + |alpha-bar|)."""
        return np.hstack([np.vstack([self.W_n.T, self.W_t.T]), self.J[:, self.alpha_bar]])

    @property
    def d(self) -> np.ndarray:
        """``[0; g_obj; (g_man - tau)_alpha-bar]`` of section 2."""
        return np.concatenate([np.zeros(self.n_c), self.g_obj, self.g_man[self.alpha_bar] - self.tau_alpha_bar])

    @classmethod
    def from_compact(cls, P, J_n, J_t, theta_dot, d, mu, *, n_q: int = 3, alpha=None, name: str = ""):
        """The paper's data-set form (section 5): ``P = [W^T J_alpha-bar]``, ``J_n, J_t``, ``theta_dot``,
        ``d = [0; g_obj; (g_man - tau)_alpha-bar]``, ``mu``.

        ``alpha`` defaults to every joint when P has ``n_q`` columns. ``theta_dot`` is either full
        length (entries outside alpha ignored) or of length |alpha|. Joint loads on alpha are not part
        of the compact data; they are taken as zero (g_man_alpha = 0), so the recovered tau_alpha is
        J_alpha^T c.
        """
        J_n = _mat("J_n", J_n)
        n_c, n_th = J_n.shape
        P = _mat("P", P, (2 * n_c, None))
        n_ab = P.shape[1] - n_q
        if n_ab < 0:
            raise ModelError(f"P has {P.shape[1]} columns; it needs at least n_q = {n_q}")
        if alpha is None:
            if n_ab:
                raise ModelError("P has columns for effort-controlled joints; pass alpha (position-controlled joints)")
            alpha = np.arange(n_th)
        alpha = np.sort(np.asarray(alpha, dtype=np.int64).ravel())
        if alpha.size and (alpha.min() < 0 or alpha.max() >= n_th):
            raise ModelError(f"alpha out of range: joint indices must lie in [0, {n_th})")
        if n_th - alpha.size != n_ab:
            raise ModelError(f"P has {n_ab} joint columns but alpha leaves {n_th - alpha.size} joints effort-controlled")
        d = _vec("d", d, n_c + n_q + n_ab)
        td = np.asarray(theta_dot, dtype=np.float64).ravel()
        if td.size == n_th:
            td = td[alpha]
        W_n, W_t = P[:n_c, :n_q].T, P[n_c:, :n_q].T
        J_t = _mat("J_t", J_t, (n_c, n_th))
        alpha_bar = np.setdiff1d(np.arange(n_th), alpha)
        if n_ab and not np.allclose(P[:, n_q:], np.vstack([J_n, J_t])[:, alpha_bar], atol=1e-9):
            raise ModelError("the last columns of P must equal [J_n; J_t] on the effort-controlled joints")
        return cls(W_n, W_t, J_n, J_t, mu, d[n_c:n_c + n_q], np.zeros(n_th), alpha, td,
                   -d[n_c + n_q:], name=name)

    @classmethod
    def from_contacts(cls, points, normals, J_n, J_t, mu, g_obj, g_man, alpha, theta_dot_alpha, tau_alpha_bar,
                      *, tangents=None, name: str = ""):
        """The task from contact points and inward normals (and tangents) in the world frame, eq. (1)."""
        W_n, W_t = wrench_matrices(points, normals, tangents)
        return cls(W_n, W_t, J_n, J_t, mu, g_obj, g_man, alpha, theta_dot_alpha, tau_alpha_bar, name=name)

    def with_mu(self, mu) -> "QuasistaticTask":
        return QuasistaticTask(self.W_n, self.W_t, self.J_n, self.J_t, mu, self.g_obj, self.g_man, self.alpha,
                               self.theta_dot_alpha, self.tau_alpha_bar, name=self.name)


def null_space_rows(P: np.ndarray, rtol: float = 1e-10) -> np.ndarray:
    """``Z`` whose null space is the column space of ``P`` (rows: orthonormal basis of range(P)^perp), by SVD."""
    U, S, _ = np.linalg.svd(P, full_matrices=True)
    rank = int(np.sum(S > rtol * max(P.shape) * (S[0] if S.size else 0.0))) if S.size else 0
    return U[:, rank:].T.copy()


def build_ucp(task: QuasistaticTask) -> UCP:
    """The polyhedra of section 2 as a :class:`UCP` (Theorem 1).

    X = {x >= 0 : Z_n v_n + Z_t (v+ - v-) + Z J_alpha theta_dot_alpha = 0} with Z from the SVD of P,
    Y = {y >= 0 : C y + d = 0}.
    """
    n_c = task.n_c
    Z = null_space_rows(task.P)
    Zn, Zt = Z[:, :n_c], Z[:, n_c:]
    A = np.hstack([Zn, Zt, -Zt])
    a = -Z @ (task.J[:, task.alpha] @ task.theta_dot_alpha)
    U = np.diag(task.mu)
    I = np.eye(n_c)
    ab = task.alpha_bar
    Jn_ab, Jt_ab = task.J_n[:, ab].T, task.J_t[:, ab].T
    C = np.block([[2 * U, -I, -I],
                  [task.W_n - task.W_t @ U, task.W_t, np.zeros((task.n_q, n_c))],
                  [Jn_ab - Jt_ab @ U, Jt_ab, np.zeros((ab.size, n_c))]])
    # the same X, sparse: [v_n; v+ - v-] - P [q_dot; -theta_dot_alpha-bar] = -J_alpha theta_dot_alpha
    G = sp.bmat([[sp.identity(n_c), None, None], [None, sp.identity(n_c), -sp.identity(n_c)]], format="csr")
    lift = (G, sp.csr_matrix(-task.P), -(task.J[:, task.alpha] @ task.theta_dot_alpha))
    return UCP(A, a, C, -task.d, contacts=n_c, x_lift=lift)


@dataclass
class QuasistaticMotion:
    """Forces, velocities, joint efforts and contact modes recovered from a UCP solution."""

    c_n: np.ndarray
    c_t: np.ndarray
    q_dot: np.ndarray
    theta_dot: np.ndarray
    tau: np.ndarray
    v_n: np.ndarray
    v_t: np.ndarray
    modes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {"c_n": self.c_n.tolist(), "c_t": self.c_t.tolist(), "q_dot": self.q_dot.tolist(),
                "theta_dot": self.theta_dot.tolist(), "tau": self.tau.tolist(), "modes": list(self.modes)}


def contact_modes(c_n, v_n, v_t, tol: float = 1e-8) -> list[str]:
    """Per contact: breaking (v_n > 0), sliding+ / sliding- (v_t > 0 / < 0), else rolling."""
    scale_v = max(1.0, float(np.max(np.abs(np.concatenate([v_n, v_t])), initial=0.0)))
    out = []
    for vn, vt in zip(v_n, v_t):
        if vn > tol * scale_v:
            out.append("breaking")
        elif vt > tol * scale_v:
            out.append("sliding+")
        elif vt < -tol * scale_v:
            out.append("sliding-")
        else:
            out.append("rolling")
    return out


def recover(task: QuasistaticTask, x, y) -> QuasistaticMotion:
    """Proposition 1: ``c_t = s_t+ - U c_n``; ``q_dot`` and the unknown ``theta_dot`` from
    ``P [q_dot; -theta_dot_alpha-bar] = v + J_alpha theta_dot_alpha`` (least squares, minimum norm
    when P is rank deficient); the unknown ``tau_alpha = (J^T c + g_man)_alpha``; modes from v."""
    n_c, n_q = task.n_c, task.n_q
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    v_n, v_t = x[:n_c], x[n_c:2 * n_c] - x[2 * n_c:]
    c_n, s_plus = y[:n_c], y[n_c:2 * n_c]
    c_t = s_plus - task.mu * c_n
    rhs = np.concatenate([v_n, v_t]) + task.J[:, task.alpha] @ task.theta_dot_alpha
    beta = np.linalg.lstsq(task.P, rhs, rcond=None)[0]
    q_dot = beta[:n_q]
    theta_dot = np.zeros(task.n_theta)
    theta_dot[task.alpha] = task.theta_dot_alpha
    theta_dot[task.alpha_bar] = -beta[n_q:]
    tau = task.J_n.T @ c_n + task.J_t.T @ c_t + task.g_man
    tau[task.alpha_bar] = task.tau_alpha_bar
    v_n_phys = task.W_n.T @ q_dot - task.J_n @ theta_dot   # eq. (4)
    v_t_phys = task.W_t.T @ q_dot - task.J_t @ theta_dot   # eq. (5)
    return QuasistaticMotion(c_n, c_t, q_dot, theta_dot, tau, v_n_phys, v_t_phys,
                             contact_modes(c_n, v_n_phys, v_t_phys))


def equation_residuals(task: QuasistaticTask, motion: QuasistaticMotion) -> dict[str, float]:
    """Relative violation of each of eq. (2)-(10), computed from c_n, c_t, q_dot, theta_dot, tau only.

    Forces are measured against ``max(1, |c|, |g|)``, velocities against ``max(1, |q_dot|, |theta_dot|)``,
    products against both. Velocities v_n, v_t are recomputed from eq. (4)-(5).
    """
    c_n, c_t, mu = motion.c_n, motion.c_t, task.mu
    fs = max(1.0, np.abs(c_n).max(initial=0), np.abs(c_t).max(initial=0), np.abs(task.g_obj).max(initial=0),
             np.abs(task.g_man).max(initial=0), np.abs(motion.tau).max(initial=0))
    v_n = task.W_n.T @ motion.q_dot - task.J_n @ motion.theta_dot
    v_t = task.W_t.T @ motion.q_dot - task.J_t @ motion.theta_dot
    vs = max(1.0, np.abs(motion.q_dot).max(initial=0), np.abs(motion.theta_dot).max(initial=0),
             np.abs(v_n).max(initial=0), np.abs(v_t).max(initial=0))
    inf = lambda v: float(np.max(np.abs(v))) if np.size(v) else 0.0  # noqa: E731
    pos = lambda v: float(np.max(v, initial=0.0))  # noqa: E731
    tau_given = motion.tau[task.alpha_bar] - task.tau_alpha_bar
    return {
        "eq2_object_equilibrium": inf(task.W_n @ c_n + task.W_t @ c_t + task.g_obj) / fs,
        "eq3_manipulator_equilibrium": max(inf(task.J_n.T @ c_n + task.J_t.T @ c_t - motion.tau + task.g_man),
                                           inf(tau_given)) / fs,
        "controlled_velocities": inf(motion.theta_dot[task.alpha] - task.theta_dot_alpha) / vs,
        "eq6_nonpenetration": pos(-v_n) / vs,
        "eq7_friction_cone": max(pos(np.abs(c_t) - mu * c_n), pos(-c_n)) / fs,
        "eq8_9_normal_complementarity": inf(c_n * v_n) / (fs * vs),
        "eq10_sliding_law": inf(np.maximum(v_t, 0) * np.abs(c_t + mu * c_n)
                                + np.maximum(-v_t, 0) * np.abs(c_t - mu * c_n)) / (fs * vs),
    }

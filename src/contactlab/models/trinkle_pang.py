"""Acceleration-level 3D contact with Coulomb friction pyramids (Trinkle, Pang, Sudarsky, Lo 1997).

At a contact that rolls (tangential velocity |v_t| <= ``slip_tol``) the friction force lies in a
pyramid of d directions d_j = cos(theta_j) S_i + sin(theta_j) T_i (vertices on the cone):

    0 <= c_n   _|_  N_i a + b_i >= 0
    0 <= beta  _|_  D_i a + e lambda >= 0          (tangential acceleration against the force)
    0 <= lambda _|_ mu_i c_n - e' beta >= 0        (force inside the pyramid; on its edge if a_t != 0)

and at a sliding contact the force is Coulomb's, mu_i c_n along -v_t/|v_t| (TPSL: the pyramid
only at rolling contacts; ``sliding_law="pyramid"`` uses the vertex nearest -v_t instead), so only
c_n is unknown there.
With M a = f + J' f_j + N' c_n + (friction), J a = 0, this is a mixed LCP (free a, f_j) whose
reduction is solved by Lemke (guaranteed for small mu, TPSL Thm. 1) or an interior-point method.
Inconsistent configurations (Painleve's sliding rod) have no solution: the solver's status is
reported (RAY_TERMINATION from Lemke) and, with ``prove=True``, NO_SOLUTION is claimed only with a
checked Farkas certificate (:func:`infeasibility_certificate`). Never a wrong answer.

``solve_trinkle_pang_cone`` treats the quadratic cone (TPSL's cone model, drumwright eq. 20-22) by
successive pyramid refinement: after each solve a vertex is added at each rolling contact whose
tangential acceleration is nonzero (opposing it, then secant steps on the angle residual), until
the cone conditions hold within ``tol`` (SOLVED) or the refinement budget ends (MAX_ITERATIONS).

``build_stewart_trinkle`` is the velocity-level (impulse) version of the same pyramid LCP
(Stewart-Trinkle / Anitescu-Potra; 2 + d variables per contact), used for inelastic impacts of
the acceleration model and by the box-gripper benchmark.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import ModelError
from ..problems import MixedLCP
from ..solution import Solution, Status
from . import rk4 as staging
from .built import Built
from .common import StepResult
from .noslip import SEPARATING, SLIDING, STICKING, check_dynamics
from .rk4 import check_integrator

SLIDING_LAWS = ("cone", "pyramid")


def _mu_vector(mu, n):
    mu = np.asarray(mu, dtype=np.float64)
    if mu.ndim == 0:
        mu = np.full(n, float(mu))
    if mu.shape != (n,) or np.any(mu < 0) or not np.all(np.isfinite(mu)):
        raise ModelError(f"mu must be a finite scalar or ({n},) vector with mu >= 0")
    return mu


def uniform_angles(d: int) -> np.ndarray:
    """Pyramid angles theta_j = 2 pi j / d (d = 4 gives +-S, +-T)."""
    if int(d) != d or d < 3:
        raise ModelError(f"d (pyramid directions per contact) must be an integer >= 3, got {d}")
    return 2 * np.pi * np.arange(int(d)) / int(d)


@dataclass
class PyramidProblem:
    """A built pyramid problem (acceleration or velocity level).

    ``problem``: MixedLCP with x = (a or v+, f_j), y = (c_n (n), beta (per rolling contact, d_i
    each), lambda (one per rolling contact)). ``rolling``/``sliding``: contact indices;
    ``angles``: per-contact direction angles; ``slide_dir`` (n, 2): unit (s, t) components of the
    sliding force direction (zero for rolling contacts).
    """

    problem: MixedLCP
    M: np.ndarray
    N: np.ndarray
    S: np.ndarray
    T: np.ndarray
    mu: np.ndarray
    rolling: np.ndarray
    sliding: np.ndarray
    angles: list
    slide_dir: np.ndarray
    n_joint: int
    level: str = "acceleration"
    beta_offsets: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))

    @property
    def lcp_variables(self) -> int:
        return self.problem.n


def _build(M, rhs, N, S, T, mu, J, rolling, angles, slide_dir, bias, level, j_rhs=None, tangent_v=None, cfm=0.0):
    """MixedLCP of the pyramid model. Rolling contacts with mu = 0 get no friction variables.
    ``j_rhs``: J x = j_rhs; ``tangent_v`` (m,): adds D_i tangent_v to the beta rows (D v / h in a
    time step, so a rolling contact's friction also removes its residual tangential velocity);
    ``cfm`` is added to the diagonal of every complementarity row (regularises degenerate contact sets)."""
    m = M.shape[0]
    n = N.shape[0]
    j = J.shape[0]
    R = np.asarray(rolling, dtype=np.int64)
    R = R[mu[R] > 0]
    nr = R.size
    dirs = [np.cos(angles[i])[:, None] * S[i] + np.sin(angles[i])[:, None] * T[i] for i in R]
    sizes = np.array([len(angles[i]) for i in R], dtype=np.int64)
    nb = int(sizes.sum())
    DR = np.vstack(dirs) if nb else np.zeros((0, m))
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    # generalized force per unit c_n: N_i plus mu_i times the sliding direction at sliding contacts
    W = N + mu[:, None] * (slide_dir[:, :1] * S + slide_dir[:, 1:] * T)
    E = np.zeros((nb, nr))
    for k in range(nr):
        E[offsets[k]:offsets[k + 1], k] = 1.0
    Mu = np.zeros((nr, n))
    Mu[np.arange(nr), R] = mu[R]
    ny = n + nb + nr
    p = m + j
    A = np.zeros((p, p))
    A[:m, :m] = M
    A[:m, m:] = -J.T
    A[m:, :m] = J
    C = np.zeros((p, ny))
    C[:m, :n] = -W.T
    C[:m, n:n + nb] = -DR.T
    g = np.concatenate([-rhs, np.zeros(j) if j_rhs is None else -np.asarray(j_rhs, dtype=np.float64)])
    D = np.zeros((ny, p))
    D[:n, :m] = N
    D[n:n + nb, :m] = DR
    B = np.zeros((ny, ny))
    B[n:n + nb, n + nb:] = E
    B[n + nb:, :n] = Mu
    B[n + nb:, n:n + nb] = -E.T
    if cfm:
        B[np.diag_indices(ny)] += cfm
    h = np.zeros(ny)
    h[:n] = bias
    if tangent_v is not None and nb:
        h[n:n + nb] = DR @ tangent_v
    return MixedLCP(A, C, D, B, g, h), offsets, R


def _prepare(M, v, f, N, S, T, mu, J, normal_bias):
    M, v, f, N, J, S, T = check_dynamics(M, v, f, N, J, S, T)
    if S is None or T is None:
        raise ModelError("friction pyramids need both tangent Jacobians S and T")
    n = N.shape[0]
    mu = _mu_vector(mu, n)
    bias = np.zeros(n) if normal_bias is None else np.asarray(normal_bias, dtype=np.float64).ravel()
    if bias.shape != (n,):
        raise ModelError(f"normal_bias has length {bias.shape[0]}; expected {n}")
    return M, v, f, N, J, S, T, mu, bias


def build_trinkle_pang(M, v, f, N, S, T, mu, J=None, *, d: int = 4, angles=None, normal_bias=None,
                       slip_tol: float = 1e-6, sliding_law: str = "cone", j_rhs=None,
                       tangent_v=None, cfm: float = 0.0) -> PyramidProblem:
    """Acceleration-level pyramid LCP at state (v, contacts).

    M (m, m), v (m,), f (m,) generalized forces (gravity, gyroscopic), N/S/T (n, m), mu scalar or
    (n,), J (j, m) joint rows (J a = 0; Jdot v omitted). ``normal_bias`` (n,): Ndot v (+ any
    stabilisation) in w_n = N a + bias. ``angles``: optional per-contact direction angles
    (overrides d). ``sliding_law``: "cone" (default, Coulomb: exactly along -v_t) or "pyramid"
    (the vertex nearest -v_t, up to 180/d degrees off the slip).
    ``j_rhs``: J a = j_rhs; ``tangent_v``, ``cfm``: see :func:`_build`. ``rolling`` of the result lists the
    rolling contacts with friction variables (mu > 0).
    """
    M, v, f, N, J, S, T, mu, bias = _prepare(M, v, f, N, S, T, mu, J, normal_bias)
    n = N.shape[0]
    if angles is None:
        angles = [uniform_angles(d) for _ in range(n)]
    vs, vt = S @ v, T @ v
    speed = np.hypot(vs, vt)
    sliding = np.flatnonzero(speed > slip_tol)
    rolling = np.flatnonzero(speed <= slip_tol)
    slide_dir = np.zeros((n, 2))
    for i in sliding:
        if sliding_law == "cone":
            slide_dir[i] = (-vs[i] / speed[i], -vt[i] / speed[i])
        elif sliding_law == "pyramid":
            th = angles[i]
            k = int(np.argmin(np.cos(th) * vs[i] + np.sin(th) * vt[i]))
            slide_dir[i] = (np.cos(th[k]), np.sin(th[k]))
        else:
            raise ModelError(f"sliding_law must be 'pyramid' or 'cone', got {sliding_law!r}")
    problem, offsets, fric = _build(M, f, N, S, T, mu, J, rolling, angles, slide_dir, bias, "acceleration",
                                    j_rhs, tangent_v, cfm)
    return PyramidProblem(problem, M, N, S, T, mu, fric, sliding, list(angles), slide_dir, J.shape[0],
                          "acceleration", offsets)


def build_stewart_trinkle(M, v, f, dt: float, N, S, T, mu, J=None, *, d: int = 4, normal_bias=None, j_rhs=None,
                          cfm: float = 0.0) -> PyramidProblem:
    """Velocity-level pyramid LCP (Stewart-Trinkle, Anitescu-Potra): every contact gets c_n, d betas
    and one lambda (2 + d variables). M v+ = M v + dt f + J' p_j + N' p_n + D' beta; w_n = N v+ + bias.
    With dt = 0 and f = 0 it is the inelastic impact law with pyramid friction."""
    M, v, f, N, J, S, T, mu, bias = _prepare(M, v, f, N, S, T, mu, J, normal_bias)
    if not dt >= 0:
        raise ModelError(f"dt must be >= 0, got {dt}")
    n = N.shape[0]
    angles = [uniform_angles(d) for _ in range(n)]
    problem, offsets, fric = _build(M, M @ v + dt * f, N, S, T, mu, J, np.arange(n), angles, np.zeros((n, 2)),
                                    bias, "velocity", j_rhs, None, cfm)
    return PyramidProblem(problem, M, N, S, T, mu, fric, np.zeros(0, dtype=np.int64), angles,
                          np.zeros((n, 2)), J.shape[0], "velocity", offsets)


def recover_pyramid(built: PyramidProblem, sol: Solution, *, tol: float = 1e-9) -> StepResult:
    """Acceleration (or v+), contact forces (or impulses) in (N, S, T) components, joint multipliers, modes."""
    m = built.M.shape[0]
    n = built.N.shape[0]
    x = sol.x if sol.x is not None else built.problem.recover_x(sol.z)
    y = np.asarray(sol.z, dtype=np.float64)
    a = x[:m]
    joint = x[m:]
    cn = y[:n]
    fs = built.mu * cn * built.slide_dir[:, 0]
    ft = built.mu * cn * built.slide_dir[:, 1]
    off = built.beta_offsets
    modes = np.full(n, STICKING, dtype=np.int8)
    for k, i in enumerate(built.rolling):
        beta = y[n + off[k]:n + off[k + 1]]
        th = built.angles[i]
        fs[i] = float(np.cos(th) @ beta)
        ft[i] = float(np.sin(th) @ beta)
        at = np.hypot(built.S[i] @ a, built.T[i] @ a)
        if at > tol * max(1.0, np.abs(a).max(initial=0.0)):
            modes[i] = SLIDING  # rolling contact starting to slide
    modes[built.sliding] = SLIDING
    an = built.N @ a
    modes[(cn <= 0) & (an > tol)] = SEPARATING
    if built.level == "velocity":
        return StepResult.contact(a, cn, fs, ft, joint, modes)
    return StepResult.contact(np.zeros(m), cn, fs, ft, joint, modes, accel=a)


@dataclass
class TrinklePangResult:
    """``status``: the solve's Status (NO_SOLUTION when proven inconsistent, e.g. Painleve);
    ``consistent``: True (solved), False (proven no solution), None (unknown); ``result``: the
    recovered contact result when solved, else None; ``solution``: the last Solution;
    ``refinements`` and ``cone_residual`` for the cone variant."""

    status: Status
    consistent: bool | None
    result: StepResult | None
    solution: Solution
    built: PyramidProblem
    refinements: int = 0
    cone_residual: float = float("nan")
    lcp_variables: int = 0


def infeasibility_certificate(problem, rtol: float = 1e-9):
    """A checked Farkas certificate that the (reduced) LCP w = F y + e >= 0, y >= 0 has no feasible
    point, hence no solution: y >= 0 with F' y <= 0 and e' y < 0 (then y'(F z + e) < 0 for every
    z >= 0). Found by an LP (HiGHS: min e'y, F'y <= 0, 0 <= y <= 1) and checked independently here:
    F'y <= rtol ||F|| ||y|| (rounding) and e'y < -rtol ||e|| ||y||_1. Returns y or None.

    Only infeasibility is certified this way: a feasible LCP without a complementary solution (an
    inconsistent configuration with several contacts) gets None, i.e. no proof."""
    from scipy.optimize import linprog
    lcp = problem.lcp_reduction()[0] if isinstance(problem, MixedLCP) else problem
    F = np.asarray(lcp.M.toarray() if hasattr(lcp.M, "toarray") else lcp.M, dtype=np.float64)
    e = np.asarray(lcp.q, dtype=np.float64)
    n = e.size
    if n == 0 or not (np.all(np.isfinite(F)) and np.all(np.isfinite(e))):
        return None
    res = linprog(e, A_ub=F.T, b_ub=np.zeros(n), bounds=[(0.0, 1.0)] * n, method="highs")
    if res.status != 0 or res.x is None:
        return None
    y = np.maximum(np.asarray(res.x, dtype=np.float64), 0.0)
    ny = float(np.max(y, initial=0.0))
    if ny == 0.0:
        return None
    fe = float(np.max(np.abs(F), initial=0.0))
    ok = float(np.max(F.T @ y)) <= rtol * fe * ny and float(e @ y) < -rtol * float(np.max(np.abs(e))) * float(y.sum())
    return y if ok else None


def _solve_certified(built: PyramidProblem, method: str, prove: bool, prove_max_n: int):
    """(solution, consistent): True when solved (certified by ``solve``), False only with a checked
    proof that no solution exists, None otherwise (the first method's failure status is kept;
    NO_SOLUTION_FOUND is never read as a proof).

    With ``prove``: an independent Farkas certificate (:func:`infeasibility_certificate`) proves an
    inconsistent configuration such as Painleve's rod; on small problems (n <= ``prove_max_n``)
    ``enumerate`` is tried to find a solution the first method missed, and its NO_SOLUTION is accepted
    only with the certificate that ``solve()`` checked (``info['certificate']``)."""
    from ..solvers import available_solvers, solve
    sol = solve(built.problem, method=method)
    if sol.success:
        return sol, True
    if not prove:
        return sol, None
    y = infeasibility_certificate(built.problem)
    if y is not None:
        proof = Solution(np.zeros(built.problem.n), np.full(built.problem.n, np.nan), Status.NO_SOLUTION,
                         method="farkas", info={"certificate": y, "first_method": {"method": method,
                                                                                  "status": sol.status.name}})
        return proof, False
    if built.problem.n <= prove_max_n and "enumerate" in available_solvers():
        ref = solve(built.problem, method="enumerate")
        ref.info["first_method"] = {"method": method, "status": sol.status.name}
        if ref.success:
            return ref, True
        if ref.status == Status.NO_SOLUTION and ref.info.get("certificate") is not None:
            return ref, False
    return sol, None


def solve_trinkle_pang(M, v, f, N, S, T, mu, J=None, *, method: str = "lemke", d: int = 4,
                       normal_bias=None, slip_tol: float = 1e-6, prove: bool = True,
                       prove_max_n: int = 12) -> TrinklePangResult:
    """Build and solve the pyramid model; statuses as in :class:`TrinklePangResult`."""
    built = build_trinkle_pang(M, v, f, N, S, T, mu, J, d=d, normal_bias=normal_bias, slip_tol=slip_tol)
    sol, ok = _solve_certified(built, method, prove, prove_max_n)
    res = recover_pyramid(built, sol) if ok else None
    return TrinklePangResult(sol.status, ok, res, sol, built, lcp_variables=built.problem.n)


def _wrap(x):
    return (np.asarray(x) + np.pi) % (2 * np.pi) - np.pi


def cone_residual(built: PyramidProblem, res: StepResult, tol: float = 1e-9) -> float:
    """Largest violation of the cone law (drumwright eq. 20-22) over rolling contacts, relative to
    max(1, mu c_n): |f_t| <= mu c_n, and f_t = -mu c_n a_t / |a_t| whenever a_t != 0."""
    a = res.accel
    worst = 0.0
    for i in built.rolling:
        cap = built.mu[i] * res.normal[i]
        ft = np.array([res.tangent_s[i], res.tangent_t[i]])
        at = np.array([built.S[i] @ a, built.T[i] @ a])
        scale = max(1.0, cap)
        worst = max(worst, max(0.0, np.linalg.norm(ft) - cap) / scale)
        na = np.linalg.norm(at)
        if na > tol * max(1.0, np.abs(a).max(initial=0.0)):
            worst = max(worst, np.linalg.norm(ft + cap * at / na) / scale)
    return worst


def solve_trinkle_pang_cone(M, v, f, N, S, T, mu, J=None, *, method: str = "lemke", d: int = 4,
                            normal_bias=None, slip_tol: float = 1e-6, tol: float = 1e-8,
                            max_refinements: int = 30, prove: bool = True) -> TrinklePangResult:
    """Quadratic-cone model by successive pyramid refinement.

    Start from a d-sided pyramid; after each solve add, at each rolling contact whose tangential
    acceleration a_t is nonzero, a new pyramid vertex: the direction -a_t/|a_t|, or a secant step on
    the fixed-point residual angle(-a_t) - angle(f_t) once two iterates exist; stop when :func:`cone_residual` <= tol
    (status SOLVED: an exact cone solution up to tol) or after ``max_refinements`` (MAX_ITERATIONS).
    Sliding contacts use the exact cone law (force along -v_t). A failed pyramid solve ends the
    loop with that solve's status.
    """
    n = np.shape(N)[0]
    angles = [uniform_angles(d) for _ in range(n)]
    built = None
    history: dict = {}
    for it in range(max_refinements + 1):
        built = build_trinkle_pang(M, v, f, N, S, T, mu, J, angles=angles, normal_bias=normal_bias,
                                   slip_tol=slip_tol, sliding_law="cone")
        sol, ok = _solve_certified(built, method, prove, 12)
        if not ok:
            return TrinklePangResult(sol.status, ok, None, sol, built, it, float("nan"), built.problem.n)
        res = recover_pyramid(built, sol)
        r = cone_residual(built, res)
        if r <= tol:
            return TrinklePangResult(Status.SOLVED, True, res, sol, built, it, r, built.problem.n)
        a = res.accel
        changed = False
        for i in built.rolling:
            at = np.array([built.S[i] @ a, built.T[i] @ a])
            if np.linalg.norm(at) == 0 or res.normal[i] <= 0:
                continue
            psi = np.arctan2(res.tangent_t[i], res.tangent_s[i])       # direction of the current force
            r_i = _wrap(np.arctan2(-at[1], -at[0]) - psi)               # cone law wants r_i = 0
            th = psi + r_i
            prev = history.get(i)
            if prev is not None and abs(r_i - prev[1]) > 1e-15:        # secant step on psi -> r(psi)
                step = -r_i * _wrap(psi - prev[0]) / (r_i - prev[1])
                if abs(step) <= 4 * abs(r_i) + 1e-15:
                    th = psi + step
            history[i] = (psi, r_i)
            th %= 2 * np.pi
            if np.abs(_wrap(angles[i] - th)).min() > 1e-14:
                angles[i] = np.append(angles[i], th)
                changed = True
        if not changed:
            break
    return TrinklePangResult(Status.MAX_ITERATIONS, None, res, sol, built, it, r, built.problem.n)


def painleve_rod(theta: float = np.pi / 4, mu: float = 2.0, speed: float = 1.0, half_length: float = 0.5,
                 mass: float = 1.0, g: float = 9.81):
    """Painleve's sliding rod in 3D: a thin rod (inertia about its centre m l^2 / 3 on the two
    transverse axes) inclined at ``theta`` from the ground, its lower end on the ground sliding
    along +x at ``speed``. Returns (M, v, f, N, S, T, mu) for one contact at the lower end.

    The normal acceleration per unit normal force is (1 + 3 cos^2 th - 3 mu sin th cos th) / m
    (the centre is behind the contact, so friction along -x lifts the far end), negative
    (inconsistent: no finite-force solution since gravity pulls the contact down) when
    mu > (1 + 3 cos^2 th) / (3 sin th cos th), i.e. mu > 5/3 at 45 degrees.
    """
    l = half_length
    Ic = mass * l * l / 3.0
    M = np.diag([mass, mass, mass, Ic, Ic, Ic])
    # rod centre at the origin; lower end at r = (l cos th, 0, -l sin th) (the end leads in +x)
    r = np.array([l * np.cos(theta), 0.0, -l * np.sin(theta)])

    def row(direction):
        return np.concatenate([direction, np.cross(r, direction)])

    N = row(np.array([0.0, 0.0, 1.0]))[None]
    S = row(np.array([1.0, 0.0, 0.0]))[None]
    T = row(np.array([0.0, 1.0, 0.0]))[None]
    v = np.zeros(6)
    v[0] = speed
    f = np.zeros(6)
    f[2] = -mass * g
    return M, v, f, N, S, T, mu


# -- the simulator's model interface (docs/architecture.md) ------------------------------------------------
NAME = "trinkle-pang"
DEFAULT_METHOD = "lemke"
DESCRIPTION = "acceleration-level friction pyramids, rolling/sliding by contact velocity (Trinkle-Pang-Sudarsky-Lo)"


@dataclass(frozen=True)
class Options:
    """slip_tol: tangential speed (m/s) above which a contact is sliding; sliding_law: "cone"
    (default: Coulomb's law, the force opposes the slip exactly, -mu c_n v_t/|v_t|, as TPSL's
    sliding contacts) or "pyramid" (the pyramid vertex nearest -v_t, up to 180/d degrees off). Rolling
    contacts use the d-sided pyramid (TPSL's linearised cone). In a time step: semi-implicit Euler
    v+ = v + h a, normal rows N a + (N v + n_bias)/h >= 0 (an approaching contact gets its inelastic
    impulse h c_n in the same LCP, with the same friction law), beta rows D a + D v / h + E lambda,
    joints J a = (j_rhs - J v)/h; force-limited motors act as forces at their limit (see no-slip).
    Friction is bounded by mu c_n at every contact, so a separating or speculative contact (c_n = 0)
    carries none. The quadratic-cone refinement needs several solves per step and is available as
    :func:`solve_trinkle_pang_cone`, not here. Inconsistent steps (Painleve) are solver failures.
    cfm: added to every complementarity row's diagonal (with settings.cfm), as stewart-trinkle does:
    the pyramid LCP of coplanar contact points is degenerate. integrator: "euler" or "rk4"
    (drumwright Sec. VII-B, :mod:`contactlab.models.rk4`: the Stewart-Trinkle impact, d-sided
    pyramid, when the step starts with a violated velocity row, then RK4 stages at the step's
    contact geometry, the first three solved in ``build`` with ``stage_method``)."""
    slip_tol: float = 1e-4
    sliding_law: str = "cone"
    cfm: float = 1e-6
    integrator: str = "euler"
    stage_method: str = "lemke"

    def __post_init__(self):
        check_integrator(self.integrator)
        if self.sliding_law not in SLIDING_LAWS:
            raise ModelError(f"sliding_law must be one of {SLIDING_LAWS}, got {self.sliding_law!r}")


def build(sys, options: Options | None = None) -> Built:
    from .common import refuse_dense
    from .noslip import _dense, motor_forces
    refuse_dense("trinkle-pang", {"M": (sys.ndof, sys.ndof), "[L; N], S, T": (3 * (sys.nl + sys.nc), sys.ndof),
                                  "pyramid": ((sys.d + 2) * sys.nc + sys.nl, (sys.d + 2) * sys.nc + sys.nl)}, "use fewer bodies, or model box-friction (sparse)")
    o = options or Options()
    f_motor, _ = motor_forces(sys)
    m, h, nl = sys.ndof, sys.h, sys.nl
    M = _dense(sys.M)
    L = _dense(sys.L).reshape(-1, m)
    U = np.vstack([L, _dense(sys.N).reshape(-1, m)])
    S = np.vstack([np.zeros_like(L), _dense(sys.S).reshape(-1, m)])
    T = np.vstack([np.zeros_like(L), _dense(sys.T).reshape(-1, m)])
    mu = np.concatenate([np.zeros(nl), sys.mu])
    J = _dense(sys.J).reshape(-1, m)
    bias0 = np.concatenate([sys.l_bias, sys.n_bias])
    cfm = float(sys.cfm + o.cfm)

    def make_stage(v):
        return build_trinkle_pang(M, v, sys.f + f_motor, U, S, T, mu, J, d=sys.d, normal_bias=(U @ v + bias0) / h,
                                  slip_tol=o.slip_tol, sliding_law=o.sliding_law, j_rhs=(sys.j_rhs - J @ v) / h,
                                  tangent_v=v / h, cfm=cfm)

    def make_impact(v):
        return build_stewart_trinkle(M, v, np.zeros(m), 0.0, U, S, T, mu, J, d=sys.d, normal_bias=bias0,
                                     j_rhs=sys.j_rhs, cfm=cfm)

    last, st = staging.stage(sys, o.integrator, o.stage_method, make_stage, recover_pyramid, make_impact,
                             recover_pyramid, cfm=cfm)
    return Built(last.problem, {"limit": slice(0, nl), "normal": slice(nl, nl + sys.nc),
                                "friction": slice(nl + sys.nc, last.problem.n)}, (last, st))


def recover(sys, built: Built, solution, options: Options | None = None):
    from .common import contact_modes
    from .noslip import motor_forces, motor_saturated
    last, st = built.state
    res = recover_pyramid(last, solution)
    nl = sys.nl
    v_next, mix = staging.combine(sys, st, res)
    imp = lambda get: staging.impulse(st, mix, get)
    _, motor = motor_forces(sys)
    normal_all = imp(lambda r: r.normal)
    normal = normal_all[nl:]
    return StepResult(v_next=v_next, normal=normal,
                      tangent=np.column_stack([imp(lambda r: r.tangent_s)[nl:], imp(lambda r: r.tangent_t)[nl:]]),
                      joint=imp(lambda r: r.joint), limit=normal_all[:nl], motor=motor,
                      modes=contact_modes(sys, v_next, normal),
                      info={"sliding": last.sliding[last.sliding >= nl] - nl, "stage_failures": st.failures,
                            "impact": st.impact is not None, "certified": st.failures == 0,
                            "motor_saturated": motor_saturated(sys, v_next, motor)})

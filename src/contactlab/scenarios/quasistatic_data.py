"""The quasistatic data of Pang, Trinkle & Lo (1994), section 5: Data Sets 1-4, the random generator
and the twenty Table-1 problem specifications."""
from __future__ import annotations

import math
import time

import numpy as np

from ..errors import ModelError, ParamError
from ..models.quasistatic import QuasistaticTask, build_ucp, equation_residuals, recover, wrench_matrices
from ..solution import status_text

# Every data set has three point fingers with two joints each: joint 2i moves finger i along
# the contact normal, joint 2i+1 along the tangent.
_JN = np.array([[1, 0, 0, 0, 0, 0], [0, 0, 1, 0, 0, 0], [0, 0, 0, 0, 1, 0]], dtype=float)
_JT = np.array([[0, 1, 0, 0, 0, 0], [0, 0, 0, 1, 0, 0], [0, 0, 0, 0, 0, 1]], dtype=float)
_D = np.array([0, 0, 0, 0, -1, 0], dtype=float)

_P1 = np.array([[0.966, 0.259, 0.000],
                [0.000, 1.000, 0.240],
                [-0.707, 0.707, 0.750],
                [-0.259, 0.966, -2.000],
                [-1.000, 0.000, -1.450],
                [-0.707, -0.707, -1.900]])
_P2 = np.array([[0.804, 0.595, 1.040],
                [-0.707, 0.707, -3.500],
                [-0.973, -0.232, 14.000],
                [-0.595, 0.804, -20.900],
                [-0.707, -0.707, -17.900],
                [0.232, -0.973, -7.630]])
_THETA1 = [0.1, 0.995, 0.1, -0.995, 0.1, 0.995]
_THETA2 = [0.92, -0.391, 0.9276, -0.3747, 0.9306, -0.367]
_THETA3 = [-0.161, 0.987, 0.995, 0.1, -0.774, -0.633]

DATA_SETS = ("data-set-1", "data-set-2", "data-set-3", "data-set-4")


def data_set(k: int, mu=None) -> QuasistaticTask:
    """Data Set ``k`` (1-4) of section 5; ``mu`` overrides the friction coefficients."""
    if k == 1:
        P, th, m = _P1, _THETA1, [0.5, 0.5, 0.3]
    elif k == 2:
        P, th, m = _P2, _THETA2, [0.1, 0.4, 0.3]
    elif k == 3:
        P, th, m = _P1, _THETA3, [0.5, 0.5, 0.3]
    elif k == 4:
        P, th, m = _P2, _THETA2, [0.7, 0.9, 0.9]
    else:
        raise ModelError(f"data set {k} does not exist; the paper has Data Sets 1-4")
    return QuasistaticTask.from_compact(P, _JN, _JT, th, _D, m if mu is None else mu, name=f"data-set-{k}")


def random_task(rng: np.random.Generator, n_c: int, *, mu_max: float = 1.0, n_alpha_bar: int = 0,
                name: str = "random") -> QuasistaticTask:
    """A random feasible problem as in section 5: one elliptical workpiece, ``n_c`` two-joint fingers.

    n_theta = 2 n_c, n_q = 3. Following the paper, a force pair (c_n, c_t) inside the friction
    cones fixes g_obj and g_man through eq. (2)-(3), so Y is nonempty; a velocity pair with
    v_n >= 0 fixes theta_dot through eq. (4)-(5), so X is nonempty whatever the control split.
    ``n_alpha_bar`` joints, chosen at random, are effort-controlled. mu_i ~ U(0, mu_max).
    Each finger is a planar two-link revolute arm at a random, non-singular posture.
    """
    if n_c < 1:
        raise ModelError("n_c must be at least 1")
    n_th = 2 * n_c
    if not 0 <= n_alpha_bar <= n_th:
        raise ModelError(f"n_alpha_bar must lie in [0, {n_th}]")
    if mu_max < 0:
        raise ModelError("mu_max must be >= 0")
    a, b = rng.uniform(1.0, 2.0), rng.uniform(0.5, 1.5)
    phi = np.sort(rng.uniform(0, 2 * np.pi, n_c))
    points = np.column_stack([a * np.cos(phi), b * np.sin(phi)])
    outward = np.column_stack([np.cos(phi) / a, np.sin(phi) / b])
    normals = -outward / np.linalg.norm(outward, axis=1)[:, None]
    W_n, W_t = wrench_matrices(points, normals)
    tangents = np.column_stack([-normals[:, 1], normals[:, 0]])
    J_n, J_t = np.zeros((n_c, n_th)), np.zeros((n_c, n_th))
    for i in range(n_c):
        l1, l2 = rng.uniform(0.5, 1.5, 2)
        q1 = rng.uniform(0, 2 * np.pi)
        q2 = rng.choice([-1, 1]) * rng.uniform(0.3, np.pi - 0.3)
        s1, c1, s12, c12 = np.sin(q1), np.cos(q1), np.sin(q1 + q2), np.cos(q1 + q2)
        Jw = np.array([[-l1 * s1 - l2 * s12, -l2 * s12], [l1 * c1 + l2 * c12, l2 * c12]])
        J_n[i, 2 * i:2 * i + 2] = normals[i] @ Jw
        J_t[i, 2 * i:2 * i + 2] = tangents[i] @ Jw
    mu = rng.uniform(0, mu_max, n_c)
    c_n = rng.uniform(0, 1, n_c)
    c_t = rng.uniform(-1, 1, n_c) * mu * c_n
    g_obj = -(W_n @ c_n + W_t @ c_t)
    tau = rng.normal(size=n_th)
    g_man = tau - (J_n.T @ c_n + J_t.T @ c_t)
    v_n = rng.uniform(0, 1, n_c)
    v_t = rng.normal(size=n_c)
    q_dot = rng.normal(size=3)
    J = np.vstack([J_n, J_t])
    theta_dot = np.linalg.solve(J, np.concatenate([W_n.T @ q_dot - v_n, W_t.T @ q_dot - v_t]))
    alpha_bar = np.sort(rng.choice(n_th, n_alpha_bar, replace=False))
    alpha = np.setdiff1d(np.arange(n_th), alpha_bar)
    return QuasistaticTask(W_n, W_t, J_n, J_t, mu, g_obj, g_man, alpha, theta_dot[alpha], tau[alpha_bar],
                           name=name)


# Table 1 of the paper: (n_c, upper end of the mu range, |alpha|, |alpha-bar|); problems 1-20.
TABLE1 = [(3, 1.0, 6, 0), (10, 1.0, 20, 0), (10, 2.0, 20, 0), (15, 1.2, 29, 1), (18, 0.8, 27, 9),
          (20, 1.0, 40, 0), (20, 1.5, 40, 0), (20, 1.2, 40, 0), (20, 1.0, 30, 10), (20, 1.0, 30, 10),
          (20, 1.0, 40, 0), (30, 1.0, 60, 0), (30, 0.5, 45, 15), (30, 0.6, 45, 15), (40, 1.0, 80, 0),
          (40, 1.0, 80, 0), (10, 1.3, 15, 5), (15, 1.2, 24, 6), (30, 0.6, 45, 15), (40, 1.0, 60, 20)]
# The paper's results: (pairs found, best x'y, solved by the restart variant '*').
TABLE1_PAPER = [(2, 0.0, False), (1, 0.0, False), (5, 0.0, True), (2, 0.0, False), (1, 0.0, False),
                (1, 0.0, False), (4, 0.0, True), (2, 0.0, False), (2, 0.0, False), (2, 0.0, False),
                (4, 0.0, False), (2, 0.0, False), (1, 0.0, False), (24, 0.0, True), (1, 0.0, False),
                (1, 0.0, False), (52, 0.00001, False), (39, 14.61551, False), (49, 24.32773, False),
                (52, 1.23990, False)]
TABLE1_SEED = 19941206


def table1_task(k: int, seed: int = TABLE1_SEED) -> QuasistaticTask:
    """Problem ``k`` (1-20) of Table 1, regenerated with a fixed seed (the paper's data are lost)."""
    if not 1 <= k <= len(TABLE1):
        raise ModelError(f"Table 1 has problems 1-{len(TABLE1)}; got {k}")
    n_c, mu_max, _, n_ab = TABLE1[k - 1]
    return random_task(np.random.default_rng([seed, k]), n_c, mu_max=mu_max, n_alpha_bar=n_ab,
                       name=f"table1-{k}")


def random_case(seed: int, n_c: int) -> QuasistaticTask:
    """The CLI's ``random`` case: mu range and |alpha-bar| drawn among the paper's Table-1 choices
    (|alpha-bar| = 0 or about n_c / 2, mu_max in 0.5 .. 2.0)."""
    rng = np.random.default_rng(seed)
    mu_max = float(rng.choice([0.5, 0.6, 0.8, 1.0, 1.2, 1.5, 2.0]))
    n_ab = int(rng.choice([0, n_c // 2]))
    return random_task(rng, n_c, mu_max=mu_max, n_alpha_bar=n_ab, name=f"random(seed={seed}, n_c={n_c})")


def case(name: str, *, seed: int = 0, contacts: int = 10) -> QuasistaticTask:
    """``data-set-1`` .. ``data-set-4``, ``table1-K`` or ``random``."""
    if name in DATA_SETS:
        return data_set(int(name[-1]))
    if name.startswith("table1-"):
        return table1_task(int(name.split("-")[1]), seed=seed or TABLE1_SEED)
    if name == "random":
        return random_case(seed, contacts)
    raise ModelError(f"unknown case {name!r}; use one of {', '.join(DATA_SETS)}, random, table1-1 .. table1-20")


# CLI names -> registered solvers. The contact-mode enumeration is ``mode-enumeration`` (the name
# ``enumerate`` belongs to the exhaustive LCP solver); ``enumerate`` is still accepted here as an
# old spelling and is reported under its real name.
METHODS = {"bilinear-lp": "bilinear-lp", "mip": "mip", "mode-enumeration": "mode-enumeration"}
ALIASES = {"enumerate": "mode-enumeration"}
_case = case   # run_case's argument of that name hides the function


def run_case(case: str, method: str = "bilinear-lp", seed: int = 0, contacts: int = 10) -> dict:
    """Solve one case and return the record ``contactlab quasistatic --json`` prints (plus
    ``_solution``, ``_task``, ``_time`` and, when solved, ``_equations`` for callers)."""
    from ..solvers import solve
    method = ALIASES.get(method, method)
    if method not in METHODS:
        raise ParamError(f"unknown quasistatic method {method!r}; use one of {', '.join(METHODS)}")
    task = _case(case, seed=seed, contacts=contacts)
    problem = build_ucp(task)
    opts = {"seed": seed} if METHODS[method] == "bilinear-lp" else {}
    t0 = time.perf_counter()
    sol = solve(problem, method=METHODS[method], **opts)
    elapsed = time.perf_counter() - t0
    pairs = sol.info.get("candidates") if METHODS[method] == "mode-enumeration" else sol.info.get("pairs")
    if METHODS[method] == "mip":
        pairs = None
    rec = {"case": case, "method": method, "status": status_text(sol.status), "pairs": pairs,
           "lps": sol.info.get("lps"), "xTy": None, "c_n": None, "c_t": None, "q_dot": None,
           "theta_dot": None, "tau": None, "modes": None}
    if np.all(np.isfinite(sol.z)):
        x, y = problem.split(sol.z)
        rec["xTy"] = float(x @ y)
    elif isinstance(sol.info.get("xTy"), float) and math.isfinite(sol.info["xTy"]):
        rec["xTy"] = sol.info["xTy"]
    if sol.success:
        x, y = problem.split(sol.z)
        motion = recover(task, x, y)
        rec.update(motion.as_dict())
        rec["_equations"] = equation_residuals(task, motion)
    rec["_solution"], rec["_task"], rec["_time"] = sol, task, elapsed
    return rec

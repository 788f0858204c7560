"""Named textbook cases and problem builders per matrix class (shared by the test modules)."""
from __future__ import annotations

import numpy as np

import contactlab as cl
from contactlab.problems import generators as gen


def cottle_textbook() -> tuple[cl.LCP, np.ndarray]:
    """Cottle-Pang-Stone Example 1.1-style 2x2 SPD case with the known solution z = (1/3, 1/3)."""
    M = np.array([[2.0, 1.0], [1.0, 2.0]])
    return cl.LCP(M, np.array([-1.0, -1.0])), np.array([1 / 3, 1 / 3])


def infeasible() -> cl.LCP:
    """w = -z - 1 >= 0 has no solution with z >= 0."""
    return cl.LCP(-np.eye(2), -np.ones(2))


def trivial() -> cl.LCP:
    return cl.LCP(np.eye(3), np.array([1.0, 0.0, 2.0]))


TEXTBOOK = {
    "cottle_2x2": lambda: cottle_textbook()[0],
    "kostreva_cycling": gen.kostreva_cycling,
    "murty_6": lambda: gen.murty(6),
    "trivial": trivial,
}


def boxed_static(n: int, rng: np.random.Generator) -> cl.BoxedLCP:
    """SPD M with a mix of one-sided, two-sided and free rows."""
    M = gen.spd_matrix(n, rng)
    q = rng.standard_normal(n)
    kind = rng.integers(0, 4, n)
    lo = np.where(kind == 0, 0.0, np.where(kind == 1, -rng.uniform(0.1, 1, n), -np.inf))
    hi = np.where(kind == 1, rng.uniform(0.1, 1, n), np.where(kind == 2, rng.uniform(0, 1, n), np.inf))
    return cl.BoxedLCP(M, q, lo, hi)


def boxed_coupled(n_contacts: int, rng: np.random.Generator, M=None) -> cl.BoxedLCP:
    """Normal rows [0, inf) and two friction rows per contact with |f| <= mu z_n (ODE findex);
    M defaults to a random SPD matrix."""
    n = 3 * n_contacts
    M = gen.spd_matrix(n, rng) if M is None else M
    q = rng.standard_normal(n)
    lo, hi = np.zeros(n), np.full(n, np.inf)
    findex = np.full(n, -1)
    mu = np.zeros(n)
    for c in range(n_contacts):
        for t in (1, 2):
            findex[3 * c + t] = 3 * c
            mu[3 * c + t] = rng.uniform(0.2, 1.0)
    return cl.BoxedLCP(M, q, lo, hi, findex=findex, mu=mu)


def make(cls: str, rng: np.random.Generator):
    """A small problem of matrix class ``cls`` (see contactlab.solvers.registry.MATRIX_CLASSES)."""
    n = int(rng.integers(2, 9))
    if cls == "spd":
        return gen.random_spd(n, rng)
    if cls == "psd":
        return gen.random_psd(n, rng, rank=int(rng.integers(1, n)))
    if cls == "p":
        return gen.random_p_matrix(n, rng)
    if cls == "friction":
        return gen.friction_pyramid_lcp(int(rng.integers(1, 3)), rng, d=4)
    if cls == "factored":
        return gen.box_stack_factored(int(rng.integers(1, 4)), rng)
    if cls == "boxed":
        return boxed_static(int(rng.integers(2, 6)), rng)
    if cls == "boxed-coupled":
        return boxed_coupled(int(rng.integers(1, 4)), rng)
    raise KeyError(cls)


def robot_steps(scene: str, model: str, what: str, steps: int, every: int, **model_options) -> list:
    """``what`` (``"last_system"``: the ConstraintSystem, ``"last_problem"``: the problem) of a robot
    scene's steps under ``model`` (method ppm) with its controllers running (feet or fingers touching
    and lifting): every ``every``-th of the first ``steps`` steps."""
    from contactlab.scenarios import make_scene
    from contactlab.sim import Simulator
    sc = make_scene(scene)
    sim = Simulator(sc, model, "ppm", controllers=list(getattr(sc, "controllers", ())),
                    model_options=model_options or None)
    out = []
    for i in range(steps):
        sim.step()
        if i % every == every - 1:
            out.append(getattr(sim, what))
    return out


def trot_systems(model: str, steps: int = 40, every: int = 4, **model_options) -> list:
    """ConstraintSystems of the quadruped's trot under ``model``: :func:`robot_steps`."""
    return robot_steps("quadruped", model, "last_system", steps, every, **model_options)


def with_csc_mass(sys_):
    """A copy of the ConstraintSystem whose M is CSC: the no-slip and viscous models' build then
    takes its general path (rows scattered one matrix at a time) instead of the one-call build."""
    import copy
    other = copy.copy(sys_)
    other.M = sys_.M.tocsc()
    return other


def body_rows(rng, nbody, nrows, bodies_of):
    """A contact-like H (CSR, 6 columns per body) whose row r has random entries on the bodies
    ``bodies_of(r)`` returns (drawn from ``rng`` first), and W's SPD 6x6 blocks (A A' + I/2): the
    factors (H, W) of a Delassus matrix H W H' for the body-space and set-aside tests."""
    import scipy.sparse as sp
    rows, cols, vals = [], [], []
    for r in range(nrows):
        for b in bodies_of(r):
            rows += [r] * 6
            cols += list(range(6 * b, 6 * b + 6))
            vals += list(rng.normal(size=6))
    H = sp.csr_matrix((vals, (rows, cols)), shape=(nrows, 6 * nbody))
    H.sort_indices()
    A = rng.normal(size=(nbody, 6, 6))
    return H, np.einsum("bij,bkj->bik", A, A) + 0.5 * np.eye(6)

"""The no-slip step's force-limited velocity motors (drumwright eq. 23-25 with the motors' box rows
|c_a| <= a_max on A v+ = a_target; models/noslip.py ``build``): the pieces of the active set over the
motors' states, compiled, for the general path (models/noslip.py) and the compiled step
(sim/noslip_kernels.py ``noslip_motor_step``) alike, so both take the same decisions on the same bits.

A motor's state is 0 at its target (its row A_i v+ = a_target_i joins the equality rows J v+ = j_rhs;
its impulse is that row's multiplier) or +1 / -1 saturated (its impulse +-a_max_i, a force
+-a_max_i / h toward its target). The factored LCP that ppm solves (drumwright eq. 57) is
symmetric and one-sided and cannot carry a box row, so the step is solved for a state, the state
the answer calls for is read (:func:`motor_violations`), and the step repeats with it: a primal-dual
active set on the strictly convex QP in v+ that the no-slip step with box rows is.

The motor rows A travel as CSR (indptr, indices, data), their products summed as scipy's CSR
product sums them (:func:`~contactlab.kernels.dense.csr_times`: 0 plus each stored entry in order).
"""
import numpy as np

from ._jit import jit
from .dense import csr_times, csr_transpose_times


@jit
def motor_start(Ap, Ai, Ax, a_target, v_free):
    """The first state: each motor saturated toward its target, sign(a_target - A v_free) (int8; 0
    where a motor's free rate is at its target)."""
    r = csr_times(Ap, Ai, Ax, v_free)
    nm = a_target.shape[0]
    state = np.zeros(nm, dtype=np.int8)
    for i in range(nm):
        d = a_target[i] - r[i]
        if d > 0.0:
            state[i] = 1
        elif d < 0.0:
            state[i] = -1
    return state


@jit
def motor_force(Ap, Ai, Ax, state, a_max, h, f):
    """f + A' (state a_max) / h: the saturated motors' impulses +-a_max as forces added to the
    generalized force f (a free motor adds nothing). A new array."""
    nm = state.shape[0]
    c = np.empty(nm)
    for i in range(nm):
        c[i] = state[i] * a_max[i]
    g = csr_transpose_times(Ap, Ai, Ax, c, f.shape[0])
    out = np.empty(f.shape[0])
    for j in range(f.shape[0]):
        out[j] = f[j] + g[j] / h
    return out


@jit
def motor_rows(J, A, state, j_rhs, a_target):
    """[J; A_free] and [j_rhs; a_target_free]: the rows (dense, (nj, m) and (nm, m)) of the free motors
    (state 0) joined after the equality rows, with their right-hand sides."""
    nj, m = J.shape
    nf = 0
    for i in range(state.shape[0]):
        nf += state[i] == 0
    G = np.empty((nj + nf, m))
    rhs = np.empty(nj + nf)
    for r in range(nj):
        for c in range(m):
            G[r, c] = J[r, c]
        rhs[r] = j_rhs[r]
    r = nj
    for i in range(state.shape[0]):
        if state[i] == 0:
            for c in range(m):
                G[r, c] = A[i, c]
            rhs[r] = a_target[i]
            r += 1
    return G, rhs


@jit
def motor_impulses(state, a_max, joint, n_joint):
    """The motors' impulses: +-a_max for the saturated ones, the free ones' row multipliers (their rows
    follow the n_joint equality rows in ``joint``, in motor order)."""
    nm = state.shape[0]
    c = np.empty(nm)
    k = n_joint
    for i in range(nm):
        c[i] = state[i] * a_max[i]
        if state[i] == 0:
            c[i] = joint[k]
            k += 1
    return c


@jit
def motor_violations(Ap, Ai, Ax, a_target, a_max, state, v_next, impulse, tol):
    """The state that the step's answer (v_next, the motors' ``impulse``) calls for, equal to ``state``
    where it is consistent: the box |c_i| <= a_max_i on A_i v+ - a_target_i (the
    mid-complementarity of the other models' motor rows). A motor at its target whose impulse
    exceeds its bound (relative 1e-9) saturates with the impulse's sign; a saturated motor whose
    rate passed its target (by more than ``tol`` times max(1, |a_target|, |A v+|)) returns to it."""
    nm = state.shape[0]
    new = state.copy()
    if nm == 0:
        return new
    av = csr_times(Ap, Ai, Ax, v_next)
    big_t = 0.0
    big_v = 0.0
    for i in range(nm):
        big_t = max(big_t, abs(a_target[i]))
        big_v = max(big_v, abs(av[i]))
    vtol = tol * max(1.0, big_t, big_v)
    for i in range(nm):
        if state[i] == 0:
            if abs(impulse[i]) > a_max[i] * (1.0 + 1e-9) + 1e-300:
                new[i] = 1 if impulse[i] > 0.0 else -1
        elif state[i] * (av[i] - a_target[i]) > vtol:
            new[i] = 0
    return new

"""kernels/motor_set.py (the no-slip step's force-limited motors: drumwright eq. 23-25 with box rows
|c_a| <= a_max on A v+ = a_target) against the numpy formulas of the active set it replaces in
models/noslip.py: the first state, the saturated motors' forces, the free motors' rows, the motors'
impulses and the state an answer calls for."""
import numpy as np
import pytest
import scipy.sparse as sp

from contactlab.kernels import motor_set as KM


def _rows(rng, nm=5, m=12, shared=True):
    """A (nm, m) CSR motor rows; ``shared``: several motors on one coordinate (a chain's joints)."""
    A = np.zeros((nm, m))
    for i in range(nm):
        cols = rng.choice(m, 3, replace=False) if shared else [2 * i, 2 * i + 1]
        A[i, cols] = rng.normal(size=len(cols))
    C = sp.csr_matrix(A)
    return A, (C.indptr.astype(np.int64), C.indices.astype(np.int64), C.data.copy())


def _violations(A, a_target, a_max, state, v_next, impulse, tol=1e-9):
    """models/noslip.py motor_violations as numpy wrote it (the reference)."""
    new = state.copy()
    err = A @ v_next - a_target
    vtol = tol * max(1.0, float(np.abs(a_target).max()), float(np.abs(A @ v_next).max()))
    over = (state == 0) & (np.abs(impulse) > a_max * (1.0 + 1e-9) + 1e-300)
    new[over] = np.sign(impulse[over]).astype(np.int8)
    passed = (state != 0) & (state * err > vtol)
    new[passed] = 0
    return new


@pytest.mark.parametrize("seed", range(5))
def test_start_force_rows_and_impulses_equal_their_numpy_formulas(seed):
    rng = np.random.default_rng(seed)
    A, csr = _rows(rng)
    nm, m = A.shape
    a_target, a_max, v, f = rng.normal(size=nm), rng.uniform(0.1, 2.0, nm), rng.normal(size=m), rng.normal(size=m)
    C = sp.csr_matrix((csr[2], csr[1], csr[0]), shape=A.shape)
    a_target[0] = (C @ v)[0]        # at its target (scipy's CSR product, whose sums the kernel's are): state 0
    state = KM.motor_start(*csr, a_target, v)
    assert state[0] == 0 and state.dtype == np.int8
    assert np.array_equal(state, np.sign(a_target - C @ v).astype(np.int8))
    state[1] = 0
    h = 0.01
    # f + A' (state a_max) / h: the same sums as the dense product where each coordinate has one motor
    assert np.allclose(KM.motor_force(*csr, state, a_max, h, f), f + A.T @ (state * a_max) / h, rtol=1e-14, atol=0)
    A1, csr1 = _rows(rng, nm=4, m=10, shared=False)
    s1 = np.array([1, 0, -1, 1], dtype=np.int8)
    assert np.array_equal(KM.motor_force(*csr1, s1, a_max[:4], h, f[:10]), f[:10] + A1.T @ (s1 * a_max[:4]) / h)
    J, rhs = rng.normal(size=(3, m)), rng.normal(size=3)
    G, r = KM.motor_rows(J, A, state, rhs, a_target)
    free = state == 0
    assert np.array_equal(G, np.vstack([J, A[free]])) and np.array_equal(r, np.concatenate([rhs, a_target[free]]))
    joint = rng.normal(size=3 + free.sum())
    c = state * a_max
    c[free] = joint[3 + np.arange(free.sum())]
    assert np.array_equal(KM.motor_impulses(state, a_max, joint, 3), c)


@pytest.mark.parametrize("seed", range(8))
def test_violations_switch_as_the_box_rows_say(seed):
    """A free motor over its bound saturates with its impulse's sign; a saturated motor past its
    target returns to it; the others keep their state (the numpy reference, and the cases built in)."""
    rng = np.random.default_rng(seed)
    A, csr = _rows(rng, nm=6)
    nm, m = A.shape
    v_next = rng.normal(size=m)
    av = A @ v_next
    a_max = np.full(nm, 1.0)
    state = np.array([0, 0, 1, 1, -1, -1], dtype=np.int8)
    impulse = np.array([1.5, -0.5, 1.0, 1.0, -1.0, -1.0])   # motor 0 over its bound, 1 within
    a_target = av.copy()
    a_target[2] -= 0.1      # saturated +1 and its rate past the target: back to 0
    a_target[3] += 0.1      # +1, short of it: stays
    a_target[4] += 0.1      # -1 past it: back to 0
    a_target[5] -= 0.1      # -1 short of it: stays
    new = KM.motor_violations(*csr, a_target, a_max, state, v_next, impulse, 1e-9)
    assert np.array_equal(new, [1, 0, 0, 1, 0, -1])
    assert np.array_equal(new, _violations(A, a_target, a_max, state, v_next, impulse))
    # random states and impulses: the reference's decisions
    for _ in range(20):
        s = rng.integers(-1, 2, nm).astype(np.int8)
        imp = rng.normal(scale=1.2, size=nm)
        t = av + rng.normal(scale=1e-3, size=nm)
        assert np.array_equal(KM.motor_violations(*csr, t, a_max, s, v_next, imp, 1e-9),
                              _violations(A, t, a_max, s, v_next, imp))
    assert np.array_equal(KM.motor_violations(*csr, a_target, a_max, state, v_next, impulse, 1e-9).dtype, np.int8)

"""The sink-only position correction, compiled (mechanics/sink.py): its displacement is the
frictionless position LCP's (w = (N W N' + eps I) p + c >= 0 perp p >= 0, x += W N' p) as Lemke's
method finds it on the assembled matrix, and its quiet rows are the islands' rule computed by graph
components (scipy)."""
import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from contactlab import LCP, solve
from contactlab.mechanics.sink import APPLIED, NOTHING, correct_quiet_rows, quiet_rows, sink_correction


def _column(levels, rng):
    """A column of ``levels`` unit boxes (half-size 0.1), 4 corner contacts under each (the lowest on
    the fixed ground): N (4 levels, 6 levels) CSR, W blocks, heights."""
    rows, heights = [], []
    mass, inertia = 1.0, 1.0 * (0.2 ** 2 + 0.2 ** 2) / 12.0
    n = np.array([0.0, 0.0, 1.0])
    for lev in range(levels):
        for sx in (-0.1, 0.1):
            for sy in (-0.1, 0.1):
                row = np.zeros(6 * levels)
                top = np.array([sx, sy, -0.1])
                row[6 * lev:6 * lev + 3] = n
                row[6 * lev + 3:6 * lev + 6] = np.cross(top, n)
                if lev > 0:
                    bot = np.array([sx, sy, 0.1])
                    row[6 * (lev - 1):6 * lev - 3] = -n
                    row[6 * lev - 3:6 * lev] = -np.cross(bot, n)
                rows.append(row)
                heights.append(0.2 * lev)
    W = np.zeros((levels, 6, 6))
    for b in range(levels):
        W[b] = np.diag([1 / mass] * 3 + [1 / inertia] * 3)
    return sp.csr_matrix(np.array(rows)), W, np.array(heights)


def _random_pairs(bodies, count, rng):
    """Rows on random pairs of bodies (or one body and the ground) with random entries: a coupling
    pattern that is not a band in any order by height; W blocks random SPD."""
    rows = []
    for _ in range(count):
        a, b = rng.choice(bodies + 1, size=2, replace=False) - 1     # -1: the ground
        row = np.zeros(6 * bodies)
        for body in (a, b):
            if body >= 0:
                row[6 * body:6 * body + 6] = rng.normal(size=6)
        rows.append(row)
    W = np.empty((bodies, 6, 6))
    for b in range(bodies):
        G = rng.normal(size=(6, 6))
        W[b] = G @ G.T + 0.5 * np.eye(6)
    return sp.csr_matrix(np.array(rows)), W, rng.uniform(0.0, 3.0, count)


def _lemke_displacement(N, W, c, quiet, eps):
    rows = np.flatnonzero(quiet)
    Wm = sp.block_diag(list(W), format="csr")
    A = (N[rows] @ Wm @ N[rows].T).toarray() + eps * np.eye(rows.size)
    sol = solve(LCP(A, c[rows]), "lemke")
    assert sol.success
    return Wm @ (N[rows].T @ sol.z), A @ sol.z + c[rows]


@pytest.mark.parametrize("case", ["column", "pairs"])
def test_sink_correction_is_the_position_lcps_answer(case):
    rng = np.random.default_rng(7)
    if case == "column":
        N, W, height = _column(25, rng)
        # each level's contacts sunk by its load's share of 5e-9 m with a tilt of the box (a rigid
        # motion, as phi' of rigid poses is), the top levels' by less than the target (c >= 0 there)
        sink = np.linspace(5e-9, 2e-11, 25)
        u = np.zeros((25, 6))
        u[:, 2] = -np.cumsum(sink)
        u[:, 3:5] = rng.uniform(-2e-9, 2e-9, (25, 2))
        p = N @ u.reshape(-1)
        c = p + 1e-10
        eps = 1e-9
    else:
        N, W, height = _random_pairs(12, 30, rng)
        c = rng.uniform(-1.0, 0.2, 30)
        p = c - 1e-10
        eps = 1e-3
    nc = c.size
    quiet = np.ones(nc, dtype=bool)
    quiet[-1] = case == "column"        # the pairs' last row left out: not quiet, untouched
    dx = np.zeros(N.shape[1])
    out = correct_quiet_rows(N.indptr, N.indices, N.data, W, c, p, quiet, height, 1.0, 0.0, eps, 1e-3, dx)
    assert out == APPLIED
    ref, w = _lemke_displacement(N, W, c, quiet, eps)
    assert np.all(w >= -1e-9 * np.abs(c).max())
    assert np.allclose(dx, ref, rtol=0, atol=1e-3 * np.abs(ref).max())
    # the LCP's conditions on the rows themselves: no quiet contact pushed in beyond the tolerance
    assert np.all((N @ dx + c)[quiet] >= -1e-3 * np.abs(c[quiet]).max())


def test_sink_correction_waits_for_the_trigger():
    N, W, height = _column(5, np.random.default_rng(1))
    c = np.full(20, -1e-9)
    p = c - 1e-10
    dx = np.zeros(30)
    # no contact deeper than the trigger (or every deeper one outside the window, or not quiet): nothing
    for window, trigger, quiet in ((1e-8, 5e-9, np.ones(20, bool)), (1e-9, 5e-10, np.ones(20, bool)),
                                   (1e-8, 5e-10, np.zeros(20, bool))):
        assert correct_quiet_rows(N.indptr, N.indices, N.data, W, c, p, quiet, height, window, trigger, 1e-9,
                               1e-3, dx) == NOTHING
    assert np.all(dx == 0.0)


def _quiet_reference(a, b, dof_start, lin, ang, speed, p):
    nb = dof_start.size
    if np.any((np.maximum(np.abs(lin).max(1), np.abs(ang).max(1)) >= speed) & (dof_start >= 0)):
        return np.zeros(a.size, dtype=bool)
    ma = (a >= 0) & (dof_start[np.maximum(a, 0)] >= 0)
    mb = (b >= 0) & (dof_start[np.maximum(b, 0)] >= 0)
    both = ma & mb
    g = sp.csr_matrix((np.ones(both.sum()), (a[both], b[both])), shape=(nb, nb))
    _, label = connected_components(g, directed=False)
    body = np.where(ma, a, np.where(mb, b, -1))
    gap_island = set(label[body[(p >= 0) & (body >= 0)]])
    return np.array([bd >= 0 and label[bd] not in gap_island for bd in body])


def test_quiet_rows_are_the_gap_free_islands_of_a_scene_at_rest():
    rng = np.random.default_rng(3)
    nb, nc = 40, 70
    dof_start = np.where(rng.uniform(size=nb) < 0.15, -1, 6 * np.arange(nb))
    a = rng.integers(-1, nb, nc)
    b = rng.integers(-1, nb, nc)
    lin = rng.uniform(-1e-5, 1e-5, (nb, 3))
    ang = rng.uniform(-1e-5, 1e-5, (nb, 3))
    p = rng.uniform(-1e-6, 0.0, nc)
    p[rng.choice(nc, 3, replace=False)] = 1e-7       # three gaps
    got = quiet_rows(a, b, dof_start, lin, ang, 1e-4, p)
    ref = _quiet_reference(a, b, dof_start, lin, ang, 1e-4, p)
    assert np.array_equal(got, ref) and ref.any() and not ref.all()
    lin[int(np.flatnonzero(dof_start >= 0)[0]), 2] = 2e-4          # one moving body fast: nothing is quiet
    assert not quiet_rows(a, b, dof_start, lin, ang, 1e-4, p).any()

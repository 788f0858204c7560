"""kernels/box_qp_panels.py: the panels' factor and the solves on a changing free set from one
factor (bordered by the rows that left or joined it), against numpy's dense solves of M_FF x = r."""
import numpy as np

from contactlab.kernels.box_qp_panels import (BORDER_MAX, new_panel_state, panel_factor, panel_solve,
                                              panel_state_solve, panel_substitute)
from tests.kernels.test_box_qp_groups import _island_structures, _stacked_columns_problem


def _islands(count=12, columns=2):
    _, p = _stacked_columns_problem(count=count, columns=columns, steps=5)
    return list(_island_structures(p, p.body_groups))


def _backward_ok(AF, x, r):
    """The backward error of a stable solve (these blocks' condition numbers reach 1e9: the forward
    error is compared in units of it, :func:`_forward_ok`)."""
    return np.abs(AF @ x - r).max() <= 1e-9 * np.abs(AF).max() * max(np.abs(x).max(), 1.0)


def _forward_ok(AF, x, r):
    ref = np.linalg.solve(AF, r)
    return np.abs(x - ref).max() <= 1e-12 * np.linalg.cond(AF) * np.abs(ref).max()


def test_factor_then_substitution_is_the_panel_solve():
    """panel_solve is panel_factor then panel_substitute in step order (row i at place[i]), and
    solves M_FF x = r as numpy's dense solve does."""
    rng = np.random.default_rng(1)
    for idx, (sptr, sidx, val), (grp, gstep, nbr, nnb), A in _islands():
        F = np.flatnonzero(rng.random(idx.size) < 0.8)
        r = rng.normal(size=F.size)
        ok, P, poff, roff, cnt, xo, place = panel_factor(sptr, sidx, val, F, F.size, grp, gstep, nbr, nnb)
        assert ok and sorted(place[F]) == list(range(F.size)) and np.all(np.delete(place, F) == -1)
        x = np.empty(F.size)
        x[place[F]] = r
        panel_substitute(P, poff, roff, cnt, xo, nbr, nnb, x)
        ok2, x2 = panel_solve(sptr, sidx, val, F, F.size, r, grp, gstep, nbr, nnb)
        assert ok2 and np.array_equal(x[place[F]], x2)
        AF = A[np.ix_(F, F)]
        assert _backward_ok(AF, x2, r) and _forward_ok(AF, x2, r)


def test_solves_on_changing_free_sets_from_one_factor_are_numpys_solves():
    """A run of free sets, each a few rows off the last (rows held, rows freed, both), solved from the
    state's one factor (bordered; meta[0] counts the border rows) and, past BORDER_MAX border rows, from a
    new factor: every x is np.linalg.solve(M_FF, r) on that free set."""
    rng = np.random.default_rng(2)
    checked = refactored = 0
    for idx, (sptr, sidx, val), (grp, gstep, nbr, nnb), A in _islands():
        m = idx.size
        st = new_panel_state(m)
        free = rng.random(m) < 0.85
        borders = 0
        for t in range(12):
            if t:
                flip = rng.choice(m, size=int(rng.integers(1, 4)), replace=False)
                free[flip] = ~free[flip]
            F = np.flatnonzero(free)
            r = rng.normal(size=F.size)
            ok, x, st = panel_state_solve(st, sptr, sidx, val, F, F.size, r, grp, gstep, nbr, nnb)
            assert ok
            AF = A[np.ix_(F, F)]
            assert _backward_ok(AF, x, r) and _forward_ok(AF, x, r)
            meta, place = st[9], st[5]
            assert 0 <= meta[0] <= BORDER_MAX and meta[1] == 1
            off = int(np.sum((place >= 0) != free))       # rows by which F differs from the factor's
            assert off <= meta[0] or (off == 0 and meta[0] == 0)
            if meta[0] < borders:
                refactored += 1
            borders = meta[0]
            checked += 1
    assert checked >= 24 and refactored >= 1


def test_a_state_solve_that_cannot_factorise_says_so():
    """A block that is not positive definite: ok False, and the state holds no factor."""
    idx, (sptr, sidx, val), (grp, gstep, nbr, nnb), A = _islands()[0]
    bad = val.copy()
    bad[sidx == np.repeat(np.arange(idx.size), np.diff(sptr))] *= -1.0
    F = np.arange(idx.size)
    ok, x, st = panel_state_solve(new_panel_state(idx.size), sptr, sidx, bad, F, F.size, np.ones(F.size),
                                  grp, gstep, nbr, nnb)
    assert not ok and st[9][1] == 0

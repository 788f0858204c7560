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


def test_border_columns_are_forward_solves_on_their_reach():
    """A border row's column W = L^-1 B_i, solved on the steps its reach lists only, is the full
    forward solve of B_i (e_i for a row of the factor's block, else M_{F0,i}), which is zero on every
    step outside that reach; and W'W = B' M_F0F0^-1 B (the Schur complement's term) against numpy's
    dense solve, within cond(M_F0F0) x 1e-12."""
    from contactlab.kernels.box_qp_panels import _border_column, panel_forward
    rng = np.random.default_rng(3)
    checked = 0
    for idx, (sptr, sidx, val), (grp, gstep, nbr, nnb), A in _islands(count=16):
        m = idx.size
        F = np.flatnonzero(rng.random(m) < 0.8)
        ok, P, poff, roff, cnt, xo, place = panel_factor(sptr, sidx, val, F, F.size, grp, gstep, nbr, nnb)
        assert ok
        order = np.argsort(place[F])
        A0 = A[np.ix_(F[order], F[order])]                 # M_F0F0 in step order
        fulls, bs = [], []
        rows = np.concatenate([rng.choice(F, 4, replace=False), rng.choice(np.setdiff1d(np.arange(m), F), 4,
                                                                         replace=False)])
        W = np.full((rows.size, F.size), np.nan)
        reach = np.empty((rows.size, gstep.size), dtype=np.int64)
        rlen = np.zeros(rows.size, dtype=np.int64)
        mark = np.zeros(gstep.size, dtype=np.bool_)
        for c, i in enumerate(rows):
            work = _border_column(P, poff, roff, cnt, xo, nbr, nnb, sptr, sidx, val, place, grp, gstep, i, W, reach,
                                  rlen, c, mark)
            assert not mark.any() and work > 0
            b = np.zeros(F.size)
            if place[i] >= 0:
                b[place[i]] = 1.0
            else:
                b[place[F]] = A[F, i]
            full = b.copy()
            panel_forward(P, poff, roff, cnt, xo, nbr, nnb, full)
            steps = reach[c, :rlen[c]]
            assert np.all(np.diff(steps) > 0)
            on = np.zeros(F.size, dtype=bool)
            for s in steps:
                on[xo[s]:xo[s + 1]] = True
            assert np.array_equal(W[c, on], full[on]) and np.all(full[~on] == 0.0)
            fulls.append(full)
            bs.append(b)
            checked += 1
        Wf, B = np.array(fulls).T, np.array(bs).T
        ref = B.T @ np.linalg.solve(A0, B)                 # B' M_F0F0^-1 B, the border's Schur term
        assert np.abs(Wf.T @ Wf - ref).max() <= 1e-12 * np.linalg.cond(A0) * np.abs(ref).max()
    assert checked >= 16


def test_many_border_rows_from_one_factor_are_numpys_solves():
    """Free sets up to 60 rows off one factor's (rows held and freed, more than the 16 a step of a
    settled 5,000-box pile changes), each solved through the border of that one factor (the state's
    refactorisation by work disabled for the test: meta[4] is the factorisation's work): every x is
    np.linalg.solve(M_FF, r) to the backward and forward error of a fresh factorisation."""
    rng = np.random.default_rng(4)
    most = 0
    for idx, (sptr, sidx, val), (grp, gstep, nbr, nnb), A in _islands(count=16):
        m = idx.size
        st = new_panel_state(m)
        free0 = rng.random(m) < 0.8
        F = np.flatnonzero(free0)
        ok, x, st = panel_state_solve(st, sptr, sidx, val, F, F.size, rng.normal(size=F.size), grp, gstep, nbr, nnb)
        assert ok and st[9][2] == 1
        st[9][4] = np.iinfo(np.int64).max // 2             # border on, whatever the border's work
        perm = rng.permutation(m)
        for off in (5, 17, 30, 45, 60):
            free = free0.copy()
            free[perm[:off]] = ~free[perm[:off]]           # each set's border holds the last one's
            F = np.flatnonzero(free)
            r = rng.normal(size=F.size)
            ok, x, st = panel_state_solve(st, sptr, sidx, val, F, F.size, r, grp, gstep, nbr, nnb)
            assert ok and st[9][2] == 1 and st[9][0] == off   # one factorisation, one column per border row
            AF = A[np.ix_(F, F)]
            assert _backward_ok(AF, x, r) and _forward_ok(AF, x, r)
            most = max(most, int(np.sum((st[5] >= 0) != free)))
    assert most == 60


def test_border_work_past_the_factorisation_refactorises():
    """The ski-rental rule: once the border columns' forward solves have cost as much as the
    factorisation (meta[3] > meta[4]), the next solve factorises afresh, and its x is still numpy's."""
    rng = np.random.default_rng(5)
    idx, (sptr, sidx, val), (grp, gstep, nbr, nnb), A = _islands(count=16)[0]
    m = idx.size
    st = new_panel_state(m)
    free = rng.random(m) < 0.8
    F = np.flatnonzero(free)
    ok, x, st = panel_state_solve(st, sptr, sidx, val, F, F.size, rng.normal(size=F.size), grp, gstep, nbr, nnb)
    free[rng.choice(m, 3, replace=False)] ^= True
    F = np.flatnonzero(free)
    ok, x, st = panel_state_solve(st, sptr, sidx, val, F, F.size, rng.normal(size=F.size), grp, gstep, nbr, nnb)
    assert ok and st[9][2] == 1 and st[9][0] >= 1 and st[9][3] > 0
    st[9][4] = st[9][3] - 1                                   # the border has cost more than the factorisation
    free[rng.choice(m, 1, replace=False)] ^= True
    F = np.flatnonzero(free)
    r = rng.normal(size=F.size)
    ok, x, st = panel_state_solve(st, sptr, sidx, val, F, F.size, r, grp, gstep, nbr, nnb)
    assert ok and st[9][2] == 2 and st[9][0] == 0
    AF = A[np.ix_(F, F)]
    assert _backward_ok(AF, x, r) and _forward_ok(AF, x, r)

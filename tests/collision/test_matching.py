"""Contact matching (collision/boxes/matching.py) and the broad phase's pair order against plain
Python references: the scan of a few contacts and the sorted-key path must give the same answer."""
import numpy as np
import pytest

from contactlab.collision.boxes import match_previous_kernel, match_with_values
from contactlab.collision.boxes.broad_phase import sweep_pairs


def _reference(sa_prev, sb_prev, point_prev, sa_new, sb_new, point_new, tol):
    """Per new contact: the previous contact on the same (sa, sb) nearest within tol, the highest index
    among equal distances (the stable sort's run visited in order, ``<=``)."""
    out, dist2 = [], []
    for i in range(sa_new.size):
        best, found = tol * tol, -1
        for p in range(sa_prev.size):
            if sa_prev[p] == sa_new[i] and sb_prev[p] == sb_new[i]:
                d = point_prev[p] - point_new[i]
                dd = d[0] * d[0] + d[1] * d[1] + d[2] * d[2]
                if dd <= best:
                    best, found = dd, p
        out.append(found)
        dist2.append(best if found >= 0 else np.inf)
    return np.array(out), np.array(dist2)


@pytest.mark.parametrize("n_prev,n_new", [(5, 5), (16, 16), (40, 30), (0, 4), (3, 0)])
def test_match_previous_scan_and_sort_agree_with_reference(n_prev, n_new):
    """5 x 5 and 16 x 16 take the scan (<= SCAN_PAIRS), 40 x 30 the sorted keys; equal distances
    (repeated points) included, so the tie rule is checked on both paths."""
    rng = np.random.default_rng(n_prev * 100 + n_new)
    sa_prev, sb_prev = rng.integers(0, 3, n_prev), rng.integers(3, 5, n_prev)
    sa_new, sb_new = rng.integers(0, 3, n_new), rng.integers(3, 5, n_new)
    grid = np.array([[0.0, 0, 0], [1, 0, 0], [0, 1, 0]])
    point_prev = grid[rng.integers(0, 3, n_prev)]
    point_new = grid[rng.integers(0, 3, n_new)] + 0.25
    for tol in (np.inf, 1.0):
        got, d2 = match_previous_kernel(sa_prev, sb_prev, point_prev, sa_new, sb_new, point_new, tol)
        want, w2 = _reference(sa_prev, sb_prev, point_prev, sa_new, sb_new, point_new, tol)
        assert np.array_equal(got, want) and np.array_equal(d2, w2)
    values = np.arange(n_prev, dtype=float) + 10.0
    match, out = match_with_values(sa_prev, sb_prev, point_prev, values, sa_new, sb_new, point_new, 0.5)
    want, w2 = _reference(sa_prev, sb_prev, point_prev, sa_new, sb_new, point_new, np.inf)
    assert np.array_equal(match, want)
    expect = np.array([values[j] if j >= 0 and d <= 0.25 else np.nan for j, d in zip(want, w2)])
    assert np.array_equal(out, expect, equal_nan=True)


@pytest.mark.parametrize("m", [6, 12])
def test_sweep_pairs_in_pair_order(m):
    """The overlapping pairs in increasing (a, b) order, whichever sort ran (6 boxes in a row: few pairs,
    in place; 12 boxes all overlapping: 66 pairs, argsort), against all pairs tested directly."""
    rng = np.random.default_rng(m)
    c = rng.uniform(0, 1.0 if m == 6 else 0.1, (m, 3))
    lo, hi = c - 0.3, c + 0.3
    idx = rng.permutation(m)
    body = np.arange(m)
    got = sweep_pairs(lo, hi, idx, body, np.zeros(m, dtype=np.bool_), np.empty(0, dtype=np.int64), m)
    want = [(a, b) for a in range(m) for b in range(a + 1, m)
            if np.all(lo[a] <= hi[b]) and np.all(lo[b] <= hi[a])]
    assert [tuple(r) for r in got] == want

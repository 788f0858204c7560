"""Contact matching (numba): each new contact's previous contact on the same shape pair, nearest
within a distance, and the previous values it carries (the warm start of its impulses)."""
from __future__ import annotations

import numpy as np

from ...kernels._jit import jit


@jit
def match_with_values(sa_prev, sb_prev, point_prev, values, sa_new, sb_new, point_new, near):
    """:func:`match_previous_kernel` at any distance, and per new contact the previous ``values``
    entry of its match where that match is within ``near`` (NaN elsewhere; ``values`` may be empty:
    all NaN): the simulator's contact matching in one call. Returns (match, matched values)."""
    match, dist2 = match_previous_kernel(sa_prev, sb_prev, point_prev, sa_new, sb_new, point_new, np.inf)
    out = np.full(match.size, np.nan)
    if values.size:
        r2 = near * near
        for i in range(match.size):
            if match[i] >= 0 and dist2[i] <= r2:
                out[i] = values[match[i]]
    return match, out


@jit
def match_previous_kernel(sa_prev, sb_prev, point_prev, sa_new, sb_new, point_new, tol):
    """For each new contact, the index of the nearest previous contact on the same shape pair
    (sa, sb) within ``tol`` (-1 where none) and its squared distance (inf where none): pair keys
    sorted once, each new contact scans only its key's run."""
    key_prev = sa_prev * 1_000_003 + sb_prev
    key_new = sa_new * 1_000_003 + sb_new
    out = np.full(key_new.size, -1, dtype=np.int64)
    dist2 = np.full(key_new.size, np.inf)
    if key_prev.size == 0:
        return out, dist2
    order = np.argsort(key_prev, kind="mergesort")
    ks = key_prev[order]
    t2 = tol * tol
    for i in range(key_new.size):
        lo = np.searchsorted(ks, key_new[i])
        best = t2
        found = -1
        j = lo
        while j < ks.size and ks[j] == key_new[i]:
            p = order[j]
            dx = point_prev[p, 0] - point_new[i, 0]
            dy = point_prev[p, 1] - point_new[i, 1]
            dz = point_prev[p, 2] - point_new[i, 2]
            dd = dx * dx + dy * dy + dz * dz
            if dd <= best:
                best, found = dd, p
            j += 1
        out[i] = found
        if found >= 0:
            dist2[i] = best
    return out, dist2

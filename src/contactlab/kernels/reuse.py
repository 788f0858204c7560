"""Motionless-set reuse's per-step bookkeeping in compiled calls (loomis-balkcom §IV, SIMULATE):
GETMOTIONLESSBODIES (:func:`motionless_mask`) and the warm start built from the stored sub-solution
(:func:`warm_values`). sim/reuse.py calls them once per step; written with scipy.sparse.csgraph and
broadcast numpy, these two cost more per step than the LCP time the reuse saves
(docs/computation-reuse.md). Same arithmetic as the numpy forms they replace (norms summed in the
same order, the first nearest stored contact), so the sets and the warm starts are the same."""
import numpy as np

from ._jit import jit
from .components import _join, _root


@jit
def motionless_mask(dynamic, fixed, lin, ang, radius, tol_v, body_a, body_b):
    """Boolean (nb,): dynamic bodies at rest (|v| + |omega| r <= tol_v) connected to a fixed body
    through contacts (body_a, body_b) between bodies at rest or fixed; all fixed bodies are one
    support (one extra vertex, nb). Union-find over the contacts (kernels/components.py)."""
    nb = dynamic.shape[0]
    rest = np.zeros(nb, dtype=np.bool_)
    out = np.zeros(nb, dtype=np.bool_)
    anyrest = False
    for i in range(nb):
        if dynamic[i]:
            v = np.sqrt(lin[i, 0] * lin[i, 0] + lin[i, 1] * lin[i, 1] + lin[i, 2] * lin[i, 2])
            w = np.sqrt(ang[i, 0] * ang[i, 0] + ang[i, 1] * ang[i, 1] + ang[i, 2] * ang[i, 2])
            rest[i] = v + w * radius[i] <= tol_v
            anyrest = anyrest or rest[i]
    m = body_a.shape[0]
    if m == 0 or not anyrest:
        return out
    parent = np.arange(nb + 1)
    for c in range(m):
        a = body_a[c]
        b = body_b[c]
        if (rest[a] or fixed[a]) and (rest[b] or fixed[b]):
            _join(parent, nb if fixed[a] else a, nb if fixed[b] else b)
    r = _root(parent, nb)
    for i in range(nb):
        out[i] = rest[i] and _root(parent, i) == r
    return out


@jit
def warm_values(stored_a, stored_b, stored_point, values, new_a, new_b, new_point, tol, rows, z):
    """z[rows[c]] = values[j] for each new contact c whose stored contact j on the same shape pair
    (a, b) is the nearest (the first of equals) and within ``tol`` (the simulator's matching rule,
    collision.match_previous); z is cleared first. Returns the number of contacts found again."""
    for i in range(z.shape[0]):
        z[i] = 0.0
    hits = 0
    for c in range(new_a.shape[0]):
        best = np.inf
        j = -1
        for s in range(stored_a.shape[0]):
            if stored_a[s] == new_a[c] and stored_b[s] == new_b[c]:
                dx = new_point[c, 0] - stored_point[s, 0]
                dy = new_point[c, 1] - stored_point[s, 1]
                dz = new_point[c, 2] - stored_point[s, 2]
                d = np.sqrt(dx * dx + dy * dy + dz * dz)
                if d < best:
                    best = d
                    j = s
        if j >= 0 and best <= tol:
            hits += 1
            for r in range(rows.shape[1]):
                z[rows[c, r]] = values[j, r]
    return hits

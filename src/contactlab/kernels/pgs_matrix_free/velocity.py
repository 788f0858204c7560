"""The body velocity change dv = W H' z that matrix-free PGS keeps instead of A: a row's impulse
change added to its two bodies, w_i = q_i + cfm_i z_i + h_i . dv, and the inlined 6-vector helpers
of the sweep."""
from __future__ import annotations

from .._jit import jit, jit_inline


@jit
def _add_impulse(i, dz, body, g, dv):
    """dv += W h_i' dz: row i's impulse change on its two bodies."""
    s0 = 2 * i
    b0 = body[s0]
    b1 = body[s0 + 1]
    for c in range(6):
        dv[b0, c] += g[s0, c] * dz
        dv[b1, c] += g[s0 + 1, c] * dz


@jit_inline
def _store6(dv, b, x0, x1, x2, x3, x4, x5):
    dv[b, 0], dv[b, 1], dv[b, 2], dv[b, 3], dv[b, 4], dv[b, 5] = x0, x1, x2, x3, x4, x5


@jit_inline
def _pending(r, dz, body, g, dv, cb0, cb1, a0, a1, a2, a3, a4, a5, e0, e1, e2, e3, e4, e5):
    """:func:`_add_impulse` of row r's change dz with the pair (cb0, cb1)'s velocity changes held in
    a0..a5 and e0..e5 (the sweep's registers): each of its two slots adds to the registers of its
    body where it is one of the pair, else to dv; the same additions, so the same bits."""
    for t in range(2 * r, 2 * r + 2):
        bp = body[t]
        if bp == cb0:
            a0, a1, a2, a3, a4, a5 = _axpy6(a0, a1, a2, a3, a4, a5, g, t, dz)
        elif bp == cb1:
            e0, e1, e2, e3, e4, e5 = _axpy6(e0, e1, e2, e3, e4, e5, g, t, dz)
        else:
            for c in range(6):
                dv[bp, c] += g[t, c] * dz
    return a0, a1, a2, a3, a4, a5, e0, e1, e2, e3, e4, e5


@jit_inline
def _running_dot6(acc, hb, s, x0, x1, x2, x3, x4, x5):
    """acc + hb[s] . (x0, ..., x5) as a running sum: a row's w_i over one of its slots
    (:func:`_row_w`, and the sweeps from the pair's registers: the same sums, the same bits)."""
    acc += hb[s, 0] * x0
    acc += hb[s, 1] * x1
    acc += hb[s, 2] * x2
    acc += hb[s, 3] * x3
    acc += hb[s, 4] * x4
    acc += hb[s, 5] * x5
    return acc


@jit_inline
def _axpy6(x0, x1, x2, x3, x4, x5, g, t, dz):
    """(x0, ..., x5) + g[t] dz, each as dv[b, c] += g[t, c] dz adds it."""
    return x0 + g[t, 0] * dz, x1 + g[t, 1] * dz, x2 + g[t, 2] * dz, x3 + g[t, 3] * dz, x4 + g[t, 4] * dz, \
        x5 + g[t, 5] * dz


@jit
def impulse_velocity(ptr, body, g, z, dv):
    """dv = W H' z (dv zeroed first)."""
    dv[:, :] = 0.0
    for r in range(ptr.shape[0] - 1):
        if z[r] != 0.0:
            _add_impulse(r, z[r], body, g, dv)


@jit
def _row_w(i, ptr, body, hb, q, cfm, z, dv):
    """w_i = q_i + cfm_i z_i + h_i . dv over the row's two slots (two accumulators)."""
    s0 = 2 * i
    b0, b1 = body[s0], body[s0 + 1]
    return _running_dot6(q[i] + cfm[i] * z[i], hb, s0, dv[b0, 0], dv[b0, 1], dv[b0, 2], dv[b0, 3], dv[b0, 4],
                         dv[b0, 5]) \
        + _running_dot6(0.0, hb, s0 + 1, dv[b1, 0], dv[b1, 1], dv[b1, 2], dv[b1, 3], dv[b1, 4], dv[b1, 5])


@jit
def _max_abs(z):
    m = 0.0
    for i in range(z.shape[0]):
        m = max(m, abs(z[i]))
    return m

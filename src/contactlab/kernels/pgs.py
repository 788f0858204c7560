"""Projected Gauss-Seidel / SOR sweeps (arechavaleta eq. 3; ODE's quickstep for coupled bounds).

The kernels keep ``w = M z + q`` up to date column by column: after row i moves by ``dz``, ``w``
gains ``dz * M[:, i]``. Row i of the next pivot then reads its exact ``w_i`` (the Gauss-Seidel value)
at the price of one axpy instead of one dot product, rows that do not move (at a bound) cost
nothing, and the natural residual of every sweep is exact and O(n). ``w`` is recomputed from
scratch every ``refresh`` sweeps and before success is claimed, so rounding drift cannot certify.

Column access: ``MT`` is M transposed (dense, C-contiguous), or the CSR arrays of M transposed
(``t_indptr, t_indices, t_data``): row i of MT is column i of M. For symmetric M pass M itself.

Bounds: row i lies in [lo_i, hi_i]; a row with ``findex[i] = j >= 0`` has the coupled box
[-mu_i max(z_j, 0), mu_i max(z_j, 0)] read from the current z_j inside the sweep (ODE's findex).
An LCP is lo = 0, hi = +inf.

Status codes: 0 converged (exact residual <= tol_res), 1 sweep limit, 2 non-positive diagonal,
3 non-finite iterate, 4 stalled (step <= tol_step, residual still above tol_res). ``stats`` receives [sweeps, residual, last step ||z^{k+1} - z^k||_inf].
"""
from __future__ import annotations

import numpy as np

from ._jit import jit
from .residual import box_row

CONVERGED, MAX_SWEEPS, BAD_DIAGONAL, NOT_FINITE, STALLED = 0, 1, 2, 3, 4


@jit
def row_bounds(i, z, lo, hi, findex, mu):
    j = findex[i]
    if j >= 0:
        r = mu[i] * max(z[j], 0.0)
        return -r, r
    return lo[i], hi[i]


@jit
def bounds_scale(z, lo, hi, findex, mu):
    """The unit of z for the scale-free box residual when z = 0: the largest finite bound of any row
    at z (row_bounds), else 1."""
    zs = 0.0
    for i in range(z.shape[0]):
        a, b = row_bounds(i, z, lo, hi, findex, mu)
        if np.isfinite(a):
            zs = max(zs, abs(a))
        if np.isfinite(b):
            zs = max(zs, abs(b))
    return zs if zs > 0.0 else 1.0


@jit
def box_natural_residual(z, w, lo, hi, findex, mu):
    """||z - mid(lo, hi, z - w)||_inf with coupled bounds from ``z`` (problems/residual.py, box form)."""
    res = 0.0
    for i in range(z.shape[0]):
        a, b = row_bounds(i, z, lo, hi, findex, mu)
        d = box_row(z[i], w[i], a, b)
        if d > res:
            res = d
        if not np.isfinite(d):
            return np.inf
    return res


@jit
def dense_refresh_w(MT, q, z, w):
    """w = M z + q accumulated over the rows of MT (columns of M)."""
    n = z.shape[0]
    for k in range(n):
        w[k] = q[k]
    for i in range(n):
        zi = z[i]
        if zi != 0.0:
            for k in range(n):
                w[k] += MT[i, k] * zi


@jit
def csr_refresh_w(t_indptr, t_indices, t_data, q, z, w):
    n = z.shape[0]
    for k in range(n):
        w[k] = q[k]
    for i in range(n):
        zi = z[i]
        if zi != 0.0:
            for p in range(t_indptr[i], t_indptr[i + 1]):
                w[t_indices[p]] += t_data[p] * zi


@jit
def _shuffle(order, state):
    """Fisher-Yates on ``order`` with a 64-bit xorshift generator kept in ``state[0]``."""
    n = order.shape[0]
    for k in range(n - 1, 0, -1):
        x = state[0]
        x ^= (x << np.uint64(13)) & np.uint64(0xFFFFFFFFFFFFFFFF)
        x ^= x >> np.uint64(7)
        x ^= (x << np.uint64(17)) & np.uint64(0xFFFFFFFFFFFFFFFF)
        state[0] = x
        j = np.int64(x % np.uint64(k + 1))
        t = order[k]
        order[k] = order[j]
        order[j] = t


@jit
def _project_step(i, z, w, diag, lo, hi, findex, mu, omega):
    """New value of z_i: clamp(z_i - omega * w_i / M_ii) into row i's (possibly coupled) box."""
    a, b = row_bounds(i, z, lo, hi, findex, mu)
    y = z[i] - omega * w[i] / diag[i]
    if y < a:
        y = a
    if y > b:
        y = b
    return y - z[i]


@jit
def _add_row(dense, MT, t_indptr, t_indices, t_data, i, f, w):
    """w += f * M[:, i], read as row i of M' (dense MT, or the CSR arrays of M')."""
    if dense:
        for c in range(w.shape[0]):
            w[c] += MT[i, c] * f
    else:
        for p in range(t_indptr[i], t_indptr[i + 1]):
            w[t_indices[p]] += t_data[p] * f


@jit
def _refresh(dense, MT, t_indptr, t_indices, t_data, q, z, w):
    if dense:
        dense_refresh_w(MT, q, z, w)
    else:
        csr_refresh_w(t_indptr, t_indices, t_data, q, z, w)


@jit
def _pgs_sweeps(dense, MT, t_indptr, t_indices, t_data, q, diag, lo, hi, findex, mu, z, w, order, omega,
                tol_res, tol_step, max_sweeps, refresh, shuffle, rng_state, stats, tol_w_step):
    """The one PGS/PSOR sweep loop (arechavaleta eq. 3) for dense and CSR M; ``z`` in/out, ``w``
    work (M z + q on exit); stats = [sweeps, residual, last step]; returns a status code. A sweep
    whose largest step is <= ``tol_step`` (units of z), or whose largest correction of a row's own
    w_i, |dz_i| M_ii, is <= ``tol_w_step`` (units of w: Bullet's sequential-impulse stop, its
    solverResidualThreshold being the square), ends the sweeps: CONVERGED if the residual is then
    below ``tol_res``, else STALLED."""
    n = z.shape[0]
    for i in range(n):
        if not diag[i] > 0.0:
            stats[0] = 0.0
            stats[1] = np.inf
            stats[2] = np.inf
            return BAD_DIAGONAL
    _refresh(dense, MT, t_indptr, t_indices, t_data, q, z, w)
    res = box_natural_residual(z, w, lo, hi, findex, mu)
    stats[0] = 0.0
    stats[1] = res
    stats[2] = np.inf
    if res <= tol_res:
        return CONVERGED
    for sweep in range(1, max_sweeps + 1):
        if shuffle:
            _shuffle(order, rng_state)
        step = 0.0
        wstep = 0.0
        for k in range(n):
            i = order[k]
            dz = _project_step(i, z, w, diag, lo, hi, findex, mu, omega)
            if dz != 0.0:
                z[i] += dz
                _add_row(dense, MT, t_indptr, t_indices, t_data, i, dz, w)
                if abs(dz) > step:
                    step = abs(dz)
                if abs(dz) * diag[i] > wstep:
                    wstep = abs(dz) * diag[i]
        if refresh > 0 and sweep % refresh == 0:
            _refresh(dense, MT, t_indptr, t_indices, t_data, q, z, w)
        res = box_natural_residual(z, w, lo, hi, findex, mu)
        stats[0] = sweep
        stats[1] = res
        stats[2] = step
        if not np.isfinite(res) or not np.isfinite(step):
            return NOT_FINITE
        stalled = step <= tol_step or wstep <= tol_w_step
        if res <= tol_res or stalled:
            _refresh(dense, MT, t_indptr, t_indices, t_data, q, z, w)
            res = box_natural_residual(z, w, lo, hi, findex, mu)
            stats[1] = res
            if res <= tol_res:
                return CONVERGED
            if stalled:
                return STALLED
    return MAX_SWEEPS


_NO_INDEX = np.zeros(1, dtype=np.int64)
_NO_DATA = np.zeros(1)
_NO_DENSE = np.zeros((1, 1))


@jit
def pgs_dense_kernel(MT, q, diag, lo, hi, findex, mu, z, w, order, omega, tol_res, tol_step,
                     max_sweeps, refresh, shuffle, rng_state, stats, tol_w_step=0.0):
    """PGS/PSOR sweeps on dense M (given as MT); ``z`` in/out, ``w`` work (M z + q on exit)."""
    return _pgs_sweeps(True, MT, _NO_INDEX, _NO_INDEX, _NO_DATA, q, diag, lo, hi, findex, mu, z, w, order, omega,
                       tol_res, tol_step, max_sweeps, refresh, shuffle, rng_state, stats, tol_w_step)


@jit
def pgs_csr_kernel(t_indptr, t_indices, t_data, q, diag, lo, hi, findex, mu, z, w, order, omega,
                   tol_res, tol_step, max_sweeps, refresh, shuffle, rng_state, stats, tol_w_step=0.0):
    """PGS/PSOR sweeps on CSR M (given by the CSR arrays of M transposed); as the dense kernel."""
    return _pgs_sweeps(False, _NO_DENSE, t_indptr, t_indices, t_data, q, diag, lo, hi, findex, mu, z, w, order,
                       omega, tol_res, tol_step, max_sweeps, refresh, shuffle, rng_state, stats, tol_w_step)

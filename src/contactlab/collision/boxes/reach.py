"""Speculative distances (numba): how far two shapes can close in on each other in the step, from
their sweeps (mechanics/kernels.py ``shape_sweep``), in every direction (:func:`pair_reach`) or along
one axis (:func:`axis_reach`, what grows a box pair's margin along each separating axis)."""
from __future__ import annotations

import numpy as np

from ...kernels._jit import jit


@jit
def shape_reach_of(sweep):
    """Per shape: |h v| + h |omega| r, how far its points can travel in the step (grows its AABB)."""
    out = np.empty(sweep.shape[0])
    for k in range(sweep.shape[0]):
        out[k] = np.sqrt(sweep[k, 0] ** 2 + sweep[k, 1] ** 2 + sweep[k, 2] ** 2) + sweep[k, 3]
    return out


@jit
def pair_reach(sweep, a, b):
    """How far shapes a and b can close in on each other in the step, from their ``sweep`` rows
    (h v, h |omega| r; mechanics/kernels.py ``shape_sweep``):
    max(|h (v_a - v_b)|, |h v_a|, |h v_b|) + h |omega_a| r_a + h |omega_b| r_b. The first term covers
    both bodies going on as they move, the other two one of them being stopped in the step by
    another contact (a falling box landing on a pile while the one above it still falls): bodies
    falling side by side get half the speculative distance of reach_a + reach_b, and a box that
    lands keeps its contacts with the one falling onto it. A sweep of (0, 0, 0, reach) gives
    reach_a + reach_b."""
    dx = sweep[a, 0] - sweep[b, 0]
    dy = sweep[a, 1] - sweep[b, 1]
    dz = sweep[a, 2] - sweep[b, 2]
    va = np.sqrt(sweep[a, 0] ** 2 + sweep[a, 1] ** 2 + sweep[a, 2] ** 2)
    vb = np.sqrt(sweep[b, 0] ** 2 + sweep[b, 1] ** 2 + sweep[b, 2] ** 2)
    return max(np.sqrt(dx * dx + dy * dy + dz * dz), va, vb) + sweep[a, 3] + sweep[b, 3]


@jit
def axis_reach(sweep, a, b, u):
    """How far shapes a and b can close in on each other along the unit axis ``u`` in the step, from
    their ``sweep`` rows: max(|h (v_a - v_b).u|, |h v_a.u|, |h v_b.u|) + h |omega_a| r_a + h |omega_b| r_b,
    :func:`pair_reach` projected on u. Translations move each shape's projection on u by h v.u and
    rotation moves no point by more than h |omega| r, so a pair separated along u by more than this
    (plus the margin) stays separated along u through the step, whichever of the two is stopped by
    another contact (the separating-axis theorem): boxes falling side by side, or a box sliding along
    the ground, get no speculative contacts across the direction they move in (a falling 2,000-box
    pile: every falling neighbour in its layer within h |v| did, which merged the columns into one
    island). Never more than :func:`pair_reach`."""
    ua = sweep[a, 0] * u[0] + sweep[a, 1] * u[1] + sweep[a, 2] * u[2]
    ub = sweep[b, 0] * u[0] + sweep[b, 1] * u[1] + sweep[b, 2] * u[2]
    return max(abs(ua - ub), abs(ua), abs(ub)) + sweep[a, 3] + sweep[b, 3]

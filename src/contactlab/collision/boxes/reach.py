"""Speculative distances (numba): how far two shapes can close in on each other in the step, from
their sweeps (mechanics/kernels.py ``shape_sweep``), in every direction (:func:`pair_reach`) or along
one axis (:func:`axis_reach`, what grows a box pair's margin along each separating axis); which of the contacts
found within those bounds the deviations the step's contacts can pass on let close (:func:`reachable_contacts`:
a column of boxes falling together keeps no contact high above the boxes that can be stopped)."""
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


#: :func:`reachable_contacts`: sweeps over the contacts before the deviations are taken as settled; where they
#: still grow, every contact is kept (the pairwise bound alone)
REACH_SWEEPS = 64


@jit
def face_axis_slack(pa, Ra, ha, pb, Rb, hb, sweep, a, b):
    """How far boxes a and b (centres, rotations whose columns are their axes, half extents) stay
    apart beyond their relative free motion: the largest, over the six face axes u, of
    s_u - |h (v_a - v_b).u|, where s_u is the pair's separation along u (Gottschalk, Lin and Manocha
    1996, the OBB test; :func:`contactlab.collision.boxes.manifold.box_box`'s face axes): a lower
    bound on how much more than their free motion the two must close in by to touch."""
    best = -1e300
    for box in range(2):
        for i in range(3):
            ui0 = Ra[0, i] if box == 0 else Rb[0, i]
            ui1 = Ra[1, i] if box == 0 else Rb[1, i]
            ui2 = Ra[2, i] if box == 0 else Rb[2, i]
            s = abs((pb[0] - pa[0]) * ui0 + (pb[1] - pa[1]) * ui1 + (pb[2] - pa[2]) * ui2)
            s -= ha[i] if box == 0 else hb[i]
            for j in range(3):
                if box == 0:
                    s -= abs(ui0 * Rb[0, j] + ui1 * Rb[1, j] + ui2 * Rb[2, j]) * hb[j]
                else:
                    s -= abs(ui0 * Ra[0, j] + ui1 * Ra[1, j] + ui2 * Ra[2, j]) * ha[j]
            rel = ((sweep[a, 0] - sweep[b, 0]) * ui0 + (sweep[a, 1] - sweep[b, 1]) * ui1
                   + (sweep[a, 2] - sweep[b, 2]) * ui2)
            best = max(best, s - abs(rel))
    return best


@jit
def contact_closing(sa, sb, N, phi, sweep, box_pair, Rs, ps, half, margin):
    """Per contact: by how much its pair closes in beyond its gap at free motion (> 0: it may touch
    in the step with neither body slowed), margin + h |omega_a| r_a + h |omega_b| r_b less the gap
    left after the relative motion: for a box-box pair (``box_pair``) the pair's
    :func:`face_axis_slack` (one number for all its points: the manifold keeps a pair's face points
    together, edge impacts turning faces into each other), for a point on a half-space
    phi - |h (v_a - v_b).n|, its own exact distance along the normal."""
    k = sa.size
    close = np.empty(k)
    for c in range(k):
        a, b = sa[c], sb[c]
        if box_pair[c] and c > 0 and sa[c - 1] == a and sb[c - 1] == b:
            close[c] = close[c - 1]         # the same pair's next point
            continue
        if box_pair[c]:
            gap = face_axis_slack(ps[a], Rs[a], half[a], ps[b], Rs[b], half[b], sweep, a, b)
        else:
            rel = ((sweep[a, 0] - sweep[b, 0]) * N[c, 0] + (sweep[a, 1] - sweep[b, 1]) * N[c, 1]
                   + (sweep[a, 2] - sweep[b, 2]) * N[c, 2])
            gap = phi[c] - abs(rel)
        close[c] = margin + sweep[a, 3] + sweep[b, 3] - gap
    return close


@jit
def speculative_any(phi, margin):
    """Whether some contact is speculative, phi >= margin (or phi NaN): the only contacts
    :func:`reachable_contacts` can leave out (it keeps every contact with phi < margin on each of its
    paths). Where none is, its mask is all true, so the caller skips it and :func:`contact_closing`
    with it: a stack at rest, every contact within the margin (one pass over phi, where the two
    take a face-axis test per box pair and Bellman-Ford sweeps)."""
    for c in range(phi.size):
        if not phi[c] < margin:
            return True
    return False


@jit
def reachable_contacts(sa, sb, phi, close, sweep, shape_body, nb, margin):
    """Which of the contacts found can close in the step (a mask): a speculative contact between
    bodies that no contact can slow down enough is left out.

    Velocity-level contact (mechanics/rows.py: a gap phi gives its row the bias phi/h): a contact
    takes an impulse only if the step closes its gap, h (v_a' - v_b').n >= phi. Each body's step
    displacement is its free one, h v (``sweep`` rows: h v, h |omega| r), plus a deviation D_b that
    its contacts' impulses cause, at most stopping the body, D_b <= cap_b = |h v_b| (the bound
    :func:`pair_reach` and :func:`axis_reach` assume for either body of a pair). With ``close``
    (:func:`contact_closing`: how far the pair closes in beyond its gap at free motion), a contact
    closes only if close + D_a + D_b > 0, and it deviates body b by at most close + D_a (what b
    must give way for a's deviation to be taken up). A contact that closes at free motion
    (close > 0) can stop either body (D = cap on both, as the pairwise bound); from there the
    deviations run through the other contacts (close <= 0: each passes on less than it gets, so no
    cycle grows) by Bellman-Ford sweeps, forward and backward in turn, to the smallest deviations
    that satisfy every contact. A column of boxes falling together onto a landed pile: the lowest
    falling box may be stopped, the one above it closes on it by that much less their gap, and a
    few gaps up the deviation has run out: the boxes above keep no contact, where the pairwise
    bound kept every box within h |v| of the one below as a row. Contacts with phi < margin are
    always kept, and so are those that close at free motion (D >= 0), so where no other contact
    is found the sweeps are skipped; where the deviations have not settled after REACH_SWEEPS
    sweeps, every contact is. Needs every contact of the step in the arrays (a pair left to coal:
    not called)."""
    k = sa.size
    keep = np.ones(k, dtype=np.bool_)
    if k == 0:
        return keep
    D = np.zeros(nb)
    cap = np.zeros(nb)
    ba = np.empty(k, dtype=np.int64)
    bb = np.empty(k, dtype=np.int64)
    m = 0
    for c in range(k):
        a, b = sa[c], sb[c]
        ba[c], bb[c] = shape_body[a], shape_body[b]
        cap[ba[c]] = np.sqrt(sweep[a, 0] ** 2 + sweep[a, 1] ** 2 + sweep[a, 2] ** 2)
        cap[bb[c]] = np.sqrt(sweep[b, 0] ** 2 + sweep[b, 1] ** 2 + sweep[b, 2] ** 2)
    for c in range(k):
        if close[c] > 0.0:
            D[ba[c]] = cap[ba[c]]
            D[bb[c]] = cap[bb[c]]
            m += 1
    if m == k:
        return keep
    undecided = False       # a speculative contact that does not close at free motion: only these can go
    for c in range(k):
        undecided = undecided or (not phi[c] < margin and not close[c] > 0.0)
    if not undecided:
        return keep         # every contact within the margin or closing (the mask below: all true)
    rest = np.empty(k - m, dtype=np.int64)
    m = 0
    for c in range(k):
        if close[c] <= 0.0:
            rest[m] = c
            m += 1
    settled = False
    for s in range(REACH_SWEEPS):
        changed = False
        for t in range(m):
            c = rest[t] if s % 2 == 0 else rest[m - 1 - t]
            i, j = ba[c], bb[c]
            e = close[c] + D[i]
            if e > D[j] and D[j] < cap[j]:
                D[j] = min(e, cap[j])
                changed = True
            e = close[c] + D[j]
            if e > D[i] and D[i] < cap[i]:
                D[i] = min(e, cap[i])
                changed = True
        if not changed:
            settled = True
            break
    if not settled:
        return keep
    for c in range(k):
        keep[c] = phi[c] < margin or close[c] + D[ba[c]] + D[bb[c]] > 0.0
    return keep

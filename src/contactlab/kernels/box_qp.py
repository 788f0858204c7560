"""Compiled projected Newton of the ``box-qp`` method (solvers/box_qp/) on a dense matrix.

One call runs what solvers/box_qp/newton.py ``_qp`` and the friction-coupled bound updates of ``_solve`` do
in Python, step for step: Bertsekas's projected Newton (SIAM J. Control Optim. 20(2), 1982) on
min 1/2 z'Mz + q'z over lo <= z <= hi -- the rows at a bound whose gradient pushes outward (within
eps = min(1e-3 max|z|, ||z - clip(z - w / diag M)||)) are held, the free rows take the Newton step
M_FF d_F = -w_F (Cholesky; least squares where it fails, as ``_factor_solve``), the held ones a
scaled gradient step, accepted by an Armijo test along the projection arc clip(z + t d) (or one full
step only: ``full_steps``), the scaled gradient when the Newton arc fails; stopping when the scale-free
residual of problems/residual.py ``box_relative`` (row terms |q_i| + |w_i - q_i|) is at most ``tol``.
Friction-coupled rows (``findex``, ``mu``): the bounds lo_i = -mu_i max(z_findex_i, 0) = -hi_i are
frozen at the current normal values, the QP solved, the bounds updated (arechavaleta §IV-C eq. 16),
until the certified residual (row terms |q_i| + |M_i||z|) of the updated bounds is at most ``tol``.

The interior point stays in Python: where the method would switch to it (``auto``: projected Newton
did not converge), the kernel stops and says at which bound update (INTERIOR).

One departure from the Python loop: on an island's CSR block (box_qp_islands.py, above ``CSR_FROM``
rows) each Newton iteration from a good iterate first tries the minimiser on the face its held rows
span (:func:`_face_step`), under the same Armijo test, before the projected Newton step; and the solves
of one run there share a factorisation while the free set moves by a few rows (kernels/box_qp_panels.py).
"""
import heapq
import math

import numpy as np

from ._jit import jit
from .box_qp_panels import new_panel_state, panel_solve as _panel_solve, panel_state_solve  # noqa: F401
from .csr_blocks import (block_positions, csr_dense_block, csr_masked, csr_sub_block, diagonal_positions,  # noqa: F401
                         gather_block, sub_block, upper_pattern)   # (the CSR block kernels' names, once defined here)
from .dense import csr_times, csr_transpose_times, grouped_cholesky_solve
from .residual import abs_terms as _abs_terms, box_relative_error, boxed_certify_dense, coupled_bounds, csr_abs_terms
from .tolerances import EPS

#: outcomes of :func:`box_qp_dense`; LEFT: box_qp_islands left the island untouched (POOR_LEFT_FROM)
SOLVED, UNSETTLED, INTERIOR, LEFT = 0, 1, 2, 3


@jit
def _quot(a, b):
    """a / b as numpy divides (+-inf for a nonzero a over 0, nan for 0 / 0; numba's scalar / raises)."""
    if b != 0.0:
        return a / b
    if a != a or a == 0.0:
        return np.nan
    return math.copysign(math.inf, a) * math.copysign(1.0, b)


@jit
def _clip(x, lo, hi):
    """np.clip of one value (nan stays nan, hi applied last)."""
    if x < lo:
        x = lo
    if x > hi:
        x = hi
    return x


@jit
def _absmax(x):
    """np.max(np.abs(x), initial=0.0), nan propagating."""
    m = 0.0
    for i in range(x.size):
        a = abs(x[i])
        if a > m or a != a:
            m = a
            if a != a:
                return a
    return m


@jit
def _affine(M, z, q, w):
    """w = M z + q."""
    w[:] = np.dot(M, z)
    for i in range(q.size):
        w[i] += q[i]


@jit
def no_csr():
    """(indptr, indices, data) of no CSR matrix: the kernels below then read their dense M."""
    return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0)


@jit
def _mat_vec(M, sptr, sidx, sval, x):
    """M x: dense M by np.dot where no CSR is given (sptr empty), else the CSR (sptr, sidx, sval)."""
    if sptr.size == 0:
        return np.dot(M, x)
    return csr_times(sptr, sidx, sval, x)


@jit
def _affine_any(M, sptr, sidx, sval, z, q, w):
    """w = M z + q, M dense or CSR (:func:`_mat_vec`)."""
    if sptr.size == 0:
        _affine(M, z, q, w)
        return
    Mz = _mat_vec(M, sptr, sidx, sval, z)
    for i in range(q.size):
        w[i] = Mz[i] + q[i]


@jit
def _abs_terms_any(M, sptr, sidx, sval, q, z, t):
    """t = |q| + |M||z| (residual.py row terms), M dense or CSR."""
    if sptr.size == 0:
        _abs_terms(M, q, z, t)
        return
    t[:] = csr_abs_terms(sptr, sidx, sval, q, z)


#: the largest change of a matrix's entries (relative to its largest) for which a Newton step reuses
#: the last factorisation (this kernel's cached Cholesky of the same free rows; solvers/box_qp/'s
#: LDL' of the same pattern), with one step of iterative refinement: a resting stack's Delassus
#: matrix changes by ~1e-10 from step to step, and one refinement brings the stale solve's residual
#: (2e-4 - 2e-3) to that of a fresh factorisation (~2e-7 at condition 5e9)
STALE = 1e-8


@jit
def new_factor_cache(n):
    """The kernel's factor cache for problems of up to n rows: (L, A, F, k) -- the last Cholesky
    factor of a free block A_FF (stored transposed, as _free_solve factorises it), its free rows and
    their count (0: empty). solvers/box_qp/ keeps one per problem size. Nothing is read before
    it is written (the count guards it), so the buffers are not cleared: box_qp_islands makes one per
    island, and clearing its buffers would touch every page of them, which a buffer never written
    in full never does."""
    return np.empty((n, n)), np.empty((n, n)), np.empty(n, dtype=np.int64), np.zeros(1, dtype=np.int64)


@jit
def _chol_solve(L, k, rhs):
    """x with L L' x = rhs (L lower, k x k leading block)."""
    x = np.empty(k)
    for i in range(k):                       # L y = rhs (dot form along rows of L)
        s0 = s1 = s2 = s3 = 0.0
        j = 0
        while j + 4 <= i:
            s0 += L[i, j] * x[j]
            s1 += L[i, j + 1] * x[j + 1]
            s2 += L[i, j + 2] * x[j + 2]
            s3 += L[i, j + 3] * x[j + 3]
            j += 4
        while j < i:
            s0 += L[i, j] * x[j]
            j += 1
        x[i] = (rhs[i] - ((s0 + s1) + (s2 + s3))) / L[i, i]
    for i in range(k - 1, -1, -1):           # L' x = y (axpy form along rows of L)
        x[i] /= L[i, i]
        xi = x[i]
        for j in range(i):
            x[j] -= L[i, j] * xi
    return x


@jit
def _stale_solve(M, F, k, rhs, cL, cA, cF, ck):
    """With the cached factor of the same free rows whose block moved by at most STALE: x from it,
    refined once by x += (L L')^-1 (rhs - M_FF x) (not refined when the block is the cached one
    exactly: then x is the fresh solve's); else None (the caller factorises)."""
    if ck[0] != k or k == 0:
        return None
    for a in range(k):
        if cF[a] != F[a]:
            return None
    dmax = 0.0
    amax = 0.0
    for a in range(k):
        for b in range(k):
            c = cA[a, b]
            dmax = max(dmax, abs(M[F[b], F[a]] - c))
            amax = max(amax, abs(c))
    if not dmax <= STALE * amax:
        return None
    x = _chol_solve(cL, k, rhs)
    if dmax == 0.0:
        return x
    r = np.empty(k)
    for a in range(k):
        acc = rhs[a]
        for b in range(k):
            acc -= M[F[a], F[b]] * x[b]
        r[a] = acc
    dx = _chol_solve(cL, k, r)
    for a in range(k):
        x[a] += dx[a]
    return x


@jit
def no_groups():
    """The empty block structure (grp, gstep, nbr, nnb): every Newton system factorised dense."""
    none = np.zeros(0, dtype=np.int64)
    return none, none, np.zeros((0, 0), dtype=np.int64), none


@jit
def island_blocks(count, label):
    """The block structure (grp, gstep, nbr, nnb) of a matrix whose rows form ``count`` independent
    islands (``label`` per row, numbered as kernels/components.py numbers them) for
    :func:`_grouped_solve`: a group per island, eliminated in label order, no neighbours, so a Newton
    system is factorised island by island, cheaper than the dense factor of the whole
    (docs/benchmarks-tuning.md). One island (or none): :func:`no_groups`, the dense factorisation."""
    if count <= 1:
        return no_groups()
    return label, np.arange(count), np.zeros((count, 0), dtype=np.int64), np.zeros(count, dtype=np.int64)


@jit
def _add_neighbour(nb, cnt, a, b):
    """b into a's neighbour list nb[a, :cnt[a]] unless there; returns nb (a wider copy when full)
    and whether b was added."""
    for t in range(cnt[a]):
        if nb[a, t] == b:
            return nb, False
    if cnt[a] == nb.shape[1]:
        wider = np.empty((nb.shape[0], 2 * nb.shape[1]), dtype=np.int64)
        for g in range(nb.shape[0]):
            for t in range(cnt[g]):
                wider[g, t] = nb[g, t]
        nb = wider
    nb[a, cnt[a]] = b
    cnt[a] += 1
    return nb, True


@jit
def group_elimination(gstart, nb, cnt):
    """kernels/dense.py ``elimination_steps`` (the groups' minimum-degree order: fewest neighbour rows
    first, ties to the lowest group, fill edges added among an eliminated group's neighbours) on
    neighbour lists (group g's nb[g, :cnt[g]], both directions) instead of a dense adjacency
    matrix: the same order, in time linear in the groups and their fill (a binary heap of the
    weights, lazily updated) where the dense version's is cubic. Returns (step_of, nbr, nnb):
    group g eliminated at step step_of[g]; step s's later neighbours, as steps, nbr[s, :nnb[s]]
    (ascending by group, as elimination_steps lists them)."""
    G = gstart.size - 1
    size = np.empty(G, dtype=np.int64)
    for g in range(G):
        size[g] = gstart[g + 1] - gstart[g]
    weight = np.zeros(G, dtype=np.int64)
    for g in range(G):
        for t in range(cnt[g]):
            weight[g] += size[nb[g, t]]
    heap = [(weight[g], g) for g in range(G)]
    heapq.heapify(heap)
    done = np.zeros(G, dtype=np.bool_)
    order = np.empty(G, dtype=np.int64)
    nptr = np.zeros(G + 1, dtype=np.int64)      # neighbours at elimination, by group, flat
    flat = np.empty(max(1, 2 * G), dtype=np.int64)
    live = np.empty(G, dtype=np.int64)
    for step in range(G):
        while True:
            wt, g = heapq.heappop(heap)
            if not done[g] and wt == weight[g]:
                break
        order[step] = g
        done[g] = True
        k = 0
        for t in range(cnt[g]):
            h = nb[g, t]
            if not done[h]:
                live[k] = h
                k += 1
        lv = np.sort(live[:k])
        if nptr[step] + k > flat.size:
            grown = np.empty(2 * flat.size + k, dtype=np.int64)
            grown[:nptr[step]] = flat[:nptr[step]]
            flat = grown
        flat[nptr[step]:nptr[step] + k] = lv
        nptr[step + 1] = nptr[step] + k
        for a in range(k):
            weight[lv[a]] -= size[g]
        for a in range(k):
            for b in range(a + 1, k):
                nb, added = _add_neighbour(nb, cnt, lv[a], lv[b])
                if added:
                    nb, _ = _add_neighbour(nb, cnt, lv[b], lv[a])
                    weight[lv[a]] += size[lv[b]]
                    weight[lv[b]] += size[lv[a]]
        for a in range(k):
            heapq.heappush(heap, (weight[lv[a]], lv[a]))
    step_of = np.empty(G, dtype=np.int64)
    for s in range(G):
        step_of[order[s]] = s
    width = 0
    for s in range(G):
        width = max(width, nptr[s + 1] - nptr[s])
    nbr = np.empty((G, width), dtype=np.int64)
    nnb = np.empty(G, dtype=np.int64)
    for s in range(G):
        nnb[s] = nptr[s + 1] - nptr[s]
        for a in range(nnb[s]):
            nbr[s, a] = step_of[flat[nptr[s] + a]]
    return step_of, nbr, nnb


@jit
def group_ids(idx, label, scratch):
    """Row a's group: its label's rank of first appearance among the rows idx (as
    :func:`island_groups` numbers them). ``scratch``: -1 per label on entry and exit."""
    m = idx.size
    grp = np.empty(m, dtype=np.int64)
    G = 0
    for a in range(m):
        lab = label[idx[a]]
        if scratch[lab] < 0:
            scratch[lab] = G
            G += 1
        grp[a] = scratch[lab]
    for a in range(m):
        scratch[label[idx[a]]] = -1
    return grp


@jit
def island_groups(indptr, indices, idx, at, label, scratch):
    """The block structure of an island's matrix for :func:`_grouped_solve` and
    :func:`_panel_solve`: its rows idx (at[idx[a]] = a, -1 elsewhere) in groups by their global
    ``label`` (rows on the same bodies, e.g. a body pair's contact rows), two groups adjacent where
    M (CSR) couples them, and the groups' elimination order (:func:`group_elimination`: fewest
    neighbour rows first, fill included). ``scratch``: -1 per label on entry and exit. Returns
    (grp, gstep, nbr, nnb): row a's group grp[a], group g eliminated at step gstep[g], step s's
    later neighbours (by step) nbr[s, :nnb[s]]."""
    m = idx.size
    grp = group_ids(idx, label, scratch)
    G = 0
    for a in range(m):
        G = max(G, grp[a] + 1)
    gstart = np.zeros(G + 1, dtype=np.int64)
    for a in range(m):
        gstart[grp[a] + 1] += 1
    for g in range(G):
        gstart[g + 1] += gstart[g]
    rows = np.empty(m, dtype=np.int64)          # the rows group by group
    fill = gstart[:G].copy()
    for a in range(m):
        rows[fill[grp[a]]] = a
        fill[grp[a]] += 1
    # each group's neighbours, found once each (stamp[h] = g: h already listed for g)
    stamp = np.full(G, -1, dtype=np.int64)
    width = 4
    nb = np.empty((G, width), dtype=np.int64)
    cnt = np.zeros(G, dtype=np.int64)
    for g in range(G):
        for r in range(gstart[g], gstart[g + 1]):
            i = idx[rows[r]]
            for p in range(indptr[i], indptr[i + 1]):
                b = at[indices[p]]
                if b < 0:
                    continue
                h = grp[b]
                if h != g and stamp[h] != g:
                    stamp[h] = g
                    if cnt[g] == width:
                        nb, _ = _add_neighbour(nb, cnt, g, h)
                        width = nb.shape[1]
                    else:
                        nb[g, cnt[g]] = h
                        cnt[g] += 1
    gstep, nbr, nnb = group_elimination(gstart, nb, cnt)
    return grp, gstep, nbr, nnb


@jit
def _grouped_solve(M, F, k, rhs, grp, gstep, nbr, nnb):
    """(ok, x) with M_FF x = rhs by the block Cholesky of kernels/dense.py ``grouped_cholesky_solve``
    over the free rows in their groups' elimination order (:func:`island_groups`): only the blocks
    of a group with itself and with its neighbours are gathered and factorised, so a column of
    boxes (its body pairs a path) factors in time linear in its height where LAPACK's dense
    Cholesky grows with its cube. ok False where a pivot is not
    positive (the caller then takes the dense path)."""
    G = gstep.size
    gs = np.zeros(G + 1, dtype=np.int64)
    for a in range(k):
        gs[gstep[grp[F[a]]] + 1] += 1
    for s in range(G):
        gs[s + 1] += gs[s]
    fill = gs[:G].copy()
    pos = np.empty(k, dtype=np.int64)
    row = np.empty(k, dtype=np.int64)        # the row of M at each position
    for a in range(k):
        st = gstep[grp[F[a]]]
        pos[a] = fill[st]
        row[fill[st]] = F[a]
        fill[st] += 1
    B = np.empty((k, k))
    for s in range(G):                       # the lower blocks the factorisation reads: (s, s) and (h, s)
        for jj in range(gs[s], gs[s + 1]):
            c = row[jj]
            for ii in range(gs[s], gs[s + 1]):
                B[ii, jj] = M[row[ii], c]
            for t in range(nnb[s]):
                h = nbr[s, t]
                for ii in range(gs[h], gs[h + 1]):
                    B[ii, jj] = M[row[ii], c]
    bq = np.empty(k)
    for a in range(k):
        bq[pos[a]] = rhs[a]
    ok, xq = grouped_cholesky_solve(B, bq, gs, nbr, nnb, 0.0)
    x = np.empty(k)
    for a in range(k):
        x[a] = xq[pos[a]]
    return ok, x


@jit
def _free_solve(M, F, k, rhs, cL, cA, cF, ck, stale_ok, grp, gstep, nbr, nnb, sptr, sidx, sval, pst):
    """x with M_FF x = rhs (F[:k] the free rows): Cholesky, least squares where it fails
    (solvers/box_qp/factors.py _factor_solve). The factorised buffer holds M_FF transposed: numba's
    cholesky hands LAPACK's potrf('U') the buffer in column order, so potrf reads exactly the upper
    triangle of M_FF that scipy's cho_factor reads. ``stale_ok``: the cached factor of the same free
    rows where the block moved by at most STALE (:func:`_stale_solve`); every factorisation is
    cached (cL, cA, cF, ck: :func:`new_factor_cache`). With a group structure (grp non-empty,
    :func:`island_groups`) the block Cholesky of :func:`_grouped_solve` first (not cached). M in
    CSR (sptr non-empty; M itself unused): the panels' factor held in ``pst`` across the run's solves
    (:func:`~contactlab.kernels.box_qp_panels.panel_state_solve`: bordered where the free set moved by a
    few rows), else the free block gathered dense, not cached. Returns (x, pst)."""
    if k == 0:
        return np.empty(0), pst
    if sptr.size:
        if grp.size:
            ok, x, pst = panel_state_solve(pst, sptr, sidx, sval, F, k, rhs, grp, gstep, nbr, nnb)
            if ok:
                return x, pst
        Fk = F[:k].copy()
        A = gather_block(sptr, sidx, sval, Fk, block_positions(Fk, sptr.size - 1))
        try:
            L = np.linalg.cholesky(A)
        except Exception:
            return np.linalg.lstsq(A, rhs, rcond=EPS)[0], pst
        return _chol_solve(L, k, rhs), pst
    if grp.size:
        ok, x = _grouped_solve(M, F, k, rhs, grp, gstep, nbr, nnb)
        if ok:
            ck[0] = 0
            return x, pst
    if stale_ok:
        x = _stale_solve(M, F, k, rhs, cL, cA, cF, ck)
        if x is not None:
            return x, pst
    A = np.empty((k, k))
    for a in range(k):
        for b in range(k):
            A[a, b] = M[F[b], F[a]]
    ok = True
    try:
        L = np.linalg.cholesky(A)            # L L' = M_FF (upper triangle), L lower
    except Exception:
        ok = False
        L = A
    if not ok:
        ck[0] = 0
        for a in range(k):
            for b in range(k):
                A[a, b] = M[F[a], F[b]]
        return np.linalg.lstsq(A, rhs, rcond=EPS)[0], pst    # scipy lstsq's gelsd with cond = eps
    ck[0] = k
    for a in range(k):
        cF[a] = F[a]
        for b in range(k):
            cA[a, b] = A[a, b]
            cL[a, b] = L[a, b]
    return _chol_solve(L, k, rhs), pst


#: :func:`projected_newton` on a large CSR island from a poor start (``face_any``, kernels/box_qp_islands.py
#: POOR_LEFT_STEPS): steps after the first only where the first brought the relative error below this times
#: the start's. A falling pile's impact islands gain nothing in their first step (error 1.0 -> 1.0 on all
#: 24 of a replayed 500-box pile) and land in none of the next two; a settled 5,000-box pile's joined
#: towers that land in 2-3 steps gain in the first (1.0 -> 0.003-0.63), those that do not land gain
#: nothing either (docs/benchmarks-sim.md, branch ipmloop)
POOR_PROGRESS = 0.9

#: :func:`projected_newton`: the line search's halvings in a large island's first Newton step from a poor start
#: (``face_any``); where it needs more the island is left after it (to the interior point), without the rest
#: of the 30 halvings, each a product with its block (~3 ms on the 48,000-row joined towers of a settled
#: 5,000-box pile, ~7 ms on the 122,000-row island of a 10,000-box one). A step cut below 1/8 of Newton's moves
#: the start too little to bring its error below POOR_PROGRESS of the start's; on the 21 captured steps of
#: settled 5,000- and 10,000-box piles every first step that was not cut below it was so before too (the same
#: iterations and answers), and those left after it cost 20-100 ms less (docs/benchmarks-sim.md, fourteenth session)
POOR_HALVINGS = 3


#: :func:`_face_step`'s solves at most: a free row its step carries across a bound is held at that bound
#: and the free rows solved again, up to this many solves in all
FACE_SOLVES = 3


@jit
def _trial(M, sptr, sidx, sval, z, w, d, step, lo, hi, cand, dz, mdz):
    """A trial step of projected Newton: cand = clip(z + step d) into the bounds, dz = cand - z, and
    the objective's change df = dz'(w + M dz / 2) and its slope w'dz for the Armijo test (the QP's
    objective 1/2 z'Mz + q'z, w = Mz + q); M dz into ``mdz`` (w + M dz is the accepted step's w). Returns
    (df, slope, whether any row moved)."""
    n = z.size
    moved = False
    for i in range(n):
        cand[i] = _clip(z[i] + step * d[i], lo[i], hi[i])
        dz[i] = cand[i] - z[i]
        if dz[i] != 0.0:
            moved = True
    Mdz = _mat_vec(M, sptr, sidx, sval, dz)
    mdz[:] = Mdz
    df = 0.0
    slope = 0.0
    for i in range(n):
        df += dz[i] * (w[i] + 0.5 * Mdz[i])
        slope += w[i] * dz[i]
    return df, slope, moved


@jit
def _face_step(M, z, w, lo, hi, eps, d, held, cL, cA, cF, ck, grp, gstep, nbr, nnb, sptr, sidx, sval, pst):
    """The step d to the minimiser on the face of the box that the held rows span, each held row at its
    bound: rows held as projected Newton holds them (within ``eps`` of a bound their gradient w pushes
    against) and rows the step would carry across a bound are set to that bound (d_H = bound - z_H), and
    the free rows solve M_FF d_F = -(w_F + M_FH d_H) -- the Newton step of the QP restricted to the
    face, with the held rows' own move taken into account (the subspace step of a primal active-set
    method: More & Toraldo, SIAM J. Optim. 1(1), 1991, Alg. 5.3; Hintermueller, Ito & Kunisch, SIAM J.
    Optim. 13(3), 2003, as a semismooth Newton step). Projected Newton's step moves the held rows by
    a scaled gradient and solves the free rows as if they stayed: on a settled tower the held rows
    lie a hair above their bound, each step sends a few free rows across, and its line search cuts
    the steps to 1e-6 for tens of iterations; the face step lands there in one (docs/benchmarks-sim.md).
    Up to FACE_SOLVES solves, each after holding the rows the last one carried across (the last
    one's are left to the line search's projection). ``held``: the rows the step holds, written.
    ``pst``: the CSR solves' factor state (:func:`~contactlab.kernels.box_qp_panels.panel_state_solve`).
    Returns (whether d was computed (False: no free row, or a solve that did not factorise), pst)."""
    n = z.size
    tb = np.empty(n)
    for i in range(n):
        held[i] = False
        if (z[i] <= lo[i] + eps) and (w[i] > 0.0):
            held[i] = True
            tb[i] = lo[i]
        elif (z[i] >= hi[i] - eps) and (w[i] < 0.0):
            held[i] = True
            tb[i] = hi[i]
    F = np.empty(n, dtype=np.int64)
    dh = np.zeros(n)
    for r in range(FACE_SOLVES):
        k = 0
        for i in range(n):
            if held[i]:
                dh[i] = tb[i] - z[i]
            else:
                dh[i] = 0.0
                F[k] = i
                k += 1
        if k == 0:
            return False, pst
        # M dh, dh nonzero on the held rows only: on a CSR block the held rows' entries scattered (M symmetric:
        # M dh = M' dh), a pass over those rows alone (1-2 % of a settled pile's rows) instead of all of M's
        Md = csr_transpose_times(sptr, sidx, sval, dh, n) if sptr.size else _mat_vec(M, sptr, sidx, sval, dh)
        rhs = np.empty(k)
        for a in range(k):
            rhs[a] = -(w[F[a]] + Md[F[a]])
        x, pst = _free_solve(M, F, k, rhs, cL, cA, cF, ck, False, grp, gstep, nbr, nnb, sptr, sidx, sval, pst)
        for i in range(n):
            d[i] = dh[i]
        crossed = False
        for a in range(k):
            i = F[a]
            if not np.isfinite(x[a]):
                return False, pst
            d[i] = x[a]
            v = z[i] + x[a]
            if r == FACE_SOLVES - 1:
                continue
            if v < lo[i]:
                held[i] = True
                tb[i] = lo[i]
                crossed = True
            elif v > hi[i]:
                held[i] = True
                tb[i] = hi[i]
                crossed = True
        if not crossed:
            break
    return True, pst


@jit
def projected_newton(M, q, lo, hi, z, w, tol, max_iterations, armijo, full_steps, work, cL, cA, cF, ck, stale_ok,
                     grp, gstep, nbr, nnb, poor_iterations, poor_residual, sptr, sidx, sval, pst, face_any):
    """solvers/box_qp/newton.py ``_qp`` from z, in place (z, w = M z + q on return); returns (converged,
    Newton iterations). ``work``: 9 x n scratch; (cL, cA, cF, ck): the factor cache of
    :func:`_free_solve`, whose cached factor the first step may reuse where ``stale_ok``; (grp, gstep,
    nbr, nnb): the block structure of M (:func:`island_groups`), or empty arrays (dense solves).
    A start whose relative error is above ``poor_residual`` gets at most ``poor_iterations`` steps
    (:func:`box_qp_islands`; ``poor_residual`` inf: ``max_iterations`` whatever the start), and where
    ``face_any`` only one unless that step brings the error below POOR_PROGRESS times the start's (and that
    step's line search at most POOR_HALVINGS halvings: where it needs more, the island is left). M in
    CSR: (sptr, sidx, sval) non-empty, M unused (every product and solve linear in its entries; w carried from
    step to step as w + M dz of the accepted trial, one product fewer a step, the stopping test made on w =
    M z + q recomputed, which is also the w returned); an
    iterate whose error is at most ``poor_residual`` (any iterate where ``face_any``: the large islands of
    :func:`~contactlab.kernels.box_qp_islands.box_qp_islands`) then first tries :func:`_face_step`'s step, taken
    where it passes the Armijo test (so every step taken decreases the objective enough, as before).
    ``pst``: the factor state of the CSR island's solves (:func:`~contactlab.kernels.box_qp_panels.new_panel_state`;
    empty for a dense M), returned updated after the two results: the solves of the run (and of the
    caller's next runs on the same M) share one factorisation while the free set moves by a few rows
    (:func:`~contactlab.kernels.box_qp_panels.panel_state_solve`)."""
    n = q.size
    d, cand, dz, mdz, t = work[0], work[1], work[2], work[3], work[4]
    rw = work[5:9]
    diag = np.empty(n)
    if sptr.size == 0:
        for i in range(n):
            diag[i] = M[i, i]
    else:
        for i in range(n):
            diag[i] = 0.0
            for p in range(sptr[i], sptr[i + 1]):
                if sidx[p] == i:
                    diag[i] += sval[p]
    F = np.empty(n, dtype=np.int64)
    face = np.empty(n, dtype=np.bool_)
    its = 0
    limit = max_iterations
    rel0 = np.inf
    carried = False         # w carried from the accepted step (w + M dz), not recomputed
    for _ in range(max_iterations):
        if carried:
            for i in range(n):
                w[i] += mdz[i]
        else:
            _affine_any(M, sptr, sidx, sval, z, q, w)
        for i in range(n):
            t[i] = abs(q[i]) + abs(w[i] - q[i])
        rel = box_relative_error(z, w, lo, hi, q, t, rw)
        if rel <= tol and carried:      # the test that stops is made on w = M z + q itself
            _affine_any(M, sptr, sidx, sval, z, q, w)
            for i in range(n):
                t[i] = abs(q[i]) + abs(w[i] - q[i])
            rel = box_relative_error(z, w, lo, hi, q, t, rw)
        if rel <= tol:
            return True, its, pst
        if its == 0 and rel > poor_residual and poor_iterations < limit:
            limit = poor_iterations
            rel0 = rel
        if its == 1 and face_any and limit == poor_iterations and rel > POOR_PROGRESS * rel0:
            limit = 1       # a large island from a poor start whose first step did not gain: left after it
        if its >= limit:
            if carried:     # w returned as M z + q itself
                _affine_any(M, sptr, sidx, sval, z, q, w)
            return False, its, pst
        its += 1
        for i in range(n):
            dz[i] = z[i] - _clip(z[i] - _quot(w[i], diag[i]), lo[i], hi[i])      # the projected step
        zmax = _absmax(z)
        smax = _absmax(dz)
        a = 1e-300 if 1e-300 > zmax else zmax
        a = 1e-3 * a
        eps = smax if smax < a else a        # Python's min(a, smax)
        k = 0
        for i in range(n):
            held = ((z[i] <= lo[i] + eps) and (w[i] > 0.0)) or ((z[i] >= hi[i] - eps) and (w[i] < 0.0))
            if not held:
                F[k] = i
                k += 1
        accepted = False
        if sptr.size and k > 0 and (face_any or rel <= poor_residual):
            # a CSR island from a good iterate (:func:`_face_step`): the face's minimiser first, taken
            # where it decreases the objective enough; else the projected Newton step as below (from
            # a poor one the held rows, eps = 1e-3 max|z| from their bound, are a poor guess of the face)
            tried, pst = _face_step(M, z, w, lo, hi, eps, d, face, cL, cA, cF, ck, grp, gstep, nbr, nnb, sptr, sidx,
                                    sval, pst)
            if tried:
                df, slope, moved = _trial(M, sptr, sidx, sval, z, w, d, 1.0, lo, hi, cand, dz, mdz)
                accepted = df <= armijo * slope and moved
        for attempt in range(0 if accepted else (1 if full_steps else 2)):
            # Newton on the free rows, else a scaled projected gradient
            for i in range(n):
                d[i] = _quot(-w[i], diag[i])
            if attempt == 0 and k > 0:
                rhs = np.empty(k)
                for a_ in range(k):
                    rhs[a_] = -w[F[a_]]
                dF, pst = _free_solve(M, F, k, rhs, cL, cA, cF, ck, stale_ok and its == 1, grp, gstep, nbr, nnb,
                                      sptr, sidx, sval, pst)
                for a_ in range(k):
                    d[F[a_]] = dF[a_]
            step = 1.0
            # a large island's first step from a poor start (rel0 set): POOR_HALVINGS halvings at most
            trials = POOR_HALVINGS + 1 if face_any and its == 1 and rel0 < np.inf else 30
            for _ls in range(1 if full_steps else trials):
                df, slope, moved = _trial(M, sptr, sidx, sval, z, w, d, step, lo, hi, cand, dz, mdz)
                if df <= armijo * slope and moved:
                    accepted = True
                    break
                step *= 0.5
            if accepted:
                break
        if not accepted:
            return False, its, pst
        z[:] = cand
        # a CSR block's next w from this step's M dz (one product fewer an iteration: the trial's); a dense M
        # recomputes it (BLAS's product, the same bits as before)
        carried = sptr.size > 0
    _affine_any(M, sptr, sidx, sval, z, q, w)
    for i in range(n):
        t[i] = abs(q[i]) + abs(w[i] - q[i])
    return box_relative_error(z, w, lo, hi, q, t, rw) <= tol, its, pst


@jit
def box_qp_dense(M, q, lo, hi, findex, mu, z0, tol, max_iterations, armijo, full_steps, newton_only,
                 max_outer, cL, cA, cF, ck):
    """:func:`box_qp_grouped` with every free block factorised dense (no group structure)."""
    grp, gstep, nbr, nnb = no_groups()
    return box_qp_grouped(M, q, lo, hi, findex, mu, z0, tol, max_iterations, armijo, full_steps, newton_only,
                          max_outer, cL, cA, cF, ck, grp, gstep, nbr, nnb, max_iterations, np.inf, *no_csr(), False)


@jit
def box_qp_grouped(M, q, lo, hi, findex, mu, z0, tol, max_iterations, armijo, full_steps, newton_only,
                   max_outer, cL, cA, cF, ck, grp, gstep, nbr, nnb, poor_iterations, poor_residual, sptr, sidx, sval,
                   face_any):
    """solvers/box_qp/solver.py ``_solve`` up to the interior point, on a dense C-ordered M: the projected
    Newton QP (max_iterations, full_steps as ``_box_qp`` gives them) from z0 clipped to the bounds; with
    friction-coupled rows (any findex >= 0) up to ``max_outer`` bound updates, each certified with row
    terms |q_i| + |M_i||z| on the updated bounds. Returns (outcome, z, w, iterations, outer):
    SOLVED; UNSETTLED (static bounds: the QP did not converge, ``newton_only``; coupled: max_outer
    updates without a certified answer, w = M z + q); INTERIOR (not ``newton_only``: the QP of bound
    update ``outer`` did not converge; z is that update's starting point, before the clip).
    (cL, cA, cF, ck): the factor cache (:func:`new_factor_cache`, n rows at least); the first Newton
    step reuses its factor where the free block is the cached one's to within STALE. (grp, gstep,
    nbr, nnb): M's block structure for the Newton solves (:func:`island_groups`; empty: dense);
    (poor_iterations, poor_residual): each QP's budget from a poor start (:func:`projected_newton`);
    (sptr, sidx, sval): M in CSR (M then unused), or empty arrays (M dense); ``face_any``: the face step
    tried from any iterate (:func:`projected_newton`)."""
    n = q.size
    z = z0.copy()
    w = np.zeros(n)
    work = np.empty((9, n))
    coupled = False
    for i in range(n):
        if findex[i] >= 0:
            coupled = True
    lk = np.empty(n)
    hk = np.empty(n)
    its = 0
    pst = new_panel_state(n if sptr.size else 0)     # one factor state for every bound update: M is the same
    for outer in range(1, max_outer + 1):
        z_start = z.copy()
        coupled_bounds(lo, hi, findex, mu, z, lk, hk)
        for i in range(n):
            z[i] = _clip(z[i], lk[i], hk[i])
        ok, k, pst = projected_newton(M, q, lk, hk, z, w, tol, max_iterations, armijo, full_steps, work,
                                      cL, cA, cF, ck, outer == 1, grp, gstep, nbr, nnb, poor_iterations, poor_residual,
                                      sptr, sidx, sval, pst, face_any)
        its += k
        if not coupled:
            if ok:
                return SOLVED, z, w, its, 1
            if newton_only:
                return UNSETTLED, z, w, its, 1
            return INTERIOR, z_start, w, its, 1
        if not ok and not newton_only:
            return INTERIOR, z_start, w, its, outer
        if ok:
            coupled_bounds(lo, hi, findex, mu, z, lk, hk)
            t = work[4]
            _abs_terms_any(M, sptr, sidx, sval, q, z, t)
            if box_relative_error(z, w, lk, hk, q, t, work[5:9]) <= tol:
                return SOLVED, z, w, its, outer
    _affine_any(M, sptr, sidx, sval, z, q, w)
    return UNSETTLED, z, w, its, max_outer


@jit
def box_qp_dense_certified(M, q, lo, hi, findex, mu, z0, tol, max_iterations, armijo, full_steps, newton_only,
                           max_outer, cL, cA, cF, ck, grp, gstep, nbr, nnb):
    """:func:`box_qp_dense` with the Newton systems factorised over M's block structure (grp, gstep,
    nbr, nnb: :func:`island_blocks` of its islands, or :func:`no_groups`: dense), then the
    certification of its z on (M, q, lo, hi, findex, mu) by the library's residual kernel
    (kernels/residual.py ``boxed_certify_dense``, what BoxedLCP.certify_numbers runs on a dense M) in
    the same call. Returns (outcome, z, w, iterations, outer, w_certified, the six certified numbers)."""
    code, z, w, its, outer = box_qp_grouped(M, q, lo, hi, findex, mu, z0, tol, max_iterations, armijo, full_steps,
                                            newton_only, max_outer, cL, cA, cF, ck, grp, gstep, nbr, nnb,
                                            max_iterations, np.inf, *no_csr(), False)
    wc, nat, comp, infeas, rn, rc, ri = boxed_certify_dense(M, q, lo, hi, findex, mu, z)
    return code, z, w, its, outer, wc, (nat, comp, infeas, rn, rc, ri)


# the former private spellings of the CSR block kernels (kernels/csr_blocks.py)
_positions, _gather_block, _sub_block = block_positions, gather_block, sub_block

"""A sparse problem solved island by island (``problem.islands``, set by its builder): the small
islands in one compiled call (:func:`contactlab.kernels.box_qp_islands.box_qp_islands`), the others by the whole method
on their own blocks; rows that z = 0 likely solves set aside first (:func:`_set_aside`)."""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ...kernels.box_qp import INTERIOR, LEFT, UNSETTLED
from ...kernels.box_qp_islands import box_qp_islands, csr_rows_affine, new_island_layouts
from ...kernels.components import kept_row_components
from ...problems import BoxedLCP
from ...problems.islands import island_problem, island_rows
from ...solution import Solution, Status
from .interior_point import IPM_WARM_MAX
from .options import BoxQPOptions


#: islands of more rows than this factorise their Newton steps block by block over their groups (where
#: the problem carries ``body_groups``); below it LAPACK's dense Cholesky is as fast
GROUPED_FROM = 64


_NO_LABELS = np.zeros(0, dtype=np.int64)

#: the CSR islands' layouts of the last compiled call (:func:`contactlab.kernels.box_qp_islands.box_qp_islands`: groups,
#: their elimination order, the block's pattern), which the next call reuses island by island where
#: it finds the same rows and pattern (a settled pile's towers keep their contacts from step to step)
#: and recomputes elsewhere: checked against the problem every time, so any problem may follow any.
#: (layout, offsets, spare buffer); a call takes it (another thread meanwhile finds none, as does the
#: first call: nothing is made at import) and puts back its own
_layouts: list = []


#: :func:`_set_aside`: a row at lo = 0 is set aside where q_i > SET_ASIDE_GAP * max(-q) (its gap at z = 0
#: is at least the largest push the problem asks for). Chosen on the position corrections of certified
#: piles (docs/benchmarks-tuning.md): 0.3 to 3 alike; 0 (every separating row) re-solves merged islands
#: over several rounds where rows set aside are pushed in
SET_ASIDE_GAP = 1.0


#: :func:`_set_aside`: a start entry of at most AT_ZERO * max|z| counts as at 0 (and is set to 0 where its row is
#: set aside). The interior point's answers, which the next step starts from, never reach a bound exactly: their
#: inactive rows stay strictly inside the box at ~mu / s, 1e-13 to 1e-9 of max|z| on recorded pile steps, so a
#: falling pile's speculative contacts between boxes that fall together (q > 0, answer 0) came back nonzero
#: and were never set aside, which kept the whole pile one island. AT_ZERO is far below what the certificate
#: resolves (its relative residual measures z in units of max|z|, certified at 1e-6): the start moves by less
#: than that, and the answer is certified on the whole problem as before
AT_ZERO = 1e-9


def _set_aside(problem: BoxedLCP, z: np.ndarray, gap: float = SET_ASIDE_GAP) -> np.ndarray | None:
    """The rows solved at z_i = 0 before the rest (a mask), or None: rows at 0 in the start ``z``
    (at most AT_ZERO * max|z|: an interior point's residue counts as 0) that 0 can only leave
    unchanged -- fixed at 0 (lo = hi = 0: new contacts' friction under the
    previous step's normal) -- or a row with lo = 0 < hi and q_i > 0 (a contact separating at the free
    velocity, a speculative one with a gap) where q_i > ``gap`` * max(-q), with the friction rows
    tied to it by findex (bounds 0 when it is 0). They join the bodies they touch into islands that they
    take no part in: a pile's contacts with a gap merge its columns into one problem. Needs the rows'
    bodies (``factors``' H)."""
    factors = getattr(problem, "factors", None)
    if factors is None or factors[0].shape[0] != problem.n:
        return None
    q, lo, hi, fi = problem.q, problem.lo, problem.hi, problem.findex
    gap = gap * max(-q.min(initial=0.0), 0.0)
    at0 = np.abs(z) <= AT_ZERO * np.max(np.abs(z), initial=0.0)
    aside = at0 & (lo == 0.0) & ((hi == 0.0) | (q > gap)) & (fi < 0)
    tied = fi >= 0
    aside[fi[tied & ~at0]] = False              # a normal whose friction carries an impulse stays
    aside[tied] = at0[tied] & aside[fi[tied]]
    return aside if aside.any() else None


#: :func:`_islands` sets rows aside without ``set_aside`` (every separating row at 0: gap 0) where one island of the
#: problem holds more than MERGED_SHARE of its rows and more than MERGED_ROWS, and the rows left in play are at most
#: KEPT_SHARE of the rows; each round then solves the union of its islands by the whole method, one interior
#: point (their Newton steps from an impact's poor start mostly do not land). A falling pile whose towers the
#: speculative contacts of boxes falling together join (side contacts of turned boxes, each layer's contacts with
#: the next) has few rows in play: 5,800 of 87,099 at 10,000 boxes, 2-4 rounds; a landing 1,000-box pile has half
#: its rows in play, and its rounds cost more than its one solve (docs/benchmarks-sim.md, tenth session)
MERGED_SHARE, MERGED_ROWS, KEPT_SHARE = 0.5, 2000, 0.25


def _merged(own, share: float, rows: int) -> bool:
    """Whether one of the islands ``own`` = (count, label per row) holds more than ``share`` of the rows
    and more than ``rows``."""
    count, labels = own
    if labels.size <= rows:
        return False
    big = np.bincount(labels, minlength=count).max(initial=0)
    return big > rows and big > share * labels.size


def _kept_islands(problem: BoxedLCP, aside: np.ndarray) -> tuple[int, np.ndarray]:
    """(count, label per row) of the rows not set aside (-1 on those), from the bodies they touch."""
    H = problem.factors[0]
    return kept_row_components(H.indptr, H.indices, problem.findex, 6, ~aside)


def _islands(problem: BoxedLCP, opts: BoxQPOptions, z: np.ndarray, solve, resume) -> Solution | None:
    """A sparse problem whose builder found its islands (``problem.islands`` = (count, label per
    row): independent row groups, e.g. models/box_friction.py from the bodies each row touches) is
    solved island by island: the islands of up to min(dense_max, small_n) rows in one compiled call
    (:func:`contactlab.kernels.box_qp_islands.box_qp_islands`: each island's dense block and projected Newton, the
    small-problem settings), an island whose Newton gives way to the interior point (or a larger
    one) on its own block in Python. The whole problem's Newton stops, and its interior point
    iterates, until its worst island is solved, where each island alone mostly certifies in a Newton
    step or two. None where the problem carries no islands (or one), or its matrix is dense.

    Rows set aside (``set_aside``, :func:`_set_aside`: at 0, and 0 cannot be wrong unless the others
    push them in) are left out of the islands: the rest, split by the bodies they touch, is solved,
    then w = M z + q of the rows set aside; those below 0 (pushed in) join the rest and the islands
    are solved again from there, until none is: the answer of the whole problem, certified as a whole
    by solve(). ``solve``, ``resume``: as :func:`_island_solves`."""
    own = getattr(problem, "islands", None)
    M = problem.M
    if own is None or not opts.islands or not sp.issparse(M) or M.format != "csr":
        return None
    merged = False
    if opts.set_aside:
        aside = _set_aside(problem, z)
        count, labels = own if aside is None else _kept_islands(problem, aside)
    else:       # one island holds most rows: split by every separating row set aside, where few rows are left
        aside = _set_aside(problem, z, 0.0) if _merged(own, MERGED_SHARE, MERGED_ROWS) else None
        count, labels = own if aside is None else _kept_islands(problem, aside)
        if aside is not None and np.count_nonzero(labels >= 0) > KEPT_SHARE * problem.n:
            aside, (count, labels) = None, own      # many rows in play (a landed pile): whole, as before
        merged = aside is not None
    if aside is None and own[0] < 2:
        return None
    islands, whole = count, True
    zz, w = z.copy(), np.empty(problem.n)
    if aside is not None:
        zz[aside] = 0.0
    iterations, outer, rounds, ok = 0, 1, 0, True
    handed = 0
    while True:
        rounds += 1
        # a round solves the islands labelled (>= 0); the others keep the answers of the round that solved them
        its, out, solved, rows_handed = _island_solves(problem, opts, count, labels, zz, w, solve, resume,
                                                       union=merged)
        iterations, outer, ok = iterations + its, max(outer, out), (ok or whole) and solved
        handed += rows_handed
        if aside is None:
            break
        rows = np.flatnonzero(aside)
        w[rows] = csr_rows_affine(M.indptr, M.indices, M.data, rows, zz, problem.q)
        late = np.zeros(problem.n, dtype=bool)
        # pushed in (w < 0 at z = 0 with room above 0): a constraint after all
        late[rows[(w[rows] < 0.0) & (problem.hi[rows] > 0.0) & (problem.findex[rows] < 0)]] = True
        if not late.any():
            break
        tied = problem.findex >= 0
        late[tied] |= late[problem.findex[tied]]
        aside &= ~late
        count, labels = _kept_islands(problem, aside)
        islands = count
        # only the islands a late row joins change: one without a late row is an island of the last round
        # (adding rows only merges islands), its rows' answers and w still those of the whole problem at
        # zz; after a round with an island unsolved, every island again
        whole = not ok
        if not whole:
            count, labels = _touched(count, labels, late)
    return Solution(z=zz, w=w, status=Status.SOLVED if ok else Status.MAX_ITERATIONS, iterations=iterations,
                    info={"outer": outer, "islands": int(islands),
                          "set_aside": 0 if aside is None else int(aside.sum()), "rounds": rounds,
                          "handed": handed})


def _touched(count: int, labels: np.ndarray, late: np.ndarray) -> tuple[int, np.ndarray]:
    """(count, labels) of the islands of ``labels`` that hold a row of the mask ``late``, numbered
    from 0 in their order; every other row labelled -1 (left out of the round)."""
    keep = np.zeros(count + 1, dtype=bool)
    keep[labels[late] + 1] = True
    keep[0] = False                                 # label -1: the rows set aside
    new = np.cumsum(keep) - 1
    new[~keep] = -1
    return int(keep.sum()), new[labels + 1]


def _island_solves(problem: BoxedLCP, opts: BoxQPOptions, count: int, labels: np.ndarray, zz: np.ndarray,
                   w: np.ndarray, solve, resume, union: bool = False) -> tuple[int, int, bool, int]:
    """The islands (count, label per row; rows labelled -1 take no part) solved from zz, their
    answers written into zz and w: the compiled call for those it takes, box-qp in Python on the
    others: ``solve(sub, opts, z)`` the whole method on an island's block, ``resume(sub, opts, z, counter,
    mode, first)`` its Python path from bound update ``first`` (solver.py ``_solve`` and ``_python_path``,
    passed in so this module does not import the method back). ``union``: no compiled call, the
    islands' union solved by the whole method at once (rows of separate islands stay uncoupled).
    Returns (iterations, bound updates, whether every island is solved, the rows solved outside the compiled
    call: the whole method or the interior point in Python, a large island or one the compiled Newton left or
    gave up on)."""
    M = problem.M
    order, bounds = island_rows(count, labels)
    order, bounds = order[bounds[0]:], bounds - bounds[0]       # the rows labelled -1 sort first
    sizes = np.diff(bounds)
    # the compiled call takes the islands that _compiled would take whole with the small-problem
    # settings (dense, up to small_n rows: the full Newton budget with line search), and with the
    # rows' groups (``body_groups``, set by box friction: rows on one body pair) those up to
    # grouped_max rows, whose Newton steps it factorises block by block; "ipm": none
    groups = getattr(problem, "body_groups", None)
    groups = _NO_LABELS if groups is None or opts.grouped_max <= 0 else groups
    fits = (sizes <= min(opts.dense_max, opts.small_n)) | ((sizes <= opts.grouped_max) & (groups.size > 0))
    fits &= opts.algorithm != "ipm" and not union
    small = np.flatnonzero(fits)
    codes, its, outers = (np.zeros(small.size, dtype=np.int64) for _ in range(3))
    if small.size:
        rows = order[np.repeat(fits, sizes)]                    # the small islands' rows, island by island
        starts = np.concatenate([[0], np.cumsum(sizes[small])])
        z = zz.copy()
        # Newton alone has no interior point to hand over to: max_iterations, whatever the start
        newton_only = opts.algorithm == "newton"
        budget = opts.max_iterations if newton_only else min(opts.max_iterations, opts.island_iterations)
        try:
            layout, layout_at, spare = _layouts.pop()
        except IndexError:                      # the first call, or another thread's call holds it
            layout, layout_at, spare = new_island_layouts()
        layout_next, at_next = box_qp_islands(
            M.indptr, M.indices, M.data, problem.q, problem.lo, problem.hi, problem.findex, problem.mu, z, rows,
            starts, opts.tol, budget, opts.armijo, newton_only, opts.max_outer, zz, w, codes, its, outers, groups,
            GROUPED_FROM, opts.island_search_max or problem.n, opts.newton_steps,
            min(budget, opts.island_poor_iterations), np.inf if newton_only else IPM_WARM_MAX, layout, layout_at,
            spare)
        _layouts[:] = [(layout_next, at_next, layout)]      # this call's buffer the next one's spare
    iterations, outer, ok, handed = int(its.sum()), int(outers.max(initial=1)), True, 0
    # an island left out: the whole method on its own block; those the compiled Newton gave up on:
    # one interior point on their union from there (rows of separate islands stay uncoupled; one
    # run's ~15 iterations instead of ~15 per island, each a Python iteration), at the earliest of
    # their bound updates (their Newton iterations already counted)
    # (and those it left before any Newton step: large impact islands, kernels.box_qp_islands.POOR_LEFT_FROM);
    # a large island it left after its Newton steps (POOR_LEFT_STEPS, the face step tried) takes the interior
    # point on its own block at once: the whole method's own Newton steps from the same start (full steps on
    # a sparse LDL', no face step) are those the compiled call took, less the face step, and landed on none of
    # the settled 5,000-box pile's joined towers that the compiled steps left (docs/session12-settle12.md)
    left = small[(codes == LEFT) & (its == 0)]
    rest = [(order[bounds[k]:bounds[k + 1]], None, 0) for k in np.sort(np.concatenate([np.flatnonzero(~fits), left]))]
    tried = np.flatnonzero((codes == LEFT) & (its > 0))
    rest += [(order[bounds[small[j]]:bounds[small[j] + 1]], 1, int(its[j])) for j in tried]
    if union and count:     # the islands' union by the whole method: one interior point, no Newton per island
        rest = [(np.sort(order), None, 0)]
    gave_up = np.flatnonzero(codes == INTERIOR)
    if gave_up.size:
        idx = np.sort(np.concatenate([order[bounds[k]:bounds[k + 1]] for k in small[gave_up]]))
        rest.append((idx, int(outers[gave_up].min()), int(its[gave_up].sum())))
    for idx, first, done in rest:
        sub = island_problem(problem, idx, opts.dense_max)
        if sub.is_trivial():    # z = 0 solves it (separating contacts): the interior point's iterates
            zz[idx], w[idx] = 0.0, sub.q        # never reach 0 exactly, and a scale-free residual
            continue                            # measures z in units of max|z| (solve() tests this first)
        s = solve(sub, opts, zz[idx]) if first is None else resume(sub, opts, zz[idx], [done], ["ipm"], first)
        handed += idx.size
        zz[idx], w[idx] = s.z, s.w
        iterations += s.iterations - done
        outer = max(outer, s.info.get("outer", 1))
        ok = ok and s.status is Status.SOLVED
    ok = ok and not np.any(codes == UNSETTLED)
    return iterations, outer, ok, handed

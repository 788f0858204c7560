"""box_qp_islands' rule for impact islands (kernels/box_qp_islands.py ``_impact_start``): a large island
whose rows are mostly new contacts' fixed friction, from a poor start, is left to the whole method before
any Newton step."""
import numpy as np

import contactlab.solvers.box_qp as BQ
from contactlab.kernels.box_qp import SOLVED
from contactlab.problems import BoxedLCP
from contactlab.solvers import solve
from tests.kernels.test_box_qp_groups import _stacked_columns_problem


def test_a_large_island_with_many_new_contacts_is_left_from_a_poor_start_before_any_step():
    """An island above POOR_LEFT_FROM rows more than NEW_LEFT_SHARE of whose rows are fixed (lo = hi = 0: the
    friction of a contact new this step under coupling "previous") and whose start is poor is left with no
    Newton step (LEFT, 0 iterations, z untouched); with one contact's friction fixed (below the share) the
    same start gets the poor-start rule's Newton steps as before (left after them, or solved where they land
    it); from the interior point's minimiser of that
    problem (a good start) the compiled call certifies it itself."""
    from contactlab.kernels.box_qp import LEFT
    from contactlab.kernels.box_qp_islands import NEW_LEFT_SHARE, POOR_LEFT_STEPS, box_qp_islands, new_island_layouts
    from contactlab.problems.islands import island_rows
    from contactlab.solvers.box_qp.interior_point import IPM_WARM_MAX
    _, p = _stacked_columns_problem(count=60, columns=2, steps=5)
    order, bounds = island_rows(*p.islands)
    M = p.M.tocsr()
    opts = BQ.BoxQPOptions()
    normals = np.flatnonzero(p.findex < 0)
    for every, left in ((5, True), (normals.size, False)):
        fixed = np.isin(p.findex, normals[::every])      # the friction rows of every ``every``-th contact
        lo, hi, fi = p.lo.copy(), p.hi.copy(), p.findex.copy()
        lo[fixed], hi[fixed], fi[fixed] = 0.0, 0.0, -1
        share = max(np.mean(fixed[order[bounds[k]:bounds[k + 1]]]) for k in range(bounds.size - 1))
        assert (share > NEW_LEFT_SHARE) == left
        ref = solve(BoxedLCP(p.M, p.q, lo, hi, fi, p.mu), "box-qp", algorithm="ipm", tol=1e-12)
        assert ref.success
        wrong = ref.z * 5
        tied = fi >= 0
        wrong[tied] = np.where(np.arange(p.n)[tied] % 2, 1.0, -1.0) * p.mu[tied] * wrong[fi[tied]]
        for start, good in ((wrong, False), (ref.z.copy(), True)):
            z, w = np.full(p.n, np.nan), np.empty(p.n)
            codes, its, outers = (np.zeros(bounds.size - 1, dtype=np.int64) for _ in range(3))
            box_qp_islands(M.indptr.astype(np.int64), M.indices.astype(np.int64), M.data, p.q, lo, hi, fi, p.mu,
                           start, order, bounds, opts.tol, 20, opts.armijo, False, opts.max_outer, z, w, codes, its,
                           outers, p.body_groups, 64, p.n, opts.newton_steps, 8, IPM_WARM_MAX, *new_island_layouts())
            if good:
                assert set(codes.tolist()) == {SOLVED}
                assert np.allclose(z, ref.z, atol=1e-6 * np.abs(ref.z).max())
            elif left:
                assert set(codes.tolist()) == {LEFT} and np.all(np.isnan(z)) and np.all(its == 0)
            else:
                # below the share: the Newton steps of the poor-start rule (one, or up to POOR_LEFT_STEPS), after
                # which an island is left untouched, or solved where they land it (certified by the kernel's
                # residual: then the interior point's minimiser)
                assert set(codes.tolist()) <= {LEFT, SOLVED} and LEFT in codes.tolist()
                assert np.all((its >= 1) & (its <= POOR_LEFT_STEPS))
                for k in range(bounds.size - 1):
                    rows = order[bounds[k]:bounds[k + 1]]
                    if codes[k] == LEFT:
                        assert np.all(np.isnan(z[rows]))
                    else:
                        assert np.allclose(z[rows], ref.z[rows], atol=1e-6 * np.abs(ref.z).max())

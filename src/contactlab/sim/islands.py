"""Islands: a step's boxed LCP split into the independent groups of rows it is made of.

Two rows of a contact problem interact only through a body they share: the entry (i, j) of
H M^-1 H' is zero unless rows i and j touch a common moving body, and a friction row's bounds
couple it to its normal (``findex``). The connected components of that graph (rows as nodes, nonzero
entries and findex links as edges) are the islands: separate piles or stacks,
a grasped object apart from a box on the floor. Each island's boxed LCP is solved on its own
(``solve()`` on the sub-problem: a dense, compiled path where a whole scene's matrix would be a
sparse one), and the assembled answer is certified on the whole problem by its own ``certify``, so
the step's status means the same as for one solve of the whole.
"""
from __future__ import annotations

import dataclasses
import time

import numpy as np
import scipy.sparse as sp

from ..kernels.components import csr_components, dense_components
from ..kernels.tolerances import CERTIFY
from ..problems import BoxedLCP
from ..problems.islands import island_problem, island_rows
from ..solution import SUCCESS_STATUSES, Solution, Status


def island_labels(problem: BoxedLCP) -> tuple[int, np.ndarray]:
    """(count, label per row) of the connected components of the problem's coupling graph: nonzero
    off-diagonal entries of M and the friction rows' links to their normal (findex); one compiled
    union-find pass over M where it lies (:mod:`contactlab.kernels.components`)."""
    M = problem.M
    findex = getattr(problem, "findex", None)      # an LCP's rows couple through M alone
    if findex is None:
        findex = np.full(problem.n, -1, dtype=np.int64)
    if sp.issparse(M):
        M = sp.csr_matrix(M)
        return csr_components(M.indptr, M.indices, M.data, findex)
    return dense_components(np.ascontiguousarray(M, dtype=np.float64), findex)


#: ``Simulator(islands=None)`` splits an LCP step into its islands from this many rows on: below it a
#: solve() per island costs more than the whole solve saves (chosen on the column collapse and piles:
#: docs/benchmarks-sim.md, "Stewart-Trinkle piles island by island")
AUTO_MIN_ROWS = 100

#: islands of a sparse problem up to this many rows are solved as dense problems (the solvers'
#: compiled dense paths; :mod:`contactlab.problems.islands`), larger ones stay sparse (box friction's own dense_max)
DENSE_ISLAND = 200


def solve_islands(problem: BoxedLCP, method: str, solve_fn, warm_start=None, min_islands: int = 2,
                  **options) -> Solution | None:
    """Solve ``problem`` island by island with ``solve_fn(sub_problem, method, **options)`` (solve());
    None when it has fewer than ``min_islands`` islands (then solve the whole as usual). The islands
    are the problem's own ``islands`` (count, label per row) where its model set them (box friction's
    sparse problems, from the bodies each row touches: :func:`contactlab.kernels.components.row_block_components`),
    else found from the matrix (:func:`island_labels`).

    A dense factorisation costs n^3, the islands' sum n_i^3 (docs/benchmarks-tuning.md). box-qp solves a sparse problem's own islands itself, in one compiled call
    (box-qp's islands, :mod:`contactlab.solvers.box_qp.islands`), without a solve() per island: this path serves the other
    methods (``Simulator(islands=True)``).

    The answer is SOLVED when every island's solve is and the assembled z certifies on the whole
    problem (its relative residual at most max(tol, CERTIFY), as solve() decides); otherwise the
    worst island's status. Iterations and pivots are summed; ``info['islands']`` is the count and
    ``info['island_sizes']`` the rows per island, ``info['island_methods']`` the method that answered each
    (``auto``'s choice; a method's own ``info['answered_by']`` where it handed the island on, as st-box to Lemke)."""
    own = getattr(problem, "islands", None)
    count, labels = own if own is not None else island_labels(problem)
    groups = getattr(problem, "row_groups", None)
    if groups and all(k in groups for k in ("normal", "friction", "lambda")):
        count, labels = contacts_whole(count, labels, groups)
    if count < min_islands:
        return None
    t0 = time.perf_counter()
    order, bounds = island_rows(count, labels)
    z = np.zeros(problem.n)
    its = pivots = 0
    statuses = []
    methods = []
    for k in range(count):
        idx = order[bounds[k]:bounds[k + 1]]
        sub = island_problem(problem, idx, DENSE_ISLAND)
        if groups:
            sub.structure = dataclasses.replace(sub.structure, row_groups=island_groups(groups, idx))
        kw = dict(options)
        if warm_start is not None:
            kw["warm_start"] = np.asarray(warm_start, dtype=np.float64)[idx]
        s = solve_fn(sub, method, **kw)
        z[idx] = s.z
        its += int(s.iterations)
        pivots += int(s.pivots)
        statuses.append(s.status)
        methods.append(s.info.get("answered_by", s.method))
    w, absolute, relative = problem.certify(z)
    rel = max(relative.natural, relative.infeasibility)
    tol = max(float(options.get("tol", 0.0) or 0.0), CERTIFY)
    failed = [s for s in statuses if s not in SUCCESS_STATUSES]
    status = Status.SOLVED if not failed and rel <= tol else (failed[0] if failed else Status.NUMERICAL_FAILURE)
    return Solution(z=z, w=w, status=status, iterations=its, pivots=pivots, residual=absolute.natural,
                    method=method, complementarity=absolute.complementarity, infeasibility=absolute.infeasibility,
                    relative_residual=rel, time_s=time.perf_counter() - t0,
                    info={"islands": int(count), "island_sizes": np.diff(bounds).tolist(),
                          "island_methods": methods})


def island_groups(groups: dict, idx: np.ndarray) -> dict:
    """The row groups of the island of rows ``idx`` (ascending) of a problem with row groups
    ``groups`` (kind -> slice): each kind's rows of the island, contiguous in the island's order.
    Solvers that read a problem's rows by kind (st-box: a Stewart-Trinkle LCP's normal, friction and
    lambda rows) read an island's the same way."""
    out = {}
    for kind, s in groups.items():
        a, b = np.searchsorted(idx, [s.start, s.stop])
        out[kind] = slice(int(a), int(b))
    return out


def contacts_whole(count: int, labels: np.ndarray, groups: dict) -> tuple[int, np.ndarray]:
    """The islands (count, labels) of a Stewart-Trinkle LCP with each contact's rows (normal, its
    friction rows, lambda; ``groups``) in one island: the matrix links them through the pyramid's
    coupling (lambda to beta and c_n) and the bodies, but a zero entry (a contact whose lever arm
    lies along its normal) may leave its normal apart. Islands of one contact's rows are joined
    (union-find over the labels, only where one is split: usually the labels come back as they are)."""
    n_rows, f_rows, l_rows = groups["normal"], groups["friction"], groups["lambda"]
    nc = n_rows.stop - n_rows.start
    if nc == 0 or f_rows.stop - f_rows.start != 4 * nc or l_rows.stop - l_rows.start != nc:
        return count, labels
    own = labels[n_rows]
    rows = np.column_stack([own, labels[f_rows].reshape(nc, 4), labels[l_rows]])
    if np.all(rows == own[:, None]):
        return count, labels
    parent = np.arange(count)

    def root(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i
    for r in rows[np.any(rows != own[:, None], axis=1)]:
        a = root(r[0])
        for b in r[1:]:
            b = root(b)
            if a != b:
                parent[max(a, b)] = min(a, b)
                a = min(a, b)
    roots = np.array([root(i) for i in range(count)])
    _, new = np.unique(roots, return_inverse=True)
    return int(new.max()) + 1, new[labels].astype(np.int64)

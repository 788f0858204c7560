"""The sub-problem of one island of a boxed LCP or an LCP: rows coupled to no other row, by M or by findex
(:mod:`contactlab.sim.islands` finds and solves islands with any method; box-qp solves a problem's
own ``structure.islands`` in one compiled call)."""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..kernels.box_qp import csr_dense_block, csr_sub_block
from ..mechanics.system import csr_of
from .lcp import LCP, BoxedLCP
from .structure import ProblemStructure


def island_rows(count: int, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(order, bounds): island k's rows are order[bounds[k]:bounds[k + 1]], ascending (a stable
    sort of the labels)."""
    order = np.argsort(labels, kind="stable")
    return order, np.searchsorted(labels[order], np.arange(count + 1))


def csr_block(M, rows: np.ndarray) -> sp.csr_matrix:
    """M[rows][:, rows] of a sparse M (rows ascending) as canonical CSR, one compiled pass
    (kernels/box_qp.py ``csr_sub_block``, not scipy's fancy slice and its intermediate matrices)."""
    M = M if M.format == "csr" else sp.csr_matrix(M)
    M.sort_indices()
    return csr_of(*csr_sub_block(M.indptr, M.indices, M.data, rows, M.shape[1]), (rows.size, rows.size))


def island_problem(problem, idx: np.ndarray, dense_max: int):
    """The boxed LCP (or LCP, for an :class:`~contactlab.problems.LCP`: its principal block) of the
    rows ``idx`` (ascending; one island of ``problem``). From a sparse
    matrix: its dense block up to ``dense_max`` rows (one compiled gather, so the solvers take their
    compiled dense paths), else its CSR block (:func:`csr_block`); findex renumbered into the
    island; the problem's ``factors`` (H, W, cfm) with H's rows ``idx`` where the block is sparse.
    The parts of a checked problem, sliced: nothing to check again."""
    M = problem.M
    if not sp.issparse(M):
        sub = M[np.ix_(idx, idx)]
    elif idx.size <= dense_max:
        M = M if M.format == "csr" else sp.csr_matrix(M)
        sub = csr_dense_block(M.indptr, M.indices, M.data, idx, M.shape[1])
    else:
        sub = csr_block(M, idx)
    if isinstance(problem, LCP):
        return LCP.trusted(sub, problem.q[idx])
    where = np.full(problem.n, -1, dtype=np.int64)
    where[idx] = np.arange(idx.size)
    fi = problem.findex[idx]
    fi = np.where(fi >= 0, where[np.maximum(fi, 0)], -1)
    coupled = bool(np.any(fi >= 0))
    factors = problem.structure.factors
    if factors is not None and sp.issparse(sub):    # M = H W H' + cfm I: the island's rows of H
        structure = ProblemStructure(factors=(factors[0][idx], *factors[1:]))
    else:
        structure = None
    return BoxedLCP.trusted(sub, problem.q[idx], problem.lo[idx], problem.hi[idx],
                            fi if coupled else None, problem.mu[idx] if coupled else None, structure=structure)

"""One compiled pass over a boxed LCP's bounds and friction coupling (problems/lcp.py BoxedLCP): the
structural checks that used to be a dozen NumPy reductions per problem, returning the first violation
as (code, row) for the Python side to turn into its :class:`~contactlab.errors.ProblemError`."""
import numpy as np

from ._jit import jit

OK = 0
FINDEX_RANGE = 1       # findex[i] < -1 or >= n
FINDEX_SELF = 2        # findex[i] == i
MU_NEGATIVE = 3        # mu[i] < 0 on a coupled row (NaN included)
FINDEX_CHAIN = 4       # findex points at a coupled row
NORMAL_LO = 5          # a referenced normal row has lo < 0
BOUND_INF = 6          # lo = +inf or hi = -inf on an uncoupled row
LO_ABOVE_HI = 7        # lo > hi on an uncoupled row


@jit
def boxed_structure(lo, hi, findex, mu):
    """(code, row) of the first violated rule over all rows, in the order of the codes above (each rule
    checked over every row before the next, as the error messages are ordered); (OK, -1) if none."""
    n = lo.shape[0]
    for i in range(n):
        if findex[i] < -1 or findex[i] >= n:
            return FINDEX_RANGE, i
    for i in range(n):
        if findex[i] == i:
            return FINDEX_SELF, i
    for i in range(n):
        if findex[i] >= 0 and not mu[i] >= 0.0:
            return MU_NEGATIVE, i
    for i in range(n):
        j = findex[i]
        if j >= 0 and findex[j] >= 0:
            return FINDEX_CHAIN, i
    for i in range(n):
        j = findex[i]
        if j >= 0 and lo[j] < 0.0:
            return NORMAL_LO, i
    for i in range(n):
        if findex[i] < 0 and (lo[i] == np.inf or hi[i] == -np.inf):
            return BOUND_INF, i
    for i in range(n):
        if findex[i] < 0 and lo[i] > hi[i]:
            return LO_ABOVE_HI, i
    return OK, -1

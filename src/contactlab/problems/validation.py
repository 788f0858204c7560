"""Input checks shared by every problem type: shapes, finiteness, dtype (DESIGN.md conventions 3, 5)."""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..errors import ProblemError


def as_matrix(name: str, M, shape: tuple[int | None, int | None] | None = None, *, square: bool = False,
              allow_sparse: bool = True):
    """Return ``M`` as C-contiguous float64 ndarray or CSR matrix, after checking shape and finiteness."""
    if sp.issparse(M):
        if not allow_sparse:
            raise ProblemError(f"{name} must be a dense array here; pass {name}.toarray()")
        if not (M.format == "csr" and M.dtype == np.float64):    # a CSR float64 matrix is kept as it is
            M = sp.csr_matrix(M, dtype=np.float64)
        data = M.data
    else:
        try:
            M = np.ascontiguousarray(M, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise ProblemError(f"{name} must be a numeric matrix ({exc})") from None
        if M.ndim != 2:
            raise ProblemError(f"{name} must be 2-D, got an array of shape {M.shape}")
        data = M
    if square and M.shape[0] != M.shape[1]:
        raise ProblemError(f"{name} must be square, got shape {M.shape}")
    if shape is not None:
        for axis, want in enumerate(shape):
            if want is not None and M.shape[axis] != want:
                raise ProblemError(f"{name} has shape {M.shape}; expected {axis and 'columns' or 'rows'} = {want}")
    if not np.isfinite(data).all():
        raise ProblemError(f"{name} contains NaN or inf; every entry must be finite")
    return M


def as_vector(name: str, v, n: int | None = None, *, allow_inf: bool = False, fill=None) -> np.ndarray:
    """Return ``v`` as a float64 vector of length ``n``; scalars broadcast when ``fill`` semantics apply."""
    try:
        v = np.asarray(v, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ProblemError(f"{name} must be a numeric vector ({exc})") from None
    if v.ndim == 0 and n is not None:
        v = np.full(n, float(v))
    if v.ndim == 2 and 1 in v.shape:
        v = v.ravel()
    if v.ndim != 1:
        raise ProblemError(f"{name} must be 1-D, got shape {v.shape}")
    if n is not None and v.shape[0] != n:
        raise ProblemError(f"{name} has length {v.shape[0]}; expected {n} to match the matrix")
    if not np.isfinite(v).all():            # one pass in the usual case; the details only on failure
        if np.isnan(v).any():
            raise ProblemError(f"{name} contains NaN")
        if not allow_inf:
            raise ProblemError(f"{name} contains inf; every entry must be finite")
    return np.ascontiguousarray(v)


def matvec(M, z: np.ndarray) -> np.ndarray:
    """``M @ z`` for dense or sparse ``M`` returning a 1-D float64 array."""
    return np.asarray(M @ z, dtype=np.float64).ravel()


def to_dense(M) -> np.ndarray:
    return M.toarray() if sp.issparse(M) else np.asarray(M)


def max_abs(M) -> float:
    """max |M_ij| of a dense or sparse matrix (0 for an empty one)."""
    if sp.issparse(M):
        return float(abs(M).max()) if M.nnz else 0.0
    return float(np.max(np.abs(M), initial=0.0))


def is_symmetric(M) -> bool:
    """max |M - M'| <= SYMMETRY * max |M| (kernels/tolerances.py): the one symmetry test."""
    from ..kernels.tolerances import SYMMETRY
    tol = SYMMETRY * max_abs(M)
    if sp.issparse(M):
        D = (M - M.T).tocsr()
        return not D.nnz or float(abs(D).max()) <= tol
    M = np.asarray(M)
    return bool(np.max(np.abs(M - M.T), initial=0.0) <= tol)


def is_psd(M, *, dense_limit: int = 3000) -> bool:
    """Symmetric and lambda_min >= -PSD * max |lambda| (kernels/tolerances.py): the one PSD test.

    Sparse matrices larger than ``dense_limit`` are not tested (False: no claim is made)."""
    from ..kernels.tolerances import PSD
    if not is_symmetric(M):
        return False
    if sp.issparse(M):
        if M.shape[0] > dense_limit:
            return False
        M = M.toarray()
    if M.shape[0] == 0:
        return True
    ev = np.linalg.eigvalsh(0.5 * (M + M.T))
    return bool(ev[0] >= -PSD * max(float(np.max(np.abs(ev))), 1e-300))

"""Input checks shared by every problem type: shapes, finiteness, dtype (DESIGN.md conventions 3, 5)."""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..errors import ProblemError


def compressed_error(indptr, indices, n_data: int, major: int, minor: int) -> str | None:
    """What is wrong with the index arrays of a compressed (CSR/CSC) matrix of ``major`` rows
    (columns for CSC) and ``minor`` columns, or None: integer 1-D arrays, ``major + 1`` pointers
    rising from 0, at most ``len(indices)`` and ``n_data`` entries, every used index in
    ``[0, minor)``. SciPy's conversions and our compiled kernels read these arrays without bound
    checks, so a bad index corrupts memory; every matrix is checked here first."""
    indptr, indices = np.asarray(indptr), np.asarray(indices)
    if indptr.ndim != 1 or indices.ndim != 1:
        return "its index arrays must be 1-D"
    if indptr.dtype.kind not in "iu" or indices.dtype.kind not in "iu":
        return f"its index arrays must be integers (got {indptr.dtype} and {indices.dtype})"
    if major < 0 or minor < 0:
        return f"its shape must be non-negative, got {(major, minor)}"
    if indptr.size != major + 1:
        return f"its index pointer has {indptr.size} entries; expected {major + 1}"
    if indptr[0] != 0:
        return f"its index pointer starts at {int(indptr[0])}; it must start at 0"
    if indptr.size > 1 and np.any(indptr[1:] < indptr[:-1]):
        return "its index pointer decreases somewhere; it must be non-decreasing"
    nnz = int(indptr[-1])
    if nnz > indices.size or nnz > n_data:
        return f"its index pointer ends at {nnz} but it holds {min(indices.size, n_data)} entries"
    used = indices[:nnz]
    if nnz and (int(used.min()) < 0 or int(used.max()) >= minor):
        return f"an index is outside [0, {minor}) (found {int(used.min())} .. {int(used.max())})"
    return None


def _sparse_error(M) -> str | None:
    """What is wrong with the structure of the sparse matrix ``M`` (any SciPy format), or None."""
    shape = M.shape
    if len(shape) != 2:
        return f"must be 2-D, got shape {shape}"
    m, n = int(shape[0]), int(shape[1])
    fmt = M.format
    if fmt in ("csr", "csc"):
        major, minor = (m, n) if fmt == "csr" else (n, m)
        if np.ndim(M.data) != 1:
            return "its data array must be 1-D"
        return compressed_error(M.indptr, M.indices, M.data.size, major, minor)
    if fmt == "bsr":
        R, C = M.blocksize
        if np.ndim(M.data) != 3 or M.data.shape[1:] != (R, C) or m % R or n % C:
            return f"its blocks do not match the block size {(R, C)} and shape {(m, n)}"
        return compressed_error(M.indptr, M.indices, M.data.shape[0], m // R, n // C)
    if fmt == "coo":
        coords = getattr(M, "coords", None) or (M.row, M.col)
        for axis, (idx, size) in enumerate(zip(coords, (m, n))):
            idx = np.asarray(idx)
            if idx.ndim != 1 or idx.dtype.kind not in "iu" or idx.size != np.size(M.data):
                return "its row/column arrays must be integer, 1-D and as long as its data"
            if idx.size and (int(idx.min()) < 0 or int(idx.max()) >= size):
                return f"a {('row', 'column')[axis]} index is outside [0, {size})"
        return None
    if fmt == "lil":
        if len(M.rows) != m or len(M.data) != m:
            return f"its row lists must number {m}"
        for r, d in zip(M.rows, M.data):
            r = np.asarray(r)
            if r.size != len(d) or (r.size and (r.dtype.kind not in "iu" or r.min() < 0 or r.max() >= n)):
                return f"a column index is outside [0, {n}) or a row's lists disagree in length"
        return None
    if fmt == "dia":
        if np.ndim(M.data) != 2 or np.ndim(M.offsets) != 1 or M.data.shape[0] != np.size(M.offsets):
            return "its data must hold one row per diagonal offset"
        return None
    return None   # dok: a dict whose keys SciPy checks on every assignment


def check_dtype(name: str, dtype) -> None:
    """Refuse a complex (or other non-real) dtype: a cast to float64 would silently drop the
    imaginary part and solve a different problem."""
    kind = np.dtype(dtype).kind
    if kind == "c":
        raise ProblemError(f"{name} is complex; contactlab solves real problems (pass {name}.real "
                           "if the imaginary part is zero)")
    if kind not in "biuf":
        raise ProblemError(f"{name} must hold real numbers, got dtype {np.dtype(dtype)}")


def as_matrix(name: str, M, shape: tuple[int | None, int | None] | None = None, *, square: bool = False,
              allow_sparse: bool = True):
    """Return ``M`` as C-contiguous float64 ndarray or CSR matrix, after checking shape and finiteness.

    A sparse matrix's structure (:func:`_sparse_error`) and dtype are checked before SciPy or a
    kernel reads it; a complex matrix is refused, not cast."""
    if sp.issparse(M):
        if not allow_sparse:
            raise ProblemError(f"{name} must be a dense array here; pass {name}.toarray()")
        why = _sparse_error(M)
        if why is not None:
            raise ProblemError(f"{name} is a malformed sparse matrix: {why}")
        check_dtype(name, M.dtype)
        if not (M.format == "csr" and M.dtype == np.float64):    # a CSR float64 matrix is kept as it is
            M = sp.csr_matrix(M, dtype=np.float64)
        data = M.data[:M.indptr[-1]]
    else:
        try:
            if np.iscomplexobj(M):
                check_dtype(name, np.complex128)
            M = np.ascontiguousarray(M, dtype=np.float64)
        except (TypeError, ValueError, OverflowError) as exc:
            if isinstance(exc, ProblemError):
                raise
            raise ProblemError(f"{name} must be a numeric matrix of finite reals ({exc})") from None
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
        if np.iscomplexobj(v):
            check_dtype(name, np.complex128)
        v = np.asarray(v, dtype=np.float64)
    except (TypeError, ValueError, OverflowError) as exc:
        if isinstance(exc, ProblemError):
            raise
        raise ProblemError(f"{name} must be a numeric vector of finite reals ({exc})") from None
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

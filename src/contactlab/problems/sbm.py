"""Siconos' SparseBlockStructuredMatrix text layout (NumericsMatrix storage type 1 in ``.dat`` files).

Token layout, as written by Siconos' ``SBM_write_in_file`` and read by ``SBM_new_from_file``
(numerics/src/tools/SparseBlockMatrix.c), all whitespace-separated:

    nbblocks                                  number of stored (nonzero) blocks; 0 ends the matrix
    blocknumber0 blocknumber1                 number of block rows, block columns
    blocksize0[blocknumber0]                  cumulative row counts (last = number of rows)
    blocksize1[blocknumber1]                  cumulative column counts (last = number of columns)
    filled1 filled2                           lengths of the two index arrays
    index1_data[filled1]                      block-row pointers (CSR over blocks; filled1 = blocknumber0 + 1)
    index2_data[filled2]                      block-column index of each stored block
    then for each block k = 0..nbblocks-1, in block-row order:
        k  followed by rows_k * cols_k values in column-major order
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..errors import ProblemError


def read_sparse_block(tokens: list[str], pos: int, path, shape: tuple[int, int] | None = None):
    """Parse one SparseBlockStructuredMatrix starting at ``tokens[pos]``.

    Returns ``(matrix, new_pos)`` with ``matrix`` a ``scipy.sparse`` CSR matrix. ``path`` is used in
    error messages only. ``shape`` (rows, cols) is needed only for a matrix stored with zero blocks.
    Malformed input raises :class:`ProblemError` naming the file and the token.
    """

    def take_ints(k: int, what: str) -> np.ndarray:
        nonlocal pos
        if pos + k > len(tokens):
            raise ProblemError(f"{path}: file ends early in the sparse-block matrix ({what}, token {pos})")
        try:
            out = np.array([int(t) for t in tokens[pos:pos + k]], dtype=np.int64)
        except ValueError:
            raise ProblemError(f"{path}: expected integers for {what} at token {pos}, "
                               f"got {tokens[pos:pos + k][:3]!r}") from None
        if np.any(out < 0):
            raise ProblemError(f"{path}: negative value in {what} at token {pos}")
        pos += k
        return out

    def take_floats(k: int, what: str) -> np.ndarray:
        nonlocal pos
        if pos + k > len(tokens):
            raise ProblemError(f"{path}: file ends early in the sparse-block matrix ({what}, token {pos})")
        try:
            out = np.array(tokens[pos:pos + k], dtype=np.float64)
        except ValueError:
            raise ProblemError(f"{path}: expected numbers for {what} at token {pos}") from None
        pos += k
        return out

    nbblocks = int(take_ints(1, "nbblocks")[0])
    if nbblocks == 0:
        if shape is None:
            raise ProblemError(f"{path}: the sparse-block matrix has no blocks (all zero) and no size; "
                               "pass shape= to read it")
        return sp.csr_matrix(shape, dtype=np.float64), pos
    nb0, nb1 = (int(v) for v in take_ints(2, "blocknumber0 blocknumber1"))
    if nb0 == 0 or nb1 == 0:
        raise ProblemError(f"{path}: sparse-block matrix with {nb0} x {nb1} blocks but {nbblocks} stored blocks")
    size0 = take_ints(nb0, "blocksize0")
    size1 = take_ints(nb1, "blocksize1")
    for name, s in (("blocksize0", size0), ("blocksize1", size1)):
        if np.any(np.diff(np.r_[0, s]) <= 0):
            raise ProblemError(f"{path}: {name} must be strictly increasing cumulative sizes, got {s.tolist()}")
    filled1, filled2 = (int(v) for v in take_ints(2, "filled1 filled2"))
    if filled1 != nb0 + 1:
        raise ProblemError(f"{path}: filled1 = {filled1}, expected blocknumber0 + 1 = {nb0 + 1}")
    if filled2 < nbblocks:
        raise ProblemError(f"{path}: filled2 = {filled2} is smaller than nbblocks = {nbblocks}")
    index1 = take_ints(filled1, "index1_data")
    index2 = take_ints(filled2, "index2_data")
    if index1[0] != 0 or np.any(np.diff(index1) < 0) or index1[-1] != nbblocks:
        raise ProblemError(f"{path}: index1_data must rise from 0 to nbblocks = {nbblocks}, got {index1.tolist()}")
    if np.any(index2[:nbblocks] >= nb1):
        raise ProblemError(f"{path}: index2_data refers to a block column >= blocknumber1 = {nb1}")
    starts0, starts1 = np.r_[0, size0[:-1]], np.r_[0, size1[:-1]]
    rows, cols, vals = [], [], []
    for br in range(nb0):
        nr = int(size0[br] - starts0[br])
        for k in range(int(index1[br]), int(index1[br + 1])):
            bc = int(index2[k])
            nc = int(size1[bc] - starts1[bc])
            label = int(take_ints(1, f"block number {k}")[0])
            if label != k:
                raise ProblemError(f"{path}: block numbering broken: expected block {k}, found {label}")
            block = take_floats(nr * nc, f"block {k}").reshape((nc, nr)).T   # column-major
            r, c = np.nonzero(block)
            rows.append(r + starts0[br])
            cols.append(c + starts1[bc])
            vals.append(block[r, c])
    if not np.all(np.isfinite(np.concatenate(vals))):
        raise ProblemError(f"{path}: the sparse-block matrix contains NaN or inf")
    shape_read = (int(size0[-1]), int(size1[-1]))
    if shape is not None and tuple(shape) != shape_read:
        raise ProblemError(f"{path}: sparse-block matrix is {shape_read}, the header says {tuple(shape)}")
    M = sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                      shape=shape_read, dtype=np.float64)
    return M, pos


def write_sparse_block(M, block_sizes0, block_sizes1=None) -> list[str]:
    """Tokens of ``M`` in the SparseBlockStructuredMatrix layout with the given block sizes.

    Stores every block that has a nonzero entry (Siconos' own writer's convention). Used to write
    test files and to hand problems to Siconos; the inverse of :func:`read_sparse_block`.
    """
    A = M.toarray() if sp.issparse(M) else np.asarray(M, dtype=np.float64)
    block_sizes1 = block_sizes0 if block_sizes1 is None else block_sizes1
    s0, s1 = np.cumsum(block_sizes0), np.cumsum(block_sizes1)
    if s0[-1] != A.shape[0] or s1[-1] != A.shape[1]:
        raise ProblemError(f"block sizes sum to {(int(s0[-1]), int(s1[-1]))}, the matrix is {A.shape}")
    st0, st1 = np.r_[0, s0[:-1]], np.r_[0, s1[:-1]]
    index1, index2, blocks = [0], [], []
    for br in range(len(s0)):
        for bc in range(len(s1)):
            B = A[st0[br]:s0[br], st1[bc]:s1[bc]]
            if np.any(B != 0):
                index2.append(bc)
                blocks.append(B)
        index1.append(len(index2))
    out = [str(len(blocks))]
    if not blocks:
        return out
    out += [str(len(s0)), str(len(s1))] + [str(v) for v in s0] + [str(v) for v in s1]
    out += [str(len(index1)), str(len(index2))] + [str(v) for v in index1] + [str(v) for v in index2]
    for k, B in enumerate(blocks):
        out.append(str(k))
        out += [repr(float(v)) for v in B.T.ravel()]
    return out

"""Problem files: ``.npz`` (read/write, atomic), Siconos' LCP and FrictionContact text format ``.dat``
(read; friction also write) and FCLIB HDF5 ``.hdf5``/``.h5`` (read/write, atomic; see problems/fclib.py)."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from ..errors import ContactlabError, ParamError, ProblemError
from ..files import atomic_write  # also importable from here, its former home (one release)
from .base import Problem
from .factored import FactoredLCP
from .lcp import LCP, BoxedLCP
from .mixed import MixedLCP


def _pack(name: str, M, out: dict):
    if sp.issparse(M):
        M = sp.csr_matrix(M)
        out.update({f"{name}__data": M.data, f"{name}__indices": M.indices, f"{name}__indptr": M.indptr,
                    f"{name}__shape": np.array(M.shape)})
    else:
        out[name] = np.asarray(M)


def _unpack(name: str, f, path):
    if f"{name}__data" in f:
        from .validation import check_dtype, compressed_error
        data, indices, indptr = (f[f"{name}__{k}"] for k in ("data", "indices", "indptr"))
        shape = np.asarray(f[f"{name}__shape"]).ravel()
        if shape.size != 2 or shape.dtype.kind not in "iu":
            raise ProblemError(f"{path}: {name}__shape must be two integers, got {shape.tolist()!r}")
        check_dtype(f"{path}: {name}", data.dtype)
        why = compressed_error(indptr, indices, data.size if data.ndim == 1 else -1, int(shape[0]), int(shape[1]))
        if why is None and data.ndim != 1:
            why = "its data array must be 1-D"
        if why is not None:
            raise ProblemError(f"{path}: {name} is a malformed sparse matrix: {why}")
        return sp.csr_matrix((data, indices, indptr), shape=(int(shape[0]), int(shape[1])))
    return f[name]


_FIELDS = {
    "LCP": (LCP, ("M", "q")),
    "BoxedLCP": (BoxedLCP, ("M", "q", "lo", "hi", "findex", "mu")),
    "MixedLCP": (MixedLCP, ("A", "C", "D", "B", "g", "h")),
    "FactoredLCP": (FactoredLCP, ("N", "M", "f", "offset")),
}


def save(problem: Problem, path: str | os.PathLike, **fclib) -> Path:
    """Write ``problem`` to ``path`` atomically: ``.npz`` for the LCP family; for a
    FrictionContact / GlobalFrictionContact FCLIB HDF5 (``.hdf5``/``.h5``; keyword arguments
    ``solution``, ``guesses``, ``title``, ``description`` go to :func:`fclib.write_fclib`) or a
    Siconos FrictionContact text file (``.dat``, local problems)."""
    from ..files import check_output
    from . import fclib as _fc
    path = _path(path, "save")
    kind = type(problem).__name__
    if not isinstance(problem, Problem):
        raise ProblemError(f"save writes a contactlab problem; got a {kind}")
    if isinstance(problem, (_fc.FrictionContact, _fc.GlobalFrictionContact)):
        suffix = Path(path).suffix
        if suffix in _fc.FCLIB_SUFFIXES:
            check_output(path, "save: path")        # a folder, a device, no write permission: before writing
            return _fc.write_fclib(problem, path, **fclib)
        if suffix == ".dat" and isinstance(problem, _fc.FrictionContact) and not fclib:
            check_output(path, "save: path")
            return _fc.write_siconos_fc(problem, path)
        raise ProblemError(f"a {kind} is saved as FCLIB HDF5 (.hdf5/.h5) or, local only, Siconos .dat; got {str(path)!r}")
    if fclib:
        raise ProblemError(f"unexpected keyword(s) {sorted(fclib)} for a {kind} (they apply to friction problems)")
    if kind not in _FIELDS:
        raise ProblemError(f"cannot save a {kind}; supported: {sorted(_FIELDS)}")
    if Path(path).suffix != ".npz":
        raise ProblemError(f"save writes .npz files; got {str(path)!r} (use a .npz suffix)")
    check_output(path, "save: path")
    out = {"kind": np.array(kind)}
    for name in _FIELDS[kind][1]:
        _pack(name, getattr(problem, name), out)
    return atomic_write(path, lambda tmp: np.savez_compressed(tmp, **out))


def load(path: str | os.PathLike) -> Problem:
    """Read a problem from ``.npz`` (written by :func:`save`), a Siconos ``.dat`` file (LCP,
    FrictionContact or GlobalFrictionContact) or an FCLIB HDF5 file (``.hdf5``/``.h5``; the stored
    solution and guesses come as ``problem.reference`` and ``problem.guesses``). Every way a file
    can be unreadable is one :class:`~contactlab.errors.ProblemError` naming the file and why."""
    import stat
    import zipfile
    path = _path(path, "load")
    try:
        mode = path.stat().st_mode
    except OSError as exc:       # no such file, a symlink loop, a name too long
        raise ProblemError(f"no such file: {path}" if not path.is_symlink() and not path.exists()
                           else f"{path}: cannot read this problem file ({exc.strerror or exc})") from None
    if stat.S_ISDIR(mode):
        raise ProblemError(f"{path} is a directory; give one problem file (.npz or Siconos .dat)")
    if not stat.S_ISREG(mode):   # a FIFO blocks its reader, /dev/zero never ends: read regular files only
        raise ProblemError(f"{path} is not a regular file (a device, FIFO or socket); give a problem file")
    if path.suffix == ".npz" and not zipfile.is_zipfile(path):
        raise ProblemError(f"{path}: cannot read this problem file: not a .npz archive")
    try:
        return _read(path)
    except ContactlabError:
        raise
    except (ValueError, TypeError, KeyError, OSError, EOFError, OverflowError, zipfile.BadZipFile) as exc:
        raise ProblemError(f"{path}: cannot read this problem file: {_unreadable(exc)}") from None
    except MemoryError:      # a header asking for more than fits (e.g. n = 10**10 in a .dat file)
        raise ProblemError(f"{path}: cannot read this problem file: its sizes do not fit in memory") from None


def _path(path, func: str) -> Path:
    """``path`` as a Path, or a ParamError naming ``func``'s argument (bytes, None, a number)."""
    if not isinstance(path, (str, os.PathLike)) or isinstance(os.fspath(path), bytes):
        raise ParamError(f"{func}: path must be a str or os.PathLike naming a file, got {type(path).__name__}")
    return Path(path)


def _unreadable(exc: BaseException) -> str:
    """Why a problem file could not be read, in one line, from the exception its reader raised."""
    import zipfile
    msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    if "allow_pickle" in msg:
        return "it holds pickled Python objects, which are never loaded (save numeric arrays only)"
    if isinstance(exc, TypeError) and "missing" in msg:
        return "missing array(s) " + msg.split(":", 1)[-1].strip() + " (see contactlab.save)"
    if isinstance(exc, zipfile.BadZipFile) or "zip" in msg.lower():
        return "not a valid .npz archive"
    return msg


def _read(path: Path) -> Problem:
    """:func:`load` of an existing file, by its suffix."""
    from . import fclib as _fc
    if path.suffix in _fc.FCLIB_SUFFIXES:
        return _fc.read_fclib(path)
    if path.suffix == ".dat":
        kind = _fc.sniff_siconos(path)
        if kind is None:
            return read_siconos_dat(path)
        try:
            return _fc.read_siconos_fc(path, kind)
        except ProblemError as fc_error:
            try:
                return read_siconos_dat(path)   # an LCP file whose header looked like a friction one
            except ProblemError:
                raise fc_error from None
    if path.suffix != ".npz":
        raise ProblemError(f"unknown problem file type {path.suffix!r}; use .npz, Siconos .dat or FCLIB .hdf5")
    with np.load(path, allow_pickle=False) as f:
        kind = str(f["kind"]) if "kind" in f else "LCP"
        if kind not in _FIELDS:
            raise ProblemError(f"{path}: unknown problem kind {kind!r}")
        cls, names = _FIELDS[kind]
        args = {n: _unpack(n, f, path) for n in names if n in f or f"{n}__data" in f}
    return cls(**args)


def _tokens(path: Path) -> list[str]:
    return path.read_text().split()


def read_siconos_dat(path: str | os.PathLike) -> LCP:
    """Siconos' LCP text format: ``n``, a NumericsMatrix, then ``q`` (anything after q is ignored).

    NumericsMatrix: ``storageType rows cols`` then, for dense storage (0), ``rows cols`` and the
    values column-major; for sparse-block storage (1), Siconos' SparseBlockStructuredMatrix layout.
    """
    path = Path(path)
    tok = _tokens(path)
    pos = 0

    def take(k=1):
        nonlocal pos
        if pos + k > len(tok):
            raise ProblemError(f"{path}: file ends early (wanted {k} more token(s) at token {pos})")
        out = tok[pos:pos + k]
        pos += k
        return out

    try:
        n = int(take()[0])
        storage, rows, cols = (int(t) for t in take(3))
        if storage == 0:
            r2, c2 = (int(t) for t in take(2))
            if (r2, c2) != (rows, cols):
                raise ProblemError(f"{path}: dense header {rows}x{cols} disagrees with {r2}x{c2}")
            vals = np.array(take(rows * cols), dtype=np.float64)
            M = vals.reshape((cols, rows)).T
        elif storage == 1:
            from .sbm import read_sparse_block
            M, pos = read_sparse_block(tok, pos, path)
        else:
            raise ProblemError(f"{path}: unsupported Siconos storage type {storage} (0 dense, 1 sparse block)")
        q = np.array(take(n), dtype=np.float64)
    except ValueError as exc:
        if isinstance(exc, ProblemError):
            raise
        raise ProblemError(f"{path}: not a Siconos LCP file ({exc})") from None
    if M.shape != (n, n):
        raise ProblemError(f"{path}: matrix is {M.shape}, expected {(n, n)}")
    return LCP(M, q)

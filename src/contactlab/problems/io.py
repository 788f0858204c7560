"""Problem files: ``.npz`` (read/write, atomic), Siconos' LCP and FrictionContact text format ``.dat``
(read; friction also write) and FCLIB HDF5 ``.hdf5``/``.h5`` (read/write, atomic; see problems/fclib.py)."""
from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from ..errors import ProblemError
from .base import Problem
from .factored import FactoredLCP
from .lcp import LCP, BoxedLCP
from .mixed import MixedLCP


def _umask_mode() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


_FILE_MODE = _umask_mode()


def atomic_write(path: str | os.PathLike, write) -> Path:
    """Call ``write(tmp_path)`` on a temporary file beside ``path``, then rename it into place."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=path.suffix, dir=path.parent)
    os.close(fd)
    try:
        write(tmp)
        os.chmod(tmp, _FILE_MODE)  # mkstemp creates 0600; a written file gets the usual 0666 & ~umask
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def check_output(path, flag: str, *, suffixes: tuple[str, ...] | None = None, folder: bool = False):
    """Refuse, before any work, an output the command could not write (ParamError naming ``flag``):
    a directory where a file is wanted (or a file where a folder is), a special file (a device is
    never replaced by a rename), a suffix outside ``suffixes``, or a folder where no file can be
    created (tried: a temporary file is made and removed there, which also creates missing parents)."""
    from ..errors import ParamError
    path = Path(path)
    if folder:
        if path.exists() and not path.is_dir():
            raise ParamError(f"{flag} {path} is a file; give a folder")
        where = path
    else:
        if path.is_dir():
            raise ParamError(f"{flag} {path} is a directory; give a file name")
        if path.exists() and not path.is_file():
            raise ParamError(f"{flag} {path} is not a regular file; give a file name")
        if suffixes is not None and path.suffix.lower() not in suffixes:
            raise ParamError(f"{flag} writes {' or '.join(suffixes)} files; got {str(path)!r}")
        where = path.parent
    try:
        where.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".contactlab-write-test.", dir=where)
        os.close(fd)
        os.unlink(tmp)
    except OSError as exc:
        raise ParamError(f"{flag} {path}: cannot write there ({exc.strerror or exc})") from None


class OutputLocked(ProblemError):
    """Another process holds the lock of an output (:func:`output_lock` with ``wait=False``)."""


@contextlib.contextmanager
def output_lock(path: str | os.PathLike, *, folder: bool = False, wait: bool = True, on_wait=None):
    """Hold an exclusive lock on the output ``path`` for the block: the lock file ``.NAME.lock``
    beside it (``folder=True``: ``.lock`` inside the folder ``path``), locked with ``flock``, so writers of one output from
    several processes take turns (a sweep or a report then resumes from what the other wrote: rows
    and sections merged) instead of each replacing the other's file. The kernel drops the lock when
    its process dies, so a crash leaves no stale lock. ``wait=False``: :class:`OutputLocked` at once
    if another holds it; ``on_wait(message)`` is called once before waiting."""
    import fcntl
    path = Path(path)
    lock = (path / ".lock") if folder else path.parent / f".{path.name}.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    while True:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, _FILE_MODE)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "?"
                msg = (f"{path} is being written by another contactlab run (pid {holder}, lock {lock})")
                if not wait:
                    raise OutputLocked(f"{msg}; wait for it to finish or choose another output") from None
                if on_wait is not None:
                    on_wait(f"{msg}; waiting for it to finish ...")
                    on_wait = None
                fcntl.flock(fd, fcntl.LOCK_EX)
            if os.path.exists(lock) and os.stat(lock).st_ino == os.fstat(fd).st_ino:
                break      # the lock file we hold is still the one on disk (not removed by its last holder)
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        yield
    finally:
        try:
            os.unlink(lock)     # removed while held: a waiter re-checks the inode (above)
        except OSError:
            pass
        os.close(fd)


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
    from . import fclib as _fc
    kind = type(problem).__name__
    if isinstance(problem, (_fc.FrictionContact, _fc.GlobalFrictionContact)):
        suffix = Path(path).suffix
        if suffix in _fc.FCLIB_SUFFIXES:
            return _fc.write_fclib(problem, path, **fclib)
        if suffix == ".dat" and isinstance(problem, _fc.FrictionContact) and not fclib:
            return _fc.write_siconos_fc(problem, path)
        raise ProblemError(f"a {kind} is saved as FCLIB HDF5 (.hdf5/.h5) or, local only, Siconos .dat; got {path!r}")
    if fclib:
        raise ProblemError(f"unexpected keyword(s) {sorted(fclib)} for a {kind} (they apply to friction problems)")
    if kind not in _FIELDS:
        raise ProblemError(f"cannot save a {kind}; supported: {sorted(_FIELDS)}")
    if Path(path).suffix != ".npz":
        raise ProblemError(f"save writes .npz files; got {path!r} (use a .npz suffix)")
    out = {"kind": np.array(kind)}
    for name in _FIELDS[kind][1]:
        _pack(name, getattr(problem, name), out)
    return atomic_write(path, lambda tmp: np.savez_compressed(tmp, **out))


def load(path: str | os.PathLike) -> Problem:
    """Read a problem from ``.npz`` (written by :func:`save`), a Siconos ``.dat`` file (LCP,
    FrictionContact or GlobalFrictionContact) or an FCLIB HDF5 file (``.hdf5``/``.h5``; the stored
    solution and guesses come as ``problem.reference`` and ``problem.guesses``)."""
    path = Path(path)
    if not path.exists():
        raise ProblemError(f"no such file: {path}")
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
    import zipfile
    try:
        with np.load(path, allow_pickle=False) as f:
            kind = str(f["kind"]) if "kind" in f else "LCP"
            if kind not in _FIELDS:
                raise ProblemError(f"{path}: unknown problem kind {kind!r}")
            cls, names = _FIELDS[kind]
            args = {n: _unpack(n, f, path) for n in names if n in f or f"{n}__data" in f}
    except ProblemError:
        raise
    except (OSError, EOFError, ValueError, KeyError, TypeError, zipfile.BadZipFile) as exc:
        raise ProblemError(f"{path}: not a readable contactlab .npz problem ({type(exc).__name__}: {exc})") from None
    try:
        return cls(**args)
    except ProblemError as exc:
        raise ProblemError(f"{path}: {exc}") from None
    except TypeError as exc:
        raise ProblemError(f"{path}: the {kind} fields are incomplete ({exc})") from None


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

"""Files written atomically: every file the library writes goes through :func:`atomic_write`, so a
reader sees the old file or the new one, never half of one (the team rule "files written
atomically"); outputs checked before the work (:func:`check_output`) and written by one process at
a time (:func:`output_lock`). A ground module: it imports only contactlab.errors, and any layer may
use it."""
from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

from .errors import ParamError


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


class OutputLocked(ParamError):
    """Another process holds the lock of an output (:func:`output_lock` with ``wait=False``)."""


@contextlib.contextmanager
def output_lock(path: str | os.PathLike, *, folder: bool = False, wait: bool = True, on_wait=None):
    """Hold an exclusive lock on the output ``path`` for the block: the lock file ``.NAME.lock``
    beside it (``folder=True``: ``.lock`` inside the folder ``path``), locked with ``flock``, so
    writers of one output from several processes take turns (a sweep or a report then resumes from what the other wrote: rows
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

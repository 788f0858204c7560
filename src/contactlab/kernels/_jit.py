"""The one place numba flags are set: every kernel uses ``@jit``; and the one place its caches are
kept honest (:func:`invalidate_stale_caches`, run when this module is first imported).

``jit_inline``: the same flags, and numba inlines the function into its compiled callers (its IR,
before typing), for the small helpers a pivot calls every iteration; otherwise each call passes
every array as a seven- to nine-word struct (at n = 8-16 Lemke's per-pivot helper calls were a
third of a pivot, perf). Called from Python it is an ordinary compiled function.

``jit_noraise``: the same flags with numpy's error model: a float division by zero gives inf or nan
instead of raising ZeroDivisionError (kernels never raise; their finiteness checks report it),
and no zero test precedes each division. Lemke's reduced kernel uses it (its divisors are
nonzero by construction: 2-5 % per pivot).
"""
import hashlib
import os
import tempfile
from pathlib import Path

import numba

#: the file beside the package's numba caches that records the sources they were compiled from
STAMP_NAME = "numba-sources.stamp"


def sources_stamp(root: Path) -> str:
    """A digest of the path, size and modification time of every ``.py`` file under ``root``."""
    digest = hashlib.sha1()
    for path in sorted(root.rglob("*.py")):
        st = path.stat()
        digest.update(f"{path.relative_to(root).as_posix()}:{st.st_size}:{st.st_mtime_ns};".encode())
    return digest.hexdigest()


def invalidate_stale_caches(root: Path) -> bool:
    """Delete numba's cached kernels under ``root`` (``__pycache__/*.nbi``, ``*.nbc``) when any
    source file changed since they were written; True when it deleted them.

    numba keys a cached kernel on its own file only ("changes in symbols defined in another file
    are not recognised", numba's notes on caching): a kernel that calls, or reads a constant from,
    another module keeps the old code after that module changes (seen here: after an edit of
    kernels/pgs_matrix_free.py the compiled box-friction step of sim/box_step.py went on running
    the old sweeps). A checkout updated by ``git pull`` would run stale kernels the same way. So
    the caches are kept only with the stamp of the sources they came from (:func:`sources_stamp`,
    under ``root/__pycache__``): any change recompiles every kernel once. Where the package's
    folders are not writable numba keeps its caches elsewhere and this does nothing."""
    stamp = sources_stamp(root)
    marker = root / "__pycache__" / STAMP_NAME
    try:
        if marker.read_text() == stamp:
            return False
    except OSError:
        pass
    for cache in (*root.rglob("__pycache__/*.nbi"), *root.rglob("__pycache__/*.nbc")):
        try:
            cache.unlink()
        except OSError:         # another process removed it first, or a read-only install
            pass
    try:
        marker.parent.mkdir(exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{STAMP_NAME}.", dir=marker.parent)
        with os.fdopen(fd, "w") as f:
            f.write(stamp)
        os.replace(tmp, marker)
    except OSError:
        pass
    return True


invalidate_stale_caches(Path(__file__).resolve().parents[1])

jit = numba.njit(cache=True, nogil=True, fastmath=False)
jit_inline = numba.njit(cache=True, nogil=True, fastmath=False, inline="always")
jit_noraise = numba.njit(cache=True, nogil=True, fastmath=False, error_model="numpy")

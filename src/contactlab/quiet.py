"""Native libraries' own console output kept off the user's console.

Some compiled libraries write banners straight to the process's standard streams from C or C++
(HiGHS on standard output when the first solver is made; pybullet on standard error when it is
imported), where ``sys.stdout``/``sys.stderr`` redirection does not reach. A library must not write
to its user's console, so such calls run inside :func:`native_output_silenced`."""
from __future__ import annotations

import ctypes
import os
import sys
import threading
from contextlib import contextmanager

_lock = threading.Lock()


@contextmanager
def native_output_silenced(stdout: bool = True, stderr: bool = False):
    """Point file descriptor 1 (``stdout``) and/or 2 (``stderr``) at the null device for the block,
    then back, C stdio's buffers flushed before they are restored; Python's own streams are
    flushed first so nothing of ours is lost."""
    fds = [fd for fd, on in ((1, stdout), (2, stderr)) if on]
    with _lock:
        sys.stdout.flush()
        sys.stderr.flush()
        saved = {fd: os.dup(fd) for fd in fds}
        try:
            null = os.open(os.devnull, os.O_WRONLY)
            try:
                for fd in fds:
                    os.dup2(null, fd)
            finally:
                os.close(null)
            yield
        finally:
            try:
                ctypes.CDLL(None).fflush(None)
            finally:
                for fd, copy in saved.items():
                    os.dup2(copy, fd)
                    os.close(copy)


@contextmanager
def loky_worker_replacements_quiet():
    """Keep loky's note that it replaced a worker off the console for the block.

    loky (joblib's process executor) ends a worker whose memory grew by more than 300 MB after
    its task (compiling kernels and the larger report sections do) and warns "A worker stopped
    while some jobs were given to the executor" from its manager thread when it starts the
    replacement. The task had finished and its result is kept, so for our own runs the note is
    noise; ``warnings`` filters are process-wide, so the thread's warning meets the filter."""
    import warnings
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="A worker stopped while some jobs", category=UserWarning)
        yield

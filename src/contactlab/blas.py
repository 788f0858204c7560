"""BLAS thread limiting, written once (issue 11).

Contact problems are many small dense solves; on them threaded BLAS costs more in thread start-up
and oversubscription than it saves (many times slower on a loaded machine, docs/benchmarks-tuning.md). The CLI,
the simulator, the UCP solvers and the benchmarks' timed sections all go through :func:`blas_threads`.
``CONTACTLAB_BLAS_THREADS`` sets the CLI's limit (default 1).
"""
from __future__ import annotations

import contextlib
import functools
import os
import sys

from threadpoolctl import ThreadpoolController

ENV = "CONTACTLAB_BLAS_THREADS"


def default_threads() -> int:
    """The CLI's BLAS thread count: ``CONTACTLAB_BLAS_THREADS`` or 1."""
    return int(os.environ.get(ENV, "1"))


_controller: tuple[int, ThreadpoolController, tuple] | None = None


def _thread_pools() -> ThreadpoolController:
    """threadpoolctl's view of the loaded thread pools, taken once and again only after a module was
    imported (a new module may have loaded a new BLAS): taking it walks every loaded shared library,
    which ``threadpool_limits`` pays on every call (a simulator runs in chunks of steps), while
    limiting through a view already taken is a hundred times cheaper."""
    global _controller
    key = len(sys.modules)
    if _controller is None or _controller[0] != key:
        pools = ThreadpoolController()
        _controller = (key, pools, tuple((lib, _count_reader(lib)) for lib in pools.lib_controllers
                                         if lib.user_api == "blas"))
    return _controller[1]


def _count_reader(lib):
    """A BLAS library's own thread-count getter (its C function, resolved once), or the controller's
    ``get_num_threads`` where threadpoolctl does not name one: threadpoolctl looks the symbol up by
    name on every read, which a step's limit would pay each step."""
    symbol = getattr(lib, "_get_symbol", None)
    if symbol is not None and getattr(lib, "threading_layer", None) is not None:
        try:
            fn = symbol("omp_get_max_threads" if lib.threading_layer == "openmp" else "openblas_get_num_threads")
        except Exception:       # a controller of another layout: its own method
            fn = None
        if fn is not None and lib.internal_api == "openblas":
            return fn
    return lib.get_num_threads


def _blas_pools() -> tuple:
    """(controller, its thread-count reader) of each loaded BLAS library (:func:`_thread_pools`)."""
    _thread_pools()
    return _controller[2]


#: (n, len(sys.modules) when it was set) of each limit open now, innermost last
_open: list[tuple[int, int]] = []


class _BlasLimit:
    """BLAS on ``n`` threads inside the block, each BLAS library's own count restored after it.
    Set through threadpoolctl's library controllers directly: a library already at ``n`` is left
    alone. A limit inside a limit to the same ``n`` (a simulator's step inside its run) touches
    nothing while no module was imported since the outer one was set (a new module may load a
    new BLAS); else it costs a read per library."""
    __slots__ = ("n", "changed")

    def __init__(self, n: int):
        self.n = n
        self.changed = ()

    def __enter__(self):
        key = len(sys.modules)
        n = self.n
        if _open and _open[-1] == (n, key):
            self.changed = ()
        else:
            changed = ()
            for lib, count in _blas_pools():
                k = count()
                if k != n:      # a library already at n is left alone (most steps: no list, no call)
                    changed += ((lib, k),)
                    lib.set_num_threads(n)
            self.changed = changed
        _open.append((n, key))
        return self

    def __exit__(self, *exc):
        if _open:
            _open.pop()
        for lib, k in self.changed:
            lib.set_num_threads(k)
        self.changed = ()
        return False


def blas_threads(n: int | None = 1):
    """Context manager limiting BLAS to ``n`` threads while it is open (None: leave BLAS as it is)."""
    if n is None:
        return contextlib.nullcontext()
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        from .errors import ParamError
        raise ParamError(f"BLAS threads must be a positive whole number or None, got {n!r}")
    return _BlasLimit(n)


def single_thread_blas(func):
    """Decorator: run ``func`` with BLAS on one thread."""
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        with blas_threads(1):
            return func(*args, **kwargs)
    return wrapper

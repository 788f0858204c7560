"""The one place numba flags are set: every kernel uses ``@jit``; and the one place its caches are
kept honest (:func:`invalidate_stale_caches`, run when this module is first imported).

``jit_inline``: the same flags, and numba inlines the function into its compiled callers (its IR,
before typing), for the small helpers a pivot calls every iteration; otherwise each call passes
every array as a seven- to nine-word struct. Called from Python it is an ordinary compiled function.

``jit_noraise``: the same flags with numpy's error model: a float division by zero gives inf or nan
instead of raising ZeroDivisionError (kernels never raise; their finiteness checks report it),
and no zero test precedes each division. Lemke's reduced kernel uses it (its divisors are
nonzero by construction).

Tiered execution (:class:`TieredDispatcher`): a kernel whose machine code is neither in this
process nor in numba's cache on disk runs as plain Python (the same function: every kernel is
readable reference code that also runs interpreted, tests/kernels/test_nojit.py) until the CPU time
spent interpreting it reaches an estimate of what compiling it would cost; then it compiles. This
is the ski-rental rule: the total time is never more than twice what the better of "compile at
once" and "never compile" would have taken (the interpreted time is summed over processes,
:class:`_Rent`), and a short first run (a small ``solve()``, a
half-second ``simulate``) never waits for the compiler. ``CONTACTLAB_JIT=compile`` (or
:func:`compile_always`) compiles on first call instead: bit-reproducible runs across cold and
warm caches (interpreted NumPy sums and factorisations may round differently), and
``contactlab warmup``.
"""
import ast
import atexit
import hashlib
import json
import os
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import numba
import numpy as np
from numba.core.dispatcher import OmittedArg
from numba.core.registry import CPUDispatcher

#: the file beside the package's numba caches that records the sources they were compiled from
STAMP_NAME = "numba-sources.json"


def sources_stamp(root: Path) -> str:
    """A digest of the path, size and modification time of every ``.py`` file under ``root``: the
    cheap test (``stat`` only) that nothing changed since the caches were last checked."""
    digest = hashlib.sha1()
    for path in sorted(root.rglob("*.py")):
        st = path.stat()
        digest.update(f"{path.relative_to(root).as_posix()}:{st.st_size}:{st.st_mtime_ns};".encode())
    return digest.hexdigest()


def _content_digests(root: Path) -> dict[str, str]:
    """Each ``.py`` file under ``root`` (relative POSIX path) -> the SHA-1 of its bytes."""
    return {path.relative_to(root).as_posix(): hashlib.sha1(path.read_bytes()).hexdigest()
            for path in sorted(root.rglob("*.py"))}


def _module_file(root: Path, parts: list[str]) -> str | None:
    """The file (relative to ``root``) of the package module named by ``parts`` below ``root``."""
    base = root.joinpath(*parts) if parts else root
    for candidate in (base.with_suffix(".py") if parts else None, base / "__init__.py"):
        if candidate is not None and candidate.is_file():
            return candidate.relative_to(root).as_posix()
    return None


def imported_files(root: Path, relpath: str) -> set[str]:
    """The package files that ``relpath`` imports directly (module level or inside functions).

    ``from pkg import name`` counts ``pkg/name.py`` when ``name`` is a submodule, else
    ``pkg/__init__.py`` (the name is defined or re-exported there); ``import pkg.mod`` counts
    ``pkg/mod.py``. Parent packages' ``__init__`` files run on import too but define nothing a
    kernel reads unless named, so they are not counted (counting them would make the package's
    top ``__init__``, which imports everything, part of every closure)."""
    package = root.name
    here = relpath.split("/")[:-1]           # the importing module's package, below root
    try:
        tree = ast.parse((root / relpath).read_bytes())
    except (OSError, SyntaxError, ValueError):
        return set()
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == package and (f := _module_file(root, parts[1:])):
                    found.add(f)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                if node.level - 1 > len(here):
                    continue
                base = here[:len(here) - (node.level - 1)]
                parts = base + (node.module.split(".") if node.module else [])
            elif node.module and node.module.split(".")[0] == package:
                parts = node.module.split(".")[1:]
            else:
                continue
            for alias in node.names:
                sub = _module_file(root, parts + [alias.name]) if alias.name != "*" else None
                if sub is not None:
                    found.add(sub)
                elif (f := _module_file(root, parts)) is not None:
                    found.add(f)
    found.discard(relpath)
    return found


def import_closures(direct: dict[str, set[str]]) -> dict[str, set[str]]:
    """Each file -> itself and every package file it imports, directly or through others, from
    each file's direct imports (:func:`imported_files`)."""
    closures: dict[str, set[str]] = {}
    for start in direct:
        seen, todo = {start}, [start]
        while todo:
            for nxt in direct.get(todo.pop(), ()):
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        closures[start] = seen
    return closures


def _drop_caches(root: Path, relpath: str) -> int:
    """Delete numba's cache files of the kernels defined in ``relpath`` (named
    ``__pycache__/<stem>.<function>-<line>.py<ver>.nbi`` / ``.nbc`` beside it); how many went."""
    path = root / relpath
    gone = 0
    for cache in path.parent.glob(f"__pycache__/{path.stem}.*.nb[ic]"):
        try:
            cache.unlink()
            gone += 1
        except OSError:         # another process removed it first, or a read-only install
            pass
    return gone


def invalidate_stale_caches(root: Path, loaded: dict | None = None) -> bool:
    """Delete the numba caches of every module whose import closure changed since they were
    written; True when it deleted some (or had no record to trust).

    numba keys a cached kernel on its own file only ("changes in symbols defined in another file
    are not recognised", numba's notes on caching): a kernel that calls, or reads a constant from,
    another module would keep the old code after that module changes, and a checkout updated by
    ``git pull`` would run stale kernels the same way. So the record beside the caches
    (``root/__pycache__/numba-sources.json``) keeps the content digest of every source file; when
    files change, the caches of each module that imports one of them, directly or through other
    package modules (:func:`import_closures`), go, and only those: an edit recompiles the kernels
    that could have seen it. A ``stat`` digest of the tree (:func:`sources_stamp`) skips the
    reading when nothing was touched. Where the package's folders are not writable numba keeps its
    caches elsewhere and this does nothing.

    ``loaded``: the record of the sources a process imported (:func:`loaded_sources`), compared
    instead of the one on disk. A process that imported the package before its sources changed
    (a ``git pull`` or merge while it runs) compiles from the old sources in its memory and writes
    caches that numba files under unchanged files, after another process may already have recorded
    the new sources; at its exit (:func:`_forget_caches_of_changed_sources`) the caches of every
    module whose closure changed since it imported go the same way."""
    marker = root / "__pycache__" / STAMP_NAME
    stamp = sources_stamp(root)
    try:
        record = loaded if loaded is not None else json.loads(marker.read_text())
        old_digests, old_imports = dict(record["digests"]), dict(record["imports"])
        if record.get("stamp") == stamp:
            return False
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        record, old_digests, old_imports = None, {}, {}
    digests = _content_digests(root)
    direct = {f: set(old_imports[f]) if old_digests.get(f) == d and f in old_imports
              else imported_files(root, f) for f, d in digests.items()}
    if record is None:
        stale = set(digests)        # nothing recorded: no cached kernel can be trusted
        for cache in (*root.rglob("__pycache__/*.nbi"), *root.rglob("__pycache__/*.nbc")):
            try:
                cache.unlink()
            except OSError:
                pass
    else:
        changed = {f for f in digests.keys() | old_digests.keys()
                   if digests.get(f) != old_digests.get(f)}
        closures = import_closures(direct)
        stale = {f for f, closure in closures.items() if closure & changed}
        for f in stale:
            _drop_caches(root, f)
    try:
        marker.parent.mkdir(exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{STAMP_NAME}.", dir=marker.parent)
        try:
            with os.fdopen(fd, "w") as f:
                json.dump({"stamp": stamp, "digests": digests,
                           "imports": {f: sorted(i) for f, i in direct.items()}}, f)
            os.replace(tmp, marker)
        except OSError:                 # a full disk: no half-written file left beside the caches
            os.unlink(tmp)
            raise
    except OSError:
        pass
    return bool(stale)


def loaded_sources(root: Path) -> dict | None:
    """The record beside the caches as it stands (just written or checked by
    :func:`invalidate_stale_caches`): the sources this process imports; None where there is none."""
    try:
        record = json.loads((root / "__pycache__" / STAMP_NAME).read_text())
        return record if {"stamp", "digests", "imports"} <= record.keys() else None
    except (OSError, ValueError, AttributeError):
        return None


def _forget_caches_of_changed_sources(root: Path, loaded: dict | None) -> None:
    """At exit: where the sources changed while this process ran (one ``stat`` pass when they did
    not), drop the caches of the modules whose import closure changed since it imported them
    (:func:`invalidate_stale_caches` with ``loaded``): it may have compiled them from the old code."""
    if loaded is None:
        return
    try:
        if sources_stamp(root) != loaded["stamp"]:
            invalidate_stale_caches(root, loaded)
    except OSError:
        pass


_PACKAGE_ROOT = Path(__file__).resolve().parents[1]
invalidate_stale_caches(_PACKAGE_ROOT)
atexit.register(_forget_caches_of_changed_sources, _PACKAGE_ROOT, loaded_sources(_PACKAGE_ROOT))

#: estimated CPU seconds to compile one kernel function (numba typing plus LLVM at -O3): the "buy"
#: price of the ski-rental rule, per function in a kernel's call closure (the measurement that set
#: it: docs/installation.md, "The first call")
COMPILE_SECONDS_PER_FUNCTION = 1.0

#: "tiered" (default) or "compile"; see the module docstring
_MODE = {"value": os.environ.get("CONTACTLAB_JIT", "tiered").strip().lower() or "tiered"}
if _MODE["value"] not in ("tiered", "compile"):
    raise ValueError(f"CONTACTLAB_JIT={_MODE['value']!r}: use 'tiered' (default) or 'compile'")


def tiered() -> bool:
    """Whether kernels without machine code run interpreted first (see the module docstring)."""
    return _MODE["value"] == "tiered"


@contextmanager
def compile_always():
    """Within the block, a kernel without machine code compiles at its first call (as plain numba)."""
    old = _MODE["value"]
    _MODE["value"] = "compile"
    try:
        yield
    finally:
        _MODE["value"] = old


#: every kernel defined so far (by the modules imported so far)
_KERNELS: list = []


def cached_fraction() -> float:
    """The fraction of the kernels defined so far that have machine code in numba's disk cache
    (any specialisation): near 0 on a fresh checkout, near 1 once the package has run."""
    cached = 0
    for kernel in _KERNELS:
        try:
            cached += os.path.exists(kernel._cache._cache_file._index_path)
        except AttributeError:          # another numba's internals
            return 1.0
    return cached / len(_KERNELS) if _KERNELS else 1.0


class TieredDispatcher(CPUDispatcher):
    """numba's CPU dispatcher, with interpreted calls until compiling pays (module docstring).

    Only the path numba takes when no compiled specialisation matches the arguments
    (``_compile_for_args``) changes: a compiled call, and a call from another compiled kernel
    (which compiles its callees with itself), are numba's own."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        _KERNELS.append(self)
        self._interpreted_seconds = 0.0
        self._budget = None             # seconds of interpreting before compiling; set on first use
        self._not_on_disk = set()       # argument types whose machine code is in no cache

    def enable_caching(self):
        """numba's cache, except that a failed write of it (a full disk, a quota, a read-only
        install: numba raises the OSError out of the compile, so a user's run ended in a traceback)
        leaves the kernel compiled in this process and uncached; numba removes its own temporary
        file. The run goes on and its own outputs report their own write errors."""
        super().enable_caching()
        save = self._cache.save_overload

        def save_overload(sig, data):
            try:
                save(sig, data)
            except OSError:
                pass
        self._cache.save_overload = save_overload

    def get_call_template(self, args, kws):
        """The typing of a call from another compiled kernel: this kernel compiled for the plain
        types of the arguments (``numba.types.unliteral``: int64 for a literal ``2``, bool for
        ``True``), which the call then reaches by conversion. numba otherwise first types a variable
        set from a constant with the constant's own type and compiles the callee, and its callees,
        for that signature too: a second machine code that no call keeps. A kernel that only types
        with a literal argument (a heterogeneous tuple indexed by it) is typed numba's way."""
        plain = tuple(numba.types.unliteral(a) for a in args)
        plain_kws = {k: numba.types.unliteral(v) for k, v in kws.items()}
        if plain == tuple(args) and plain_kws == kws:
            return super().get_call_template(args, kws)
        try:
            return super().get_call_template(plain, plain_kws)
        except numba.core.errors.TypingError:
            return super().get_call_template(args, kws)

    def _closure_size(self) -> int:
        """How many kernel functions compiling this one compiles: itself and every kernel it
        names, through the kernels they name."""
        seen, todo = {id(self)}, [self]
        while todo:
            fn = todo.pop().py_func
            for name in fn.__code__.co_names:
                other = fn.__globals__.get(name)
                if isinstance(other, CPUDispatcher) and id(other) not in seen:
                    seen.add(id(other))
                    todo.append(other)
        return len(seen)

    def _on_disk(self, key: tuple) -> bool:
        """Whether numba's cache index on disk holds machine code for these argument types (the
        lookup numba's own ``Dispatcher.compile`` makes, without loading the code)."""
        try:
            cache = self._cache
            return cache._index_key(key, self.targetctx.codegen()) in cache._cache_file._load_index()
        except Exception:               # another numba's internals: let numba load or compile
            return True

    def _compile_for_args(self, *args, **kws):
        if kws or not tiered():
            return super()._compile_for_args(*args, **kws)
        try:
            key = tuple(numba.types.Omitted(a.value) if isinstance(a, OmittedArg) else self.typeof_pyval(a)
                        for a in args)
        except Exception:               # an argument numba cannot type: numba says so
            return super()._compile_for_args(*args)
        if key not in self._not_on_disk:
            if self._on_disk(key):
                return super()._compile_for_args(*args)     # loading from the cache is cheap
            self._not_on_disk.add(key)
        if self._budget is None:
            self._budget = COMPILE_SECONDS_PER_FUNCTION * self._closure_size()
            self._interpreted_seconds += _RENT.paid(self)       # by earlier processes
        if self._interpreted_seconds >= self._budget:
            return super()._compile_for_args(*args)
        return self._interpret

    def _interpret(self, *args):
        """Run the kernel's Python function (numba calls what ``_compile_for_args`` returns);
        floating-point warnings off, as in compiled code. The rent is counted in CPU seconds, as
        the compile estimate: a loaded machine slows both alike."""
        t0 = time.process_time()
        try:
            with np.errstate(all="ignore"):
                return self.py_func(*(a.value if isinstance(a, OmittedArg) else a for a in args))
        finally:
            self._interpreted_seconds += time.process_time() - t0


class _Rent:
    """Seconds each kernel has run interpreted, summed over processes (``RENT_NAME`` beside the
    caches: the package's ``__pycache__``, or ``NUMBA_CACHE_DIR`` where set), so that a kernel used by many short runs compiles once their sum reaches its estimate
    instead of each run interpreting it anew. Read on first use, merged back at exit; best effort
    (a read-only install keeps the per-process rule)."""

    def __init__(self, path: Path):
        self.path = path
        self.record = None

    @staticmethod
    def key(kernel) -> str:
        return f"{kernel.py_func.__module__}.{kernel.py_func.__qualname__}"

    def paid(self, kernel) -> float:
        if self.record is None:
            try:
                self.record = {k: float(v) for k, v in json.loads(self.path.read_text()).items()}
            except (OSError, ValueError, TypeError, AttributeError):
                self.record = {}
            atexit.register(self.save)
        return self.record.get(self.key(kernel), 0.0)

    def save(self) -> None:
        try:
            try:
                merged = {k: float(v) for k, v in json.loads(self.path.read_text()).items()}
            except (OSError, ValueError, TypeError, AttributeError):
                merged = {}
            for kernel in _KERNELS:
                if kernel._budget is not None and not kernel.signatures:    # still interpreted
                    key = self.key(kernel)
                    merged[key] = max(merged.get(key, 0.0), kernel._interpreted_seconds)
                elif kernel.signatures:
                    merged.pop(self.key(kernel), None)
            fd, tmp = tempfile.mkstemp(prefix=f".{RENT_NAME}.", dir=self.path.parent)
            try:
                with os.fdopen(fd, "w") as f:
                    json.dump(merged, f)
                os.replace(tmp, self.path)
            except OSError:             # a full disk: no half-written file left beside the caches
                os.unlink(tmp)
                raise
        except OSError:
            pass


#: the file beside the package's numba caches that sums each kernel's interpreted seconds
RENT_NAME = "numba-interpreted.json"
_RENT = _Rent(Path(numba.config.CACHE_DIR) / RENT_NAME if numba.config.CACHE_DIR
              else Path(__file__).resolve().parents[1] / "__pycache__" / RENT_NAME)


def _stand_in():
    """The function :func:`_decorator` hands numba to read its normalised options (never called)."""


def _decorator(**options):
    """``numba.njit(cache=True, **options)`` building :class:`TieredDispatcher` instances. numba's
    own decorator normalises the options once (on a stand-in function); each kernel then gets one
    dispatcher."""
    plain = numba.njit(cache=True, nogil=True, fastmath=False, **options)
    if numba.config.DISABLE_JIT:            # njit returns the function itself
        return plain
    targetoptions = dict(plain(_stand_in).targetoptions)

    def wrap(func):
        kernel = TieredDispatcher(func, locals={}, targetoptions=dict(targetoptions))
        kernel.enable_caching()
        return kernel
    return wrap


jit = _decorator()
jit_inline = _decorator(inline="always")
jit_noraise = _decorator(error_model="numpy")

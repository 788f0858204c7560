"""kernels/_jit.py: a module's numba caches are dropped when any file in its import closure changes
(numba itself only notices a change of the kernel's own file), and only those modules' caches."""
import os

from contactlab.kernels._jit import (STAMP_NAME, _forget_caches_of_changed_sources, import_closures, imported_files,
                                    invalidate_stale_caches, loaded_sources)


def _caches(root):
    return sorted(p.name for p in root.rglob("__pycache__/*.nb[ic]"))


def _cache(root, relpath, function):
    path = root / relpath
    folder = path.parent / "__pycache__"
    folder.mkdir(exist_ok=True)
    (folder / f"{path.stem}.{function}-1.py311.nbi").write_bytes(b"index")
    (folder / f"{path.stem}.{function}-1.py311.1.nbc").write_bytes(b"code")


def _package(tmp_path):
    """pkg/kernels/step.py -> pkg/kernels/inner.py -> pkg/helpers.py (transitively); pkg/other.py alone."""
    root = tmp_path / "pkg"
    (root / "kernels").mkdir(parents=True)
    (root / "__init__.py").write_text("from .kernels import step\n")
    (root / "kernels" / "__init__.py").write_text("")
    (root / "kernels" / "step.py").write_text("from .inner import f\ndef step(): return f()\n")
    (root / "kernels" / "inner.py").write_text("def f():\n    from pkg.helpers import X\n    return X\n")
    (root / "helpers.py").write_text("X = 1\n")
    (root / "other.py").write_text("import numpy\nY = 2\n")
    return root


def test_imports_resolve_relative_absolute_and_function_level(tmp_path):
    root = _package(tmp_path)
    assert imported_files(root, "kernels/step.py") == {"kernels/inner.py"}
    assert imported_files(root, "kernels/inner.py") == {"helpers.py"}       # inside a function, absolute
    assert imported_files(root, "__init__.py") == {"kernels/step.py"}       # a submodule named in from-import
    assert imported_files(root, "other.py") == set()                        # outside the package
    direct = {f: imported_files(root, f) for f in ("kernels/step.py", "kernels/inner.py", "helpers.py")}
    assert import_closures(direct)["kernels/step.py"] == {"kernels/step.py", "kernels/inner.py", "helpers.py"}


def test_caches_go_only_where_the_import_closure_changed(tmp_path):
    root = _package(tmp_path)
    _cache(root, "kernels/step.py", "step")
    _cache(root, "other.py", "g")
    # first check: no record yet, so nothing cached can be trusted
    assert invalidate_stale_caches(root) and _caches(root) == []
    assert (root / "__pycache__" / STAMP_NAME).is_file()
    # caches written after the record stay while no source changes
    _cache(root, "kernels/step.py", "step")
    _cache(root, "other.py", "g")
    assert not invalidate_stale_caches(root) and len(_caches(root)) == 4
    # a file two imports away from the kernel changes (numba would keep the kernel's cache): the
    # kernel's caches go, the unrelated module's stay
    (root / "helpers.py").write_text("X = 2  # changed\n")
    assert invalidate_stale_caches(root)
    assert _caches(root) == ["other.g-1.py311.1.nbc", "other.g-1.py311.nbi"]
    assert not invalidate_stale_caches(root)
    # a file's time alone (a checkout rewrote it, same bytes) leaves every cache
    _cache(root, "kernels/step.py", "step")
    st = os.stat(root / "helpers.py")
    os.utime(root / "helpers.py", ns=(st.st_atime_ns, st.st_mtime_ns + 10 ** 9))
    assert not invalidate_stale_caches(root) and len(_caches(root)) == 4
    # a new import is followed: other.py now reads helpers, and helpers changes again
    (root / "other.py").write_text("from .helpers import X\nY = X\n")
    invalidate_stale_caches(root)
    _cache(root, "kernels/step.py", "step")
    _cache(root, "other.py", "g")
    (root / "helpers.py").write_text("X = 3\n")
    assert invalidate_stale_caches(root) and _caches(root) == []


def test_a_removed_module_drops_its_importers_caches(tmp_path):
    root = _package(tmp_path)
    invalidate_stale_caches(root)
    _cache(root, "kernels/step.py", "step")
    _cache(root, "other.py", "g")
    (root / "kernels" / "inner.py").unlink()
    assert invalidate_stale_caches(root)
    assert _caches(root) == ["other.g-1.py311.1.nbc", "other.g-1.py311.nbi"]


def test_a_process_that_ran_while_sources_changed_drops_what_it_may_have_compiled_from_the_old_ones(tmp_path):
    """Process A imports; the sources change (a merge) and process B records them (dropping the stale
    caches); A then compiles step from the old code in its memory and numba files the cache under
    step.py, which did not change: B's record would trust it. At A's exit the caches of the modules
    whose closure changed since A imported go; the unrelated module's stay. A process during which
    nothing changed drops nothing at exit."""
    root = _package(tmp_path)
    invalidate_stale_caches(root)
    loaded = loaded_sources(root)                       # process A's sources
    _cache(root, "other.py", "g")
    _forget_caches_of_changed_sources(root, loaded)     # nothing changed: nothing goes
    assert len(_caches(root)) == 2
    (root / "helpers.py").write_text("X = 2  # merged while A runs\n")
    invalidate_stale_caches(root)                       # process B starts: records the new sources
    _cache(root, "kernels/step.py", "step")             # A compiles step from the old helpers
    assert not invalidate_stale_caches(root) and len(_caches(root)) == 4   # the record now trusts it
    _forget_caches_of_changed_sources(root, loaded)     # A exits
    assert _caches(root) == ["other.g-1.py311.1.nbc", "other.g-1.py311.nbi"]
    assert not invalidate_stale_caches(root)            # and the record is the current sources'

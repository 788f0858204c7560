"""kernels/_jit.py: numba's caches are dropped when any source file of the package changes (numba
itself only notices a change of the kernel's own file)."""
import os

from contactlab.kernels._jit import STAMP_NAME, invalidate_stale_caches, sources_stamp


def _caches(root):
    return sorted(p.name for p in root.rglob("__pycache__/*.nb[ic]"))


def test_caches_go_when_another_source_file_changes(tmp_path):
    root = tmp_path / "pkg"
    (root / "kernels" / "__pycache__").mkdir(parents=True)
    (root / "kernels" / "step.py").write_text("def step(): return helper()\n")
    (root / "helpers.py").write_text("X = 1\n")
    cache = root / "kernels" / "__pycache__"
    (cache / "step.step-1.py311.nbi").write_bytes(b"index")
    (cache / "step.step-1.py311.1.nbc").write_bytes(b"code")
    # first import: no stamp yet, so nothing cached can be trusted
    assert invalidate_stale_caches(root) and _caches(root) == []
    assert (root / "__pycache__" / STAMP_NAME).read_text() == sources_stamp(root)
    # caches written after the stamp stay while no source changes
    (cache / "step.step-1.py311.nbi").write_bytes(b"index")
    (cache / "step.step-1.py311.1.nbc").write_bytes(b"code")
    assert not invalidate_stale_caches(root) and len(_caches(root)) == 2
    # another file than the kernel's changes (numba would keep the kernel's cache): all go
    (root / "helpers.py").write_text("X = 2  # changed\n")
    assert invalidate_stale_caches(root) and _caches(root) == []
    assert not invalidate_stale_caches(root)
    # a file's time alone (a checkout rewrote it) counts too
    st = os.stat(root / "helpers.py")
    os.utime(root / "helpers.py", ns=(st.st_atime_ns, st.st_mtime_ns + 10 ** 9))
    (cache / "x.nbi").write_bytes(b"index")
    assert invalidate_stale_caches(root) and _caches(root) == []

"""A full disk while numba writes its cache (issue 40, found by the campaign of docs/robustness.md):
on a cold cache every first call of a kernel compiles it and numba writes the machine code beside
the sources; numba raised that write's OSError (EFBIG, ENOSPC) out of the compile, so `simulate
--out` on a full disk ended in a traceback from the collision kernel before its own one-line error.
Now the kernel runs compiled and uncached, and no temporary file is left beside the caches."""
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

KERNEL = textwrap.dedent('''
    import numpy as np
    from contactlab.kernels._jit import jit

    @jit
    def total(x):
        s = 0.0
        for i in range(x.shape[0]):
            for j in range(x.shape[1]):
                s += x[i, j] * (i + 1) - np.sqrt(abs(x[i, j]) + j)
        return s
''')


def test_a_kernel_compiles_and_runs_when_its_cache_cannot_be_written(tmp_path):
    (tmp_path / "fullkernel.py").write_text(KERNEL)
    cache = tmp_path / "cache"
    cache.mkdir()
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT / 'src'}", "NUMBA_CACHE_DIR": str(cache),
           "CONTACTLAB_JIT": "compile"}

    def cap():      # files of 2 KiB at most; a write past that fails with EFBIG, as on a full disk
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        import resource
        resource.setrlimit(resource.RLIMIT_FSIZE, (2048, 2048))
    code = "import numpy as np, fullkernel; print(fullkernel.total(np.ones((3, 4))))"
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=tmp_path,
                       preexec_fn=cap, timeout=600)
    assert p.returncode == 0, p.stderr[-2000:]
    expect = sum(1.0 * (i + 1) - (1.0 + j) ** 0.5 for i in range(3) for j in range(4))
    assert abs(float(p.stdout) - expect) < 1e-12
    left = [q.name for q in cache.rglob("*") if ".tmp." in q.name or q.name.startswith(".numba")]
    assert left == []

"""kernels/_jit.py tiered execution: a kernel without machine code (none in the process, none in
numba's disk cache) runs as its own Python function until the time spent interpreting it reaches
the estimated cost of compiling it (the ski-rental rule); then it compiles. Each case runs in a
fresh process on an empty ``NUMBA_CACHE_DIR`` (a cold cache), against compiled answers."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import contactlab as cl
from contactlab.problems import generators as gen

PROBE = r"""
import json, os, sys
import numpy as np
import contactlab as cl
from contactlab.kernels import _jit
from contactlab.kernels.lemke import lemke_reduced_certified
from contactlab.problems import generators as gen
if len(sys.argv) > 1:
    _jit.COMPILE_SECONDS_PER_FUNCTION = float(sys.argv[1])
rng = np.random.default_rng(5)
out = {}
for i, p in enumerate((gen.random_p_matrix(6, rng), gen.random_spd(5, rng))):
    s = cl.solve(p, method="lemke")
    out[f"lemke-{i}"] = [s.status.name, s.pivots, s.z.tolist()]
out["compiled"] = len(lemke_reduced_certified.signatures)
out["cache_files"] = sum(len(f) for _, _, f in os.walk(os.environ["NUMBA_CACHE_DIR"]))
print(json.dumps(out))
"""


#: a one-function kernel module (compiles in well under a second): the compile paths' cases
SMALL = """
from contactlab.kernels._jit import jit

@jit
def dot(a, b):
    s = 0.0
    for i in range(a.shape[0]):
        s += a[i] * b[i]
    return s
"""

SMALL_PROBE = r"""
import json, os, sys
import numpy as np
from contactlab.kernels import _jit
_jit.COMPILE_SECONDS_PER_FUNCTION = float(sys.argv[1])
sys.path.insert(0, sys.argv[2])
from small_kernel import dot
a = np.arange(5.0)
values = [dot(a, a) for _ in range(int(sys.argv[3]))]
print(json.dumps({"values": values, "compiled": len(dot.signatures),
                  "interpreted_s": dot._interpreted_seconds,
                  "cache_files": sum(n.endswith((".nbi", ".nbc")) for _, _, f in os.walk(os.environ["NUMBA_CACHE_DIR"])
                                     for n in f)}))
"""


def _run(tmp_path, jit: str, *argv, probe=PROBE) -> dict:
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"), CONTACTLAB_JIT=jit)
    r = subprocess.run([sys.executable, "-c", probe, *argv], capture_output=True, text=True, env=env, timeout=900)
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def _small(tmp_path, jit: str, estimate: float, calls: int) -> dict:
    """The small kernel called ``calls`` times in a fresh process (cache and summed interpreted
    time in ``tmp_path/cache``)."""
    tmp_path.mkdir(exist_ok=True)
    (tmp_path / "small_kernel.py").write_text(SMALL)
    return _run(tmp_path, jit, str(estimate), str(tmp_path), str(calls), probe=SMALL_PROBE)


def _reference():
    rng = np.random.default_rng(5)
    return [cl.solve(p, method="lemke") for p in (gen.random_p_matrix(6, rng), gen.random_spd(5, rng))]


def test_cold_first_solve_runs_interpreted_and_compiles_nothing(tmp_path):
    out = _run(tmp_path, "tiered")
    assert out["compiled"] == 0 and out["cache_files"] == 0       # nothing compiled, nothing written
    for i, ref in enumerate(_reference()):
        status, pivots, z = out[f"lemke-{i}"]
        assert status == "SOLVED" and pivots == ref.pivots
        np.testing.assert_allclose(z, ref.z, rtol=1e-12, atol=1e-14)


def test_a_kernel_compiles_once_interpreting_it_cost_its_compile_estimate(tmp_path):
    never = _small(tmp_path, "tiered", 1e9, 50)          # interpreting never reaches the estimate
    assert never["compiled"] == 0 and never["cache_files"] == 0 and never["values"] == [30.0] * 50
    at_once = _small(tmp_path / "other", "tiered", 0.0, 3)   # an estimate of 0 s: the first call compiles
    assert at_once["compiled"] == 1 and at_once["cache_files"] > 0 and at_once["interpreted_s"] == 0.0


def test_interpreted_time_is_summed_over_processes(tmp_path):
    """Many short runs: each interprets for a while, and the sum reaches the estimate, not each run's."""
    runs = [_small(tmp_path, "tiered", 1e9, 200) for _ in range(2)]
    assert runs[1]["interpreted_s"] > runs[0]["interpreted_s"] > 0       # the second started from the first's sum
    assert runs[1]["compiled"] == 0
    then = _small(tmp_path, "tiered", runs[1]["interpreted_s"] * 0.999, 1)   # the sum now exceeds the estimate
    assert then["compiled"] == 1 and then["values"] == [30.0]


def test_compile_mode_compiles_at_the_first_call_and_tiered_then_loads_the_cache(tmp_path):
    first = _small(tmp_path, "compile", 1e9, 1)
    assert first["compiled"] == 1 and first["cache_files"] > 0 and first["values"] == [30.0]
    again = _small(tmp_path, "tiered", 1e9, 1)           # machine code on disk: loaded, not interpreted
    assert again["compiled"] == 1 and again["interpreted_s"] == 0.0


def test_an_unknown_mode_is_refused_by_name(tmp_path):
    env = dict(os.environ, CONTACTLAB_JIT="fast")
    r = subprocess.run([sys.executable, "-c", "import contactlab"], capture_output=True, text=True, env=env)
    assert r.returncode != 0 and "CONTACTLAB_JIT='fast'" in r.stderr


@pytest.mark.parametrize("mode", ["tiered", "compile"])
def test_compile_always_restores_the_mode(mode, monkeypatch):
    from contactlab.kernels import _jit
    monkeypatch.setitem(_jit._MODE, "value", mode)
    with _jit.compile_always():
        assert not _jit.tiered()
    assert _jit.tiered() == (mode == "tiered")

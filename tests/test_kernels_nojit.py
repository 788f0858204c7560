"""The numba kernels also run as plain Python (NUMBA_DISABLE_JIT=1) and give the same answers:
they stay readable, debuggable reference code (DESIGN.md convention 7)."""
import json
import os
import subprocess
import sys

import numpy as np

import contactlab as cl
from contactlab.problems import generators as gen

SCRIPT = r"""
import json, numpy as np, contactlab as cl
from contactlab.problems import generators as gen
rng = np.random.default_rng(3)
out = {}
p = gen.random_p_matrix(7, rng)
for basis in ("reduced", "tableau"):
    s = cl.solve(p, method="lemke", basis=basis)
    out["lemke-" + basis] = [s.pivots, s.z.tolist()]
s = cl.solve(gen.random_spd(7, rng), method="dantzig"); out["dantzig"] = [s.pivots, s.z.tolist()]
s = cl.solve(gen.box_stack_factored(2, rng), method="ppm"); out["ppm"] = [s.pivots, s.z.tolist()]
s = cl.solve(gen.random_spd(6, rng), method="enumerate"); out["enumerate"] = [s.iterations, s.z.tolist()]
print(json.dumps(out))
"""


def _run(disable_jit: bool) -> dict:
    env = dict(os.environ, NUMBA_DISABLE_JIT="1" if disable_jit else "0")
    res = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout.strip().splitlines()[-1])


def test_pure_python_kernels_match_jit():
    plain, jitted = _run(True), _run(False)
    assert plain.keys() == jitted.keys()
    for key in plain:
        assert plain[key][0] == jitted[key][0], key
        np.testing.assert_allclose(plain[key][1], jitted[key][1], atol=1e-12, err_msg=key)

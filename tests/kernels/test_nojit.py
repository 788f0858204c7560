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
# adversarial: integer matrices outside P/PSD (singular bordered blocks, zero pivots), rank-deficient
# PSD contact LCPs with |z| ~ 1e6, singular supports, ppm with CFM and with a zero row
for seed in range(12):
    r = np.random.default_rng(100 + seed)
    n = int(r.integers(2, 6))
    P = cl.LCP(r.integers(-3, 4, (n, n)).astype(float), r.integers(-3, 4, n).astype(float))
    for m in ("dantzig", "lemke", "enumerate"):
        s = cl.solve(P, method=m); out[f"{m}-int-{seed}"] = [s.status.name, s.pivots, s.z.tolist()]
    N = r.integers(-2, 3, (n + 3, 2)).astype(float)
    C = cl.LCP(N @ N.T, N @ (r.standard_normal(2) * 1e6))
    s = cl.solve(C, method="dantzig"); out[f"dantzig-contact-{seed}"] = [s.status.name, s.pivots, s.z.tolist()]
s = cl.solve(cl.LCP([[0.0, 1.0], [0.0, 0.0]], [-1.0, 0.0]), method="enumerate"); out["enum-singular"] = [s.status.name, 0, s.z.tolist()]
F = cl.FactoredLCP(r.standard_normal((9, 3)), np.eye(3), r.standard_normal(3), offset=np.abs(r.standard_normal(9)), cfm=1e-2)
s = cl.solve(F, method="ppm"); out["ppm-cfm"] = [s.status.name, s.pivots, s.z.tolist()]
Z = cl.FactoredLCP(np.array([[1.0, 0.0], [0.0, 0.0]]), np.eye(2), [1.0, 0.0], offset=[0.0, -1.0])
s = cl.solve(Z, method="ppm"); out["ppm-zero-row"] = [s.status.name, s.pivots, s.z.tolist()]
print(json.dumps(out))
"""


def _run(disable_jit: bool) -> dict:
    env = dict(os.environ, NUMBA_DISABLE_JIT="1" if disable_jit else "0")
    res = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout.strip().splitlines()[-1])


def test_pure_python_kernels_match_jit():
    """Same statuses, pivot counts and answers with and without numba, adversarial cases included
    (an uncaught ZeroDivisionError in either run fails the subprocess)."""
    plain, jitted = _run(True), _run(False)
    assert plain.keys() == jitted.keys()
    for key in plain:
        assert plain[key][:-1] == jitted[key][:-1], key
        np.testing.assert_allclose(plain[key][-1], jitted[key][-1], atol=1e-12, err_msg=key)
    assert plain["enum-singular"][0] == "SOLVED" and plain["ppm-zero-row"][0] == "NO_SOLUTION"

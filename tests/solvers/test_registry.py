"""Every registered solver on every matrix class it claims: certified, and equal to the exhaustive
reference where the solution is unique (DESIGN.md convention 7)."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import contactlab as cl
from contactlab.solvers.registry import MATRIX_CLASSES

from tests.problems import make

PAIRS = [(name, c) for name, spec in cl.available_solvers().items() for c in spec.classes]
UNIQUE_Z = {"spd", "p", "boxed", "boxed-coupled"}   # unique solution z
UNIQUE_W = {"psd", "factored"}                       # symmetric PSD: w = Mz + q is unique


def test_every_claimed_class_is_known():
    for name, spec in cl.available_solvers().items():
        assert set(spec.classes) <= set(MATRIX_CLASSES), name


def test_core_methods_claim_their_classes():
    names = cl.available_solvers()
    assert {"lemke", "dantzig", "ppm", "enumerate"} <= set(names)
    assert "friction" in names["lemke"].classes
    assert "factored" in names["ppm"].classes


@pytest.mark.parametrize("method,cls", PAIRS)
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1))
def test_certified_and_matches_reference(method, cls, seed):
    problem = make(cls, np.random.default_rng(seed))
    sol = cl.solve(problem, method=method)
    assert sol.success, (sol, sol.info.get("claimed_status"))
    scale = problem.scale()
    if cls == "boxed-coupled":   # no exhaustive reference: the residual, recomputed from z with bounds
        assert sol.residual <= 1e-9 * scale   # mu z_n of that z, at a tighter level than solve() certifies
        return
    ref_problem = problem.to_lcp() if cls == "factored" else problem
    ref = cl.solve(ref_problem, method="lemke" if method == "enumerate" else "enumerate")
    assert ref.success
    if cls in UNIQUE_Z:
        np.testing.assert_allclose(sol.z, ref.z, atol=1e-7 * scale)
    elif cls in UNIQUE_W:
        np.testing.assert_allclose(sol.w, ref.w, atol=1e-7 * scale)

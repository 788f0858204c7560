"""Certificates only from finite numbers (issue 40): a SOLVED status, a relative residual or a
Farkas vector must never come out of an overflow. The LCP of 1e308 entries below is infeasible
(y = (1, 1) is a Farkas vector: M'y = 0, q'y < 0), so no method may say SOLVED on it; dantzig and
enumerate used to, with residual inf and relative residual 0 (w_i = -inf read in units of t_i = inf)."""
import numpy as np
import pytest

import contactlab as cl
from contactlab.kernels.residual import lcp_certify_dense, lcp_relative_kernel
from contactlab.problems.residual import certified_error
from contactlab.solvers.certificates import check_farkas

BIG = 1e308
M_INF = np.array([[BIG, -BIG], [-BIG, BIG]])
Q_INF = np.array([-BIG, -BIG])


@pytest.mark.parametrize("method", ["dantzig", "enumerate", "lemke"])
def test_no_method_certifies_an_infeasible_lcp_of_huge_entries(method):
    with np.errstate(all="ignore"):
        sol = cl.solve(cl.LCP(M_INF, Q_INF), method=method)
    assert sol.status != cl.Status.SOLVED and not sol.success
    # the Farkas vector (1, 1) proves infeasibility; a NO_SOLUTION claim must carry a checked one
    if sol.status == cl.Status.NO_SOLUTION:
        assert sol.info["certificate_check"] == "Farkas vector checked"


def test_the_certify_kernel_gives_inf_for_an_overflowed_w_or_term():
    z = np.array([1.0, 0.0])
    w, t = np.empty(2), np.empty(2)
    with np.errstate(all="ignore"):
        out = lcp_certify_dense(M_INF, Q_INF, z, w, t, 1e-12)
    assert w[1] == -np.inf and out == (np.inf,) * 6
    # w finite but a term overflowed (cancellation of infinities): no residual from it either
    M = np.array([[BIG, BIG], [1.0, 1.0]])
    z = np.array([1.5, 1.5])
    with np.errstate(all="ignore"):
        out = lcp_certify_dense(M, np.array([0.0, -3.0]), z, np.empty(2), np.empty(2), 1e-12)
    assert np.isinf(out[3])
    r = lcp_relative_kernel(np.ones(2), np.zeros(2), np.zeros(2), np.array([np.inf, 1.0]), -1.0)
    assert r == (np.inf, np.inf, np.inf)


def test_certified_error_never_drops_a_nan():
    assert certified_error(0.1, np.nan) == np.inf
    assert certified_error(np.nan, 0.1) == np.inf
    assert certified_error(0.1, 0.2) == 0.2


def test_huge_but_representable_data_still_certify():
    """Scale invariance kept: M = 1e300 I, q = -1e300 has z = 1, w = 0 exactly."""
    n = 3
    sol = cl.solve(cl.LCP(1e300 * np.eye(n), -1e300 * np.ones(n)), "lemke")
    assert sol.status == cl.Status.SOLVED and np.allclose(sol.z, 1.0)


def test_farkas_check_is_computed_without_overflow():
    # q'y = -1e308 - 1e308 + 3e308 = +1e308 > 0: not a certificate, though a naive q @ y overflows
    q = np.array([-BIG, -BIG, BIG, BIG, BIG])
    ok, detail = check_farkas(-np.eye(5), q, np.ones(5))
    assert not ok and detail["why"] == "q'y < 0 fails"
    # the true certificate of the huge LCP is accepted (scaled check), its radius is inf (M'y = 0)
    ok, detail = check_farkas(M_INF, Q_INF, np.ones(2))
    assert ok and detail["radius"] == np.inf


def test_cli_does_not_exit_0_on_the_huge_lcp(tmp_path):
    from typer.testing import CliRunner

    from contactlab.cli import app
    path = tmp_path / "huge.npz"
    cl.save(cl.LCP(M_INF, Q_INF), path)
    for method in ("dantzig", "enumerate"):
        with np.errstate(all="ignore"):
            res = CliRunner().invoke(app, ["solve", str(path), "--method", method, "--json"])
        assert res.exit_code == 1, (method, res.output)
        assert '"status": "NUMERICAL_FAILURE"' in res.output

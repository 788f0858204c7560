"""newton-ac / newton-fb in global form (form='global'): Newton on (v, r) with M and H, never W.
Checked against the condensed (local-form) answer, the global equations themselves, and a
simulator step exported in global form."""
import numpy as np
import pytest
import scipy.sparse as sp

import contactlab as cl
from contactlab.problems.friction_contact import from_system


def _spd(rng, n):
    Q, _ = np.linalg.qr(rng.normal(size=(n, n)))
    return Q @ np.diag(np.linspace(1.0, 10.0, n)) @ Q.T


@pytest.mark.parametrize("method", ["newton-ac", "newton-fb"])
def test_global_form_matches_the_condensed_answer(method):
    rng = np.random.default_rng(5)
    for t in range(8):
        ndof = int(rng.integers(6, 30))
        nc = int(rng.integers(1, ndof // 3 + 1))
        M = sp.csr_matrix(_spd(rng, ndof))
        H = sp.random(ndof, 3 * nc, density=0.3, random_state=t, format="csr") + sp.csr_matrix(np.eye(ndof, 3 * nc))
        f = rng.normal(size=ndof)
        b = rng.normal(size=3 * nc)
        b[::3] = -1.0
        g = cl.GlobalFrictionContact(M, H, f, b, rng.uniform(0.1, 0.8, nc))
        loc = cl.solve(g, method)
        glo = cl.solve(g, method, form="global")
        assert glo.status == cl.Status.SOLVED and glo.info["form"] == "global"
        np.testing.assert_allclose(glo.z, loc.z, atol=1e-7 * (1 + np.abs(loc.z).max()))
        # the global equations hold: M v = H r + q, u = H' v + b
        np.testing.assert_allclose(M @ glo.x, H @ glo.z + f, atol=1e-9 * (1 + np.abs(f).max()))
        np.testing.assert_allclose(glo.w, H.T @ glo.x + b, atol=1e-9)


def test_global_form_on_a_simulated_stack_step():
    """A resting 3-box stack, the step's problem in global form (M, H = G'): the global Newton and the
    condensed one find impulses that carry the same weight."""
    from contactlab.scenarios import make_scene
    from contactlab.sim import Simulator
    sim = Simulator(make_scene("stack"), "stewart-trinkle")
    sim.run(3 * sim.h)
    g = from_system(sim.last_system, "global")
    glo = cl.solve(g, "newton-ac", form="global")
    loc = cl.solve(g, "newton-ac")
    assert glo.status == cl.Status.SOLVED and loc.status == cl.Status.SOLVED
    assert np.sum(glo.z[::3]) == pytest.approx(np.sum(loc.z[::3]), rel=1e-6)
    assert np.all(glo.z[::3] >= -1e-12)


def test_global_form_on_a_local_problem_is_an_error():
    p = cl.FrictionContact(np.eye(3), [-1.0, 0.1, 0.0], [0.5])
    with pytest.raises(cl.ParamError, match="GlobalFrictionContact"):
        cl.solve(p, "newton-ac", form="global")
    with pytest.raises(cl.ParamError, match="form"):
        cl.solve(p, "newton-ac", form="globl")

"""The Stewart-Trinkle step of jointed scenes in one compiled call (sim/st_stages.py, sim/st_kernels.py
st_step, its LCP part st_mixed_step) against the general stages, field by field, on the Barrett grasp and on a pendulum chain that swings
onto a floor; and the answer it applies checked as an LCP solution from the step's system, formed
here with dense numpy algebra (arechavaleta eq. 13-15: the joints' Schur complement, the pyramid's
coupling rows), not with the library's kernels."""
import numpy as np
import pytest

import contactlab.sim.st_kernels as SK
import contactlab.sim.st_stages as SS
from contactlab.mechanics.scene import Body, Shape
from contactlab.scenarios import make_scene
from contactlab.sim import Simulator


def _barrett():
    sc = make_scene("barrett-grasp", material="rubber")
    return Simulator(sc, None, None, controllers=sc.controllers)


def _chain():
    sc = make_scene("pendulum-chain", links=3, length=0.4, height=0.9, start_deg=-10.0)
    sc.bodies.append(Body("floor", kind="fixed", shapes=[Shape("halfspace", normal=(0, 0, 1), offset=0.0)]))
    sc.mu = 0.6
    return Simulator(sc, "stewart-trinkle", "lemke")


def _general(monkeypatch, make):
    with monkeypatch.context() as m:
        m.setattr(SS.CompiledSTStages, "plan", classmethod(lambda cls, sim, state: None))
        sim = make()
    assert type(sim.stages) is not SS.CompiledSTStages
    return sim


#: the position of st_step's ``kin`` argument (the kinematic bodies' blocks)
KIN = SK.st_step.py_func.__code__.co_varnames.index("kin")


def _count_calls(monkeypatch, eliminate=True):
    """Count the call's taken and declined steps; ``eliminate`` False: the kinematic bodies' rows
    kept in the call's problem (its ``kin`` argument empty), the general stages' formulation."""
    seen = {"taken": 0, "declined": 0}
    kernel = SK.st_step

    def call(*args):
        if not eliminate:
            args = args[:KIN] + (np.zeros(0, dtype=np.int64),) + args[KIN + 1:]
        out = kernel(*args)
        seen["taken" if out[0] != SK.DECLINED else "declined"] += 1
        return out

    monkeypatch.setattr(SK, "st_step", call)
    return seen


def _csr(H) -> tuple:
    return (H.indptr.astype(np.int64), H.indices.astype(np.int64), H.data.astype(np.float64))


def _mixed_args(sim, sys, kin):
    """st_mixed_step's arguments for the step's system (as st_step passes its terms), without a warm basis."""
    st = sim.stages
    f = np.float64
    return (*_csr(sys.J), sys.j_rhs.astype(f), *_csr(sys.L), sys.l_bias.astype(f), *_csr(sys.N), sys.n_bias.astype(f),
            *_csr(sys.S), sys.T.data.astype(f), *_csr(sys.A), sys.a_target.astype(f), sys.a_max.astype(f),
            np.ascontiguousarray(sys.mu, dtype=f), int(sys.d), float(sys.cfm + sim.model_options.cfm), sys.W_blocks,
            *_csr(sys.Minv), sys.v_free(), int(sys.ndof), st.max_pivots, st.pivot_tol, st.restarts, st.tol,
            st.threshold, kin, np.zeros(0))


@pytest.mark.parametrize("make,steps,min_contacts", [(_barrett, 160, 4), (_chain, 120, 2)])
def test_the_compiled_step_gives_the_general_stages_answer(monkeypatch, make, steps, min_contacts):
    # field by field: the call on the general stages' problem (the kinematic palm's rows kept); the
    # palm eliminated is the next test's
    seen = _count_calls(monkeypatch, eliminate=False)
    fast = make()
    assert type(fast.stages) is SS.CompiledSTStages
    slow = _general(monkeypatch, make)
    most = posed = 0
    for k in range(steps):
        a, b = fast.step(), slow.step()
        posed += a.lcp_size > 0
        assert (a.status, a.success, a.rescued, a.contacts, a.lcp_size) == \
            (b.status, b.success, b.rescued, b.contacts, b.lcp_size), k
        assert a.success
        assert abs(a.energy - b.energy) <= 1e-9 * max(1.0, abs(b.energy))
        assert abs(a.joint_error - b.joint_error) <= 1e-9
        ra, rb = fast.data.result, slow.data.result
        for field in ("v_next", "normal", "tangent", "joint", "limit", "motor"):
            x, y = np.asarray(getattr(ra, field)), np.asarray(getattr(rb, field))
            assert x.shape == y.shape, field
            assert np.allclose(x, y, rtol=1e-7, atol=1e-9 * max(1.0, np.abs(y).max(initial=0.0))), (k, field)
        assert np.array_equal(ra.modes, rb.modes), k
        assert np.allclose(ra.info["lambda"], rb.info["lambda"], rtol=1e-7, atol=1e-10)
        for arr in ("position", "quaternion", "linear_velocity", "angular_velocity"):
            assert np.allclose(getattr(fast.data, arr), getattr(slow.data, arr), rtol=0, atol=1e-9), (k, arr)
        most = max(most, a.contacts)
    assert most >= min_contacts                     # the scenes touch: contacts, friction, limits in play
    assert posed >= steps // 2 and seen["taken"] >= 0.9 * posed     # the call took the steps with a problem
    # the problem assembled when read is the one the general stages solved
    pa, pb = fast.last_problem, slow.last_problem
    assert type(pa) is type(pb) and pa.n == pb.n


def _independent_lcp(sys, cfm):
    """(Mlcp, q, H, v0, Jd, W) of the step's Stewart-Trinkle problem with the joints eliminated, from
    the system's rows as dense arrays: y = [c_l, c_n, beta, lambda, u, s]."""
    dense = lambda A: A.toarray()
    W = dense(sys.Minv)
    Jd, L, N, S, T, A = (dense(x) for x in (sys.J, sys.L, sys.N, sys.S, sys.T, sys.A))
    nc, d, nl, nm = sys.nc, sys.d, sys.nl, sys.nm
    ang = 2 * np.pi * np.arange(d) / d
    D = np.zeros((nc * d, sys.ndof))
    for i in range(nc):
        for k in range(d):
            D[i * d + k] = np.cos(ang[k]) * S[i] + np.sin(ang[k]) * T[i]
    H = np.vstack([L, N, D, np.zeros((nc, sys.ndof)), A, np.zeros((nm, sys.ndof))])
    n = H.shape[0]
    K = np.zeros((n, n))
    ob, ol, ou = nl + nc, nl + nc + nc * d, nl + nc + nc * d + nc
    for i in range(nc):
        K[ob + i * d: ob + (i + 1) * d, ol + i] = 1.0        # D v + E lambda
        K[ol + i, ob + i * d: ob + (i + 1) * d] = -1.0       # mu c_n - E' beta
        K[ol + i, nl + i] = sys.mu[i]
    for j in range(nm):
        K[ou + j, ou + nm + j], K[ou + nm + j, ou + j] = 1.0, -1.0
    K[np.arange(nl, ou), np.arange(nl, ou)] += cfm
    c = np.concatenate([sys.l_bias, sys.n_bias, np.zeros(nc * d + nc), -sys.a_target, 2 * sys.a_max])
    v0 = sys.v + sys.h * W @ sys.f - W @ A.T @ sys.a_max
    JWJ = Jd @ W @ Jd.T
    P = H @ W @ Jd.T @ np.linalg.inv(JWJ)
    Mlcp = H @ W @ H.T + K - P @ Jd @ W @ H.T
    q = H @ v0 + c - P @ (Jd @ v0 - sys.j_rhs)
    return Mlcp, q, H, v0, Jd, W


def _assert_solves_the_step_lcp(sim, sol):
    """The applied answer ``sol`` solves the step's LCP formed independently (:func:`_independent_lcp`):
    z >= 0, w = M z + q >= 0, z w = 0 to 1e-6 of the problem's scale; v+ = v0 + W (H' z + J' x) satisfies
    the joints' rows J v+ = j_rhs and is the applied velocity."""
    sys = sim.last_system
    Mlcp, q, H, v0, Jd, W = _independent_lcp(sys, sys.cfm + sim.model_options.cfm)
    z = sol.z
    w = Mlcp @ z + q
    scale = np.abs(Mlcp).max() * max(np.abs(z).max(), 1e-300) + np.abs(q).max()
    assert z.min() >= -1e-9 * max(np.abs(z).max(), 1.0)
    assert w.min() >= -1e-6 * scale
    assert np.abs(z * w).max() <= 1e-6 * scale * max(np.abs(z).max(), 1e-300)
    v = v0 + W @ (H.T @ z + Jd.T @ sol.x)
    assert np.allclose(Jd @ v, sys.j_rhs, atol=1e-7 * max(1.0, np.abs(v).max()))
    assert np.allclose(v, sim.data.result.v_next, atol=1e-9 * max(1.0, np.abs(v).max()))


@pytest.mark.parametrize("make,steps", [(_barrett, 120), (_chain, 120)])
def test_the_applied_impulses_solve_the_step_lcp(monkeypatch, make, steps):
    seen = _count_calls(monkeypatch)
    sim = make()
    checked = posed = 0
    for _ in range(steps):
        posed += sim.step().lcp_size > 0
        sol = sim.last_solution
        if not sol.info.get("compiled_step"):
            continue
        _assert_solves_the_step_lcp(sim, sol)
        checked += sol.z.max() > 0
    assert seen["taken"] >= 0.9 * posed and checked >= posed // 2 and posed >= steps // 2


def test_the_kinematic_palm_eliminated_gives_the_whole_problems_velocities(monkeypatch):
    """The call with the kinematic palm's velocity rows eliminated (its block of M^-1 zero, its
    velocity in v0: the Schur complement of those rows taken first) against the same call on the
    whole problem, on the same step's arguments: the same velocities v+ (to rounding; the pyramid's
    multipliers need not be unique, v+ is checked), the palm's v+ its prescribed velocity exactly
    (its rows J_pin v+ = j_rhs, one entry of 1 a dof), and the pinned rows' impulses recovered so
    that v+ = v0 + W (H' y + J' x) over the whole problem (the LCP test above checks that from the
    step's system)."""
    sim = _barrett()
    kin = sim.stages.kin
    assert kin.tolist() == [sim.model.dof_start[sim.model.index("palm")] // 6]
    pairs = []
    warm = 0
    for _ in range(120):
        sim.step()
        if sim.last_solution.info.get("compiled_step"):
            args = _mixed_args(sim, sim.last_system, kin)
            pairs.append((args, SK.st_mixed_step(*args),
                          SK.st_mixed_step(*args[:-2], np.zeros(0, dtype=np.int64), args[-1])))
            # the fused step applied what its LCP part gives on the step's system (assembled when read):
            # the same bits from Lemke's start, the same velocities (to rounding) from the previous basis
            v_cold, v_applied = pairs[-1][1][8], sim.data.result.v_next
            if sim.last_solution.pivots:
                assert np.array_equal(v_cold, v_applied)
            else:
                warm += 1
                assert np.allclose(v_cold, v_applied, rtol=0, atol=1e-7 * max(1e-3, np.abs(v_cold).max()))
    compared = 0
    for args, cut, whole in pairs:
        assert cut[0] == whole[0]
        if not cut[0]:
            continue
        Jp, Ji, Jd, j_rhs = args[:4]
        v_cut, v_whole = cut[8], whole[8]
        assert np.allclose(v_cut, v_whole, rtol=0, atol=1e-6 * max(1e-3, np.abs(v_whole).max()))
        assert cut[5].shape == whole[5].shape == j_rhs.shape
        b = kin[0]
        pins = [r for r in range(j_rhs.size) if Jp[r + 1] - Jp[r] == 1 and 6 * b <= Ji[Jp[r]] < 6 * b + 6]
        assert len(pins) == 6
        for r in pins:
            assert v_cut[Ji[Jp[r]]] * Jd[Jp[r]] == j_rhs[r]          # exactly the prescribed velocity
        compared += 1
    assert compared >= 60 and warm >= 30        # most steps of the closing grasp reuse the previous basis


def test_configurations_it_does_not_cover_take_the_general_stages():
    sc = make_scene("barrett-grasp", material="rubber")
    assert type(Simulator(sc, None, "pgs").stages) is not SS.CompiledSTStages          # not Lemke
    assert type(Simulator(sc, None, "lemke", solver_options={"basis": "tableau"}).stages) \
        is not SS.CompiledSTStages                                                      # an option it does not honour
    assert type(Simulator(sc, None, None, islands=True).stages) is not SS.CompiledSTStages


def test_a_declined_step_is_taken_by_the_general_stages(monkeypatch):
    sim = _barrett()
    for _ in range(40):
        sim.step()
    monkeypatch.setattr(SK, "st_step", lambda *a: (SK.DECLINED, SK._declined(SK.DECLINE_LEMKE, 7)) + (None,) * 10)
    rec = sim.step()
    assert rec.success and not sim.last_solution.info.get("compiled_step")
    assert sim.last_problem is not None and sim.data.result.v_next.size
    # the general stages' Solution says why the call declined
    assert sim.last_solution.info["compiled_step_declined"] == SK.DECLINE_REASONS[SK.DECLINE_LEMKE]


def test_a_declined_answer_says_why():
    """st_mixed_step's declined answer names its reason: on a grasp step's system with every joint row
    stated twice, A = J W J' is singular (its rank, by numpy's SVD, below its size: MixedLCP takes its
    QR branch), so the call declines with DECLINE_QR_BRANCH; the same system as it is is taken."""
    import scipy.sparse as sp
    sim = _barrett()
    for _ in range(40):
        sim.step()
    sys = sim.last_system
    kin = sim.stages.kin
    args = _mixed_args(sim, sys, kin)
    assert SK.st_mixed_step(*args)[0]
    J2 = sp.vstack([sys.J, sys.J]).tocsr()
    A = (J2 @ sys.Minv @ J2.T).toarray()
    assert np.linalg.matrix_rank(A) < A.shape[0]
    twice = (*_csr(J2), np.concatenate([sys.j_rhs, sys.j_rhs]).astype(np.float64)) + args[4:]
    out = SK.st_mixed_step(*twice)
    assert not out[0] and out[2] == SK.DECLINE_QR_BRANCH
    assert SK.DECLINE_REASONS[out[2]] == "A not SPD (QR branch)"


def test_warm_guess_maps_the_previous_answer_by_contact_match():
    """y = [c_l, c_n, beta (d per contact), lambda, u, s]: contacts follow the detection's match,
    limits and motors keep their places where their counts are unchanged, new rows start at 0."""
    d, nl0, nc0, nm0 = 4, 1, 2, 1
    rng = np.random.default_rng(3)
    z_prev = rng.uniform(0.1, 1.0, nl0 + nc0 * (d + 2) + 2 * nm0)
    match = np.array([1, -1, 0], dtype=np.int64)
    g = SK.warm_guess(z_prev, nl0, nc0, nm0, match, 1, 3, 1, d)
    parts = lambda y, nl, nc, nm: (y[:nl], y[nl:nl + nc], y[nl + nc:nl + nc + nc * d].reshape(nc, d),
                                   y[nl + nc + nc * d:nl + nc * (d + 2)], y[nl + nc * (d + 2):])
    l0, n0, b0, lam0, m0 = parts(z_prev, nl0, nc0, nm0)
    l1, n1, b1, lam1, m1 = parts(g, 1, 3, 1)
    assert g.shape == (1 + 3 * (d + 2) + 2,)
    assert np.array_equal(l1, l0) and np.array_equal(m1, m0)
    for i, j in enumerate(match):
        want = (0.0, np.zeros(d), 0.0) if j < 0 else (n0[j], b0[j], lam0[j])
        assert n1[i] == want[0] and np.array_equal(b1[i], want[1]) and lam1[i] == want[2]
    # a limit appeared: the limits start from Lemke's usual basis, the contacts still map
    g2 = SK.warm_guess(z_prev, nl0, nc0, nm0, match, 2, 3, 1, d)
    assert np.all(g2[:2] == 0.0) and g2[2] == n0[1]
    # a previous answer of another layout maps nothing
    assert not SK.warm_guess(z_prev[:-1], nl0, nc0, nm0, match, 1, 3, 1, d).any()


def test_warm_answer_is_the_lcp_solution_on_the_guessed_basis():
    """On an LCP with a known solution (F a P-matrix, e built from a chosen z and w), a guess whose
    positive entries are z's support gives that z (numpy's solve of F_BB z_B = -e_B); a guess with
    the wrong support gives an infeasible basis and is refused (z left zero)."""
    rng = np.random.default_rng(7)
    n = 12
    A = rng.normal(size=(n, n))
    F = A @ A.T + n * np.eye(n) + 0.3 * rng.normal(size=(n, n))        # positive definite part: a P-matrix
    z_true = np.where(rng.uniform(size=n) < 0.5, rng.uniform(0.5, 2.0, n), 0.0)
    w_true = np.where(z_true > 0, 0.0, rng.uniform(0.5, 2.0, n))
    e = w_true - F @ z_true
    z = np.zeros(n)
    assert SK._warm_answer(F, e, z_true.copy(), 1e-8, z)
    B = z_true > 0
    ref = np.zeros(n)
    ref[B] = np.linalg.solve(F[np.ix_(B, B)], -e[B])
    assert np.allclose(z, ref, rtol=1e-12, atol=1e-12) and np.allclose(z, z_true, atol=1e-10)
    wrong = np.where(B, 0.0, 1.0)          # the complement of the support: negative z or w there
    z2 = np.zeros(n)
    assert not SK._warm_answer(F, e, wrong, 1e-8, z2) and not z2.any()
    assert not SK._warm_answer(F, e, np.zeros(n), 1e-8, z2)               # no basis guessed


def test_run_takes_the_same_steps_as_step_by_step():
    """``Simulator.run`` takes a step the fused robot step declines straight through the checked stages
    (sim/simulator.py ``_staged_step``): the same states and records as calling ``step()`` (controllers,
    fused check, plausibility check) once per step, here through the grasp's settle and close phases."""
    runs = []
    for by_step in (False, True):
        sc = make_scene("barrett-grasp", material="rubber")
        sim = Simulator(sc, None, None, controllers=list(sc.controllers))
        if by_step:
            recs = [sim.step() for _ in range(20)]
            for r in recs:
                r.energy_gain = float("nan")        # as run() records a step with motors
        else:
            recs = sim.run(20 * sim.h).records
        runs.append((sim.data.position.copy(), sim.data.linear_velocity.copy(), recs, sc.controllers[0].phase))
    (p0, v0, r0, ph0), (p1, v1, r1, ph1) = runs
    assert ph0 == ph1 == "close"
    np.testing.assert_array_equal(p0, p1)
    np.testing.assert_array_equal(v0, v1)
    assert [(r.contacts, r.iterations, r.residual, r.kinetic_energy) for r in r0] == \
        [(r.contacts, r.iterations, r.residual, r.kinetic_energy) for r in r1]


def test_the_lift_step_the_unscaled_run_leaves_is_certified_by_the_equilibrated_retry(monkeypatch):
    """At t = 1.31 s of the rubber grasp (step 262, 54 rows) Lemke's unscaled run on the step's LCP
    ends on a basis that does not certify (residual ~2e-4): solve() certifies the step by its
    symmetrically equilibrated retry, and so must the compiled call (kernels/lemke.py
    ``lemke_scaled_run``) instead of declining. Checked against the step's LCP formed independently
    with numpy (the joints eliminated by their dense inverse) and against solve() on the same problem."""
    import contactlab as cl
    seen = _count_calls(monkeypatch)
    sim = _barrett()
    for _ in range(262):
        assert sim.step().success
    assert seen["declined"] == 0 and seen["taken"] == 262
    sol = sim.last_solution
    assert sol.info.get("compiled_step") and sol.relative_residual <= 1e-8
    _assert_solves_the_step_lcp(sim, sol)
    # the general path needs the retry on this step: its unscaled run does not certify
    general = cl.solve(sim.last_problem, "lemke")
    assert general.status.name == "SOLVED"
    assert "unscaled_attempt" in str(general.info) or "equilibrated" in str(general.info)


def test_the_plastic_grasp_step_the_reduced_runs_leave_is_certified_by_the_tableau_retry(monkeypatch):
    """At step 631 of the plastic grasp (198 rows, cond(F) ~6e8) Lemke's reduced-basis run and its
    equilibrated retry on the call's F end on answers at ~3e-4 (the general path's F, equal to
    1e-15 relative, certifies at its first run): the compiled call takes solve()'s tableau retry
    (kernels/lemke.py ``lemke_tableau_run``) instead of declining. The applied answer is checked
    against the step's LCP formed independently with numpy, as the lift step's above."""
    seen = _count_calls(monkeypatch)
    sc = make_scene("barrett-grasp")
    sim = Simulator(sc, None, None, controllers=sc.controllers)
    for _ in range(631):
        assert sim.step().success
    assert seen["declined"] == 0 and seen["taken"] == 631
    sol = sim.last_solution
    assert sol.info.get("compiled_step") and sol.z.size == 198 and sol.relative_residual <= 1e-6
    _assert_solves_the_step_lcp(sim, sol)

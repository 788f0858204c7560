"""The box-friction step with the joints eliminated (``joints="schur"``, pgs-sm) of a jointed scene in
one compiled call (sim/box_joint_stages.py, sim/box_joint_kernels.py box_schur_step) against the
general stages, field by field, on the Barrett grasp (arechavaleta §V, the paper's configuration);
and the answer it applies checked as a solution of the step's boxed LCP formed here with dense numpy
algebra from the step's system (arechavaleta eq. 15-17: H P H' with P = W - W J' (J W J')^-1 J W,
the friction box of the previous step's normal impulse), not with the library's kernels."""
import numpy as np
import pytest

import contactlab.sim.box_joint_kernels as BJ
import contactlab.sim.box_joint_stages as BS
import contactlab.sim.tree_box_stages as TS
from contactlab.scenarios import make_scene
from contactlab.sim import Simulator, faults, turns

from .test_faults import _from_scratch     # plausibility on the inputs step_fault forms itself


@pytest.fixture(autouse=True)
def _maximal_coordinates(monkeypatch):
    """These tests are the maximal-coordinate call's: the joint-space stages planned before it on the
    hand (sim/tree_box_stages.py; tests/sim/test_tree_box_stages.py) are left out of the plan."""
    monkeypatch.setattr(TS.CompiledTreeSchurRowStages, "plan", classmethod(lambda cls, sim, state: None))


def _barrett(coupling="previous", **kw):
    sc = make_scene("barrett-grasp", material="rubber")
    return Simulator(sc, "box-friction", "pgs-sm", model_options={"joints": "schur", "coupling": coupling},
                     controllers=sc.controllers, **kw)


def _general(monkeypatch, make):
    with monkeypatch.context() as m:
        m.setattr(BS.CompiledSchurRowStages, "plan", classmethod(lambda cls, sim, state: None))
        sim = make()
    assert type(sim.stages) is not BS.CompiledSchurRowStages
    return sim


def _count_calls(monkeypatch):
    seen = {"taken": 0, "declined": 0}
    kernel = BJ.box_schur_step

    def call(*args):
        out = kernel(*args)
        seen["taken" if out[0] != BJ.DECLINED else "declined"] += 1
        return out

    monkeypatch.setattr(BJ, "box_schur_step", call)
    return seen


@pytest.mark.parametrize("coupling,steps", [("previous", 160), ("current", 120)])
def test_the_compiled_step_gives_the_general_stages_answer(monkeypatch, coupling, steps):
    # "current": pgs-sm stops uncertified on some steps of the grasp (from step 45): the call declines
    # them and the general stages take them (status, fallback and all), the same records
    seen = _count_calls(monkeypatch)
    fast = _barrett(coupling)
    assert type(fast.stages) is BS.CompiledSchurRowStages
    slow = _general(monkeypatch, lambda: _barrett(coupling))
    most = 0
    # an uncertified step (pgs-sm at its iteration cap, the fallback's answer) amplifies the rounding
    # differences of the Schur complement (LAPACK's against the call's loops) far beyond the
    # certified steps': fields are compared to the certified steps' tolerance until the first one
    for k in range(steps):
        a, b = fast.step(), slow.step()
        assert (a.status, a.success, a.rescued, a.contacts, a.lcp_size) == \
            (b.status, b.success, b.rescued, b.contacts, b.lcp_size), k
        if not b.success:
            break
        assert abs(a.energy - b.energy) <= 1e-9 * max(1.0, abs(b.energy))
        assert abs(a.joint_error - b.joint_error) <= 1e-9
        ra, rb = fast.data.result, slow.data.result
        for field in ("v_next", "normal", "tangent", "joint", "limit", "motor"):
            x, y = np.asarray(getattr(ra, field)), np.asarray(getattr(rb, field))
            assert x.shape == y.shape, field
            assert np.allclose(x, y, rtol=1e-6, atol=1e-8 * max(1.0, np.abs(y).max(initial=0.0))), (k, field)
        assert np.array_equal(ra.modes, rb.modes), k
        for arr in ("position", "quaternion", "linear_velocity", "angular_velocity"):
            assert np.allclose(getattr(fast.data, arr), getattr(slow.data, arr), rtol=0, atol=1e-9), (k, arr)
        most = max(most, a.contacts)
    assert most >= 4                                   # fingers and palm on the glass
    if coupling == "previous":
        assert seen["declined"] == 0 and seen["taken"] == steps
    else:       # the first uncertified step was declined by the call and taken by the general stages
        assert not a.success and seen["declined"] == 1 and seen["taken"] == k
    # the problem assembled when read is the one the general stages solved
    pa, pb = fast.last_problem, slow.last_problem
    assert type(pa) is type(pb) and pa.n == pb.n


def _independent_problem(sys, cfm, options):
    """(M, q, lo, hi, H, Jd, W) of the step's box-friction problem with the joints eliminated, from the
    system's rows as dense arrays: z = [c_a, c_l, c_n, c_s, c_t]."""
    dense = lambda A: A.toarray()
    W = dense(sys.Minv)
    Jd = dense(sys.J)
    H = np.vstack([dense(x) for x in (sys.A, sys.L, sys.N, sys.S, sys.T)])
    nm, nl, nc = sys.nm, sys.nl, sys.nc
    n = H.shape[0]
    v0 = sys.v + sys.h * W @ sys.f
    X = np.linalg.solve(Jd @ W @ Jd.T, Jd @ W)              # (J W J')^-1 J W
    P = W - W @ Jd.T @ X
    M = H @ P @ H.T + cfm * np.eye(n)
    rhs = np.concatenate([sys.a_target, -sys.l_bias, -sys.n_bias, np.zeros(2 * nc)])
    q = H @ v0 - rhs - H @ W @ Jd.T @ np.linalg.solve(Jd @ W @ Jd.T, Jd @ v0 - sys.j_rhs)
    lo, hi = np.zeros(n), np.full(n, np.inf)
    lo[:nm], hi[:nm] = -sys.a_max, sys.a_max
    guess = np.where(np.isfinite(sys.normal_guess), sys.normal_guess, options.new_contact_bound)
    b = sys.mu * np.maximum(guess, 0.0)
    o = nm + nl + nc
    lo[o:o + nc], hi[o:o + nc] = -b, b
    lo[o + nc:], hi[o + nc:] = -b, b
    return M, q, lo, hi, H, Jd, W, v0


def assert_box_solution(M, q, lo, hi, z):
    """z solves the boxed LCP (M, q, lo, hi): inside the box; at the lower bound w = M z + q >= 0, at the
    upper w <= 0, inside w = 0 (to the certificate)."""
    w = M @ z + q
    zs = max(np.abs(z).max(), 1e-300)
    scale = np.abs(M).max() * zs + np.abs(q).max()
    assert np.all(z >= lo - 1e-9 * zs) and np.all(z <= hi + 1e-9 * zs)
    at_lo, at_hi = np.isclose(z, lo, rtol=0, atol=1e-9 * zs), np.isclose(z, hi, rtol=0, atol=1e-9 * zs)
    inside = ~at_lo & ~at_hi
    assert np.all(w[at_lo & ~at_hi] >= -1e-6 * scale) and np.all(w[at_hi & ~at_lo] <= 1e-6 * scale)
    assert np.all(np.abs(w[inside]) <= 1e-6 * scale)


def test_the_applied_impulses_solve_the_step_problem(monkeypatch):
    seen = _count_calls(monkeypatch)
    sim = _barrett()
    checked = 0
    for _ in range(140):
        sim.step()
        sol = sim.last_solution
        assert sol.info.get("compiled_step")
        sys = sim.last_system
        M, q, lo, hi, H, Jd, W, v0 = _independent_problem(sys, sys.cfm + sim.model_options.cfm, sim.model_options)
        z = sol.z
        assert_box_solution(M, q, lo, hi, z)
        # the joint impulses: v+ = v0 + W (H' z + J' x) keeps the joint rows J v+ = j_rhs, and is the applied v+
        x = sim.data.result.joint
        v = v0 + W @ (H.T @ z + Jd.T @ x)
        vmax = max(1.0, np.abs(v).max())
        assert np.allclose(Jd @ v, sys.j_rhs, atol=1e-7 * vmax)
        assert np.allclose(v, sim.data.result.v_next, atol=1e-8 * vmax)
        checked += sys.nc > 0
    assert seen["taken"] == 140 and checked >= 100


@pytest.mark.parametrize("make", [
    lambda: _barrett(compiled=False),
    lambda: Simulator(make_scene("barrett-grasp"), "box-friction", "pgs-sm", model_options={"joints": "rows"}),
    lambda: Simulator(make_scene("barrett-grasp"), "box-friction", "pgs", model_options={"joints": "schur"}),
    lambda: Simulator(make_scene("barrett-grasp"), "box-friction", "pgs-sm", model_options={"joints": "schur"},
                      solver_options={"sm_solver": "cg"}),
])
def test_planned_only_for_its_configuration(make):
    assert type(make().stages) is not BS.CompiledSchurRowStages


def test_the_calls_checks_are_the_steps_own(monkeypatch):
    """The call forms the per-step checks whose inputs are its own (box_schur_step, as
    sim/box_kernels.py box_friction_step does for free bodies): through the grasp's approach, closing
    and contact every step's plausibility verdict is taken from the call (faults.judged_verdict) and
    is, value for value, faults.plausibility on the inputs step_fault forms itself (the call's v_free
    split per body, the motors' targets, NaN where a joint has none); its turn bound is
    turns.turn_bound on the step's contacts and the velocities after it. A motor's target changed
    after the call (by hand, inside the checked step) has the step judged again."""
    sim = _barrett()
    assert type(sim.stages) is BS.CompiledSchurRowStages
    real, taken, again = faults.judged_verdict, [], []

    def spy(sim_, before, rec, depth):
        verdict = real(sim_, before, rec, depth)
        if verdict is None:
            again.append(sim_.data.steps)
        else:
            taken.append((tuple(verdict), tuple(_from_scratch(sim_, before, rec, depth))))
        return verdict
    monkeypatch.setattr(faults, "judged_verdict", spy)
    fires, bounds = turns.fires, []

    def fires_spy(sim_, contacts, bound=None):
        if bound is not None:
            bounds.append((bound, turns.turn_bound(contacts.body_a.astype(np.int64), contacts.body_b.astype(np.int64),
                                                   sim_.data.angular_velocity, sim_.world.body_radius, sim_.h)))
        return fires(sim_, contacts, bound)
    monkeypatch.setattr(turns, "fires", fires_spy)
    recs = [sim.step() for _ in range(200)]
    assert max(r.contacts for r in recs) > 0 and all(r.plausible for r in recs)
    assert len(taken) == 200 and not again and all(a == b for a, b in taken)
    assert len(bounds) == 200 and all(a == b for a, b in bounds)
    motors = sim.data.motor_target
    k = int(np.flatnonzero(np.isfinite(motors))[0])

    def take():
        rec = sim._step()
        motors[k] += 0.1
        return rec
    faults.checked_step(sim, take)
    assert again == [sim.data.steps] and len(taken) == 200

"""The Barrett hand's box-friction/pgs-sm step in joint coordinates (sim/tree_box_stages.py,
sim/tree_box_kernels.py tree_box_step; arechavaleta §V, the paper's configuration) against the
mathematics of the maximal-coordinate step: the answer it applies solves the step's boxed LCP formed
here with dense numpy algebra from the maximal system (arechavaleta eq. 15-17: H P H' with
P = W - W J' (J W J')^-1 J W, the library's kernels not used), its v+ is that problem's recovery,
on the same state it gives the maximal call's answer to the solver's tolerance, the couplings
(distal = proximal / 3, spread 2 = spread 1) hold exactly in the joint coordinates, and a step it
cannot take goes to the maximal call."""
import numpy as np
import pytest

import contactlab.sim.box_joint_kernels as BJ
import contactlab.sim.box_joint_stages as BS
import contactlab.sim.tree_box_kernels as TB
import contactlab.sim.tree_box_stages as TS
from contactlab.kernels.residual import boxed_certify_dense
from contactlab.mechanics.tree import tree_coordinates, tree_topology
from contactlab.scenarios import make_scene
from contactlab.sim import Simulator
from .test_box_joint_stages import _independent_problem, assert_box_solution
from .test_noslip_stages import _copied      # an argument copied, a tuple's arrays too

#: where the maximal call's positions are: its ``motion`` argument's (sim/noslip_kernels.py MOTION)
MAX_MOTION = BJ.box_schur_step.py_func.__code__.co_varnames.index("motion")


def _barrett(**kw):
    """The grasp on the stages themselves (``fused`` off: sim/grasp_step.py's fused step calls the
    kernels inside its own call; tests/sim/test_grasp_step.py holds it to these stages' bits)."""
    sc = make_scene("barrett-grasp", material="rubber")
    sim = Simulator(sc, "box-friction", "pgs-sm", model_options={"joints": "schur", "coupling": "previous"},
                    controllers=sc.controllers, **kw)
    sim.fused = False
    return sim


def _count(monkeypatch, module, name):
    seen = {"taken": 0, "declined": 0}
    kernel = getattr(module, name)

    def call(*args):
        out = kernel(*args)
        seen["taken" if out[0] != BJ.DECLINED else "declined"] += 1
        return out

    monkeypatch.setattr(module, name, call)
    return seen


def test_the_hand_is_a_tree_with_a_kinematic_root_and_couplings():
    m = _barrett().model
    assert tree_topology(m)[0] is None                   # the no-slip stages' forest: no kinematic root, no coupling
    tree, why = tree_topology(m, kinematic_roots=True, couplings=True)
    assert why == "" and tree.nq == 6 + 8 + 6              # the palm's six, the eight finger joints, the glass's six


def test_the_joint_space_step_solves_the_maximal_problem(monkeypatch):
    seen = _count(monkeypatch, TB, "tree_box_step")
    sim = _barrett()
    assert type(sim.stages) is TS.CompiledTreeSchurRowStages
    checked = 0
    for _ in range(140):
        rec = sim.step()
        sol = sim.last_solution
        assert sol.info.get("compiled_step") and sol.info.get("joint_space")
        sys = sim.last_system           # the maximal system of the state before the step
        M, q, lo, hi, H, Jd, W, v0 = _independent_problem(sys, sys.cfm + sim.model_options.cfm, sim.model_options)
        z = sol.z
        assert z.shape == q.shape
        assert_box_solution(M, q, lo, hi, z)        # the maximal problem, dense numpy
        # and the library's certificate on that problem (solve()'s scale-free residual), as on the joint-space one
        n = q.shape[0]
        _w, nat, _comp, infeas, rn, _rc, ri = boxed_certify_dense(M, q, lo, hi, np.full(n, -1), np.zeros(n), z)
        assert max(rn, ri) <= sim.stages.threshold and np.isfinite(nat) and np.isfinite(infeas)
        # v+ is the maximal recovery of z: v0 + W (H' z + J' x), x the joint impulses that keep J v+ = j_rhs
        A = Jd @ W @ Jd.T
        x = -np.linalg.solve(A, Jd @ (v0 + W @ H.T @ z) - sys.j_rhs)
        v = v0 + W @ (H.T @ z + Jd.T @ x)
        vmax = max(1.0, np.abs(v).max())
        assert np.allclose(v, sim.data.result.v_next, rtol=0, atol=1e-8 * vmax)
        assert sim.data.result.joint.size == 0              # joint coordinates carry no joint impulses
        assert rec.joint_error <= 1e-12          # forward kinematics: on the joints
        checked += sys.nc > 0
    assert seen == {"taken": 140, "declined": 0} and checked >= 100


def _capture(monkeypatch, sim, steps):
    """The arguments of the joint-space call at step ``steps`` and of the maximal call on the same
    state (the maximal call's captured by making the joint-space call decline that step)."""
    seen = {}
    tree_kernel, max_kernel = TB.tree_box_step, BJ.box_schur_step
    for _ in range(steps):
        sim.step()

    def decline(*args):
        seen["tree"] = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        return (BJ.DECLINED,) + (None,) * 11

    def maximal(*args):
        seen["max"] = [_copied(a) for a in args]
        return max_kernel(*args)

    monkeypatch.setattr(TB, "tree_box_step", decline)
    monkeypatch.setattr(BJ, "box_schur_step", maximal)
    sim.step()
    return tree_kernel, max_kernel, seen["tree"], seen["max"]


@pytest.mark.parametrize("steps", [60, 120])
def test_same_state_same_answer(monkeypatch, steps):
    tree_kernel, max_kernel, targs, margs = _capture(monkeypatch, _barrett(), steps)
    ta = [a.copy() if isinstance(a, np.ndarray) else a for a in targs]
    ma = [_copied(a) for a in margs]
    t, m = tree_kernel(*ta), max_kernel(*ma)
    assert t[0] == m[0] == BJ.DONE
    zt, zm = t[1][2], m[1][2]
    assert zt.shape == zm.shape and zt.size > 6                  # motors, limits and contacts
    tol = 1e-5 * max(1e-12, np.abs(zm).max())                   # pgs-sm's tolerance on two roundings of one LCP
    assert np.allclose(zt, zm, rtol=0, atol=tol)
    vt, vm = t[1][7], m[1][7]
    assert np.allclose(vt, vm, rtol=0, atol=1e-6 * max(1.0, np.abs(vm).max()))
    # the positions after the step differ by the integrators' second-order terms only (joint coordinates
    # against x += h v and the joint projection): h^2 |omega|^2 r at the hand's reach r = 0.3 m
    h, omega = ta[27], np.abs(targs[18]).max()
    assert np.abs(ta[16] - ma[MAX_MOTION][1]).max() <= h * h * omega * omega * 0.3
    assert np.array_equal(t[2], m[2])                           # the contact modes


def _joint_coordinates(sim):
    st = sim.stages
    m, d = sim.model, sim.data
    J = st.packed.kernel_args
    theta, _qd, _ax, _P = tree_coordinates(*st.tree.args[:5], J[2], J[0], J[3], J[4], J[5], J[6], st.tree.nq,
                                           d.position, d.quaternion, d.linear_velocity, d.angular_velocity)
    return {j.name: theta[st.jq[k]] for k, j in enumerate(m.joints)}


def test_the_couplings_hold_exactly():
    sim = _barrett()
    th0 = _joint_coordinates(sim)
    moved = 0.0
    for _ in range(200):
        sim.step()
        th = _joint_coordinates(sim)
        for f in ("f1", "f2", "thumb"):
            d0 = th0[f"{f}_distal"] - th0[f"{f}_proximal"] / 3.0
            assert abs((th[f"{f}_distal"] - th[f"{f}_proximal"] / 3.0) - d0) <= 1e-12
            moved = max(moved, abs(th[f"{f}_proximal"] - th0[f"{f}_proximal"]))
        assert abs((th["f2_spread"] - th["f1_spread"]) - (th0["f2_spread"] - th0["f1_spread"])) <= 1e-12
    assert moved > 0.1                                   # the fingers closed


def test_a_step_it_cannot_take_goes_to_the_maximal_call(monkeypatch):
    tree = _count(monkeypatch, TB, "tree_box_step")
    maximal = _count(monkeypatch, BJ, "box_schur_step")
    sim = _barrett()
    for _ in range(3):
        sim.step()
    assert tree == {"taken": 3, "declined": 0} and maximal["taken"] == 0
    # an exact velocity motor on a coupled joint (f2's spread follows f1's): no coordinate map, declined
    sim.set_motor("f1_spread", 0.0, 50.0)
    sim.set_motor("f2_spread", 0.0, np.inf)
    rec = sim.step()
    assert rec.success and tree["declined"] == 1 and maximal["taken"] == 1
    assert sim.last_solution.info.get("compiled_step") and not sim.last_solution.info.get("joint_space")


def test_not_planned_where_the_maximal_stages_are_not(monkeypatch):
    sim = Simulator(make_scene("barrett-grasp"), "box-friction", "pgs-sm", model_options={"joints": "rows"})
    assert not isinstance(sim.stages, BS.CompiledSchurRowStages)
    sim = _barrett(compiled=False)
    assert not isinstance(sim.stages, BS.CompiledSchurRowStages)

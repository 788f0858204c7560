"""The Stewart-Trinkle model's compiled stages on jointed scenes (:class:`CompiledSTStages`;
:mod:`contactlab.sim.st_kernels` for the call).

Planned where a contact model declares ``COMPILED_STEP = "stewart-trinkle-mixed"``
(models/stewart_trinkle.py) and the method's options are Lemke's (``lemke``, given at most ``tol``,
``max_iterations`` and ``certify``), on a compiled simulator without reuse, islands or a fixed
budget, on a scene with joints whose body blocks cover every coordinate (a hand, an arm: its
problem is a MixedLCP, arechavaleta eq. 13-15). The step after detection is one compiled call
(:func:`~contactlab.sim.st_kernels.st_step`): the system's terms as ``build_system`` computes them,
the model's build, solve(), its certification and the model's recovery
(:func:`~contactlab.sim.st_kernels.st_mixed_step`), the integration and the joint projection, the
general stages' kernels in their order. The step's ConstraintSystem and problem are assembled
from the state before the step only when read (``Simulator.last_system``, ``last_problem``).

A step the call declines (an A that needs the QR branch of the Schur complement, a trivial
problem, an answer that neither Lemke's first reduced run nor its symmetrically equilibrated retry
certifies) is taken by the general stages
on the same contacts: build, solve() with Lemke's retries and the fallbacks, so its status is
theirs. A certified step with a deep contact is integrated by the call; the simulator's position
correction and the joint projection follow it (as the general integrate runs them).
"""
from __future__ import annotations

import time

import numpy as np

from ..kernels.tolerances import CERTIFY
from ..mechanics.model import KIND_KINEMATIC
from ..collision.contacts import packed
from ..mechanics.system import live_bodies
from ..models.common import StepResult
from ..solution import Solution, Status
from ..solvers.lemke import LemkeOptions
from . import noslip_kernels as NK
from .noslip_stages import NO_VALUES, CompiledJointCall, motion
from .stages import Stages, StepWork
from . import st_kernels as SK

#: what a model's ``COMPILED_STEP`` names for :class:`CompiledSTStages` (:mod:`contactlab.models.stewart_trinkle`)
COMPILED_FORM = "stewart-trinkle-mixed"
#: the solver options the call honours (any other: the general stages); ``warm_basis``
#: (solvers/lemke.py ``LemkeOptions``): False starts every step's Lemke from its artificial basis
_OPTIONS = frozenset({"tol", "max_iterations", "certify", "warm_basis"})
_NO_LAYOUT = np.zeros(3, dtype=np.int64)


class CompiledSTStages(CompiledJointCall, Stages):
    """The general stages with the step after detection in one compiled call (module docstring)."""

    compiled = True
    #: start each step's LCP from the previous step's basis (st_kernels.py ``warm_guess``); ``plan``
    #: sets it from the solver option ``warm_basis`` (solvers/lemke.py ``LemkeOptions``)
    warm_basis = True

    @classmethod
    def plan(cls, sim, state):
        model = sim.contact_model
        m = sim.model
        if not (sim.compiled and getattr(model, "COMPILED_STEP", None) == COMPILED_FORM and sim.reuse is None
                and not sim.islands and sim.iterations is None and m.joints
                and not set(sim.solver_options) - _OPTIONS and 6 * live_bodies(m).size == m.ndof):
            return None
        stages = cls(sim, state)
        spec = stages.spec
        if spec is None or spec.options is not LemkeOptions:
            return None
        try:
            opts = spec.make_options({k: v for k, v in sim.solver_options.items() if k != "certify"})
        except Exception:       # a bad option: the general stages raise it at solve()
            return None
        stages.tol = float(opts.tol)
        certify = float(sim.solver_options.get("certify", CERTIFY))
        stages.threshold = stages.tol if stages.tol > certify else certify     # solve()'s max(certify, tol)
        stages.max_pivots = -1 if opts.max_iterations is None else int(opts.max_iterations)
        stages.pivot_tol, stages.restarts = float(opts.pivot_tol), int(opts.restarts)
        stages.warm_basis = bool(opts.warm_basis)
        stages.joint_layout(m)
        return stages

    # -- build: the compiled call's inputs --------------------------------------------------------
    def build(self, w: StepWork) -> None:
        sim = self.sim
        data, m, P = sim.data, sim.model, self.packed
        idx, tau, st_mt, st_mf = self.torque_inputs(data)
        # joint_torque_forces and motor_state in one compiled call (the motors' force limits are
        # the LCP's box here: nothing to decline)
        f, mt, mf, _ = NK.call_inputs(idx, tau, P.kind, P.a, P.b, P.anchor_b, P.axis_a, m.dof_start, data.position,
                                      data.quaternion, m.ndof, P.motor_target, P.motor_max_force, st_mt, st_mf)
        st = m.settings     # read each step: the Model is frozen, its Settings object is not
        w.compiled = True
        w.call = (f, packed(w.contacts, w.match), float(st.contact_zeta if st.contact_stabilization == "velocity"
                                                      else 0.0), float(st.slop), mt, mf, float(st.zeta),
                  st.contact_stabilization == "position", float(st.contact_zeta), bool(st.project_joints),
                  bool(st.gyroscopic),
                  (data.position.copy(), data.quaternion.copy(), data.linear_velocity.copy(),
                   data.angular_velocity.copy(), f.copy(), mt, mf))

    # -- solve: the step to the joint projection, compiled -----------------------------------------
    def solve(self, w: StepWork) -> None:
        if not w.compiled:
            return super().solve(w)
        sim = self.sim
        model, data = sim.model, sim.data
        f, contact, zeta, slop, mt, mf, zeta_j, position_stage, position_zeta, project, gyro, before = w.call
        contact_floats, contact_ints = contact
        st = model.settings
        prev = data.warm.get("st_basis")        # (z, layout) of the last compiled step, if z is still the warm start
        if self.warm_basis and prev is not None and prev[0] is data.warm.get("z"):
            z_prev, layout = prev
        else:
            z_prev, layout = NO_VALUES, _NO_LAYOUT
        w.t0 = time.perf_counter()
        outcome, out, modes, e0, gain, ke, pe, pen, joint_error, v_free, nl, a_max = SK.st_step(
            self.body, model.ndof, KIND_KINEMATIC, gyro, motion(data), f, contact_floats, contact_ints, zeta, slop,
            self.joint_args, mt, mf, w.h, zeta_j, int(st.friction_directions),
            float(float(st.cfm) + sim.model_options.cfm), self.max_pivots, self.pivot_tol, self.restarts, self.tol,
            self.threshold, self.kin, position_stage, position_zeta, project, 1e-10, 8, z_prev, layout)
        w.t_solved = time.perf_counter()
        if outcome == SK.DECLINED:      # nothing changed: the general stages take the step
            w.compiled = False
            super().build(w)
            super().solve(w)
            # why the call declined (st_kernels.py DECLINE_*), beside the general path's own info
            w.sol.info["compiled_step_declined"] = SK.DECLINE_REASONS.get(int(out[2]), str(int(out[2])))
            return
        ok, pivots, n, scale, z, x, wv, c, v_next, tangent = out
        sol = Solution(z=z, w=wv, status=Status.SOLVED, iterations=int(pivots), pivots=int(pivots), method=sim.method,
                       info={"covering": "ones", "basis": "reduced", "scale": float(scale), "reduced_n": int(n),
                             "compiled_step": True},
                       x=x)
        sol.residual, sol.complementarity, sol.infeasibility = c[0], c[1], c[2]
        sol.relative_residual = max(c[3], c[5])
        sol.time_s = w.t_solved - w.t0
        w.sol, w.n = sol, int(n)
        w.e0, w.contact_gain = e0, gain
        w.call = (outcome, ke, pe, pen, joint_error, v_next, tangent, modes, int(nl), a_max, v_free,
                  int(st.friction_directions), before, w.call)

    # -- integrate: done in the call but for a deep contact's position correction -----------------
    def integrate(self, w: StepWork) -> None:
        if not w.compiled:
            return super().integrate(w)
        data = self.sim.data
        outcome, ke, pe, pen, joint_error, v_next, tangent, modes, nl, a_max, v_free, d, before, inputs = w.call
        f, contact, zeta, slop, mt, mf, zeta_j, position_stage, position_zeta, project, gyro, _ = inputs
        h, sol = w.h, w.sol
        y, nc = sol.z, w.nc
        nm = a_max.shape[0]
        o_lam = nl + nc + nc * d       # y = [c_l, c_n, beta, lambda, u, s] (models/stewart_trinkle.py)
        o_u = o_lam + nc
        result = StepResult(v_next=v_next, normal=y[nl:nl + nc], tangent=tangent, joint=sol.x, limit=y[:nl],
                            motor=y[o_u:o_u + nm] - a_max, modes=modes, info={"lambda": y[o_lam:o_u]})
        data.warm["z"] = z_warm = y.copy()
        data.warm["st_basis"] = (z_warm, np.array((nl, nc, nm), dtype=np.int64))
        self.state.defer(w.contacts, h, self.system_terms, (before, gyro, w.contacts, zeta, slop, zeta_j, h))
        self.state.free_velocity = v_free      # the plausibility check's free motion (sim/faults.py)
        self.finish(w, result, sol, outcome == SK.DEEP, project, v_next, joint_error, (ke, pe, pen))


#: the Stewart-Trinkle model's compiled stages (:func:`contactlab.sim.simulator.plan_stages`)
ST_STAGES = (CompiledSTStages,)

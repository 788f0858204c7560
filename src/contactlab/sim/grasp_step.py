"""The hand's step with its Python cut to a constant few calls (:class:`FusedGraspStep`): the
counterpart of sim/robot_step.py's legged-robot step for the box-friction model in joint
coordinates (:class:`~contactlab.sim.tree_box_stages.CompiledTreeSchurRowStages`, the Barrett hand
of arechavaleta Sec. V).

Planned by :meth:`contactlab.sim.Simulator.step` where the stages are those, the simulator's own
CollisionWorld detects every pair in its compiled routines with convex meshes
(``CollisionWorld._detect_matched_polytopes``: collision/polytope.py ``detect_and_match_polytopes``),
its collision radii are the plausibility check's (:func:`~contactlab.sim.faults.fault_statics`) and
``Simulator.fused`` is True. The controllers are the simulator's own callables (``fn(sim)``, a grasp
script: Python that sets motors and the wrist's velocity, as the stages run them). A step is then

1. the controllers (``Simulator.control``), the stages planned again where they changed a
   configuration (then the stages take the step, checked as ``Simulator.step`` checks it); the
   state before the step copied once (the deferred system's, the plausibility check's);
2. the detection (``detect_and_match_polytopes``' compiled call on its arguments, as
   ``CollisionWorld.detect_matched`` makes it);
3. the joints' torques' force and the motors' state (:func:`contactlab.sim.noslip_kernels.call_inputs`,
   as the stages' ``build``), then the physics step, :func:`contactlab.sim.tree_box_kernels.tree_box_step`,
   whose DONE step forms the per-step checks on its own inputs: the correct stage's turn bound and
   the plausibility verdict (:func:`contactlab.sim.faults.step_checks`, the inputs
   :func:`~contactlab.sim.faults.step_fault` gives it: the state before, the call's free velocity,
   the depth max(pen, 0), the record's energies, the previous joint error, the motors' targets, the
   actuation), taken here as they are: nothing runs between the call and this method's use of them.
   A steady step (the previous one this step's, DONE, with contacts) calls the call's machine code
   directly (:func:`_compiled_entry`, taken once a plan: numba's typing of its 30 arguments skipped),
   its arguments being of the types it was taken for by construction;
4. the bookkeeping of the stages' solve, certify, integrate and record (the StepResult, the warm
   start, ``Data``, the StepRecord; the system, the Solution and the seconds per stage left to be
   formed when read: :meth:`~contactlab.sim.stages.StepState.leave`), the plausibility verdict in
   words where it finds a fault (:func:`~contactlab.sim.faults.fault_words`).

What a step reads that changes only with the plan (the model's arrays, the plausibility check's
statics, the dense build's largest contact count) is taken once a plan, and the Settings' floats
once per change of the Settings (compared by value each step: the Model is frozen, its Settings are
not); the answer's views are sliced where they are read (the Solution's and the deferred system's
when those are), so a steady step's Python is the few objects a user reads.

The same kernels in the same order on the same arrays as the stages: the same bits, records and
verdicts (tests/sim/test_grasp_step.py). Where the stages would do something else, the step is
theirs from that point on the same inputs: a pair for coal (the stages' detection), a problem past
the dense size (the general build), joint torques set by a controller (the stages' build takes them,
as the call does), a step the joint-space call declines (the maximal call, then the general stages),
a deep contact's position correction and a fast turn's correction (sim/turns.py); each checked as
:func:`contactlab.sim.faults.checked_step` checks the stages' steps.
"""
from __future__ import annotations

import math
from time import perf_counter

import numpy as np

from ..blas import blas_threads
from ..collision import CollisionWorld
from ..collision.contacts import PackedContactSet, previous_packed
from ..collision.polytope import detect_and_match_polytopes
from ..kernels.frozen import frozen_arrays
from ..models.common import StepResult
from ..solvers.registry import DENSE_BYTES_LIMIT
from . import noslip_kernels as NK
from . import tree_box_kernels as TB
from .box_joint_stages import _NO_TANGENT, pgs_sm_counts_at, pgs_sm_solution
from .faults import NOT_JUDGED, PACKED_INT_FIELDS, checked_step, fault_statics, fault_words, motor_targets, step_fault
from .noslip_stages import NO_VALUES
from .recorder import StepRecord
from .stages import StepWork
from .tree_box_stages import CompiledTreeSchurRowStages
from .turns import TURN_TRIGGER

#: a step's joint impulses (joint coordinates carry none; tree_box_step's empty ``x``)
_NO_JOINT = np.zeros(0)
#: no motor array (FusedGraspStep._inputs_for): matches none, None included
_UNSET = object()


class FusedGraspStep:
    """One step of a hand in joint coordinates as a constant few compiled calls (module docstring)."""

    @classmethod
    def plan(cls, sim, stages) -> "FusedGraspStep | None":
        """The fused step for ``sim`` with its planned ``stages``, or None where the stages take the steps."""
        if not getattr(sim, "fused", True) or type(stages) is not CompiledTreeSchurRowStages:
            return None
        world = sim.world
        if not (isinstance(world, CollisionWorld) and world.geoms and world.has_convex
                and type(world).detect is CollisionWorld.detect
                and getattr(world.detect_matched, "__func__", None) is CollisionWorld.detect_matched
                and getattr(world._detect_matched_polytopes, "__func__", None)
                is CollisionWorld._detect_matched_polytopes):
            return None
        if fault_statics(sim)[1] is not world.body_radius:      # the checks' radii: the world's (turns.fires)
            return None
        return cls(sim, stages)

    def __init__(self, sim, stages):
        self.sim, self.stages = sim, stages
        self.controllers = list(sim.controllers)
        #: whether Simulator.step may run this step outside its BLAS limit: the compiled calls use no BLAS
        #: (no numba_xxgemm or LAPACK in detection or the physics call), nor does the Python between them,
        #: so the controllers decide (``uses_blas = False`` each, read here); every path to the stages
        #: opens the limit itself (:meth:`_limited`)
        self.blas_free = all(not getattr(fn, "uses_blas", True) for fn in self.controllers)
        m = sim.model
        P = stages.packed
        torque_args = (P.kind, P.a, P.b, P.anchor_b, P.axis_a, m.dof_start)
        # tree_box_step's arguments fixed by the plan (the frozen model's arrays)
        tree_args = (stages.tree.args, stages.joint_of, stages.body_of_block, stages.tree.nq, stages.kinematic,
                     stages.jq, stages.follows, stages.ratio, stages.live, m.dof_start, m.mass, m.inertia,
                     m.inv_inertia, stages.gravity)
        self.ndof, self.nj = m.ndof, P.motor_target.size
        #: the physics call's constant arrays as its one argument (tree_box_fused_step's ``fixed``)
        self.fixed = frozen_arrays((tree_args, torque_args, P.motor_target, P.motor_max_force,
                                    stages.joint_args, stages.blk_cols, stages.blk_ptr, stages.params, stages.passive))
        self.dense_rows = 2 * len(m.joints) + m.ndof       # the problem's rows but the contacts' (build's test)
        #: the most contacts whose problem (3 nc + dense_rows rows) the dense build takes: build's test
        #: 8 rows (2 rows + 1) <= DENSE_BYTES_LIMIT, worked out once
        self.dense_contacts = _dense_contacts(self.dense_rows)
        world = sim.world
        #: the detection's constant arrays (CollisionWorld.polytope_constants: cf, ci, and the sweep and
        #: reach views of cf that the call writes)
        self.constants = world.polytope_constants()
        #: the plausibility check's statics of the plan's (frozen) model (faults.fault_statics, its radii the world's)
        self.statics = fault_statics(sim)
        #: the last DONE step's contacts, result, packed ints and the result's arrays the next step reads
        self._last = None
        #: the physics call's machine code for a steady step's arguments (:func:`_compiled_entry`) and
        #: the objects whose identity keeps those arguments' types (:meth:`step`); None: not taken yet,
        #: False: not to be had
        self._entry, self._entry_for = None, None
        #: the model's Settings as the step last read them, and what it formed of them (:meth:`_read_settings`)
        self._settings_seen, self._settings_floats = None, None
        #: the motors' target array for which the call's torque and motor inputs are :attr:`_inputs`
        #: (idx, tau, targets, force limits, the plausibility check's targets); _UNSET: formed each step
        self._inputs_for, self._inputs = _UNSET, None

    def valid(self, sim) -> bool:
        """Whether this plan is still the simulator's (the same stages and controllers; a plain loop:
        this runs every step)."""
        ctrl, mine = sim.controllers, self.controllers
        if self.stages is not sim.stages or len(ctrl) != len(mine):
            return False
        for a, b in zip(ctrl, mine):
            if a is not b:
                return False
        return True

    def step(self):
        sim, stages = self.sim, self.stages
        # 1. the controllers; the state before the step
        for fn in sim.controllers:
            fn(sim)
        if not sim.planned(stages):         # a controller changed the configuration: the stages' step
            with self._limited():
                return checked_step(sim, sim._advance)
        data, world = sim.data, sim.world
        st = sim.model.settings
        if st.__dict__ != self._settings_seen:      # (read each step: the Model is frozen, its Settings are not)
            self._read_settings(st)
        h, margin, near, zeta, slop, zeta_j, cfm, new_bound, current, position_stage, position_zeta, gyro = \
            self._settings_floats
        position, quaternion, lin, ang = data.position, data.quaternion, data.linear_velocity, data.angular_velocity
        x0, q0, v0, w0 = position.copy(), quaternion.copy(), lin.copy(), ang.copy()
        prev_error = float(getattr(sim, "_fault_joint_error", 0.0))
        state = stages.state
        state.judged = None                 # (faults.checked_step)
        # 2. the detection (CollisionWorld._detect_matched_polytopes' call)
        t_start = perf_counter()
        prev, res = data.contacts, data.result
        last = self._last
        if last is not None and prev is last[0] and res is last[1] and prev.ints is last[2] \
                and res.normal is last[3] and res.motor is last[4] and res.limit is last[5] and res.tangent is last[6]:
            # the previous step was this one's DONE step, its contacts and result untouched: the packed
            # buffers and the warm start's arrays are those previous_packed and build would give
            prev_floats, prev_ints, prev_normal = prev.floats, last[2], last[3]
        else:
            last = None
            prev_floats, prev_ints, prev_normal = previous_packed(prev, None if res is None else res.normal)
        world.margin = margin
        cf, ci, sweep, reach = self.constants
        left, floats, ints = detect_and_match_polytopes(
            lin, ang, h, quaternion, position, margin, prev_floats, prev_ints, prev_normal, near, cf, ci)
        t_detect = perf_counter()
        world._sweep, world._reach = sweep, reach
        if left:        # a pair for coal: the stages' detection and step
            with self._limited():
                return checked_step(sim, sim._advance, (x0, v0, w0, prev_error))
        contacts = PackedContactSet(floats, ints)
        nc = ints.shape[0] // PACKED_INT_FIELDS          # (contacts.count)
        if nc > self.dense_contacts:        # the general build (models/common.py refuse_dense)
            return self._staged((x0, v0, w0, prev_error), StepWork(contacts, contacts.match, nc, h, t_start, t_detect))
        # 3. the call's inputs (CompiledSchurRowStages.build) and the physics step
        mt = data.motor_target
        if mt is self._inputs_for and not data.joint_torque and data.motor_max_force is self._inputs[3]:
            idx, tau, st_mt, st_mf, targets = self._inputs      # (the same motor arrays, no joint torques)
        else:
            idx, tau, st_mt, st_mf = stages.torque_inputs(data)
            targets = motor_targets(data)
            # kept while the motors' arrays are the same objects (their values change in place) and no
            # joint torque is set, where the targets are the array itself (not a converted copy)
            keep = not data.joint_torque and mt is not None and targets is mt and st_mt is mt
            self._inputs_for, self._inputs = (mt, (idx, tau, st_mt, st_mf, targets)) if keep else (_UNSET, None)
        warm = bool(sim.warm_start and data.warm.get("z") is not None and res is not None)
        if warm and last is not None:
            p_motor, p_limit, p_normal, p_tangent = res.motor, res.limit, prev_normal, res.tangent
        elif warm:
            f64 = np.ascontiguousarray
            p_motor, p_limit, p_normal = (f64(res.motor, dtype=np.float64), f64(res.limit, dtype=np.float64),
                                          f64(res.normal, dtype=np.float64))
            p_tangent = f64(res.tangent, dtype=np.float64).reshape(-1, 2)
        else:
            p_motor = p_limit = p_normal = NO_VALUES
            p_tangent = _NO_TANGENT
        actuated = bool(sim.has_actuation)
        kind, radius, jointed, mass = self.statics
        args = (self.fixed, gyro, quaternion, position, lin, ang, idx, tau, self.ndof, st_mt, st_mf, floats, ints,
                zeta, slop, h, zeta_j, cfm, new_bound, current, warm, p_motor, p_limit, p_normal, p_tangent,
                stages.threshold, position_stage, position_zeta, radius,
                (x0, v0, w0, kind, jointed, mass, prev_error, targets, actuated))
        # a steady step (the previous one this step's, DONE, with contacts: the warm start its own
        # arrays) passes arguments of the types of the steady step the entry was taken on: every
        # other is a constant of the plan or the module, a float or bool made here, the detection's
        # fresh arrays, or one of the objects compared below (their copies x0, v0, w0 with them)
        entry, seen, kernel = self._entry, self._entry_for, TB.tree_box_fused_step
        t0 = perf_counter()
        if entry and last is not None and seen[0] is position and seen[1] is quaternion and seen[2] is lin \
                and seen[3] is ang and seen[4] is idx and seen[5] is tau and seen[6] is st_mt and seen[7] is st_mf \
                and seen[8] is radius and seen[9] is warm and seen[10] is type(h) and seen[11] is kernel:
            res = entry(*args)
        else:
            res = kernel(*args)
            if entry is None and last is not None and res[0] == NK.DONE and getattr(kernel, "overloads", None):
                # (taken once the kernel is compiled: a tiered kernel's first calls run as Python)
                self._entry = _compiled_entry(kernel, args) or False
                self._entry_for = (position, quaternion, lin, ang, idx, tau, st_mt, st_mf, radius, warm, type(h),
                                   kernel)
        t_solved = perf_counter()
        outcome, e0, gain, ke, pe, pen, joint_error, nl, n, turn, verdict, out, modes = res
        if outcome != NK.DONE or (position_stage and nc and turn > TURN_TRIGGER * slop):
            return self._handed(res, contacts, nc, h, t_start, t_detect, t0, t_solved, (x0, q0, v0, w0, prev_error),
                                (floats, ints), zeta, slop, zeta_j, cfm, new_bound, current, warm, p_motor, p_limit,
                                p_normal, p_tangent, position_stage, position_zeta, gyro)
        # 4. the stages' bookkeeping (CompiledSchurRowStages.integrate, CompiledCall.finish and record) on
        # the call's answers, views of its one array (tree_box_fused_step: z (n), w (n), v+ (ndof), the
        # contacts' tangent impulses (nc, 2), the free velocity (ndof), the joints' torques' force (ndof),
        # the motors' targets and limits (nj each), the certificate's numbers (6), pgs-sm's counts)
        n, ndof = int(n), self.ndof
        a = 2 * n + ndof
        b = a + 2 * nc
        nm = n - nl - 3 * nc        # (z = out[:n]: the motors' rows, the limits', the contacts' normal rows)
        o_n = nm + nl
        z = out[:n]
        tangent = out[a:b].reshape(nc, 2)
        result = StepResult.of(out[2 * n:a], z[o_n:o_n + nc], tangent, _NO_JOINT, z[nm:o_n], z[:nm], modes)
        data.warm["z"] = z.copy()
        data.time += h
        data.steps += 1
        if data.joint_torque:
            data.joint_torque.clear()
        data.contacts, data.result = contacts, result
        stages.joint_space = True
        seconds = t_solved - t0
        e = b + ndof
        d = e + ndof + 2 * self.nj
        self._last = (contacts, result, ints, result.normal, result.motor, result.limit, tangent) if nc else None
        # the system, the Solution (Simulator.last_system, last_solution) and the timing formed when read
        state.leave(contacts, h, self._system_terms, (x0, q0, v0, w0, out, e, gyro, contacts, zeta, slop, zeta_j, h),
                    out[b:e], _answer_solution, (out, n, d, sim.method, seconds),
                    (t_start, t_detect, t0, t_solved, perf_counter()))
        e1 = ke + pe
        iterations, residual = pgs_sm_counts_at(out, d)     # (the Solution's, built when read)
        rec = StepRecord.solved(data.time, nc, n, iterations, residual, ke, e1, e1 - e0, gain, pen, seconds,
                                joint_error)
        v = verdict[0]
        if v:
            with self._limited():
                if v == NOT_JUDGED:    # (radii not one per body: planned out) the check formed here
                    rec.fault = step_fault(sim, (x0, v0, w0, prev_error), rec)
                else:
                    depth = max(float(pen), 0.0) if math.isfinite(pen) else 0.0
                    rec.fault = fault_words(sim, verdict, depth, prev_error, rec)
            rec.plausible = not rec.fault
        sim._fault_joint_error = float(joint_error) if math.isfinite(joint_error) else 0.0
        return rec

    def _read_settings(self, st) -> None:
        """The step's floats from the model's Settings ``st`` and the plan's model options (frozen: a
        new plan where they change), formed again whenever a setting's value changed
        (:attr:`_settings_seen`, compared by value each step): (h, margin, the matching radius, the
        contacts' bias zeta, slop, the joints' zeta, cfm, the new contacts' bound, the current
        coupling, the position stage, the position correction's zeta, gyroscopic), as
        CompiledSchurRowStages.build reads them."""
        o = self.sim.model_options
        margin = float(st.margin)
        self._settings_floats = (float(st.dt), margin, 2.0 * margin + 1e-3,
                       float(st.contact_zeta if st.contact_stabilization == "velocity" else 0.0), float(st.slop),
                       float(st.zeta), float(o.cfm + st.cfm), float(o.new_contact_bound), o.coupling == "current",
                       st.contact_stabilization == "position", float(st.contact_zeta), bool(st.gyroscopic))
        self._settings_seen = dict(st.__dict__)

    def _system_terms(self, x0, q0, v0, w0, out, e, *args):
        """The stages' ``system_terms`` for the deferred system (StepState.defer) of a step whose call
        answered in ``out``: the state before it, the joints' torques' force and the motors' targets
        and limits (``out[e:]``: ndof, nj, nj)."""
        ndof, nj = self.ndof, self.nj
        c = e + ndof
        return self.stages.system_terms((x0, q0, v0, w0, out[e:c], out[c:c + nj], out[c + nj:c + 2 * nj]), *args)

    def _handed(self, res, contacts, nc, h, t_start, t_detect, t0, t_solved, before5, packed, zeta, slop, zeta_j, cfm,
                new_bound, current, warm, p_motor, p_limit, p_normal, p_tangent, position_stage, position_zeta, gyro):
        """A step whose call declined (nothing changed: the stages' solve, the maximal call, the general
        stages) or that the stages finish: a deep contact's position correction, a fast turn's
        correction (the stages' integrate and correct; a DEEP step's turn bound is formed after its
        correction moved the bodies: turns.fires), on the call's answers."""
        outcome, e0, gain, ke, pe, pen, joint_error, nl, n, turn, verdict, out, modes = res
        x0, q0, v0, w0, prev_error = before5
        before = (x0, v0, w0, prev_error)
        if outcome == NK.DECLINED:
            return self._staged(before, StepWork(contacts, contacts.match, nc, h, t_start, t_detect))
        n, ndof, nj = int(n), self.ndof, self.nj
        a = 2 * n + ndof
        b = a + 2 * nc
        c = b + 2 * ndof
        d = c + 2 * nj
        z, wv, v_next, tangent, v_free = out[:n], out[n:2 * n], out[2 * n:a], out[a:b].reshape(nc, 2), out[b:b + ndof]
        f, mt, mf, numbers, stats = out[b + ndof:c], out[c:c + nj], out[c + nj:d], out[d:d + 6], out[d + 6:]
        before_call = (x0, q0, v0, w0, f, mt, mf)
        stages, sim = self.stages, self.sim
        stages.joint_space = True
        sol = _joint_space_solution(z, wv, numbers, stats, sim.method, t_solved - t0)
        w = StepWork(contacts, contacts.match, nc, h, t_start, t_detect, compiled=True, sol=sol, n=n, e0=e0,
                     contact_gain=gain, t0=t0, t_solved=t_solved, turn_bound=turn if outcome == NK.DONE else None)
        inputs = (f, packed, zeta, slop, mt, mf, zeta_j, cfm, new_bound, current, warm, p_motor, p_limit,
                  p_normal, p_tangent, position_stage, position_zeta, bool(sim.model.settings.project_joints), gyro,
                  before_call)
        w.call = (outcome, ke, pe, pen, joint_error, v_next, tangent, modes, int(nl), _NO_JOINT, v_free, before_call,
                  None, inputs)
        with self._limited():
            return checked_step(sim, lambda: self._finish(w), before)

    def _limited(self):
        """Simulator.step's BLAS limit, for the paths of a step it runs outside it (:attr:`blas_free`):
        the stages' Python; inside an open limit to the same count it touches nothing (contactlab/blas.py)."""
        return blas_threads(self.sim.blas_threads)

    def _finish(self, w: StepWork):
        """The stages' certify, integrate, correct and record on the call's outcome ``w``."""
        stages = self.stages
        stages.certify(w)
        stages.integrate(w)
        stages.correct(w)
        return stages.record(w)

    def _staged(self, before, w: StepWork):
        """The stages' step from build on ``w``'s contacts, checked (faults.checked_step)."""
        stages = self.stages

        def take():
            stages.build(w)
            stages.solve(w)
            return self._finish(w)
        with self._limited():
            return checked_step(self.sim, take, before)


def _dense_contacts(fixed_rows: int) -> int:
    """The largest contact count nc whose rows = 3 nc + ``fixed_rows`` pass the dense build's test
    8 rows (2 rows + 1) <= DENSE_BYTES_LIMIT (CompiledSchurRowStages.build; models/common.py refuse_dense);
    -1 where none does."""
    fits = lambda nc: 8 * (3 * nc + fixed_rows) * (2 * (3 * nc + fixed_rows) + 1) <= DENSE_BYTES_LIMIT
    if not fits(0):
        return -1
    lo, hi = 0, 1
    while fits(hi):
        lo, hi = hi, 2 * hi
    while hi - lo > 1:          # fits(lo), not fits(hi)
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return lo


def _compiled_entry(kernel, args):
    """The machine code ``kernel`` runs for ``args`` (its compiled specialisation's entry point: a C
    function called as ``entry(*args)``), or None where none is compiled for exactly their types (or
    the kernel runs as Python: ``NUMBA_DISABLE_JIT``). A call through it skips the dispatcher's typing
    of every argument on every call (each array's type code, each tuple's fingerprint: the physics
    call's 30 arguments, one of them a tuple of arrays; the plan's ~50 constant arrays cross as one
    :class:`~contactlab.kernels.frozen.FrozenArrays`). Only for calls whose arguments
    have exactly these types, which the caller knows by construction (:meth:`FusedGraspStep.step`): an
    argument of another type (dtype, dimensions, layout, read-only flag) would be misread, not
    rejected. Called right after ``kernel(*args)`` returned: a kernel with one compiled specialisation
    has just run it on ``args`` (the dispatcher calls that same entry point with the arguments as
    given), so its entry is taken as is; with several, ``args`` are typed to find theirs (a few
    hundred microseconds, once per plan)."""
    overloads = getattr(kernel, "overloads", None)
    if not overloads:       # (not compiled yet)
        return None
    if len(overloads) == 1:
        return next(iter(overloads.values())).entry_point
    try:
        types = tuple(kernel.typeof_pyval(a) for a in args)
    except Exception:       # a value numba cannot type: the dispatcher's calls
        return None
    found = overloads.get(types)
    return None if found is None else found.entry_point


def _answer_solution(out, n: int, d: int, method: str, seconds: float):
    """:func:`_joint_space_solution` of a steady step's answer ``out`` (tree_box_fused_step's one
    array: z, w of ``n`` rows first, the certificate's numbers at ``d``, pgs-sm's counts after them),
    built when read (StepState.solve_later)."""
    return _joint_space_solution(out[:n], out[n:2 * n], out[d:d + 6], out[d + 6:], method, seconds)


def _joint_space_solution(z, wv, numbers, stats, method: str, seconds: float):
    """The Solution of the fused step's certified answer: the stages' (pgs_sm_solution, marked
    ``joint_space`` as CompiledTreeSchurRowStages.solve marks it)."""
    sol = pgs_sm_solution(z, wv, numbers, stats, method, seconds)
    sol.info["joint_space"] = True
    return sol

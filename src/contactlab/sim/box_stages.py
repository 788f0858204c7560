"""The stages of models whose problem is a boxed LCP given by its rows (box friction), general and
compiled (:class:`contactlab.sim.stages.Stages` for the interface).

:class:`RowStages`: a contact model with ``sweep_heights(system, options, gravity)`` (each row's height for
top-down sweeps), and for the options where ``rows_available(options)`` holds, ``rows(system,
options)`` (the problem without its matrix: H, q, cfm, lo, hi, findex, mu). The general stages,
where

* a method whose options take row heights (PGS's ``height``) sweeps the rows top down;
* in fixed-budget mode, a method whose default options are those of the matrix-free sweeps
  (:mod:`contactlab.kernels.pgs_matrix_free` reproduces PGS's iterates; no solver option other than the budget and
  its stops) solves without forming the Delassus matrix;
* a method whose options are box-qp's, in certified mode, takes the warm start without the Delassus
  matrix where box-qp would return it without a Newton step (:meth:`RowStages.certified_warm_start`).

:class:`CompiledRowStages`: the same on scenes of free bodies (no joint, planar or kinematic body,
no reuse or islands option) for a model declaring ``COMPILED_STEP = "box-rows"`` (its rows are
those the kernels of :mod:`contactlab.sim.box_kernels` build): the step after detection is one
compiled call (box-qp certified, or the fixed budget's matrix-free PGS), the same bits as the
stages above; a step it declines (nothing changed) is taken by them.
"""
from __future__ import annotations

import dataclasses
import math
import time

import numpy as np

from ..collision.contacts import packed
from ..kernels.energy import energies_and_depth
from ..kernels.pgs import CONVERGED as _PGS_CONVERGED, MAX_SWEEPS as _PGS_MAX_SWEEPS, STALLED as _PGS_STALLED
from ..kernels.pgs_matrix_free import solve_matrix_free
from ..kernels.tolerances import CERTIFY
from ..mechanics.model import KIND_KINEMATIC
from ..mechanics.system import block_pattern as _block_pattern, live_bodies as _live, packed_joints as _packed
from ..models.box_friction import centre_of
from ..models.common import StepResult
from ..solution import Solution, Status
from ..solvers.box_qp import BoxQPOptions, dense_factor_cache as _dense_factors
from ..solvers.pgs import PGSOptions
from . import box_kernels as BS
from .fallback import certified
from .faults import NOT_JUDGED, fault_statics, motor_targets
from .box_joint_stages import SCHUR_STAGES
from .tree_box_stages import TREE_SCHUR_STAGES
from .stages import CompiledCall, Stages, StepState, StepWork

# a step's arguments where it has no warm start (never written: the kernels only read them)
_NO_NORMAL, _NO_TANGENT = np.zeros(0), np.zeros((0, 2))
# a step's joint, limit and motor impulses (none on these scenes): one read-only empty array
_NONE = np.zeros(0)
_NONE.flags.writeable = False

#: the solver options the matrix-free sweeps take (the budget and its stops)
MATRIX_FREE_OPTIONS = frozenset({"tol", "w_step_tol", "max_iterations", "max_sweeps"})

#: what a model's ``COMPILED_STEP`` names for :class:`CompiledRowStages` (:mod:`contactlab.models.box_friction`)
COMPILED_FORM = "box-rows"


def free_bodies_only(model) -> bool:
    """Whether every moving body of ``model`` is a free rigid body (6 dof, no joint, no planar or
    kinematic body, no special pair): the scenes whose box-friction steps the compiled kernels take."""
    P, live = _packed(model), _live(model)
    return not (P.a.size or P.special.size or model.joints or np.any(model.planar)
                or np.any(model.kind == KIND_KINEMATIC) or not live.size or 6 * live.size != model.ndof)


def sweeps_as_matrix_free(spec) -> bool:
    """Whether ``spec``'s method, with its default options, sweeps as the matrix-free PGS does
    (:mod:`contactlab.kernels.pgs_matrix_free`: the iterates of Gauss-Seidel without relaxation, shuffle, step stop
    or cfm, in the rows' classes, normals first): every option of PGS's, at PGS's default, but for
    the budget and the stops."""
    if spec is None:
        return False
    try:
        opts = spec.options()
    except Exception:       # an options class that needs arguments
        return False
    ref = PGSOptions()
    for f in dataclasses.fields(ref):
        if not hasattr(opts, f.name):
            return False
        if f.name not in MATRIX_FREE_OPTIONS and getattr(opts, f.name) is not getattr(ref, f.name) \
                and getattr(opts, f.name) != getattr(ref, f.name):
            return False
    return True


_PGS_STATUS = {_PGS_CONVERGED: Status.SOLVED, _PGS_MAX_SWEEPS: Status.MAX_ITERATIONS,
               _PGS_STALLED: Status.NO_SOLUTION_FOUND}


def matrix_free_solution(z, w, velocity_change, code, stats) -> Solution:
    """The Solution of matrix-free PGS (:func:`contactlab.kernels.pgs_matrix_free.solve_matrix_free_kernel`'s z, w, code and stats;
    ``velocity_change`` = W H' z, flat): the fixed-budget steps' answer, compiled or not."""
    return Solution(z=z, w=w, status=_PGS_STATUS.get(int(code), Status.NUMERICAL_FAILURE), iterations=int(stats[0]),
                    residual=float(stats[1]), method="pgs", relative_residual=float(stats[2]),
                    info={"matrix_free": True, "last_step": float(stats[3]), "velocity_change": velocity_change})


class RowStages(Stages):
    """The general stages with what a model given by its rows allows (module docstring).
    ``warm_start_certify`` (set False to switch it off): try the warm start without the Delassus
    matrix where it may certify."""

    @classmethod
    def plan(cls, sim, state: StepState):
        return cls(sim, state) if callable(getattr(sim.contact_model, "sweep_heights", None)) else None

    def __init__(self, sim, state: StepState):
        super().__init__(sim, state)
        model = sim.contact_model
        has_rows = bool(callable(getattr(model, "rows", None)) and callable(getattr(model, "rows_available", None))
                        and model.rows_available(sim.model_options))
        spec = self.spec
        self.options = None
        if spec is not None:    # a bad option raised in Simulator.__init__; one changed since raises at solve()
            try:
                self.options = spec.make_options({k: v for k, v in sim.solver_options.items() if k != "certify"})
            except Exception:
                self.options = None
        fields = {f.name for f in dataclasses.fields(spec.options)} if spec is not None else set()
        self.heights = "height" in fields and not sim.islands
        # fixed-budget sweeps on the rows and M^-1's blocks, the Delassus matrix never formed
        # (contactlab.kernels.pgs_matrix_free); other solver options than the budget and its stops: assembled
        self.matrix_free = bool(sim.iterations is not None and has_rows and sim.reuse is None
                                and sweeps_as_matrix_free(spec) and set(sim.solver_options) <= MATRIX_FREE_OPTIONS)
        # box-qp's stop at its warm start, tested without the Delassus matrix (certified_warm_start)
        self.warm_start_certify = bool(sim.iterations is None and isinstance(self.options, BoxQPOptions)
                                       and sim.warm_start and sim.reuse is None and not sim.islands and has_rows)
        self.warm_tol = 0.0
        if self.warm_start_certify:
            tol = float(self.options.tol)
            self.warm_tol = tol if 0.0 < tol <= float(sim.solver_options.get("certify", CERTIFY)) else 0.0

    # -- build ------------------------------------------------------------------------------------
    def assemble(self, w: StepWork) -> None:
        """The rows without the matrix (matrix-free solve), or the warm start certified without
        the matrix (no problem to build: it is built from the system when read), else the problem."""
        sim = self.sim
        if self.matrix_free and w.sys.body_blocks:
            w.rows = sim.contact_model.rows(w.sys, sim.model_options)
            return
        if w.warm is not None and self.may_certify_warm(w.sys):
            w.t0 = time.perf_counter()
            out = self.certified_warm_start(w.sys, w.warm)
            if out is not None:
                w.n, w.sol = out
                w.unbuilt = True
                return
        super().assemble(w)

    def solver_arguments(self, w: StepWork) -> None:
        """Top-down sweeps: each row's height (:func:`contactlab.models.box_friction.sweep_heights`), as the
        matrix-free sweeps order them; box-qp's proximal step after a poor step (``proximal_after_poor``)."""
        sim = self.sim
        if self.heights:
            w.kwargs["height"] = sim.contact_model.sweep_heights(w.sys, sim.model_options, sim.model.gravity)
        rho = self.options.proximal_after_poor if isinstance(self.options, BoxQPOptions) else 0.0
        if rho > 0.0 and self.options.proximal == 0.0:
            # a step after a poor one (box-qp handed rows to its interior point: info ``handed``) that came
            # after one that was not (``handed_run`` 1: a landing pile's run of impact steps takes none) takes
            # one proximal-point step from its warm start (solvers/box_qp/options.py ``proximal_after_poor``)
            last = sim.last_solution
            if last is not None and last.info.get("handed_run", 0) == 1:
                w.kwargs["proximal"] = rho

    # -- solve ------------------------------------------------------------------------------------
    def solve(self, w: StepWork) -> None:
        if w.sol is not None:           # the warm start, certified without the matrix
            return
        if w.rows is not None:
            w.t0 = time.perf_counter()
            out = self.solve_matrix_free(w)
            if out is not None:
                w.n, w.sol = out
                w.unbuilt = True
                return
            super().assemble(w)         # a row on more than two bodies: the assembled problem
        super().solve(w)
        if isinstance(self.options, BoxQPOptions) and w.sol.info.get("handed", 0) > 0:
            # how many steps in a row box-qp handed rows over, this one included (proximal_after_poor's rule)
            last = self.sim.last_solution
            w.sol.info["handed_run"] = 1 + (last.info.get("handed_run", 0) if last is not None else 0)

    def solve_matrix_free(self, w: StepWork):
        """Fixed-budget solve without the Delassus matrix: (n, Solution) (None when a row touches
        more than two bodies) from :func:`contactlab.kernels.pgs_matrix_free.solve_matrix_free`
        (same iterates as ``pgs`` on the assembled problem, same stopping tol and w_step_tol,
        residuals of ``solve()``'s definition)."""
        sim, sys = self.sim, w.sys
        H, q, cfm, lo, hi, findex, mu = w.rows         # box_friction.rows (the build stage)
        n = H.shape[0]
        warm = w.warm if sim.warm_start else None
        z0 = warm if (warm is not None and warm.shape == (n,)) else None
        tol, w_step_tol = sim.sweep_stops()
        try:
            z, wv, dv, code, st = solve_matrix_free(H, sys.W_blocks, q, cfm, lo, hi, findex, mu, z0,
                                                    max_sweeps=sim.iterations, tol=tol, w_step_tol=w_step_tol,
                                                    height=sim.contact_model.sweep_heights(sys, sim.model_options,
                                                                                            sim.model.gravity))
        except ValueError:      # a row on more than two bodies: this step takes the assembled path
            return None
        return n, matrix_free_solution(z, wv, dv.reshape(-1), code, st)

    def may_certify_warm(self, sys=None) -> bool:
        """Whether a certified step first tries its warm start without the Delassus matrix
        (:meth:`certified_warm_start`; :func:`contactlab.sim.box_kernels.box_friction_step` with ``try_warm``):
        box-qp's options, no reuse or islands option (a solve() per island asked for), a warm start,
        after a certified step of at most one Newton step (a resting stack's or settled pile's steps
        take 0 and 1 in turn, the warm start after a Newton step being the answer; a moving pile's
        take tens, and the try would cost three sparse passes for nothing); ``sys``: the step's
        system (its rows must be whole body blocks)."""
        prev = self.state.solution
        return bool(self.warm_start_certify and (sys is None or sys.body_blocks)
                    and prev is not None and prev.success and prev.iterations <= 1)

    def certified_warm_start(self, sys, warm):
        """The warm start as the step's answer where box-qp would return it without a Newton step,
        found without the Delassus matrix (:func:`contactlab.sim.box_kernels.warm_start_stop`: W H' z, w, and
        box-qp's own stop at its start, whose units |q_i| + |w_i - q_i| make it an upper bound of
        solve()'s relative residual). No wasted work: a resting stack's warm start after a Newton
        step mostly is the answer, and assembling H W H' and running box-qp to find that out cost
        more than the rest of the step. Returns (n, Solution) with status SOLVED, 0 iterations,
        that bound as ``relative_residual`` (info ``warm_start_certified`` and
        ``relative_residual_bound``), or None (the assembled path takes the step); None as well
        where box-qp's ``tol`` is above the certification threshold. The compiled step does the
        same in the same order. A tolerance of solve()'s certification threshold instead (1e-6,
        ten times box-qp's) let a resting 100-box stack take answers box-qp would have refined,
        rock, and need 3.4 Newton steps a step instead of 0.5; with box-qp's own, the runs are the
        same bits (a stack with the current normals' bounds; with the previous normals' a 30-box
        stack parts at a step or two, 2e-10 m after 100 steps: box-qp measures its islands and
        set-aside rows each on their own)."""
        sim, tol = self.sim, self.warm_tol
        H, q, cfm, lo, hi, findex, mu = sim.contact_model.rows(sys, sim.model_options)
        n = H.shape[0]
        if warm.shape != (n,) or tol == 0.0:
            return None
        z = np.ascontiguousarray(warm, dtype=np.float64)
        W = sys.Minv
        taken, w, dv, c = BS.warm_start_stop(H.indptr, H.indices, H.data, W.indptr, W.indices, W.data, float(cfm),
                                             np.ascontiguousarray(q, dtype=np.float64), lo, hi, findex, mu, z, tol)
        if not taken:
            return None
        info = {"warm_start_certified": True, "relative_residual_bound": True, "velocity_change": dv}
        return n, Solution(z=z.copy(), w=w, status=Status.SOLVED, iterations=0, residual=c[0], method=sim.method,
                           complementarity=c[1], infeasibility=c[2], relative_residual=c[3], info=info)


class CompiledRowStages(CompiledCall, RowStages):
    """:class:`RowStages` on scenes of free bodies, the step after detection in one compiled call:
    certified mode by box-qp (:func:`contactlab.sim.box_kernels.box_friction_step`, steps with up to
    ``dense_max`` / 3 contacts: a dense problem) or fixed-budget mode by matrix-free PGS
    (:func:`contactlab.sim.box_kernels.box_friction_fixed_step`, any step). A step with a joint torque
    set, one past ``dense_max``, or one the call declines (nothing changed) is taken by the
    :class:`RowStages` on the same contacts."""

    compiled = True

    @classmethod
    def plan(cls, sim, state: StepState):
        model = sim.contact_model
        if not (sim.compiled and getattr(model, "COMPILED_STEP", None) == COMPILED_FORM
                and callable(getattr(model, "sweep_heights", None)) and sim.reuse is None and not sim.islands
                and free_bodies_only(sim.model)):
            return None
        stages = cls(sim, state)
        return stages if stages.fixed is not None else None

    def __init__(self, sim, state: StepState):
        super().__init__(sim, state)
        opts = self.options
        self.fixed = None           # None: no compiled step for this configuration
        if self.matrix_free:
            self.fixed = True
        elif sim.iterations is None and isinstance(opts, BoxQPOptions) and \
                (opts.algorithm == "newton" or (opts.algorithm == "auto" and opts.newton_steps > 0)) and \
                sim.contact_model.rows_available(sim.model_options):
            self.fixed = False
            self.newton_only = opts.algorithm == "newton"
            certify = float(sim.solver_options.get("certify", CERTIFY))
            self.threshold = opts.tol if opts.tol > certify else certify     # solve()'s max(certify, tol)
            self.max_rows = int(sim.model_options.dense_max)
        if self.fixed is None:
            return
        m = sim.model       # frozen: its arrays are the plan's (a new model is planned anew)
        self.live = _live(m)
        self.blk_cols, self.blk_ptr = _block_pattern(self.live.size)
        self.gravity = np.asarray(m.gravity, dtype=np.float64)
        self.model_args = (self.live, m.ndof, m.dof_start, m.kind, KIND_KINEMATIC, m.mass, m.inertia,
                           m.inv_inertia, self.gravity) if self.fixed else \
            (self.live, m.ndof, m.dof_start, m.mass, m.inertia, m.inv_inertia, self.gravity)
        self.cfm = float(sim.model_options.cfm + m.settings.cfm)
        self.centre = centre_of(sim.model_options, self.cfm)     # the normal rows' cfm centre (box_friction)

    def system_terms(self, gyroscopic, before, floats, ints, h, zeta, slop):
        """:func:`contactlab.mechanics.system.assemble_system`'s (f, (M_blocks, W_blocks, v), (rows data, indices, indptr,
        normal bias), v_free) of a step this plan took (:func:`contactlab.sim.box_kernels.system_terms`), for the
        system assembled when read (StepState.defer)."""
        m = self.sim.model
        f, M_blocks, W_blocks, v, v_free, dv, ix, ip, n_bias = BS.system_terms(
            self.live, m.ndof, m.dof_start, m.mass, m.inertia, m.inv_inertia, self.gravity, gyroscopic, before, floats,
            ints, h, zeta, slop)
        return f, (M_blocks, W_blocks, v), (dv, ix, ip, n_bias), v_free

    # -- build: the compiled call's inputs --------------------------------------------------------
    def build(self, w: StepWork) -> None:
        sim = self.sim
        data = sim.data
        if data.joint_torque or (not self.fixed and 3 * w.nc > self.max_rows):
            return super().build(w)
        w.compiled = True
        st = sim.model.settings     # read each step: the Model is frozen, its Settings object is not
        prev = data.result
        warm = bool(sim.warm_start and data.warm.get("z") is not None and prev is not None)
        floats, ints = packed(w.contacts, w.match)
        f64, f8 = np.ascontiguousarray, np.float64
        h = w.h
        zeta, slop, gyroscopic = float(st.contact_zeta if st.contact_stabilization == "velocity" else 0.0), \
            float(st.slop), bool(st.gyroscopic)
        args = (floats, ints, h, zeta, slop, self.cfm, float(sim.model_options.new_contact_bound),
                sim.model_options.coupling == "current", self.centre, warm,
                f64(prev.normal, dtype=f8) if warm else _NO_NORMAL,
                f64(prev.tangent, dtype=f8) if warm else _NO_TANGENT, self.blk_cols, self.blk_ptr, self.passive)
        w.call = (args, warm, gyroscopic, floats, ints, h, zeta, slop, st.contact_stabilization == "position",
                  float(st.contact_zeta))

    # -- solve: build to integration, compiled ----------------------------------------------------
    def solve(self, w: StepWork) -> None:
        if not w.compiled:
            return super().solve(w)
        sim = self.sim
        model, data = sim.model, sim.data
        args, warm, gyroscopic, floats, ints, h, zeta, slop, position_stage, position_zeta = w.call
        nc = w.nc
        n = w.n = 3 * nc
        judged = None
        if self.fixed:
            w.t0 = time.perf_counter()
            (outcome, code, stats, e0, gain, ke, pe, pen, out, modes) = BS.box_friction_fixed_step(
                *self.model_args, gyroscopic, data.quaternion, data.position, data.linear_velocity,
                data.angular_velocity, *args, int(sim.iterations), *sim.sweep_stops(), position_stage, position_zeta)
            w.t_solved = time.perf_counter()
            if outcome != BS.DECLINED:
                z, wv, dvel, v_next, tangent, before, _ = _split(out, n, 6 * self.live.size, model.ndof, nc, model.nb)
                w.sol = matrix_free_solution(z, wv, dvel, code, stats)
                deep = False
        else:
            opts = self.options
            steps, full = (opts.max_iterations, False) if self.newton_only or n <= opts.small_n \
                else (opts.newton_steps, True)
            cL, cA, cF, ck = _dense_factors(n)
            # the per-step checks' inputs (faults.step_fault, turns.fires): the call forms both
            statics = fault_statics(sim)
            kind, radius, jointed, mass = statics
            prev_error = float(getattr(sim, "_fault_joint_error", 0.0))
            w.t0 = time.perf_counter()
            (outcome, its, outer, deep, e0, gain, ke, pe, pen, numbers, out, modes, taken, turn,
             verdict) = BS.box_friction_step(
                *self.model_args, gyroscopic, data.quaternion, data.position, data.linear_velocity,
                data.angular_velocity, *args, float(opts.tol), int(steps), float(opts.armijo), full, self.newton_only,
                int(opts.max_outer), cL, cA, cF, ck, self.threshold, position_stage, position_zeta,
                warm and self.warm_tol > 0.0 and self.may_certify_warm(), radius, kind, mass, prev_error, jointed,
                motor_targets(data), bool(sim.has_actuation))
            w.t_solved = time.perf_counter()
            if outcome != BS.DECLINED:
                z, wv, _, v_next, tangent, before, _ = _split(out, n, 0, model.ndof, nc, model.nb)
                # the turn bound on the world's radii (turns.fires); the verdict with its inputs (faults.judged_verdict)
                w.turn_bound = turn if radius is getattr(sim.world, "body_radius", None) else None
                judged = None if verdict[0] == NOT_JUDGED else (
                    verdict, statics, (max(pen, 0.0) if math.isfinite(pen) else 0.0, prev_error,
                                       bool(sim.has_actuation), gain, ke, ke + pe, h, slop),
                    out[out.size - 18 * model.nb:])
                solved = outcome == BS.SOLVED
                info = {"outer": int(outer)} if solved else {}
                if taken:       # the warm start, certified without M (RowStages.certified_warm_start)
                    info = {"warm_start_certified": True, "relative_residual_bound": True}
                sol = Solution(z=z, w=wv, status=Status.SOLVED if solved else Status.TRIVIAL, iterations=int(its),
                               method="box-qp", info=info)
                sol.residual, sol.complementarity, sol.infeasibility = numbers[0], numbers[1], numbers[2]
                sol.relative_residual = max(numbers[3], numbers[5]) if solved else 0.0
                w.sol = sol
        if outcome == BS.DECLINED:      # nothing changed: the general stages take the step
            w.compiled = False
            super().build(w)
            return super().solve(w)
        w.sol.time_s = w.t_solved - w.t0
        w.e0, w.contact_gain = e0, gain
        w.call = (gyroscopic, before, floats, ints, h, zeta, slop, deep, ke, pe, pen, v_next, tangent, modes, z, judged)

    # -- certify ----------------------------------------------------------------------------------
    def certify(self, w: StepWork) -> None:
        if not w.compiled:
            return super().certify(w)
        w.primary_ok = bool(w.sol.success)
        w.rescued = not w.primary_ok and certified(w.sol)
        w.t_solve = w.t_solved - w.t0

    # -- integrate: done in the call but for a deep contact's position correction -----------------
    def integrate(self, w: StepWork) -> None:
        if not w.compiled:
            return super().integrate(w)
        sim = self.sim
        model, data = sim.model, sim.data
        gyroscopic, before, floats, ints, h, zeta, slop, deep, ke, pe, pen, v_next, tangent, modes, z, judged = w.call
        nc = w.nc
        result = StepResult(v_next=v_next, normal=z[:nc], tangent=tangent, joint=_NONE, limit=_NONE, motor=_NONE,
                            modes=modes)
        data.warm["z"] = z.copy()
        self.state.defer(w.contacts, h, self.system_terms, (gyroscopic, before, floats, ints, h, zeta, slop))
        self.state.judged = judged
        if deep:        # the position correction (Simulator.project_contacts), then the energies
            sim.project_contacts(sim.last_system, v_next)
            ke, pe, pen = energies_and_depth(model.dof_start, model.mass, model.inertia, data.quaternion,
                                             data.linear_velocity, data.angular_velocity, data.position,
                                             self.gravity, np.ascontiguousarray(w.contacts.phi, dtype=np.float64))
        data.time += h
        data.steps += 1
        data.contacts, data.result = w.contacts, result
        self.state.solution = w.sol
        w.result = result
        w.call = (ke, pe, pen)
        w.t_integrated = time.perf_counter()


def _split(out, n: int, nv: int, ndof: int, nc: int, nb: int) -> tuple:
    """The views of :func:`contactlab.sim.box_kernels.results`' array: (z, w, velocity change (nv,), v+, tangent
    impulses (nc, 2), state before (13 nb), what follows it (the certified step: positions and velocities
    after the step, 9 nb))."""
    a = 2 * n + nv
    b = a + ndof
    c = b + 2 * nc
    return (out[:n], out[n:2 * n], out[2 * n:a], out[a:b], out[b:c].reshape(nc, 2), out[c:c + 13 * nb],
            out[c + 13 * nb:])


#: the model-specific stages, most specific first (:func:`contactlab.sim.simulator.plan_stages`)
STAGES = (CompiledRowStages, *TREE_SCHUR_STAGES, *SCHUR_STAGES, RowStages)

#: the former name of the compiled stages (``contactlab.sim.box_step.BoxFrictionStep``)
BoxFrictionStep = CompiledRowStages

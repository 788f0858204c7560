"""The stages of one simulation step, one interface for every contact model.

:meth:`contactlab.sim.Simulator.step` reads as a list of stages, as MuJoCo mjx's ``step`` reads
``forward`` then ``euler``::

    control -> plan -> detect -> build -> solve -> certify -> integrate -> correct -> record

Each stage is a method of one :class:`Stages` object, chosen once per configuration
(:func:`contactlab.sim.simulator.plan_stages`) from the capabilities the contact model and the method declare,
never by comparing their names inside the step:

* :class:`Stages`: every model, through its ``build`` and ``recover`` (:mod:`contactlab.models`) and
  ``solve()``; the general path.
* :class:`contactlab.sim.box_stages.RowStages`: models whose problem is a boxed LCP given by its
  rows (``rows(system, options)``, ``sweep_heights(system, options)``: box friction): the same
  stages, and the solve may run matrix-free (fixed budget, PGS sweeps) or take the warm start
  certified without the Delassus matrix (box-qp).
* :class:`contactlab.sim.box_stages.CompiledRowStages`: those rows on scenes of free bodies
  (``COMPILED_STEP`` of the model): build to integration in one compiled call
  (:mod:`contactlab.sim.box_kernels`), the general stages taking any step it declines.
* :class:`contactlab.sim.noslip_stages.CompiledNoSlipStages`: the no-slip model solved by ppm on
  jointed free bodies (``COMPILED_STEP = "noslip-metric"``): build to the joint projection in one
  compiled call (:mod:`contactlab.sim.noslip_kernels`), the general stages taking any step it declines.
* :class:`contactlab.sim.st_stages.CompiledSTStages`: Stewart-Trinkle solved by Lemke on jointed scenes
  (``COMPILED_STEP = "stewart-trinkle-mixed"``): the model's build, the Schur complement, Lemke, solve()'s
  certificate and the recovery in one compiled call (:mod:`contactlab.sim.st_kernels`) after the general
  ``build_system``, the general stages taking any step it declines.
* :class:`contactlab.sim.box_joint_stages.CompiledSchurRowStages`: box friction with the joints eliminated
  (``joints="schur"``) solved by pgs-sm on jointed scenes: the system's terms, the Schur complement,
  pgs-sm, solve()'s certificate, the recovery and the integration in one compiled call
  (:mod:`contactlab.sim.box_joint_kernels`), the general stages taking any step it declines.
* The same two in joint coordinates where the joints form a forest (:func:`contactlab.mechanics.tree.tree_topology`):
  :class:`contactlab.sim.tree_stages.CompiledTreeNoSlipStages` (legged robots: a floating base and its legs) and
  :class:`contactlab.sim.tree_box_stages.CompiledTreeSchurRowStages` (a hand rooted at a kinematic palm, its
  couplings a reduction of the coordinates), each handing a step it declines to its maximal-coordinate parent.

A step's intermediate values travel in a :class:`StepWork`; what persists between steps besides the
bodies' state (``Data``: contacts, the last StepResult, the warm start) is one :class:`StepState`
(the last system, problem and answer, assembled when read where a compiled step did not form them,
and the seconds per stage).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from ..collision import CollisionWorld, detect_then_match
from ..errors import SimulationError
from ..kernels.energy import energies as _energies, energies_and_depth
from ..mechanics import kernels as _MK
from ..mechanics.model import KIND_KINEMATIC, Data, Model
from ..mechanics.system import assemble_system, build_system
from ..models.built import problem_of
from ..problems import LCP, BoxedLCP
from ..solvers import available_solvers, solve
from . import turns
from .fallback import certified, rescue, usable
from .islands import AUTO_MIN_ROWS, solve_islands
from .recorder import StepRecord

#: StepState.unbuilt: the problem is built from the last system when read
FROM_SYSTEM = object()


def energies(model: Model, data: Data) -> tuple[float, float]:
    """(kinetic, potential) energy of the bodies with dofs, one compiled pass
    (:func:`contactlab.kernels.energy.energies`; :func:`contactlab.sim.kinetic_energy` and
    :func:`contactlab.sim.potential_energy` are the array formulas it is tested against)."""
    ke, pe = _energies(model.dof_start, model.mass, model.inertia, data.quaternion, data.linear_velocity,
                       data.angular_velocity, data.position, np.asarray(model.gravity, dtype=np.float64))
    return float(ke), float(pe)


@dataclass(eq=False)
class StepState:
    """What the engine keeps from one step to the next besides ``Data``: the last step's system,
    problem and answer (``Simulator.last_system``, ``last_problem``, ``last_solution``) and the
    seconds per stage (``Simulator.timing``). A compiled step leaves its system as the terms to
    assemble it from (``deferred``) and its problem unbuilt (``unbuilt``: the system to build it
    from, or FROM_SYSTEM), both formed on first read, and may leave its Solution as the function
    and arguments that build it (:meth:`solve_later`), built on first read of :attr:`solution`."""
    _solution: object = None
    _unsolved: tuple | None = None      # (build, args): the solution is build(*args), built when read
    system: object = None
    problem: object = None
    deferred: tuple | None = None       # (contacts, h, terms_of, args): assemble_system(..., *terms_of(*args))
    unbuilt: object = None
    _timing: dict = field(default_factory=dict)
    _stamps: tuple | None = None        # (t_start, t_detect, t0, t_solved, t_integrated): timing formed when read
    free_velocity: object = None        # v + h M^-1 f of a compiled step whose system is deferred (sim/faults.py)
    turn_overlap: float = 0.0           # the deepest overlap the step's turn correction projected out (m)
    judged: tuple | None = None         # a compiled step's plausibility verdict and its inputs (faults.judged_verdict)

    @property
    def solution(self):
        """The last step's answer (a Solution; ``Simulator.last_solution``), built here on first read
        where the step left it to :meth:`solve_later`."""
        if self._unsolved is not None:
            build, args = self._unsolved
            self._solution, self._unsolved = build(*args), None
        return self._solution

    @solution.setter
    def solution(self, sol) -> None:
        self._solution, self._unsolved = sol, None

    @property
    def timing(self) -> dict:
        """Seconds per stage of the last step (``Simulator.timing``: detect, build, solve, integrate,
        record); a compiled step's formed here on first read from its clock readings (:meth:`time_later`)."""
        if self._stamps is not None:
            t_start, t_detect, t0, t_solved, t_integrated = self._stamps
            self._timing, self._stamps = {"detect": t_detect - t_start, "build": 0.0, "solve": t_solved - t0,
                                          "integrate": t_integrated - t_solved, "record": 0.0}, None
        return self._timing

    @timing.setter
    def timing(self, value: dict) -> None:
        self._timing, self._stamps = value, None

    def time_later(self, stamps: tuple) -> None:
        """The timing of a compiled step that builds, solves and integrates in one call (its time the
        "solve" stage's, as CompiledCall.record reports it) from its clock readings ``stamps`` =
        (t_start, t_detect, t0, t_solved, t_integrated), formed when :attr:`timing` is first read."""
        self._stamps = stamps

    def solve_later(self, build, args: tuple) -> None:
        """The step's Solution is ``build(*args)``, built (once) when :attr:`solution` is first read: a
        compiled step whose answer nobody reads pays no Solution (its info dict, its dataclass)."""
        self._solution, self._unsolved = None, (build, args)

    def leave(self, contacts, h: float, terms_of, args: tuple, free_velocity, build, build_args: tuple,
              stamps: tuple) -> None:
        """What a compiled step that builds, solves and integrates in one call leaves to be formed when
        read, in one call: its system (:meth:`defer`), its free velocity, its Solution
        (:meth:`solve_later`), its timing (:meth:`time_later`); no turn correction ran."""
        self.system, self.deferred = None, (contacts, h, terms_of, args)
        self.problem, self.unbuilt = None, FROM_SYSTEM
        self.free_velocity = free_velocity
        self._solution, self._unsolved = None, (build, build_args)
        self._stamps = stamps
        self.turn_overlap = 0.0

    def defer(self, contacts, h: float, terms_of, args: tuple) -> None:
        """Assemble the step's system and its problem only when read."""
        self.system, self.deferred = None, (contacts, h, terms_of, args)
        self.problem, self.unbuilt = None, FROM_SYSTEM
        self.free_velocity = None

    def last_system(self, model, data):
        if self.system is None and self.deferred is not None:
            contacts, h, terms_of, args = self.deferred
            self.system = assemble_system(model, data, contacts, h, *terms_of(*args))
            self.deferred = None
        return self.system

    def last_problem(self, model, data, contact_model, options):
        if self.problem is None and self.unbuilt is not None:
            sys = self.last_system(model, data) if self.unbuilt is FROM_SYSTEM else self.unbuilt
            self.problem = problem_of(contact_model.build(sys, options))
            self.unbuilt = None
        return self.problem

    def keep(self, sys, problem, sol, unbuilt=None) -> None:
        """The step's system, problem (None with ``unbuilt``: built from that system when read) and answer."""
        self.system, self.deferred = sys, None
        self.problem, self.unbuilt = problem, unbuilt
        self.free_velocity = None
        self.solution = sol


@dataclass(eq=False, slots=True)
class StepWork:
    """One step's values, handed from stage to stage (the general path's names; a compiled step
    fills what its call returns). ``compiled``: the step is the compiled call's (else the general
    stages take it)."""
    contacts: object
    match: np.ndarray
    nc: int                         # contacts.count
    h: float                        # the step's length
    t_start: float
    t_detect: float
    compiled: bool = False
    e0: float = 0.0
    sys: object = None
    warm: object = None
    built: object = None
    problem: object = None
    rows: tuple | None = None
    n: int = 0
    kwargs: dict | None = None
    sol: object = None
    unbuilt: bool = False           # the answer came without the assembled problem (built when read)
    primary_ok: bool = False
    rescued: bool = False
    t0: float = 0.0
    t_solve: float = 0.0
    t_solved: float = 0.0
    t_integrated: float = 0.0
    result: object = None
    contact_gain: float = 0.0
    joint_error: float = 0.0
    call: tuple = ()                    # a compiled step's inputs and outputs
    turn_bound: float | None = None     # a compiled step's turn bound (turns.fires), None: computed there


def configuration(sim) -> tuple:
    """What the stages are planned from that a user may change between steps (the Model itself is
    frozen) besides the solver options (``Stages.options_seen``): a new configuration is planned
    anew at the next step."""
    return (sim.method, sim.iterations, sim.model_options, sim.model_name, sim.reuse, sim.islands, sim.model,
            sim.warm_start, sim.compiled, sim.contact_model)


class Stages:
    """The general path: any contact model (its ``build``, ``warm_start`` and ``recover``), any
    method (``solve()``, island by island with ``Simulator(islands=True)``), the fallbacks, the
    integration and the records. Reads the simulator's public state only (``sim.model``, ``data``,
    ``world``, ``contact_model``, options) and writes ``Data`` and the :class:`StepState`.

    Subclasses override the stages they do differently and call these for the rest."""

    #: whether this configuration's steps are taken by a compiled call (:mod:`contactlab.sim.box_kernels`)
    compiled = False
    #: whether the fixed-budget solve runs matrix-free (RowStages)
    matrix_free = False

    def __init__(self, sim, state: StepState):
        self.sim, self.state = sim, state
        self.planned_for = configuration(sim)
        self.options_seen = dict(sim.solver_options)
        model = sim.model
        self.spec = available_solvers().get(sim.method)
        self.kinematic = bool(np.any(model.kind == KIND_KINEMATIC))
        self.passive = np.ones(model.ndof)          # dofs the impulses' energy is counted on (not kinematic)
        for i in range(model.nb):
            if model.kind[i] == KIND_KINEMATIC:
                self.passive[model.dof_start[i]:model.dof_start[i] + 6] = 0.0
        self.position_rows = bool(model.joints) or bool(np.any(model.planar))
        self.islands = sim.islands if sim.reuse is None else False   # None: LCPs only (Simulator's islands)

    @classmethod
    def plan(cls, sim, state: StepState):
        """These stages for ``sim``, or None where its configuration is not theirs."""
        return cls(sim, state)

    # -- detect -----------------------------------------------------------------------------------
    def detect(self) -> StepWork:
        """The contacts and each one's nearest previous contact on the same shape pair (-1: a new
        pair), at any distance for the warm start (a pair whose reduced manifold picked other points
        of its polygon keeps its impulses near), within 2 margin + 1 mm for the previous-normal
        estimate; one compiled call with the simulator's CollisionWorld."""
        sim = self.sim
        model, data, h = sim.model, sim.data, sim.h
        t_start = time.perf_counter()
        prev = data.contacts
        prev_normal = None if data.result is None else data.result.normal
        margin = float(model.settings.margin)
        radius = 2.0 * model.settings.margin + 1e-3
        if isinstance(sim.world, CollisionWorld):      # detection and matching in one compiled call
            contacts, match = sim.world.detect_matched(data, margin, h, prev, prev_normal, radius)
        else:                               # a scene's own contact generator (e.g. the box gripper's grid)
            contacts, match = detect_then_match(sim.world, data, margin, shape_sweep(sim), prev, prev_normal, radius)
        return StepWork(contacts, match, contacts.count, h, t_start, time.perf_counter())

    # -- build ------------------------------------------------------------------------------------
    def build(self, w: StepWork) -> None:
        """The energy before the step, the constraint system, the warm start and the problem."""
        sim = self.sim
        w.e0 = sum(energies(sim.model, sim.data))
        w.sys = build_system(sim.model, sim.data, w.contacts, w.h)
        w.warm = self.warm(w)
        self.assemble(w)

    def warm(self, w: StepWork):
        """The step's warm start: the model's own from the previous answer with contacts matched
        (``warm_start`` of the model module, e.g. box_friction.warm_start), else the previous z as
        it is; None after a step whose answer is not reused (data.warm["z"] None: uncertified)."""
        sim = self.sim
        z = sim.data.warm.get("z")
        hook = getattr(sim.contact_model, "warm_start", None)
        if z is None or hook is None or sim.data.result is None:
            return z
        return hook(w.sys, sim.data.result, w.match, sim.model_options)

    def assemble(self, w: StepWork) -> None:
        """The model's problem (``build``) and the solver's keyword arguments: its options, the warm
        start where the method takes one and its size fits, or the motionless set's (reuse)."""
        sim = self.sim
        w.built = sim.contact_model.build(w.sys, sim.model_options)   # a models.built.Built (or a bare problem)
        w.problem = problem = problem_of(w.built)
        w.n = problem.n
        w.kwargs = kwargs = dict(sim.solver_options)
        self.solver_arguments(w)
        if sim.warm_start and w.warm is not None and w.warm.shape == (problem.n,) and \
                isinstance(problem, self.spec.problems):
            kwargs["warm_start"] = w.warm
        if sim.reuse is not None:      # the motionless set's sub-solution replaces the previous step's
            sim.reuse.prepare(w.built, w.contacts, kwargs)

    def solver_arguments(self, w: StepWork) -> None:
        """Arguments a model adds to the method's (none here)."""

    # -- solve ------------------------------------------------------------------------------------
    def solve(self, w: StepWork) -> None:
        """The method's answer: ``solve()`` on the whole problem, or island by island."""
        sim = self.sim
        w.t0 = time.perf_counter()
        split = (type(w.problem) is LCP and w.problem.n >= AUTO_MIN_ROWS) if self.islands is None else \
            (self.islands and isinstance(w.problem, (BoxedLCP, LCP)))
        sol = solve_islands(w.problem, sim.method, solve, **w.kwargs) if split else None
        w.sol = sol if sol is not None else solve(w.problem, sim.method, **w.kwargs) if sim.reuse is None \
            else sim.reuse.solve(w.problem, w.kwargs)   # reuse: dantzig's compiled call (sim/reuse.py)

    # -- certify / fall back ----------------------------------------------------------------------
    def certify(self, w: StepWork) -> None:
        """Success is the method's own certified success (issue 10): a non-success whose residual
        happens to be small (a ray, a numerical failure, a sweep cap) is a rescue. An answer that
        does not certify gets the fallbacks (:mod:`contactlab.sim.fallback`); one that is not usable either stops
        the run with SimulationError (the state is the last good one)."""
        sim = self.sim
        sol = w.sol
        w.primary_ok = bool(sol.success)
        if not w.primary_ok and sim.fallback and not certified(sol):
            w.sol = sol = rescue(w.problem, sol, sim.method)
        w.t_solve = time.perf_counter() - w.t0
        w.rescued = not w.primary_ok and certified(sol)
        if not w.primary_ok and not w.rescued and not usable(w.problem, sol, sim.max_uncertified_residual):
            # applying this answer would corrupt the state (and blow up a few steps later): stop here
            data = sim.data
            raise SimulationError(f"step {data.steps + 1} (t = {data.time + sim.h:.6g} s): no usable answer from "
                                  f"{sim.method!r} or the fallbacks (status {sol.status.name}, relative residual "
                                  f"{sol.relative_residual:.3g} > {sim.max_uncertified_residual:g})")
        w.t_solved = time.perf_counter()

    # -- integrate --------------------------------------------------------------------------------
    def integrate(self, w: StepWork) -> None:
        """v+ from the model's ``recover``; the energy the impulses added; x += h v+ (semi-implicit
        Euler); the position corrections of contacts and joints; the step's bookkeeping."""
        sim = self.sim
        model, data, h, sys, sol = sim.model, sim.data, w.h, w.sys, w.sol
        result = self.recover(w)
        # the applied answer warm-starts the next step (certified or, in fixed-budget mode, not)
        data.warm["z"] = np.asarray(sol.z).copy() if (sol.success or sim.iterations is not None) else None
        # kinetic energy added by the constraint impulses: KE(v+) - KE(v + h M^-1 f), kinematic bodies excluded
        w.contact_gain = float(_MK.kinetic_gain(sys.M.indptr, sys.M.indices, sys.M.data,     # M: CSR (build_system)
                                                np.ascontiguousarray(result.v_next, dtype=np.float64),
                                                sys.v_free(), self.passive))
        _MK.advance_state(model.dof_start, np.ascontiguousarray(result.v_next, dtype=np.float64),
                          data.linear_velocity, data.angular_velocity, data.position, data.quaternion, h)
        if model.settings.contact_stabilization == "position" and w.nc:
            sim.project_contacts(sys, result.v_next)
        w.joint_error = sim.project_joints() if (model.settings.project_joints and self.position_rows) \
            else sim.joint_error()
        data.time += h
        data.steps += 1
        data.joint_torque.clear()
        data.contacts, data.result = w.contacts, result
        w.result = result
        if sim.reuse is not None:      # new motionless set: its sub-LCP is solved now (LCP time)
            w.t_solve += sim.reuse.after_step(w.contacts, w.built)
        self.state.keep(sys, w.problem, sol, sys if w.unbuilt else None)
        w.t_integrated = time.perf_counter()

    def recover(self, w: StepWork):
        """The step's StepResult from its answer: the contact model's ``recover`` (a compiled step
        that recovered v+ in its call returns its own)."""
        sim = self.sim
        return sim.contact_model.recover(w.sys, w.built, w.sol, sim.model_options)

    # -- correct ----------------------------------------------------------------------------------
    def correct(self, w: StepWork) -> bool:
        """Where the step's bodies in contact turned enough to hide an overlap from its linear rows,
        detect again and project the overlap out on the exact geometry (sim/turns.py); its time
        counts as the integration's. Returns whether a correction ran."""
        sim = self.sim
        self.state.turn_overlap = 0.0
        if not turns.fires(sim, w.contacts, w.turn_bound):
            return False
        self.state.turn_overlap = turns.correct_turns(sim)
        done = self.state.turn_overlap > 0.0
        if done and sim.model.settings.project_joints and self.position_rows:
            w.joint_error = sim.project_joints()    # the joints as integrate leaves them
        w.t_integrated = time.perf_counter()
        return done

    # -- record -----------------------------------------------------------------------------------
    def record(self, w: StepWork) -> StepRecord:
        """The StepRecord, and the seconds per stage (``sim.timing``): detect, build (rows,
        Delassus, right-hand sides), solve (with fallbacks), recover + integrate + projections, record."""
        sim, sol = self.sim, w.sol
        model, data = sim.model, sim.data
        # energies and the deepest overlap of the step's contacts, in one compiled pass
        ke, pe, pen = energies_and_depth(model.dof_start, model.mass, model.inertia, data.quaternion,
                                         data.linear_velocity, data.angular_velocity, data.position,
                                         np.asarray(model.gravity, dtype=np.float64),
                                         np.ascontiguousarray(w.contacts.phi, dtype=np.float64))
        e1 = ke + pe
        self.state.timing = {
            "detect": w.t_detect - w.t_start, "build": w.t0 - w.t_detect, "solve": w.t_solved - w.t0,
            "integrate": w.t_integrated - w.t_solved, "record": time.perf_counter() - w.t_integrated}
        return StepRecord(time=sim.data.time, contacts=w.nc, lcp_size=w.n,
                          iterations=int(sol.iterations), pivots=int(sol.pivots), residual=float(sol.residual),
                          success=bool(w.primary_ok), status=sol.status.name,
                          rescued=bool(w.rescued), kinetic_energy=ke, energy=e1,
                          energy_gain=e1 - w.e0, contact_energy_gain=w.contact_gain, max_penetration=pen,
                          solve_time=w.t_solve, joint_error=w.joint_error)


def shape_sweep(sim) -> np.ndarray:
    """Per shape: (h v, h |omega| r) of its body (:func:`contactlab.mechanics.integrate.shape_sweep`);
    a pair's margin grows by how far its two shapes can close in on each other in the step
    (:func:`contactlab.collision.boxes.reach.pair_reach`), so fast bodies do not tunnel, resting ones keep the
    settings' margin, and bodies falling side by side get half the sum of their reaches."""
    m, d = sim.model, sim.data
    return _MK.shape_sweep(m.dof_start, d.linear_velocity, d.angular_velocity, sim.world.body_radius,
                           sim.world.shape_body, sim.h)


class CompiledCall:
    """What the stages of a compiled step (one compiled call from the step's inputs to its integrated
    state: :class:`~contactlab.sim.box_stages.CompiledRowStages`,
    :class:`~contactlab.sim.noslip_stages.CompiledNoSlipStages`) share, mixed in before their
    general stages: ``correct`` computes the energies again where a correction moved the bodies, and
    ``record`` makes the StepRecord from the call's energies and depth (``w.call`` starts with
    = (ke, pe, pen) after integrate), the call's time reported as the "solve" stage's. Steps the call declined
    (``w.compiled`` False) are the general stages'. Needs ``self.gravity``."""

    def finish(self, w: StepWork, result, sol, deep: bool, project: bool, v_next, joint_error: float,
               after: tuple) -> None:
        """The call's integrated state made the step's: where a contact is deep (``deep``: the call stopped
        after the integration), the position correction (Simulator.project_contacts), the joints projected
        (``project`` and position rows) and the energies and depth after them, else the call's own
        (``after`` = (ke, pe, pen)); then the time and step count, the joint torques cleared, the result
        and the solution kept, and ``w.call`` = (ke, pe, pen) as :meth:`record` reads it."""
        sim = self.sim
        data = sim.data
        ke, pe, pen = after
        if deep:
            sim.project_contacts(sim.last_system, v_next)
            joint_error = sim.project_joints() if (project and self.position_rows) else sim.joint_error()
            model = sim.model
            ke, pe, pen = energies_and_depth(model.dof_start, model.mass, model.inertia, data.quaternion,
                                             data.linear_velocity, data.angular_velocity, data.position,
                                             self.gravity, np.ascontiguousarray(w.contacts.phi, dtype=np.float64))
        w.joint_error = joint_error
        data.time += w.h
        data.steps += 1
        data.joint_torque.clear()
        data.contacts, data.result = w.contacts, result
        self.state.solution = sol
        w.result = result
        w.call = (ke, pe, pen)
        w.t_integrated = time.perf_counter()

    def correct(self, w: StepWork) -> bool:
        done = super().correct(w)
        if done and w.compiled:
            m, data = self.sim.model, self.sim.data
            w.call = energies_and_depth(m.dof_start, m.mass, m.inertia, data.quaternion, data.linear_velocity,
                                        data.angular_velocity, data.position, self.gravity,
                                        np.ascontiguousarray(w.contacts.phi, dtype=np.float64))
        return done

    def record(self, w: StepWork) -> StepRecord:
        if not w.compiled:
            return super().record(w)
        sol = w.sol
        ke, pe, pen = w.call
        e1 = ke + pe
        # build, solve, recover and integrate at once: the call's time is the "solve" stage's, and
        # solve_time the solver's own part of it where the call times it (as the general stages report it)
        self.state.timing = {"detect": w.t_detect - w.t_start, "build": 0.0, "solve": w.t_solved - w.t0,
                             "integrate": w.t_integrated - w.t_solved, "record": 0.0}
        return StepRecord(time=self.sim.data.time, contacts=w.nc, lcp_size=w.n,
                          iterations=int(sol.iterations), pivots=int(sol.pivots), residual=float(sol.residual),
                          success=bool(w.primary_ok), status=sol.status.name, rescued=bool(w.rescued),
                          kinetic_energy=ke, energy=e1, energy_gain=e1 - w.e0, contact_energy_gain=w.contact_gain,
                          max_penetration=pen, solve_time=w.t_solve, joint_error=w.joint_error)

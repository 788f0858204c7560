"""Time stepping: controllers -> detect -> build -> solve -> certify -> integrate -> record
(as MuJoCo mjx's ``step``), each a stage of one interface (:class:`~contactlab.sim.stages.Stages`)
that every contact model supplies.

Semi-implicit Euler: v+ comes from the contact model, then x += h v+ and the orientation is
rotated by exp(h omega+). Joint position errors are removed after each step by a Newton
projection (post-stabilisation) when ``settings.project_joints`` is on, on top of the
velocity-level drift correction of arechavaleta eq. (10).
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np
import scipy.sparse as sp

from ..blas import blas_threads
from ..heap import keep_freed_memory
from ..collision import CollisionWorld
from ..collision.boxes import shape_reach_of
from ..errors import ModelError, ParamError, SimulationError, raise_interrupt_behind
from ..kernels.components import body_pair_groups, row_block_components
from ..kernels.pgs_matrix_free import solve_matrix_free
from ..mechanics.joint_projection import displace, joint_error_kernel, project_joints_kernel
from ..mechanics.model import KIND_KINEMATIC, Data, Model, build_model
from ..mechanics.rotation import quat_to_matrix
from ..mechanics.scene import Scene
from ..mechanics.rows import position_targets_window
from ..mechanics.sink import APPLIED as SINK_APPLIED, UNCERTIFIED as SINK_UNCERTIFIED, quiet_rows, sink_correction
from ..kernels.tolerances import SINK_QUIET, SINK_RESTORE, SINK_TRIGGER, SLOP_EXCESS
from ..mechanics.system import delassus, held_blocks, mobility, packed_joints, rows_times
from ..models import get_model, make_options
from ..models.box_friction import row_heights
from ..solvers import available_solvers, solve
from ..solvers.pgs import PGSOptions
from ..problems import BoxedLCP, ProblemStructure
from .fallback import _cap_option
from .box_stages import STAGES, free_bodies_only
from .tree_stages import NOSLIP_STAGES
from .st_stages import ST_STAGES
from .reuse_stages import REUSE_STAGES
from .faults import checked_step
from .robot_step import FusedRobotStep
from .grasp_step import FusedGraspStep
from .stages import Stages, StepState, configuration, energies, shape_sweep  # noqa: F401 (energies re-exported)

from .recorder import RECORD_FIELDS, StepRecord, Trajectory  # noqa: F401 (re-exported)


def kinetic_energy(model: Model, data: Data) -> float:
    """Kinetic energy of the bodies with coordinates, sum of 1/2 m |v|^2 + 1/2 w' R I R' w (I the
    body-frame inertia, R the orientation): the array formula, for a state the user holds. The
    step records the same number from one compiled pass with the potential energy
    (:func:`contactlab.kernels.energy.energies`, tested against this one)."""
    live = np.flatnonzero(model.dof_start >= 0)
    if live.size == 0:
        return 0.0
    R = quat_to_matrix(data.quaternion[live])
    w = data.angular_velocity[live]
    v = data.linear_velocity[live]
    Iw = np.einsum("kij,kjl,kml,km->ki", R, model.inertia[live], R, w)
    return float(0.5 * np.sum(model.mass[live] * np.sum(v * v, axis=1)) + 0.5 * np.sum(w * Iw))


def potential_energy(model: Model, data: Data) -> float:
    """Gravitational potential energy of the bodies with coordinates, -sum m p.g (zero at the
    origin), the array formula beside :func:`kinetic_energy`."""
    live = model.dof_start >= 0
    return float(-np.sum(model.mass[live] * (data.position[live] @ model.gravity)))


#: the most steps one ``Simulator.run`` takes: every step's record is kept in memory (a few hundred
#: bytes each), so a run beyond this would exhaust memory long before it ended
MAX_RUN_STEPS = 10 ** 8

#: the position correction's solve tolerance (relative residual, as solve() certifies it): the
#: correction is applied up to 1e-2 (``Simulator.project_contacts``), so 1e-3 leaves a factor 10
#: and spares the last Newton or interior-point iterations of a 1e-7 solve at no cost in the
#: largest penetration (docs/benchmarks-tuning.md)
POSITION_TOL = 1e-3

#: the position correction's islands above this many rows take box-qp's 3 full Newton steps, then its
#: interior point (``island_search_max``); smaller ones 30 Newton steps with line search (chosen on
#: certified piles of 500 to 2,000 boxes, docs/benchmarks-tuning.md)
POSITION_SEARCH_MAX = 200

#: the position correction's LCP matrix is N W N' + POSITION_CFM I (positive definite)
POSITION_CFM = 1e-9

#: whether this process has called the compiled sink correction (Simulator._sink_correction)
_SINK_LOADED = False

#: steps without a sink restoration after one the compiled correction could not certify (a settled
#: pile's quiet rows, whose envelope by height is wide, ask every step: each try cost ~4 ms on 1,000 boxes)
SINK_RETRY = 100

#: pgs/psor's stopping tol in the simulator where none is given: the step is certified at 1e-6 x
#: scale, and sweeping on to the solver's default 1e-10 costs time only
SWEEP_TOL = 1e-7


def position_lcp(A, c: np.ndarray, islands=None, groups=None, factors=None) -> tuple[np.ndarray, float]:
    """The position correction's LCP w = A p + c >= 0 perp p >= 0 (A = N W N' + eps I, symmetric
    positive definite, dense or CSR) on the whole problem by box-qp: up to 30 projected Newton steps
    from p = 0 (``algorithm="newton"``: its first free set is the rows with c_i < 0, the deep
    contacts, and each step adds the rows the correction pushes in, so a factorisation is of the
    rows in play only), then, where they do not certify, the interior point (``algorithm="ipm"``,
    which factors every row). Returns (p, relative residual of the whole LCP as ``solve()``
    certifies it; inf when p is not finite).
    The Newton budget of 30 steps is the one chosen in docs/benchmarks-tuning.md: fewer leave large
    corrections to an interior point whose factorisation of every row fills in.
    ``islands``: (count, label per row) of the contacts' independent groups, solved apart by box-qp
    (its ``islands`` option) after the contacts with a gap are set aside (``set_aside``: rows with
    c_i above the deepest target, checked afterwards and brought in where the correction pushes them
    in: a large pile's correction, one island with its gaps, splits into many small ones);
    ``groups``: the rows' body-pair groups (:func:`~contactlab.kernels.components.body_pair_groups`),
    over which an island's Newton steps are factorised block by block; ``factors``: (N, W, eps) with
    A = N W N' + eps I, for the interior point's systems in body space. All three go to box-qp as the
    problem's :class:`~contactlab.problems.ProblemStructure`."""
    structure = ProblemStructure(islands=islands, body_groups=None if islands is None else groups,
                                 factors=factors if sp.issparse(A) else None)
    problem = BoxedLCP(A, c, np.zeros(c.size), np.full(c.size, np.inf), structure=structure)
    if islands is not None:
        # each island's projected Newton (30 steps with line search up to POSITION_SEARCH_MAX rows;
        # box-qp's island_poor_iterations, 8, from a start above IPM_WARM_MAX, as a falling pile's
        # new contacts are), the interior point on the islands
        # it leaves; the islands of the rows without a gap
        sol = solve(problem, "box-qp", max_iterations=30, tol=POSITION_TOL, set_aside=True,
                    island_search_max=POSITION_SEARCH_MAX, island_iterations=30)
    else:
        sol = solve(problem, "box-qp", algorithm="newton", max_iterations=30, tol=POSITION_TOL)
    if not sol.success:
        sol = solve(problem, "box-qp", algorithm="ipm", tol=POSITION_TOL)
    p = np.asarray(sol.z, dtype=np.float64)
    return p, (float(sol.relative_residual) if np.all(np.isfinite(p)) else float("inf"))


def plan_stages(sim, state: StepState) -> Stages:
    """The stages for ``sim``'s configuration: the most specific whose capabilities the contact model
    and the method have (:data:`contactlab.sim.tree_stages.NOSLIP_STAGES`,
    :data:`contactlab.sim.st_stages.ST_STAGES`, :data:`contactlab.sim.box_stages.STAGES`, most specific first; then
    :data:`contactlab.sim.reuse_stages.REUSE_STAGES`, motionless reuse with dantzig), else the
    general :class:`~contactlab.sim.stages.Stages`."""
    for cls in NOSLIP_STAGES + ST_STAGES + STAGES + REUSE_STAGES:
        stages = cls.plan(sim, state)
        if stages is not None:
            return stages
    return Stages(sim, state)


def default_combination(model, method, model_options, reuse, iterations, islands) -> tuple:
    """(contact model, method, model options, why) for a simulator given no model.

    Where every moving body is free (:func:`contactlab.sim.box_stages.free_bodies_only`): box friction
    with each friction box set from the contact's normal impulse of the previous step (arechavaleta
    §IV-C, eq. 16: static bounds, so each step is a convex bound-constrained QP whose minimiser
    box-qp's projected Newton reaches and solve() certifies), taken by the compiled steps. Bounds
    coupled to the current normal impulse have no convergence guarantee for box-qp's fixed point
    (docs/benchmarks-sim.md). Else Stewart-Trinkle with ``method`` (the default of earlier
    releases). A caller who sets a method, model options, reuse, a fixed budget or islands keeps
    Stewart-Trinkle, for which those were written."""
    if method is None:      # box friction's own default where it has one for the scene (model_default)
        chosen, options, why = model_default(get_model("box-friction"), model, model_options, reuse, iterations,
                                             islands)
        if why is not None:
            return ("box-friction", chosen, options,
                    "free bodies only: box friction (bounds from the previous step) by box-qp, compiled and certified")
    if not free_bodies_only(model):
        why = "joints, planar or kinematic bodies: Stewart-Trinkle"
    else:
        why = "a method, model options, reuse, a budget or islands given: Stewart-Trinkle"
    return "stewart-trinkle", method, model_options, why


def model_default(contact_model, model, model_options, reuse, iterations, islands) -> tuple:
    """(method, model options, why or None) for a simulator given a contact model but no method:
    the model's ``FREE_BODIES_DEFAULT`` (its certified fast combination, ``(method, options)`` or
    ``(method, options, what it is)``) where it has one, the
    caller gave no model options, reuse, budget or islands, and every moving body is free (the
    same conditions as :func:`default_combination`); else its ``DEFAULT_METHOD``."""
    combination = getattr(contact_model, "FREE_BODIES_DEFAULT", None)
    if (combination is not None and model_options is None and reuse is None and iterations is None
            and not islands and free_bodies_only(model)):
        method, options = combination[:2]
        what = combination[2] if len(combination) > 2 else "compiled and certified"
        return method, dict(options), (f"model {contact_model.NAME!r} without a method or options, free bodies "
                                       f"only: {method} with {options}, {what}")
    return getattr(contact_model, "DEFAULT_METHOD", "auto"), model_options, None


class Simulator:
    """Steps a scene with a contact model (``models.get_model(name)``) and a solver method.

    ``model_options``/``solver_options`` are dicts passed to the model's Options and to
    :func:`contactlab.solve`. ``warm_start``: pass the previous step's answer to solvers that
    take one when the problem size is unchanged. ``blas_threads``: BLAS threads during
    :meth:`run` (default 1; None leaves the process setting alone). Building a simulator also keeps
    the memory its steps free in the process for the next step (:mod:`contactlab.heap`, glibc only;
    ``CONTACTLAB_KEEP_HEAP=0``: not). ``fallback``: when the method
    returns no certified answer, run the fallbacks that can help, each capped (policy in
    :mod:`contactlab.sim.fallback`); the step still counts as a failure of the method
    (``StepRecord.success`` is the method's own success; ``rescued`` says the applied answer
    certifies anyway: a fallback's, or the method's own non-success answer whose residual is small). ``max_uncertified_residual``: an uncertified answer is applied only up to this relative
    residual; beyond it the step raises :class:`SimulationError`. ``reuse="motionless"``:
    warm-start each solve from the motionless bodies' sub-solution instead (loomis-balkcom §IV,
    :mod:`contactlab.sim.reuse`).

    ``controllers``: callables ``fn(sim)`` run, in order, before every step (also
    :meth:`add_controller`). A controller reads the state (``sim.data``, :meth:`body_state`) and
    acts through :meth:`set_motor`, :meth:`set_velocity` and :meth:`set_joint_torque`; a joint
    torque lasts one step, so a controller sets it again each step. A controller that calls no BLAS
    (no matrix product or ``np.linalg``, whose BLAS would run on the process's thread count) may say
    so with an attribute ``uses_blas = False`` (on its class or the function; absent: True), read when
    the step is planned: where every controller says so and the step's own compiled calls use no BLAS
    (the hand's fused step, :mod:`contactlab.sim.grasp_step`), :meth:`step` skips the ``blas_threads``
    limit, which only the stages' paths of that step then open.

    ``iterations``: fixed-budget mode (like PyBullet's 50 and ODE's 20 iterations): the method
    stops after at most this many iterations (sweeps, Newton steps, pivots) and its answer is
    applied whatever its residual (no fallback, no SimulationError unless it is not finite);
    ``StepRecord.residual`` reports the residual reached and ``success`` whether it was certified.
    With pgs, ``solver_options={"w_step_tol": t}`` adds Bullet's stop (a sweep that corrects no
    row's own w by more than t ends the sweeps; PyBullet's default is t = 3.16e-4).
    With box friction and pgs (no other solver options than tol and w_step_tol) the sweeps run
    matrix-free (:mod:`contactlab.kernels.pgs_matrix_free`: the iterates of pgs on the assembled
    problem, the Delassus matrix never formed; ``last_problem`` is assembled only when read).
    None (default): certified mode.

    A step is a list of stages (:meth:`step`; :mod:`contactlab.sim.stages`), planned into
    :attr:`stages` from what the contact model and the method can do: the general stages, box
    friction's rows (matrix-free sweeps, warm starts certified without the Delassus matrix), or, on
    a scene of free bodies (no joint, planar or kinematic body; box-qp in certified mode, or pgs in
    fixed-budget mode), the step after detection as one compiled call (:mod:`contactlab.sim.box_kernels`:
    the same kernels in the same order, the same bits as the general stages; ``compiled=False``
    takes the general stages instead); ``last_system`` and ``last_problem`` are then assembled
    when read, and the call's time is the step's ``solve_time`` and ``timing["solve"]``.

    ``model`` None (default) chooses a certified combination that is fast for the scene
    (:func:`default_combination`, recorded in ``default_choice``): box friction with the previous
    step's bounds solved by box-qp on scenes of free bodies only (the compiled steps above), else
    Stewart-Trinkle with its default method. A ``model`` given without a method or model options
    takes the model's certified fast combination where it declares one for the scene
    (:func:`model_default`: ``"box-friction"`` alone is the same box-qp combination; also recorded
    in ``default_choice``), else the model's ``DEFAULT_METHOD``.

    ``islands``: whether a step's problem whose rows form several independent groups (separate
    stacks or piles, boxes apart on a floor: no shared moving body, no friction link) is solved
    island by island, the assembled answer certified on the whole problem
    (:mod:`contactlab.sim.islands`: a solve() per island, any method). None (default): for LCPs
    of at least ``sim.islands.AUTO_MIN_ROWS`` rows (Stewart-Trinkle without joints, frictionless,
    Trinkle-Pang), whose pivoting methods cost n^3
    for the whole and the islands' sum n_i^3 (boxes apart on a bin's floor are islands of one box's
    rows), not for boxed LCPs: box-qp splits box friction's
    sparse problems (above its ``dense_max`` rows) into their islands itself, in one compiled call
    (its ``islands`` option), and below that a solve() per island costs more than it saves
    (docs/benchmarks-tuning.md). True: for both; False: never.
    """

    def __init__(self, scene: Scene, model: str | None = None, method: str | None = None, *,
                 model_options: dict | None = None, solver_options: dict | None = None,
                 dt: float | None = None, warm_start: bool = True, blas_threads: int | None = 1,
                 fallback: bool = True, max_uncertified_residual: float = 1e-3, controllers=(),
                 reuse: str | None = None, iterations: int | None = None, islands: bool | None = None,
                 compiled: bool = True):
        if dt is not None:
            from ..mechanics.scene import check_dt
            scene.settings.dt = check_dt("dt", dt)
        self.scene = scene
        if blas_threads is not None and (isinstance(blas_threads, bool) or not isinstance(blas_threads, int)
                                         or blas_threads < 1):
            raise ParamError(f"blas_threads must be a positive whole number of threads or None (BLAS as it "
                             f"is), got {blas_threads!r}")
        self.blas_threads = blas_threads
        keep_freed_memory()     # the steps' freed memory stays in the process for the next
        self.fallback = fallback
        self.max_uncertified_residual = max_uncertified_residual
        self.model, self.data = build_model(scene)
        self.world = CollisionWorld(self.model)
        self.default_choice = None
        if model is None:
            model, method, model_options, self.default_choice = default_combination(
                self.model, method, model_options, reuse, iterations, islands)
        self.contact_model = get_model(model)
        if method is None and self.default_choice is None:
            method, model_options, self.default_choice = model_default(
                self.contact_model, self.model, model_options, reuse, iterations, islands)
        if not callable(getattr(self.contact_model, "recover", None)):
            raise ModelError(f"model {model!r} has no recover(); it cannot drive a time-stepping simulation")
        self.model_name = model
        self.model_options = make_options(self.contact_model, model_options)
        self.method = method or getattr(self.contact_model, "DEFAULT_METHOD", "auto")
        if self.method != "auto" and self.method not in available_solvers():
            raise ModelError(f"unknown method {self.method!r}; available: {', '.join(['auto', *available_solvers()])}")
        self.solver_options = dict(solver_options or {})
        spec = available_solvers().get(self.method)
        if spec is not None and issubclass(spec.options, PGSOptions) and "tol" not in self.solver_options:
            self.solver_options["tol"] = SWEEP_TOL      # the sweeping methods' stop (SWEEP_TOL)
        self.islands = None if islands is None else bool(islands)
        self.iterations = None
        if iterations is not None:
            from .fallback import _cap_option
            if isinstance(iterations, bool) or not isinstance(iterations, (int, np.integer)) or iterations < 1:
                raise ModelError(f"iterations must be an integer >= 1 (fixed-budget mode) or None, got {iterations!r}")
            cap = _cap_option(self.method, int(iterations)) if spec is not None else {}
            if not cap:
                raise ModelError(f"method {self.method!r} has no iteration cap; fixed-budget mode needs one of "
                                 f"{[n for n, s in available_solvers().items() if _cap_option(n, 1)]}")
            self.iterations = int(iterations)
            self.solver_options.update(cap)
            self.fallback = False
            self.max_uncertified_residual = float("inf")
        self.warm_start = bool(warm_start and spec is not None and spec.warm_start)
        if spec is not None:    # a bad or unknown solver option fails here, not at the first step
            spec.make_options({k: v for k, v in self.solver_options.items() if k != "certify"})
        from .reuse import make_reuse   # reuse="motionless": loomis-balkcom §IV
        self.reuse = make_reuse(reuse, self)
        self.has_actuation = bool(np.any(self.model.kind == KIND_KINEMATIC)) or any(
            j.motor_target is not None for j in self.model.joints)
        self._kinematic = bool(np.any(self.model.kind == KIND_KINEMATIC))
        self.controllers = []
        for fn in controllers or ():
            self.add_controller(fn)
        self.compiled = bool(compiled)
        #: whether a robot's step may be taken as a few compiled calls: a legged robot's where every
        #: controller has a compiled form (:mod:`contactlab.sim.robot_step`), a hand's in joint coordinates
        #: (:mod:`contactlab.sim.grasp_step`); the same bits as the stages; False: the stages
        self.fused = True
        self._fused, self._fused_for = None, None
        self._unfused = False           # run(): _rolled found no fused step for the next one
        # what the engine keeps between steps besides Data (the last system, problem, answer, timing)
        self.step_state = StepState()
        # the step's stages, from what the contact model and the method can do: the general ones,
        # box friction's rows, or its compiled step on scenes of free bodies
        self.stages = plan_stages(self, self.step_state)

    def add_controller(self, fn) -> None:
        """Run ``fn(sim)`` before every step (after the controllers added before it)."""
        if not callable(fn):
            raise ModelError(f"a controller must be callable as fn(sim), got {type(fn).__name__}")
        self.controllers.append(fn)

    def set_joint_torque(self, joint: str, torque: float) -> None:
        """Apply ``torque`` about a revolute joint's axis (a force along a prismatic joint's axis)
        during the next step: +torque on the child body, -torque on the parent (equal and
        opposite), added to the free-motion forces f. Cleared after the step."""
        k = self._torque_index(joint)
        tau = float(torque)
        if not np.isfinite(tau):
            raise ModelError(f"torque must be finite, got {torque!r}")
        self.data.joint_torque[k] = tau
        self.has_actuation = True

    def set_joint_torques(self, joints, torques) -> None:
        """:meth:`set_joint_torque` for several joints at once: ``joints`` a sequence of names,
        ``torques`` as many values (the names are looked up and checked once per sequence of names;
        a legged controller sets twelve every step)."""
        key = tuple(joints)
        cache = getattr(self, "_torque_sets", None)
        if cache is None or cache[0] is not self.model.joints:
            cache = self._torque_sets = (self.model.joints, {})
        idx = cache[1].get(key)
        if idx is None:
            idx = cache[1][key] = [self._torque_index(name) for name in key]
        values = np.asarray(torques, dtype=np.float64).reshape(-1).tolist()
        if len(values) != len(idx):
            raise ModelError(f"torques must give one value per joint ({len(idx)}), got {len(values)}")
        if not all(map(math.isfinite, values)):      # (a dozen floats: the list is checked faster than the array)
            raise ModelError(f"torques must be finite, got {values}")
        self.data.joint_torque.update(zip(idx, values))
        self.has_actuation = True

    def _torque_index(self, joint: str) -> int:
        """The index of the revolute or prismatic joint named ``joint`` (name -> index built once per
        joint list)."""
        joints = self.model.joints
        cache = getattr(self, "_joint_index", None)
        if cache is None or cache[0] is not joints:
            cache = self._joint_index = (joints, {j.name: k for k, j in reversed(list(enumerate(joints)))})
        k = cache[1].get(joint)
        if k is None:
            raise ModelError(f"no joint named {joint!r}; joints: {[j.name for j in joints]}")
        if joints[k].kind not in ("revolute", "prismatic"):
            raise ModelError(f"joint {joint!r} is {joints[k].kind}; a joint torque needs a revolute or prismatic joint")
        return k

    @property
    def last_system(self):
        """The last step's ConstraintSystem; a compiled step's is assembled on first read."""
        return self.step_state.last_system(self.model, self.data)

    @last_system.setter
    def last_system(self, sys) -> None:
        self.step_state.system, self.step_state.deferred = sys, None

    def defer_system(self, contacts, h: float, terms_of, args: tuple) -> None:
        """Assemble the step's system and its problem only when read: a compiled step's, whose
        ``terms_of(*args)`` gives :func:`~contactlab.mechanics.system.assemble_system`'s (f, body,
        terms, v_free)."""
        self.step_state.defer(contacts, h, terms_of, args)

    @property
    def last_problem(self):
        """The last step's problem (as the solver saw it); a matrix-free step's is assembled on first read."""
        return self.step_state.last_problem(self.model, self.data, self.contact_model, self.model_options)

    @last_problem.setter
    def last_problem(self, problem) -> None:
        self.step_state.problem, self.step_state.unbuilt = problem, None

    @property
    def last_solution(self):
        """The last step's applied answer (a Solution)."""
        return self.step_state.solution

    @last_solution.setter
    def last_solution(self, sol) -> None:
        self.step_state.solution = sol

    @property
    def timing(self) -> dict:
        """Seconds per stage of the last step: detect, build, solve, integrate, record."""
        return self.step_state.timing

    @timing.setter
    def timing(self, value: dict) -> None:
        self.step_state.timing = value

    def sweep_stops(self) -> tuple[float, float]:
        """(tol, w_step_tol) of the fixed-budget matrix-free sweeps, compiled or not: the solver
        options' (tol SWEEP_TOL where absent; w_step_tol 0: off)."""
        return float(self.solver_options.get("tol", SWEEP_TOL)), float(self.solver_options.get("w_step_tol", 0.0))

    @property
    def h(self) -> float:
        return float(self.model.settings.dt)

    def step(self) -> StepRecord:
        """Advance one step: controllers -> detect -> build -> solve -> certify -> integrate -> correct -> record.
        BLAS runs on ``blas_threads`` threads during the step, as in :meth:`run` (a hand-written loop
        of steps is as fast as ``run``: threaded BLAS on a hand's LCPs costs several times more); a step
        that calls no BLAS with controllers that declare none (``uses_blas = False``, class docstring)
        does not set the limit (two thread-count reads a step, ~5 us in a hand's ~0.1 ms step)."""
        fused = self._fused
        if fused and fused.blas_free and self.fused and not self.data.joint_torque and fused.valid(self):
            # a step with no BLAS of its own and controllers that declare none (``uses_blas = False``):
            # outside the limit, which its paths to the stages open themselves (sim/grasp_step.py)
            try:
                return fused.step()
            except SystemError as exc:   # a Ctrl-C inside a compiled call (errors.interrupt_behind)
                raise_interrupt_behind(exc)
        with blas_threads(self.blas_threads):
            try:
                fused = self._fused_step()
                if fused is not None:       # a robot's step as a few compiled calls (sim/robot_step.py, grasp_step.py)
                    return fused.step()
            except SystemError as exc:   # a Ctrl-C inside a compiled call (errors.interrupt_behind)
                raise_interrupt_behind(exc)
            return self._staged_step()

    def _fused_step(self):
        """The fused robot step (:class:`~contactlab.sim.robot_step.FusedRobotStep`, legged robots;
        :class:`~contactlab.sim.grasp_step.FusedGraspStep`, a hand in joint coordinates) where it takes
        this step: planned again when the stages or the controllers changed; None (the stages take
        the step) where it declines the configuration, where :attr:`fused` is False, or where joint
        torques were set before the step."""
        if not self.fused or self.data.joint_torque:
            return None
        fused = self._fused
        if fused and fused.valid(self):
            return fused
        if fused is False and self._fused_for == (self.stages, tuple(map(id, self.controllers))):
            return None
        stages = self.plan()
        self._fused = FusedRobotStep.plan(self, stages) or FusedGraspStep.plan(self, stages) or False
        self._fused_for = (stages, tuple(map(id, self.controllers)))
        return self._fused or None

    def _rolled(self, steps: int, traj: Trajectory, record_poses: bool) -> tuple[int, bool]:
        """Up to ``steps`` fused robot steps in one compiled call (:class:`~contactlab.sim.robot_rollout.RobotRollout`)
        where the fused step takes them, their records appended to ``traj``: (the number taken, whether
        the next step is a single step's: none was taken, or the call handed its last one over). A call
        that took all the steps it was given (its chunk, sized to answer a Ctrl-C soon) hands none over."""
        fused = self._fused_step() if steps > 0 else None
        self._unfused = fused is None and steps > 0     # run()'s next step: the stages' (no second check)
        if fused is None or not hasattr(fused, "rollout"):     # (the hand's fused step: one step at a time)
            return 0, True
        try:
            with blas_threads(self.blas_threads):
                recs, positions, quaternions, handed_over = fused.rollout().run(steps, record_poses)
        except SystemError as exc:   # a Ctrl-C inside a compiled call (errors.interrupt_behind)
            raise_interrupt_behind(exc)
        if self.has_actuation:      # as run() records each step
            for rec in recs:
                rec.energy_gain = float("nan")
        traj.records.extend(recs)
        if record_poses:
            traj.positions.extend(positions)
            traj.quaternions.extend(quaternions)
        return len(recs), handed_over or not recs

    def _staged_step(self) -> StepRecord:
        """The step of the stages, inside the caller's ``blas_threads``: :meth:`step`'s where no fused
        step takes it, and ``run``'s where :meth:`_rolled` just found none for this state (the same
        answer :meth:`_fused_step` would give again). The controllers first: the velocities they set
        are the step's own motion, so the check of its plausibility (:mod:`contactlab.sim.faults`)
        starts from the state they leave; then the checked stages."""
        try:
            self.control()
            return checked_step(self, self._advance)
        except SystemError as exc:   # a Ctrl-C inside a compiled call (errors.interrupt_behind)
            raise_interrupt_behind(exc)

    def _step(self) -> StepRecord:
        """One step without the plausibility check: the controllers, then :meth:`_advance`."""
        self.control()                      # controllers: motors, joint torques, velocities
        return self._advance()

    def _advance(self) -> StepRecord:
        """One step after the controllers, as its stages (:attr:`stages`), one line each, as MuJoCo
        mjx's ``step``."""
        stages = self.plan()                # the stages of this configuration (planned anew when it changed)
        work = stages.detect()              # contacts, matched to the previous step's
        stages.build(work)                  # the problem (a compiled step: its inputs)
        stages.solve(work)                  # the method's answer (a compiled step: build to integration)
        stages.certify(work)                # the fallbacks; an answer not usable raises SimulationError
        stages.integrate(work)              # recover v+, x += h v+, position corrections
        stages.correct(work)                # overlap a fast turn hid from the rows (sim/turns.py)
        return stages.record(work)          # energies, seconds per stage: the StepRecord

    def control(self) -> None:
        """Run the controllers, in order (each ``fn(sim)``)."""
        for fn in self.controllers:
            fn(self)

    def plan(self):
        """The step's stages (:attr:`stages`): planned again where the configuration (method, budget,
        options, model, reuse, islands, warm start, ``compiled``) changed since they were planned."""
        stages = self.stages
        if not self.planned(stages):
            self.stages = stages = plan_stages(self, self.step_state)
        return stages

    def planned(self, stages) -> bool:
        """Whether ``stages`` were planned for the configuration as it is now (:meth:`plan`'s test, which
        plans nothing: a step outside the BLAS limit asks it before it opens the limit to plan)."""
        try:
            return stages.planned_for == configuration(self) and stages.options_seen == self.solver_options
        except ValueError:      # an array option replaced by another
            return False

    def _displace(self, dx: np.ndarray) -> None:
        """x += dx (translation, then rotation by the rotation vector) for every moving body that is
        not kinematic, in place (compiled: :func:`~contactlab.mechanics.joint_projection.displace`)."""
        model, data = self.model, self.data
        displace(model.dof_start, model.kind, KIND_KINEMATIC, np.ascontiguousarray(dx, dtype=np.float64).reshape(-1),
                 data.position, data.quaternion)

    def project_contacts(self, sys, v_next: np.ndarray, zeta: float | None = None) -> None:
        """Remove penetration beyond the slop at the position level (no velocity change):
        with phi' = phi + h N v+ (linearised), solve the frictionless LCP
        w = N W N' p + c >= 0 perp p >= 0, c_i = zeta (phi'_i + slop) where phi'_i < -slop (1 +
        SLOP_EXCESS) and max(phi'_i + slop, 0) elsewhere (do not push other contacts in;
        :func:`~contactlab.mechanics.rows.position_targets`), then x += W N' p
        (W = M^-1, kinematic bodies held; N W N' from the compiled block Delassus), by box-qp on the
        whole LCP (:func:`position_lcp`: projected Newton from the deep contacts, then the interior
        point). An answer off by
        more than 1e-2 (relative) skips the correction.
        The same LCP restores the rows' cfm sink: contacts within -SINK_RESTORE slop <= phi' < 0 get
        c_i = phi'_i + SINK_TARGET slop, and the correction runs once one of them is deeper than
        SINK_TRIGGER slop (:func:`~contactlab.mechanics.rows.position_targets`), only where that is all
        there is to correct (no contact beyond the slop) and only in a scene at rest, on islands with
        no gap (:meth:`_quiet_contacts`; elsewhere those contacts keep the targets above), on free
        bodies in certified mode (:meth:`_sink_window`): the LCP of those islands' rows alone, compiled
        (:func:`~contactlab.mechanics.sink.sink_correction`: one factorisation of the sunk rows, then
        block pivoting passes); where that does not certify, nothing is restored and none is tried for
        SINK_RETRY steps (box-qp's answer at POSITION_TOL there cost a settled 1,000-box pile +65 %
        Newton steps in the next velocity steps: docs/benchmarks-sim.md, seventeenth session). Where the
        rows are not whole body blocks, box-qp's projected Newton without islands, whose first free set,
        the rows with c_i < 0, is the sunk contacts. Off while SINK_RESTORE = 0.
        Fixed-budget mode: PGS with the step's sweep budget, its answer applied (p >= 0 at every sweep),
        matrix-free (the same iterates without forming N W N') where the body blocks cover every dof.
        ``zeta``: the share removed (default the settings' ``contact_zeta``; sim/turns.py: 1)."""
        st = self.model.settings
        # phi' = phi + h N v+, c and the deep test in one compiled pass
        Nv = rows_times(sys.N, v_next)
        phi = np.ascontiguousarray(sys.phi, dtype=np.float64)
        # the sink window in certified mode on free bodies only (else position_targets_window's 0)
        c, deep = position_targets_window(Nv, phi, float(sys.h), float(st.slop),
                                          float(st.contact_zeta if zeta is None else zeta), self._sink_window())
        if not _SINK_LOADED and self._sink_window() > 0.0 and sys.body_blocks:
            self._sink_correction(sys, c, phi, 0.0)     # loads the kernel now (nothing is quiet at speed 0)
        if not deep:
            return
        slop, h = float(st.slop), float(sys.h)
        p = phi + h * Nv
        window = (p < 0.0) & (p >= -self._sink_window() * slop)
        sink_only = not np.any(p < -slop * (1.0 + SLOP_EXCESS))
        if sink_only and self.iterations is None and sys.body_blocks:
            # the quiet rows and the sunk rows' one factorisation, compiled (mechanics/sink.py); where it
            # does not certify, no restoration, and none tried for SINK_RETRY steps (a settled pile asks
            # every step; box-qp's answer there cost it Newton steps: docs/benchmarks-sim.md, seventeenth session)
            if self.data.steps >= getattr(self, "_sink_retry_at", 0):
                outcome, dx = self._sink_correction(sys, c, p, SINK_QUIET * slop / h)
                if outcome == SINK_APPLIED:
                    self._displace(dx)
                elif outcome == SINK_UNCERTIFIED:
                    self._sink_retry_at = self.data.steps + SINK_RETRY
            return
        quiet = self._quiet_contacts(sys.contacts, SINK_QUIET * slop / h, p) if sink_only else np.zeros_like(window)
        sink = window & quiet
        if sink_only and not np.any(sink & (p < -SINK_TRIGGER * slop)):
            return
        if np.any(window & ~sink):      # those left alone: the targets without the sink window
            c = np.where(window & ~sink, np.maximum(p + slop, 0.0), c)
        N, rows = sys.N, slice(None)
        if sink_only:   # the quiet islands' rows alone: the other bodies are not moved at all
            rows = np.flatnonzero(quiet)
            N, c = sys.N[rows], c[rows]
        n = N.shape[0]
        if self.iterations is not None and sys.body_blocks:
            # fixed-budget mode: matrix-free PGS on N W N' + POSITION_CFM I without forming it;
            # dv = W N' p is the displacement
            p, _, dx, _, _ = solve_matrix_free(N, held_blocks(self.model, sys.W_blocks), c, POSITION_CFM, np.zeros(n), np.full(n, np.inf),
                                               np.full(n, -1, dtype=np.int64), np.zeros(n),
                                               max_sweeps=self.iterations, tol=1e-4, report=False,
                                               height=self._contact_heights(sys)[rows])
            if np.all(np.isfinite(p)):
                self._displace(dx.reshape(-1))
            return
        W = mobility(self.model, self.data) if self._kinematic else sys.Minv
        factors = None
        if sys.W_blocks is not None:
            held = held_blocks(self.model, sys.W_blocks)
            A = delassus(dataclasses.replace(sys, W_blocks=held), N, POSITION_CFM, dense=n <= 200)
            factors = (N, held, POSITION_CFM)
        else:
            A = (N @ W @ N.T).toarray() + POSITION_CFM * np.eye(n)
        if self.iterations is not None:
            # fixed-budget mode: the step's sweep budget; every PGS sweep keeps p >= 0, so a partial
            # answer only pushes apart, and it is applied whatever its residual
            prob = BoxedLCP(A, c, np.zeros(n), np.full(n, np.inf))
            sol = solve(prob, "pgs", **_cap_option("pgs", self.iterations), tol=1e-4,
                        height=self._contact_heights(sys)[rows])
            if np.all(np.isfinite(sol.z)):
                self._displace(W @ (N.T @ sol.z))
            return
        # projected Newton from p = 0 (the deep contacts first, then those the correction would push
        # in), then the interior point; 100 capped PGS sweeps on a pile used to miss 1e-2, so the
        # correction was skipped
        islands = groups = None
        if sp.issparse(A) and sys.body_blocks and not sink_only:
            islands = row_block_components(sys.N.indptr, sys.N.indices, np.full(n, -1, dtype=np.int64), 6)
            groups = body_pair_groups(sys.N.indptr, sys.N.indices)
        p, rel = position_lcp(A, c, islands, groups, factors)
        if rel <= 1e-2:
            self._displace(W @ (N.T @ p))

    def _sink_window(self) -> float:
        """SINK_RESTORE where the sink restoration runs (certified mode, every moving body free:
        :func:`~contactlab.sim.box_stages.free_bodies_only`, the scenes whose compiled steps take the
        window too, sim/box_kernels.py), else 0 (the fixed-budget and jointed steps' kernels take none)."""
        model = self.model
        if getattr(self, "_sink_window_of", None) is not model:
            self._sink_window_of = model
            self._sink_window_value = SINK_RESTORE if free_bodies_only(model) else 0.0
        return self._sink_window_value if self.iterations is None else 0.0

    def _sink_correction(self, sys, c: np.ndarray, p: np.ndarray, speed: float) -> tuple:
        """(outcome, dx) of :func:`~contactlab.mechanics.sink.sink_correction` on ``sys``'s rows with
        targets ``c``, ``p`` = phi', the quiet rule's ``speed``. The first call in a process loads its
        compiled library from numba's cache (~10-15 ms, once): :meth:`project_contacts` makes that call
        at its first step where the restoration may run, as every other kernel of the step is loaded in
        the first step, instead of in the middle of a run at the first correction."""
        global _SINK_LOADED
        _SINK_LOADED = True
        st, d = self.model.settings, self.data
        slop = float(st.slop)
        dx = np.zeros(self.model.ndof)
        outcome = sink_correction(sys.N.indptr, sys.N.indices, sys.N.data, held_blocks(self.model, sys.W_blocks),
                                  c, p, np.asarray(sys.contacts.body_a, dtype=np.int64),
                                  np.asarray(sys.contacts.body_b, dtype=np.int64), self.model.dof_start,
                                  d.linear_velocity, d.angular_velocity, float(speed), self._contact_heights(sys),
                                  SINK_RESTORE * slop, SINK_TRIGGER * slop, POSITION_CFM, POSITION_TOL, dx)
        return outcome, dx

    def _quiet_contacts(self, contacts, speed: float, p: np.ndarray) -> np.ndarray:
        """Per contact: whether the sink restoration may move its bodies: every body of the scene
        moves slower than ``speed`` (each component of its linear and of its angular velocity) and
        none of the contacts of its island (the bodies with dofs joined by contacts) has a gap
        (``p`` = phi' >= 0); compiled (:func:`~contactlab.mechanics.sink.quiet_rows`). Moving a body
        changes no bias of a contact without a gap, so the next velocity step's q stays as it was; an
        island at rest inside a scene that is still moving (the resting boxes of a landing pile) is
        left alone: restoring those cost the falling 1,000-box pile 4 Newton steps a step
        (docs/benchmarks-sim.md, sixteenth session: drift16)."""
        d, model = self.data, self.model
        return quiet_rows(np.asarray(contacts.body_a, dtype=np.int64), np.asarray(contacts.body_b, dtype=np.int64),
                          model.dof_start, d.linear_velocity, d.angular_velocity, float(speed),
                          np.ascontiguousarray(p, dtype=np.float64))

    def _contact_heights(self, sys) -> np.ndarray:
        """The normal rows' heights against gravity (:func:`~contactlab.models.box_friction.row_heights`),
        for the position correction's top-down sweeps."""
        point = np.ascontiguousarray(sys.contacts.point, dtype=np.float64).reshape(-1, 3) if sys.nc \
            else np.zeros((0, 3))
        return row_heights(point, np.asarray(self.model.gravity, dtype=np.float64), 0, 1)

    def _margin(self) -> float:
        """The settings' contact margin (every pair's speculative distance before its reach)."""
        return float(self.model.settings.margin)

    def _reach(self) -> np.ndarray:
        """Per shape: the distance its body's points can travel in one step, h (speed +
        |omega| * radius) (:func:`~contactlab.collision.boxes.reach.shape_reach_of` of :meth:`_sweep`)."""
        return shape_reach_of(self._sweep())

    def _sweep(self) -> np.ndarray:
        """Per shape: (h v, h |omega| r) of its body (:func:`~contactlab.sim.stages.shape_sweep`)."""
        return shape_sweep(self)

    def _has_position_rows(self) -> bool:
        """Whether the model has joint or planar rows (position-level constraints); the Model is
        frozen, so this is worked out once per model."""
        cached = getattr(self, "_position_rows", None)
        if cached is None or cached[0] is not self.model:
            cached = self._position_rows = (self.model, bool(self.model.joints) or bool(np.any(self.model.planar)))
        return cached[1]

    def joint_error(self) -> float:
        """Largest |position error| of the joint rows (limits excluded; compiled, the rows of
        mechanics.system.joint_rows)."""
        if not self._has_position_rows():
            return 0.0
        model, data = self.model, self.data
        return float(joint_error_kernel(packed_joints(model).kernel_args, model.dof_start, data.position,
                                        data.quaternion, data.linear_velocity, data.angular_velocity,
                                        data.planar_reference))

    def project_joints(self, tol: float = 1e-10, max_iter: int = 8) -> float:
        """Newton projection of positions onto the joint manifold, M-weighted minimum norm:
        dx = -M^-1 J' (J M^-1 J')^+ err (post-stabilisation); a joint past one of its limits gets
        that limit as one more row. Returns the remaining joint error (limits excluded). One compiled
        call (:func:`~contactlab.mechanics.joint_projection.project_joints_kernel`: rows, J M^-1 J', Cholesky or
        least squares, x += M^-1 J' lam with the quaternion update, up to ``max_iter`` times)."""
        model, data = self.model, self.data
        return float(project_joints_kernel(packed_joints(model).kernel_args, model.dof_start, model.kind,
                                           KIND_KINEMATIC, model.mass, model.inv_inertia, data.position,
                                           data.quaternion, data.linear_velocity, data.angular_velocity,
                                           data.planar_reference, float(tol), int(max_iter)))

    def run(self, duration: float, *, progress: bool = False, record_poses: bool = False,
            trajectory: Trajectory | None = None) -> Trajectory:
        """Step for ``duration`` seconds (rounded to whole steps); returns the :class:`Trajectory`."""
        if isinstance(duration, bool) or not isinstance(duration, (int, float, np.integer, np.floating)) \
                or not (np.isfinite(duration) and duration >= 0):
            from ..errors import ParamError
            raise ParamError(f"duration must be a finite number of seconds >= 0, got {duration!r}")
        steps = round(duration / self.h)
        if steps > MAX_RUN_STEPS:
            from ..errors import ParamError
            raise ParamError(f"duration {duration:g} s is {steps:.3g} steps of {self.h:g} s, above the "
                             f"{MAX_RUN_STEPS:.0e} one run records in memory; run it in parts (run() continues "
                             f"from where the last call stopped)")
        steps = int(steps)
        traj = trajectory or Trajectory(list(self.model.names))
        if record_poses and not traj.positions:
            traj.positions.append(self.data.position.copy())
            traj.quaternions.append(self.data.quaternion.copy())

        def one(staged=False):
            rec = self._staged_step() if staged else self.step()
            if self.has_actuation:
                rec.energy_gain = float("nan")
            traj.records.append(rec)
            if record_poses:
                traj.positions.append(self.data.position.copy())
                traj.quaternions.append(self.data.quaternion.copy())

        with blas_threads(self.blas_threads):
            try:
                if progress and steps > 1:
                    from rich.progress import Progress
                    with Progress(transient=True) as bar:
                        task = bar.add_task(f"simulating {self.scene.name}", total=steps)
                        for _ in range(steps):
                            one()
                            bar.advance(task)
                else:
                    left = steps
                    while left > 0:
                        taken, single = self._rolled(left, traj, record_poses)
                        left -= taken
                        if left and single:     # the step a rollout handed over (sim/robot_rollout.py), or every step
                            one(self._unfused)
                            left -= 1
            except SimulationError as exc:  # the steps so far are kept; the state is the last good one
                traj.error = str(exc)
        return traj

    def set_motor(self, joint: str, target_velocity: float | None = None, max_force: float | None = None) -> None:
        """Change a joint motor's target velocity and/or force limit between steps (state: the
        model stays as built; ``data.motor_target`` / ``data.motor_max_force`` change)."""
        d = self.data
        for k, jt in enumerate(self.model.joints):
            if jt.name == joint:
                if jt.kind not in ("revolute", "prismatic"):
                    raise ModelError(f"joint {joint!r} is {jt.kind}; motors need a revolute or prismatic joint")
                tv = float(d.motor_target[k]) if target_velocity is None else float(target_velocity)
                mf = float(d.motor_max_force[k]) if max_force is None else float(max_force)
                if np.isnan(tv):
                    tv = 0.0
                if not mf > 0:
                    raise ModelError(f"max_force must be > 0, got {mf}")
                d.motor_target[k], d.motor_max_force[k] = tv, mf
                self.has_actuation = True
                return
        raise ModelError(f"no joint named {joint!r}; joints: {[j.name for j in self.model.joints]}")

    def set_velocity(self, body: str, linear=None, angular=None) -> None:
        """Set a body's velocity (for a kinematic body: the velocity it moves with from now on)."""
        i = self.model.index(body)
        if linear is not None:
            self.data.linear_velocity[i] = np.asarray(linear, dtype=np.float64)
        if angular is not None:
            self.data.angular_velocity[i] = np.asarray(angular, dtype=np.float64)

    def body_state(self, name: str) -> dict:
        i = self.model.index(name)
        d = self.data
        return {"position": d.position[i].tolist(), "orientation": d.quaternion[i].tolist(),
                "linear_velocity": d.linear_velocity[i].tolist(), "angular_velocity": d.angular_velocity[i].tolist()}

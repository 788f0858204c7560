"""Time stepping: detect -> build -> solve -> recover -> integrate (DESIGN.md ``sim``).

Semi-implicit Euler: v+ comes from the contact model, then x += h v+ and the orientation is
rotated by exp(h omega+). Joint position errors are removed after each step by a Newton
projection (post-stabilisation) when ``settings.project_joints`` is on, on top of the
velocity-level drift correction of arechavaleta eq. (10).
"""
from __future__ import annotations

import dataclasses
import math
import time

import numpy as np
import scipy.sparse as sp

from ..blas import blas_threads
from ..heap import keep_freed_memory
from ..collision import CollisionWorld, detect_then_match
from ..collision.boxes import shape_reach_of
from ..errors import ModelError, SimulationError, raise_interrupt_behind
from ..kernels.components import body_pair_groups, row_block_components
from ..kernels.energy import energies as _energies, energies_and_depth as _energies_and_depth
from ..kernels.pgs_matrix_free import solve_matrix_free
from ..kernels.tolerances import CERTIFY
from ..mechanics import kernels as _MK
from ..mechanics.joint_projection import displace, joint_error_kernel, project_joints_kernel
from ..mechanics.model import KIND_KINEMATIC, Data, Model, build_model
from ..mechanics.rotation import quat_to_matrix
from ..mechanics.scene import Scene
from ..mechanics.system import _packed, assemble_system, build_system, delassus, mobility, rows_times
from ..models import get_model, make_options
from ..models.box_friction import _layout as _box_layout, row_heights
from ..models.built import problem_of
from ..solution import Solution, Status
from ..solvers import available_solvers, solve
from ..problems import BoxedLCP
from .fallback import _cap_option, certified, rescue, usable
from .faults import checked_step
from .box_step import BoxFrictionStep, free_bodies_only, matrix_free_solution, warm_start_stop
from .islands import solve_islands

from .recorder import RECORD_FIELDS, StepRecord, Trajectory  # noqa: F401 (re-exported)


def energies(model: Model, data: Data) -> tuple[float, float]:
    """(kinetic, potential) energy of the bodies with dofs, one compiled pass (kernels/energy.py;
    kinetic_energy / potential_energy below are the array formulas it is tested against)."""
    ke, pe = _energies(model.dof_start, model.mass, model.inertia, data.quaternion, data.linear_velocity,
                       data.angular_velocity, data.position, np.asarray(model.gravity, dtype=np.float64))
    return float(ke), float(pe)


def kinetic_energy(model: Model, data: Data) -> float:
    live = np.flatnonzero(model.dof_start >= 0)
    if live.size == 0:
        return 0.0
    R = quat_to_matrix(data.quaternion[live])
    w = data.angular_velocity[live]
    v = data.linear_velocity[live]
    Iw = np.einsum("kij,kjl,kml,km->ki", R, model.inertia[live], R, w)
    return float(0.5 * np.sum(model.mass[live] * np.sum(v * v, axis=1)) + 0.5 * np.sum(w * Iw))


def potential_energy(model: Model, data: Data) -> float:
    live = model.dof_start >= 0
    return float(-np.sum(model.mass[live] * (data.position[live] @ model.gravity)))


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
    The Newton budget of 30 steps is the one measured best on certified piles (docs/benchmarks-tuning.md):
    fewer leave large corrections to an interior point whose factorisation of every row fills in.
    ``islands``: (count, label per row) of the contacts' independent groups, solved apart by box-qp
    (solvers/box_qp.py ``_islands``) after the contacts with a gap are set aside (``set_aside``: rows
    with c_i above the deepest target, checked afterwards and brought in where the correction pushes
    them in: a large pile's correction, one island with its gaps, splits into many small ones);
    ``groups``: the rows' body-pair groups (kernels/components.py
    ``body_pair_groups``), over which an island's Newton steps are factorised block by block;
    ``factors``: (N, W, eps) with A = N W N' + eps I, for the interior point's systems in body space
    (solvers/box_qp.py ``_BodySpace``)."""
    problem = BoxedLCP(A, c, np.zeros(c.size), np.full(c.size, np.inf))
    if factors is not None and sp.issparse(A):
        problem.factors = factors
    if islands is not None:
        # each island's projected Newton (30 steps with line search up to POSITION_SEARCH_MAX rows;
        # box-qp's island_poor_iterations, 8, from a start above IPM_WARM_MAX, as a falling pile's
        # new contacts are), the interior point on the islands
        # it leaves; the islands of the rows without a gap
        problem.islands = islands
        if groups is not None:
            problem.body_groups = groups
        sol = solve(problem, "box-qp", max_iterations=30, tol=POSITION_TOL, set_aside=True,
                    island_search_max=POSITION_SEARCH_MAX, island_iterations=30)
    else:
        sol = solve(problem, "box-qp", algorithm="newton", max_iterations=30, tol=POSITION_TOL)
    if not sol.success:
        sol = solve(problem, "box-qp", algorithm="ipm", tol=POSITION_TOL)
    p = np.asarray(sol.z, dtype=np.float64)
    return p, (float(sol.relative_residual) if np.all(np.isfinite(p)) else float("inf"))


_FROM_LAST_SYSTEM = object()     # Simulator._unbuilt: the problem is built from last_system when read


def default_combination(model, method, model_options, reuse, iterations, islands) -> tuple:
    """(contact model, method, model options, why) for a simulator given no model.

    Where every moving body is free (:func:`contactlab.sim.box_step.free_bodies_only`): box friction
    with each friction box set from the contact's normal impulse of the previous step (arechavaleta
    §IV-C, eq. 16: static bounds, so each step is a convex bound-constrained QP whose minimiser
    box-qp's projected Newton reaches and solve() certifies), taken by the compiled steps. Bounds
    coupled to the current normal impulse have no convergence guarantee for box-qp's fixed point
    (docs/benchmarks-sim.md). Else Stewart-Trinkle with ``method`` (the default of earlier
    releases). A caller who sets a method, model options, reuse, a fixed budget or islands keeps
    Stewart-Trinkle, for which those were written."""
    if (method is None and model_options is None and reuse is None and iterations is None and not islands
            and free_bodies_only(model)):
        return ("box-friction", "box-qp", {"coupling": "previous"},
                "free bodies only: box friction (bounds from the previous step) by box-qp, compiled and certified")
    if not free_bodies_only(model):
        why = "joints, planar or kinematic bodies: Stewart-Trinkle"
    else:
        why = "a method, model options, reuse, a budget or islands given: Stewart-Trinkle"
    return "stewart-trinkle", method, model_options, why


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
    torque lasts one step, so a controller sets it again each step.

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

    Box friction on a scene of free bodies (no joint, planar or kinematic body; box-qp in certified
    mode, or pgs in fixed-budget mode) takes the step after detection as one compiled call
    (:mod:`contactlab.sim.box_step`: the same kernels in the same order, the same bits as the
    general path); ``last_system`` and ``last_problem`` are then assembled when read, and the call's
    time is the step's ``solve_time`` and ``timing["solve"]``.

    ``model`` None (default) chooses a certified combination that is fast for the scene
    (:func:`default_combination`, recorded in ``default_choice``): box friction with the previous
    step's bounds solved by box-qp on scenes of free bodies only (the compiled steps above), else
    Stewart-Trinkle with its default method.

    ``islands`` (default False): a boxed-LCP step with a dense matrix whose rows form several
    independent groups (separate stacks or piles: no shared moving body, no friction link) is solved
    island by island and the assembled answer certified on the whole problem
    (:mod:`contactlab.sim.islands`: a solve() per island, any method). Off by default: box-qp splits
    box friction's sparse problems (above its ``dense_max`` rows) into their islands itself, in one
    compiled call (solvers/box_qp.py ``_islands``), and below that a solve() per island costs more
    than it saves (docs/benchmarks-tuning.md).
    """

    def __init__(self, scene: Scene, model: str | None = None, method: str | None = None, *,
                 model_options: dict | None = None, solver_options: dict | None = None,
                 dt: float | None = None, warm_start: bool = True, blas_threads: int | None = 1,
                 fallback: bool = True, max_uncertified_residual: float = 1e-3, controllers=(),
                 reuse: str | None = None, iterations: int | None = None, islands: bool = False):
        if dt is not None:
            if not dt > 0:
                raise ModelError(f"dt must be > 0, got {dt}")
            scene.settings.dt = float(dt)
        self.scene = scene
        self.blas_threads = blas_threads
        keep_freed_memory()     # the steps' freed memory stays in the process for the next (heap.py)
        self.fallback = fallback
        self.max_uncertified_residual = max_uncertified_residual
        self.model, self.data = build_model(scene)
        self.world = CollisionWorld(self.model)
        if model is None:
            model, method, model_options, self.default_choice = default_combination(
                self.model, method, model_options, reuse, iterations, islands)
        else:
            self.default_choice = None
        self.contact_model = get_model(model)
        if not callable(getattr(self.contact_model, "recover", None)):
            raise ModelError(f"model {model!r} has no recover(); it cannot drive a time-stepping simulation")
        self.model_name = model
        self.model_options = make_options(self.contact_model, model_options)
        self.method = method or getattr(self.contact_model, "DEFAULT_METHOD", "auto")
        if self.method != "auto" and self.method not in available_solvers():
            raise ModelError(f"unknown method {self.method!r}; available: {', '.join(['auto', *available_solvers()])}")
        self.solver_options = dict(solver_options or {})
        if self.method in ("pgs", "psor") and "tol" not in self.solver_options:
            self.solver_options["tol"] = SWEEP_TOL
        spec = available_solvers().get(self.method)
        self.islands = bool(islands)
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
        self._spec = spec
        if spec is not None:    # a bad or unknown solver option fails here, not at the first step
            spec.make_options({k: v for k, v in self.solver_options.items() if k != "certify"})
        from .reuse import make_reuse   # reuse="motionless": loomis-balkcom §IV (sim/reuse.py)
        self.reuse = make_reuse(reuse, self)
        # fixed-budget box friction: PGS on the rows and M^-1 blocks, the Delassus matrix never formed
        # (kernels/pgs_matrix_free.py); options other than the budget and its stops keep the assembled pgs
        self._matrix_free = bool(self.iterations is not None and self.method == "pgs" and model == "box-friction"
                                 and self.model_options.joints == "rows" and self.reuse is None
                                 and set(self.solver_options) <= {"tol", "w_step_tol", "max_iterations", "max_sweeps"})
        self.has_actuation = bool(np.any(self.model.kind == KIND_KINEMATIC)) or any(
            j.motor_target is not None for j in self.model.joints)
        self._kinematic = bool(np.any(self.model.kind == KIND_KINEMATIC))
        self._passive = np.ones(self.model.ndof)
        for i in range(self.model.nb):
            if self.model.kind[i] == KIND_KINEMATIC:
                self._passive[self.model.dof_start[i]:self.model.dof_start[i] + 6] = 0.0
        self._last_system = None
        self._deferred_system = None     # the terms of a compiled step's system (sim/box_step.py), assembled when read
        self._last_problem = None
        self._unbuilt = None      # the system whose problem the matrix-free path did not assemble
        self.last_solution = None
        self.timing = {}
        self.controllers = []
        for fn in controllers or ():
            self.add_controller(fn)
        # box friction on joint-free scenes (box-qp certified, or fixed-budget pgs): the step after
        # detection in one compiled call (sim/box_step.py); None where the configuration is another
        self._box_step = BoxFrictionStep.plan(self)

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
        """The last step's ConstraintSystem; a compiled step's (sim/box_step.py) is assembled on first read."""
        if self._last_system is None and self._deferred_system is not None:
            contacts, h, terms_of, args = self._deferred_system
            self._last_system = assemble_system(self.model, self.data, contacts, h, *terms_of(*args))
            self._deferred_system = None
        return self._last_system

    @last_system.setter
    def last_system(self, sys) -> None:
        self._last_system, self._deferred_system = sys, None

    def defer_system(self, contacts, h: float, terms_of, args: tuple) -> None:
        """Assemble the step's system and its problem only when read: a compiled step's, whose
        ``terms_of(*args)`` gives mechanics/system.py ``assemble_system``'s (f, body, terms, v_free)."""
        self._last_system, self._deferred_system = None, (contacts, h, terms_of, args)
        self._last_problem, self._unbuilt = None, _FROM_LAST_SYSTEM

    @property
    def last_problem(self):
        """The last step's problem (as the solver saw it); a matrix-free step's is assembled on first read."""
        if self._last_problem is None and self._unbuilt is not None:
            sys = self.last_system if self._unbuilt is _FROM_LAST_SYSTEM else self._unbuilt
            self._last_problem = problem_of(self.contact_model.build(sys, self.model_options))
            self._unbuilt = None
        return self._last_problem

    @last_problem.setter
    def last_problem(self, problem) -> None:
        self._last_problem, self._unbuilt = problem, None

    def sweep_stops(self) -> tuple[float, float]:
        """(tol, w_step_tol) of the fixed-budget matrix-free sweeps, compiled or not: the solver
        options' (tol SWEEP_TOL where absent; w_step_tol 0: off)."""
        return float(self.solver_options.get("tol", SWEEP_TOL)), float(self.solver_options.get("w_step_tol", 0.0))

    def _solve_matrix_free(self, sys, rows, warm):
        """Fixed-budget box friction without the Delassus matrix: (n, Solution) (None when a row
        touches more than two bodies) from
        :func:`contactlab.kernels.pgs_matrix_free.solve_matrix_free` (same iterates as ``pgs`` on the
        assembled problem, same stopping tol and w_step_tol, residuals of ``solve()``'s definition)."""
        H, q, cfm, lo, hi, findex, mu = rows         # box_friction.rows (the build stage)
        n = H.shape[0]
        z0 = warm if (warm is not None and warm.shape == (n,)) else None
        tol, w_step_tol = self.sweep_stops()
        try:
            z, w, dv, code, st = solve_matrix_free(H, sys.W_blocks, q, cfm, lo, hi, findex, mu, z0,
                                                  max_sweeps=self.iterations, tol=tol, w_step_tol=w_step_tol,
                                                  height=self._sweep_heights(sys))
        except ValueError:      # a row on more than two bodies: this step takes the assembled path
            return None
        return n, matrix_free_solution(z, w, dv.reshape(-1), code, st)

    def _warm_start_may_certify(self, sys=None) -> bool:
        """Whether a certified step first tries its warm start without the Delassus matrix
        (:meth:`_certified_warm_start`; sim/box_step.py ``box_friction_step`` with ``try_warm``):
        box friction (``joints="rows"``) by box-qp, no reuse or islands option (a solve() per
        island asked for), with a warm start, after a certified
        step of at most one Newton step (a resting stack's or settled pile's steps take 0 and 1 in
        turn, the warm start after a Newton step being the answer; a moving pile's take tens, and
        the try would cost three sparse passes for nothing); ``sys``: the step's system (its rows
        must be whole body blocks)."""
        prev = self.last_solution
        return bool(self.iterations is None and self.method == "box-qp" and self.warm_start and self.reuse is None
                    and not self.islands and self.model_name == "box-friction" and self.model_options.joints == "rows"
                    and (sys is None or sys.body_blocks)
                    and prev is not None and prev.success and prev.iterations <= 1)

    def _warm_start_tol(self) -> float:
        """box-qp's ``tol``, the stop a warm start is tried against without the Delassus matrix
        (:meth:`_certified_warm_start`, sim/box_step.py ``box_friction_step``), or 0.0 where it is above
        the certification threshold (an answer at box-qp's stop would then not be certified)."""
        tol = float(self._spec.make_options({k: v for k, v in self.solver_options.items() if k != "certify"}).tol)
        return tol if 0.0 < tol <= float(self.solver_options.get("certify", CERTIFY)) else 0.0

    def _certified_warm_start(self, sys, warm):
        """The warm start as the step's answer where box-qp would return it without a Newton step,
        found without the Delassus matrix (sim/box_step.py ``warm_start_stop``: W H' z, w, and
        box-qp's own stop at its start, whose units |q_i| + |w_i - q_i| make it an upper bound of
        solve()'s relative residual). No wasted work: a resting stack's warm start after a Newton
        step mostly is the answer, and assembling H W H' and running box-qp to find that out cost
        more than the rest of the step. Returns (n, Solution) with status SOLVED, 0 iterations,
        that bound as ``relative_residual`` (info ``warm_start_certified`` and
        ``relative_residual_bound``), or None (the assembled path takes the step); None as well
        where box-qp's ``tol`` is above the certification threshold. The compiled step
        (sim/box_step.py) does the same in the same order. A tolerance of solve()'s certification
        threshold instead (1e-6, ten times box-qp's) let a resting 100-box stack take answers box-qp
        would have refined, rock, and need 3.4 Newton steps a step instead of 0.5; with box-qp's
        own, the runs are the same bits (a stack with the current normals' bounds; with the
        previous normals' a 30-box stack parts at a step or two, 2e-10 m after 100 steps: box-qp
        measures its islands and set-aside rows each on their own)."""
        tol = self._warm_start_tol()
        H, q, cfm, lo, hi, findex, mu = self.contact_model.rows(sys, self.model_options)
        n = H.shape[0]
        if warm.shape != (n,) or tol == 0.0:
            return None
        z = np.ascontiguousarray(warm, dtype=np.float64)
        W = sys.Minv
        taken, w, dv, c = warm_start_stop(H.indptr, H.indices, H.data, W.indptr, W.indices, W.data, float(cfm),
                                          np.ascontiguousarray(q, dtype=np.float64), lo, hi, findex, mu, z, tol)
        if not taken:
            return None
        info = {"warm_start_certified": True, "relative_residual_bound": True, "velocity_change": dv}
        return n, Solution(z=z.copy(), w=w, status=Status.SOLVED, iterations=0, residual=c[0], method=self.method,
                           complementarity=c[1], infeasibility=c[2], relative_residual=c[3], info=info)

    def _sweep_heights(self, sys, normals_only: bool = False) -> np.ndarray:
        """The rows' heights for the matrix-free sweep order (models/box_friction.py ``row_heights``):
        box friction's rows [J; A; L; N; S; T], or the normal rows N alone."""
        point = np.ascontiguousarray(sys.contacts.point, dtype=np.float64).reshape(-1, 3) if sys.nc \
            else np.zeros((0, 3))
        gravity = np.asarray(self.model.gravity, dtype=np.float64)
        if normals_only:
            return row_heights(point, gravity, 0, 1)
        return row_heights(point, gravity, _box_layout(sys, self.model_options)[2], 3)

    @property
    def h(self) -> float:
        return float(self.model.settings.dt)

    def step(self) -> StepRecord:
        """Advance one step: controllers -> detect -> build -> solve -> recover -> integrate -> record."""
        try:
            return checked_step(self, self._step)     # the motion's plausibility (sim/faults.py)
        except SystemError as exc:   # a Ctrl-C inside a compiled call (errors.interrupt_behind)
            raise_interrupt_behind(exc)

    def _step(self) -> StepRecord:
        for fn in self.controllers:
            fn(self)
        model, data, h = self.model, self.data, self.h
        clock = time.perf_counter
        t_start = clock()
        prev = data.contacts
        prev_normal = None if data.result is None else data.result.normal
        # each contact's nearest previous contact on the same shape pair (-1: a new pair), at any
        # distance for the warm start (a pair whose reduced manifold picked other points of its
        # polygon keeps its impulses near), within 2 margin + 1 mm for the previous-normal estimate
        radius = 2.0 * model.settings.margin + 1e-3
        if isinstance(self.world, CollisionWorld):      # detection and matching in one compiled call
            contacts, match = self.world.detect_matched(data, self._margin(), h, prev, prev_normal, radius)
        else:                               # a scene's own contact generator (e.g. the box gripper's grid)
            contacts, match = detect_then_match(self.world, data, self._margin(), self._sweep(), prev, prev_normal,
                                                radius)
        t_detect = clock()
        if self._box_step is not None:      # build -> solve -> recover -> integrate compiled (sim/box_step.py)
            record = self._box_step(self, contacts, match, t_start, t_detect)
            if record is not None:
                return record
        e0 = sum(energies(model, data))
        sys = build_system(model, data, contacts, h)
        warm = self._warm(sys, match)
        matrix_free = self._matrix_free and sys.body_blocks
        rows = self.contact_model.rows(sys, self.model_options) if matrix_free else None
        t0 = time.perf_counter()
        out = self._solve_matrix_free(sys, rows, warm if self.warm_start else None) if matrix_free else None
        if out is None and warm is not None and self._warm_start_may_certify(sys):
            out = self._certified_warm_start(sys, warm)     # certified without the Delassus matrix, or None
        matrix_free = out is not None
        if matrix_free:
            built = problem = None
            n, sol = out
        else:
            built = self.contact_model.build(sys, self.model_options)   # a models.built.Built (or a bare problem)
            problem = problem_of(built)
            n = problem.n
            kwargs = dict(self.solver_options)
            if self.method in ("pgs", "psor") and self.model_name == "box-friction" and not self.islands:
                kwargs["height"] = self._sweep_heights(sys)     # top down, as the matrix-free sweeps
            if self.warm_start and warm is not None and warm.shape == (problem.n,) and \
                    isinstance(problem, self._spec.problems):
                kwargs["warm_start"] = warm
            if self.reuse is not None:      # the motionless set's sub-solution replaces the previous step's
                self.reuse.prepare(built, contacts, kwargs)
            t0 = time.perf_counter()
            sol = solve_islands(problem, self.method, solve, **kwargs) \
                if (self.islands and isinstance(problem, BoxedLCP) and self.reuse is None) else None
            if sol is None:         # one island (or a sparse matrix): the whole problem at once
                sol = solve(problem, self.method, **kwargs)
        # success is the method's own certified success (issue 10): a non-success whose residual
        # happens to be small (a ray, a numerical failure, a sweep cap) is a rescue, not a success
        primary_ok = bool(sol.success)
        if not primary_ok and self.fallback and not certified(sol):
            sol = rescue(problem, sol, self.method)
        t_solve = time.perf_counter() - t0
        rescued = not primary_ok and certified(sol)
        if not primary_ok and not rescued and not usable(problem, sol, self.max_uncertified_residual):
            # applying this answer would corrupt the state (and blow up a few steps later): stop here
            raise SimulationError(f"step {data.steps + 1} (t = {data.time + h:.6g} s): no usable answer from "
                                  f"{self.method!r} or the fallbacks (status {sol.status.name}, relative residual "
                                  f"{sol.relative_residual:.3g} > {self.max_uncertified_residual:g})")
        t_solved = clock()
        result = self.contact_model.recover(sys, built, sol, self.model_options)
        # the applied answer warm-starts the next step (certified or, in fixed-budget mode, not)
        data.warm["z"] = np.asarray(sol.z).copy() if (sol.success or self.iterations is not None) else None
        # kinetic energy added by the constraint impulses: KE(v+) - KE(v + h M^-1 f), kinematic bodies excluded
        contact_gain = float(_MK.kinetic_gain(sys.M.indptr, sys.M.indices, sys.M.data,     # M: CSR (build_system)
                                              np.ascontiguousarray(result.v_next, dtype=np.float64),
                                              sys.v_free(), self._passive))
        # integrate
        _MK.advance_state(model.dof_start, np.ascontiguousarray(result.v_next, dtype=np.float64), data.linear_velocity,
                          data.angular_velocity, data.position, data.quaternion, h)
        if model.settings.contact_stabilization == "position" and contacts.count:
            self.project_contacts(sys, result.v_next)
        joint_error = self.project_joints() if (model.settings.project_joints and self._has_position_rows()) \
            else self.joint_error()
        data.time += h
        data.steps += 1
        data.joint_torque.clear()
        data.contacts, data.result = contacts, result
        if self.reuse is not None:      # new motionless set: its sub-LCP is solved now (LCP time)
            t_solve += self.reuse.after_step(contacts, built)
        self.last_system, self.last_problem, self.last_solution = sys, problem, sol
        if matrix_free:
            self._unbuilt = sys
        t_integrated = clock()
        # energies and the deepest overlap of the step's contacts, in one compiled pass
        ke, pe, pen = _energies_and_depth(model.dof_start, model.mass, model.inertia, data.quaternion,
                                          data.linear_velocity, data.angular_velocity, data.position,
                                          np.asarray(model.gravity, dtype=np.float64),
                                          np.ascontiguousarray(contacts.phi, dtype=np.float64))
        e1 = ke + pe
        # seconds per stage of this step (benchmarks/bench_sim.py): detect (with energy), build
        # (rows, Delassus, right-hand sides), solve (with fallbacks), recover + integrate + projections, record
        self.timing = {"detect": t_detect - t_start, "build": t0 - t_detect, "solve": t_solved - t0,
                       "integrate": t_integrated - t_solved, "record": clock() - t_integrated}
        return StepRecord(time=data.time, contacts=contacts.count, lcp_size=n,
                          iterations=int(sol.iterations), pivots=int(sol.pivots), residual=float(sol.residual),
                          success=bool(primary_ok), status=sol.status.name,
                          rescued=bool(rescued), kinetic_energy=ke, energy=e1,
                          energy_gain=e1 - e0, contact_energy_gain=contact_gain, max_penetration=pen, solve_time=t_solve, joint_error=joint_error)

    def _displace(self, dx: np.ndarray) -> None:
        """x += dx (translation, then rotation by the rotation vector) for every moving body that is
        not kinematic, in place (compiled: mechanics/joint_projection.py ``displace``)."""
        model, data = self.model, self.data
        displace(model.dof_start, model.kind, KIND_KINEMATIC, np.ascontiguousarray(dx, dtype=np.float64).reshape(-1),
                 data.position, data.quaternion)

    def project_contacts(self, sys, v_next: np.ndarray) -> None:
        """Remove penetration beyond the slop at the position level (no velocity change):
        with phi' = phi + h N v+ (linearised), solve the frictionless LCP
        w = N W N' p + c >= 0 perp p >= 0, c_i = zeta (phi'_i + slop) where phi'_i < -slop (1 +
        SLOP_EXCESS) and max(phi'_i + slop, 0) elsewhere (do not push other contacts in;
        mechanics/kernels.py ``position_targets``), then x += W N' p
        (W = M^-1, kinematic bodies held; N W N' from the compiled block Delassus), by box-qp on the
        whole LCP (:func:`position_lcp`: projected Newton from the deep contacts, then the interior
        point). An answer off by
        more than 1e-2 (relative) skips the correction.
        Fixed-budget mode: PGS with the step's sweep budget, its answer applied (p >= 0 at every sweep),
        matrix-free (the same iterates without forming N W N') where the body blocks cover every dof."""
        st = self.model.settings
        # phi' = phi + h N v+, c and the deep test in one compiled pass
        c, deep = _MK.position_targets(rows_times(sys.N, v_next), np.ascontiguousarray(sys.phi, dtype=np.float64),
                                       float(sys.h), float(st.slop), float(st.contact_zeta))
        if not deep:
            return
        n = sys.nc
        if self.iterations is not None and sys.body_blocks:
            # fixed-budget mode: PGS on N W N' + POSITION_CFM I without forming it (kernels/pgs_matrix_free.py);
            # dv = W N' p is the displacement
            p, _, dx, _, _ = solve_matrix_free(sys.N, self._held_blocks(sys), c, POSITION_CFM, np.zeros(n), np.full(n, np.inf),
                                               np.full(n, -1, dtype=np.int64), np.zeros(n),
                                               max_sweeps=self.iterations, tol=1e-4, report=False,
                                               height=self._sweep_heights(sys, normals_only=True))
            if np.all(np.isfinite(p)):
                self._displace(dx.reshape(-1))
            return
        W = mobility(self.model, self.data) if self._kinematic else sys.Minv
        factors = None
        if sys.W_blocks is not None:
            held = self._held_blocks(sys)
            A = delassus(dataclasses.replace(sys, W_blocks=held), sys.N, POSITION_CFM, dense=sys.nc <= 200)
            factors = (sys.N, held, POSITION_CFM)
        else:
            A = (sys.N @ W @ sys.N.T).toarray() + POSITION_CFM * np.eye(sys.nc)
        if self.iterations is not None:
            # fixed-budget mode: the step's sweep budget; every PGS sweep keeps p >= 0, so a partial
            # answer only pushes apart, and it is applied whatever its residual
            prob = BoxedLCP(A, c, np.zeros(n), np.full(n, np.inf))
            sol = solve(prob, "pgs", **_cap_option("pgs", self.iterations), tol=1e-4,
                        height=self._sweep_heights(sys, normals_only=True))
            if np.all(np.isfinite(sol.z)):
                self._displace(W @ (sys.N.T @ sol.z))
            return
        # projected Newton from p = 0 (the deep contacts first, then those the correction would push
        # in), then the interior point; 100 capped PGS sweeps on a pile used to miss 1e-2, so the
        # correction was skipped
        islands = groups = None
        if sp.issparse(A) and sys.body_blocks:
            islands = row_block_components(sys.N.indptr, sys.N.indices, np.full(n, -1, dtype=np.int64), 6)
            groups = body_pair_groups(sys.N.indptr, sys.N.indices)
        p, rel = position_lcp(A, c, islands, groups, factors)
        if rel <= 1e-2:
            self._displace(W @ (sys.N.T @ p))

    def _held_blocks(self, sys):
        """The system's M^-1 blocks with kinematic bodies' zeroed: they do not yield to a position
        correction (a copy only when there are kinematic bodies)."""
        if not self._kinematic:
            return sys.W_blocks
        Wb = sys.W_blocks.copy()
        Wb[self.model.dof_start[self.model.kind == KIND_KINEMATIC] // 6] = 0.0
        return Wb

    def _warm(self, sys, match):
        """The step's warm start: the model's own from the previous answer with contacts matched
        (``warm_start`` of the model module, e.g. box_friction.warm_start), else the previous z as
        it is; None after a step whose answer is not reused (data.warm["z"] None: uncertified)."""
        z = self.data.warm.get("z")
        hook = getattr(self.contact_model, "warm_start", None)
        if z is None or hook is None or self.data.result is None:
            return z
        return hook(sys, self.data.result, match, self.model_options)

    def _margin(self) -> float:
        """The settings' contact margin (every pair's speculative distance before its reach)."""
        return float(self.model.settings.margin)

    def _reach(self) -> np.ndarray:
        """Per shape: the distance its body's points can travel in one step, h (speed +
        |omega| * radius) (collision/boxes.py ``shape_reach_of`` of :meth:`_sweep`)."""
        return shape_reach_of(self._sweep())

    def _sweep(self) -> np.ndarray:
        """Per shape: (h v, h |omega| r) of its body (mechanics/kernels.py ``shape_sweep``); a pair's
        margin grows by how far its two shapes can close in on each other in the step
        (collision/boxes.py ``pair_reach``), so fast bodies do not tunnel, resting ones keep the
        settings' margin, and bodies falling side by side get half the sum of their reaches."""
        m, d = self.model, self.data
        return _MK.shape_sweep(m.dof_start, d.linear_velocity, d.angular_velocity, self.world.body_radius,
                               self.world.shape_body, self.h)

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
        return float(joint_error_kernel(_packed(model).kernel_args, model.dof_start, data.position, data.quaternion,
                                        data.linear_velocity, data.angular_velocity, data.planar_reference))

    def project_joints(self, tol: float = 1e-10, max_iter: int = 8) -> float:
        """Newton projection of positions onto the joint manifold, M-weighted minimum norm:
        dx = -M^-1 J' (J M^-1 J')^+ err (post-stabilisation); a joint past one of its limits gets
        that limit as one more row. Returns the remaining joint error (limits excluded). One compiled
        call (mechanics/joint_projection.py ``project_joints_kernel``: rows, J M^-1 J', Cholesky or
        least squares, x += M^-1 J' lam with the quaternion update, up to ``max_iter`` times)."""
        model, data = self.model, self.data
        return float(project_joints_kernel(_packed(model).kernel_args, model.dof_start, model.kind, KIND_KINEMATIC,
                                           model.mass, model.inv_inertia, data.position, data.quaternion,
                                           data.linear_velocity, data.angular_velocity, data.planar_reference,
                                           float(tol), int(max_iter)))

    def run(self, duration: float, *, progress: bool = False, record_poses: bool = False,
            trajectory: Trajectory | None = None) -> Trajectory:
        """Step for ``duration`` seconds (rounded to whole steps); returns the :class:`Trajectory`."""
        if isinstance(duration, bool) or not isinstance(duration, (int, float, np.integer, np.floating)) \
                or not (np.isfinite(duration) and duration >= 0):
            from ..errors import ParamError
            raise ParamError(f"duration must be a finite number of seconds >= 0, got {duration!r}")
        traj = trajectory or Trajectory(list(self.model.names))
        steps = int(round(duration / self.h))
        if record_poses and not traj.positions:
            traj.positions.append(self.data.position.copy())
            traj.quaternions.append(self.data.quaternion.copy())

        def one():
            rec = self.step()
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
                    for _ in range(steps):
                        one()
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

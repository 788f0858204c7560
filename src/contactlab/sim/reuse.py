"""Motionless-set computation reuse in time stepping (loomis-balkcom §IV, Figs. 1, 3, 4).

The paper's SIMULATE::

    prevSoln <- {} ; prevMotionless <- {}
    each step:  SOLVELCP(world, prevSoln)                  # warm start (Theorem 1)
                motionless <- GETMOTIONLESSBODIES(world)
                if motionless != prevMotionless:
                    prevSoln <- SOLVELCP(motionless, {}) ; prevMotionless <- motionless

Motionless bodies (:func:`motionless_bodies`): dynamic bodies whose speed after the step is at most
``tol_v`` (rotation times the body's radius included) and that are connected to a fixed body
through contacts with other such bodies. The sub-problem of the contacts among them (and the
ground) is the principal sub-problem of the step's problem on those contacts' rows (eq. 8: no
contact of the sub-structure touches a body outside it), solved once when the set changes and
kept while it stays. Each later step passes it as the warm start of the full solve: its contacts
are found again by shape pair and nearest point (as the simulator matches contacts between steps),
their rows get the stored values, every other row starts at zero, so Dantzig starts from
([x 0], [y A21 x + b2]) and needs at most n - k major cycles (Theorem 1). The warm-start
kernel re-solves the stored active set on the current data, so the start is exact even when the
motionless bodies' data drifted within the tolerance. Solvers without a warm start ignore it.

The cost of the sub-solves is part of the step's LCP time (``StepRecord.solve_time``), as in the
paper's 2.2 s -> 1.2 s.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from ..errors import ModelError
from ..mechanics.model import KIND_DYNAMIC, KIND_FIXED
from ..models.built import problem_of
from ..kernels import reuse as KR
from ..kernels.tolerances import CERTIFY
from .fallback import certified

MODES = ("motionless",)
_EMPTY = np.zeros(0)     # the cold start


def motionless_bodies(model, data, contacts, radius: np.ndarray, tol_v: float) -> np.ndarray:
    """Boolean (nb,): dynamic bodies at rest (|v| + |omega| r <= tol_v) that are connected to a fixed
    body through ``contacts`` between bodies at rest (loomis-balkcom §IV GETMOTIONLESSBODIES); one
    compiled call (kernels/reuse.py ``motionless_mask``: union-find over the contacts)."""
    if contacts is None or contacts.count == 0:
        return np.zeros(model.nb, dtype=bool)
    return KR.motionless_mask(model.kind == KIND_DYNAMIC, model.kind == KIND_FIXED, data.linear_velocity,
                              data.angular_velocity, radius, float(tol_v), contacts.body_a, contacts.body_b)


def contact_rows(built, nc: int) -> np.ndarray:
    """(nc, r) row indices of each contact's variables in a contact model's problem, from its
    row groups (``Built.rows``, or ``problem.row_groups``): normal (1 per contact), friction (d
    per contact, contiguous, for the pyramid; two blocks S then T for box friction), lambda."""
    g = getattr(built, "rows", None) or getattr(built, "row_groups", None) or \
        getattr(getattr(built, "problem", None), "row_groups", None)
    if g is None or "normal" not in g:
        raise ModelError("motionless reuse needs a contact model whose problem has row_groups (normal, ...)")
    parts = [np.arange(g["normal"].start, g["normal"].stop).reshape(nc, 1)]
    if "friction" in g:
        fr = np.arange(g["friction"].start, g["friction"].stop)
        if "lambda" in g:           # pyramid: d rows per contact, contiguous
            parts.append(fr.reshape(nc, -1) if nc else fr.reshape(0, 0))
        else:                       # box friction: S rows then T rows
            parts.append(fr.reshape(-1, nc).T if nc else fr.reshape(0, 0))
    if "lambda" in g:
        parts.append(np.arange(g["lambda"].start, g["lambda"].stop).reshape(nc, 1))
    return np.hstack(parts).astype(np.int64) if nc else np.zeros((0, sum(p.shape[1] for p in parts)), np.int64)


def principal_subproblem(problem, rows: np.ndarray):
    """The principal sub-problem of an LCP or BoxedLCP on ``rows`` (friction rows keep their
    coupling to their contact's normal row, which is among ``rows``)."""
    from ..problems import LCP, BoxedLCP
    M = problem.M
    Msub = M[np.ix_(rows, rows)] if not sp.issparse(M) else sp.csr_matrix(M)[rows][:, rows].toarray()
    if isinstance(problem, BoxedLCP):
        pos = np.full(problem.n, -1, dtype=np.int64)
        pos[rows] = np.arange(rows.size)
        fi = problem.findex[rows]
        fi = np.where(fi >= 0, pos[np.maximum(fi, 0)], -1)
        if np.any((problem.findex[rows] >= 0) & (fi < 0)):
            raise ModelError("a friction row's normal is outside the motionless sub-problem")
        if np.any(fi >= 0):
            return BoxedLCP(Msub, problem.q[rows], problem.lo[rows], problem.hi[rows], fi, problem.mu[rows])
        return BoxedLCP(Msub, problem.q[rows], problem.lo[rows], problem.hi[rows])
    if isinstance(problem, LCP):
        return LCP(Msub, problem.q[rows])
    raise ModelError(f"motionless reuse works on LCP and BoxedLCP problems, not {type(problem).__name__} "
                     "(a scene with joints gives a MixedLCP)")


@dataclass
class ReuseLog:
    """Per step: motionless body count, whether the set changed (a sub-solve), the sub-solve's time
    and pivots, and k = the number of rows the warm start carried."""
    motionless: list = field(default_factory=list)
    changed: list = field(default_factory=list)
    sub_time: list = field(default_factory=list)
    sub_pivots: list = field(default_factory=list)
    sub_majors: list = field(default_factory=list)
    warm_rows: list = field(default_factory=list)
    sets: list = field(default_factory=list)     # the motionless set (body names) at each change


class MotionlessReuse:
    """State of SIMULATE's reuse for one :class:`~contactlab.sim.Simulator` (``reuse="motionless"``).

    ``tol_v``: speed (m/s) under which a body counts as at rest; default 1e-2 x g h, i.e. the
    speed gravity gives in a hundredth of a step (a body starting to tip or slide under at least
    1 % of g exceeds it after one step). The set only decides the warm start: it never changes the
    answer, only the work to reach it."""

    def __init__(self, sim, tol_v: float | None = None):
        self.sim = sim
        g = float(np.linalg.norm(sim.model.gravity))
        self.tol_v = float(tol_v) if tol_v is not None else 1e-2 * max(g, 1.0) * sim.h
        if not self.tol_v > 0:
            raise ModelError(f"reuse tol_v must be > 0, got {tol_v}")
        self.radius = np.asarray(sim.world.body_radius, dtype=np.float64)
        self.prev = None                         # motionless mask of the stored solution
        self.stored = None                       # (ContactSet subset, values (k, r))
        self.log = ReuseLog()
        self._pending_rows = 0
        self.last_warm = None       # the warm start given to the last step's solve (for measurements)
        self.last_sub = None        # the sub-problem solved after the last step, if the set changed
        # dantzig (the paper's method): its compiled call without solve()'s dispatch, planned once
        from ..solvers import available_solvers, solve
        from ..solvers.pivoting import DantzigWork, lean_takes
        self.work = work = DantzigWork()         # its own work arrays, kept between steps
        self._solve, self._direct_call, self._lean_solve, self.lean_takes = solve, work.direct, work.lean, lean_takes
        self._direct = self.lean = None
        self.cold = _EMPTY                       # the cold start's z (no warm start)
        if sim.method == "dantzig":
            try:
                self._direct = available_solvers()["dantzig"].make_options(dict(sim.solver_options))
            except ValueError:     # options dantzig does not take: solve() says so at the first step
                self._direct = None
        if self._direct is not None and self._direct.refine:   # the lean call: (max_pivots, tol) resolved once
            o = self._direct
            self.lean = (-1 if o.max_iterations is None else int(o.max_iterations), max(float(o.tol), CERTIFY))

    def prepare(self, built, contacts, kwargs: dict) -> None:
        """Replace the solver's warm start in ``kwargs`` by the motionless set's (SOLVELCP(world,
        prevSoln)); the previous step's answer is not used. No-op for solvers without warm starts."""
        kwargs.pop("warm_start", None)
        from ..solvers import available_solvers
        spec = available_solvers().get(self.sim.method)
        problem = problem_of(built)
        ws = self.warm_start(built, contacts) if spec is not None and spec.warm_start and \
            isinstance(problem, spec.problems) else None
        if ws is not None:
            kwargs["warm_start"] = ws

    def solve(self, problem, kwargs: dict):
        """The step's solve (SOLVELCP(world, prevSoln)) and the sub-solves: with dantzig, its compiled
        call straight from here over work arrays kept between steps
        (:meth:`contactlab.solvers.pivoting.DantzigWork.direct`: the Solution solve() gives,
        without the dispatch, whose fixed cost is about what a warm start saves on the paper's 7-block
        column: docs/computation-reuse.md); anything it leaves (a refusal, a failure, other arguments)
        and every other method go through :func:`contactlab.solve`."""
        if self._direct is not None and len(kwargs) - ("warm_start" in kwargs) == len(self.sim.solver_options):
            ws = kwargs.get("warm_start")
            if self.lean is not None and self.lean_takes(problem, ws):
                # the checks of DantzigWork.direct made once (options) or here (types): one compiled call
                sol = self._lean_solve(problem.M, problem.q, _EMPTY if ws is None else ws, *self.lean)
            else:
                sol = self._direct_call(problem, ws, self._direct)
            if sol is not None:
                return sol
        return self._solve(problem, self.sim.method, **kwargs)

    def warm_start(self, built, contacts):
        """The full-size warm start: stored values on the rows of the stored contacts found again
        (matched by shape pair and nearest point, kernels/reuse.py ``warm_values``), zero elsewhere;
        None when nothing is stored or found again."""
        self._pending_rows = 0
        self.last_warm = None
        if self.stored is None or contacts.count == 0:
            return None
        cs, vals = self.stored
        z = np.empty(problem_of(built).n)
        if not KR.warm_values(cs.shape_a, cs.shape_b, cs.point, vals, contacts.shape_a, contacts.shape_b,
                              contacts.point, 2.0 * self.sim.model.settings.margin + 1e-3,
                              contact_rows(built, contacts.count), z):
            return None
        self._pending_rows = int(np.count_nonzero(z))
        self.last_warm = z if self._pending_rows else None
        return self.last_warm

    def after_step(self, contacts, built) -> float:
        """GETMOTIONLESSBODIES after the step's integration; on a change, solve the new motionless
        set's sub-problem and store it. Returns the seconds spent solving (LCP time)."""
        sim, log = self.sim, self.log
        mask = motionless_bodies(sim.model, sim.data, contacts, self.radius, self.tol_v)
        self.last_sub = None
        log.motionless.append(int(mask.sum()))
        log.warm_rows.append(self._pending_rows)
        if self.prev is not None and np.array_equal(mask, self.prev):
            log.changed.append(False), log.sub_time.append(0.0), log.sub_pivots.append(0), log.sub_majors.append(0)
            return 0.0
        self.prev = mask
        log.sets.append((sim.data.steps, [sim.model.names[i] for i in np.flatnonzero(mask)]))
        fixed = sim.model.kind == KIND_FIXED
        inside = mask | fixed
        sel = np.flatnonzero(inside[contacts.body_a] & inside[contacts.body_b]) if contacts.count else np.zeros(0, int)
        t = 0.0
        self.stored = None
        piv = maj = 0
        if sel.size:
            rows = contact_rows(built, contacts.count)[sel]
            sub = self.last_sub = principal_subproblem(problem_of(built), rows.ravel())
            t0 = time.perf_counter()
            sol = self.solve(sub, dict(sim.solver_options))
            t = time.perf_counter() - t0
            piv, maj = int(sol.pivots), int(sol.iterations)
            if certified(sol):
                from ..collision import ContactSet
                cs = ContactSet(*(getattr(contacts, f)[sel] for f in
                                  ("body_a", "body_b", "shape_a", "shape_b", "point", "normal", "phi", "mu",
                                   "t1", "t2")))
                self.stored = (cs, np.asarray(sol.z).reshape(sel.size, rows.shape[1]))
        log.changed.append(True), log.sub_time.append(t), log.sub_pivots.append(piv), log.sub_majors.append(maj)
        return t


def warm_start_methods() -> list[str]:
    """The registered methods that take a warm start on an LCP or BoxedLCP (what motionless reuse
    can drive)."""
    from ..problems import LCP, BoxedLCP
    from ..solvers import available_solvers
    return [n for n, s in available_solvers().items()
            if s.warm_start and any(issubclass(t, (LCP, BoxedLCP)) for t in s.problems)]


def make_reuse(mode, sim):
    """None, or the reuse state for ``mode`` (``"motionless"``). With a method that takes no warm
    start (lemke, ppm, ...) the reuse only adds the sub-solves' time: a RuntimeWarning says so
    (``contactlab simulate --reuse`` refuses it or picks dantzig)."""
    if mode in (None, "", "none"):
        return None
    if mode not in MODES:
        raise ModelError(f"unknown reuse {mode!r}; use one of: none, {', '.join(MODES)}")
    from ..solvers import available_solvers
    spec = available_solvers().get(sim.method)
    if spec is None or not spec.warm_start:
        import warnings
        warnings.warn(f"reuse={mode!r} with method {sim.method!r}, which takes no warm start: the motionless set's "
                      f"sub-LCPs are solved but cannot speed up the steps; use one of {warm_start_methods()} "
                      "(dantzig for a frictionless model, as loomis-balkcom)", RuntimeWarning, stacklevel=3)
    return MotionlessReuse(sim)

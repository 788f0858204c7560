"""The box-gripper of drumwright Sec. VII-A (Fig. 1, Table I).

Two gripper boxes (``gripper_left``, ``gripper_right``) on prismatic joints along x are pushed
together by their actuators (velocity motors that cannot reach their closing speed, so they push
with ``push`` newtons) and hold ``count`` equal boxes (``box0``..) between them by friction only,
under gravity, with no ground. All boxes are cubes of side ``size``.

Two contact generators:
* the simulator's own (coal contact patches: 4 points per face pair), used by
  ``contactlab simulate box-gripper``;
* :class:`GridContacts`, the paper's set-up: ``per_pair`` points (default 12, a 4 x 3 grid over
  the shared face, corners included) per touching pair, so two held boxes give 36 contacts, 216
  Stewart-Trinkle variables with a 4-sided pyramid (6 per contact) and 36 no-slip variables.
  (RPIsim produced its 12 by tripling the 4 corner contacts with three normals each, paper
  footnote 3; the grid keeps one well-defined normal per point.)

:func:`run_box_gripper` steps either through :class:`contactlab.sim.Simulator` and reports
the paper's quantities: LCP variables per step, time per step, total time, and whether the held
boxes are still held (vertical drift below 1 mm).
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from ..blas import blas_threads
from ..errors import ModelError, SimulationError
from ..mechanics.scene import Body, Joint, Motor, Scene, Settings, Shape

HELD_DRIFT = 1e-3   # m: a held box is lost once it has moved vertically more than this


def build(count: int = 2, size: float = 0.1, mass: float = 1.0, gripper_mass: float = 1.0, push: float = 50.0,
          closing_speed: float = 0.1, mu: float = 100.0, dt: float = 0.01, friction_directions: int = 4,
          height: float = 1.0) -> Scene:
    """Gripper boxes at x = -+(count + 1) size / 2, held boxes between them, all touching (phi = 0)."""
    count = int(count)
    if count < 1:
        raise ModelError(f"count (held boxes) must be >= 1, got {count}")
    for name, val in (("size", size), ("mass", mass), ("gripper_mass", gripper_mass), ("push", push),
                      ("closing_speed", closing_speed)):
        if not val > 0:
            raise ModelError(f"{name} must be > 0, got {val}")
    cube = Shape("box", size=(size, size, size))
    xs = (np.arange(count + 2) - (count + 1) / 2.0) * size
    bodies = [Body("gripper_left", mass=gripper_mass, position=(xs[0], 0.0, height), shapes=[cube])]
    bodies += [Body(f"box{i}", mass=mass, position=(xs[i + 1], 0.0, height), shapes=[cube]) for i in range(count)]
    bodies += [Body("gripper_right", mass=gripper_mass, position=(xs[-1], 0.0, height), shapes=[cube])]
    joints = [Joint("slide_left", "prismatic", "world", "gripper_left", anchor=(xs[0], 0.0, height), axis=(1, 0, 0),
                    motor=Motor(target_velocity=closing_speed, max_force=push)),
              Joint("slide_right", "prismatic", "world", "gripper_right", anchor=(xs[-1], 0.0, height),
                    axis=(1, 0, 0), motor=Motor(target_velocity=-closing_speed, max_force=push))]
    return Scene(name="box-gripper", bodies=bodies, joints=joints, mu=mu,
                 settings=Settings(dt=dt, friction_directions=friction_directions))


class GridContacts:
    """Contacts between consecutive boxes along x: ``grid`` = (ny, nz) points over the face of the
    right body that faces the left one (in its own frame), normal = the left body's +x face normal,
    phi = the point's distance from that face. Replaces ``Simulator.world``: ``detect(data, margin)``
    is its own, every other attribute (e.g. ``body_radius``) is the wrapped collision world's."""

    def __init__(self, model, order: list[str], size: float, grid: tuple[int, int] = (4, 3), margin: float = 0.01,
                 world=None):
        from ..mechanics.rotation import tangent_basis
        self._world = world
        self.model = model
        self.idx = [model.index(n) for n in order]
        self.shape_of = {b: k for k, (b, _) in enumerate(model.shapes)}
        self.size = float(size)
        self.margin = float(margin)
        ys = np.linspace(-size / 2, size / 2, grid[0])
        zs = np.linspace(-size / 2, size / 2, grid[1])
        Y, Zg = np.meshgrid(ys, zs, indexing="ij")
        self.local = np.column_stack([np.full(Y.size, -size / 2), Y.ravel(), Zg.ravel()])
        self._tangent_basis = tangent_basis
        self.mu = float(model.mu_default)

    def __getattr__(self, name):
        world = self.__dict__.get("_world")
        if world is None:
            raise AttributeError(name)
        return getattr(world, name)

    def detect(self, data, margin: float | None = None, reach=None, sweep=None):
        """The fixed grid of each touching face pair; ``reach``/``sweep`` (the simulator's growth of
        the margin for fast bodies) are accepted for the interface and not needed here."""
        from ..collision.contacts import ContactSet
        from ..mechanics.rotation import quat_to_matrix
        margin = self.margin if margin is None else float(margin)
        R = quat_to_matrix(data.quaternion)
        out = {k: [] for k in ("a", "b", "p", "n", "phi")}
        for a, b in zip(self.idx[:-1], self.idx[1:]):
            n = R[a][:, 0]
            Pb = data.position[b] + self.local @ R[b].T
            phi = (Pb - data.position[a]) @ n - self.size / 2
            keep = phi < margin
            for P, ph in zip(Pb[keep], phi[keep]):
                out["a"].append(a); out["b"].append(b)
                out["p"].append(P - 0.5 * ph * n); out["n"].append(n); out["phi"].append(ph)
        k = len(out["phi"])
        if k == 0:
            return ContactSet.empty()
        nrm = np.array(out["n"])
        t1, t2 = self._tangent_basis(nrm)
        a = np.array(out["a"], dtype=np.int64)
        b = np.array(out["b"], dtype=np.int64)
        cs = ContactSet(a, b, np.array([self.shape_of[i] for i in a]), np.array([self.shape_of[i] for i in b]),
                        np.array(out["p"]), nrm, np.array(out["phi"]), np.full(k, self.mu), t1, t2)
        cs.normal_guess = np.full(k, np.nan)
        return cs


@dataclass
class GripperRun:
    """One run's figures (the columns of drumwright Table I plus what the issue asks)."""
    model: str
    method: str
    steps: int
    contacts_mean: float
    lcp_variables_mean: float
    time_per_step_s: float
    total_time_s: float
    solve_time_s: float       # the solve; a compiled step's whole call (assembly, method, recovery, integration)
    model_time_s: float       # build + solve + recover (the contact model's share of the step)
    method_time_s: float      # the method alone: solve, plus no-slip's FIND-INDICES and null-space reduction
    drift_m: float            # largest vertical displacement of a held box (up or down)
    held: bool
    solver_failures: int
    drift_after: dict          # step -> largest vertical displacement after that many steps
    statuses: dict             # solver status -> count
    error: str | None = None   # an exception that ended the run early (reported, never hidden)
    steps_done: int = 0        # steps completed (== steps unless an error ended the run)
    first_failure: int | None = None   # first step whose solver status is not SOLVED/TRIVIAL (1-based)
    pivots: int = 0            # the solver's pivots (iterations) over the completed steps
    stage_s: dict | None = None   # seconds per stage over the steps (Simulator.timing: detect, build, solve, ...)
    cpu_time_s: float = float("nan")   # the process's CPU time over the steps (total_time_s is wall time)
    compiled_steps: int = 0    # steps taken by a compiled call (the others: the general stages, sim/stages.py)
    worst_uncertified: float = 0.0   # largest relative residual (solve()'s certificate) of an uncertified step


class _TimedModel:
    """Forwards a contact-model module, adding the wall time of build and recover to ``elapsed`` and
    the time of the no-slip method's own reduction (FIND-INDICES + null-space basis, drumwright Alg. 2
    and eq. 56-57, done in build) to ``reduction``."""

    def __init__(self, module):
        self._m = module
        self.elapsed = 0.0
        self.reduction = 0.0

    def __getattr__(self, name):
        return getattr(self._m, name)

    def build(self, *args, **kwargs):
        t = time.perf_counter()
        try:
            built = self._m.build(*args, **kwargs)
        finally:
            self.elapsed += time.perf_counter() - t
        self.reduction += float(getattr(getattr(built, "state", None), "reduction_s", 0.0))
        return built

    def recover(self, *args, **kwargs):
        t = time.perf_counter()
        try:
            return self._m.recover(*args, **kwargs)
        finally:
            self.elapsed += time.perf_counter() - t


def make_simulator(model: str = "no-slip", method: str | None = None, *, contacts: str = "grid",
                   per_pair_grid: tuple[int, int] = (4, 3), solver_options: dict | None = None,
                   fallback: bool = False, model_options: dict | None = None, **scene_params):
    """A :class:`~contactlab.sim.Simulator` on the box-gripper scene with the paper's contact grid
    (``contacts="grid"``) or the simulator's own collision detection (``contacts="coal"``).
    ``fallback`` is off by default: each method is measured alone, as in the paper. ``model_options``:
    the contact model's options (e.g. ``{"cfm": 0.0}`` for Stewart-Trinkle without its default CFM)."""
    from ..sim.simulator import Simulator
    scene = build(**scene_params)
    sim = Simulator(scene, model=model, method=method, solver_options=solver_options, fallback=fallback,
                    model_options=model_options)
    if contacts == "grid":
        order = [b.name for b in scene.bodies]
        size = float(scene.bodies[0].shapes[0].size[0])
        sim.world = GridContacts(sim.model, order, size, per_pair_grid, scene.settings.margin, world=sim.world)
    elif contacts != "coal":
        raise ModelError(f"contacts must be 'grid' or 'coal', got {contacts!r}")
    return sim


def run_box_gripper(model: str = "no-slip", method: str | None = None, steps: int = 10, *,
                    contacts: str = "grid", checkpoints=(10, 100), solver_options: dict | None = None,
                    model_options: dict | None = None, **scene_params) -> GripperRun:
    """Step the gripper ``steps`` times; time every step (detection, build, solve, recover, integrate)."""
    sim = make_simulator(model, method, contacts=contacts, solver_options=solver_options,
                         model_options=model_options, **scene_params)
    sim.contact_model = timed = _TimedModel(sim.contact_model)
    held = [i for i, n in enumerate(sim.model.names) if n.startswith("box")]
    z0 = sim.data.position[held, 2].copy()
    records, drift_after, error = [], {}, None
    stage_s: dict = {}
    compiled, worst, solve_s = 0, 0.0, 0.0
    t0, c0 = time.perf_counter(), time.process_time()
    for k in range(1, int(steps) + 1):
        try:
            records.append(sim.step())
            for name, sec in sim.timing.items():
                stage_s[name] = stage_s.get(name, 0.0) + sec
            sol = sim.last_solution
            took = bool(sol.info.get("compiled_step"))
            compiled += took
            # a compiled step's whole call is its "solve" stage (Stewart-Trinkle's solve_time is that call;
            # no-slip's is ppm's part of it): the call for both, so their rows compare like for like
            solve_s += sim.timing["solve"] if took else records[-1].solve_time
            if not records[-1].success:
                worst = max(worst, float(sol.relative_residual))
        except (ArithmeticError, ValueError, SimulationError, np.linalg.LinAlgError) as exc:   # a result too
            error = f"step {k}: {type(exc).__name__}: {exc}"
            break
        if k in checkpoints:
            drift_after[k] = float(np.max(np.abs(z0 - sim.data.position[held, 2])))
    total, cpu = time.perf_counter() - t0, time.process_time() - c0
    drift = float(np.max(np.abs(z0 - sim.data.position[held, 2])))
    if not np.isfinite(drift):
        drift = float("inf")
    mean = lambda xs: float(np.mean(xs)) if xs else float("nan")
    return GripperRun(model=model, method=sim.method, steps=int(steps),
                      contacts_mean=mean([r.contacts for r in records]),
                      lcp_variables_mean=mean([r.lcp_size for r in records]),
                      time_per_step_s=total / max(1, len(records)), total_time_s=total,
                      solve_time_s=solve_s, model_time_s=timed.elapsed + solve_s,
                      method_time_s=timed.reduction + solve_s, drift_m=drift,
                      held=bool(error is None and drift < HELD_DRIFT and np.all(np.isfinite(sim.data.position))),
                      solver_failures=int(sum(not r.success for r in records)), drift_after=drift_after,
                      statuses={st.upper(): sum(str(r.status).upper() == st.upper() for r in records)
                                for st in {str(r.status) for r in records}},
                      error=error, steps_done=len(records),
                      first_failure=next((k + 1 for k, r in enumerate(records)
                                          if str(r.status).lower() not in ("solved", "trivial")), None),
                      pivots=int(sum(r.pivots for r in records)), stage_s=stage_s, cpu_time_s=cpu,
                      compiled_steps=compiled, worst_uncertified=worst)


# drumwright Table I (MATLAB, RPIsim, 10 steps, 10 trials; mean +- sigma of the whole simulation)
PAPER_TABLE_I = {("stewart-trinkle", "lemke"): (10.9681, 2.1812),
                 ("no-slip", "qp"): (1.9892, 0.2640),
                 ("no-slip", "ppm"): (1.6680, 0.3669)}
PAPER_LCP_VARIABLES = {"stewart-trinkle": 216, "no-slip": 36}
#: the paper's Stewart-Trinkle run: Lemke from its artificial basis each step (drumwright used
#: LEMKE [9] on each step's LCP alone); contactlab's default starts each step from the previous
#: step's complementary basis (solvers/lemke.py ``LemkeOptions.warm_basis``), which the paper did not
PAPER_ST = "lemke(warm_basis=False)"
#: the rows that are the paper's experiments (model, method label) -> PAPER_TABLE_I's key
PAPER_RUNS = {("stewart-trinkle", PAPER_ST): ("stewart-trinkle", "lemke"), ("no-slip", "qp"): ("no-slip", "qp"),
              ("no-slip", "ppm"): ("no-slip", "ppm")}
#: what a row is, beside its label (the table's method column)
NOTES = {("stewart-trinkle", PAPER_ST): "cold: Lemke from scratch each step, the paper's experiment",
         ("stewart-trinkle", "lemke"): "warm basis (loomis-balkcom reuse): ours, not the paper's experiment"}


def paper_row(r):
    """The paper's Table I entry for a row, only for the paper's configurations at 10 steps
    (:data:`PAPER_RUNS`: Stewart-Trinkle with a cold Lemke each step; its warm-basis, CFM and
    solver-option variants are not the paper's)."""
    key = PAPER_RUNS.get((r["model"], r["method"]))
    return PAPER_TABLE_I.get(key) if r["steps"] == 10 and key else None


def method_note(r) -> str:
    """The row's method label with what it is (:data:`NOTES`) where that needs saying."""
    note = NOTES.get((r["model"], r["method"]))
    return f"{r['method']} ({note})" if note else r["method"]


def ratios(rows) -> str:
    """Ratios at 10 steps, the paper's run length (Table I: ST/PPM 6.58, ST/quadprog 5.51,
    quadprog/PPM 1.19), on whole steps' CPU time (the process's: other sessions on a shared machine
    stretch wall times unevenly; one BLAS thread, so CPU time is the wall time of a quiet machine) and on the method alone (no-slip: solve + FIND-INDICES +
    null-space reduction; Stewart-Trinkle: solve), Stewart-Trinkle's Lemke cold each step as the
    paper ran it (:data:`PAPER_ST`); with the warm basis (ours) beside it where it was run."""
    by = {(r["model"], r["method"], r["steps"]): r for r in rows}
    st, ppm = by.get(("stewart-trinkle", PAPER_ST, 10)), by.get(("no-slip", "ppm", 10))
    warm, qp = by.get(("stewart-trinkle", "lemke", 10)), by.get(("no-slip", "qp", 10))
    if not (st and ppm):
        return ""
    out = [f"10 steps, total CPU time: Stewart-Trinkle+Lemke (cold each step, the paper's) / no-slip+PPM = "
           f"{st['cpu_s_mean'] / ppm['cpu_s_mean']:.2f} (paper 6.58; wall time {st['total_s_mean'] / ppm['total_s_mean']:.2f})"]
    if warm:
        out.append(f"with Lemke's warm basis (ours, not the paper's experiment): "
                   f"{warm['cpu_s_mean'] / ppm['cpu_s_mean']:.2f} (wall {warm['total_s_mean'] / ppm['total_s_mean']:.2f})")
    if qp:
        out.append(f"Stewart-Trinkle / no-slip+qp = {st['cpu_s_mean'] / qp['cpu_s_mean']:.2f} (paper, vs quadprog, 5.51); "
                   f"qp / PPM = {qp['cpu_s_mean'] / ppm['cpu_s_mean']:.2f} (paper, quadprog / PPM, 1.19)")
    out.append(f"method alone (no-slip: solve + FIND-INDICES + null-space reduction; a compiled step: its whole "
               f"call, assembly and integration included): Stewart-Trinkle+Lemke / "
               f"no-slip+PPM = {st['method_per_step_s'] / max(ppm['method_per_step_s'], 1e-12):.1f} "
               f"(solve calls only: {st['solve_per_step_s'] / max(ppm['solve_per_step_s'], 1e-12):.1f})")
    return "; ".join(out) + "."


# (model, method[, solver options[, model options]]); Stewart-Trinkle with Lemke cold each step (the
# paper's run) beside the default warm basis (ours); with cfm = 0: the paper's LCP without the
# default CFM 1e-6 (Lemke ends on a ray there, see docs/box-gripper.md)
DEFAULT_CONFIGS = (("stewart-trinkle", "lemke", {"warm_basis": False}), ("stewart-trinkle", "lemke"),
                   ("stewart-trinkle", "lemke", None, {"cfm": 0.0}),
                   ("stewart-trinkle", "lemke", {"basis": "reduced"}),
                   ("no-slip", "ppm"), ("no-slip", "dantzig"), ("trinkle-pang", "lemke"), ("viscous", "ppm"))


def method_label(method: str, options: dict | None, model_options: dict | None = None) -> str:
    """e.g. ``lemke``, ``lemke(basis=reduced)``, ``lemke [cfm=0.0]`` (model options in brackets)."""
    out = method
    if options:
        out += f"({', '.join(f'{k}={v}' for k, v in sorted(options.items()))})"
    if model_options:
        out += f" [{', '.join(f'{k}={v}' for k, v in sorted(model_options.items()))}]"
    return out


def table_one(configs=DEFAULT_CONFIGS, steps=(10, 100), trials: int = 3, warmup: int | None = None,
              progress=lambda label: None, warm_up=None, **scene_params) -> list[dict]:
    """Run every (model, method[, solver options]) ``trials`` times for each step count; mean and
    sample std of the total time. An untimed warm-up run of each configuration first compiles (or
    loads from numba's cache) every kernel its timed runs call: ``warmup`` steps, by default the
    shortest timed run's (later steps take code paths the first ones do not: more contacts, a
    retry). ``warm_up(fn, *args, **kwargs)`` runs it (reproduce's ``ReportContext.warm_up``, which
    keeps its compilation out of the report's timing check); ``progress(label)`` after each run."""
    if warmup is None:
        warmup = min(steps)
    if warm_up is None:
        def warm_up(fn, *args, **kwargs):
            return fn(*args, **kwargs)
    rows = []
    with blas_threads(1):
        for cfg in configs:
            model, method = cfg[0], cfg[1]
            sopts = dict(cfg[2]) if len(cfg) > 2 and cfg[2] else None
            mopts = dict(cfg[3]) if len(cfg) > 3 and cfg[3] else None
            label = method_label(method, sopts, mopts)
            warm_up(run_box_gripper, model, method, steps=warmup, solver_options=sopts, model_options=mopts,
                    **scene_params)
            for n in steps:
                runs = []
                for t in range(trials):
                    runs.append(run_box_gripper(model, method, steps=n, checkpoints=(10, 100),
                                                solver_options=sopts, model_options=mopts, **scene_params))
                    if runs[-1].error:
                        runs[-1].statuses["crashed"] = 1
                    progress(f"{model}/{label} {n} steps, trial {t + 1}")
                tot = np.array([r.total_time_s for r in runs])
                cpu = np.array([r.cpu_time_s for r in runs])
                r0 = runs[0]
                rows.append({"model": model, "method": label, "steps": n, "trials": trials,
                             "contacts": r0.contacts_mean, "lcp_variables": r0.lcp_variables_mean,
                             "total_s_mean": float(tot.mean()), "total_s_std": float(tot.std(ddof=1)) if trials > 1 else 0.0,
                             "per_step_s": float(tot.mean() / n),
                             "cpu_s_mean": float(cpu.mean()), "cpu_s_std": float(cpu.std(ddof=1)) if trials > 1 else 0.0,
                             "solve_per_step_s": float(np.mean([r.solve_time_s for r in runs]) / n),
                             "model_per_step_s": float(np.mean([r.model_time_s for r in runs]) / n),
                             "method_per_step_s": float(np.mean([r.method_time_s for r in runs]) / n),
                             "steps_done": min(r.steps_done for r in runs),
                             "first_failure": min((r.first_failure for r in runs if r.first_failure), default=None),
                             "statuses": {k: max(r.statuses.get(k, 0) for r in runs)
                                          for k in set().union(*(r.statuses for r in runs))},
                             "held": all(r.held for r in runs), "held_trials": sum(r.held for r in runs),
                             "drift_m": max(r.drift_m for r in runs),
                             "errors": [r.error for r in runs if r.error],
                             "solver_failures": max(r.solver_failures for r in runs),
                             "compiled_steps": min(r.compiled_steps for r in runs),
                             "worst_uncertified": max(r.worst_uncertified for r in runs),
                             "pivots_per_step": float(np.mean([r.pivots / max(1, r.steps_done) for r in runs])),
                             # seconds per step in each stage (Simulator.timing; a compiled step's call is
                             # its "solve": assembly, solve, recovery, integration and projection at once)
                             "stages_per_step_s": {k: float(np.mean([(r.stage_s or {}).get(k, 0.0) / max(1, r.steps_done)
                                                                     for r in runs]))
                                                   for k in set().union(*((r.stage_s or {}) for r in runs))}})
    return rows

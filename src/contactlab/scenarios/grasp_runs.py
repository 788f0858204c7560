"""Grasp runs and arechavaleta Table I from them (§V-B).

:func:`run_grasp` simulates a grasp scene (``barrett-grasp``, ...) through its script and records
per step the object and palm heights, the contact count and, optionally, every step's constraint
system. :func:`step_problems` turns one step's system into the two problems of the paper:

* the pyramid LCP of Stewart-Trinkle / Anitescu-Potra (eq. 7-15, joints eliminated by the Schur
  complement of eq. 15 outside the timed call) for ``lemke``, as GraspIt! solves it;
* the friction-box LCP of eq. 16-17 (box-friction with ``joints="schur"``, eq. 15, and bounds
  mu c~_n from the previous step's normal impulses, "the last LCP solution") for ``pgs`` and
  ``pgs-sm``.

:func:`time_step_problem` times the solver call only (``SolverSpec.func`` on the problem it
solves, after a warm-up call; median of ``repeats``), then certifies with :func:`contactlab.solve`.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from ..errors import SimulationError

PAPER_MODEL = "box-friction"
PAPER_MODEL_OPTIONS = {"joints": "schur", "coupling": "previous"}
TABLE_METHODS = ("lemke", "pgs", "pgs-paper", "pgs-sm")
#: Table I's PGS as the paper ran it (arechavaleta §III-B, §V-B): it stops when ||u^{k+1} - u^k||_inf <= 1e-8
#: ("the stopping tolerance 1.0e-8", the exit test PGS-SM's PGS stage uses) with CFM = diag[1e-11]; no
#: residual is certified, so its answers are approximate. "pgs" is ours: it runs until the scale-free
#: residual certifies (1e-10) or 10,000 sweeps. {table method: (solver method, its options)}
TABLE_VARIANTS = {"pgs-paper": ("pgs", {"step_tol": 1e-8, "cfm": 1e-11})}
# arechavaleta Table I (microseconds): min, max, mean
PAPER_TABLE_I = {"3-fingered": {"lemke": (146, 7050, 672), "pgs": (97, 1332, 207), "pgs-sm": (84, 355, 145)},
                 "5-fingered": {"lemke": (220, 11820, 1885), "pgs": (95, 3348, 238), "pgs-sm": (79, 452, 155)}}
CONTACT_GROUPS = ((1, 3), (4, 12), (13, 10 ** 6))
# the hands of Table I and our scenes for them; the paper's rows are its "4 to 12 contacts" steps
TABLE_I_HANDS = {"3-fingered": "barrett-grasp", "5-fingered": "hand5-grasp"}
PAPER_CONTACTS = "4-12"


@dataclass
class GraspRun:
    scene: str
    model: str
    method: str
    material: str
    time: np.ndarray
    object_z: np.ndarray
    palm_z: np.ndarray
    contacts: np.ndarray
    success: np.ndarray
    penetration: np.ndarray
    joint_error: np.ndarray
    summary: dict
    wall_s: float
    error: str | None = None
    poses: list = field(default_factory=list)       # (time, positions, quaternions) snapshots
    systems: list = field(default_factory=list)     # (step, ConstraintSystem) when recorded


def run_grasp(scene: str = "barrett-grasp", model: str = PAPER_MODEL, method: str | None = "pgs-sm", *,
              model_options: dict | None = None, record_systems: bool = False, record_every: int = 1,
              snapshot_times=(), **params) -> GraspRun:
    """Simulate ``scene`` (a grasp scene with its script) for the script's duration."""
    from . import make_scene
    from ..sim import Simulator
    if model_options is None and model == PAPER_MODEL:
        model_options = dict(PAPER_MODEL_OPTIONS)
    sc = make_scene(scene, **params)
    sim = Simulator(sc, model, method, model_options=model_options, controllers=sc.controllers)
    script = getattr(sc, "script", None)
    io = sim.model.index(script.obj if script is not None else "object")
    iw = sim.model.index(script.wrist if script is not None else "palm")     # allegro's wrist is its palm_link
    steps = int(round(sc.duration / sim.h))
    cols = {k: [] for k in ("time", "object_z", "palm_z", "contacts", "success", "penetration", "joint_error")}
    poses, systems, error = [], [], None
    snaps = sorted(snapshot_times)
    records = []
    t0 = time.perf_counter()
    try:
        if snaps and snaps[0] <= 0:
            poses.append((0.0, sim.data.position.copy(), sim.data.quaternion.copy()))
            snaps.pop(0)
        for k in range(steps):
            r = sim.step()
            records.append(r)
            for key, val in (("time", r.time), ("object_z", sim.data.position[io, 2]), ("palm_z", sim.data.position[iw, 2]),
                             ("contacts", r.contacts), ("success", r.success), ("penetration", r.max_penetration),
                             ("joint_error", r.joint_error)):
                cols[key].append(val)
            if record_systems and k % record_every == 0:
                systems.append((k, sim.last_system))
            if snaps and r.time >= snaps[0] - 1e-9:
                poses.append((r.time, sim.data.position.copy(), sim.data.quaternion.copy()))
                snaps.pop(0)
    except SimulationError as exc:
        error = str(exc)
    wall = time.perf_counter() - t0

    class _T:
        pass
    tr = _T()
    tr.records = records
    arr = {k: np.asarray(v) for k, v in cols.items()}
    return GraspRun(scene=scene, model=model, method=sim.method, material=str(params.get("material", "plastic")),
                    summary=sc.summary(sim, tr)["grasp"], wall_s=wall, error=error, poses=poses, systems=systems,
                    **arr)


def step_problems(system, d: int | None = None):
    """(pyramid LCP for lemke, friction-box LCP for pgs / pgs-sm) of one step's constraint system."""
    from ..models import get_model, make_options
    from ..models.built import problem_of
    st = get_model("stewart-trinkle")
    bf = get_model(PAPER_MODEL)
    return (problem_of(st.build(system, make_options(st, None))),
            problem_of(bf.build(system, make_options(bf, PAPER_MODEL_OPTIONS))))


def _target(problem, method):
    from ..solvers import available_solvers
    spec = available_solvers()[method]
    if isinstance(problem, spec.problems):
        return spec, problem
    target, _ = problem.lcp_reduction()
    return spec, target


def time_step_problem(problem, method: str, repeats: int = 5) -> dict:
    """Median wall time (s) of the solver call alone over ``repeats`` (after one warm-up call, the
    certifying :func:`contactlab.solve`; an uncertified run is timed once), the
    iterations and pivots, and whether :func:`contactlab.solve` certifies the answer of the problem
    the method solves (lemke as the paper ran it: without contactlab's restarts from a stalled basis) (for lemke on the pyramid model: the joint-free LCP of eq. 15, formed by the
    Schur complement outside the timing, as GraspIt! forms it before calling Lemke)."""
    from ..solvers import solve
    method, plain = TABLE_VARIANTS.get(method, (method, {}))
    spec, target = _target(problem, method)
    if method == "lemke":
        plain = {"restarts": 0}         # the paper's Lemke: no restart from a stalled basis
    opts = spec.make_options(plain)
    sol = solve(target, method, **plain)     # certify the problem the method solved (eq. 15's LCP for lemke); the warm-up
    if problem.is_trivial():
        times = [0.0]
    else:
        times = []
        # an uncertified run (a pivot or iteration cap reached) is timed once: repeating it costs its
        # cap again for the same figure
        for _ in range(max(1, int(repeats)) if sol.success else 1):
            t = time.perf_counter()
            spec.func(target, opts, None)
            times.append(time.perf_counter() - t)
    return {"time_s": float(np.median(times)), "iterations": int(sol.iterations), "pivots": int(sol.pivots),
            "certified": bool(sol.success), "status": sol.status.name, "n": int(target.n)}


def step_table(run: GraspRun, repeats: int = 5, methods=TABLE_METHODS, contacts: tuple | None = None) -> list[dict]:
    """One row per recorded step: contacts, LCP sizes, condition numbers and each method's figures
    (``contacts`` (lo, hi): only the steps with lo-hi contacts, e.g. Table I's 4-12)."""
    rows = []
    for k, system in run.systems:
        if system.nc == 0 or (contacts is not None and not contacts[0] <= system.nc <= contacts[1]):
            continue
        p_st, p_box = step_problems(system)
        row = {"step": k, "contacts": int(system.nc), "limits": int(system.nl),
               "n_lemke": int(p_st.lcp_reduction()[0].n if hasattr(p_st, "lcp_reduction") else p_st.n),
               "n_box": int(p_box.n)}
        Mb = np.asarray(p_box.M.toarray() if hasattr(p_box.M, "toarray") else p_box.M)
        row["cond_box"] = float(np.linalg.cond(Mb))
        for m in methods:
            prob = p_st if m == "lemke" else p_box
            row[m] = time_step_problem(prob, m, repeats)
        rows.append(row)
    return rows


def summarize(rows: list[dict], methods=TABLE_METHODS) -> list[dict]:
    """min / max / mean time (us) per method and contact group, with the certified share."""
    out = []
    for lo, hi in CONTACT_GROUPS:
        grp = [r for r in rows if lo <= r["contacts"] <= hi]
        if not grp:
            continue
        entry = {"contacts": f"{lo}-{hi}" if hi < 10 ** 6 else f">= {lo}", "steps": len(grp),
                 "n_box": (min(r["n_box"] for r in grp), max(r["n_box"] for r in grp)),
                 "n_lemke": (min(r["n_lemke"] for r in grp), max(r["n_lemke"] for r in grp)),
                 "cond_box_median": float(np.median([r["cond_box"] for r in grp]))}
        for m in methods:
            t = np.array([r[m]["time_s"] for r in grp]) * 1e6
            entry[m] = {"min": float(t.min()), "max": float(t.max()), "mean": float(t.mean()),
                        "certified": sum(r[m]["certified"] for r in grp),
                        "iterations_mean": float(np.mean([r[m]["iterations"] for r in grp])),
                        "pivots_mean": float(np.mean([r[m]["pivots"] for r in grp]))}
        if "lemke" in methods and "pgs-sm" in methods:
            entry["ratio_lemke_pgs_sm"] = entry["lemke"]["mean"] / max(entry["pgs-sm"]["mean"], 1e-12)
            faster = sum(r["pgs-sm"]["time_s"] < r["lemke"]["time_s"] for r in grp)
            entry["pgs_sm_faster_steps"] = int(faster)
            entry["pgs_sm_faster_every_step"] = faster == len(grp)
        out.append(entry)
    return out


def table_i(summaries: dict, methods=TABLE_METHODS) -> list[dict]:
    """arechavaleta Table I, both halves: for each hand of ``summaries`` ({"3-fingered" |
    "5-fingered": :func:`summarize`'s entries of that hand's runs}) and each method, our min / max /
    mean solve time (us) over the steps with the paper's 4-12 contacts beside the paper's figures,
    with the mean iterations and pivots, the certified count and the lemke / pgs-sm mean ratio
    (ours and the paper's). A hand without 4-12-contact steps gives no rows."""
    out = []
    for hand, entries in summaries.items():
        e = next((x for x in entries if x["contacts"] == PAPER_CONTACTS), None)
        if e is None:
            continue
        paper = PAPER_TABLE_I[hand]
        for m in methods:
            x = e[m]
            out.append({"hand": hand, "method": m, "steps": e["steps"], "min": x["min"], "max": x["max"],
                        "mean": x["mean"], "paper": paper.get(TABLE_VARIANTS.get(m, (m,))[0]),
                        "iterations_mean": x["iterations_mean"],
                        "pivots_mean": x["pivots_mean"], "certified": x["certified"],
                        "ratio_lemke_pgs_sm": e.get("ratio_lemke_pgs_sm"),
                        "paper_ratio_lemke_pgs_sm": paper["lemke"][2] / paper["pgs-sm"][2],
                        "n_box": e["n_box"], "n_lemke": e["n_lemke"], "cond_box_median": e["cond_box_median"]})
    return out

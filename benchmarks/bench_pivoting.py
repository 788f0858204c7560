"""Pivoting solvers side by side with their peers, in one run, on the same problems.

    .venv/bin/python benchmarks/bench_pivoting.py --update-docs   # full run, writes docs/benchmarks-pivoting.md
    .venv/bin/python benchmarks/bench_pivoting.py --quick    # small sizes, a minute or so

Peers (installed by benchmarks/setup_peers.sh; each is skipped with a note when missing):
Siconos numerics (Lemke = lexicographic Lemke, PIVOT, ENUM; timed in its own /usr/bin/python3
process by benchmarks/peers/siconos_runner.py), Drake's MobyLcpSolver (through MathematicalProgram;
only Solve(prog) is timed), QuantEcon's numba lcp_lemke (compiled before timing).
contactlab is timed through the public ``contactlab.solve`` (which includes its own certification).
Every answer, ours and the peers', is scored with contactlab's certified residual: the scale-free
relative natural residual of problems/residual.py (z in units of ||z||_inf, each w_i in units of
its own terms |q_i| + sum_j |M_ij z_j|); "solved" means <= 1e-6.
"""
from __future__ import annotations

import os
os.environ.setdefault("CONTACTLAB_JIT", "compile")   # time compiled kernels, not interpreted first calls (kernels/_jit.py)

import argparse
import json
import math
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

import contactlab as cl
from contactlab.problems import generators as gen
from contactlab.files import atomic_write

ROOT = Path(__file__).resolve().parents[1]
SYSTEM_PYTHON = "/usr/bin/python3"
SOLVED_TOL = 1e-6


@dataclass
class Case:
    family: str
    size: int                   # the family's size parameter (n, contacts, boxes)
    instance: int
    lcp: cl.LCP
    factored: cl.FactoredLCP | None = None
    itermax: int = 0            # generous pivot limit given to every Lemke (ours and peers')
    name: str = ""

    @property
    def n(self) -> int:
        return self.lcp.n


@dataclass
class Result:
    times: list = field(default_factory=list)
    residual: float = math.inf
    pivots: int | None = None
    status: str = ""
    ray: bool = False


# ------------------------------------------------------------------------------------------------
# problem families
# ------------------------------------------------------------------------------------------------
def build_cases(quick: bool) -> list[Case]:
    cases: list[Case] = []

    def add(family, size, k, lcp, factored=None, itermax=None):
        itermax = itermax or 50 * lcp.n + 1000
        cases.append(Case(family, size, k, lcp, factored, itermax, f"{family}-{size}-{k}"))

    dense_sizes = [10, 30, 100] if quick else [10, 30, 100, 300, 1000]
    for n in dense_sizes:
        reps = 3 if n <= 300 else 2
        for k in range(reps):
            add("spd", n, k, gen.random_spd(n, np.random.default_rng([1, n, k]), cond=1e3))
            add("p-matrix", n, k, gen.random_p_matrix(n, np.random.default_rng([2, n, k])))
    for c in ([5, 10, 20] if quick else [5, 10, 20, 40, 80]):
        for k in range(3):
            add("friction", c, k, gen.friction_pyramid_lcp(c, np.random.default_rng([3, c, k]), bodies=4))
    for b in ([4, 8] if quick else [5, 10, 20, 40]):
        for k in range(3):
            F = gen.box_stack_factored(b, np.random.default_rng([4, b, k]))
            add("box-stack", b, k, F.to_lcp(), F)
    for b in ([4, 8] if quick else [4, 8, 16, 32]):
        for k in range(2):
            F = gen.box_stack_factored(b, np.random.default_rng([5, b, k]), contacts_per_face=25)
            add("box-stack-25", b, k, F.to_lcp(), F)
    for n in ([6, 8, 10] if quick else [8, 10, 12, 14, 16]):
        add("murty", n, 0, gen.murty(n), itermax=2 ** (n + 1) + 100)
    return cases


# which methods run on which family (and up to which n)
OURS = {
    "lemke": lambda fam: True,
    "dantzig": lambda fam: fam in ("spd", "p-matrix", "box-stack", "box-stack-25"),
    "ppm": lambda fam: fam in ("box-stack", "box-stack-25"),
}
SICONOS = {"LEMKE": 10 ** 9, "PIVOT": 300, "ENUM": 12}       # solver: largest n it is given


# ------------------------------------------------------------------------------------------------
# timing helpers
# ------------------------------------------------------------------------------------------------
def timed_reps(fn, max_reps: int, budget: float):
    """Run ``fn`` at least once, then again while under ``max_reps`` and ``budget`` seconds in all."""
    times, out = [], None
    while True:
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
        if len(times) >= max_reps or sum(times) >= budget:
            return times, out


def rel_residual(case: Case, z) -> float:
    z = np.asarray(z, dtype=float).ravel()
    if z.shape != (case.n,) or not np.all(np.isfinite(z)):
        return math.inf
    # the scale-free residual solve() certifies (problems/residual.py lcp_relative)
    r = case.lcp.relative_residuals(z)
    return max(r.natural, r.infeasibility)


# ------------------------------------------------------------------------------------------------
# runners
# ------------------------------------------------------------------------------------------------
def run_ours(case: Case, method: str, reps: int, budget: float) -> Result:
    problem = case.factored if method == "ppm" else case.lcp
    opts = {}
    if method == "lemke":
        opts["max_iterations"] = case.itermax
    times, sol = timed_reps(lambda: cl.solve(problem, method=method, **opts), reps, budget)
    return Result(times, rel_residual(case, sol.z), sol.pivots, sol.status.name,
                  sol.status == cl.Status.RAY_TERMINATION)


def drake_available() -> bool:
    try:
        import pydrake.solvers  # noqa: F401
        return True
    except Exception:
        return False


def run_moby(case: Case, reps: int, budget: float) -> Result:
    from pydrake.solvers import MathematicalProgram, MobyLcpSolver
    prog = MathematicalProgram()
    x = prog.NewContinuousVariables(case.n, "z")
    prog.AddLinearComplementarityConstraint(case.lcp.dense_M(), case.lcp.q, x)
    solver = MobyLcpSolver()
    times, res = timed_reps(lambda: solver.Solve(prog), reps, budget)
    z = res.GetSolution(x)
    return Result(times, rel_residual(case, z), None, "success" if res.is_success() else str(res.get_solution_result()))


def quantecon_available() -> bool:
    try:
        import quantecon.optimize  # noqa: F401
        return True
    except Exception:
        return False


def run_quantecon(case: Case, reps: int, budget: float) -> Result:
    from quantecon.optimize import lcp_lemke
    M = np.ascontiguousarray(case.lcp.dense_M())
    times, res = timed_reps(lambda: lcp_lemke(M, case.lcp.q, max_iter=case.itermax), reps, budget)
    # status: 0 success, 1 iteration limit, 2 secondary ray
    return Result(times, rel_residual(case, res.z), int(res.num_iter), f"status={res.status}", res.status == 2)


def run_lemke_and_quantecon(case: Case, reps: int, budget: float) -> tuple[Result, Result]:
    """contactlab's lemke and QuantEcon's lcp_lemke timed alternately, one call of each per round
    (up to ``reps`` rounds within 2 x ``budget``), so that both see the same machine load: the
    machine is shared, and timed a second apart the two medians of a 10-us solve drift by 10-20 %."""
    from quantecon.optimize import lcp_lemke
    M = np.ascontiguousarray(case.lcp.dense_M())
    ours_t, qe_t, sol, res = [], [], None, None
    while True:
        t0 = time.perf_counter()
        sol = cl.solve(case.lcp, method="lemke", max_iterations=case.itermax)
        ours_t.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        res = lcp_lemke(M, case.lcp.q, max_iter=case.itermax)
        qe_t.append(time.perf_counter() - t0)
        if len(ours_t) >= reps or sum(ours_t) + sum(qe_t) >= 2 * budget:
            break
    ours = Result(ours_t, rel_residual(case, sol.z), sol.pivots, sol.status.name,
                  sol.status == cl.Status.RAY_TERMINATION)
    qe = Result(qe_t, rel_residual(case, res.z), int(res.num_iter), f"status={res.status}", res.status == 2)
    return ours, qe


def siconos_available() -> bool:
    if not Path(SYSTEM_PYTHON).exists():
        return False
    r = subprocess.run([SYSTEM_PYTHON, "-c", "import siconos.numerics"], capture_output=True)
    return r.returncode == 0


def run_siconos(cases: list[Case], reps: int, budget: float, workdir: Path) -> dict:
    """All Siconos runs in one child process; returns {(case.name, solver): Result}."""
    problems, runs = {}, []
    for case in cases:
        path = workdir / f"{case.name}.npz"
        np.savez(path, M=case.lcp.dense_M(), q=case.lcp.q)
        problems[case.name] = str(path)
        for solver, nmax in SICONOS.items():
            if case.n <= nmax and not (solver == "PIVOT" and case.family == "murty" and case.n > 12):
                runs.append({"problem": case.name, "solver": solver, "reps": reps, "budget": budget,
                             "itermax": case.itermax})
    tasks = workdir / "tasks.json"
    tasks.write_text(json.dumps({"problems": problems, "runs": runs}))
    out = workdir / "siconos_results.npz"
    with open(workdir / "siconos.log", "w") as log:     # Siconos' pivoting prints warnings per pivot
        proc = subprocess.run([SYSTEM_PYTHON, str(ROOT / "benchmarks/peers/siconos_runner.py"), str(tasks), str(out)],
                              stdout=log, stderr=subprocess.STDOUT)
    if proc.returncode != 0:
        tail = (workdir / "siconos.log").read_text()[-2000:]
        raise RuntimeError(f"the Siconos runner failed (exit {proc.returncode}):\n{tail}")
    by_name = {c.name: c for c in cases}
    results = {}
    with np.load(out) as d:
        meta = json.loads(str(d["meta"]))
        for k, (run, m) in enumerate(zip(runs, meta)):
            case = by_name[run["problem"]]
            failed = m["info"] != 0
            ray = failed and m["iterations"] < m["itermax"]
            results[(case.name, run["solver"])] = Result(m["times"], rel_residual(case, d[f"z_{k}"]),
                                                         m["iterations"], f"info={m['info']}", ray)
    return results


# ------------------------------------------------------------------------------------------------
# report
# ------------------------------------------------------------------------------------------------
def all_solved(entry) -> bool:
    return entry["solved"] == entry["count"]


def geomean(xs):
    xs = [x for x in xs if x > 0 and math.isfinite(x)]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else math.nan


def fmt_ms(t):
    return "-" if t is None or not math.isfinite(t) else (f"{t * 1e3:.3g}" if t < 10 else f"{t * 1e3:.0f}")


def fmt_res(r):
    return "-" if r is None else ("inf" if not math.isfinite(r) else f"{r:.1e}")


def measure_overhead(n: int = 10, reps: int = 3000) -> str:
    """Per-call overhead of ``contactlab.solve`` on an n-variable SPD LCP: median time of the public
    call minus median time of the registered solver function alone (same options object), for
    lemke, dantzig, pgs and pgs-sm; each median over ``reps`` calls after a warm-up."""
    from contactlab.solvers.registry import get_solver
    P = gen.random_spd(n, np.random.default_rng(0))
    lines = [f"solve() per-call overhead, n = {n} SPD LCP (median of {reps} calls each, us):",
             "| method | cl.solve | solver function alone | overhead |", "|---|---|---|---|"]
    for method in ("lemke", "dantzig", "pgs", "pgs-sm"):
        spec = get_solver(method)
        opts = spec.make_options({})
        cl.solve(P, method=method)
        spec.func(P, opts, None)

        def med(fn):
            ts = []
            for _ in range(reps):
                t0 = time.perf_counter()
                fn()
                ts.append(time.perf_counter() - t0)
            return float(np.median(ts)) * 1e6
        full = med(lambda: cl.solve(P, method=method))
        alone = med(lambda: spec.func(P, opts, None))
        lines.append(f"| {method} | {full:.1f} | {alone:.1f} | {full - alone:.1f} |")
    return "\n".join(lines)


def measure_cfm(reps: int = 5) -> str:
    """ppm with CFM kept inside the kernel (FactoredLCP(..., cfm)) against the former bordering of N
    with sqrt(cfm) I and M with I (an (m + n)^2 Cholesky): same answers, best-of-reps time."""
    import scipy.linalg as sla
    rng = np.random.default_rng(1)
    lines = ["ppm with CFM 1e-3 (best of %d, ms): n contacts, m coordinates" % reps,
             "| n | m | cfm in kernel | bordered [N, sqrt(cfm) I] | max |z difference| |", "|---|---|---|---|---|"]
    for n, m in ((12, 1000), (30, 12), (200, 24)):
        N = rng.standard_normal((n, m))
        A = rng.standard_normal((m, m))
        M = A @ A.T + m * np.eye(m)
        f = rng.standard_normal(m) * 10
        off = np.abs(rng.standard_normal(n))
        cfm = 1e-3
        inside = cl.FactoredLCP(N, M, f, offset=off, cfm=cfm)
        border = cl.FactoredLCP(np.hstack([N, np.sqrt(cfm) * np.eye(n)]), sla.block_diag(M, np.eye(n)),
                                np.concatenate([f, np.zeros(n)]), offset=off)
        res = {}
        for key, prob in (("in", inside), ("b", border)):
            cl.solve(prob, method="ppm")
            best, sol = math.inf, None
            for _ in range(reps):
                t0 = time.perf_counter()
                sol = cl.solve(prob, method="ppm")
                best = min(best, time.perf_counter() - t0)
            assert sol.success, (key, sol)
            res[key] = (best, sol.z)
        lines.append(f"| {n} | {m} | {res['in'][0] * 1e3:.2f} | {res['b'][0] * 1e3:.2f} | "
                     f"{np.abs(res['in'][1] - res['b'][1]).max():.1e} |")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--overhead", action="store_true", help="only measure solve()'s per-call overhead (n = 10)")
    ap.add_argument("--cfm", action="store_true", help="only compare ppm with CFM in the kernel vs bordered")
    ap.add_argument("--quick", action="store_true", help="small sizes only")
    ap.add_argument("--reps", type=int, default=5, help="most repetitions per solve (median taken)")
    ap.add_argument("--budget", type=float, default=1.0, help="seconds of repetitions per solve")
    ap.add_argument("--slow", type=float, default=5.0,
                    help="skip a method on larger sizes of a family once one solve took longer than this (s)")
    ap.add_argument("--out", type=Path, default=ROOT / "out/bench/benchmarks-pivoting.md",
                    help="Markdown output (default out/bench/, untracked)")
    ap.add_argument("--update-docs", action="store_true", help="write the tracked docs/benchmarks-pivoting.md")
    ap.add_argument("--no-peers", action="store_true")
    args = ap.parse_args(argv)
    if args.overhead:
        print(measure_overhead())
        return
    if args.cfm:
        print(measure_cfm())
        return
    if args.update_docs:
        args.out = ROOT / "docs/benchmarks-pivoting.md"

    t_start = time.perf_counter()
    cases = build_cases(args.quick)
    peers = {"siconos": False, "moby": False, "quantecon": False}
    if not args.no_peers:
        peers = {"siconos": siconos_available(), "moby": drake_available(), "quantecon": quantecon_available()}
    print("peers:", peers, flush=True)

    # warm-up: numba compilation of our kernels and QuantEcon's
    warm = gen.random_spd(8, np.random.default_rng(0))
    for m in ("lemke", "dantzig"):
        cl.solve(warm, method=m)
    cl.solve(gen.box_stack_factored(2, np.random.default_rng(0)), method="ppm")
    if peers["quantecon"]:
        from quantecon.optimize import lcp_lemke
        lcp_lemke(warm.M, warm.q)

    results: dict = {}          # (case.name, method label) -> Result
    too_slow: dict = {}         # (family, method label) -> size at which one solve took over --slow s
    errors: list = []

    def attempt(case, label, fn):
        if case.size > too_slow.get((case.family, label), math.inf):
            return
        try:
            r = fn()
        except Exception as exc:      # a crash is recorded as an unsolved answer, not the end of the run
            print(f"  {label} on {case.name} raised {type(exc).__name__}: {exc}", flush=True)
            r = Result([math.nan], math.inf, None, f"raised {type(exc).__name__}")
            errors.append(f"{label} on {case.name} (n={case.n}) raised {type(exc).__name__}: {exc}")
        results[(case.name, label)] = r
        if min(r.times) > args.slow:      # nan compares False
            too_slow[(case.family, label)] = min(case.size, too_slow.get((case.family, label), math.inf))

    if peers["siconos"]:
        t0 = time.perf_counter()
        with tempfile.TemporaryDirectory() as tmp:
            for (name, solver), r in run_siconos(cases, args.reps, args.budget, Path(tmp)).items():
                results[(name, f"siconos-{solver.lower()}")] = r
        print(f"siconos done in {time.perf_counter() - t0:.0f} s", flush=True)
    paired: dict = {}           # case name -> QuantEcon's Result timed alternately with lemke's

    def lemke_paired(case):
        ours, paired[case.name] = run_lemke_and_quantecon(case, args.reps, args.budget)
        return ours

    for case in cases:
        for method, applies in OURS.items():
            if applies(case.family) and not (method == "ppm" and case.factored is None):
                if method == "lemke" and peers["quantecon"]:
                    attempt(case, method, lambda: lemke_paired(case))
                else:
                    attempt(case, method, lambda: run_ours(case, method, args.reps, args.budget))
        if peers["moby"]:
            attempt(case, "drake-moby", lambda: run_moby(case, args.reps, args.budget))
        if peers["quantecon"]:
            attempt(case, "quantecon", lambda: paired.pop(case.name, None) or run_quantecon(case, args.reps, args.budget))
        print(f"{case.name} (n={case.n}) done", flush=True)

    text = report(cases, results, peers, args, time.perf_counter() - t_start, errors, too_slow)
    atomic_write(args.out, lambda tmp: Path(tmp).write_text(text))
    print(f"wrote {args.out}")


LABELS = ["lemke", "dantzig", "ppm", "siconos-lemke", "siconos-pivot", "siconos-enum", "drake-moby", "quantecon"]


def aggregate(cases, results):
    """(family, size) -> label -> dict(time median over instances of per-instance medians, worst residual,
    solved count, rays, pivots median, n)."""
    groups = defaultdict(list)
    for c in cases:
        groups[(c.family, c.size)].append(c)
    table = {}
    for key, cs in groups.items():
        row = {}
        for label in LABELS:
            rs = [results.get((c.name, label)) for c in cs]
            rs = [r for r in rs if r is not None]
            if not rs:
                continue
            row[label] = {
                "time": float(np.median([np.median(r.times) for r in rs])),
                "residual": max(r.residual for r in rs),
                "solved": sum(r.residual <= SOLVED_TOL for r in rs),
                "count": len(rs),
                "rays": sum(r.ray for r in rs),
                "pivots": (float(np.median([r.pivots for r in rs])) if all(r.pivots is not None for r in rs)
                           else None),
            }
        table[key] = (cs[0].n if len(set(c.n for c in cs)) == 1 else f"{min(c.n for c in cs)}-{max(c.n for c in cs)}",
                      cs[0].factored.m if cs[0].factored is not None else None, row)
    return table


def report(cases, results, peers, args, elapsed, errors=(), too_slow=()):
    table = aggregate(cases, results)
    families = list(dict.fromkeys(c.family for c in cases))
    cmd = ".venv/bin/python benchmarks/bench_pivoting.py" + (" --quick" if args.quick else "")
    load = os.getloadavg() if hasattr(os, "getloadavg") else ("?",)
    lines = [
        "# Pivoting solvers vs peers (issue 2)",
        "",
        f"Command: `bash benchmarks/setup_peers.sh && {cmd}` (this run took {elapsed:.0f} s).",
        "",
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"load average at the end {', '.join(f'{x:.1f}' for x in load)}. The machine is shared with other "
        "sessions, so timings were taken under load; ratios measured in the same run are more trustworthy than "
        "absolute times.",
        "",
        "Peers found: " + ", ".join(f"{k}: {'yes' if v else 'no'}" for k, v in peers.items()) + ".",
        "",
        "Times are medians (ms) per solve: each solve repeated up to "
        f"{args.reps} times within {args.budget:g} s, median per instance, then median over the family's instances "
        "of that size. `res` is the worst certified (scale-free) residual of problems/residual.py (z in units of "
        "||z||_inf, each w_i in units of its terms |q_i| + sum_j |M_ij z_j|) over "
        "the instances, computed by contactlab for every solver's answer; `ok` counts answers with res <= 1e-6. "
        "contactlab is timed through `contactlab.solve` (its certification included); Siconos inside its own "
        "process around `linearComplementarity_driver`; Drake around `MobyLcpSolver().Solve(prog)`; QuantEcon "
        "around `lcp_lemke(M, q)`, alternately with contactlab's lemke (one call of each per round, up to "
        f"{args.reps} rounds within {2 * args.budget:g} s, so both see the same load). ppm is timed on the FactoredLCP (N, M, f), every other method on the explicit "
        "matrix N M^-1 N'.",
        "",
        "Families: `spd` (random SPD, cond 1e3), `p-matrix` (SPD + skew), `friction` (Stewart-Trinkle pyramid LCP, "
        "d = 4, mu = 0.5, 4 random bodies; size = contacts, n = 6 x contacts), `box-stack` (frictionless contact LCP "
        "of a random stack of 3D boxes, 4 contacts per face pair; size = boxes), `box-stack-25` (same with a 5 x 5 "
        "contact grid per face pair, so n >= 4m), `murty` (Murty's example, 2^n Lemke pivots).",
        "",
        "'Ended on a ray' counts, per peer, the runs that stopped on a secondary ray before the pivot limit "
        "(Siconos: info != 0 with fewer iterations than the limit; QuantEcon: status 2; ours: RAY_TERMINATION). "
        "A run can end on a ray and still return a certified answer (res <= 1e-6): on the degenerate "
        "friction-pyramid LCPs z0 often reaches ~1e-16 without leaving the basis, so the final point already "
        "solves the LCP. Pivot counts for Siconos are its reported iterations (the first z0 pivot not counted), "
        "so Murty's example shows 2^n - 1 there and 2^n for contactlab and QuantEcon.",
        "",
    ]
    for fam in families:
        keys = sorted(k for k in table if k[0] == fam)
        labels = [l for l in LABELS if any(l in table[k][2] for k in keys)]
        header = ["size", "n"] + (["m"] if fam.startswith("box") else []) + \
                 [f"{l} ms / res / ok" for l in labels]
        lines += [f"## {fam}", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        for k in keys:
            n, m, row = table[k]
            cells = [str(k[1]), str(n)] + ([str(m)] if fam.startswith("box") else [])
            for l in labels:
                e = row.get(l)
                cells.append("-" if e is None else
                             f"{fmt_ms(e['time'])} / {fmt_res(e['residual'])} / {e['solved']}/{e['count']}")
            lines.append("| " + " | ".join(cells) + " |")
        # pivots
        piv_labels = [l for l in labels if l != "siconos-enum" and any(row.get(l, {}).get("pivots") is not None for _, _, row in
                                               (table[k] for k in keys))]
        lines += ["", "Median pivots: " + "; ".join(
            f"size {k[1]}: " + ", ".join(f"{l} {table[k][2][l]['pivots']:.0f}" for l in piv_labels
                                         if l in table[k][2] and table[k][2][l]['pivots'] is not None)
            for k in keys), ""]
        rays = {l: sum(table[k][2][l]["rays"] for k in keys if l in table[k][2]) for l in labels}
        fails = {l: sum(table[k][2][l]["count"] - table[k][2][l]["solved"] for k in keys if l in table[k][2])
                 for l in labels}
        totals = {l: sum(table[k][2][l]["count"] for k in keys if l in table[k][2]) for l in labels}
        lines += ["Not solved (res > 1e-6) / ended on a ray (status or info, before the pivot limit): " +
                  ", ".join(f"{l} {fails[l]}/{totals[l]} / {rays[l]}" for l in labels), ""]

    # ratios and targets
    lines += ["## Ratios and targets", ""]
    ratio_rows = []
    fam_ratios = defaultdict(dict)
    excluded = defaultdict(list)
    for fam in families:
        keys = sorted(k for k in table if k[0] == fam)
        fam_cases = [c for c in cases if c.family == fam]
        for a, b in [("lemke", p) for p in ("siconos-lemke", "quantecon", "drake-moby")] + \
                [("dantzig", "lemke"), ("ppm", "dantzig")]:
            both = [c for c in fam_cases if (c.name, a) in results and (c.name, b) in results]
            good = [c for c in both if results[(c.name, a)].residual <= SOLVED_TOL
                    and results[(c.name, b)].residual <= SOLVED_TOL]
            name = b if a == "lemke" and b != "lemke" else f"{a}/{b}"
            if good:
                fam_ratios[name][fam] = geomean([float(np.median(results[(c.name, a)].times)) /
                                                 float(np.median(results[(c.name, b)].times)) for c in good])
            if len(good) < len(both):
                excluded[name].append(f"{fam} {len(both) - len(good)}/{len(both)}")
    header = ["time ratio (geomean over instances)"] + families + ["geomean over families"]
    for name, d in fam_ratios.items():
        label = f"lemke/{name}" if "/" not in name else name
        ratio_rows.append([label] + [f"{d[f]:.3g}" if f in d else "-" for f in families] +
                          [f"{geomean(list(d.values())):.3g}"])
    lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in ratio_rows]
    lines += ["", "Ratios are geometric means over the instances of a family (all sizes) that both methods solved "
              "(res <= 1e-6), each the ratio of the two per-instance median times; instances left out: " +
              ("; ".join(f"{('lemke/' + n) if '/' not in n else n}: {', '.join(v)}" for n, v in excluded.items())
               or "none") + ".", ""]
    # per size ratios (sizes where both solved every instance)
    for a, b in (("lemke", "siconos-lemke"), ("lemke", "quantecon")):
        parts = []
        for fam in families:
            keys = sorted(k for k in table if k[0] == fam)
            cells = [f"{k[1]}: {table[k][2][a]['time'] / table[k][2][b]['time']:.2g}" for k in keys
                     if a in table[k][2] and b in table[k][2] and all_solved(table[k][2][a])
                     and all_solved(table[k][2][b])]
            if cells:
                parts.append(f"{fam} ({', '.join(cells)})")
        if parts:
            lines += [f"{a}/{b} time per size (size: ratio): " + "; ".join(parts), ""]
    for fam in ("box-stack", "box-stack-25"):
        keys = sorted(k for k in table if k[0] == fam)
        parts = [f"size {k[1]} (n={table[k][0]}, m={table[k][1]}): "
                 f"{table[k][2]['ppm']['time'] / table[k][2]['dantzig']['time']:.3g}"
                 for k in keys if "ppm" in table[k][2] and "dantzig" in table[k][2]
                 and all_solved(table[k][2]["ppm"]) and all_solved(table[k][2]["dantzig"])]
        if parts:
            lines += [f"ppm/dantzig time per size, {fam}: " + "; ".join(parts), ""]
    fr = [c for c in cases if c.family == "friction"]
    per_instance = {}
    for peer in ("siconos-lemke", "siconos-pivot"):
        failed = [c for c in fr if (c.name, peer) in results and results[(c.name, peer)].residual > SOLVED_TOL]
        ours = [c for c in failed if (c.name, "lemke") in results and results[(c.name, "lemke")].residual <= SOLVED_TOL]
        rays = [c for c in failed if results[(c.name, peer)].ray]
        per_instance[peer] = (len(failed), len(rays), len(ours))
    lines += targets(table, families, fam_ratios, per_instance)
    if too_slow:
        lines += ["Skipped on the larger sizes after one solve took over "
                  f"{args.slow:g} s (not run above that size): " +
                  ", ".join(f"{l} on {f} (size {sz})" for (f, l), sz in sorted(too_slow.items())), ""]
    if errors:
        lines += ["## Errors raised (counted as unsolved)", ""] + [f"- {e}" for e in errors] + [""]
    return "\n".join(lines) + "\n"


def targets(table, families, fam_ratios, per_instance=None):
    out = ["## Targets (issue 2), as measured in this run", ""]
    sic = fam_ratios.get("siconos-lemke", {})
    if sic:
        g = geomean(list(sic.values()))
        worse_res = [(fam, k[1]) for k in table for fam in [k[0]]
                     if "lemke" in table[k][2] and "siconos-lemke" in table[k][2]
                     and table[k][2]["lemke"]["residual"] > max(table[k][2]["siconos-lemke"]["residual"], 1e-14)]
        out.append(f"- lemke <= 0.5 x Siconos Lemke time (geomean over families): {g:.3g} -> "
                   f"{'MET' if g <= 0.5 else 'NOT MET'}; sizes where our worst residual is above Siconos' "
                   f"(and above 1e-14): {worse_res or 'none'}.")
    qe = fam_ratios.get("quantecon", {})
    if qe:
        g = geomean(list(qe.values()))
        out.append(f"- lemke faster than QuantEcon (geomean ratio {g:.3g}): {'MET' if g < 1 else 'NOT MET'}; "
                   f"per family: " + ", ".join(f"{f} {v:.3g}" for f, v in qe.items()) + ".")
    fk = [k for k in table if k[0] == "friction"]
    if fk:
        ours_ok = sum(table[k][2]["lemke"]["solved"] for k in fk if "lemke" in table[k][2])
        total = sum(table[k][2]["lemke"]["count"] for k in fk if "lemke" in table[k][2])
        sic_rays = sum(table[k][2]["siconos-lemke"]["rays"] for k in fk if "siconos-lemke" in table[k][2])
        sic_fail = sum(table[k][2]["siconos-lemke"]["count"] - table[k][2]["siconos-lemke"]["solved"]
                       for k in fk if "siconos-lemke" in table[k][2])
        piv_rays = sum(table[k][2]["siconos-pivot"]["rays"] for k in fk if "siconos-pivot" in table[k][2])
        out.append(f"- friction-pyramid LCPs: contactlab lemke solved {ours_ok}/{total}; Siconos Lemke ended on a "
                   f"ray on {sic_rays} and left {sic_fail} unsolved; Siconos PIVOT ended on a ray on {piv_rays}.")
        for peer, (failed, rays, ours) in (per_instance or {}).items():
            out.append(f"  - instances {peer} left unsolved: {failed} ({rays} ending on a ray); contactlab lemke "
                       f"solved {ours} of those {failed}.")
    d = fam_ratios.get("dantzig/lemke", {})
    if "spd" in d:
        out.append(f"- dantzig faster than lemke on SPD (time ratio {d['spd']:.3g}): "
                   f"{'MET' if d['spd'] < 1 else 'NOT MET'}.")
    p = fam_ratios.get("ppm/dantzig", {})
    if "box-stack-25" in p:
        out.append(f"- ppm faster than dantzig once n >= 4m (box-stack-25, ratio {p['box-stack-25']:.3g}): "
                   f"{'MET' if p['box-stack-25'] < 1 else 'NOT MET'}.")
    return out + [""]


if __name__ == "__main__":
    main()

"""Frictional contact problems of record (FCLIB / Siconos files): every contactlab method and the Siconos
solvers side by side, with Dolan-More performance profiles (issue 15).

Input: directories (each one a collection) or files: FCLIB HDF5 (.hdf5/.h5, local or global; global
problems are condensed, W = H' M^-1 H) and Siconos FrictionContact .dat files.
Methods: contactlab nsgs, newton-ac, newton-fb, prox, pyramid (Stewart-Trinkle, d = 8, lemke; n <= 300 only: lemke on
the 2000-variable pyramid LCPs of the 40-box piles took 60 s per call, uncapped);
Siconos (python3-siconos, /usr/bin/python3, optional): 3D NSGS, NSN_AC, NSN_FB, PROX, ADMM; 2D NSGS.
Measure at each tolerance (default 1e-4 and 1e-8): per problem and method the wall time of the call and
the final residual, computed HERE with contactlab's one definition (natural map, relative: see
problems/friction_contact.py) from every returned r, Siconos' included. A call "solves" when that
residual <= tol and it finished within the time cap. contactlab calls get max_time = cap; Siconos calls
are bounded by their iteration limits and a process timeout (cap x number of runs + 30 s).
Timing: contactlab times solve() (validation of the answer included); Siconos times its driver only.

Usage: python benchmarks/bench_fclib.py DIR_OR_FILE ... [--make-own DIR] [--tols 1e-4 1e-8] [--cap 10]
           [--no-peers] [--json benchmarks/results/fclib.json] [--figure docs/figures/fclib_profiles.png]
(--make-own DIR first exports steps of contactlab's stack and pile scenes as FCLIB files, one collection each.)
"""
from __future__ import annotations

import os
os.environ.setdefault("CONTACTLAB_JIT", "compile")   # time compiled kernels, not interpreted first calls (kernels/_jit.py)

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

import contactlab as cl  # noqa: E402
from contactlab.problems.fclib import write_siconos_fc  # noqa: E402
from contactlab.problems.friction_contact import GlobalFrictionContact  # noqa: E402

OURS = ["nsgs", "newton-ac", "newton-fb", "prox", "pyramid"]
PEERS_3D = ["NSGS", "NSN_AC", "NSN_FB", "PROX", "ADMM"]
PEERS_2D = ["NSGS"]
SUFFIXES = (".hdf5", ".h5", ".dat")


def siconos_available() -> bool:
    try:
        return subprocess.run(["/usr/bin/python3", "-c", "import siconos.numerics"], capture_output=True,
                              timeout=60).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def collect(paths):
    """[(collection, name, path)] from directories (collection = directory name) and files."""
    out = []
    for p in map(Path, paths):
        if p.is_dir():
            for f in sorted(p.iterdir()):
                if f.suffix in SUFFIXES:
                    out.append((p.name, f.stem, f))
        elif p.suffix in SUFFIXES:
            out.append((p.parent.name, p.stem, p))
    return out


def our_options(method, tol, cap):
    if method == "pyramid":
        return {"tol": tol}
    return {"tol": tol, "max_time": cap}


def run_ours(prob, method, tol, cap):
    t0 = time.perf_counter()
    sol = cl.solve(prob, method, **our_options(method, tol, cap))
    dt = time.perf_counter() - t0
    res = float(sol.residual)
    return {"time_s": dt, "residual": res if np.isfinite(res) else None, "status": sol.status.name,
            "iterations": int(sol.iterations)}


def run_peers(lp, tols, cap, tmp: Path):
    """Siconos on the local problem ``lp``: {(solver, tol): record}. One process per solver, so that a
    solver that aborts (an assertion in Siconos' C code) costs only its own records."""
    dat = tmp / "problem.dat"
    write_siconos_fc(lp, dat)
    recs = {}
    for s in (PEERS_3D if lp.dim == 3 else PEERS_2D):
        itermax = 200 if s in ("NSN_AC", "NSN_FB") else (100 if s == "PROX" else 20000)
        runs = [{"solver": s, "tol": tol, "itermax": itermax} for tol in tols]
        recs.update(_peer_process(lp, dat, runs, cap, tmp))
    return recs


def _peer_process(lp, dat, runs, cap, tmp):
    task = tmp / "task.json"
    task.write_text(json.dumps({"problem": str(dat), "runs": runs}))
    out = tmp / "result.npz"
    out.unlink(missing_ok=True)
    runner = ROOT / "benchmarks" / "peers" / "siconos_fc_runner.py"
    try:
        proc = subprocess.run(["/usr/bin/python3", str(runner), str(task), str(out)], capture_output=True,
                              text=True, timeout=cap * len(runs) + 30)
    except subprocess.TimeoutExpired:
        return {(r["solver"], r["tol"]): {"time_s": None, "residual": None, "status": "PROCESS_TIMEOUT"}
                for r in runs}
    if proc.returncode != 0 or not out.exists():
        msg = (proc.stderr or "").strip().splitlines()[-1:] or [f"exit {proc.returncode}"]
        return {(r["solver"], r["tol"]): {"time_s": None, "residual": None, "status": f"CRASH: {msg[0][-120:]}"}
                for r in runs}
    recs = {}
    with np.load(out) as d:
        meta = json.loads(str(d["meta"]))
        for k, (run, m) in enumerate(zip(runs, meta)):
            if "skipped" in m:
                continue
            r = d[f"r_{k}"]
            res = lp.residuals(r).natural if np.all(np.isfinite(r)) else float("inf")
            recs[(run["solver"], run["tol"])] = {
                "time_s": m["time_s"], "residual": res if np.isfinite(res) else None,
                "status": f"info={m['info']}", "iterations": m["iterations"], "siconos_error": m["siconos_error"]}
    return recs


def solved(rec, tol, cap):
    return rec.get("residual") is not None and rec["residual"] <= tol and rec.get("time_s") is not None \
        and rec["time_s"] <= cap


def profiles(results, methods, tol, cap, taus):
    """Dolan-More: fraction of problems each method solves within tau x the fastest solver's time."""
    probs = sorted({(r["collection"], r["problem"]) for r in results})
    t = {m: [] for m in methods}
    for key in probs:
        times = {}
        for r in results:
            if (r["collection"], r["problem"]) == key and r["tol"] == tol and r["method"] in methods:
                times[r["method"]] = max(r["time_s"], 1e-6) if solved(r, tol, cap) else np.inf
        best = min(times.values(), default=np.inf)
        for m in methods:
            tm = times.get(m, np.inf)
            t[m].append(tm / best if np.isfinite(best) and np.isfinite(tm) else np.inf)
    return {m: [float(np.mean(np.array(t[m]) <= tau)) if t[m] else 0.0 for tau in taus] for m in methods}


def table(results, methods, tols, cap) -> str:
    cols = sorted({r["collection"] for r in results})
    lines = ["| collection | problems | tol | method | solved | median time (s) of solved |", "|---|---|---|---|---|---|"]
    for c in cols:
        nprob = len({r["problem"] for r in results if r["collection"] == c})
        for tol in tols:
            for m in methods:
                rs = [r for r in results if r["collection"] == c and r["tol"] == tol and r["method"] == m]
                if not rs:
                    continue
                ok = [r["time_s"] for r in rs if solved(r, tol, cap)]
                med = f"{np.median(ok):.4f}" if ok else "-"
                lines.append(f"| {c} | {nprob} | {tol:g} | {m} | {len(ok)}/{len(rs)} | {med} |")
    return "\n".join(lines)


def goals(results, tols, cap) -> str:
    """Issue 15 goals on local 3D problems at the tightest tolerance: best Siconos solver per problem."""
    tol = min(tols)
    probs = sorted({(r["collection"], r["problem"]) for r in results if r.get("dim") == 3})
    lines = []
    missed, ours_t, theirs_t = [], [], []
    for key in probs:
        rs = [r for r in results if (r["collection"], r["problem"]) == key and r["tol"] == tol]
        peers = [r for r in rs if r["method"].startswith("siconos-") and solved(r, tol, cap)]
        ours = [r for r in rs if not r["method"].startswith("siconos-") and solved(r, tol, cap)]
        if not peers:
            continue
        best_peer = min(peers, key=lambda r: r["time_s"])
        if not ours:
            missed.append(f"{key[0]}/{key[1]} ({best_peer['method']} solves it)")
            continue
        ours_t.append(min(r["time_s"] for r in ours))
        theirs_t.append(best_peer["time_s"])
    n = len(ours_t) + len(missed)
    lines.append(f"- 3D problems Siconos solves at {tol:g}: {n}; contactlab solves {len(ours_t)} of them"
                 + (f"; missed: {', '.join(missed)}" if missed else ""))
    if ours_t:
        lines.append(f"- median time on those: contactlab best {np.median(ours_t):.4f} s vs Siconos best "
                     f"{np.median(theirs_t):.4f} s (ratio {np.median(ours_t) / np.median(theirs_t):.2f})")
    bad = [r for r in results if r["residual"] is None and not r["method"].startswith("siconos-")]
    lines.append(f"- contactlab calls ending with a non-finite answer: {len(bad)}; slowest contactlab call "
                 f"{max((r['time_s'] for r in results if not r['method'].startswith('siconos-')), default=0):.2f} s "
                 f"(cap {cap:g} s)")
    return "\n".join(lines)


def figure(results, methods, tols, cap, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    taus = np.logspace(0, 3, 60)
    fig, axes = plt.subplots(1, len(tols), figsize=(6 * len(tols), 4.2), squeeze=False)
    for ax, tol in zip(axes[0], tols):
        prof = profiles(results, methods, tol, cap, taus)
        for m in methods:
            ax.step(taus, prof[m], where="post", label=m, ls="--" if m.startswith("siconos-") else "-")
        ax.set_xscale("log")
        ax.set_ylim(0, 1.02)
        ax.set_xlabel("tau (time / fastest time)")
        ax.set_ylabel("fraction of problems solved")
        ax.set_title(f"tolerance {tol:g}, cap {cap:g} s")
        ax.grid(alpha=0.3)
    axes[0][-1].legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def run(paths, tols=(1e-4, 1e-8), cap=10.0, peers=True, pyramid_max_n=300, log=print):
    files = collect(paths)
    peers = peers and siconos_available()
    # compile the kernels once, outside the timings
    warm = cl.FrictionContact(np.eye(3) * 2, [-1.0, 0.3, 0.1], [0.5])
    for m in OURS:
        cl.solve(warm, m)
    results = []
    with tempfile.TemporaryDirectory() as tmpd:
        for coll, name, path in files:
            prob = cl.load(path)
            lp = prob.local() if isinstance(prob, GlobalFrictionContact) else prob
            base = {"collection": coll, "problem": name, "nc": lp.nc, "dim": lp.dim,
                    "form": "global" if lp is not prob else "local"}
            for tol in tols:
                for m in OURS:
                    if m == "pyramid" and lp.n > pyramid_max_n:
                        continue
                    rec = run_ours(prob, m, tol, cap)
                    results.append({**base, "tol": tol, "method": m, **rec})
                    log(f"{coll}/{name} nc={lp.nc} tol={tol:g} {m}: {rec['status']} res={rec['residual']} "
                        f"t={rec['time_s']:.4f}")
            if peers and not lp.is_trivial():
                for (s, tol), rec in run_peers(lp, tols, cap, Path(tmpd)).items():
                    results.append({**base, "tol": tol, "method": f"siconos-{s}", **rec})
                    log(f"{coll}/{name} tol={tol:g} siconos-{s}: {rec['status']} res={rec['residual']} "
                        f"t={rec['time_s']}")
    methods = [m for m in OURS] + [f"siconos-{s}" for s in PEERS_3D if any(r["method"] == f"siconos-{s}" for r in results)]
    return results, methods


OWN = {  # collection -> (scene, params, steps, keep every k-th step); the scenes advance with the
    # box-friction model (pgs-sm), the exported problem is the step's exact-cone problem either way
    "stack": ("stack", {"count": 10}, 20, 5),
    "stack-offset": ("stack", {"count": 6, "offset": 0.04}, 60, 6),
    "pile20": ("pile", {"count": 20}, 80, 8),
    "pile40": ("pile", {"count": 40}, 80, 8),
}


def make_own(root, log=print):
    """Export problems of contactlab's own scenes (simulate --export-fclib's exporter) into root/<collection>."""
    from contactlab.errors import SimulationError
    from contactlab.problems.fclib import StepExporter
    from contactlab.scenarios import make_scene
    from contactlab.sim import Simulator
    for name, (scene, params, steps, every) in OWN.items():
        d = Path(root) / name
        sim = Simulator(make_scene(scene, **params), "box-friction")
        exp = StepExporter(d, title=f"{scene} {params}")
        sim.add_controller(exp)
        try:
            traj = sim.run(steps * sim.h)
            if traj.error:
                log(f"{name}: simulation stopped ({traj.error}); keeping the steps so far")
        except SimulationError as exc:
            log(f"{name}: simulation stopped ({exc}); keeping the steps so far")
        exp(sim)
        for k, f in enumerate(exp.written):
            if (k + 1) % every:
                f.unlink()
        log(f"{name}: {len(list(d.glob('*.hdf5')))} problems in {d}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("paths", nargs="*")
    ap.add_argument("--tols", nargs="+", type=float, default=[1e-4, 1e-8])
    ap.add_argument("--cap", type=float, default=10.0, help="time cap per call (s)")
    ap.add_argument("--no-peers", action="store_true")
    ap.add_argument("--json", default=None)
    ap.add_argument("--figure", default=None)
    ap.add_argument("--make-own", default=None, metavar="DIR",
                    help="first export problems of contactlab's stacks and piles into DIR/<collection> and add them")
    a = ap.parse_args(argv)
    if a.make_own:
        make_own(a.make_own)
        a.paths = list(a.paths) + [str(p) for p in sorted(Path(a.make_own).iterdir()) if p.is_dir()]
    results, methods = run(a.paths, tuple(a.tols), a.cap, not a.no_peers)
    print(table(results, methods, a.tols, a.cap))
    print(goals(results, a.tols, a.cap))
    if a.json:
        Path(a.json).parent.mkdir(parents=True, exist_ok=True)
        Path(a.json).write_text(json.dumps(results, indent=1))
    if a.figure:
        figure(results, methods, a.tols, a.cap, a.figure)
        print(f"wrote {a.figure}")


if __name__ == "__main__":
    main()

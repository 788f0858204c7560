"""The fuzz suite's child process (issue 40): every case of a batch runs here, not in pytest, so a
crash in compiled code (SIGSEGV, abort) fails the test naming its case instead of killing the run.

The parent pickles the cases (built by hypothesis strategies and file mutators) to a file and runs
``python -m tests.fuzz.harness KIND CASES``; the child prints ``start I`` before case I and one JSON
line after it: ``[I, outcome, detail]``. When the child dies, the case it had started is recorded as
a crash (with the signal) and a new child resumes after it, so one run lists every crashing case.

Outcomes: ``ok`` (accepted, and every SOLVED answer re-checked here from the problem's own data),
``refused`` (a contactlab error: the honest answer to bad input), ``wrong`` (a SOLVED answer that
the independent check rejects), ``raw`` (any other exception: a traceback for the user), ``crash``.
"""
from __future__ import annotations

import json
import os
import pickle
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BAD = ("wrong", "raw", "crash")


def run_cases(kind: str, cases: list, timeout: float = 600) -> list:
    """Run ``cases`` of ``kind`` in child processes; returns [index, outcome, detail] per case."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "cases.pkl"
        path.write_bytes(pickle.dumps(cases))
        env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}", "PYTHONWARNINGS": "ignore"}
        results, start = {}, 0
        while start < len(cases):
            proc = subprocess.run([sys.executable, "-m", "tests.fuzz.harness", kind, str(path), str(start)],
                                  capture_output=True, text=True, timeout=timeout, env=env, cwd=ROOT)
            started = None
            for line in proc.stdout.splitlines():
                if line.startswith("start "):
                    started = int(line.split()[1])
                elif line.startswith("["):
                    i, outcome, detail = json.loads(line)
                    results[i] = [i, outcome, detail]
            if proc.returncode == 0:
                break
            if started is None or started in results:   # died outside a case: report it once
                raise RuntimeError(f"the fuzz child died outside a case (rc {proc.returncode}): {proc.stderr[-2000:]}")
            sig = -proc.returncode if proc.returncode < 0 else None
            why = signal.Signals(sig).name if sig else f"exit {proc.returncode}"
            results[started] = [started, "crash", f"{why}: {proc.stderr[-300:]}"]
            start = started + 1
        return [results[i] for i in sorted(results)]


def failures(results: list, cases: list) -> list:
    """The bad results with a short description of their cases (for the assertion message)."""
    return [(r, _describe(cases[r[0]])) for r in results if r[1] in BAD]


def _describe(case) -> str:
    text = repr(case)
    return text if len(text) < 400 else text[:400] + "..."


# ------------------------------------------------------------------------------ the child side
def _check_lcp(M, q, z, w) -> str | None:
    """Independent check of a SOLVED LCP answer, from (M, q) alone: z, w finite, w = M z + q, and
    z >= 0, w >= 0, z'w = 0 within 1e-6 of each row's own term size."""
    import numpy as np
    import scipy.sparse as sp
    Md = M.toarray() if sp.issparse(M) else np.asarray(M, dtype=float)
    if not (np.isfinite(z).all() and np.isfinite(w).all()):
        return "SOLVED with a non-finite z or w"
    with np.errstate(all="ignore"):
        w_ref = Md @ z + q
        t = np.abs(q) + np.abs(Md) @ np.abs(z)
    if not np.isfinite(t).all():
        return "SOLVED although the row terms overflow"
    zs = max(float(np.max(np.abs(z), initial=0.0)), 1e-300)
    unit = np.maximum(t, 1e-12 * float(np.max(np.abs(q), initial=0.0)) + 1e-300)
    nat = np.abs(np.minimum(z / zs, w_ref / unit))
    if np.max(nat, initial=0.0) > 1e-6 or np.min(z / zs, initial=0.0) < -1e-6 or np.min(w_ref / unit, initial=0.0) < -1e-6:
        return f"SOLVED but the natural residual is {np.max(nat, initial=0.0):.3g}"
    return None


def _check_box(M, q, lo, hi, z) -> str | None:
    """Independent check of a SOLVED boxed LCP with static bounds: z in [lo, hi], and w = M z + q
    pointing into the box where z is at a bound, 0 inside (1e-6 of each row's term size)."""
    import numpy as np
    import scipy.sparse as sp
    Md = M.toarray() if sp.issparse(M) else np.asarray(M, dtype=float)
    if not np.isfinite(z).all():
        return "SOLVED with a non-finite z"
    with np.errstate(all="ignore"):
        w = Md @ z + q
        t = np.abs(q) + np.abs(Md) @ np.abs(z)
    if not np.isfinite(t).all():
        return "SOLVED although the row terms overflow"
    zs = max(float(np.max(np.abs(z), initial=0.0)), float(np.max(np.abs(np.r_[lo, hi][np.isfinite(np.r_[lo, hi])]),
                                                                    initial=0.0)), 1e-300)
    unit = np.maximum(t, 1e-12 * float(np.max(np.abs(q), initial=0.0)) + 1e-300)
    y = np.clip(z / zs - w / unit, lo / zs, hi / zs)
    err = max(float(np.max(np.abs(z / zs - y), initial=0.0)), float(np.max(lo / zs - z / zs, initial=0.0)),
              float(np.max(z / zs - hi / zs, initial=0.0)))
    return None if err <= 1e-6 else f"SOLVED but the box residual is {err:.3g}"


def _solve_and_check(problem, methods) -> tuple[str, str]:
    import numpy as np

    import contactlab as cl
    from contactlab.errors import ContactlabError
    notes = []
    for method in methods:
        try:
            sol = cl.solve(problem, method=method)
        except ContactlabError as exc:
            notes.append(f"{method}: refused ({exc})"[:120])
            continue
        if sol.status == cl.Status.SOLVED or sol.status == cl.Status.TRIVIAL:
            z, w = np.asarray(sol.z, float), np.asarray(sol.w, float)
            if type(problem) is cl.LCP:
                bad = _check_lcp(problem.M, problem.q, z, w)
            elif type(problem) is cl.BoxedLCP and not problem.has_coupling:
                bad = _check_box(problem.M, problem.q, problem.lo, problem.hi, z)
            else:
                bad = None if np.isfinite(z).all() and np.isfinite(w).all() else "SOLVED with non-finite z or w"
            if bad:
                return "wrong", f"{method}: {bad}"
        notes.append(f"{method}: {sol.status.name}")
    return "ok", "; ".join(notes)


def _methods_for(problem):
    import contactlab as cl
    if isinstance(problem, cl.FrictionContact):
        return ["prox", "newton-ac"]
    if isinstance(problem, cl.BoxedLCP):
        return ["pgs", "lemke"] + ([] if problem.has_coupling else ["interior-point"])
    if isinstance(problem, cl.LCP):
        return ["lemke", "dantzig", "pgs", "enumerate"]
    return ["auto"]


def _problem(case):
    """case = (class name, args, kwargs, methods or None): construct, then solve with each method."""
    import contactlab as cl
    name, args, kwargs, methods = case
    problem = getattr(cl, name)(*args, **kwargs)
    return _solve_and_check(problem, methods or _methods_for(problem))


def _load(case):
    """case = path of a (mutated) problem file: load it; a small problem is also solved."""
    import contactlab as cl
    problem = cl.load(case)
    if getattr(problem, "n", 0) <= 12:
        return _solve_and_check(problem, _methods_for(problem)[:2])
    return "ok", f"loaded n = {problem.n}"


def _scene(case):
    from contactlab.scenarios.io import load_scene
    scene = load_scene(case)
    return "ok", f"{len(scene.bodies)} bodies"


def _urdf(case):
    import warnings

    from contactlab.mechanics.urdf import load_urdf
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        scene = load_urdf(case)
    return "ok", f"{len(scene.bodies)} bodies"


def _cli(case):
    """case = argument list of the contactlab command: exit 0, 1 or 2, never a traceback."""
    from typer.testing import CliRunner

    from contactlab.cli import app
    res = CliRunner().invoke(app, case)
    if res.exception is not None and not isinstance(res.exception, SystemExit):
        return "raw", f"{type(res.exception).__name__}: {res.exception}"[:300]
    if res.exit_code not in (0, 1, 2) or "Traceback" in res.output:
        return "raw", f"exit {res.exit_code}: {res.output[-300:]}"
    if res.exit_code == 2:
        return "refused", res.output.strip().splitlines()[-1][:200] if res.output.strip() else ""
    return "ok", f"exit {res.exit_code}"


KINDS = {"problem": _problem, "load": _load, "scene": _scene, "urdf": _urdf, "cli": _cli}


def main(kind: str, path: str, start: str) -> None:
    import warnings

    from contactlab.errors import ContactlabError
    warnings.simplefilter("ignore")
    cases = pickle.loads(Path(path).read_bytes())
    run = KINDS[kind]
    for i in range(int(start), len(cases)):
        print(f"start {i}", flush=True)
        try:
            outcome, detail = run(cases[i])
        except ContactlabError as exc:
            outcome, detail = "refused", f"{type(exc).__name__}: {exc}"[:300]
        except Exception as exc:  # noqa: BLE001 - the finding itself
            outcome, detail = "raw", f"{type(exc).__name__}: {exc}"[:300]
        print(json.dumps([i, outcome, detail]), flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:4])

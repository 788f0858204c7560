"""Hostile-input campaign of issue 40 (not a pytest module: ``python -m tests.hostile.campaign``).

Every case runs in a child process (a crash in compiled code cannot take the campaign with it) and is
judged by what a user would see:

- a CLI case (``contactlab ARGS``) is *ok* when it exits 0, 1, 2 or 130 with no traceback, a refusal
  (exit 2) printing exactly one ``error:`` line (or the framework's usage box), and when the case's
  own expectation (exit codes, a phrase in the output, files left valid) holds;
- an API case (a snippet) is *ok* when it finishes or raises a contactlab error, and every SOLVED
  answer passes the independent check of tests/fuzz/harness.py (``every(problem)`` tries every
  registered method);
- anything else is a *defect*: ``crash`` (signal or odd exit), ``raw`` (a traceback or a non-contactlab
  exception), ``wrong`` (a false certificate, a lost or damaged output), ``hang`` (the time limit).

``python -m tests.hostile.campaign`` runs all cases (``-k WORD`` those whose id or text contains
WORD, ``-j N`` children at a time) and prints one line per case; ``--md FILE`` writes the table of
docs/robustness.md. The issue's own inputs are group ``issue``.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
PY = sys.executable
ENV = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}", "PYTHONWARNINGS": "ignore",
       "COLUMNS": "100"}


@dataclass
class Case:
    id: str
    group: str
    text: str                       # the input, as the table shows it
    cli: list | None = None         # contactlab arguments ({tmp} replaced by the case's folder)
    api: str | None = None          # a snippet run in the child (prelude below)
    setup: str | None = None        # Python run in the child before the CLI (files in {tmp}); may use cl, np
    custom: object = None           # fn(tmp) -> (outcome, detail), for concurrency and signals
    rc: tuple = (0, 1, 2)           # exit codes accepted
    want: str | None = None         # a phrase the output must contain
    after: str | None = None        # Python run after the CLI: raises AssertionError when an output is damaged
    timeout: float = 240
    fixed: str = ""                 # what was wrong before this campaign's fix (the table's class)
    left: str = ""                  # a defect left, and why
    preexec: object = None


PRELUDE = """
import sys, warnings, json, math
warnings.simplefilter("ignore")
import numpy as np, scipy.sparse as sp
import contactlab as cl
from contactlab.errors import ContactlabError
from tests.fuzz.harness import _solve_and_check
ALL = list(cl.available_solvers())
TMP = {tmp!r}
def every(problem, methods=None):
    out, detail = _solve_and_check(problem, methods or ALL)
    if out == "wrong":
        raise AssertionError("WRONG " + detail)
    return "; ".join(n for n in detail.split("; ") if "does not accept" not in n)
"""

CHILD = """
import sys, json, traceback
src = open(sys.argv[1]).read()
try:
    exec(compile(src, "<case>", "exec"), globals())
    print("RESULT " + json.dumps(["ok", str(globals().get("out", ""))[:300]]))
except AssertionError as exc:
    print("RESULT " + json.dumps(["wrong", str(exc)[:300]]))
except BaseException as exc:
    from contactlab.errors import ContactlabError
    kind = "refused" if isinstance(exc, ContactlabError) else "raw"
    print("RESULT " + json.dumps([kind, f"{type(exc).__name__}: {exc}"[:300]]))
"""


def _child(code: str, tmp: Path, timeout: float, preexec=None):
    script = tmp / "_case.py"
    body = PRELUDE.format(tmp=str(tmp)) + code
    # the snippet's `out` must reach the RESULT line: run it at module level of the child
    script.write_text(body + "\n")
    runner = tmp / "_run.py"
    runner.write_text(CHILD)
    return subprocess.run([PY, str(runner), str(script)], capture_output=True, text=True, timeout=timeout,
                          env=ENV, cwd=tmp, preexec_fn=preexec)


def cli_cmd(args):
    return [PY, "-c", "from contactlab.cli import main; main()", *args]


def judge_cli(case: Case, proc, tmp: Path):
    out = proc.stdout + proc.stderr
    rc = proc.returncode
    errors = [ln for ln in out.splitlines() if ln.startswith("error:")]
    first = errors[0] if errors else (out.strip().splitlines() or [""])[-1]
    detail = f"exit {rc}: {first[:200]}"
    if rc < 0 or rc not in (0, 1, 2, 130):
        return "crash", f"exit {rc} ({signal.Signals(-rc).name if rc < 0 else ''}): {out[-300:]}"
    if "Traceback" in out:
        return "raw", f"exit {rc}: traceback: {out.strip().splitlines()[-1][:200]}"
    if rc == 2 and len(errors) != 1 and "Usage:" not in out:
        return "raw", f"exit 2 with {len(errors)} error lines: {out[-300:]}"
    if rc not in case.rc:
        return "wrong", f"exit {rc}, expected {case.rc}: {first[:200]}"
    if case.want and case.want not in out:
        return "wrong", f"{detail} (expected {case.want!r})"
    if case.after:
        chk = _child(case.after.replace("{tmp}", str(tmp)), tmp, 120)
        res = _result(chk)
        if res[0] != "ok":
            return "wrong", f"{detail}; after: {res[1]}"
    return ("refused" if rc == 2 else "ok"), detail


def _result(proc):
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith("RESULT "):
            return tuple(json.loads(line[7:]))
    rc = proc.returncode
    if rc < 0:
        return "crash", f"{signal.Signals(-rc).name}: {proc.stderr[-300:]}"
    return "raw", f"exit {rc} without a result: {proc.stderr[-300:]}"


def run_case(case: Case) -> tuple[str, str, float]:
    t0 = time.time()
    with tempfile.TemporaryDirectory(prefix=f"hostile-{case.id}-") as d:
        tmp = Path(d)
        try:
            if case.custom is not None:
                outcome, detail = case.custom(tmp)
            elif case.api is not None:
                outcome, detail = _result(_child(textwrap.dedent(case.api), tmp, case.timeout, case.preexec))
            else:
                if case.setup:
                    res = _result(_child(textwrap.dedent(case.setup).replace("{tmp}", str(tmp)), tmp, 120))
                    if res[0] != "ok":
                        return "setup", f"setup failed: {res[1]}", time.time() - t0
                args = [a.replace("{tmp}", str(tmp)).replace("{data}", str(DATA)) for a in case.cli]
                proc = subprocess.run(cli_cmd(args), capture_output=True, text=True, timeout=case.timeout,
                                      env=ENV, cwd=tmp, preexec_fn=case.preexec)
                outcome, detail = judge_cli(case, proc, tmp)
        except subprocess.TimeoutExpired:
            outcome, detail = "hang", f"no answer in {case.timeout:.0f} s"
        finally:
            os.chmod(d, 0o700)
            for p in Path(d).rglob("*"):
                try:
                    os.chmod(p, 0o700)
                except OSError:
                    pass
    return outcome, detail, time.time() - t0


GOOD = ("ok", "refused")


def main(argv=None):
    from .campaign_cases import CASES
    ap = argparse.ArgumentParser()
    ap.add_argument("-k", default="")
    ap.add_argument("-g", default="", help="groups, comma-separated")
    ap.add_argument("-j", type=int, default=2)
    ap.add_argument("--ids", default="", help="case ids, comma-separated")
    ap.add_argument("--table-from", default="", help="JSON results files (later ones win): write --md, run nothing")
    ap.add_argument("--md")
    ap.add_argument("--json")
    a = ap.parse_args(argv)
    cases = [c for c in CASES if (not a.k or any(a.k in s for s in (c.id, c.text, c.group)))
             and (not a.g or c.group in a.g.split(","))]
    if a.ids:
        cases = [c for c in cases if c.id in a.ids.split(",")]
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids)), "case ids must be unique"
    if a.table_from:
        results = {}
        for f in a.table_from.split(","):
            results.update({k: (*v, 0.0) for k, v in json.loads(Path(f).read_text()).items()})
        cases = [c for c in cases if c.id in results]
        Path(a.md).write_text(table(cases, results))
        bad = [c.id for c in cases if results[c.id][0] not in GOOD]
        print(f"{len(cases)} cases: {len(cases) - len(bad)} ok, {len(bad)} defects {bad}")
        return 1 if bad else 0
    results = {}
    with ThreadPoolExecutor(a.j) as ex:
        for c, r in zip(cases, ex.map(run_case, cases)):
            results[c.id] = r
            mark = "  " if r[0] in GOOD else "!!"
            print(f"{mark} {c.id:10} {r[0]:8} {r[2]:5.1f}s  {c.text[:60]:60}  {r[1][:150]}", flush=True)
    bad = [c.id for c in cases if results[c.id][0] not in GOOD]
    print(f"{len(cases)} cases: {len(cases) - len(bad)} ok, {len(bad)} defects {bad}")
    if a.json:
        Path(a.json).write_text(json.dumps({k: v[:2] for k, v in results.items()}, indent=0))
    if a.md:
        Path(a.md).write_text(table(cases, results))
    return 1 if bad else 0


def table(cases, results) -> str:
    def esc(s):
        return s.replace("|", "\\|").replace("\n", " ")
    lines = ["| id | input | outcome | class |", "| --- | --- | --- | --- |"]
    for c in cases:
        outcome, detail, _ = results[c.id]
        if "└" in detail or "╰" in detail:     # the last line of a table or a usage box
            detail = detail.split(":")[0] + (": usage error naming the option" if "╰" in detail
                                             else ": ran; final body states printed")
        if c.left:
            cls = f"defect left: {c.left}"
        elif outcome in GOOD:
            cls = f"defect fixed (was: {c.fixed})" if c.fixed else "ok"
        else:
            cls = f"defect left: {c.left}" if c.left else f"**defect** ({outcome})"
        lines.append(f"| {c.id} | {esc(c.text)} | {esc(outcome + ': ' + detail)[:220]} | {esc(cls)} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())

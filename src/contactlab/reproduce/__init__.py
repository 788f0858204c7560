"""``contactlab reproduce``: the papers' experiments and the benchmark families, as one report.

Each module ``sec_*.py`` in this package is one section: it defines ``TITLE`` (str), ``ORDER``
(int, sections run in increasing order) and ``run(ctx: ReportContext) -> str`` returning Markdown.

What the framework gives a section (:class:`ReportContext`):

- ``ctx.figure(name, fig)`` saves a figure and returns its Markdown link;
- ``ctx.advance(label)`` moves the progress bar (call once per unit of work);
- ``ctx.warm_up(fn, *args)`` runs ``fn`` once outside any timing, so that numba compilation (and
  cache loading) is not timed; ``ctx.best_time(fn, *args, repeat=3)`` warms up, then returns the
  best wall time of ``repeat`` calls and the last result. Every timed kernel must be warmed up:
  the framework records numba JIT time (compiling or loading from the cache) that happens
  *outside* ``warm_up`` and prints it under the section, with the units of work (``advance``
  labels) it happened in, so a leak into a timing is visible;
- ``ctx.failed(reason)`` returns a :class:`Failed` marker to put in a table cell (or row) in place
  of a number: ``markdown_table`` prints it as **FAILED (reason)**, the section and the report
  header count failed rows, and ``contactlab reproduce`` exits 1;
- ``ctx.summary(paper, item, paper_value=..., ours=..., agrees=..., reason=...)`` adds the section's
  computed verdict on one table or figure of a paper to the report's opening table
  (:mod:`contactlab.reproduce.papers` lists every table and figure of the five papers).

Report layout: the title, a status line (COMPLETE / INCOMPLETE / FAILED rows), the summary table
(per table and figure of each paper: its key figure, ours, agree / differ / not reproduced, why, the
section, our figure), the provenance of the run (commit, package versions, CPU, cores, load, start
and end time), then one block per section
between ``<!-- contactlab:section NAME -->`` markers. ``--only NAME`` reruns the named sections and
replaces their blocks inside the existing report; the other sections are kept as they were.
"""
from __future__ import annotations

import importlib
import os
import platform
import pkgutil
import re
import subprocess
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from ..errors import ParamError
from ..files import atomic_write

HEADER = "# contactlab reproduction report"
_RAISED = "**This section FAILED.**"
_ROWS = "failed row(s) in this section."
_BEGIN = "<!-- contactlab:section {} -->"
_END = "<!-- /contactlab:section {} -->"
_BLOCK = re.compile(r"<!-- contactlab:section (\S+) -->\n(.*?)<!-- /contactlab:section \1 -->\n?", re.S)


@dataclass(frozen=True)
class Failed:
    """A failed measurement (a crash, an uncertified answer, a timeout): printed as a failure, never
    as a number. Sections put it in table cells through :meth:`ReportContext.failed`."""
    reason: str

    def __str__(self) -> str:
        return f"**FAILED** ({self.reason})" if self.reason else "**FAILED**"


class _CompileClock:
    """Numba JIT start-up time (compiling, or loading a compiled function from the cache: numba's
    ``numba:compiler_lock`` event covers both), split into inside/outside ``warm_up``."""

    def __init__(self):
        self.depth = 0
        self.t0 = 0.0
        self.in_warm_up = 0
        self.outside = 0.0
        self.inside = 0.0
        self.where: dict[str, float] = {}
        self.label = None   # the last ctx.advance label: JIT time is charged to the unit after it

    def on_start(self, event):
        self.depth += 1
        if self.depth == 1:
            self.t0 = time.perf_counter()

    def on_end(self, event):
        self.depth -= 1
        if self.depth == 0:
            dt = time.perf_counter() - self.t0
            if self.in_warm_up:
                self.inside += dt
            else:
                self.outside += dt
                self.where[self.label] = self.where.get(self.label, 0.0) + dt

    def install(self):
        from numba.core import event

        clock = self

        class _L(event.Listener):
            def on_start(self, ev):
                clock.on_start(ev)

            def on_end(self, ev):
                clock.on_end(ev)

        self._listener = _L()
        event.register("numba:compiler_lock", self._listener)
        return self

    def uninstall(self):
        from numba.core import event
        event.unregister("numba:compiler_lock", self._listener)


@dataclass
class ReportContext:
    out_dir: Path
    quick: bool = False
    advance: Callable[[str], None] = lambda label: None   # progress-bar hook: call once per unit of work
    figures: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    summaries: list[dict] = field(default_factory=list)
    _clock: _CompileClock | None = None

    def rng(self, seed: int) -> np.random.Generator:
        return np.random.default_rng(seed)

    def figure(self, name: str, fig) -> str:
        """Save a matplotlib figure as ``figures/<name>.png`` atomically; return the Markdown link."""
        import matplotlib.pyplot as plt
        rel = f"figures/{name}.png"
        atomic_write(self.out_dir / rel, lambda tmp: fig.savefig(tmp, dpi=110, bbox_inches="tight", format="png"))
        plt.close(fig)
        self.figures.append(rel)
        return f"![{name}]({rel})"

    def summary(self, paper: str, item: str, *, paper_value: str, ours: str, agrees: bool | None,
                reason: str = "", figures=()) -> None:
        """One row of the report's opening table: the section's verdict on ``item`` ("Table I",
        "Fig. 2") of ``paper`` (a key of :data:`contactlab.reproduce.papers.PAPERS`), computed from its
        own results. ``paper_value``: the paper's key figure or claim; ``ours``: the same from this run;
        ``agrees``: True (agree), False (differ) or None (not reproduced in this run); ``reason``: why
        they differ or why there is nothing to compare (required unless they agree); ``figures``: our
        figures (links from :meth:`figure`, or paths relative to the report) shown beside the row."""
        from .papers import PAPERS
        if paper not in PAPERS:
            raise ParamError(f"summary: unknown paper {paper!r}; papers: {', '.join(PAPERS)}")
        if agrees is not True and not reason:
            raise ParamError(f"summary {paper} {item}: a row that does not agree needs its reason")
        self.summaries.append({"paper": paper, "item": item, "paper_value": str(paper_value), "ours": str(ours),
                               "agrees": agrees, "reason": reason, "figures": [_link_target(f) for f in figures]})

    def summary_figure(self, paper: str, item: str, figure: str) -> None:
        """Show ``figure`` (a link from :meth:`figure` or a path relative to the report, e.g. a replay
        page) beside ``item`` of ``paper`` in the opening table, whichever section gives its verdict."""
        self.summaries.append({"paper": paper, "item": item, "kind": "figure", "figure": _link_target(figure)})

    def failed(self, reason: str = "") -> Failed:
        """A failed-row marker: put it where the number would go. Counted in the report header."""
        self.failures.append(reason)
        return Failed(reason)

    def warm_up(self, fn, *args, **kwargs):
        """Call ``fn`` once, untimed: numba compilation and cache loading happen here, not in a timing."""
        if self._clock is not None:
            self._clock.in_warm_up += 1
        try:
            return fn(*args, **kwargs)
        finally:
            if self._clock is not None:
                self._clock.in_warm_up -= 1

    def best_time(self, fn, *args, repeat: int = 3, **kwargs):
        """Warm up, then the best wall time (s) of ``repeat`` calls of ``fn`` and the last result."""
        out = self.warm_up(fn, *args, **kwargs)
        best = float("inf")
        for _ in range(max(1, repeat)):
            t0 = time.perf_counter()
            out = fn(*args, **kwargs)
            best = min(best, time.perf_counter() - t0)
        return best, out


def _link_target(figure: str) -> str:
    """``figures/x.png`` from ``![x](figures/x.png)`` (what :meth:`ReportContext.figure` returns) or a path."""
    m = re.search(r"\]\(([^)\s]+)\)", figure)
    return m.group(1) if m else figure


def sections() -> list:
    mods = [importlib.import_module(f"{__name__}.{m.name}")
            for m in pkgutil.iter_modules(__path__) if m.name.startswith("sec_")]
    return sorted(mods, key=lambda m: (m.ORDER, m.__name__))


def section_name(mod) -> str:
    """The short name of a section: its module name without the package and the ``sec_`` prefix."""
    return mod.__name__.rsplit(".", 1)[-1].removeprefix("sec_")


def select_sections(only: list[str] | None, mods: list | None = None) -> list:
    """Sections named by ``only``: each entry matches a section's short name (``sim``), module name
    (``sec_sim``) or title, case-insensitively, whole (then only those) or else as a substring. An entry that matches
    nothing is a :class:`~contactlab.errors.ParamError` listing the names."""
    mods = sections() if mods is None else mods
    if not only:
        return mods
    chosen = []
    for want in only:
        w = want.strip().lower()
        keys = [(section_name(m).lower(), m.__name__.rsplit(".", 1)[-1].lower(), m.TITLE.lower()) for m in mods]
        # a section's own name or title, whole, wins over words inside other titles ("sim" is the
        # simulation section, not every title that mentions simulations)
        hits = [m for m, k in zip(mods, keys) if w and w in k] or \
               [m for m, k in zip(mods, keys) if w and any(w in part for part in k)]
        if not hits:
            names = "; ".join(f"{section_name(m)} ({m.TITLE})" for m in mods)
            raise ParamError(f"--only {want!r} matches no report section; sections: {names}")
        chosen += [m for m in hits if m not in chosen]
    return [m for m in mods if m in chosen]


def markdown_table(header: list[str], rows: list[list]) -> str:
    """A Markdown table; floats printed with 4 significant digits, :class:`Failed` as **FAILED**."""
    def cell(v):
        if isinstance(v, float):
            return f"{v:.4g}"
        return str(v)
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(cell(v) for v in r) + " |" for r in rows]
    return "\n".join(out)


def _utc(t: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(t))


def _commit() -> str:
    root = Path(__file__).resolve().parents[3]
    try:
        sha = subprocess.run(["git", "-C", str(root), "rev-parse", "--short=12", "HEAD"], capture_output=True,
                             text=True, timeout=10).stdout.strip()
        if not sha:
            return "unknown (not a git checkout)"
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
        return sha + (" (with uncommitted changes)" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return "unknown (git not available)"


def _cpu() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _load() -> str:
    try:
        return " / ".join(f"{x:.2f}" for x in os.getloadavg()) + " (1/5/15 min)"
    except OSError:
        return "unknown"


def provenance() -> dict:
    """Where and with what a report was made: commit, versions, CPU, cores, load."""
    from importlib.metadata import PackageNotFoundError, version

    def ver(pkg):
        try:
            return version(pkg)
        except PackageNotFoundError:
            return "not installed"

    import contactlab
    return {"commit": _commit(), "contactlab": contactlab.__version__, "python": platform.python_version(),
            **{p: ver(p) for p in ("numpy", "scipy", "numba", "coal", "highspy")},
            "cpu": _cpu(), "cores": os.cpu_count(), "platform": platform.platform()}


#: below this fraction of kernels cached on disk, the whole report compiles them first on every core
COLD_CACHE_FRACTION = 0.5


def _compile_ahead_if_cold(bar) -> str:
    """On a cold numba cache (a fresh checkout, or an edit of a module most kernels import), compile
    every solver's and model's kernels first, on every core (``contactlab warmup``); the sections then
    load machine code instead of compiling it one kernel after another on one core. A line for the
    report's provenance."""
    from ..kernels._jit import cached_fraction
    from ..warmup import warm_up
    fraction = cached_fraction()
    if fraction >= COLD_CACHE_FRACTION:
        return f"{fraction:.0%} of the kernels cached at start"
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    task = bar.add_task(f"Compiling kernels on {cores} cores (cold cache)", total=None, label="")
    t0 = time.perf_counter()
    results = warm_up(progress=lambda label, s, done, total: bar.update(task, completed=done, total=total, label=label))
    errors = [f"{label}: {err}" for label, _, err in results if err]
    bar.update(task, label=f"done in {time.perf_counter() - t0:.1f} s")
    return (f"{fraction:.0%} of the kernels cached at start: compiled ahead on {cores} cores in "
            f"{time.perf_counter() - t0:.0f} s" + (f" ({len(errors)} warm-up task(s) failed: {errors[0]})" if errors else ""))


def _header(status: str, prov: dict, started: float, ended: float | None, load0: str, load1: str | None,
            quick: bool, scope: str) -> str:
    rows = [f"**Status: {status}**", "", "Provenance of the last run:", "",
            f"- scope: {scope}{' (quick mode)' if quick else ''}",
            f"- commit: {prov['commit']}",
            "- versions: " + ", ".join(f"{k} {prov[k]}" for k in
                                       ("contactlab", "python", "numpy", "scipy", "numba", "coal", "highspy")),
            f"- machine: {prov['cpu']}, {prov['cores']} cores, {prov['platform']}",
            f"- load at start: {load0}" + (f"; at end: {load1}" if load1 else ""),
            *([f"- numba kernels: {prov['kernels']}"] if prov.get("kernels") else []),
            *([f"- sections: {prov['sections']}"] if prov.get("sections") else []),
            f"- started {_utc(started)}" + (f", ended {_utc(ended)}" if ended else ", not finished")]
    return "\n".join(rows)


def _section_block(mod, body: str, meta: str, summaries=()) -> str:
    from .papers import encode
    name = section_name(mod)
    rows = "".join(encode(r) + "\n" for r in summaries)
    return (f"{_BEGIN.format(name)}\n<a id=\"sec-{name}\"></a>\n\n## {mod.TITLE}\n\n{body.strip()}\n\n{meta}\n"
            f"{rows}{_END.format(name)}\n")


def _existing_blocks(path: Path) -> dict[str, str]:
    if not path.exists():
        return {}
    return {m.group(1): m.group(0) if m.group(0).endswith("\n") else m.group(0) + "\n"
            for m in _BLOCK.finditer(path.read_text())}


def run_report(out_dir: Path, *, quick: bool = False, only: list[str] | None = None,
               progress: bool = True, jobs: int = 1) -> Path:
    """Run every section (or those named by ``only``, see :func:`select_sections`) and write
    ``out_dir/report.md``. With ``only`` the other sections' blocks of an existing report are kept.

    ``jobs`` sections run at a time, each in its own worker process (1: one after another in this
    process). A section whose module sets ``ALONE = True`` (one that starts worker processes of its
    own, or measures the machine as a whole) runs by itself in this process after the others.
    Timed comparisons inside a section are side by side within that section, so they hold whatever
    runs beside it; the report's provenance says how many sections ran at a time.

    The report is rewritten after every section (partial results survive a crash). On
    KeyboardInterrupt it is marked INCOMPLETE, naming the interrupted section(s), and the interrupt
    propagates. Raises :class:`SectionsFailed` (after writing) when a section raised or reported
    failed rows.

    Kernels compile at their first call here (``kernels._jit.compile_always``): the report's timed
    rows measure compiled code, after an untimed warm-up call, never interpreted first calls.
    """
    if not (isinstance(jobs, int) and not isinstance(jobs, bool) and jobs >= 1):
        raise ParamError(f"jobs must be a positive whole number of sections run at a time, got {jobs!r}")
    from ..kernels._jit import compile_always
    with compile_always():
        return _run_report(out_dir, quick=quick, only=only, progress=progress, jobs=jobs)


@dataclass
class _SectionRun:
    """What one section left for the report: its Markdown body and verdict rows, its failed rows,
    its wall-clock span and the numba JIT time that fell outside its warm-ups."""
    name: str
    body: str
    raised: bool
    failures: list[str]
    summaries: list[dict]
    started: float
    ended: float
    seconds: float
    jit_outside: float
    jit_where: list

    @property
    def label(self) -> str:
        return "FAILED" if self.raised else f"done in {self.seconds:.1f} s"


def _run_section(mod, out_dir: Path, quick: bool, advance: Callable[[str], None]) -> _SectionRun:
    """Run the section ``mod`` (a ``sec_*`` module) in this process."""
    clock = _CompileClock().install()

    def unit(label):
        clock.label = label
        advance(label)

    ctx = ReportContext(Path(out_dir), quick, advance=unit, _clock=clock)
    t0, w0 = time.perf_counter(), time.time()
    raised = False
    try:
        body = mod.run(ctx)
    except Exception:  # one broken section must not lose the others
        raised = True
        body = _RAISED + "\n\n```\n" + traceback.format_exc() + "```"
    finally:
        clock.uninstall()
    worst = sorted(clock.where.items(), key=lambda kv: -kv[1])[:3]
    return _SectionRun(section_name(mod), body, raised, list(ctx.failures), list(ctx.summaries), w0, time.time(),
                       time.perf_counter() - t0, clock.outside, worst)


def _run_section_in_worker(module: str, out_dir: Path, quick: bool, queue) -> _SectionRun:
    """:func:`_run_section` in a worker process: kernels compiled at first call as in the parent,
    BLAS on the CLI's thread count, progress labels sent to the parent through ``queue``."""
    from ..blas import blas_threads, default_threads
    from ..kernels._jit import compile_always
    name = module.rsplit(".", 1)[-1].removeprefix("sec_")
    with blas_threads(default_threads()), compile_always():
        return _run_section(importlib.import_module(module), out_dir, quick, lambda label: queue.put((name, label)))


def _section_meta(run: _SectionRun, commit: str, quick: bool) -> str:
    leak = ""
    if run.jit_outside > 0.01:
        leak = (f" Numba JIT time (compile or cache load) outside warm-ups: {run.jit_outside:.2f} s (in: "
                + ", ".join(f"{'the first unit' if w is None else f'the unit after {w!r}'} {s:.2f} s"
                            for w, s in run.jit_where)
                + "); timings in those units may include compilation.")
    return (f"<sub>Section `{run.name}` ran {_utc(run.started)} to {_utc(run.ended)} "
            f"({run.seconds:.1f} s) at commit {commit}{', quick mode' if quick else ''}.{leak}</sub>")


def _run_report(out_dir: Path, *, quick: bool, only: list[str] | None, progress: bool, jobs: int) -> Path:
    from ..viz.report_html import TOC
    from .papers import summary_table
    out_dir = Path(out_dir)
    all_mods = sections()
    mods = select_sections(only, all_mods)
    path = out_dir / "report.md"
    blocks = _existing_blocks(path) if only else {}
    prov = provenance()
    started, load0 = time.time(), _load()
    scope = "all sections" if not only else "--only " + ", ".join(section_name(m) for m in mods)
    pooled = [m for m in mods if not getattr(m, "ALONE", False)] if jobs > 1 else []
    pooled = pooled if len(pooled) > 1 else []
    alone = [m for m in mods if m not in pooled]
    if len(pooled) > 1:
        prov["sections"] = (f"{min(jobs, len(pooled))} at a time, each in its own process"
                            + (f" ({', '.join(section_name(m) for m in alone)} alone after them)" if alone else ""))
    failed: list[str] = []
    failed_rows: dict[str, int] = {}
    running: list[str] = []
    done: list[str] = []

    def write(status: str, ended: float | None = None):
        missing = [section_name(m) for m in all_mods if section_name(m) not in blocks]
        if missing and not status.startswith("INCOMPLETE"):
            status += f" (sections never run in this report: {', '.join(missing)})"
        head = _header(status, prov, started, ended, load0, _load() if ended else None, quick, scope)
        status_line, provenance_lines = head.split("\n", 1)
        body = "".join(blocks[section_name(m)] + "\n" for m in all_mods if section_name(m) in blocks)
        table = summary_table(blocks, {section_name(m): m.TITLE for m in all_mods})
        text = f"{HEADER}\n\n{status_line}\n\n{table}\n\n{TOC}\n{provenance_lines}\n\n{body}"
        atomic_write(path, lambda tmp: Path(tmp).write_text(text))
        from ..viz.report_html import write_report_html
        write_report_html(path)   # report.html beside it: one page, figures embedded (docs/replay.md)

    def finish(run: _SectionRun, mod, bar, task):
        done.append(run.name)
        if run.raised:
            failed.append(mod.__name__.rsplit(".", 1)[-1])
        body = run.body
        if run.failures:
            failed_rows[run.name] = len(run.failures)
            body = f"**{len(run.failures)} {_ROWS}**\n\n" + body
        bar.update(task, total=1, completed=1, label=run.label)
        blocks[run.name] = _section_block(mod, body, _section_meta(run, prov["commit"], quick), run.summaries)

    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
    console = Console(stderr=True, quiet=not progress)
    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), TextColumn("{task.fields[label]}"),
                  TimeElapsedColumn(), console=console, disable=not progress) as bar:
        if not only:
            prov["kernels"] = _compile_ahead_if_cold(bar)
        try:
            if pooled:
                _run_pooled(pooled, out_dir, quick, jobs, bar, running, done, write, finish)
            for mod in alone:
                running[:] = [section_name(mod)]
                write(f"INCOMPLETE: running section {mods.index(mod) + 1} of {len(mods)} ({section_name(mod)})")
                task = bar.add_task(mod.TITLE, total=None, label="")
                run = _run_section(mod, out_dir, quick,
                                   lambda label, t=task: bar.update(t, advance=1, label=label))
                running.clear()
                finish(run, mod, bar, task)
        except KeyboardInterrupt:
            not_run = [section_name(m) for m in mods if section_name(m) not in running + done]
            write(f"INCOMPLETE: interrupted (Ctrl-C) during section {', '.join(running) if running else '?'}"
                  + (f"; not run: {', '.join(not_run)}" if not_run else ""), time.time())
            raise
    ran = {section_name(m) for m in mods}
    kept_raised = [k for k, b in blocks.items() if k not in ran and _RAISED in b]
    kept_rows = [k for k, b in blocks.items() if k not in ran and _ROWS in b]
    if failed or failed_rows or kept_raised or kept_rows:
        parts = ([f"{len(failed)} section(s) raised: {', '.join(failed)}"] if failed else []) + \
                (["failed rows: " + ", ".join(f"{k} {v}" for k, v in failed_rows.items())] if failed_rows else []) + \
                ([f"kept from an earlier run: {', '.join(sorted(set(kept_raised + kept_rows)))} with failures"]
                 if kept_raised or kept_rows else [])
        write("FAILED: " + "; ".join(parts), time.time())
        if failed or failed_rows:
            raise SectionsFailed(path, failed, failed_rows)
        return path
    write("COMPLETE", time.time())
    return path


def _run_pooled(mods, out_dir, quick, jobs, bar, running, done, write, finish) -> None:
    """Run ``mods`` ``jobs`` at a time in worker processes (loky, as joblib's sweeps), started in
    report order; progress labels come back through a manager queue, drained by a thread."""
    import multiprocessing
    import threading

    from joblib import Parallel, delayed

    from ..quiet import loky_worker_replacements_quiet
    tasks = {section_name(m): bar.add_task(m.TITLE, total=None, label="waiting") for m in mods}
    by_name = {section_name(m): m for m in mods}
    order = list(mods)
    with multiprocessing.Manager() as manager:
        queue = manager.Queue()

        def drain():
            while True:
                item = queue.get()
                if item is None:
                    return
                name, label = item
                if name not in running and name not in done:
                    running.append(name)
                bar.update(tasks[name], advance=1, label=label)

        reader = threading.Thread(target=drain, daemon=True)
        reader.start()
        running[:] = [section_name(m) for m in order[:jobs]]
        write(f"INCOMPLETE: running {len(mods)} sections, {min(jobs, len(mods))} at a time")
        try:
            runner = Parallel(n_jobs=min(jobs, len(mods)), backend="loky", return_as="generator_unordered")
            with loky_worker_replacements_quiet():
                for run in runner(delayed(_run_section_in_worker)(m.__name__, out_dir, quick, queue) for m in order):
                    if run.name in running:
                        running.remove(run.name)
                    finish(run, by_name[run.name], bar, tasks[run.name])
                    write(f"INCOMPLETE: {len(done)} of {len(tasks)} sections done"
                          f"{' (running: ' + ', '.join(running) + ')' if running else ''}")
        finally:
            queue.put(None)
            reader.join(timeout=5)


class SectionsFailed(RuntimeError):
    """Some report sections raised or reported failed rows; the report was still written."""

    def __init__(self, path: Path, failed: list[str], failed_rows: dict | None = None):
        failed_rows = failed_rows or {}
        what = []
        if failed:
            what.append(f"{len(failed)} section(s) failed: {', '.join(failed)}")
        if failed_rows:
            what.append("failed rows in " + ", ".join(f"{k} ({v})" for k, v in failed_rows.items()))
        super().__init__("; ".join(what) + f"; see {path}")
        self.path, self.failed, self.failed_rows = path, failed, failed_rows

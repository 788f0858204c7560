"""Parameter sweeps on existing engines: joblib (loky processes) on one machine, Dask distributed
on a cluster, one code path (issue 17; docs/batch.md).

``sweep(task, grid)`` runs ``task`` once per row of ``grid`` and returns a ``pandas.DataFrame``
with one row per run: the parameters, ``repeat`` and a ``seed`` derived from the row (the same on
any engine, in any order), ``status`` (``ok``, ``error``, ``timeout``, or the task's own status
such as ``SOLVED``), ``error`` (the exception, for failed rows), every metric the task returns,
``wall_s``, ``host``, ``pid`` and ``version``. With ``out=`` the rows are written to Parquet
atomically as they arrive (the file is replaced by a complete new one at most every
``flush_s`` seconds and at the end), and a rerun with the same ``out`` skips the rows already in
the file: an interrupted sweep resumes.

A task is a named task (:data:`TASKS`: ``simulate``, ``solve``, ``quasistatic`` and ``plan``) or
any picklable function of keyword parameters returning a flat dict. Named tasks receive the row's
``seed`` when they take one; a function receives it when it has a ``seed`` parameter.
"""
from __future__ import annotations

import hashlib
import importlib.util
import inspect
import itertools
import json
import os
import signal
import socket
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable

from .errors import ParamError

FIXED_COLUMNS = ("row", "row_id", "task", "repeat", "seed", "status", "error", "wall_s", "host", "pid", "version")


# ----------------------------------------------------------------------------------- named tasks
def _flat(d: dict, prefix: str = "") -> dict:
    """Nested dicts as dotted keys; lists and other non-scalars as JSON text (Parquet-friendly)."""
    out = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(_flat(v, key + "."))
        elif v is None or isinstance(v, (bool, int, float, str)):
            out[key] = v
        elif hasattr(v, "item") and getattr(v, "ndim", 1) == 0:
            out[key] = v.item()
        else:
            out[key] = json.dumps(v, default=lambda x: x.tolist() if hasattr(x, "tolist") else str(x))
    return out


SIM_OPTIONS = ("model", "method", "duration", "dt")


def task_simulate(scene: str, *, model: str = "stewart-trinkle", method: str | None = None, duration: float = 1.0,
                  dt: float | None = None, seed: int | None = None, **scene_params) -> dict:
    """One simulation: the metrics of ``contactlab simulate --json`` (``steps``, ``metrics.*``, the
    scene's own summary, ``error`` when it stopped early). Scene parameters are the other keys; a
    scene with a ``seed`` parameter gets the row's seed unless the grid sets it."""
    from .scenarios import SCENES, make_scene, scene_parameters
    from .sim import Simulator
    if seed is not None and scene in SCENES and "seed" in scene_parameters(scene) and "seed" not in scene_params:
        scene_params["seed"] = seed
    sc = make_scene(scene, **scene_params)
    sim = Simulator(sc, model, method, dt=dt, controllers=getattr(sc, "controllers", ()))
    traj = sim.run(float(duration))
    res = {"method": sim.method, "steps": len(traj.records), "metrics": traj.metrics()}
    if callable(getattr(sc, "summary", None)):
        res.update(sc.summary(sim, traj))
    if traj.error:
        res["status"] = "error"
        res["error"] = traj.error
    return _flat(res)


def task_solve(file: str, *, method: str = "auto", seed: int | None = None, **options) -> dict:
    """One problem file solved by ``method`` (solver options are the other keys): the record of
    ``contactlab solve --json`` without z and w; ``status`` is the solver's (``SOLVED``, ...)."""
    import contactlab as cl

    from .solution import status_text
    problem = cl.load(Path(file))
    sol = cl.solve(problem, method=method, **options)
    return {"problem": type(problem).__name__, "n": int(problem.n), "method_used": sol.method,
            "status": status_text(sol.status), "success": sol.success, "iterations": sol.iterations,
            "pivots": sol.pivots, "residual": sol.residual, "complementarity": sol.complementarity,
            "infeasibility": sol.infeasibility, "time_s": sol.time_s}


def task_quasistatic(case: str, *, method: str = "bilinear-lp", seed: int = 0, contacts: int = 10) -> dict:
    """One quasistatic case: the record of ``contactlab quasistatic --json``."""
    from .scenarios.quasistatic_data import run_case
    rec = run_case(case, method, int(seed), int(contacts))
    rec["time_s"] = rec.pop("_time")
    for k in [k for k in rec if k.startswith("_")]:
        rec.pop(k)
    rec.pop("case", None)
    rec["method_used"] = rec.pop("method")
    return _flat(rec)


def task_plan(structure: str, *, test: str = "reuse", seed: int | None = None, max_nodes: int = 200_000) -> dict:
    """One disassembly plan (:func:`contactlab.planning.plan`): the ``contactlab plan --json`` record."""
    from .planning import get_structure, plan
    res = plan(get_structure(structure, seed=seed if structure.startswith("random") else None), test,
               max_nodes=int(max_nodes)).as_json()
    res.pop("structure", None)
    res.pop("test", None)
    return _flat(res)


TASKS: dict[str, Callable[..., dict]] = {"simulate": task_simulate, "solve": task_solve,
                                         "quasistatic": task_quasistatic}
if importlib.util.find_spec(f"{__package__}.planning") is not None:   # the planning package (issue 14)
    TASKS["plan"] = task_plan

# the positional argument of each named task on the command line (contactlab sweep TASK ARG)
TASK_ARG = {"simulate": "scene", "solve": "file", "quasistatic": "case", "plan": "structure"}


# ----------------------------------------------------------------------------------- the grid
def expand_grid(grid, repeat: int = 1) -> list[dict]:
    """``{"a": [1, 2], "b": ["x"]}`` -> the Cartesian product in key order (last key fastest), or a
    list of dicts as given; each repeated ``repeat`` times (``repeat`` column 0..K-1)."""
    if isinstance(grid, dict):
        keys = list(grid)
        for k in keys:
            if isinstance(grid[k], (str, bytes)) or not hasattr(grid[k], "__iter__"):
                raise ParamError(f"grid[{k!r}] must be a list of values, got {grid[k]!r}")
        combos = [dict(zip(keys, vals)) for vals in itertools.product(*(list(grid[k]) for k in keys))]
    elif isinstance(grid, (list, tuple)) and all(isinstance(g, dict) for g in grid):
        combos = [dict(g) for g in grid]
    else:
        raise ParamError("grid must be a dict of parameter -> list of values, or a list of dicts")
    if not int(repeat) >= 1:
        raise ParamError(f"repeat must be >= 1, got {repeat}")
    return [{**c, "repeat": r} for c in combos for r in range(int(repeat))]


def row_key(task_name: str, params: dict) -> str:
    """A stable id of a row: task name, parameters (sorted) and repeat index."""
    text = json.dumps({"task": task_name, "params": {k: params[k] for k in sorted(params)}}, sort_keys=True,
                      default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def row_seed(seed: int, key: str) -> int:
    """The row's seed: a function of the sweep seed and the row id only (engine and order free)."""
    import numpy as np
    return int(np.random.SeedSequence([int(seed), int(key[:15], 16)]).generate_state(1, dtype=np.uint32)[0])


# ----------------------------------------------------------------------------------- one row
class RowTimeout(Exception):
    """A row ran past its time limit."""


class _Deadline:
    """Raise :class:`RowTimeout` in the running task after ``seconds``: SIGALRM in a main thread
    (serial runs, loky workers), an asynchronous exception in a worker thread (Dask). Either lands
    between Python bytecodes: a hang inside one compiled call ends when that call returns."""

    def __init__(self, seconds: float | None):
        self.seconds = seconds
        self.timer = None
        self.old = None
        self.lock = threading.Lock()
        self.done = False

    def __enter__(self):
        if not self.seconds:
            return self
        if threading.current_thread() is threading.main_thread():
            def handler(signum, frame):
                raise RowTimeout(f"time limit of {self.seconds:g} s reached")
            self.old = signal.signal(signal.SIGALRM, handler)
            signal.setitimer(signal.ITIMER_REAL, self.seconds)
        else:
            import ctypes
            tid = threading.get_ident()

            def fire():
                with self.lock:   # never after __exit__: the exception lands inside the task's try block
                    if not self.done:
                        ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(tid),
                                                                   ctypes.py_object(RowTimeout))
            self.timer = threading.Timer(self.seconds, fire)
            self.timer.daemon = True
            self.timer.start()
        return self

    def __exit__(self, *exc):
        if self.old is not None:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, self.old)
        if self.timer is not None:
            with self.lock:
                self.done = True
            self.timer.cancel()
        return False


def _resolve(task):
    if isinstance(task, str):
        if task not in TASKS:
            raise ParamError(f"unknown task {task!r}; named tasks: {', '.join(TASKS)} (or pass a function)")
        return TASKS[task]
    if not callable(task):
        raise ParamError(f"task must be a named task ({', '.join(TASKS)}) or a function, got {task!r}")
    return task


def run_row(task, params: dict, seed: int, timeout: float | None = None) -> dict:
    """Run one row (in a worker): never raises; a failure is a row with ``status`` and ``error``."""
    from . import __version__
    t0 = time.perf_counter()
    out: dict[str, Any] = {}
    try:
        fn = _resolve(task)
        kwargs = {k: v for k, v in params.items() if k != "repeat"}
        if "seed" not in kwargs and "seed" in inspect.signature(fn).parameters:
            kwargs["seed"] = seed
        from .kernels._jit import compile_always
        with _Deadline(timeout), compile_always():      # a sweep's rows time compiled kernels
            res = fn(**kwargs)
        if not isinstance(res, dict):
            raise TypeError(f"the task returned {type(res).__name__}; it must return a flat dict of results")
        out = _flat(res)
        out.setdefault("status", "ok")
        out.setdefault("error", None)
    except RowTimeout as exc:
        out = {"status": "timeout", "error": str(exc) or f"time limit of {timeout:g} s reached"}
    except Exception as exc:  # noqa: BLE001 - a raising run becomes an error row, never a lost sweep
        out = {"status": "error", "error": f"{type(exc).__name__}: {exc}"}
    out.update(wall_s=time.perf_counter() - t0, host=socket.gethostname(), pid=os.getpid(), version=__version__)
    return out


def _run_spec(spec):
    """Module-level (picklable) entry point for the engines: spec = (row, key, task, params, seed, timeout)."""
    row, key, task, params, seed, timeout = spec
    res = run_row(task, params, seed, timeout)
    return row, key, res


# ----------------------------------------------------------------------------------- output
class _ParquetSink:
    """Rows kept in memory and written as one complete Parquet file, atomically, at most every
    ``flush_s`` seconds (and at :meth:`close`)."""

    def __init__(self, path, flush_s: float = 1.0):
        self.path = None if path is None else Path(path)
        self.flush_s = flush_s
        self.rows: list[dict] = []
        self.last = 0.0
        self.dirty = False

    def load(self) -> list[dict]:
        if self.path is None or not self.path.exists():
            return []
        import pyarrow.parquet as pq
        if self.path.is_dir():
            raise ParamError(f"--out {self.path} is a directory; give a file name such as results.parquet")
        try:
            table = pq.read_table(self.path)
        except Exception as exc:  # noqa: BLE001
            raise ParamError(f"{self.path} exists but is not a readable Parquet file ({exc}); "
                             "move it away or choose another --out") from None
        self.rows = table.to_pylist()
        return self.rows

    def add(self, row: dict) -> None:
        self.rows.append(row)
        self.dirty = True
        if time.monotonic() - self.last >= self.flush_s:
            self.flush()

    def frame(self):
        import pandas as pd
        cols = list(FIXED_COLUMNS)
        extra = []
        for r in self.rows:
            for k in r:
                if k not in cols and k not in extra:
                    extra.append(k)
        df = pd.DataFrame(self.rows, columns=cols + extra)
        if len(df):
            df = df.sort_values("row", kind="stable").reset_index(drop=True)
        return df

    def flush(self) -> None:
        self.last = time.monotonic()
        if self.path is None or not self.dirty:
            return
        from .files import atomic_write
        df = _parquet_safe(self.frame())
        atomic_write(self.path, lambda tmp: df.to_parquet(tmp, engine="pyarrow", index=False))
        self.dirty = False


def _parquet_safe(df):
    """Columns holding values of several Python types (a grid mixing numbers and words) as text."""
    for col in df.columns:
        if df[col].dtype == object:
            kinds = {type(v) for v in df[col] if v is not None and v == v}
            if len(kinds) > 1 and not kinds <= {int, float}:
                df[col] = [None if v is None or v != v else str(v) for v in df[col]]
            elif kinds == {int, float} or kinds == {float, int}:
                df[col] = df[col].astype(float)
    return df


# ----------------------------------------------------------------------------------- engines
def _serial(specs):
    for s in specs:
        yield _run_spec(s)


def _died(spec, exc) -> tuple:
    """The failed row of a run whose worker process died (a crash such as SIGSEGV in compiled code)."""
    from . import __version__
    return spec[0], spec[1], {"status": "error", "wall_s": float("nan"), "host": socket.gethostname(),
                              "pid": None, "version": __version__,
                              "error": f"the worker process died running this row ({type(exc).__name__}: {exc})"}


def _joblib(specs, workers: int):
    """Rows on ``workers`` loky processes (joblib's executor), at most 2 per worker in flight.

    A worker that dies (SIGSEGV, abort, out of memory) breaks the pool, and every row in flight
    fails with it; those rows are rerun one at a time, alone in a fresh pool, so the row that
    crashes alone is the one recorded as failed (with the reason) and the others and the rest of
    the sweep finish (issue 40)."""
    from concurrent.futures import FIRST_COMPLETED, wait
    from concurrent.futures.process import BrokenProcessPool

    from joblib.externals.loky import get_reusable_executor
    from joblib.externals.loky.process_executor import TerminatedWorkerError
    queue = list(reversed(specs))
    alone: list = []         # rows in flight when a worker died: each rerun with nothing beside it
    running: dict = {}
    try:
        while queue or running or alone:
            if alone and not running:
                s = alone.pop()
                running[get_reusable_executor(max_workers=workers).submit(_run_spec, s)] = (s, True)
            while queue and not alone and len(running) < 2 * workers:
                s = queue.pop()
                running[get_reusable_executor(max_workers=workers).submit(_run_spec, s)] = (s, False)
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for fut in done:
                s, was_alone = running.pop(fut)
                try:
                    out = fut.result()
                except (TerminatedWorkerError, BrokenProcessPool) as exc:
                    if not was_alone:
                        alone.append(s)
                        continue
                    out = _died(s, exc)
                yield out
    finally:
        if running:    # interrupted: stop the rows still running
            get_reusable_executor(max_workers=workers).shutdown(wait=False, kill_workers=True)


def _dask(specs, scheduler):
    from dask.distributed import Client, as_completed
    own = not hasattr(scheduler, "submit")
    if own:
        try:
            client = Client(scheduler, timeout="20s")
        except (OSError, TimeoutError, ValueError) as exc:
            raise ParamError(f"cannot reach the Dask scheduler {scheduler!r} ({type(exc).__name__}: {exc}); "
                             "start one with 'dask scheduler' (docs/batch.md)") from None
    else:
        client = scheduler
    try:
        token = os.urandom(4).hex()   # one sweep's keys never meet another's on a shared cluster
        keys = [f"contactlab-row-{token}-{s[0]}" for s in specs]
        spec_of = dict(zip(keys, specs))
        futures = client.map(_run_spec, specs, pure=False, key=keys)
        for fut in as_completed(futures):
            try:
                out = fut.result()
            except Exception as exc:  # noqa: BLE001 - e.g. KilledWorker after repeated worker deaths: a row
                spec = spec_of[fut.key]
                out = (spec[0], spec[1], {"status": "error", "error": f"{type(exc).__name__}: {exc}"})
            yield out
            fut.release()
    finally:
        if own:
            client.close()


def _progress(enabled: bool, total: int, done0: int):
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
    con = Console(stderr=True)
    return Progress(TextColumn("sweep"), BarColumn(), MofNCompleteColumn(),
                    TextColumn("failed {task.fields[failed]}  {task.fields[rate]}"), TimeElapsedColumn(),
                    console=con, disable=not (enabled and con.is_terminal), transient=False)


# ----------------------------------------------------------------------------------- sweep
def sweep(task, grid, *, workers: int | None = None, scheduler=None, out=None, seed: int = 0,
          progress: bool = True, repeat: int = 1, timeout: float | None = None, flush_s: float = 1.0):
    """Run ``task`` over ``grid``; return a ``pandas.DataFrame`` with one row per run.

    ``task``: a name in :data:`TASKS` or a picklable function of keyword parameters returning a
    flat dict. ``grid``: dict of parameter -> list of values (Cartesian product) or a list of
    dicts; ``repeat`` runs each ``repeat`` times (distinct seeds). ``workers=N``: N local processes
    through joblib (loky); ``scheduler="tcp://HOST:PORT"`` or a ``dask.distributed.Client``: a
    Dask cluster; neither (or ``workers=1``): serially in this process. ``out``: a Parquet file,
    written atomically as rows finish and read back on a rerun (rows already there are skipped).
    ``seed``: the sweep seed from which every row's seed is derived. ``timeout``: seconds per row,
    after which the row is a ``timeout`` row. On KeyboardInterrupt the rows so far are written and
    the interrupt propagates. ``out`` is checked before any row runs and locked for the sweep
    (problems/io.py ``output_lock``): a second sweep on it waits, then adds its missing rows. With
    workers, a row whose process dies (a crash) is a failed row; the sweep goes on.
    """
    if workers is not None and scheduler is not None:
        raise ParamError("give workers= (local processes) or scheduler= (Dask), not both")
    if workers is not None and not int(workers) >= 1:
        raise ParamError(f"workers must be >= 1, got {workers}")
    if timeout is not None and not timeout > 0:
        raise ParamError(f"timeout must be > 0 seconds, got {timeout}")
    fn = _resolve(task)
    if out is None:
        return _sweep(task, fn, grid, workers, scheduler, None, seed, progress, repeat, timeout, flush_s)
    from .files import check_output, output_lock
    check_output(out, "--out")
    # one sweep per output at a time: a second waits, then resumes from the first's rows (merged)
    with output_lock(out, on_wait=lambda m: print(f"note: {m}", file=sys.stderr, flush=True)):
        return _sweep(task, fn, grid, workers, scheduler, out, seed, progress, repeat, timeout, flush_s)


def _sweep(task, fn, grid, workers, scheduler, out, seed, progress, repeat, timeout, flush_s):
    name = task if isinstance(task, str) else f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', fn)}"
    rows = expand_grid(grid, repeat)
    sink = _ParquetSink(out, flush_s)
    done = {r.get("row_id") for r in sink.load()}
    keys = [row_key(name, params) for params in rows]
    position = {k: i for i, k in enumerate(keys)}
    for r in sink.rows:   # rows kept from an earlier run: their place in this grid
        r["row"] = position.get(r.get("row_id"), r.get("row"))
    specs = [(i, key, task, params, row_seed(seed, key), timeout)
             for i, (key, params) in enumerate(zip(keys, rows)) if key not in done]
    if scheduler is not None:
        engine = _dask(specs, scheduler)
    elif workers is not None and int(workers) > 1 and len(specs) > 1:
        engine = _joblib(specs, int(workers))
    else:
        engine = _serial(specs)
    by_row = {s[0]: s for s in specs}
    failed = sum(1 for r in sink.rows if r.get("status") in ("error", "timeout"))
    t0 = time.perf_counter()
    with _progress(progress, len(rows), len(rows) - len(specs)) as bar:
        bar_task = bar.add_task("sweep", total=len(rows), completed=len(rows) - len(specs), failed=failed, rate="")
        n = 0
        try:
            for row, key, res in engine:
                params = by_row[row][3]
                record = {"row": row, "row_id": key, "task": name, "repeat": params.get("repeat", 0),
                          "seed": by_row[row][4]}
                for k, v in params.items():
                    if k != "repeat":
                        record[k] = v
                for k, v in res.items():
                    record[k if k not in record or k in FIXED_COLUMNS else f"result.{k}"] = v
                sink.add(record)
                n += 1
                failed += record.get("status") in ("error", "timeout")
                rate = n / max(time.perf_counter() - t0, 1e-9)
                bar.update(bar_task, advance=1, failed=failed, rate=f"{rate:.3g} rows/s")
        finally:
            engine.close() if hasattr(engine, "close") else None
            sink.flush()
    return sink.frame()


def failed_count(df) -> int:
    return int(df["status"].isin(["error", "timeout"]).sum()) if len(df) else 0


__all__ = ["sweep", "TASKS", "expand_grid", "row_key", "row_seed", "run_row", "RowTimeout", "failed_count"]

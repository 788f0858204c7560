"""``contactlab sweep TASK [ARG] --grid KEY=V1,V2 ... --out RESULTS.parquet``: a parameter sweep on
joblib (``--workers N``) or a Dask cluster (``--scheduler tcp://HOST:PORT``); see docs/batch.md."""
from __future__ import annotations

import json
import time
from pathlib import Path

import typer

PROBLEM_SUFFIXES = (".npz", ".dat", ".hdf5", ".h5")


def parse_grid(items: list[str] | None) -> dict:
    """``["mu=0.1,0.2", "material=plastic,rubber"]`` -> ``{"mu": [0.1, 0.2], "material": [...]}``."""
    from ..errors import ParamError
    from .solve import parse_value
    grid = {}
    for item in items or []:
        key, sep, values = item.partition("=")
        key = key.strip()
        if not sep or not key or not values.strip():
            raise ParamError(f"--grid takes KEY=V1,V2,..., got {item!r}")
        if key in grid:
            raise ParamError(f"--grid {key} given twice; list all its values in one --grid {key}=V1,V2")
        grid[key] = [parse_value(v.strip()) for v in values.split(",")]
    return grid


def _task_and_grid(task: str, arg: str | None, grid: dict):
    from ..batch import TASK_ARG, TASKS
    from ..errors import ParamError
    if task in TASKS:
        if arg is None:
            raise ParamError(f"sweep {task} needs its {TASK_ARG[task]}: contactlab sweep {task} "
                             f"{TASK_ARG[task].upper()} --grid ...")
        if task == "solve" and Path(arg).is_dir():
            files = sorted(str(p) for p in Path(arg).iterdir() if p.suffix.lower() in PROBLEM_SUFFIXES)
            if not files:
                raise ParamError(f"{arg} holds no problem files ({', '.join(PROBLEM_SUFFIXES)})")
            return task, {"file": files, **grid}          # one problem file per row
        return task, {TASK_ARG[task]: [arg], **grid}
    if ":" in task:  # module:function, importable on every worker
        import importlib
        mod, _, fn = task.partition(":")
        try:
            func = getattr(importlib.import_module(mod), fn)
        except (ImportError, AttributeError) as exc:
            raise ParamError(f"cannot import task {task!r} ({exc})") from None
        if arg is not None:
            raise ParamError("a module:function task takes its parameters from --grid only")
        return func, grid
    raise ParamError(f"unknown task {task!r}; named tasks: {', '.join(TASKS)}, or module:function")


def register(app: typer.Typer) -> None:
    @app.command()
    def sweep(task: str = typer.Argument(..., help="simulate, solve, quasistatic, plan, or module:function"),
              arg: str = typer.Argument(None, help="the task's subject: scene (simulate), problem file or "
                                                   "directory (solve: one file per row), case (quasistatic), "
                                                   "structure (plan)"),
              grid: list[str] = typer.Option(None, "--grid", help="KEY=V1,V2,... (repeatable; Cartesian product)"),
              repeat: int = typer.Option(1, "--repeat", help="run each grid point K times (distinct seeds)"),
              workers: int = typer.Option(None, "--workers", help="N local processes (joblib/loky)"),
              scheduler: str = typer.Option(None, "--scheduler", help="Dask scheduler address tcp://HOST:PORT"),
              out: Path = typer.Option(..., "--out", help="results Parquet file (resumed if it exists)"),
              seed: int = typer.Option(0, "--seed", help="sweep seed; each row's seed derives from it and the row"),
              timeout: float = typer.Option(None, "--timeout", help="seconds per row; longer runs are failed rows"),
              as_json: bool = typer.Option(False, "--json", help='print {"rows", "failed", "wall_s", "out"}'),
              quiet: bool = typer.Option(False, "--quiet", "-q", help="no progress bar"),
              strict: bool = typer.Option(False, "--strict", help="exit 1 when a row failed (an error, a timeout, "
                                                                  "a crash of its process); without it failed rows "
                                                                  "are results and the exit is 0")):
        """Run TASK over a parameter grid; one Parquet row per run (params, seed, status, metrics,
        wall time, host, version). Rerunning the same command skips the rows already in --out.
        Rows run one at a time in a worker process without --workers/--scheduler: a row that
        crashes it (SIGSEGV, out of memory) is a failed row and the sweep goes on.
        Ctrl-C keeps the finished rows (exit 130)."""
        from ..batch import failed_count
        from ..batch import sweep as run_sweep
        from ..errors import ContactlabError
        from . import interrupt_exit_on_sigterm
        try:
            fn, g = _task_and_grid(task, arg, parse_grid(grid))
            if workers is not None and scheduler is not None:
                raise typer.BadParameter("give --workers N or --scheduler ADDRESS, not both")
            interrupt_exit_on_sigterm()
            t0 = time.perf_counter()
            df = run_sweep(fn, g, workers=workers, scheduler=scheduler, out=out, seed=seed,
                           progress=not (quiet or as_json), repeat=repeat, timeout=timeout)
        except ContactlabError as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(2)
        except OSError as exc:   # disk full, permissions: the previous file is intact (atomic writes)
            from . import write_failed
            typer.echo(write_failed(exc, exc.filename or out), err=True)
            raise typer.Exit(1)
        except KeyboardInterrupt:
            typer.echo(f"interrupted: the finished rows are in {out}; rerun the same command to resume", err=True)
            raise typer.Exit(130)
        rec = {"rows": int(len(df)), "failed": failed_count(df), "wall_s": time.perf_counter() - t0, "out": str(out)}
        if as_json:
            typer.echo(json.dumps(rec))
        else:
            typer.echo(f"{rec['rows']} rows ({rec['failed']} failed) in {rec['wall_s']:.1f} s -> {out}")
        if strict and rec["failed"]:
            typer.echo(f"error: {rec['failed']} of {rec['rows']} rows failed (--strict); their reasons are in the "
                       f"error column of {out}", err=True)
            raise typer.Exit(1)

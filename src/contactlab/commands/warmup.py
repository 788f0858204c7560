"""``contactlab warmup``: compile the kernels ahead of first use, on every core (contactlab.warmup)."""
from __future__ import annotations

import sys
import time

import typer


def register(app: typer.Typer) -> None:
    @app.command()
    def warmup(jobs: int = typer.Option(None, "--jobs", min=1, help="worker processes (default: every core)"),
               only: str = typer.Option("solve,simulate", "--only",
                                        help="what to compile, comma-separated: solve, simulate")):
        """Compile every solver's and contact model's kernels now (numba caches them for later runs)."""
        from ..warmup import warm_up
        from . import console
        kinds = tuple(k.strip() for k in only.split(",") if k.strip())
        if not kinds or set(kinds) - {"solve", "simulate"}:
            typer.echo(f"error: --only takes solve and/or simulate, got {only!r}", err=True)
            raise typer.Exit(2)
        err = console(stderr=True)
        show = sys.stderr.isatty()
        t0 = time.perf_counter()
        from rich.progress import Progress
        with Progress(console=err, disable=not show, transient=True) as bar:
            task = bar.add_task("compiling", total=None)

            def progress(label, seconds, done, total):
                bar.update(task, completed=done, total=total, description=f"compiled {label}")

            results = warm_up(jobs=jobs, kinds=kinds, progress=progress)
        failed = [(label, error) for label, _, error in results if error]
        for label, error in failed:
            typer.echo(f"error: {label}: {error}", err=True)
        slowest = max(results, key=lambda r: r[1]) if results else ("-", 0.0)
        typer.echo(f"compiled {len(results) - len(failed)} of {len(results)} tasks in "
                   f"{time.perf_counter() - t0:.1f} s (slowest: {slowest[0]}, {slowest[1]:.1f} s)")
        if failed:
            raise typer.Exit(1)

"""``contactlab plan STRUCTURE``: a stable disassembly sequence (loomis-balkcom §V)."""
from __future__ import annotations

import json

import typer

TESTS = ("lp", "dantzig", "reuse")


def register(app: typer.Typer) -> None:
    @app.command()
    def plan(structure: str = typer.Argument(..., help="column-N, pyramid-N (N = r(r+1)/2), random-N, "
                                                       "column3d-N, pyramid3d-N (N = 1+4+..+r^2), random3d-N, or a "
                                                       ".toml/.json structure file"),
             test: str = typer.Option("reuse", "--test", help="stability test: lp (statics LP, HiGHS), dantzig "
                                                              "(acceleration LCP from scratch), reuse (Dantzig "
                                                              "warm-started from the parent, Theorem 1)"),
             seed: int = typer.Option(None, "--seed", help="seed of random-N / random3d-N (default N)"),
             as_json: bool = typer.Option(False, "--json", help="print one JSON object")):
        """Find an order in which to remove every block without the rest collapsing."""
        from ..errors import ContactlabError
        from ..planning import get_structure
        from ..planning import plan as run_plan
        from . import console
        if test not in TESTS:
            typer.echo(f"error: unknown --test {test!r}; use one of {', '.join(TESTS)}", err=True)
            raise typer.Exit(2)
        import sys

        from rich.progress import Progress, TextColumn, TimeElapsedColumn
        err = console(stderr=True)
        try:
            s = get_structure(structure, seed)
            with Progress(TextColumn("{task.description}"), TimeElapsedColumn(), console=err, transient=True,
                          disable=not (sys.stderr.isatty() and not as_json)) as bar:
                task = bar.add_task(f"planning {structure}")
                res = run_plan(s, test, progress=lambda nodes, size, n: bar.update(
                    task, description=f"planning {structure}: {nodes} sub-assemblies tested, "
                                      f"last {size} of {n} blocks"))
        except ContactlabError as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(2)
        rec = res.as_json()
        rec["structure"] = structure
        if as_json:
            typer.echo(json.dumps(rec))
            return
        out = console()
        out.print(f"{structure}: {s.n} blocks, test {test}")
        if res.stable:
            out.print(f"stable disassembly, removal order: {' '.join(map(str, res.sequence))}")
        else:
            out.print("no stable disassembly sequence exists")
        out.print(f"nodes tested {res.nodes_visited}, pivots {res.pivots} (precheck LP {res.precheck_pivots}), "
                  f"time {res.time_s:.3f} s")

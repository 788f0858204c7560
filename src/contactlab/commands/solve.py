"""``contactlab solve FILE`` and ``contactlab solvers``."""
from __future__ import annotations

import json
from pathlib import Path

import typer


def register(app: typer.Typer) -> None:
    @app.command()
    def solve(path: Path = typer.Argument(..., help="problem file: .npz (contactlab.save) or Siconos .dat"),
              method: str = typer.Option("auto", "--method", help="solver name (see `contactlab solvers`)"),
              json_out: bool = typer.Option(False, "--json", help="print one JSON object"),
              out: Path = typer.Option(None, "--out", help="write z and w to this .npz")):
        """Solve one problem file and print its certified result."""
        import numpy as np

        import contactlab as cl
        from contactlab.problems.io import atomic_write

        try:
            problem = cl.load(path)
            sol = cl.solve(problem, method=method)
        except cl.ContactlabError as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(2)
        record = {"file": str(path), "problem": type(problem).__name__, "n": int(problem.n), "method": sol.method,
                  "status": sol.status.name, "success": sol.success, "iterations": sol.iterations,
                  "pivots": sol.pivots, "residual": sol.residual, "complementarity": sol.complementarity,
                  "infeasibility": sol.infeasibility, "time_s": sol.time_s}
        if out is not None:
            atomic_write(out, lambda tmp: np.savez(tmp, z=sol.z, w=sol.w))
        if json_out:
            typer.echo(json.dumps(record))
        else:
            for k, v in record.items():
                typer.echo(f"{k:>16}: {v}")
        raise typer.Exit(0 if sol.success else 1)

    @app.command()
    def solvers():
        """List the registered solvers, the problems and matrix classes each accepts."""
        from rich.console import Console
        from rich.table import Table

        import contactlab as cl

        table = Table("method", "problems", "classes", "warm start", "guarantees")
        for name, spec in cl.available_solvers().items():
            table.add_row(name, ", ".join(t.__name__ for t in spec.problems), ", ".join(spec.classes),
                          "yes" if spec.warm_start else "", spec.guarantees)
        Console().print(table)

"""``contactlab quasistatic CASE``: quasistatic planar manipulation (Pang, Trinkle & Lo 1994) as a UCP."""
from __future__ import annotations

import json

import typer

_MOVED = ("run_case", "METHODS", "ALIASES")   # now in contactlab.scenarios.quasistatic_data


def __getattr__(name: str):
    """The names that moved beside the quasistatic data, importable from here for one release
    (imported on first use: the CLI does not load the scenarios package to start)."""
    if name in _MOVED:
        from ..scenarios import quasistatic_data
        return getattr(quasistatic_data, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def register(app: typer.Typer) -> None:
    @app.command()
    def quasistatic(case: str = typer.Argument(..., help="data-set-1 .. data-set-4, random, or table1-1 .. table1-20"),
                    method: str = typer.Option("bilinear-lp", "--method",
                                               help="bilinear-lp (paper, section 4), mip (exact), mode-enumeration "
                                                    "(contact modes; old spelling: enumerate)"),
                    seed: int = typer.Option(0, "--seed", help="seed of the random case and of bilinear-lp's moves"),
                    contacts: int = typer.Option(10, "--contacts", help="number of contacts of the random case"),
                    as_json: bool = typer.Option(False, "--json", help="print one JSON object")):
        """Predict the object's motion and each contact's mode (roll, slide, break) from a UCP."""
        from ..errors import ContactlabError
        from ..scenarios.quasistatic_data import ALIASES, run_case
        from . import console, status_text

        if method in ALIASES:
            typer.echo(f"note: --method {method} is the old spelling of {ALIASES[method]}", err=True)
        try:
            rec = run_case(case, method, seed, contacts)
        except ContactlabError as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(2)
        sol = rec.pop("_solution")
        rec.pop("_task")
        elapsed = rec.pop("_time")
        eqs = rec.pop("_equations", None)
        if as_json:
            typer.echo(json.dumps(rec))
            return
        from rich.table import Table

        con = console()
        con.print(f"[bold]{case}[/bold] by {rec['method']}: [bold]{status_text(sol.status)}[/bold] "
                  f"({'candidates' if rec['method'] == 'mode-enumeration' else 'pairs'} {rec['pairs']}, "
                  f"LPs {rec['lps']}, x'y {rec['xTy']}, {elapsed:.3f} s)")
        if sol.info.get("reason"):
            con.print(f"reason: {sol.info['reason']}")
        if rec["modes"] is not None:
            tab = Table("contact", "mode", "c_n", "c_t")
            for i, (m, cn, ct) in enumerate(zip(rec["modes"], rec["c_n"], rec["c_t"])):
                tab.add_row(str(i + 1), m, f"{cn:.5g}", f"{ct:.5g}")
            con.print(tab)
            con.print("q_dot = [" + ", ".join(f"{v:.5g}" for v in rec["q_dot"]) + "]")
            con.print(f"worst relative violation of eq. (2)-(10): {max(eqs.values()):.2e}")

"""``contactlab quasistatic CASE``: quasistatic planar manipulation (Pang, Trinkle & Lo 1994) as a UCP."""
from __future__ import annotations

import json
import math
import time

import typer

# CLI names -> registered solvers. The contact-mode enumeration is ``mode-enumeration`` (the name
# ``enumerate`` belongs to the exhaustive LCP solver); ``enumerate`` is still accepted here as an
# old spelling and is reported under its real name.
METHODS = {"bilinear-lp": "bilinear-lp", "mip": "mip", "mode-enumeration": "mode-enumeration"}
ALIASES = {"enumerate": "mode-enumeration"}


def run_case(case: str, method: str = "bilinear-lp", seed: int = 0, contacts: int = 10) -> dict:
    """Solve one case and return the CLI's JSON record (plus ``_solution``, ``_task`` for callers)."""
    import numpy as np

    from ..models.quasistatic import build_ucp, equation_residuals, recover
    from ..scenarios.quasistatic_data import case as make_case
    from ..solvers import solve

    from ..commands import status_text
    from ..errors import ParamError
    method = ALIASES.get(method, method)
    if method not in METHODS:
        raise ParamError(f"unknown quasistatic method {method!r}; use one of {', '.join(METHODS)}")
    task = make_case(case, seed=seed, contacts=contacts)
    problem = build_ucp(task)
    opts = {"seed": seed} if METHODS[method] == "bilinear-lp" else {}
    t0 = time.perf_counter()
    sol = solve(problem, method=METHODS[method], **opts)
    elapsed = time.perf_counter() - t0
    pairs = sol.info.get("candidates") if METHODS[method] == "mode-enumeration" else sol.info.get("pairs")
    if METHODS[method] == "mip":
        pairs = None
    rec = {"case": case, "method": method, "status": status_text(sol.status), "pairs": pairs,
           "lps": sol.info.get("lps"), "xTy": None, "c_n": None, "c_t": None, "q_dot": None,
           "theta_dot": None, "tau": None, "modes": None}
    if np.all(np.isfinite(sol.z)):
        x, y = problem.split(sol.z)
        rec["xTy"] = float(x @ y)
    elif isinstance(sol.info.get("xTy"), float) and math.isfinite(sol.info["xTy"]):
        rec["xTy"] = sol.info["xTy"]
    if sol.success:
        x, y = problem.split(sol.z)
        motion = recover(task, x, y)
        rec.update(motion.as_dict())
        rec["_equations"] = equation_residuals(task, motion)
    rec["_solution"], rec["_task"], rec["_time"] = sol, task, elapsed
    return rec


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

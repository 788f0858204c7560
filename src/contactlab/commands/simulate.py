"""``contactlab simulate SCENE``: run a built-in or file scene; print a summary or one JSON object."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import typer


def register(app: typer.Typer) -> None:
    @app.command()
    def simulate(scene: str = typer.Argument(..., help="built-in scene (incline, stack, pendulum-chain, pile, ...) "
                                                        "or a .toml/.json scene file"),
                 set_: list[str] = typer.Option(None, "--set", help="scene parameter KEY=VALUE (repeatable)"),
                 duration: float = typer.Option(1.0, "--duration", help="simulated seconds"),
                 dt: float = typer.Option(None, "--dt", help="time step (default: the scene's)"),
                 model: str = typer.Option("stewart-trinkle", "--model", help="contact model"),
                 method: str = typer.Option(None, "--method", help="solver method (default: the model's)"),
                 out: Path = typer.Option(None, "--out", help="write the trajectory to this HDF5 file"),
                 as_json: bool = typer.Option(False, "--json", help="print one JSON object")):
        """Simulate SCENE and report final body states and metrics."""
        from ..errors import ContactlabError
        from ..scenarios import make_scene
        from ..sim import Simulator, write_trajectory
        try:
            params = {}
            for item in set_ or []:
                if "=" not in item:
                    raise typer.BadParameter(f"--set takes KEY=VALUE, got {item!r}")
                k, v = item.split("=", 1)
                params[k.strip()] = v.strip()
            sc = make_scene(scene, **params)
            if not duration >= 0:
                raise typer.BadParameter("--duration must be >= 0")
            sim = Simulator(sc, model, method, dt=dt)
            traj = sim.run(duration, progress=not as_json and sys.stderr.isatty(), record_poses=out is not None)
        except ContactlabError as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(2)
        if out is not None:
            write_trajectory(out, traj, attrs={"scene": sc.name, "model": model, "method": sim.method,
                                               "dt": sim.h, "duration": duration})
        bodies = {n: sim.body_state(n) for i, n in enumerate(sim.model.names) if sim.model.dof_start[i] >= 0}
        result = {"scene": scene, "model": model, "method": sim.method, "steps": len(traj.records),
                  "bodies": bodies, "metrics": traj.metrics()}
        if traj.error:
            result["error"] = traj.error  # the run stopped early at an unusable step
        if as_json:
            typer.echo(json.dumps(result))
            if traj.error:
                raise typer.Exit(1)
            return
        from rich.console import Console
        from rich.table import Table
        con = Console()
        m = result["metrics"]
        con.print(f"[bold]{scene}[/bold]: {result['steps']} steps of {sim.h:g} s, model {model}, method {sim.method}")
        t = Table("metric", "value")
        for k, v in m.items():
            t.add_row(k, f"{v:.4g}" if isinstance(v, float) else str(v))
        con.print(t)
        t = Table("body", "position", "linear velocity")
        for n, b in bodies.items():
            t.add_row(n, " ".join(f"{x:+.4f}" for x in b["position"]), " ".join(f"{x:+.4f}" for x in b["linear_velocity"]))
        con.print(t)
        if out is not None:
            con.print(f"wrote {out}")
        if traj.error:
            con.print(f"[red]stopped early:[/red] {traj.error}")
            raise typer.Exit(1)

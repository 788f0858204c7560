"""``contactlab plot TRAJ.h5 --out FIG.png``: time series of a recorded run."""
from __future__ import annotations

from pathlib import Path

import typer


def register(app: typer.Typer) -> None:
    @app.command()
    def plot(traj: Path = typer.Argument(..., help="trajectory file written by 'contactlab simulate --out'"),
             what: str = typer.Option("energy,contacts,penetration,solver", "--what",
                                      help="panels, comma-separated: energy, contacts, penetration, solver, bodies"),
             bodies: str = typer.Option(None, "--bodies", help="body names for the 'bodies' panel, comma-separated"),
             out: Path = typer.Option(..., "--out", help="figure file (.png, .svg or .pdf)")):
        """Plot energy, contacts and LCP size, penetration, solver effort and body positions over time."""
        from ..errors import ParamError
        from . import check_output, check_trajectory, same_file, trajectory_command
        from ..viz.plots import plot_trajectory
        with trajectory_command(traj):
            # the figure's target first (before any reading): a folder where no file can be made
            check_output(out, "--out", suffixes=(".png", ".svg", ".pdf"))
            if same_file(out, traj):      # the figure would replace the trajectory it is made from
                raise ParamError(f"--out {out} is the trajectory file itself; give another file name")
            check_trajectory(traj)
        with trajectory_command(traj, out):
            plot_trajectory(traj, what, out, bodies=bodies.split(",") if bodies else None)
        typer.echo(f"wrote {out}")

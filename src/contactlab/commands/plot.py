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
        from ..errors import ContactlabError
        from . import check_trajectory
        from ..viz.plots import plot_trajectory
        try:
            check_trajectory(traj)
            plot_trajectory(traj, what, out, bodies=bodies.split(",") if bodies else None)
        except ContactlabError as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(2)
        except (KeyError, IndexError, ValueError, OSError) as exc:   # damage the checks did not foresee
            typer.echo(f"error: {traj}: unreadable trajectory file ({type(exc).__name__}: {exc})", err=True)
            raise typer.Exit(2)
        typer.echo(f"wrote {out}")

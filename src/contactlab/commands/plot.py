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
        from ..errors import ContactlabError, ParamError
        from . import check_output, check_trajectory, same_file, write_failed
        from ..viz.plots import plot_trajectory
        try:
            # the figure's target first (before any reading): a folder where no file can be made
            check_output(out, "--out", suffixes=(".png", ".svg", ".pdf"))
            if same_file(out, traj):      # the figure would replace the trajectory it is made from
                raise ParamError(f"--out {out} is the trajectory file itself; give another file name")
            check_trajectory(traj)
        except ContactlabError as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(2)
        except (KeyError, IndexError, ValueError, OSError) as exc:   # damage the checks did not foresee
            typer.echo(f"error: {traj}: unreadable trajectory file ({type(exc).__name__}: {exc})", err=True)
            raise typer.Exit(2)
        try:
            plot_trajectory(traj, what, out, bodies=bodies.split(",") if bodies else None)
        except ContactlabError as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(2)
        except OSError as exc:
            if exc.errno is None:         # h5py's read errors carry no errno: the trajectory's damage
                typer.echo(f"error: {traj}: unreadable trajectory file ({type(exc).__name__}: {exc})", err=True)
                raise typer.Exit(2)
            typer.echo(write_failed(exc, out), err=True)    # the disk, permissions: the figure's write
            raise typer.Exit(1)
        except (KeyError, IndexError, ValueError) as exc:   # damage the checks did not foresee
            typer.echo(f"error: {traj}: unreadable trajectory file ({type(exc).__name__}: {exc})", err=True)
            raise typer.Exit(2)
        typer.echo(f"wrote {out}")

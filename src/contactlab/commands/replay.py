"""``contactlab replay TRAJ.h5 --html OUT.html``: an interactive 3D replay of a recorded run."""
from __future__ import annotations

from pathlib import Path

import typer


def register(app: typer.Typer) -> None:
    @app.command()
    def replay(traj: Path = typer.Argument(..., help="trajectory file written by 'contactlab simulate --out'"),
               html_out: Path = typer.Option(..., "--html", help="write the replay page here (one self-contained file)"),
               max_frames: int = typer.Option(None, "--max-frames", help="at most this many frames (default: fit the size budget)"),
               max_contacts: int = typer.Option(64, "--max-contacts", help="contacts drawn per frame (largest forces first)"),
               title: str = typer.Option(None, "--title", help="page title (default: the file name)"),
               speed: float = typer.Option(1.0, "--speed", help="playback speed when the page opens (x real time; "
                                           "the page's menu offers 0.25x-4x)"),
               loop: bool = typer.Option(False, "--loop", help="start over at the end (default: hold the last frame)")):
        """Write an interactive 3D replay (play, pause, speed, loop, time slider, orbit / pan / zoom, contact
        points and force arrows, a strip of contacts, LCP size and residual) of TRAJ as one HTML file
        that opens offline in any browser."""
        import math

        from ..errors import ParamError
        from . import check_output, check_trajectory, same_file, trajectory_command
        from ..viz.replay import read_replay, replay_html
        with trajectory_command(traj):
            if max_frames is not None and max_frames < 2:
                raise typer.BadParameter("--max-frames must be >= 2")
            if not 0 < speed < math.inf:
                raise typer.BadParameter("--speed must be a finite number > 0 (1 is real time)")
            if max_contacts < 0:
                raise typer.BadParameter("--max-contacts must be >= 0 (0: no contacts drawn)")
            check_output(html_out, "--html")
            if same_file(html_out, traj):      # the page would replace the trajectory it is made from
                raise ParamError(f"--html {html_out} is the trajectory file itself; give another file name")
            check_trajectory(traj)
            data = read_replay(traj)
        with trajectory_command(traj, html_out):   # a full disk: the page's temporary file is removed, any old page kept
            replay_html(data, html_out, title=title or traj.name, max_frames=max_frames, max_contacts=max_contacts,
                        speed=speed, loop=loop)
        typer.echo(f"wrote {html_out} ({html_out.stat().st_size / 1e6:.1f} MB, {data.frames} frames recorded)")

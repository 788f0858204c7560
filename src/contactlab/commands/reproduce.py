"""``contactlab reproduce``."""
from pathlib import Path

import typer


def register(app: typer.Typer) -> None:
    @app.command()
    def reproduce(out: Path = typer.Option(Path("reproduce"), "--out", help="output folder"),
                  quick: bool = typer.Option(False, "--quick", help="smaller sizes, for a fast look"),
                  only: list[str] = typer.Option(None, "--only", help="run sections whose name contains this")):
        """Run the papers' experiments and benchmark families; write OUT/report.md with figures."""
        from ..reproduce import SectionsFailed, run_report
        try:
            path = run_report(out, quick=quick, only=only or None)
        except SectionsFailed as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(1)
        typer.echo(f"wrote {path}")

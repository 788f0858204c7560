"""``contactlab reproduce``."""
from pathlib import Path

import typer


def _cores() -> int:
    import os
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def register(app: typer.Typer) -> None:
    @app.command()
    def reproduce(out: Path = typer.Option(Path("reproduce"), "--out", help="output folder"),
                  quick: bool = typer.Option(False, "--quick", help="smaller sizes, for a fast look"),
                  only: list[str] = typer.Option(None, "--only",
                                                 help="run only this section (short name, module name or title; "
                                                      "repeatable); its block in an existing report is replaced"),
                  list_: bool = typer.Option(False, "--list", help="list the sections and exit"),
                  quiet: bool = typer.Option(False, "--quiet", "-q", help="no progress display"),
                  jobs: int = typer.Option(None, "--jobs", min=1,
                                           help="sections run at a time, each in its own process (default: every "
                                                "core; 1: one after another in this process)")):
        """Run the papers' experiments and benchmark families; write OUT/report.md with figures.

        Exit status: 0 complete, 1 a section raised or reported failed rows, 2 bad option,
        130 interrupted (the report is kept and marked INCOMPLETE)."""
        from ..errors import ContactlabError
        from ..reproduce import SectionsFailed, run_report, section_name, sections
        from ..files import output_lock
        from . import check_output, interrupt_exit_on_sigterm
        if list_:
            for m in sections():
                typer.echo(f"{section_name(m):<16} {m.TITLE}")
            return
        interrupt_exit_on_sigterm()
        try:
            check_output(out, "--out", folder=True)   # before the work, not after the first section
            # one report per folder at a time: a second run waits, then keeps the first's sections
            with output_lock(out, folder=True, on_wait=lambda m: typer.echo(f"note: {m}", err=True)):
                path = run_report(out, quick=quick, only=only or None, progress=not quiet,
                                  jobs=jobs or _cores())
        except ContactlabError as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(2)
        except OSError as exc:   # disk full, permissions: the previous file is intact (atomic writes)
            from . import write_failed
            typer.echo(write_failed(exc, exc.filename or out), err=True)
            raise typer.Exit(1)
        except SectionsFailed as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(1)
        except KeyboardInterrupt:
            typer.echo(f"interrupted: {out / 'report.md'} kept, marked INCOMPLETE", err=True)
            raise typer.Exit(130)
        typer.echo(f"wrote {path}")

"""``contactlab reproduce``: the papers' experiments and the benchmark families, as one report.

Each module ``sec_*.py`` in this package is one section: it defines ``TITLE`` (str), ``ORDER``
(int, sections run in increasing order) and ``run(ctx: ReportContext) -> str`` returning Markdown.
Figures are saved through ``ctx.figure(name, fig)``, which returns the relative link.
"""
from __future__ import annotations

import importlib
import pkgutil
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from ..problems.io import atomic_write


@dataclass
class ReportContext:
    out_dir: Path
    quick: bool = False
    advance: Callable[[str], None] = lambda label: None   # progress-bar hook: call once per unit of work
    figures: list[str] = field(default_factory=list)

    def rng(self, seed: int) -> np.random.Generator:
        return np.random.default_rng(seed)

    def figure(self, name: str, fig) -> str:
        """Save a matplotlib figure as ``figures/<name>.png`` atomically; return the Markdown link."""
        import matplotlib.pyplot as plt
        rel = f"figures/{name}.png"
        atomic_write(self.out_dir / rel, lambda tmp: fig.savefig(tmp, dpi=110, bbox_inches="tight", format="png"))
        plt.close(fig)
        self.figures.append(rel)
        return f"![{name}]({rel})"


def sections() -> list:
    mods = [importlib.import_module(f"{__name__}.{m.name}")
            for m in pkgutil.iter_modules(__path__) if m.name.startswith("sec_")]
    return sorted(mods, key=lambda m: (m.ORDER, m.__name__))


def markdown_table(header: list[str], rows: list[list]) -> str:
    """A Markdown table; floats printed with 4 significant digits."""
    def cell(v):
        if isinstance(v, float):
            return f"{v:.4g}"
        return str(v)
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(cell(v) for v in r) + " |" for r in rows]
    return "\n".join(out)


def run_report(out_dir: Path, *, quick: bool = False, only: list[str] | None = None) -> Path:
    """Run every section (or those whose module name contains one of ``only``) and write report.md."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    out_dir = Path(out_dir)
    mods = [m for m in sections() if not only or any(o in m.__name__ for o in only)]
    failed: list[str] = []
    path = out_dir / "report.md"
    parts = ["# contactlab reproduction report", "",
             f"Generated {time.strftime('%Y-%m-%d %H:%M:%S')}{' (quick mode)' if quick else ''}.", ""]
    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), TextColumn("{task.fields[label]}"),
                  TimeElapsedColumn()) as progress:
        for mod in mods:
            task = progress.add_task(mod.TITLE, total=None, label="")
            ctx = ReportContext(out_dir, quick,
                                advance=lambda label, t=task: progress.update(t, advance=1, label=label))
            t0 = time.perf_counter()
            try:
                body = mod.run(ctx)
                label = f"done in {time.perf_counter() - t0:.1f} s"
            except Exception:  # one broken section must not lose the others
                failed.append(mod.__name__)
                body = "**This section failed.**\n\n```\n" + traceback.format_exc() + "```"
                label = "FAILED"
            progress.update(task, total=1, completed=1, label=label)
            parts += [f"## {mod.TITLE}", "", body.strip(), ""]
            text = "\n".join(parts)  # written after every section: partial results survive
            path = atomic_write(out_dir / "report.md", lambda tmp: Path(tmp).write_text(text))
    if failed:
        raise SectionsFailed(path, failed)
    return path


class SectionsFailed(RuntimeError):
    """Some report sections raised; the report (with their tracebacks) was still written."""

    def __init__(self, path: Path, failed: list[str]):
        super().__init__(f"{len(failed)} section(s) failed: {', '.join(failed)}; see {path}")
        self.path, self.failed = path, failed

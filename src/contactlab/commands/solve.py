"""``contactlab solve FILE`` and ``contactlab solvers``."""
from __future__ import annotations

import json
import time
from pathlib import Path

import typer

from ..problems.io import load as load_problem  # the former CLI helper: load reports unreadable files itself


def parse_value(text: str):
    """A command-line value: int, float, true/false/none, else the string itself."""
    low = text.strip().lower()
    if low in ("true", "yes", "on"):
        return True
    if low in ("false", "no", "off"):
        return False
    if low in ("none", "null"):
        return None
    for conv in (int, float):
        try:
            return conv(text)
        except ValueError:
            pass
    return text


def parse_options(items: list[str] | None, flag: str = "--option") -> dict:
    """``["tol=1e-10", "max_iter=50"]`` -> ``{"tol": 1e-10, "max_iter": 50}``; bad items are errors."""
    from ..errors import ParamError
    out = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ParamError(f"{flag} takes KEY=VALUE, got {item!r}")
        out[key.strip()] = parse_value(value.strip())
    return out


def register(app: typer.Typer) -> None:
    @app.command()
    def solve(path: Path = typer.Argument(..., help="problem file: .npz (contactlab.save) or Siconos .dat"),
              method: str = typer.Option("auto", "--method", help="solver name (see `contactlab solvers`)"),
              option: list[str] = typer.Option(None, "--option", "-o",
                                               help="solver option KEY=VALUE, e.g. tol=1e-10 (repeatable)"),
              json_out: bool = typer.Option(False, "--json", help="print one JSON object, with z and w"),
              out: Path = typer.Option(None, "--out", help="write z and w to this file: .npz (arrays z, w), "
                                                           ".json (the printed record with z and w), .csv or "
                                                           ".txt (columns z, w)"),
              quiet: bool = typer.Option(False, "--quiet", "-q", help="no progress display")):
        """Solve one problem file and print its certified result (z and w with --json or --out).

        time_s is the solve alone (no start-up, no file reading: load_s). Exit status 0 solved,
        1 not solved, 2 bad input."""
        import numpy as np

        import contactlab as cl
        from contactlab.files import output_lock

        from . import check_output, console, status_text, write_failed

        try:
            opts = parse_options(option)
            if out is not None:    # checked before the work: the file named is the file written
                check_output(out, "--out", suffixes=OUT_SUFFIXES)
            t0 = time.perf_counter()
            problem = load_problem(path)
            load_s = time.perf_counter() - t0
            err = console(stderr=True, quiet=quiet)
            _warm_up(problem, method, opts)   # numba start-up is not part of time_s
            with err.status(f"solving n = {problem.n} with {method} ...") if err.is_terminal and not quiet \
                    else _nothing():
                sol = cl.solve(problem, method=method, **opts)
        except cl.ContactlabError as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(2)
        record = {"file": str(path), "problem": type(problem).__name__, "n": int(problem.n), "method": sol.method,
                  "status": status_text(sol.status), "success": sol.success, "iterations": sol.iterations,
                  "pivots": sol.pivots, "residual": sol.residual, "complementarity": sol.complementarity,
                  "infeasibility": sol.infeasibility, "time_s": sol.time_s, "load_s": load_s}
        if opts:
            record["options"] = opts
        full = {**record, "z": np.asarray(sol.z, dtype=float).tolist(), "w": np.asarray(sol.w, dtype=float).tolist()}
        if out is not None:
            try:
                with output_lock(out):
                    write_result(out, sol, full)
            except OSError as exc:
                typer.echo(write_failed(exc, out), err=True)
                raise typer.Exit(1)
        if json_out:
            typer.echo(json.dumps(full))
        else:
            for k, v in record.items():
                typer.echo(f"{k:>16}: {v}")
            if out is not None:
                typer.echo(f"{'z, w':>16}: written to {out}")
            else:
                typer.echo(f"{'z, w':>16}: not shown (use --json or --out FILE)")
        raise typer.Exit(0 if sol.success else 1)

    @app.command()
    def solvers():
        """List the registered solvers: common options once, then each method's problems, matrix
        classes, warm start, guarantees and own options (80 columns)."""
        import dataclasses
        import textwrap

        import contactlab as cl
        from contactlab.solvers.registry import COMMON_OPTIONS

        def para(text: str, indent: str = "  ", first: str | None = None) -> str:
            return textwrap.fill(text, 80, initial_indent=first if first is not None else indent,
                                 subsequent_indent=indent, break_on_hyphens=False)

        out = ["Common options (every iterative or pivoting method):"]
        for key, text in COMMON_OPTIONS.items():
            out.append(para(text, " " * 18, f"  {key:<16}"))
        out += ["", "auto", para("FactoredLCP -> ppm; BoxedLCP -> pgs-sm; symmetric positive definite LCP -> "
                                 "lemke; rank-deficient symmetric PSD LCP -> dantzig (measured, "
                                 "docs/benchmarks-pivoting.md); any other LCP -> lemke; the choice is "
                                 "recorded in info['auto']")]
        for name, spec in cl.available_solvers().items():
            extra = [t.__name__ for t in spec.converts if t not in spec.problems]
            conv = f" (+ {', '.join(extra)} reduced)" if extra else ""
            out += ["", para(f"{name}: " + ", ".join(t.__name__ for t in spec.problems) + conv
                             + ("; warm start" if spec.warm_start else ""), "    ", "")]
            if spec.description:
                out.append(para(spec.description))
            if spec.classes:
                out.append(para(", ".join(spec.classes), "    ", "  classes: "))
            if spec.guarantees:
                out.append(para(spec.guarantees, "    ", "  guarantees: "))
            own = [f"{f.name}={f.default!r}" for f in dataclasses.fields(spec.options)
                   if f.name not in COMMON_OPTIONS and f.default is not dataclasses.MISSING]
            if own:
                out.append(para(", ".join(own), "    ", "  options: "))
        typer.echo("\n".join(out))


#: the files ``solve --out`` writes, by suffix
OUT_SUFFIXES = (".npz", ".json", ".csv", ".txt")


def write_result(path: Path, sol, record: dict) -> Path:
    """Write z and w to ``path`` atomically, in the format its suffix names (:data:`OUT_SUFFIXES`):
    .npz arrays z and w; .json the record (with z and w); .csv/.txt one row per variable, columns
    z and w (w may be shorter: a problem without w), 17 significant digits. Written through an open
    file, so NumPy never adds a suffix of its own (it used to write ``.NAME.npz`` beside an empty NAME)."""
    import numpy as np

    from contactlab.files import atomic_write
    z, w = np.asarray(sol.z, dtype=float), np.asarray(sol.w, dtype=float)
    kind = Path(path).suffix.lower()

    def write(tmp):
        with open(tmp, "wb") as f:
            if kind == ".npz":
                np.savez(f, z=z, w=w)
            elif kind == ".json":
                f.write(json.dumps(record).encode())
            else:
                sep = "," if kind == ".csv" else " "
                f.write(f"z{sep}w\n".encode())
                for i in range(z.size):
                    f.write(f"{z[i]:.17g}{sep}{w[i]:.17g}\n".encode() if i < w.size else f"{z[i]:.17g}{sep}\n".encode())
    return atomic_write(path, write)


def _warm_up(problem, method: str, opts: dict) -> None:
    """Solve a 2x2 LCP with the same method first, so that time_s has no JIT compile/cache load."""
    import numpy as np

    import contactlab as cl
    if type(problem) is not cl.LCP:
        return
    try:
        cl.solve(cl.LCP(np.eye(2), -np.ones(2)), method=method, **opts)
    except Exception:  # the real solve reports any problem with the method or options
        pass


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

"""CLI subcommands: each module defines ``register(app: typer.Typer)``.

Shared helpers for the commands: :func:`console` (rich output that is not cut at 80 columns
when it goes to a file or a pipe), :func:`interrupt_exit_on_sigterm`, and :func:`status_text`
(one spelling of a solver status everywhere: the ``Status`` name, e.g. ``SOLVED``; defined with
``Solution`` in contactlab/solution.py).
"""
from __future__ import annotations

import contextlib
import signal
import sys

from ..solution import status_text  # noqa: F401  (its home is contactlab.solution)


def console(stderr: bool = False, quiet: bool = False):
    """A rich Console; on a non-terminal stream lines are not wrapped or cut at 80 columns."""
    from rich.console import Console
    import os
    stream = sys.stderr if stderr else sys.stdout
    tty = hasattr(stream, "isatty") and stream.isatty()
    width = 100_000
    if tty:
        try:
            width = os.get_terminal_size(stream.fileno()).columns or 80   # a pty may report 0 x 0
        except (OSError, ValueError):
            width = 80
    return Console(stderr=stderr, quiet=quiet, width=width, soft_wrap=not tty)


_INTERRUPTED: list[int] = []


def interrupt_exit_on_sigterm() -> None:
    """Treat SIGTERM like Ctrl-C (KeyboardInterrupt), so that partial output is kept and marked.
    Either signal is also remembered (:func:`interrupt_pending`): Python runs a handler between any
    two bytecodes, so its KeyboardInterrupt can land in a weakref or ``__del__`` callback (h5py
    frees objects as a flushed chunk ends), where Python prints it as "Exception ignored" and goes
    on; a SIGTERM was then lost and the run finished with exit 0. Loops check the flag."""
    def handler(signum, frame):
        _INTERRUPTED.append(signum)
        raise KeyboardInterrupt
    previous = sys.unraisablehook
    if not getattr(previous, "_contactlab_interrupt", False):
        def hook(unraisable):       # the swallowed KeyboardInterrupt: no "Exception ignored" traceback
            if not issubclass(unraisable.exc_type, KeyboardInterrupt):
                previous(unraisable)
        hook._contactlab_interrupt = True
        sys.unraisablehook = hook
    try:
        signal.signal(signal.SIGTERM, handler)
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            signal.signal(signal.SIGINT, handler)
    except ValueError:  # not the main thread (e.g. under a test runner thread)
        pass


def interrupt_name() -> str:
    """The last signal :func:`interrupt_exit_on_sigterm` caught (SIGINT if none: a KeyboardInterrupt)."""
    return signal.Signals(_INTERRUPTED[-1]).name if _INTERRUPTED else "SIGINT"


def interrupt_pending() -> bool:
    """Whether SIGINT or SIGTERM arrived since :func:`interrupt_exit_on_sigterm` (raise KeyboardInterrupt then)."""
    return bool(_INTERRUPTED)


def check_output(path, flag: str, *, suffixes: tuple[str, ...] | None = None, folder: bool = False):
    """problems/io.py ``check_output``: an output refused before any work (ParamError naming ``flag``)."""
    from ..files import check_output as check
    check(path, flag, suffixes=suffixes, folder=folder)


def same_file(out, source) -> bool:
    """Whether the output ``out`` names the existing file ``source`` (through links or another spelling)."""
    import os
    try:
        return os.path.samefile(out, source)
    except OSError:
        return False


def write_failed(exc: OSError, what) -> str:
    """The one line for an output that could not be written (disk full, permissions, ...)."""
    return f"error: could not write {what} ({exc.strerror or exc}); any previous file there is left as it was"


@contextlib.contextmanager
def trajectory_command(traj, out=None):
    """The exits of a command that reads trajectory ``traj`` (``plot``, ``replay``) around one of its
    phases: a contactlab error (a refused option or output, a damaged part named by
    :func:`check_trajectory`) is its line and exit 2; damage the checks did not foresee (KeyError,
    IndexError, ValueError, and h5py's read errors, OSErrors without an errno) is "unreadable
    trajectory file" and exit 2; while writing ``out`` (given), an OSError with an errno is the
    write's (a full disk, permissions: exit 1, any previous file left), while reading any OSError
    is the trajectory's."""
    import typer

    from ..errors import ContactlabError

    def unreadable(exc):
        typer.echo(f"error: {traj}: unreadable trajectory file ({type(exc).__name__}: {exc})", err=True)
        raise typer.Exit(2)
    try:
        yield
    except ContactlabError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2)
    except (KeyError, IndexError, ValueError) as exc:
        unreadable(exc)
    except OSError as exc:
        if out is None or exc.errno is None:
            unreadable(exc)
        typer.echo(write_failed(exc, out), err=True)
        raise typer.Exit(1)


def check_trajectory(path) -> None:
    """Refuse a trajectory file (``simulate --out``) whose parts disagree, naming the part
    (ParamError), before ``plot`` or ``replay`` indexes one array by another's length: every
    ``steps/*`` of one length; ``bodies/position`` and ``orientation`` of one frame count and one
    column per name; ``replay/*`` per-frame arrays of one length, per-contact arrays of one length,
    ``contact_offset`` rising from 0 to at most that length with one entry per frame and one more."""
    from pathlib import Path

    import numpy as np

    from ..errors import ParamError
    from ..viz.replay import open_trajectory_file
    path = Path(path)
    f = open_trajectory_file(path, ParamError)      # a directory, no such file, not HDF5: one line each

    def lengths(group, names) -> dict:
        return {n: group[n].shape[0] if group[n].shape else 0 for n in names if n in group}

    def one(what: str, lens: dict) -> int | None:
        if len(set(lens.values())) > 1:
            vals = list(lens.values())
            common = max(set(vals), key=vals.count)
            odd = ", ".join(f"{k} has {v}" for k, v in sorted(lens.items()) if v != common)
            raise ParamError(f"{path}: inconsistent trajectory file: the {what} have different lengths "
                             f"({odd}; the others {common})")
        return next(iter(lens.values()), None)

    with f:
        if "steps" in f:
            one("steps/* arrays", lengths(f["steps"], list(f["steps"].keys())))
        if "bodies" in f:
            b = f["bodies"]
            frames = one("bodies/position and orientation", lengths(b, ["position", "orientation"]))
            if frames is not None and "names" in b:
                cols = {b[k].shape[1] for k in ("position", "orientation") if k in b and len(b[k].shape) > 1}
                if cols and cols != {b["names"].shape[0]}:
                    raise ParamError(f"{path}: inconsistent trajectory file: bodies/names lists "
                                     f"{b['names'].shape[0]} bodies, the poses hold {sorted(cols)}")
        if "replay" in f:
            r = f["replay"]
            frames = one("replay per-frame arrays", lengths(r, ["position", "orientation", "time", "status",
                                                                  "lcp_size"]))
            points = one("replay per-contact arrays", lengths(r, [k for k in r.keys() if k.startswith("contact_")
                                                                   and k != "contact_offset"]))
            if "contact_offset" in r:
                off = np.asarray(r["contact_offset"][:])
                ok = (off.ndim == 1 and off.dtype.kind in "iuf" and off.size >= 1 and off[0] == 0
                      and np.all(np.diff(off) >= 0) and off[-1] <= (points or 0)
                      and (frames is None or off.size == frames + 1))
                if not ok:
                    raise ParamError(f"{path}: inconsistent trajectory file: replay/contact_offset must rise "
                                     f"from 0 to at most {points or 0} contacts, one entry per frame and one more")

"""``contactlab simulate SCENE``: run a built-in or file scene; print a summary or one JSON object."""
from __future__ import annotations

import contextlib
import json
import math
import os
from pathlib import Path

import typer


def _scenes_epilog() -> str:
    """The scene registry as help text: every registered scene with its parameters and defaults."""
    from ..scenarios import SCENES, URDF_PARAMETERS, scene_parameters
    lines = ["Scenes and their parameters (--set KEY=VALUE), defaults shown:"]
    for name in sorted(SCENES):
        lines.append(f"{name}: " + ", ".join(f"{k}={v!r}" for k, v in scene_parameters(name).items()))
    lines.append("FILE.urdf: " + ", ".join(f"{k}={v!r}" for k, v in URDF_PARAMETERS.items()))
    return "\n\n".join(lines)


def _check_method(scene, model: str, method: str | None, dt) -> None:
    """An unknown method, or one that does not accept the model's problems, is an error listing
    only the methods that do."""
    from ..errors import ModelError
    from ..sim import Simulator
    from ..solvers import available_solvers
    if method in (None, "auto"):
        return
    model = model or "stewart-trinkle"      # a method given without a model: Simulator's default_combination
    spec = available_solvers().get(method)
    probe = Simulator(scene, model, None, dt=dt)
    problem = probe.initial_problem() if hasattr(probe, "initial_problem") else _initial_problem(probe)
    if spec is not None and spec.accepts(problem):
        return
    ok = ["auto"] + [n for n, sp in available_solvers().items() if sp.accepts(problem)]
    what = "unknown method" if spec is None else "method"
    tail = "" if spec is None else f" does not accept the {type(problem).__name__} problems of model {model!r}"
    raise ModelError(f"{what} {method!r}{tail}; methods for model {model!r}: {', '.join(ok)}")


def _reuse_method(model: str, method: str | None) -> tuple[str | None, str | None]:
    """The method ``--reuse motionless`` runs with, and a note to print (or None).

    Motionless-set reuse warm-starts each solve from the motionless bodies' sub-LCP (loomis-balkcom
    Theorem 1); with a method that takes no warm start it only adds the sub-solves. Without
    ``--method``, a model whose default cannot warm start runs with dantzig (the paper's algorithm)
    where dantzig is guaranteed (the frictionless model's symmetric PSD LCP), and says so; an
    explicit method that cannot warm start, or a model with no such method, is an error naming the
    methods that can."""
    from ..errors import ModelError
    from ..models import get_model
    from ..sim.reuse import warm_start_methods
    from ..solvers import available_solvers
    chosen = method if method not in (None, "auto") else getattr(get_model(model), "DEFAULT_METHOD", "auto")
    spec = available_solvers().get(chosen)
    if spec is not None and spec.warm_start:
        return method, None
    if method in (None, "auto") and model == "frictionless":
        return "dantzig", (f"note: --reuse motionless needs a method that warm starts; {chosen} (the default for "
                           "model 'frictionless') does not, so dantzig is used (loomis-balkcom's algorithm)")
    raise ModelError(f"--reuse motionless warm-starts each solve from the motionless set's sub-LCP, but method "
                     f"{chosen!r} takes no warm start (it would only add the sub-solves); use --method with one "
                     f"that does: {', '.join(warm_start_methods())} (dantzig with --model frictionless is the "
                     "paper's case), or --reuse none")


def _initial_problem(sim):
    from ..mechanics.system import build_system
    contacts = sim.world.detect(sim.data, margin=sim._margin())
    from ..models.built import problem_of
    return problem_of(sim.contact_model.build(build_system(sim.model, sim.data, contacts, sim.h), sim.model_options))


def _check_overlaps(sim, strict: bool, tol: float = 1e-6) -> None:
    """Bodies that start interpenetrating deeper than ``tol`` (m): a warning naming each pair and
    its depth, or with ``strict`` an error."""
    from ..errors import ModelError
    c = sim.world.detect(sim.data, margin=0.0)
    deep = {}
    for a, b, phi in zip(c.body_a, c.body_b, c.phi):
        if phi < -tol:
            key = (sim.model.names[a], sim.model.names[b])
            deep[key] = max(deep.get(key, 0.0), -float(phi))
    if not deep:
        return
    pairs = sorted(deep.items(), key=lambda kv: -kv[1])
    text = ", ".join(f"{a}/{b} by {d:.3g} m" for (a, b), d in pairs[:10]) + (
        f" and {len(pairs) - 10} more pair(s)" if len(pairs) > 10 else "")
    if strict:
        raise ModelError(f"bodies start overlapping (--strict): {text}")
    typer.echo(f"warning: bodies start overlapping: {text}", err=True)


def _replay_group(sim, recorder):
    """``TrajectoryWriter.close(extra=...)``: the /replay group (viz.replay) with the final state."""
    if recorder is None:
        return None

    def write(h5):
        from ..viz.replay import write_replay_group
        recorder.capture(sim)
        write_replay_group(h5, recorder.data())
    return write


def register(app: typer.Typer) -> None:
    @app.command(epilog=_scenes_epilog())
    def simulate(scene: str = typer.Argument(..., help="built-in scene (listed below), a .toml/.json scene file "
                                                        "(docs/scene-files.md) or a .urdf mechanism"),
                 set_: list[str] = typer.Option(None, "--set", help="scene parameter KEY=VALUE (repeatable)"),
                 duration: float = typer.Option(None, "--duration", help="simulated seconds (default: the scene's "
                                                "own duration if it has one, e.g. a grasp script's, else 1)"),
                 dt: float = typer.Option(None, "--dt", help="time step (default: the scene's)"),
                 model: str = typer.Option(None, "--model", help="contact model (default: box-friction solved by "
                                           "box-qp on scenes of free bodies, compiled and certified; else "
                                           "stewart-trinkle; the choice is printed)"),
                 method: str = typer.Option(None, "--method", help="solver method (default: the model's)"),
                 out: Path = typer.Option(None, "--out", help="write the trajectory to this HDF5 file"),
                 as_json: bool = typer.Option(False, "--json", help="print one JSON object"),
                 strict: bool = typer.Option(False, "--strict", help="bodies that start overlapping are an error, "
                                                                      "not a warning"),
                 quiet: bool = typer.Option(False, "--quiet", "-q", help="no progress display"),
                 export_fclib: Path = typer.Option(None, "--export-fclib", help="write each step's frictional "
                                                   "contact problem as DIR/step_NNNNN.hdf5 (FCLIB)"),
                 html_out: Path = typer.Option(None, "--html", help="write an interactive 3D replay of the run: "
                                               "one self-contained HTML file (docs/replay.md)"),
                 reuse: str = typer.Option("none", "--reuse", help="none, or motionless: warm-start each solve "
                                           "from the motionless bodies' sub-LCP (loomis-balkcom §IV)"),
                 iterations: int = typer.Option(None, "--iterations", help="fixed-budget mode: at most K solver "
                                                "iterations per step, the answer applied whatever its residual "
                                                "(reported per step; like PyBullet's 50, ODE's 20)"),
                 w_step_tol: float = typer.Option(None, "--w-step-tol", help="fixed-budget pgs/psor: also stop "
                                                  "after a sweep in which no row corrected its own w by more than "
                                                  "this (Bullet's stop; PyBullet's default solverResidualThreshold "
                                                  "1e-7 is 3.16e-4 here)"),
                 allow_missing_meshes: bool = typer.Option(False, "--allow-missing-meshes",
                                                           help="a URDF collision mesh that is missing or "
                                                                "unreadable is a warning naming the link (which "
                                                                "loses that shape), not an error"),
                 max_mass_ratio: float = typer.Option(None, "--max-mass-ratio",
                                                      help="the largest heaviest/lightest dynamic body mass ratio "
                                                           "accepted (default 1e5, what every certified default "
                                                           "resolves; docs/robustness.md); inf: no limit")):
        """Simulate SCENE and report final body states and metrics.

        With --out the trajectory is written while it runs (HDF5, flushed every chunk of steps);
        Ctrl-C keeps a valid partial file marked complete=False and exits 130."""
        from ..errors import ContactlabError, ParamError
        from ..scenarios import make_scene
        from ..mechanics.urdf import allowing_missing_meshes
        from ..files import output_lock
        from ..sim import Simulator
        from . import check_output, same_file, write_failed
        try:
            if duration is not None and not (math.isfinite(duration) and duration >= 0):
                raise ParamError(f"--duration must be a finite number of seconds >= 0, got {duration}")
            if out is not None:       # checked before the work (not after the run)
                check_output(out, "--out")
            if html_out is not None:
                check_output(html_out, "--html")
            if export_fclib is not None:
                check_output(export_fclib, "--export-fclib", folder=True)
            if out is not None and html_out is not None and out.resolve() == html_out.resolve():
                raise ParamError(f"--out and --html name the same file {out}; the page would replace the "
                                 "trajectory: give two file names")
            for flag, target in (("--out", out), ("--html", html_out)):
                if target is not None and same_file(target, scene):
                    raise ParamError(f"{flag} {target} is the scene file itself; give another file name")
            params = {}
            for item in set_ or []:
                if "=" not in item:
                    raise typer.BadParameter(f"--set takes KEY=VALUE, got {item!r}")
                k, v = item.split("=", 1)
                params[k.strip()] = v.strip()
            from ..sim.faults import MAX_MASS_RATIO, check_mass_ratio, mass_ratio_limit
            limit = MAX_MASS_RATIO if max_mass_ratio is None else max_mass_ratio
            with allowing_missing_meshes(allow_missing_meshes), mass_ratio_limit(limit):
                sc = make_scene(scene, **params)
                check_mass_ratio(sc)     # every scene: built-in, file or URDF
            if duration is None:
                duration = float(getattr(sc, "duration", 1.0))
            if not (math.isfinite(duration) and duration >= 0):
                raise ParamError(f"--duration must be a finite number of seconds >= 0, got {duration}")
            _check_method(sc, model, method, dt)
            if reuse not in ("none", ""):
                method, note = _reuse_method(model, method)
                if note:
                    typer.echo(note, err=True)
            options = None
            if w_step_tol is not None:
                if iterations is None or not w_step_tol >= 0:
                    raise typer.BadParameter("--w-step-tol takes a number >= 0 and needs --iterations K "
                                             "(it is a fixed-budget mode's stop)")
                options = {"w_step_tol": float(w_step_tol)}
            # a scene may carry its controllers (fn(sim) before each step) and a summary(sim, traj) -> dict
            sim = Simulator(sc, model, method, dt=dt, controllers=getattr(sc, "controllers", ()),
                            reuse=None if reuse == "none" else reuse, iterations=iterations,
                            solver_options=options)
            _check_overlaps(sim, strict)
            exporter = None
            if export_fclib is not None:
                from ..problems.fclib import StepExporter
                exporter = StepExporter(export_fclib, title=sc.name)
                sim.add_controller(exporter)
            recorder = None
            if out is not None or html_out is not None:   # shapes, poses and contact forces per step (docs/replay.md)
                from ..viz.replay import ReplayRecorder
                recorder = ReplayRecorder(sim)
                recorder.capture(sim)
                sim.add_controller(recorder.capture)
        except ContactlabError as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(2)
        try:
            with contextlib.ExitStack() as held:
                if out is not None:    # one writer per output at a time (the second waits its turn)
                    held.enter_context(output_lock(out, on_wait=lambda m: typer.echo(f"note: {m}", err=True)))
                return _run(sim, sc, scene, model, out, html_out, exporter, recorder, duration, iterations,
                            w_step_tol, as_json, quiet, write_failed)
        except typer.Exit as stop:      # the lock released first
            _exit_if_hdf5_unclosable(stop.exit_code)
            raise


def _exit_if_hdf5_unclosable(code: int) -> None:
    """End the process now (``os._exit``, after flushing the output) when HDF5 could not close a
    trajectory file on a full disk: the library's own clean-up at the interpreter's exit would
    crash on that file (SIGSEGV) after the one-line error (:data:`contactlab.sim.recorder.UNCLOSABLE`)."""
    import sys
    from ..sim import recorder
    if recorder.UNCLOSABLE:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _abort_quietly(writer) -> None:
    """Drop a trajectory writer's temporary file; an error while closing a file that failed to
    write (h5py after ENOSPC) must not hide the first error."""
    try:
        writer.abort()
    except Exception:
        if os.path.exists(writer.tmp):
            os.unlink(writer.tmp)


def _run(sim, sc, scene, model, out, html_out, exporter, recorder, duration, iterations, w_step_tol,
         as_json, quiet, write_failed):
    """The run of ``simulate`` after its checks: step, write, report (exit 1 on a failed step or
    an output that could not be written, 2 on a step refused as too large, 130 on an interrupt)."""
    from ..errors import ContactlabError
    from ..sim.recorder import Trajectory, TrajectoryWriter
    from . import console, interrupt_exit_on_sigterm, interrupt_name, interrupt_pending
    from ..sim.simulator import MAX_RUN_STEPS
    if round(duration / sim.h) > MAX_RUN_STEPS:
        typer.echo(f"error: --duration {duration:g} s is {round(duration / sim.h):.3g} steps of {sim.h:g} s, above "
                   f"the {MAX_RUN_STEPS:.0e} one run records; give a shorter --duration", err=True)
        raise typer.Exit(2)
    traj = Trajectory(list(sim.model.names))
    try:
        writer = None if out is None else TrajectoryWriter(
            out, traj.body_names, attrs={"scene": sc.name, "model": sim.model_name, "method": sim.method, "dt": sim.h,
                                         "duration": duration})
    except OSError as exc:
        typer.echo(write_failed(exc, out), err=True)
        raise typer.Exit(1)
    steps = int(round(duration / sim.h))
    chunk = max(1, min(200, steps // 20 or 1))   # flush (and update progress) every chunk of steps
    interrupt_exit_on_sigterm()
    err = console(stderr=True, quiet=quiet or as_json)
    show = err.is_terminal and not (quiet or as_json) and steps > 1
    try:
        from rich.progress import Progress
        with Progress(console=err, disable=not show, transient=True) as bar:
            task = bar.add_task(f"simulating {sc.name}", total=steps)
            while len(traj.records) < steps and traj.error is None:
                k = min(chunk, steps - len(traj.records))
                sim.run(k * sim.h, trajectory=traj, record_poses=out is not None)
                if writer is not None:
                    writer.append(traj)
                if interrupt_pending():     # a signal whose KeyboardInterrupt a callback swallowed
                    raise KeyboardInterrupt
                bar.update(task, completed=len(traj.records))
    except KeyboardInterrupt:
        # the interrupt can land between the appends of one step (record, position, orientation):
        # keep the steps whose three are all there
        done = min(len(traj.records), len(traj.positions) - 1, len(traj.quaternions) - 1) if out is not None \
            else len(traj.records)
        done = max(done, 0)
        del traj.records[done:]
        if out is not None:
            del traj.positions[done + 1:]
            del traj.quaternions[done + 1:]
        if writer is not None:
            writer.close(traj, interrupted=f"interrupted ({interrupt_name()}) after {len(traj.records)} of {steps} steps",
                         extra=_replay_group(sim, recorder))
            typer.echo(f"interrupted: wrote {len(traj.records)} of {steps} steps to {out} "
                       "(a valid partial file, attribute complete=False)", err=True)
        else:
            typer.echo(f"interrupted after {len(traj.records)} of {steps} steps", err=True)
        raise typer.Exit(130)
    except (ContactlabError, MemoryError, OSError) as exc:
        # a step refused as too large, memory exhausted, or the output not writable (disk full):
        # one line; the temporary file goes, any previous file at --out is left as it was
        if writer is not None:
            _abort_quietly(writer)
        if isinstance(exc, OSError):
            what, name = out, getattr(exc, "filename", None)
            if exporter is not None and name is not None and Path(name).parent == Path(exporter.directory):
                what = f"--export-fclib {exporter.directory}"      # a step's problem file, not --out
            typer.echo(write_failed(exc, what if what is not None else name), err=True)
            raise typer.Exit(1)
        why = "out of memory" if isinstance(exc, MemoryError) else str(exc)
        typer.echo(f"error: step {len(traj.records) + 1} of {steps}: {why}", err=True)
        raise typer.Exit(2 if isinstance(exc, ContactlabError) else 1)
    except BaseException:
        if writer is not None:
            _abort_quietly(writer)
        raise
    try:
        if writer is not None:
            writer.close(traj, extra=_replay_group(sim, recorder))
        model = sim.model_name
        if html_out is not None:
            from ..viz.replay import replay_html
            recorder.capture(sim)
            replay_html(recorder.data(), html_out, title=f"{sc.name}: {model} / {sim.method}")
        if exporter is not None:
            exporter(sim)   # the last step's problem
    except OSError as exc:
        if writer is not None and os.path.exists(writer.tmp):
            _abort_quietly(writer)
        typer.echo(write_failed(exc, exc.filename or out or html_out), err=True)
        raise typer.Exit(1)
    bodies = {n: sim.body_state(n) for i, n in enumerate(sim.model.names) if sim.model.dof_start[i] >= 0}
    result = {"scene": scene, "model": model, "method": sim.method, "steps": len(traj.records),
              "bodies": bodies, "metrics": traj.metrics()}
    if sim.default_choice is not None:
        result["model_choice"] = sim.default_choice     # why this model and method (no --model given)
    if callable(getattr(sc, "summary", None)):
        result.update(sc.summary(sim, traj))   # e.g. "locomotion" (quadruped), "grasp" (hands)
    if traj.error:
        result["error"] = traj.error  # the run stopped early at an unusable step
    faults = [r.fault for r in traj.records if not r.plausible]     # contactlab.sim.faults
    if faults:
        result["faults"] = faults[:10]
    if iterations is not None:     # fixed-budget mode: the residual each step reached
        result["iterations"] = iterations
        if w_step_tol is not None:
            result["w_step_tol"] = float(w_step_tol)
        result["sweeps_per_step"] = [int(r.iterations) for r in traj.records]
        result["residual_per_step"] = [float(r.residual) for r in traj.records]
    if as_json:
        typer.echo(json.dumps(result))
        _fail_on_faults(faults)
        if traj.error:
            raise typer.Exit(1)
        return
    from rich.table import Table
    con = console()
    m = result["metrics"]
    con.print(f"[bold]{scene}[/bold]: {result['steps']} steps of {sim.h:g} s, model {model}, method {sim.method}"
              + (f" (default for this scene: {sim.default_choice})" if sim.default_choice else ""))
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
    if html_out is not None:
        con.print(f"wrote {html_out} (3D replay)")
    if traj.error:
        con.print(f"[red]stopped early:[/red] {traj.error}")
    _fail_on_faults(faults)
    if traj.error:
        raise typer.Exit(1)


def _fail_on_faults(faults: list) -> None:
    """Steps whose motion no physics of the step explains (:mod:`contactlab.sim.faults`): each of the first three on
    stderr, then one error line and exit 1 (a run that moved bodies implausibly is not a success)."""
    if not faults:
        return
    for text in faults[:3]:
        typer.echo(f"physics fault: {text}", err=True)
    more = f" (the first {min(3, len(faults))} above)" if len(faults) <= 3 else f" (the first 3 above, {len(faults) - 3} more)"
    typer.echo(f"error: {len(faults)} step(s) moved bodies implausibly{more}; the certified answers are not right "
               "for this scene (mass ratio, time step, or a solver's answer; docs/robustness.md)", err=True)
    raise typer.Exit(1)

"""Physics faults are loud (issue 40 item 5; contactlab.sim.faults): a step whose motion its
velocities and forces do not explain is reported (StepRecord.plausible/fault, metrics, CLI exit 1),
and a scene whose mass ratio the certified solvers cannot resolve is refused when it is loaded.

The detector is tested against motions made by hand (a body given speed or displaced after a real
step: the bounds of the module docstring, computed here independently), and on the case of the
issue (a heavy box on a light one) against what the physics says: a resting stack stays at rest."""
import math

import numpy as np
import pytest
from typer.testing import CliRunner

from contactlab.cli import app
from contactlab.errors import ModelError
from contactlab.mechanics.scene import Body, Scene, Shape
from contactlab.scenarios.io import load_scene
from contactlab.sim import Simulator
from contactlab.sim import faults

runner = CliRunner()
G, H = 9.81, 0.005


def two_boxes(light: float, heavy: float) -> Scene:
    """A box of mass ``heavy`` resting on a box of mass ``light`` resting on the ground (0.2 m cubes)."""
    box = lambda: [Shape("box", size=(0.2, 0.2, 0.2))]
    return Scene(name="two-boxes", mu=0.5, bodies=[
        Body("ground", kind="fixed", shapes=[Shape("halfspace", normal=(0, 0, 1))]),
        Body("light", mass=light, position=(0, 0, 0.1), shapes=box()),
        Body("heavy", mass=heavy, position=(0, 0, 0.3), shapes=box())])


SCENE_FILE = """name = "heavy-on-light"
mu = 0.5
[settings]
dt = 0.005
[[bodies]]
name = "ground"
kind = "fixed"
[[bodies.shapes]]
kind = "halfspace"
normal = [0, 0, 1]
[[bodies]]
name = "light"
mass = {light}
position = [0, 0, 0.1]
[[bodies.shapes]]
kind = "box"
size = [0.2, 0.2, 0.2]
[[bodies]]
name = "heavy"
mass = {heavy}
position = [0, 0, 0.3]
[[bodies.shapes]]
kind = "box"
size = [0.2, 0.2, 0.2]
"""


def write_scene(tmp_path, light, heavy):
    path = tmp_path / "heavy.toml"
    path.write_text(SCENE_FILE.format(light=light, heavy=heavy))
    return path


def test_a_mass_ratio_beyond_the_limit_is_refused_naming_both_bodies(tmp_path):
    path = write_scene(tmp_path, 1e-3, 1e6)
    with pytest.raises(ModelError, match=r"bodies 'heavy' \(1e\+06 kg\) and 'light' \(0\.001 kg\) have a mass ratio "
                                         r"of 1e\+09, above 1e\+05"):
        load_scene(path)
    with faults.mass_ratio_limit(math.inf):
        assert [b.mass for b in load_scene(path).bodies[1:]] == [1e-3, 1e6]
    faults.check_mass_ratio(two_boxes(1.0, faults.MAX_MASS_RATIO))            # at the limit: accepted
    with pytest.raises(ModelError, match="mass ratio of 1.01e\\+05"):
        faults.check_mass_ratio(two_boxes(1.0, 1.01 * faults.MAX_MASS_RATIO))
    fixed = two_boxes(1.0, 1e9)
    fixed.bodies[2].kind = "fixed"           # a fixed or kinematic body has no mass in the problem
    faults.check_mass_ratio(fixed)
    with pytest.raises(ModelError, match="max_mass_ratio must be a number >= 1"):
        with faults.mass_ratio_limit(0.5):
            pass
    res = runner.invoke(app, ["simulate", str(path), "--duration", "0.01"])
    errors = [ln for ln in res.output.splitlines() if ln.startswith("error:")]
    assert res.exit_code == 2 and len(errors) == 1 and "'heavy'" in errors[0] and "'light'" in errors[0] \
        and "--max-mass-ratio" in errors[0] and "Traceback" not in res.output


@pytest.mark.parametrize("model, method", [(None, None), ("stewart-trinkle", "lemke")])
def test_at_the_mass_ratio_limit_the_certified_defaults_keep_a_stack_at_rest(model, method):
    """The limit is what both certified defaults resolve (faults.MAX_MASS_RATIO, measured): at a
    ratio of 1e5 a heavy box on a light box stays at rest (within 1 mm over 0.4 s, speeds below
    1 cm/s) and every step is plausible."""
    sim = Simulator(two_boxes(1.0, faults.MAX_MASS_RATIO), model, method)
    x0 = sim.data.position.copy()
    recs = [sim.step() for _ in range(40)]
    assert all(r.success for r in recs) and all(r.plausible and r.fault == "" for r in recs)
    assert np.abs(sim.data.position - x0).max() < 1e-3 and np.abs(sim.data.linear_velocity).max() < 1e-2


@pytest.mark.parametrize("model, method, step, body", [(None, None, 1, "heavy"), ("stewart-trinkle", "lemke", 3, "light")])
def test_the_issues_heavy_box_on_a_light_box_is_a_fault_not_a_silent_success(model, method, step, body):
    """1e6 kg on 1e-3 kg (the limit lifted): box-qp certifies a first step that throws the heavy box
    up at 0.94 m/s (its free motion is 0.049 m/s down); Stewart-Trinkle by lemke throws the light box
    within the first `step` steps. At a mass ratio of 1e9 which of lemke's early steps goes wrong is
    decided by round-off (step 3 with one BLAS, step 2 with another), so the test asserts the first
    fault comes no later than `step`, every step before it is plausible, and the report names the
    step and the body."""
    sim = Simulator(two_boxes(1e-3, 1e6), model, method, dt=H)
    recs = [sim.step() for _ in range(step)]
    first = next((k for k, r in enumerate(recs, 1) if not r.plausible), None)
    assert first is not None, f"no step of the first {step} was reported as a fault"
    assert all(r.plausible for r in recs[:first - 1])
    assert recs[first - 1].fault.startswith(f"step {first} (t = {first * H:g} s): body {body!r}")


def test_simulate_reports_each_fault_on_stderr_and_exits_1(tmp_path):
    path = write_scene(tmp_path, 1e-3, 1e6)
    res = runner.invoke(app, ["simulate", str(path), "--duration", "0.02", "--max-mass-ratio", "inf", "--json"])
    assert res.exit_code == 1 and "Traceback" not in res.output
    lines = res.output.splitlines()
    faults_seen = [ln for ln in lines if ln.startswith("physics fault: step 1 (t = 0.005 s): body 'heavy' reached")]
    errors = [ln for ln in lines if ln.startswith("error:")]
    assert len(faults_seen) == 1 and len(errors) == 1 and "moved bodies implausibly" in errors[0]
    import json
    result = json.loads(next(ln for ln in lines if ln.startswith("{")))
    assert result["metrics"]["physics_faults"] >= 1 and result["faults"][0].startswith("step 1 ")


def _rest_box():
    return Scene(name="box", bodies=[Body("ground", kind="fixed", shapes=[Shape("halfspace", normal=(0, 0, 1))]),
                                     Body("box", mass=2.0, position=(0, 0, 0.1), shapes=[Shape("box", size=(0.2, 0.2, 0.2))])])


def test_the_detector_against_motions_made_by_hand():
    """A box resting on the ground, after a real step: its speed raised above 10 x the step's free
    motion (h g: 0.049 m/s at rest; the 0.2 m cube's collision radius makes a spin count at 0.17 m)
    is a speed fault; displaced beyond 2 x (penetration + slop) without a velocity is a correction
    fault; a displacement within that, and a speed within the bound, are not faults."""
    def stepped(change):
        sim = Simulator(_rest_box(), dt=H)
        sim.step()

        def take():
            rec = sim._step()
            change(sim)
            return rec
        return faults.checked_step(sim, take)

    free = G * H                                   # the free motion of a body at rest
    bound = faults.SPEED_AMPLIFICATION * free      # + (depth + slop) / h, below 0.03 m/s here

    def speed(v):
        def change(sim):
            sim.data.linear_velocity[1] = [v, 0.0, 0.0]
            sim.data.position[1, 0] += H * v       # x1 = x0 + h v1: no correction
        return change
    assert stepped(speed(0.9 * bound)).plausible
    rec = stepped(speed(1.2 * bound + 0.03))
    assert not rec.plausible and "body 'box' reached" in rec.fault and "m/s" in rec.fault

    def displace(dx):
        def change(sim):
            sim.data.position[1, 1] += dx
        return change
    assert stepped(displace(1e-5)).plausible      # slop 1e-4: up to 2e-4 m allowed here
    rec = stepped(displace(0.01))
    assert not rec.plausible and "body 'box' was displaced 0.01 m by the position correction" in rec.fault


def test_a_turn_correction_may_move_a_body_by_the_overlap_it_found():
    """After a fast turn the step's contacts are detected again and the overlap found at the new
    poses is projected out (sim/turns.py): a correction that large is allowed, one beyond twice it is
    still a fault. (A 60-box Stewart-Trinkle pile was falsely faulted at step 21: displaced 0.42 mm
    removing a 1.6 mm overlap its pre-step contacts, 1e-8 m deep, did not show.)"""
    def stepped(dx, overlap):
        sim = Simulator(_rest_box(), dt=H)
        sim.step()

        def take():
            rec = sim._step()
            sim.step_state.turn_overlap = overlap     # as Stages.correct leaves it
            sim.data.position[1, 1] += dx
            return rec
        return faults.checked_step(sim, take)
    assert not stepped(1e-3, 0.0).plausible       # no turn correction ran: 1 mm is not explained
    assert stepped(1e-3, 1.5e-3).plausible        # it removed 1.5 mm found at the new poses
    rec = stepped(5e-3, 1.5e-3)
    assert not rec.plausible and "penetration 0.0015 m" in rec.fault


def test_a_falling_stewart_trinkle_pile_has_no_faults():
    """30 boxes falling into the bin under Stewart-Trinkle + Lemke, 20 steps (on this machine the
    turn corrections run at steps 15-18, removing up to 0.34 mm found at the new poses; the pile is
    chaotic, so where they run depends on the last bits of the arithmetic): no step is a fault."""
    from contactlab.scenarios import make_scene
    sim = Simulator(make_scene("pile", count=30), "stewart-trinkle", "lemke")
    for _ in range(20):
        rec = sim.step()
        assert rec.plausible, rec.fault
        assert sim.step_state.turn_overlap == 0.0 or sim.step_state.turn_overlap > sim.model.settings.slop


@pytest.mark.parametrize("scene, steps", [("stack", 100), ("pendulum-chain", 200)])
def test_ordinary_scenes_have_no_faults(scene, steps):
    """No false alarms on a resting stack (box friction, compiled) and a swinging chain (joints,
    Stewart-Trinkle): every step plausible."""
    from contactlab.scenarios import make_scene
    sc = make_scene(scene)
    sim = Simulator(sc, controllers=getattr(sc, "controllers", ()))
    traj = sim.run(steps * sim.h)
    assert len(traj.records) == steps and traj.metrics()["physics_faults"] == 0
    assert all(r.plausible for r in traj.records)


def test_free_velocities_are_the_systems_split_by_body():
    """The free velocities the speed test reads (faults._free_velocities) are the step system's
    v + h M^-1 f cut into each body's linear and angular parts at its dofs, zero for a body without
    dofs (the ground), on a jointed robot after a step."""
    from contactlab.scenarios import make_scene
    sc = make_scene("quadruped")
    sim = Simulator(sc, "no-slip", "ppm", controllers=getattr(sc, "controllers", ()))
    for _ in range(3):
        sim.step()
    d, model = sim.data, sim.model
    vf = np.asarray(sim.last_system.v_free())
    lin, ang = faults._free_velocities(sim, d.linear_velocity, d.angular_velocity)
    assert lin.shape == ang.shape == (model.nb, 3) and np.any(model.dof_start < 0)
    for i, s in enumerate(model.dof_start):
        exp_lin, exp_ang = (vf[s:s + 3], vf[s + 3:s + 6]) if s >= 0 else (np.zeros(3), np.zeros(3))
        assert np.array_equal(lin[i], exp_lin) and np.array_equal(ang[i], exp_ang)


@pytest.mark.parametrize("compiled", [True, False])
def test_a_controller_setting_a_velocity_is_not_a_fault(compiled):
    """A controller that sets a body's velocity before each step (Simulator.set_velocity) gives the
    step its free motion: a box at rest kicked to 2 m/s along the ground at the first step, and to
    a speed that changes by 2 m/s each step after, slides as friction allows (mu g h = 0.025 m/s
    less each step) and no step is a fault, on the compiled box-friction step and on the general
    path alike. (Judged from the state before the controllers, the kick is 40 x the free motion
    h g of a body at rest.)"""
    sim = Simulator(_rest_box(), dt=H, compiled=compiled)
    from contactlab.sim.box_stages import CompiledRowStages
    assert isinstance(sim.stages, CompiledRowStages) == compiled
    speeds = [2.0, 0.5, 2.5, 1.0]

    def kick(s):
        s.set_velocity("box", linear=[speeds[s.data.steps % len(speeds)], 0.0, 0.0])
    sim.add_controller(kick)
    recs = [sim.step() for _ in range(8)]
    assert all(r.success for r in recs) and [r.fault for r in recs] == [""] * 8
    # the box slid: its speed is the last kick less friction's mu g h (mu 0.5, the scene's default)
    kicked = speeds[(sim.data.steps - 1) % len(speeds)]
    assert sim.data.linear_velocity[1, 0] == pytest.approx(kicked - 0.5 * G * H, abs=1e-3)


def _from_scratch(sim, before, rec, depth):
    """faults.plausibility on the inputs step_fault forms itself (no compiled step's verdict)."""
    model, data = sim.model, sim.data
    kind, radius, jointed, mass = faults.fault_statics(sim)
    vf, wf = faults._free_velocities(sim, before[1], before[2])
    return faults.plausibility(model.dof_start, kind, 2, radius, before[0], before[1], before[2], vf, wf,
                               data.position, data.linear_velocity, data.angular_velocity, sim.h, depth,
                               float(model.settings.slop), float(before[3]), jointed, faults.motor_targets(data),
                               bool(sim.has_actuation), float(rec.contact_energy_gain), float(rec.kinetic_energy),
                               float(rec.energy), mass)


@pytest.mark.parametrize("radius_scale", [1.0, 100.0])
def test_the_compiled_steps_verdict_is_the_checks_own(monkeypatch, radius_scale):
    """The compiled box-friction step forms the plausibility verdict on its own inputs
    (box_kernels.box_friction_step; faults.judged_verdict takes it): on a falling 10-box pile every step's
    verdict taken from the call is the one formed from scratch, value for value, and no step is a fault.
    With the bodies' radii made 100 times larger for the check (a spin then counts at 100 times the rim),
    the first impact's spin-up is beyond 10 x the free motion: the verdict the call forms is that speed
    fault (code 1), the one formed from scratch, and the record reports it naming the body."""
    from contactlab.scenarios import make_scene
    from contactlab.sim import box_stages
    sim = Simulator(make_scene("pile", count=10))
    assert isinstance(sim.stages, box_stages.CompiledRowStages)
    kind, radius, jointed, mass = faults.fault_statics(sim)
    if radius_scale != 1.0:
        statics = (kind, radius * radius_scale, jointed, mass)
        monkeypatch.setattr(faults, "fault_statics", lambda s: statics)
        monkeypatch.setattr(box_stages, "fault_statics", lambda s: statics)
    real, taken = faults.judged_verdict, []

    def spy(sim_, before, rec, depth):
        verdict = real(sim_, before, rec, depth)
        if verdict is not None:
            taken.append((tuple(verdict), tuple(_from_scratch(sim_, before, rec, depth))))
        return verdict
    monkeypatch.setattr(faults, "judged_verdict", spy)
    recs = [sim.step() for _ in range(30)]
    assert len(taken) == 30 and all(a == b for a, b in taken)
    faulty = [k for k, r in enumerate(recs) if not r.plausible]
    if radius_scale == 1.0:
        assert not faulty
    else:
        assert faulty and all(taken[k][0][0] == 1 for k in faulty)
        name = sim.model.names[taken[faulty[0]][0][1]]
        assert recs[faulty[0]].fault.startswith(f"step {faulty[0] + 1} ") and f"body {name!r} reached" in \
            recs[faulty[0]].fault


def test_a_compiled_steps_verdict_is_not_taken_for_a_state_changed_after_it():
    """A verdict the compiled call formed is about the state it left: a body moved or sped up after the
    call (by hand, inside the checked step) is judged again, and the fault is found (the detector's test
    above on the compiled step), as is a turn correction's overlap it did not know."""
    sim = Simulator(_rest_box(), dt=H)
    from contactlab.sim.box_stages import CompiledRowStages
    assert isinstance(sim.stages, CompiledRowStages)
    sim.step()
    seen = []

    def take():
        rec = sim._step()
        seen.append(sim.step_state.judged is not None)
        sim.data.position[1, 1] += 0.01
        return rec
    rec = faults.checked_step(sim, take)
    assert seen == [True] and not rec.plausible and "displaced 0.01 m" in rec.fault
    # the same step left alone: its verdict taken, plausible
    rec = faults.checked_step(sim, sim._step)
    assert rec.plausible and sim.step_state.judged is not None

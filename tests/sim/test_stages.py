"""The step's stages (sim/stages.py, sim/box_stages.py) are chosen from what the contact model and
the method declare, not from their names: box friction's own functions under another model name
get the same stages and the same bits; without ``COMPILED_STEP`` the general row stages take every
step, bit for bit as the compiled call; a model or method without those capabilities gets the
general stages; a configuration changed between steps is planned anew."""
import types

import numpy as np
import pytest

from contactlab.models import box_friction
from contactlab.scenarios import make_scene
from contactlab.sim import Simulator
from contactlab.sim.box_stages import CompiledRowStages, RowStages
from contactlab.sim.stages import Stages


def _renamed(drop=()):
    """box friction's module under another name, without the attributes in ``drop``."""
    mod = types.ModuleType("my_boxes")
    for k, v in vars(box_friction).items():
        if not k.startswith("__") and k not in drop:
            setattr(mod, k, v)
    mod.NAME = "my-boxes"
    return mod


def _state(sim):
    d = sim.data
    return [a.copy() for a in (d.position, d.quaternion, d.linear_velocity, d.angular_velocity)]


@pytest.mark.parametrize("drop,expected", [((), CompiledRowStages), (("COMPILED_STEP",), RowStages),
                                           (("sweep_heights",), Stages)])
@pytest.mark.parametrize("iterations", [None, 20])
def test_stages_follow_the_models_capabilities_not_its_name(drop, expected, iterations):
    method = "pgs" if iterations else "box-qp"
    ref = Simulator(make_scene("pile", count=6), "box-friction", method, iterations=iterations,
                    model_options={"coupling": "previous"})
    sim = Simulator(make_scene("pile", count=6), "box-friction", method, iterations=iterations,
                    model_options={"coupling": "previous"})
    assert type(ref.stages) is CompiledRowStages
    sim.contact_model = _renamed(drop)          # planned anew at the next step, from its capabilities
    for k in range(60):
        ra, rb = ref.step(), sim.step()
        assert type(sim.stages) is expected
        for x, y in zip(_state(ref), _state(sim)):
            if expected is Stages and iterations:
                continue            # assembled pgs without top-down heights: other iterates (below)
            assert np.array_equal(x, y), f"step {k + 1}"
        if expected is not Stages:
            assert (ra.success, ra.iterations, ra.residual) == (rb.success, rb.iterations, rb.residual)
        elif not iterations:        # box-qp's answers, whose residual solve() measures on the assembled problem
            assert (ra.success, ra.iterations) == (rb.success, rb.iterations) == (True, ra.iterations)
    if expected is Stages and iterations:
        # the general stages sweep the assembled rows in their own order: 20 sweeps leave another
        # residual, yet every box lands on the ground as with the top-down sweeps
        assert not sim.stages.matrix_free
        assert np.abs(sim.data.position[:, 2] - ref.data.position[:, 2]).max() < 5e-3


def test_methods_are_told_apart_by_their_options():
    """psor (relaxation 1.2) does not sweep as the matrix-free PGS does: its fixed-budget steps are
    assembled, with the top-down heights; pgs given another option than the budget and its stops
    too; box-qp certifies its warm start without the matrix, pgs-sm does not."""
    sc = lambda: make_scene("stack", count=3)
    psor = Simulator(sc(), "box-friction", "psor", iterations=10)
    pgs = Simulator(sc(), "box-friction", "pgs", iterations=10)
    pgs_omega = Simulator(sc(), "box-friction", "pgs", iterations=10, solver_options={"omega": 1.0})
    assert (psor.stages.matrix_free, pgs.stages.matrix_free, pgs_omega.stages.matrix_free) == (False, True, False)
    assert psor.stages.heights and pgs_omega.stages.heights and not psor.stages.compiled
    assert Simulator(sc(), "box-friction", "box-qp").stages.warm_start_certify
    assert not Simulator(sc(), "box-friction", "pgs-sm").stages.warm_start_certify
    assert type(Simulator(sc(), "stewart-trinkle", "lemke").stages) is Stages
    for sim in (psor, pgs_omega):
        sim.step()
        assert not sim.last_solution.info.get("matrix_free") and sim.last_problem.n == 3 * sim.data.contacts.count


def test_a_changed_solver_option_is_planned_anew_and_arrays_compare_by_identity():
    sim = Simulator(make_scene("stack", count=3), "box-friction", "box-qp")
    first = sim.stages
    sim.step()
    assert sim.stages is first
    sim.solver_options["algorithm"] = "ipm"      # no compiled step for the interior point
    sim.step()
    assert sim.stages is not first and not sim.stages.compiled and sim.last_solution.success
    second = sim.stages
    sim.solver_options["x0"] = np.zeros(3)      # an array option: planned once, then kept while it is the same
    sim.plan()
    third = sim.stages
    assert third is not second
    sim.plan()
    assert sim.stages is third
    sim.solver_options["x0"] = np.zeros(3)      # another array: planned anew (no ValueError)
    sim.plan()
    assert sim.stages is not third

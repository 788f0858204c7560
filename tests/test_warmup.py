"""contactlab warmup: its tasks cover every solver method and contact model, and run cleanly."""
import pytest
from typer.testing import CliRunner

import contactlab as cl
from contactlab.cli import app
from contactlab.models import available_models
from contactlab.warmup import SIMULATIONS, Task, _problems, run_task, tasks


def test_tasks_cover_every_method_and_model():
    labels = {t.name for t in tasks() if t.kind == "solve"}
    assert labels == set(cl.available_solvers()) - {"auto"}
    assert {m for m, *_ in SIMULATIONS} == set(available_models())


@pytest.mark.parametrize("method", sorted(set(cl.available_solvers()) - {"auto"}))
def test_each_methods_warm_up_task_runs_without_error(method):
    problems = _problems(method)
    assert problems, method
    label, seconds, error = run_task(Task("solve", method))
    assert error is None and label == f"solve {method}"


def test_a_simulation_task_runs_and_a_bad_option_is_a_usage_error():
    assert run_task(Task("simulate", "box-friction/box-qp/stack"))[2] is None
    r = CliRunner().invoke(app, ["warmup", "--only", "everything"])
    assert r.exit_code == 2 and "--only" in r.output


def test_the_robot_task_runs_the_quadruped_with_its_controller_through_run():
    """The task that compiles the rollout ahead (sim/robot_rollout.py) runs cleanly and is listed."""
    assert "no-slip/default/quadruped+controllers" in {t.name for t in tasks() if t.kind == "simulate"}
    label, _, error = run_task(Task("simulate", "no-slip/default/quadruped+controllers"))
    assert error is None and label == "simulate no-slip/default/quadruped+controllers"


def test_the_large_stack_task_compiles_the_sparse_rows_kernels_a_small_stack_does_not_reach():
    """A 100-box stack's rows take the sparse Delassus frames (mechanics/delassus.py): its task,
    named with its count, compiles them ahead of a user's first larger scene."""
    from contactlab.mechanics import delassus
    assert "box-friction/box-qp/stack@100" in {t.name for t in tasks() if t.kind == "simulate"}
    label, _, error = run_task(Task("simulate", "box-friction/box-qp/stack@100"))
    assert error is None and label == "simulate box-friction/box-qp/stack@100"
    assert delassus.frame_values.signatures     # the entry kernel (its callees compile into it, or load with it
                                                # from the cache without signatures of their own)

"""box-qp's ``proximal_after_poor`` (solvers/box_qp/options.py; read by sim/box_stages.py
``RowStages.solver_arguments``): a step after one whose box-qp answer handed rows to the Python path
(info ``handed`` > 0), itself after one that did not, is solved with one proximal-point step from its warm
start; every other step as without it (on by default). Two resting 60-box columns, each column one island
of 720 rows: with ``grouped_max`` = 0 the compiled island call takes no island over ``small_n`` rows, so
each island is handed over on every step (a poor step by the rule's measure); with the default, the
compiled call takes both. Every applied answer is checked against the box-friction LCP's conditions
computed with numpy from the step's problem alone (tests/solvers/test_box_qp_left_islands.py
``_kkt_error``)."""
import numpy as np

from contactlab.scenarios import make_scene
from contactlab.sim import Simulator
from contactlab.solvers import solve

from ..solvers.test_box_qp_left_islands import _columns_problem, _kkt_error


def test_handed_counts_the_rows_outside_the_compiled_call():
    p, _ = _columns_problem()
    assert p.islands[0] == 2
    whole = solve(p, "box-qp", grouped_max=0)          # both 720-row islands on their own blocks in Python
    assert whole.success and whole.info["handed"] == p.n
    grouped = solve(p, "box-qp")                        # both in the compiled call (body-pair groups)
    assert grouped.success and grouped.info["handed"] == 0
    for s in (whole, grouped):
        assert _kkt_error(p, s.z) <= 1e-6


def _run(options, steps=8):
    """(the previous step was the first of a run of steps that handed rows, this step took the proximal step,
    this step solved by box-qp) per step; the runs counted here from each step's info ``handed``."""
    sim = Simulator(make_scene("stack", count=60, columns=2), "box-friction", "box-qp", solver_options=options)
    seen, run, first_of_run = [], 0, False
    for _ in range(steps):
        assert sim.step().success
        s = sim.last_solution
        by_qp = not s.info.get("warm_start_certified", False)
        seen.append((first_of_run, "proximal" in s.info, by_qp))
        assert s.relative_residual <= 1e-6
        assert _kkt_error(sim.last_problem, np.asarray(s.z)) <= 1e-6    # the original LCP, independently
        run = run + 1 if s.info.get("handed", 0) > 0 else 0
        first_of_run = run == 1
    return seen


def test_the_proximal_step_only_after_the_first_poor_step_of_a_run():
    # every island handed over on every step: one run, the proximal step on its second step alone
    seen = _run({"grouped_max": 0})
    solved = [(after, took) for after, took, by_qp in seen if by_qp]
    assert all(took == after for after, took in solved)
    assert [took for _, took, _ in seen] == [False, True] + [False] * (len(seen) - 2)
    # the default: taken exactly after the first step of a run that handed rows
    seen = _run({})
    assert all(took == after for after, took, by_qp in seen if by_qp)
    # the option off: never, whatever was handed
    assert not any(took for _, took, _ in _run({"grouped_max": 0, "proximal_after_poor": 0.0}))

"""box-qp's ``proximal_after_poor`` (solvers/box_qp/options.py; read by sim/box_stages.py
``RowStages.solver_arguments``): a step after one whose box-qp answer handed rows to the Python path
(info ``handed`` > 0) is solved with one proximal-point step from its warm start; every other step as
without it (on by default). Two resting 60-box columns, each column one island of 720 rows: with ``grouped_max`` = 0 the
compiled island call takes no island over ``small_n`` rows, so each island is handed over (a poor step by
the rule's measure); with the default, none is. Every applied answer is checked against the box-friction
LCP's conditions computed with numpy from the step's problem alone (tests/solvers/test_box_qp_left_islands.py
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
    sim = Simulator(make_scene("stack", count=60, columns=2), "box-friction", "box-qp", solver_options=options)
    seen = []           # (previous step handed rows, this step took the proximal step, this step solved by box-qp)
    prev = None
    for _ in range(steps):
        assert sim.step().success
        s = sim.last_solution
        by_qp = not s.info.get("warm_start_certified", False)
        seen.append((prev is not None and prev.info.get("handed", 0) > 0, "proximal" in s.info, by_qp))
        assert s.relative_residual <= 1e-6
        assert _kkt_error(sim.last_problem, np.asarray(s.z)) <= 1e-6    # the original LCP, independently
        prev = s
    return seen


def test_the_proximal_step_only_after_a_poor_step():
    for options in ({"proximal_after_poor": 1e-7, "grouped_max": 0}, {"proximal_after_poor": 1e-7}):
        seen = _run(options)
        solved = [(after, took) for after, took, by_qp in seen if by_qp]
        assert all(took == after for after, took in solved)     # taken exactly after a step that handed rows
        if "grouped_max" in options:
            assert sum(after for after, _ in solved) >= 3       # the rule exercised: every island handed over
        else:
            assert any(not after for after, _ in solved)        # islands in the compiled call: plain steps
    # the option off: never, whatever was handed
    assert not any(took for _, took, _ in _run({"grouped_max": 0, "proximal_after_poor": 0.0}))

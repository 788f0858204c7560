"""``box-qp``'s options (:class:`BoxQPOptions`): the residual target, the Newton and interior-point
budgets, and the island settings; every default documented on the class."""
from __future__ import annotations

from dataclasses import dataclass

from ...errors import ParamError
from ...kernels.tolerances import CERTIFY


@dataclass(frozen=True)
class BoxQPOptions:
    """tol: relative residual target (problems/residual.py, the measure solve() certifies);
    max_iterations: Newton steps per QP; max_outer: bound updates for friction-coupled rows;
    dense_max: largest n of a sparse M factorised densely (above: sparse LDL', QDLDL, whose factor of a
    contact matrix is far cheaper than a dense Cholesky; docs/benchmarks-tuning.md); armijo: sufficient decrease;
    algorithm: "auto" (``newton_steps`` projected Newton steps, then interior point), "newton"
    (projected Newton only) or "ipm" (interior point only); newton_steps: projected Newton steps
    before the interior point ("auto") for n > small_n, stopping at the first step the line search
    shortens (up to small_n: max_iterations, as Newton steps are cheap there and its vertex answers
    settle friction-coupled bounds in fewer updates);
    ipm_iterations: interior-point iterations per QP; islands: solve a sparse problem's own
    ``islands`` (set by its builder, e.g. box friction) apart (:func:`_islands`); grouped_max: the
    largest island solved by the compiled projected Newton with block-by-block factorisations over
    the problem's ``body_groups`` (0: none; e.g. a pile's columns of boxes; above
    :data:`contactlab.kernels.box_qp_islands.CSR_FROM` rows on its CSR block, in time linear in its entries; by default every island). A larger
    island takes the whole method in Python, as does one of more than POOR_LEFT_FROM rows from a poor
    start (the compiled call leaves it: a falling pile's impact islands, whose Newton steps mostly do
    not land; one it leaves after its Newton steps takes the interior point at once; the settled 2,000-box pile's 960-row towers are faster with every island in the compiled
    call: docs/benchmarks-sim.md);
    set_aside: with islands, solve the rows that 0 likely solves (gaps, :func:`_set_aside`) last, so
    the islands are those of the rows in play (off by default: a falling pile's velocity problems
    stay one island without their gaps and take several rounds; the position correction sets it);
    island_search_max: the largest island of the compiled call given ``max_iterations`` Newton steps
    with line search; a larger one takes ``newton_steps`` full steps, then the interior point, as a
    whole problem above small_n does (0: every island the line-search budget; the position correction
    sets 200: on its degenerate columns, four rows per face on three of its freedoms, Newton's free
    block is near singular and its steps are cut to 1e-8 for 30 iterations);
    island_iterations: the compiled call's Newton steps with line search per island (at most
    ``max_iterations``; "newton" alone: ``max_iterations``): an island whose Newton has not landed
    by then takes the interior point. A settled pile's columns certify in one or two steps; a
    falling pile's impact islands mostly do not land at all, and 60 steps each before the interior
    point cost more than they saved (certified piles, 200 steps, ms per step, 500 / 1,000 / 2,000
    boxes: 60 steps 18.5 / 42.5 / 122, 30 steps 15.9 at 500, 20 steps 15.3-16.2 / 37.2 / 123,
    15 steps 15.0 / 38.9, 10 steps 15.7 at 500: fewer cost the settled columns an interior point now
    and then); island_poor_iterations: the same budget for an island whose start is poor (relative
    error above IPM_WARM_MAX, the interior point's own line for a cold start): on a falling 500-box
    pile's impact steps (20-60) 992 of 2,671 islands started above 0.9, and 274 of those did not land
    in 20 steps (landed: 8.2 steps on average), while a settled column starts near its answer
    (certified piles, 200 steps, ms a step, 500 / 1,000 / 2,000 boxes: 20 steps 13.9-14.1 / 36.8 /
    122-123, 12 steps 13.4 at 500, 8 steps 13.1-13.3 / 33.6 / 124, 5 steps 12.9-15.4 / 32.9 / 130,
    3 steps 14.8 / 36.3);
    proximal: where > 0 and a warm start z0 is given, box-qp first solves the proximal problem
    (M + rho I, q - rho z0; Rockafellar, SIAM J. Control Optim. 14(5), 1976, one proximal-point step)
    with rho = ``proximal`` times the mean of M's diagonal, and returns its answer where it is certified
    on the original problem (the same measure and ``tol``); else the original from the warm start. With
    cfm ~ 1e-8, a face's four normal impulses are pinned only along M's near-null directions (the
    face's twist, eigenvalue cfm): projected Newton's steps there are w/cfm, which throw a settled
    pile's warm start far off; rho >> cfm damps them, and a rho small against the certificate's
    scale (|rho (z - z0)| within tol of each row's terms) leaves the proximal answer certified as the
    original's (off by default; docs/benchmarks-sim.md, fourteenth session).

    proximal_after_poor: read by the simulator (sim/box_stages.py ``RowStages.solver_arguments``), not by a
    single solve: where > 0 (and ``proximal`` is 0), a step after one whose box-qp answer handed rows to the
    Python path (info ``handed`` > 0: a large island, or one the compiled Newton left or gave up on, solved by
    the interior point) that came after one that did not (a landing pile's run of impact steps, each
    handing rows over, takes the proximal step once) is solved with ``proximal`` = this value; every other
    step as without it. A settled pile's steps can alternate between ones whose islands hand rows over and
    ones the compiled call solves (the joined towers' warm start poor along the faces' twists, above); the
    proximal step after a handed one keeps that answer near its warm start and ends the alternation, where
    taken on every step it makes the steps that were fine dearer (docs/benchmarks-sim.md, fourteenth
    session); 0: off."""
    tol: float = 0.1 * CERTIFY
    max_iterations: int = 60
    max_outer: int = 30
    dense_max: int = 200
    armijo: float = 1e-4
    algorithm: str = "auto"
    newton_steps: int = 3
    small_n: int = 200
    ipm_iterations: int = 80
    islands: bool = True
    grouped_max: int = 1_000_000
    set_aside: bool = False
    island_search_max: int = 0
    island_iterations: int = 20
    island_poor_iterations: int = 8
    proximal: float = 0.0
    proximal_after_poor: float = 1e-7

    def __post_init__(self):
        if not (self.tol > 0 and self.max_iterations >= 1 and self.max_outer >= 1 and self.dense_max >= 0
                and self.newton_steps >= 0 and self.small_n >= 0 and self.ipm_iterations >= 1
                and self.grouped_max >= 0 and self.island_search_max >= 0 and self.island_iterations >= 1
                and self.island_poor_iterations >= 1 and self.proximal >= 0
                and self.proximal_after_poor >= 0):
            raise ParamError("tol > 0, max_iterations >= 1, max_outer >= 1, dense_max >= 0, newton_steps >= 0, "
                             "small_n >= 0, ipm_iterations >= 1, grouped_max >= 0, island_search_max >= 0, "
                             "island_iterations >= 1, island_poor_iterations >= 1, proximal >= 0 and "
                             "proximal_after_poor >= 0 are required")
        if self.algorithm not in ("auto", "newton", "ipm"):
            raise ParamError(f"algorithm must be 'auto', 'newton' or 'ipm', got {self.algorithm!r}")

"""``box-qp``: projected Newton on the convex bound-constrained QP of a symmetric boxed LCP.

A boxed LCP with symmetric positive definite M (box friction with cfm > 0, arechavaleta eq. 16-17)
is the optimality condition of min 1/2 z'Mz + q'z over lo <= z <= hi. Bertsekas's projected
Newton method (SIAM J. Control Optim. 20(2), 1982): the rows at a bound whose gradient pushes
outward (within an epsilon that shrinks with the residual) are held; on the others, the exact
Newton step solves M_FF d_F = -g_F (dense Cholesky, or a sparse LU for large sparse M); an Armijo
search along the projection arc z(t) = clip(z + t d) keeps descent. Once the held set is the
solution's, the full step lands on the exact answer, so a warm-started step from the previous
time step typically needs one to three factorisations, not thousands of sweeps.

Projected Newton stalls on large redundant contact sets (a pile: four coplanar points per face,
Delassus condition ~1e9 at cfm 1e-8): its Newton directions are huge along the near-null space, and
the projection arc cuts them to nothing. ``algorithm="auto"`` (default) therefore gives projected
Newton its steps while they are full ones (a warm start near the answer certifies in 0-2; up to
``small_n`` rows its whole budget) and otherwise solves the QP by a primal-dual interior-point
method (Mehrotra predictor-corrector; Nocedal & Wright, Numerical Optimization, 2nd ed., Alg. 16.4
with the bounds as the inequalities; up to CENTRALITY_CORRECTORS of Gondzio's centrality
correctors on the same factorisation): rows with lo = hi are eliminated, each iteration factorises
M + diag(s_lo/(z-lo) + s_hi/(hi-z)) once (dense Cholesky; sparse: LDL' by QDLDL on an AMD
ordering, or from CHOLMOD_MIN rows CHOLMOD's supernodal Cholesky; for a contact matrix
M = H W H' + cfm I whose problem carries those ``factors``, through the bodies' velocities where they
have fewer coordinates than the kept rows: :class:`_BodySpace`), and the iterate itself is
checked against the certified residual. It certifies cold the recorded pile steps on which
projected Newton, PGS and PGS-SM do not (docs/benchmarks-sim.md). Its convergence
is Mehrotra's heuristic (no proof); an iterate that does not certify is reported as MAX_ITERATIONS.

Where every factorisation is dense (dense M, or n <= ``dense_max``), the projected Newton QPs and
the bound updates below run as one compiled call (kernels/box_qp.py: the same iterations, Cholesky
with the same least-squares fallback); Python takes over only for the interior point.

Friction-coupled bounds (``findex``, ``mu``): the bounds are frozen at the current normal values,
the QP solved, the bounds updated and the QP solved again from there (a fixed point of the
bounds, as in arechavaleta §IV-C eq. 16 with the estimate refined); ``max_outer`` cycles, and
solve() certifies the coupled residual. No convergence guarantee for the coupled problem: an
unconverged run is reported as MAX_ITERATIONS, never as SOLVED.
"""
from .factors import (CHOLMOD_MIN, EMBED_FREE, _CholmodFactor, _embedded, _factor_solve, _LDL, _PatternCache,
                      _QDLDLFactor, _sparse_spd_solver, _spd_lu, _symmetric_csc)
from .interior_point import (CENTRALITY_CORRECTORS, IPM_WARM_MAX, _ipm, _ipm_advance, _ipm_centrality, _ipm_duals,
                             _ipm_gaps, _ipm_mu, _ipm_rhs, _ipm_targets)
from .islands import GROUPED_FROM, SET_ASIDE_GAP, _island_solves, _islands, _kept_islands, _set_aside
from .newton import _qp
from .options import BoxQPOptions
from .residual import _certified, _residual
from .shifted import BODY_SPACE_CHOLMOD_MIN, _BodySpace, _Shifted
from .solver import _box_qp, _compiled, _dense_factors, _dense_islands, _python_path, _solve, box_qp_solve, dense_factor_cache

__all__ = ["BoxQPOptions", "box_qp_solve", "CHOLMOD_MIN", "EMBED_FREE", "BODY_SPACE_CHOLMOD_MIN", "IPM_WARM_MAX",
           "CENTRALITY_CORRECTORS", "GROUPED_FROM", "SET_ASIDE_GAP"]

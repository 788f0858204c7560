"""Velocity-level time-stepping LCP with a friction pyramid (Stewart-Trinkle / Anitescu-Potra).

arechavaleta eq. (7)-(15), drumwright §III-C with the linearised cone: complementarity variables
grouped by type, y = [c_l (nl), c_n (nc), beta (nc*d), lambda (nc), u (nm), s (nm)]:
    L v+ + l_bias           >= 0  perp c_l    joint limits (eq. 12)
    N v+ + n_bias (+ cfm c_n) >= 0 perp c_n   non-penetration (eq. 7)
    D v+ + E lambda         >= 0  perp beta   (eq. 8)
    mu c_n - E' beta        >= 0  perp lambda (eq. 9)
    A v+ - a_target + s     >= 0  perp u      velocity motors, impulse u - a_max in [-a_max, a_max]
    2 a_max - u             >= 0  perp s
Joints (J v+ = j_rhs, eq. 10) are the free variables of a :class:`MixedLCP` and are removed by its
Schur complement (eq. 15); without joints the problem is a plain :class:`LCP`. The matrix is
copositive-plus, so Lemke's method solves it; it is not symmetric (use lemke).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..kernels.mixed import pyramid_coupling
from ..mechanics.system import csr_of, rows_times, rows_transpose_times
from ..problems import ProblemStructure
from ..solvers.st_box import AUTO_MIN_ROWS as ST_BOX_ROWS
from .built import Built
from .common import StepResult, contact_modes, mixed_problem, mixed_recover, pyramid_to_tangent, stacked_rows

NAME = "stewart-trinkle"
DEFAULT_METHOD = "lemke"
#: its jointed scenes' step after the system is one compiled call with Lemke (sim/st_stages.py)
COMPILED_STEP = "stewart-trinkle-mixed"
#: given no method and no options, on scenes of free bodies only: ``auto``, which solves each island
#: of the step's LCP (sim/islands.py) by Lemke below solvers/st_box.py ``AUTO_MIN_ROWS`` rows and by
#: st-box (the pyramid as box friction in 45-degree axes by box-qp, certified on this LCP, Lemke
#: where it does not certify) from there: a pile's impact island on which Lemke pivots for minutes
#: (docs/benchmarks-sim.md, "Stewart-Trinkle piles by box-qp"); below that size the same Lemke calls
FREE_BODIES_DEFAULT = ("auto", {}, f"Lemke on islands below {ST_BOX_ROWS:,} rows, st-box (box-qp, certified on the "
                                    "pyramid LCP) from there")
DESCRIPTION = "velocity-level LCP, friction pyramid of d directions (arechavaleta eq. 13-15)"


@dataclass(frozen=True)
class Options:
    """cfm: constraint force mixing added to the diagonal of the contact rows (normal, friction,
    lambda; on top of the scene's settings.cfm). The pyramid LCP of a resting stack is highly degenerate (4 coplanar
    points per face); a tiny cfm keeps pivoting well posed and changes velocities by ~cfm * impulse."""
    cfm: float = 1e-6


def _zero_rows(k: int, ndof: int) -> sp.csr_matrix:
    """k empty rows (the lambda and motor-slack variables act on no velocity)."""
    return csr_of(np.zeros(0), np.zeros(0, dtype=np.int64), np.zeros(k + 1, dtype=np.int64), (k, ndof))


def _parts(sys, cfm: float = 0.0):
    """H = [L; N; D; 0; A; 0] and [J; H] (canonical CSR, one concatenation), K (dense, compiled:
    kernels/mixed.py ``pyramid_coupling``, ``cfm`` on the contact rows' diagonal), c, v0 and the
    offsets (:func:`build` keeps H, v0 and the offsets on its problem for :func:`recover`)."""
    nc, d, nl, nm = sys.nc, sys.d, sys.nl, sys.nm
    ndof = sys.ndof
    rows = nl + nc * (d + 2) + 2 * nm     # H's rows: L, N, D, lambda, A, motor slack
    from ..solvers.registry import DENSE_BYTES_LIMIT
    if 8 * rows * rows > DENSE_BYTES_LIMIT:   # refused before the dense K is allocated
        from ..errors import ModelError
        raise ModelError(f"this step's Stewart-Trinkle problem has {rows} rows ({nc} contacts x {d} friction "
                         f"directions): its dense coupling matrix needs {8 * rows * rows / 2**30:.1f} GiB "
                         f"(limit {DENSE_BYTES_LIMIT / 2**30:.0f} GiB); use fewer bodies or friction_directions, "
                         "or model box-friction")
    H, R = stacked_rows(sys, [sys.L, sys.N, sys.D, _zero_rows(nc, ndof), sys.A, _zero_rows(nm, ndof)])
    o_cn = nl
    o_b = o_cn + nc
    o_lam = o_b + nc * d
    o_u = o_lam + nc
    o_s = o_u + nm
    K = pyramid_coupling(nl, nc, d, nm, np.ascontiguousarray(sys.mu, dtype=np.float64), float(cfm))
    c = np.concatenate([sys.l_bias, sys.n_bias, np.zeros(nc * d + nc), -sys.a_target, 2.0 * sys.a_max])
    v0 = sys.v_free()
    if nm:
        v0 = v0 - rows_times(sys.Minv, rows_transpose_times(sys.A, sys.a_max))
    return H, K, c, v0, (o_cn, o_b, o_lam, o_u, o_s), R


def build(sys, options: Options | None = None) -> Built:
    """The MixedLCP (joints) or LCP (no joints) of eq. (13)-(15), rows grouped by type, as a
    :class:`~contactlab.models.built.Built` whose state (H, v0, offsets) is what :func:`recover`
    maps the answer back with."""
    options = options or Options()
    # cfm on the contact rows only (normal, friction, lambda): joints, limits, motors stay exact
    H, K, c, v0, off, R = _parts(sys, sys.cfm + options.cfm)
    rows = {"limit": slice(0, off[0]), "normal": slice(off[0], off[1]), "friction": slice(off[1], off[2]),
            "lambda": slice(off[2], off[3]), "motor": slice(off[3], off[4]), "motor_slack": slice(off[4], off[4] + sys.nm)}
    prob = mixed_problem(sys, H, K, c, v0, stacked=R, structure=ProblemStructure(row_groups=rows))
    return Built(prob, rows, (H, v0, off))


def recover(sys, built, solution, options: Options | None = None) -> StepResult:
    """v+, the contact impulses (normal; the pyramid's beta as tangent vectors), joint, limit and
    motor impulses from the answer of :func:`build`'s problem (eq. (13)). ``built``: the
    :class:`~contactlab.models.built.Built` of :func:`build` (or its bare problem, then H and v0
    are formed again from ``sys``)."""
    if isinstance(built, Built):
        problem, (H, v0, off) = built.problem, built.state
    else:
        problem = built
        H, _, _, v0, off, _ = _parts(sys)
    o_cn, o_b, o_lam, o_u, o_s = off
    v_next, x, y = mixed_recover(sys, problem, solution, H, v0)
    normal = y[o_cn:o_b]
    beta = y[o_b:o_lam]
    tangent = pyramid_to_tangent(beta, sys.d) if sys.nc else np.zeros((0, 2))
    return StepResult(v_next=v_next, normal=normal, tangent=tangent, joint=x, limit=y[:o_cn],
                      motor=y[o_u:o_s] - sys.a_max, modes=contact_modes(sys, v_next, normal),
                      info={"lambda": y[o_lam:o_u]})

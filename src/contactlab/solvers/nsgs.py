"""``nsgs``: nonsmooth Gauss-Seidel over contacts for the exact-cone Coulomb problem.

Jean (1999), "The non-smooth contact dynamics method", CMAME 177 (NSCD's block Gauss-Seidel);
the variant of Siconos' fc3d NSGS (Acary, Bremond, Huber 2018, "On solving contact problems with
Coulomb friction: formulations and numerical comparisons", section 5.1): sweep the contacts, and
solve each one-contact problem u_i = W_ii r_i + (q_i + sum_{j != i} W_ij r_j) exactly with
:func:`contactlab.kernels.coulomb.local_solve` (separation / sticking in closed form, otherwise
damped semismooth Newton on Alart-Curnier). Optional over-relaxation ``omega`` (the relaxed
iterate is projected back on the cone) and a shuffled order per sweep. The stopping test is the
one residual definition (natural map, problems/friction_contact.py) evaluated in the kernel.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..kernels import coulomb as K
from ..solution import Status
from ._fc_common import FC_PROBLEMS, TIME_LIMIT, Deadline, finish, local_problem, start
from .registry import register

_STATUS = {K.CONVERGED: Status.SOLVED, K.MAX_SWEEPS: Status.MAX_ITERATIONS, K.NOT_FINITE: Status.NUMERICAL_FAILURE}


@dataclass(frozen=True)
class NSGSOptions:
    """tol: natural-map residual target (relative, see FrictionContact.residuals); max_sweeps: sweep
    limit; omega: over-relaxation in (0, 2); shuffle/seed: random contact order each sweep;
    local_tol/max_newton: the one-contact Newton's tolerance and iteration limit; check_every:
    evaluate the residual every this many sweeps; max_time: wall-clock cap in seconds (0: none),
    checked between chunks of sweeps."""

    tol: float = 1e-8
    max_sweeps: int = 5000
    omega: float = 1.0
    shuffle: bool = False
    seed: int = 0
    local_tol: float = 1e-14
    max_newton: int = 30
    check_every: int = 1
    max_time: float = 0.0

    def __post_init__(self):
        if not 0.0 < self.omega < 2.0:
            raise ValueError(f"omega must lie in (0, 2), got {self.omega}")
        if not self.tol > 0 or not self.local_tol > 0:
            raise ValueError("tol and local_tol must be > 0")
        if self.max_sweeps < 1 or self.max_newton < 1 or self.check_every < 1:
            raise ValueError("max_sweeps, max_newton and check_every must be >= 1")


def run_nsgs(lp, r, opts: NSGSOptions):
    """Sweep in chunks (so that ``max_time`` is honoured); returns (code, sweeps, residual, timed_out)."""
    W = lp.csr()
    order = np.arange(lp.nc, dtype=np.int64)
    ip, ix = W.indptr.astype(np.int64), W.indices.astype(np.int64)
    deadline = Deadline(opts.max_time)
    done = 0
    chunk = opts.max_sweeps if opts.max_time <= 0 else max(opts.check_every, 10)
    while True:
        k = min(chunk, opts.max_sweeps - done)
        code, sweeps, res = K.nsgs_kernel(ip, ix, W.data, lp.Wdiag, lp.q, lp.mu, lp.rho, lp.dim, r, k, opts.tol,
                                          opts.omega, order, opts.shuffle, opts.seed + done, opts.local_tol,
                                          opts.max_newton, lp.denominator(), opts.check_every)
        done += sweeps
        if code != K.MAX_SWEEPS or done >= opts.max_sweeps:
            return code, done, res, False
        if deadline.passed():
            return code, done, res, True


@register("nsgs", problems=FC_PROBLEMS, options=NSGSOptions, warm_start=True, convert=False,
          description="nonsmooth Gauss-Seidel over contacts, exact local solver (Jean 1999; Siconos fc3d NSGS)",
          guarantees="bounded sweeps; SOLVED only at the natural-map residual <= tol; no convergence proof "
                     "in general (the Coulomb problem is not monotone)")
def nsgs(problem, opts: NSGSOptions, warm_start=None):
    lp = local_problem(problem)
    r = start(lp, warm_start)
    code, sweeps, res, timed_out = run_nsgs(lp, r, opts)
    reason = {K.CONVERGED: "residual below tol", K.MAX_SWEEPS: "sweep limit reached",
              K.NOT_FINITE: "iterate became non-finite"}[code]
    return finish(problem, r, _STATUS[code], sweeps, residual_claimed=res,
                  reason=TIME_LIMIT if timed_out else reason)

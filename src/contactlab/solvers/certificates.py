"""Certificates of infeasibility, checked by ``solve()`` independently of the method that claims them.

A status NO_SOLUTION is a proof. A method that claims it puts ``info['certificate']``:

* ``{"kind": "farkas", "y": y}`` for an LCP (or the LCP a problem reduces to): y >= 0 with
  M'y <= 0 and q'y < 0 (Farkas' lemma: then no z >= 0 has M z + q >= 0, so no LCP solution).
  For PSD M this is also necessary (a feasible PSD LCP is solvable; Cottle-Pang-Stone 3.8.6), so
  every infeasible PSD LCP has one. Checked with the relative tolerances FARKAS, FARKAS_MARGIN of
  kernels/tolerances.py; the check records the radius R = -q'y / max(M'y)_+ (inf when M'y <= 0
  exactly): rounding aside, no z >= 0 with ||z||_1 < R is feasible.
* ``{"kind": "exhaustive", "supports": 2**n}`` from ``enumerate`` only: every support was decided
  (a nonsingular block solved directly, a singular one by a HiGHS LP), so no complementary
  solution exists. The LCP is then feasible but unsolvable (no Farkas vector exists); the check
  is the count of decided supports, not a short certificate. It is checked by
  ``solvers/enumerate.py`` :func:`check_exhaustive`, which ``enumerate`` registers with itself
  (``register(..., certificates=...)``): a kind is accepted only from the method that registered
  its check.
* For a UCP: the HiGHS MIP of pang-trinkle-lo (method ``mip``, registered as the UCP's referee)
  is infeasible; ``solve()`` runs it itself when another method claims NO_SOLUTION.

Anything else, or a certificate that fails its check, turns the status into NO_SOLUTION_FOUND.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..kernels.tolerances import FARKAS, FARKAS_MARGIN, RANK
from ..problems import LCP, FactoredLCP, Problem
from ..problems.validation import matvec, max_abs


def check_farkas(M, q: np.ndarray, y) -> tuple[bool, dict]:
    """Whether y certifies {z >= 0 : M z + q >= 0} empty (see the module docstring); with details."""
    y = np.asarray(y, dtype=np.float64).ravel()
    n = q.size
    if y.shape != (n,) or not np.all(np.isfinite(y)):
        return False, {"why": f"y must be a finite vector of length {n}"}
    ymax = float(np.max(y, initial=0.0))
    if ymax <= 0.0 or float(np.min(y)) < -FARKAS * ymax:
        return False, {"why": "y must be >= 0 and nonzero"}
    # checked on M / max|M|, q / max|q| and y / max y (entries at most 1: no overflow, and the tests
    # below are invariant under these scalings); a non-finite number anywhere rejects the vector
    y = np.maximum(y, 0.0) / ymax
    y1 = float(y.sum())
    sM = max_abs(M) or 1.0
    sq = float(np.max(np.abs(q), initial=0.0)) or 1.0
    Ms = M / sM if sp.issparse(M) else np.asarray(M) / sM
    Mty = matvec(Ms.T, y) if sp.issparse(Ms) else Ms.T @ y
    viol = float(np.max(Mty, initial=0.0))
    qty = float((q / sq) @ y)
    if not (np.isfinite(viol) and np.isfinite(qty) and np.isfinite(Mty).all()):
        return False, {"why": "M'y or q'y is not finite"}
    ok_m = viol <= FARKAS * y1
    ok_q = qty <= -FARKAS_MARGIN * y1
    with np.errstate(over="ignore"):   # R = -q'y / max(M'y)_+ does not depend on the scale of y
        radius = np.inf if viol <= 0.0 else -(qty * sq) / (viol * sM)
        detail = {"max_MTy": viol * sM * ymax, "qTy": qty * sq * ymax, "radius": float(radius)}
    if not ok_m:
        detail["why"] = "M'y <= 0 fails"
    elif not ok_q:
        detail["why"] = "q'y < 0 fails"
    return bool(ok_m and ok_q), detail


def farkas_lp(M, q: np.ndarray):
    """A Farkas vector of the LCP (M, q) from one HiGHS LP, or None when {z >= 0, Mz + q >= 0} is
    nonempty: min q'y s.t. M'y <= 0, sum y = 1, y >= 0 (M and q normalised by their max entries)."""
    from scipy.optimize import linprog
    n = q.size
    sM = max_abs(M) or 1.0
    sq = float(np.max(np.abs(q), initial=0.0)) or 1.0
    A = (sp.csr_matrix(M).T / sM) if sp.issparse(M) else np.asarray(M).T / sM
    res = linprog(q / sq, A_ub=A, b_ub=np.zeros(n), A_eq=np.ones((1, n)), b_eq=[1.0], bounds=(0, None),
                  method="highs", options={"primal_feasibility_tolerance": 1e-10,
                                           "dual_feasibility_tolerance": 1e-10})
    if res.status != 0 or res.fun >= -RANK:
        return None
    y = np.maximum(res.x, 0.0)
    return y if check_farkas(M, q, y)[0] else None


def lcp_feasible(M, q: np.ndarray) -> bool | None:
    """Whether some z >= 0 has M z + q >= 0 (HiGHS LP on the normalised data); None if undecided."""
    from scipy.optimize import linprog
    n = q.size
    sM = max_abs(M) or 1.0
    A = -(sp.csr_matrix(M) / sM) if sp.issparse(M) else -np.asarray(M) / sM
    res = linprog(np.zeros(n), A_ub=A, b_ub=q / sM, bounds=(0, None), method="highs")
    if res.status == 0:
        return True
    if res.status == 2:
        return False
    return None


def _lcp_data(problem: Problem, target: Problem | None):
    """(M, q) of the LCP a certificate refers to: the problem itself, or the LCP it was reduced to."""
    p = target if target is not None else problem
    if isinstance(p, FactoredLCP):
        p = p.to_lcp()
    if isinstance(p, LCP):
        return p.M, p.q
    return None


def verify(problem: Problem, target: Problem | None, method: str, info: dict,
           checks: dict | None = None) -> tuple[bool, str]:
    """Check the certificate behind a NO_SOLUTION claim of ``method``; (accepted, reason). A Farkas
    vector is checked here; any other kind only by the check the claiming method registered for it
    (``checks``, from ``register(..., certificates=...)``), which lives beside that method."""
    cert = info.get("certificate")
    if not isinstance(cert, dict):
        return False, "no certificate"
    kind = cert.get("kind")
    data = _lcp_data(problem, target)
    if data is None:
        return False, f"no certificate check for {type(problem).__name__}"
    M, q = data
    if kind == "farkas":
        ok, detail = check_farkas(M, q, cert.get("y"))
        cert.update({k: v for k, v in detail.items() if k != "why"})
        return ok, "Farkas vector checked" if ok else f"Farkas vector rejected: {detail.get('why')}"
    check = (checks or {}).get(kind)
    if check is not None:
        return check(M, q, cert)
    return False, f"unknown certificate kind {kind!r} for method {method!r}"

"""Shared pieces of the contact models: the step result, mixed-LCP assembly, contact modes."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from ..kernels._jit import jit
from ..mechanics.kernels import delassus_dense, tangential_speeds
from ..mechanics.system import ConstraintSystem, csr_of, rows_times, rows_transpose_times, stack_rows
from ..problems import LCP, MixedLCP

MODE_SEPARATING, MODE_STICKING, MODE_SLIDING = 0, 1, 2
MODE_NAMES = {MODE_SEPARATING: "separating", MODE_STICKING: "sticking", MODE_SLIDING: "sliding"}

__all__ = ["ConstraintSystem", "StepResult", "MODE_SEPARATING", "MODE_STICKING", "MODE_SLIDING",
           "MODE_NAMES", "mixed_problem", "mixed_recover", "contact_modes", "pyramid_to_tangent", "dense"]



def refuse_dense(model: str, arrays: dict, fix: str) -> None:
    """A ModelError, before anything is allocated, when a step's dense arrays (name -> (rows, cols))
    need together more than ``solvers.registry.DENSE_BYTES_LIMIT`` (issue 40: 5,000 boxes asked for
    a MemoryError after seconds); the message names the model, the sizes and ``fix``. The
    Stewart-Trinkle build checks its coupling matrix the same way."""
    from ..errors import ModelError
    from ..solvers.registry import DENSE_BYTES_LIMIT
    need = 8 * sum(int(r) * int(c) for r, c in arrays.values())
    if need > DENSE_BYTES_LIMIT:
        sizes = ", ".join(f"{k} {int(r)} x {int(c)}" for k, (r, c) in arrays.items())
        raise ModelError(f"this step's {model} problem needs dense arrays of {need / 2**30:.1f} GiB ({sizes}; "
                         f"limit {DENSE_BYTES_LIMIT / 2**30:.0f} GiB); {fix}")


_new = object.__new__


@dataclass
class StepResult:
    """What ``recover`` returns. Impulses (not forces) over the step: ``normal`` (nc,),
    ``tangent`` (nc, 2) along (t1, t2), ``joint`` (nj,) on the J rows, ``limit`` (nl,), ``motor``
    (nm,); ``modes`` (nc,) int8 (MODE_*); ``v_next`` (ndof,) the next generalised velocity."""
    v_next: np.ndarray
    normal: np.ndarray
    tangent: np.ndarray
    joint: np.ndarray
    limit: np.ndarray
    motor: np.ndarray
    modes: np.ndarray
    info: dict = field(default_factory=dict)
    accel: np.ndarray | None = None   # acceleration-level building blocks: the acceleration (v_next unused)

    @classmethod
    def contact(cls, v_next, normal, tangent_s, tangent_t, joint, modes, accel=None) -> "StepResult":
        """The result of a model's low-level recover (rows N, S, T, J only; no limits, no motors)."""
        return cls(v_next=v_next, normal=normal, tangent=np.column_stack([tangent_s, tangent_t]), joint=joint,
                   limit=np.zeros(0), motor=np.zeros(0), modes=np.asarray(modes, dtype=np.int8), accel=accel)

    @classmethod
    def of(cls, v_next, normal, tangent, joint, limit, motor, modes) -> "StepResult":
        """The result with these arrays (no info, no acceleration): the constructor's, each field stored
        in the dataclass' field order (as ``__init__`` stores them) without its call (a compiled
        step's few microseconds of Python: sim/grasp_step.py)."""
        r = _new(cls)
        r.v_next = v_next
        r.normal = normal
        r.tangent = tangent
        r.joint = joint
        r.limit = limit
        r.motor = motor
        r.modes = modes
        r.info = {}
        r.accel = None
        return r

    @property
    def tangent_s(self) -> np.ndarray:
        return self.tangent[:, 0]

    @property
    def tangent_t(self) -> np.ndarray:
        return self.tangent[:, 1]


def dense(M) -> np.ndarray:
    return M.toarray() if sp.issparse(M) else np.asarray(M)


def _canonical(H) -> bool:
    return sp.issparse(H) and H.format == "csr" and H.has_canonical_format


def _block_delassus(sys: ConstraintSystem, H, stacked=None) -> tuple[sp.csr_matrix, np.ndarray] | None:
    """R = [J; H] (``stacked`` when the caller formed it) and the dense R W R' (W = M^-1 from its
    6x6 body blocks ``sys.W_blocks``, compiled: mechanics/kernels.py ``delassus_dense``), or None
    where the blocks do not cover every dof or the rows are not canonical CSR (a system made by hand)."""
    Wb = sys.W_blocks
    if Wb is None or 6 * Wb.shape[0] != sys.ndof or not (_canonical(H) and (sys.nj == 0 or _canonical(sys.J))):
        return None
    if stacked is not None and _canonical(stacked):
        R = stacked
    else:
        R = stack_rows([sys.J, H], sys.ndof) if sys.nj else H
    n = R.shape[0]
    G = delassus_dense(R.indptr.astype(np.int64, copy=False), R.indices.astype(np.int64, copy=False),
                       R.data.astype(np.float64, copy=False), Wb, n, np.zeros(n))
    return R, G


def mixed_problem(sys: ConstraintSystem, H: sp.csr_matrix, K, c: np.ndarray, v0: np.ndarray,
                  scale: float = 1.0, stacked: sp.csr_matrix | None = None, structure=None):
    """Eliminate v+ = v0 + M^-1 (J' x + H' y) analytically (M is block diagonal) and return

        MixedLCP:  (J W J') x + (J W H') y + (J v0 - j_rhs)/scale = 0
                   w = (H W J') x + (H W H' + K) y + (H v0 + c)/scale,  0 <= y perp w >= 0
    with W = M^-1 (arechavaleta eq. 13 with the velocity eliminated; the remaining joint rows are
    removed by MixedLCP's Schur complement, eq. 15). Without joint rows: ``LCP(H W H' + K, ...)``.
    ``scale`` = h turns impulses into forces (the acceleration-level form).

    With body blocks (every system of ``build_system``) the four blocks are slices of one dense
    [J; H] W [J; H]' formed by the compiled block Delassus (only row pairs sharing a body), and
    the right-hand sides come from one product [J; H] v0 (``stacked``: [J; H] when the caller has it,
    e.g. :func:`stacked_rows`). ``structure``: the problem's
    :class:`~contactlab.problems.ProblemStructure` (the model's row kinds).
    """
    fast = _block_delassus(sys, H, stacked)
    if fast is None:
        W = sys.Minv
        HW = H @ W
        B = dense(HW @ H.T) + dense(K)
        hh = (H @ v0 + c) / scale
        if sys.nj == 0:
            return LCP(B, hh, structure=structure)
        JW = sys.J @ W
        return MixedLCP(dense(JW @ sys.J.T), dense(JW @ H.T), dense(HW @ sys.J.T), B,
                        (sys.J @ v0 - sys.j_rhs) / scale, hh, structure=structure)
    R, G = fast
    nj = sys.nj
    r = rows_times(R, v0)
    B = G[nj:, nj:] + dense(K)
    hh = (r[nj:] + c) / scale
    if nj == 0:
        return LCP(B, hh, structure=structure)
    g = (r[:nj] - sys.j_rhs) / scale
    if not (np.isfinite(G).all() and np.isfinite(B).all() and np.isfinite(hh).all() and np.isfinite(g).all()):
        # the checked constructor says what is not finite
        return MixedLCP(G[:nj, :nj], G[:nj, nj:], G[nj:, :nj], B, g, hh, structure=structure)
    return MixedLCP.trusted(np.ascontiguousarray(G[:nj, :nj]), np.ascontiguousarray(G[:nj, nj:]),
                            np.ascontiguousarray(G[nj:, :nj]), B, g, hh, structure=structure)


def stacked_rows(sys: ConstraintSystem, parts) -> tuple[sp.csr_matrix, sp.csr_matrix]:
    """(H, [J; H]) for H = the canonical CSR ``parts`` one above the other, stacked once
    (:func:`~contactlab.mechanics.system.stack_rows`): H is the tail of [J; H] (its arrays are views)."""
    R = stack_rows([sys.J, *parts], sys.ndof)
    nj = sys.nj
    if nj == 0 or not _canonical(R):
        return (R if nj == 0 else stack_rows(parts, sys.ndof)), None
    p0 = R.indptr[nj]
    return csr_of(R.data[p0:], R.indices[p0:], R.indptr[nj:] - p0, (R.shape[0] - nj, sys.ndof)), R


def mixed_recover(sys: ConstraintSystem, problem, solution, H: sp.csr_matrix, v0: np.ndarray,
                  scale: float = 1.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(v_next, joint impulses x, y) from a solution of :func:`mixed_problem` (impulses = scale * vars):
    v+ = v0 + scale M^-1 (H' y + J' x), the products compiled (no H' formed)."""
    y = np.asarray(solution.z, dtype=np.float64)
    if isinstance(problem, MixedLCP):
        x = solution.x if solution.x is not None else problem.recover_x(y)
    else:
        x = np.zeros(0)
    p = rows_transpose_times(H, y)
    if sys.nj:
        p = p + rows_transpose_times(sys.J, x)
    return v0 + scale * rows_times(sys.Minv, p), scale * x, scale * y


def pyramid_to_tangent(beta: np.ndarray, d: int) -> np.ndarray:
    """Tangential impulse (nc, 2) along (t1, t2) from the d pyramid components per contact."""
    ang = 2.0 * np.pi * np.arange(d) / d
    B = beta.reshape(-1, d)
    return np.column_stack([B @ np.cos(ang), B @ np.sin(ang)])


def f64(x) -> np.ndarray:
    """``x`` as a C-contiguous float64 array (what the compiled kernels take; no copy when it is one)."""
    return np.ascontiguousarray(x, dtype=np.float64)


#: contact_modes' default tolerances (relative to the largest normal impulse): separating below
#: MODE_IMPULSE_TOL, sliding above MODE_SPEED_TOL of tangential speed
MODE_IMPULSE_TOL, MODE_SPEED_TOL = 1e-9, 1e-6


def contact_modes(sys: ConstraintSystem, v_next: np.ndarray, normal: np.ndarray,
                  impulse_tol: float = MODE_IMPULSE_TOL, speed_tol: float = MODE_SPEED_TOL) -> np.ndarray:
    """separating if the normal impulse is ~0, sliding if the tangential speed at v+ exceeds
    ``speed_tol``, sticking otherwise (tolerances relative to the largest normal impulse)."""
    nc = sys.nc
    if nc == 0:
        return np.zeros(0, dtype=np.int8)
    S, T = sys.S, sys.T
    v = np.ascontiguousarray(v_next, dtype=np.float64)
    normal = np.ascontiguousarray(normal, dtype=np.float64)
    if sp.issparse(S) and sp.issparse(T) and S.indices is T.indices and S.indptr is T.indptr:   # one pattern
        return _modes_of_rows(S.indptr, S.indices, S.data, T.data, v, normal, impulse_tol, speed_tol)
    return _modes_of_speeds(np.hypot(S @ v, T @ v), normal, impulse_tol, speed_tol)


@jit
def _modes_of_speeds(vt, normal, impulse_tol, speed_tol):
    """:func:`contact_modes` from the tangential speeds vt (one pass)."""
    scale = 1.0
    for i in range(normal.size):
        scale = max(scale, abs(normal[i]))
    modes = np.zeros(normal.size, dtype=np.int8)
    for i in range(normal.size):
        if normal[i] > impulse_tol * scale:
            modes[i] = MODE_SLIDING if vt[i] > speed_tol else MODE_STICKING
    return modes


@jit
def _modes_of_rows(indptr, indices, s_data, t_data, v, normal, impulse_tol, speed_tol):
    """:func:`contact_modes` for S and T sharing one CSR pattern: the speeds (mechanics/kernels.py
    ``tangential_speeds``) and the modes in one call."""
    return _modes_of_speeds(tangential_speeds(indptr, indices, s_data, t_data, v), normal, impulse_tol, speed_tol)

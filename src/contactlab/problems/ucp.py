"""The uncoupled complementarity problem (Pang, Trinkle & Lo 1994, section 3).

Find ``(x, y)`` in ``X x Y`` with ``x'y = 0``, where

    X = {x in R^m_+ : A x = a},     Y = {y in R^m_+ : B y = b}.

The two polyhedra share no variable; only the complementarity ``x_i y_i = 0`` couples them.
``z`` stacks ``[x; y]`` (so ``n = 2 m``) and ``w(z) = [y; x]``, which makes the LCP-style
natural map ``min(z, w)`` read as ``min(x, y)`` twice.
"""
from __future__ import annotations

import numpy as np

from ..errors import ProblemError
from .base import Problem
from ..kernels.tolerances import NORMWISE_FLOOR
from .residual import Residuals
from .validation import as_matrix, as_vector, matvec


def _inf(v: np.ndarray) -> float:
    return float(np.max(np.abs(v))) if v.size else 0.0


class UCP(Problem):
    """UCP(A, a, B, b): X = {x >= 0 : A x = a}, Y = {y >= 0 : B y = b}, find x'y = 0.

    ``A`` is (p, m), ``B`` is (r, m) (either may have zero rows); ``a``, ``b`` their right-hand sides.
    ``contacts`` (optional) says the variables follow the quasistatic layout of Pang-Trinkle-Lo
    eq. (11): ``x = [v_n; v_t+; v_t-]``, ``y = [c_n; s_t+; s_t-]`` with ``m = 3 * contacts``;
    the contact-mode enumeration uses it to branch per contact (roll, slide +/-, break).
    ``x_lift = (G, F, g)`` (optional) is a second, usually sparser description of the same X,
    X = {x >= 0 : G x + F u = g for some free u}; the caller guarantees the two agree (the MIP uses it).
    """

    def __init__(self, A, a, B, b, *, contacts: int | None = None, x_lift=None):
        A = as_matrix("A", A, allow_sparse=False)
        B = as_matrix("B", B, allow_sparse=False)
        if A.shape[1] != B.shape[1]:
            raise ProblemError(f"A has {A.shape[1]} columns and B has {B.shape[1]}; X and Y must live in "
                               "the same R^m (give both matrices m columns)")
        self.A, self.B = A, B
        self.a = as_vector("a", a, A.shape[0])
        self.b = as_vector("b", b, B.shape[0])
        self.m = A.shape[1]
        self.n = 2 * self.m
        if contacts is not None:
            contacts = int(contacts)
            if contacts < 0 or 3 * contacts != self.m:
                raise ProblemError(f"contacts={contacts} needs m = 3 * contacts columns, but m = {self.m}")
        self.contacts = contacts
        if x_lift is not None:
            G, F, g = x_lift
            G = as_matrix("x_lift G", G)
            if G.shape[1] != self.m:
                raise ProblemError(f"x_lift G has {G.shape[1]} columns; expected m = {self.m}")
            F = as_matrix("x_lift F", F, (G.shape[0], None))
            x_lift = (G, F, as_vector("x_lift g", g, G.shape[0]))
        self.x_lift = x_lift

    def split(self, z) -> tuple[np.ndarray, np.ndarray]:
        """``(x, y)`` from the stacked ``z = [x; y]``."""
        z = np.asarray(z, dtype=np.float64)
        if z.shape != (self.n,):
            raise ProblemError(f"z must have length {self.n} (x and y stacked), got shape {z.shape}")
        return z[:self.m], z[self.m:]

    @staticmethod
    def stack(x, y) -> np.ndarray:
        return np.concatenate([np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)])

    def w(self, z) -> np.ndarray:
        x, y = self.split(z)
        return np.concatenate([y, x])

    def feasibility(self, x, y) -> tuple[float, float]:
        """Worst violation of ``x in X`` and of ``y in Y`` (equalities and signs), infinity norms."""
        fx = max(_inf(matvec(self.A, x) - self.a) if self.A.shape[0] else 0.0,
                 -float(np.min(x, initial=0.0)))
        fy = max(_inf(matvec(self.B, y) - self.b) if self.B.shape[0] else 0.0,
                 -float(np.min(y, initial=0.0)))
        return fx, fy

    def residuals(self, z, w=None) -> Residuals:
        """natural = max(||min(x, y)||_inf, infeasibility); complementarity = max |x_i y_i|;
        infeasibility = worst violation of A x = a, B y = b, x >= 0, y >= 0."""
        x, y = self.split(z)
        if not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))):
            return Residuals(np.inf, np.inf, np.inf)
        infeas = max(self.feasibility(x, y))
        natural = max(_inf(np.minimum(x, y)), infeas)
        return Residuals(natural, _inf(x * y), infeas)

    def relative_residuals(self, z, w=None, x=None) -> Residuals:
        """Scale-free: x in units of ||x||, y of ||y||, each row of A x = a relative to its terms
        |A||x| + |a|, B y = b likewise."""
        x, y = self.split(z)
        if not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))):
            return Residuals(np.inf, np.inf, np.inf)
        xs, ys = _inf(x) or 1.0, _inf(y) or 1.0

        def eq(G, v, g):   # each row relative to its own terms |G||v| + |g|
            if not G.shape[0]:
                return 0.0
            t = np.abs(G) @ np.abs(v) + np.abs(g)
            t = np.maximum(t, NORMWISE_FLOOR * float(np.max(np.abs(g), initial=0.0)))
            e = np.abs(matvec(G, v) - g)
            return float(np.max(np.where(t > 0, e / np.where(t > 0, t, 1.0), 0.0)))
        xr, yr = x / xs, y / ys
        infeas = max(eq(self.A, x, self.a), eq(self.B, y, self.b), -float(np.min(xr, initial=0.0)),
                     -float(np.min(yr, initial=0.0)))
        return Residuals(max(_inf(np.minimum(xr, yr)), infeas), _inf(xr * yr), infeas)

    def scale(self) -> float:
        return max(1.0, _inf(self.a), _inf(self.b))

    def __repr__(self):
        return (f"UCP(m={self.m}, rows_X={self.A.shape[0]}, rows_Y={self.B.shape[0]}"
                f"{'' if self.contacts is None else f', contacts={self.contacts}'})")

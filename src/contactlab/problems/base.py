"""The protocol every problem type follows, so ``solve()`` treats them alike."""
from __future__ import annotations

from typing import Callable

import numpy as np

from .residual import Residuals
from .structure import NO_STRUCTURE, ProblemStructure, structure_property


class Problem:
    """Base of LCP, BoxedLCP, MixedLCP, FactoredLCP (and UCP).

    Subclasses provide ``n`` (number of complementarity variables), ``w(z)`` (the affine map),
    ``residuals(z, w=None)`` (the one certified residual), ``scale()`` (a size for relative tolerances),
    and optionally ``lcp_reduction()`` returning ``(lcp, lift)`` where ``lift`` maps an LCP answer
    back to this problem's ``z``.

    ``structure`` (:class:`~contactlab.problems.structure.ProblemStructure`, frozen) is what the
    problem's builder knows of its rows (row kinds, islands, body-pair groups, the factors of M),
    given at construction; ``row_groups``, ``islands``, ``body_groups`` and ``factors`` read its
    parts (the names builders set on problems before it was one field, kept working).
    """

    n: int
    structure: ProblemStructure = NO_STRUCTURE
    row_groups = structure_property("row_groups")
    islands = structure_property("islands")
    body_groups = structure_property("body_groups")
    factors = structure_property("factors")

    def w(self, z: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def residuals(self, z: np.ndarray, w: np.ndarray | None = None) -> Residuals:
        """The certified residuals at z (``w`` = this problem's w(z) when the caller has it)."""
        raise NotImplementedError

    def relative_residuals(self, z: np.ndarray, w: np.ndarray | None = None, x=None) -> Residuals:
        """The scale-free residuals ``solve()`` certifies (problems/residual.py ``lcp_relative``):
        the same for the problem multiplied by any positive constant. Subclasses override; this
        default divides the absolute residuals by ``scale()``."""
        r = self.residuals(z, w)
        s = self.scale() or 1.0
        return Residuals(r.natural / s, r.complementarity / s, r.infeasibility / s)

    def certify(self, z: np.ndarray):
        """(w, absolute Residuals, relative Residuals) at z: what ``solve()`` records and certifies."""
        w = self.w(z)
        return w, self.residuals(z, w), self.relative_residuals(z, w)

    def certify_numbers(self, z: np.ndarray):
        """:meth:`certify` as (w, (natural, complementarity, infeasibility, relative natural, relative
        complementarity, relative infeasibility)): the same numbers without the two Residuals objects
        (what ``solve()`` reads; LCP and BoxedLCP override it with their one compiled pass)."""
        w, r, rel = self.certify(z)
        return w, (r.natural, r.complementarity, r.infeasibility, rel.natural, rel.complementarity, rel.infeasibility)

    def scale(self) -> float:
        return 1.0

    def is_trivial(self) -> bool:
        """Whether z = 0 solves the problem exactly (checked by ``solve()`` before dispatch)."""
        import numpy as np
        if self.n == 0:
            return True
        r = self.residuals(np.zeros(self.n))
        return r.natural == 0.0 and r.infeasibility == 0.0

    def lcp_reduction(self) -> tuple["Problem", Callable[[np.ndarray], np.ndarray]]:
        raise NotImplementedError(f"{type(self).__name__} has no reduction to a standard LCP")

    def to_lcp(self):
        """The equivalent standard :class:`LCP` (formed explicitly)."""
        return self.lcp_reduction()[0]

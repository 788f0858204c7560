"""The result object every solver returns (DESIGN.md: one uniform solver API)."""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

import numpy as np


class Status(enum.Enum):
    """How a solve ended; the meaning is the same for every solver."""

    SOLVED = "solved"                    # a certified solution
    TRIVIAL = "trivial"                  # q >= 0 (or the problem's analogue): z = 0 solves it
    RAY_TERMINATION = "ray_termination"  # Lemke ended on a secondary ray
    MAX_ITERATIONS = "max_iterations"    # iteration/pivot limit reached before the tolerance
    NUMERICAL_FAILURE = "numerical_failure"  # singular pivot, breakdown, divergence, NaN
    NO_SOLUTION = "no_solution"          # proven infeasible
    NO_SOLUTION_FOUND = "no_solution_found"  # gave up without proof either way

    def __eq__(self, other):
        """A status equals itself and its name: ``Status.SOLVED == "SOLVED"`` (JSON round trips)."""
        if isinstance(other, str):
            return other == self.name
        return self is other

    __hash__ = enum.Enum.__hash__


SUCCESS_STATUSES = frozenset({Status.SOLVED, Status.TRIVIAL})


def status_text(status) -> str:
    """A solver status as text and JSON print it everywhere: the enum name, ``SOLVED``."""
    return getattr(status, "name", str(status).upper())


@dataclass
class Solution:
    """Answer of :func:`contactlab.solve`.

    ``z``/``w`` are the primal and complementary vectors (``w = M z + q`` for an LCP;
    for a boxed LCP ``w`` is the same affine map); ``residual`` is computed by ``solve()``
    from ``z`` with the problem's own definition, never reported by the algorithm.
    ``relative_residual`` is the scale-free measure ``solve()`` certifies (problems/residual.py
    ``lcp_relative``): SOLVED means it is at most ``max(certify, tol)``, whatever the problem's scale.
    ``NO_SOLUTION`` always comes with ``info['certificate']``, checked by ``solve()``.
    ``info`` carries solver-specific extras (rays, regularisation, basis, gap, ...).
    """

    z: np.ndarray
    w: np.ndarray
    status: Status
    iterations: int = 0
    pivots: int = 0
    residual: float = float("inf")
    method: str = ""
    info: dict[str, Any] = field(default_factory=dict)
    complementarity: float = float("inf")
    infeasibility: float = float("inf")
    time_s: float = 0.0
    x: np.ndarray | None = None  # the free variables of a MixedLCP (drumwright eq. 8)
    relative_residual: float = float("inf")

    @property
    def success(self) -> bool:
        return self.status in SUCCESS_STATUSES

    def __repr__(self) -> str:  # short, for notebooks and logs
        return (f"Solution(method={self.method!r}, status={self.status.name}, n={self.z.size}, "
                f"iterations={self.iterations}, pivots={self.pivots}, residual={self.residual:.3g})")

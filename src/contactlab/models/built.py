"""What every contact model's ``build`` returns, and which contacts are touching.

``build(sys, options) -> Built(problem, rows, state)``: ``problem`` is what the solver gets,
``rows`` names slices of its complementarity variables (``"limit"``, ``"normal"``, ``"friction"``,
...), and ``state`` is whatever the model's ``recover(sys, built, solution, options)`` needs. Nothing
is attached to the problem object.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

#: default for the models' ``active_gap`` option (m): a contact is touching when its gap is at most
#: this (the scene's default ``slop``); speculative contacts farther apart carry no tangential rows.
ACTIVE_GAP = 1e-4


@dataclass
class Built:
    """A built step: ``problem`` (for :func:`contactlab.solve`), ``rows`` (name -> slice of the
    problem's complementarity variables), ``state`` (the model's data for ``recover``)."""
    problem: object
    rows: dict = field(default_factory=dict)
    state: object = None

    @property
    def n(self) -> int:
        return self.problem.n

    def __getattr__(self, name):
        """The problem's attributes read through the Built (``build(sys).M``, ``.lcp_reduction()``):
        the spelling of the models whose ``build`` returned the bare problem (box friction,
        frictionless, Stewart-Trinkle before it returned a Built) keeps working."""
        if name.startswith("__") or name in ("problem", "rows", "state"):
            raise AttributeError(name)
        return getattr(self.problem, name)


def problem_of(built):
    """The solver's problem of a model's ``build`` result (a :class:`Built` or a bare problem)."""
    return built.problem if isinstance(built, Built) else built


def touching(sys, active_gap: float = ACTIVE_GAP) -> np.ndarray:
    """Boolean (nc,): contacts whose gap phi is within ``active_gap`` (touching or penetrating).

    Only these carry tangential rows (no-slip S v+ = T v+ = 0, viscous drag): a speculative contact
    (phi > active_gap) keeps its normal row, so the bodies cannot pass through each other during the
    step, but exerts no friction while apart (drumwright Sec. IV and VI: friction acts at contacts)."""
    if not active_gap >= 0:
        from ..errors import ModelError
        raise ModelError(f"active_gap must be >= 0 (metres), got {active_gap}")
    return np.asarray(sys.phi, dtype=np.float64) <= active_gap


def tangent_rows(sys, active: np.ndarray, nl: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Dense S and T with the rows of non-touching contacts zeroed, preceded by ``nl`` zero rows
    (joint-limit rows carry no friction). A zero row is never kept by FIND-INDICES and gives no drag."""
    m = sys.ndof
    keep = np.asarray(active, dtype=np.float64)[:, None]
    dense = lambda X: X.toarray() if hasattr(X, "toarray") else np.asarray(X, dtype=np.float64)
    S = dense(sys.S).reshape(-1, m) * keep
    T = dense(sys.T).reshape(-1, m) * keep
    Z = np.zeros((nl, m))
    return np.vstack([Z, S]), np.vstack([Z, T])

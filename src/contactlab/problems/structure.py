"""What the builder of a problem knows of its rows that the matrix does not say cheaply: one typed,
frozen field of every problem, ``problem.structure``, passed at construction by the model that built
it (issue 41: one place for the hints a solver may use; nothing attached to a problem afterwards)."""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..errors import ProblemError


@dataclass(frozen=True, eq=False)
class ProblemStructure:
    """The structure of a problem's rows, each part optional (None: not known).

    - ``row_groups``: row kind -> slice of the complementarity variables (``"joint"``, ``"motor"``,
      ``"limit"``, ``"normal"``, ``"friction"``, ...), as ``Built.rows``; the motionless-set reuse
      reads the normal and friction rows from it (loomis-balkcom §IV).
    - ``islands``: (count, label per row, int64 numbered from 0): groups of rows that no entry of M
      and no findex link couples (the separate stacks of a scene). box-qp solves them apart;
      labels that split coupled rows give an answer that ``solve()``'s certification of the whole
      problem refuses, never a false certificate.
    - ``body_groups``: label per row of the pair of bodies the row acts on, over which box-qp
      factorises an island's Newton steps block by block.
    - ``factors``: (H, W, cfm) with M = H W H' + cfm I (H CSR, each row on one or two bodies, six
      columns per body; W (bodies, 6, 6) the blocks of M^-1): box-qp's interior point solves its
      Newton systems through the bodies. Factors that do not give M make its iterations slower,
      never its certified answer (each iterate is checked against M itself).

    Frozen: a problem's structure changes only by giving it another (``dataclasses.replace``).
    """
    row_groups: dict | None = None
    islands: tuple | None = None
    body_groups: np.ndarray | None = None
    factors: tuple | None = None


#: the structure of a problem whose builder gave none
NO_STRUCTURE = ProblemStructure()


def as_structure(structure) -> ProblemStructure:
    """``structure`` checked: a :class:`ProblemStructure`, or None for :data:`NO_STRUCTURE`."""
    if structure is None:
        return NO_STRUCTURE
    if not isinstance(structure, ProblemStructure):
        raise ProblemError(f"structure must be a contactlab.problems.ProblemStructure or None, "
                           f"got {type(structure).__name__}")
    return structure


def structure_property(name: str) -> property:
    """The property ``problem.<name>`` = ``problem.structure.<name>``: the spelling builders and
    solvers used before the structure was one field (kept working, read and written; a write gives
    the problem a new structure with that part replaced)."""

    def get(self):
        return getattr(self.structure, name)

    def set(self, value):
        self.structure = replace(self.structure, **{name: value})

    return property(get, set, doc=f"``structure.{name}`` (:class:`ProblemStructure`).")


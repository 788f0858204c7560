"""Solvers of the uncoupled complementarity problem (Pang, Trinkle & Lo 1994).

* ``bilinear-lp``: the LP-based descent on min x'y of section 4 (Steps 0-3) with the restart
  variant of section 5; a heuristic: SOLVED or NO_SOLUTION_FOUND (cycling / restart limit).
* ``mip``: an exact decision the paper lacked: x_i y_i = 0 by binaries, with big-M bounds from LPs
  on the homogenised, normalised polyhedra (bounded, so big-M <= 1), solved by HiGHS' MIP.
* ``mode-enumeration``: contact-mode enumeration in the spirit of Trinkle & Zeng (1994): each
  contact rolls, slides +/- or breaks; a mode is a pair of LP feasibility tests (X and Y separate).

Every LP and the MIP go through HiGHS (highspy). A polyhedron {u >= 0 : A u = a} is first reduced to
full row rank by an SVD; an inconsistent system proves the polyhedron empty (NO_SOLUTION).

One module per algorithm (bilinear, mip, enumeration); HiGHS, the polyhedron LP and the set-up
shared through common.py; adjacent vertices in vertices.py.
"""
from .bilinear import BilinearOptions, bilinear_lp
from .enumeration import EnumerationOptions, mode_enumeration
from .mip import MipOptions, mip
from .vertices import adjacent_vertices


_adjacent_vertices = adjacent_vertices   # the name tests used before the split

__all__ = ["BilinearOptions", "bilinear_lp", "MipOptions", "mip", "EnumerationOptions", "mode_enumeration",
           "adjacent_vertices"]

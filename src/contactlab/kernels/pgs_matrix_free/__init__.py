"""Matrix-free projected Gauss-Seidel on H M^-1 H' (sequential impulses), for box friction.

The boxed LCP of arechavaleta eq. (16)-(17) has the matrix A = H W H' + diag(cfm) (W = M^-1,
block-diagonal with one 6x6 block per body) and q = H v_free - rhs. Projected Gauss-Seidel
(arechavaleta eq. 3, ODE's quickstep with findex/mu friction-coupled bounds) needs, for row i,
only w_i = (A z + q)_i and A_ii. Instead of forming A (about 35 nonzeros per row on a pile), these
kernels keep the body velocity change

    dv = W H' z        (one 6-vector per body)

so w_i = q_i + cfm_i z_i + h_i . dv, and a change dz of z_i adds dz W h_i' to dv: a sweep costs
O(nnz(H)), and A is never built (Catto's sequential impulses; Bullet's and ODE's solvers). With
the same row order and sweep count the iterates are those of ``kernels/pgs.py`` on the assembled
A, up to rounding.

Row storage: every row of H (a pairwise constraint) touches at most two bodies, so each row gets
two slots s = 2i, 2i + 1 (``row_slots``): ``body`` (2n,) (the dummy body ``nbody`` for an unused
slot, whose dv row stays 0) and ``hb`` (2n, 6), the row's entries on that body's six dofs (dof c
belongs to body c // 6); ``g`` (2n, 6) = W_body hb (``prepare``); ``ptr`` = 0, 2, 4, ... A fixed,
row-contiguous layout: a sweep reads 24 numbers per row and no index arrays but two bodies.
"""
from .layout import (body_slots, chain_couplings, prepare, row_slots, row_slots_in_order, sweep_order,
                     whole_body_blocks)
from .screen import _check, _refine, _row_relative, _screen, all_row_terms, residuals, row_term
from .sweep import CHECK_GATE, CHECK_RELATIVE, _solve, pgs_matrix_free, solve_matrix_free_kernel
from .velocity import _add_impulse, _axpy6, _max_abs, _pending, _row_w, _running_dot6, _store6, impulse_velocity
from .wrapper import solve_matrix_free

#: the former names of row_slots and row_slots_in_order (docs/architecture.md glossary), kept for one release
row_blocks, rows_in_order = row_slots, row_slots_in_order

__all__ = ["solve_matrix_free", "solve_matrix_free_kernel", "pgs_matrix_free", "sweep_order", "row_slots",
           "whole_body_blocks", "row_slots_in_order", "prepare", "body_slots", "chain_couplings", "impulse_velocity",
           "row_term", "all_row_terms", "residuals", "CHECK_GATE", "CHECK_RELATIVE"]

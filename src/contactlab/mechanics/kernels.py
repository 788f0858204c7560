"""The compiled kernels of a step's mechanics, by their old module name (kept importable for one
release; new code imports them from where they live):

* :mod:`.rows`: contact rows (:func:`frame_rows_csr`, :func:`contact_terms`), the friction
  pyramid, products with CSR rows, the normal bias, the position correction's right-hand side;
* :mod:`.bodies`: the mass blocks, velocity vector, forces, free velocity and kinetic gain;
* :mod:`.delassus`: H W H' dense, CSR, and by pattern and values for contact rows;
* :mod:`.integrate`: the semi-implicit Euler update and the shapes' sweep.
"""
from __future__ import annotations

from .bodies import (block_times, body_blocks, body_terms, free_velocity, kinetic_gain,  # noqa: F401
                     mass_blocks_kernel, velocity_vector)
from .delassus import (_add_dot, _body_slots, _dots3, _frame_bodies, _frame_neighbours,  # noqa: F401
                       _frame_vectors, _merge_two, _no_pattern, _row_blocks, delassus_csr, delassus_dense,
                       delassus_frames_csr, frame_pattern, frame_values)
from .integrate import _exp_rotate, advance_state, integrate_quat_kernel, shape_sweep  # noqa: F401
from .rows import (contact_terms, frame_rows_csr, normal_bias_kernel, position_targets,  # noqa: F401
                   position_targets_window, pyramid_csr, rows_times, rows_transpose_times, tangent_basis_kernel, tangential_speeds)

"""Compiled broad phase and box contacts (numba; flags from kernels/_jit.py), one concept a module;
every name stays importable from here:

* :mod:`.broad_phase`: every shape's world pose, the world half-spaces and AABBs, and
  :func:`sweep_pairs`, sort-and-sweep over the AABBs along the axis their centres spread most on
  (O(n log n + pairs)), the broad phase of every finite shape; half-spaces are culled against each
  AABB's support point.
* :mod:`.reach`: how far two shapes can close in on each other in the step (speculative contacts).
* :mod:`.manifold`: :func:`box_box`, the separating-axis test over the 15 axes of two boxes
  (Gottschalk et al. 1996; ODE's ``dBoxBox``) with reference-face clipping: a face's points, or an
  edge-edge contact and the face's points that are apart beside it; :func:`canonical_order`.
* :mod:`.narrow_phase`: every pair these routines cover in one call (box-box, the box or convex mesh
  vertices within the margin of a half-space, each with its exact distance, a sphere's one point
  against a half-space) and the detection the simulator runs in one call.
* :mod:`.matching`: each new contact's previous contact (warm starts).
* :mod:`.packed`: the two-array layout of one detection's contacts.

Contacts: normal from shape a to shape b, point midway between the witness points, phi the
signed distance (negative = penetration). Cross-checked against coal in tests/test_collision.py.
"""
from __future__ import annotations

from .broad_phase import (_sweep_axis, broad_phase, plane_pairs, planes_world, sweep_pairs, world_aabbs,
                          world_poses)
from .manifold import (EDGE_PREFERENCE, FACE_PARALLEL, FACE_SLACK, MAX_PAIR_POINTS, MAX_POINTS, _clip, _cross_unit,
                       _dot, _edge_point, _face_points, _reduce4, _support_point, _Work, box_box, canonical_order,
                       pseudo_angle)
from .matching import match_previous_kernel, match_with_values
from .narrow_phase import (BOX, HALFSPACE, OTHER, SPHERE, VERTICES, contact_fields, detect_and_match,
                           detect_and_match_packed, detect_contacts, detect_kernel, narrow_phase)
from .packed import PACKED_FLOAT_WIDTH, PACKED_FLOATS, PACKED_INTS, pack_contacts, unpack_contacts
from .reach import axis_reach, pair_reach, shape_reach_of

"""The packed layout of one compiled detection's contacts (numba): every float field of a
ContactSet in one flat array and the integer fields in another (:data:`PACKED_FLOATS`,
:data:`PACKED_INTS`), so a detection hands two arrays to Python, not fifteen."""
from __future__ import annotations

import numpy as np

from ...kernels._jit import jit


#: the packed contacts of one compiled detection (:func:`detect_and_match_packed`): every float field of
#: a ContactSet in one flat array, each field's k rows in turn (its columns per row), the integer
#: fields in another; collision/contacts.py ``PackedContactSet`` views them by the same table
PACKED_FLOATS = (("point", 3), ("normal", 3), ("t1", 3), ("t2", 3), ("phi", 1), ("mu", 1), ("normal_guess", 1))


PACKED_INTS = ("body_a", "body_b", "shape_a", "shape_b", "match")


PACKED_FLOAT_WIDTH = 15      # sum of PACKED_FLOATS' columns


@jit
def pack_contacts(P, N, t1, t2, phi, mu, guess, ba, bb, sa, sb, match):
    """(floats, ints): k contacts' fields packed in :data:`PACKED_FLOATS` / :data:`PACKED_INTS` order."""
    k = phi.size
    floats = np.empty(PACKED_FLOAT_WIDTH * k)
    floats[0:3 * k] = P.reshape(-1)
    floats[3 * k:6 * k] = N.reshape(-1)
    floats[6 * k:9 * k] = t1.reshape(-1)
    floats[9 * k:12 * k] = t2.reshape(-1)
    floats[12 * k:13 * k] = phi
    floats[13 * k:14 * k] = mu
    floats[14 * k:15 * k] = guess
    ints = np.empty(5 * k, dtype=np.int64)
    ints[0:k], ints[k:2 * k], ints[2 * k:3 * k], ints[3 * k:4 * k], ints[4 * k:5 * k] = ba, bb, sa, sb, match
    return floats, ints


@jit
def unpack_contacts(floats, ints):
    """The views of :func:`pack_contacts`' buffers: (point, normal, t1, t2, phi, mu, normal_guess,
    body_a, body_b, shape_a, shape_b, match), no copy."""
    k = ints.size // len(PACKED_INTS)
    return (floats[0:3 * k].reshape((k, 3)), floats[3 * k:6 * k].reshape((k, 3)),
            floats[6 * k:9 * k].reshape((k, 3)), floats[9 * k:12 * k].reshape((k, 3)), floats[12 * k:13 * k],
            floats[13 * k:14 * k], floats[14 * k:15 * k], ints[0:k], ints[k:2 * k], ints[2 * k:3 * k],
            ints[3 * k:4 * k], ints[4 * k:5 * k])

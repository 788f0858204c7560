"""The one place contactlab makes a HiGHS solver (LPs of the statics checks and the UCP solvers,
the MIP): :func:`new_highs`, silent.

HiGHS prints a banner ("Running HiGHS ... Copyright ...") on standard output when the process makes
its first solver, before any option can turn output off; that first construction runs with the
native standard output silenced (:func:`contactlab.quiet.native_output_silenced`)."""
from __future__ import annotations

import highspy

from .quiet import native_output_silenced

_first_made = False


def new_highs(**options) -> "highspy.Highs":
    """A HiGHS solver with its output off and ``options`` set (``name=value`` as HiGHS spells them)."""
    global _first_made
    if _first_made:
        h = highspy.Highs()
    else:
        with native_output_silenced():
            h = highspy.Highs()
        _first_made = True
    h.setOptionValue("output_flag", False)
    for name, value in options.items():
        h.setOptionValue(name, value)
    return h

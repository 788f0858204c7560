"""The one place contactlab makes a HiGHS solver (LPs of the statics checks and the UCP solvers,
the MIP): :func:`new_highs`, silent.

HiGHS prints a banner ("Running HiGHS ... Copyright ...") on standard output when the process makes
its first solver, before any option can turn output off; a library must not write to its user's
console, so the first construction runs with file descriptor 1 pointed at the null device (C-level
output: redirecting ``sys.stdout`` would not reach it)."""
from __future__ import annotations

import ctypes
import os
import sys
import threading

import highspy

_first_made = False
_lock = threading.Lock()


def _silently_constructed() -> "highspy.Highs":
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(null, 1)
        finally:
            os.close(null)
        h = highspy.Highs()
        ctypes.CDLL(None).fflush(None)      # the banner leaves C's buffer while 1 is the null device
    finally:
        os.dup2(saved, 1)
        os.close(saved)
    return h


def new_highs(**options) -> "highspy.Highs":
    """A HiGHS solver with its output off and ``options`` set (``name=value`` as HiGHS spells them)."""
    global _first_made
    if _first_made:
        h = highspy.Highs()
    else:
        with _lock:
            h = highspy.Highs() if _first_made else _silently_constructed()
            _first_made = True
    h.setOptionValue("output_flag", False)
    for name, value in options.items():
        h.setOptionValue(name, value)
    return h

"""A plan's constant arrays as one compiled object (:func:`frozen_arrays`): what a compiled step that
Python calls every step reads but never changes (a frozen model's arrays, a planned solver's
parameters) crosses into the call as one argument instead of one per array.

Why: a compiled call from Python unboxes every array argument on every call (numba's wrapper checks
the object, reads its data pointer, shape and strides and wraps it in a new reference-counted
memory record: an allocation, then a release at the end), and the wrapper's code grows with the
count (straight-line code run in full on every call). A :class:`FrozenArrays` is a numba StructRef:
unboxing it reads one pointer; its field ``args`` is the tuple of arrays, typed as the tuple itself
would be, so a kernel reads ``fixed.args`` and unpacks it as it would unpack the tuple.

Under ``NUMBA_DISABLE_JIT`` (and for a kernel that runs as Python before it compiles,
:class:`~contactlab.kernels._jit.TieredDispatcher`) ``fixed.args`` is the Python attribute the
constructor also sets: the same tuple.
"""
from __future__ import annotations

import numba
from numba.core import types
from numba.experimental import structref
from numba.extending import overload


@structref.register
class FrozenArraysType(types.StructRef):
    """The numba type of :class:`FrozenArrays`: one field ``args``, the tuple's type."""

    def preprocess_fields(self, fields):
        return tuple((name, types.unliteral(typ)) for name, typ in fields)


class FrozenArrays(structref.StructRefProxy):
    """A plan's constant arrays (``args``, a tuple, nested tuples allowed) as one compiled argument
    (module docstring). Build it with :func:`frozen_arrays`."""

    # (no __slots__: ``args`` is also a Python attribute, read where a kernel runs as Python)


structref.define_boxing(FrozenArraysType, FrozenArrays)


def _new(args):
    """(compiled only) a FrozenArraysType holding ``args``."""
    raise NotImplementedError


@overload(_new)
def _new_impl(args):
    typ = FrozenArraysType(fields=[("args", args)])

    def impl(args):
        s = structref.new(typ)
        s.args = args
        return s
    return impl


@numba.njit(cache=True)
def _make(args):
    return _new(args)


class _PlainArrays:
    """``fixed.args`` for Python kernels (``NUMBA_DISABLE_JIT``)."""

    __slots__ = ("args",)

    def __init__(self, args):
        self.args = args


def frozen_arrays(args: tuple):
    """``args`` (a tuple of arrays, nested tuples allowed: arrays the caller never changes while it
    uses the result) as one compiled argument whose ``args`` is that tuple (module docstring). The
    constructor is compiled once and cached on disk; call it once per plan."""
    if numba.config.DISABLE_JIT:
        return _PlainArrays(args)
    out = _make(args)
    out.args = args
    return out

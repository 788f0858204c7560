"""kernels/_jit.py ``TieredDispatcher.get_call_template``: a kernel called from another compiled kernel
with constants (``2``, ``True``) is compiled once, for the plain types (int64, bool), not for numba's
literal types beside them; a kernel that only types with a literal argument (a heterogeneous tuple
indexed by it) is still typed numba's way."""
from numba import types

from contactlab.kernels import _jit
from contactlab.kernels._jit import jit


@jit
def _scaled(x, k, flag):
    return x * k if flag else x


@jit
def _calls_with_constants(x):
    return _scaled(x, 2, True) + _scaled(x, 3, False)


@jit
def _pick(t, i):
    return t[i]


@jit
def _picks_from_a_mixed_tuple():
    return _pick((1, 2.5), 1)


def _from_source(*kernels):
    """Empty the on-disk caches of ``kernels`` (numba's ``Cache.flush``): a caller loaded from an
    earlier run's cache carries its callees' code and never types them, which leaves nothing to check."""
    for kernel in kernels:
        kernel._cache.flush()


def test_a_callee_given_constants_compiles_once_for_plain_types():
    _from_source(_scaled, _calls_with_constants)
    with _jit.compile_always():
        assert _calls_with_constants(1.5) == 1.5 * 2 + 1.5
    assert _scaled.signatures == [(types.float64, types.int64, types.boolean)]
    assert not any(isinstance(t, types.Literal) for sig in _scaled.signatures for t in sig)


def test_a_callee_that_needs_a_literal_index_is_typed_with_it():
    _from_source(_pick, _picks_from_a_mixed_tuple)
    with _jit.compile_always():
        assert _picks_from_a_mixed_tuple() == 2.5
    (sig,) = _pick.signatures
    assert isinstance(sig[1], types.IntegerLiteral) and sig[1].literal_value == 1

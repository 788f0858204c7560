"""kernels/clock.py: the compiled clock is time.perf_counter's clock (CLOCK_MONOTONIC on Linux)."""
import sys
import time

import numba
import pytest

from contactlab.kernels import clock


@numba.njit
def _read_twice():
    return clock.monotonic_seconds(), clock.monotonic_seconds()


def test_compiled_read_is_perf_counter_clock():
    """A compiled read lies between two Python reads of time.perf_counter() (the same clock: a read
    of another clock, or nanoseconds taken for seconds, falls outside), and reads do not go back."""
    for _ in range(3):
        t0 = time.perf_counter()
        a, b = _read_twice()
        t1 = time.perf_counter()
        assert t0 <= a <= b <= t1


def test_perf_counter_kernel_compiled_and_interpreted():
    t0 = time.perf_counter()
    t = clock.perf_counter()
    t1 = clock.perf_counter.py_func()
    assert t0 <= t <= t1


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the direct clock_gettime call is Linux's")
def test_linux_uses_direct_call():
    """On Linux the kernel is the direct libc call (cacheable), not object mode (compiled again in
    every process)."""
    assert clock._direct_clock()
    assert "objmode" not in clock.perf_counter.py_func.__code__.co_names

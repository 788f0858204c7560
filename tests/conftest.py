"""Test-session settings: BLAS on one thread (many small dense solves, where thread start-up
costs more than it saves; the CLI does the same through CONTACTLAB_BLAS_THREADS); kernels compiled at
their first call (CONTACTLAB_JIT=compile, kernels/_jit.py), so that a test's bits do not depend on
whether the cache was cold (interpreted first calls round NumPy's sums differently); the tiered
default is tested on its own (tests/test_jit_tiered.py). Subprocesses inherit both."""
import os

os.environ.setdefault("CONTACTLAB_JIT", "compile")

from threadpoolctl import threadpool_limits

_BLAS_LIMIT = threadpool_limits(limits=1, user_api="blas")

from hypothesis import settings  # noqa: E402

# Fixed examples in every run (DESIGN.md convention 7: fixed seeds): CI never meets a new random case.
settings.register_profile("contactlab", derandomize=True, deadline=None)
settings.load_profile("contactlab")


import signal as _signal  # noqa: E402

import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _sigint_left_as_found(request):
    """A test that leaves SIGINT ignored in this process makes every later subprocess ignore Ctrl-C
    (an ignored signal is inherited): name it here."""
    before = _signal.getsignal(_signal.SIGINT)
    yield
    after = _signal.getsignal(_signal.SIGINT)
    if after is not before and after == _signal.SIG_IGN:
        _signal.signal(_signal.SIGINT, before)
        pytest.fail(f"{request.node.nodeid} left SIGINT ignored in the test process")

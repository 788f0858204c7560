"""Test-session settings: BLAS on one thread (many small dense solves, where thread start-up
costs more than it saves; the CLI does the same through CONTACTLAB_BLAS_THREADS)."""
from threadpoolctl import threadpool_limits

_BLAS_LIMIT = threadpool_limits(limits=1, user_api="blas")

from hypothesis import settings  # noqa: E402

# Fixed examples in every run (DESIGN.md convention 7: fixed seeds): CI never meets a new random case.
settings.register_profile("contactlab", derandomize=True, deadline=None)
settings.load_profile("contactlab")

"""contactlab.blas: thread limits for the loaded BLAS libraries."""


def test_blas_threads_limits_and_restores_and_rescans_after_an_import():
    """blas_threads(n) limits every loaded BLAS to n threads while open and restores them after;
    threadpoolctl's library scan is taken once and again only after a module was imported."""
    import sys
    import types

    from threadpoolctl import threadpool_info

    import contactlab.blas as blas

    from threadpoolctl import threadpool_limits

    def blas_counts():
        return [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]

    initial = blas_counts()
    with threadpool_limits(limits=2, user_api="blas"):     # (the test session runs BLAS on one thread)
        before = blas_counts()
        with blas.blas_threads(1):
            assert blas_counts() and all(n == 1 for n in blas_counts())
        assert blas_counts() == before
    first = blas._thread_pools()
    assert blas._thread_pools() is first
    sys.modules["_contactlab_test_new_module"] = types.ModuleType("_contactlab_test_new_module")
    try:
        assert blas._thread_pools() is not first
    finally:
        del sys.modules["_contactlab_test_new_module"]
    assert blas_counts() == initial
    with blas.blas_threads(None):
        assert blas_counts() == initial

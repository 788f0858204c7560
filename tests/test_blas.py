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


def test_a_limit_inside_a_limit_restores_the_outer_one():
    from threadpoolctl import threadpool_info, threadpool_limits

    import contactlab.blas as blas

    def blas_counts():
        return [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]

    with threadpool_limits(limits=2, user_api="blas"):
        outer = blas_counts()           # 2, or fewer where the library was started with fewer
        with blas.blas_threads(1):
            with blas.blas_threads(1):          # already at 1: left alone
                assert all(n == 1 for n in blas_counts())
            assert all(n == 1 for n in blas_counts())
            with blas.blas_threads(2):
                assert blas_counts() == outer
            assert all(n == 1 for n in blas_counts())
        assert blas_counts() == outer


def test_bad_thread_counts_are_refused_naming_the_argument():
    import pytest

    import contactlab.blas as blas
    from contactlab.errors import ParamError
    from contactlab.scenarios import make_scene
    from contactlab.sim import Simulator
    for bad in (0, -1, 1.5, True, "2"):
        with pytest.raises(ParamError, match="BLAS threads"):
            blas.blas_threads(bad)
        with pytest.raises(ParamError, match="blas_threads"):
            Simulator(make_scene("stack", count=1), blas_threads=bad)


def test_a_simulator_step_runs_blas_on_its_thread_count_and_restores_it(monkeypatch):
    """A hand-written loop of Simulator.step() runs BLAS as Simulator.run does (threaded BLAS on a
    hand's LCPs costs several times more), and leaves the caller's setting as it found it."""
    import pytest
    from threadpoolctl import threadpool_info, threadpool_limits

    from contactlab.scenarios import make_scene
    from contactlab.sim import Simulator

    def blas_counts():
        return [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]

    sim = Simulator(make_scene("stack", count=2))
    seen = []
    advance = sim._advance
    monkeypatch.setattr(sim, "_advance", lambda: seen.append(blas_counts()) or advance())
    with threadpool_limits(limits=2, user_api="blas"):
        outer = blas_counts()
        if not any(n > 1 for n in outer):
            pytest.skip("no loaded BLAS library takes 2 threads here (one core?): nothing to tell apart")
        sim.step()
        assert seen[-1] and all(n == 1 for n in seen[-1])
        assert blas_counts() == outer


def test_a_limit_inside_one_to_the_same_count_reads_nothing_until_a_module_is_imported(monkeypatch):
    """Inside an open limit to n, a limit to n touches no library (a step inside a run); after an
    import (a new BLAS may be loaded) it scans and reads them again; an error inside a limit closes it."""
    import sys
    import types

    import pytest

    import contactlab.blas as blas

    scans = []
    real = blas._thread_pools
    monkeypatch.setattr(blas, "_thread_pools", lambda: scans.append(1) or real())
    with blas.blas_threads(1):
        assert len(scans) == 1
        with blas.blas_threads(1):
            pass
        assert len(scans) == 1          # nothing read inside the open limit
        sys.modules["_contactlab_test_blas_module"] = types.ModuleType("_contactlab_test_blas_module")
        try:
            with blas.blas_threads(1):
                pass
        finally:
            del sys.modules["_contactlab_test_blas_module"]
        assert len(scans) == 2          # read again after the import
        with pytest.raises(RuntimeError):
            with blas.blas_threads(2):
                raise RuntimeError
        assert blas._open[-1][0] == 1
    assert blas._open == []


def test_a_step_whose_controllers_declare_no_blas_runs_outside_the_limit_and_its_stages_inside(monkeypatch):
    """The hand's fused step (no BLAS in its compiled calls) with controllers that all say
    ``uses_blas = False`` leaves the caller's BLAS setting alone; one controller without the
    declaration puts the step back inside the limit; a step the call declines goes to the stages,
    which run inside the limit even so; the caller's setting is restored after each step."""
    import numpy as np
    import pytest
    from threadpoolctl import threadpool_info, threadpool_limits

    import contactlab.sim.grasp_step as GS
    import contactlab.sim.tree_box_kernels as TB
    from contactlab.scenarios import make_scene
    from contactlab.sim import Simulator

    def blas_counts():
        return [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]

    seen = []

    def probe(sim):
        seen.append(blas_counts())

    def quiet(sim):
        seen.append(blas_counts())
    quiet.uses_blas = False

    def hand(controllers):
        sc = make_scene("barrett-grasp", material="rubber")
        assert all(c.uses_blas is False for c in sc.controllers)      # the grasp script declares it
        return Simulator(sc, "box-friction", "pgs-sm", model_options={"joints": "schur", "coupling": "previous"},
                         controllers=list(sc.controllers) + controllers)

    with threadpool_limits(limits=2, user_api="blas"):
        outer = blas_counts()
        if not any(n > 1 for n in outer):
            pytest.skip("no loaded BLAS library takes 2 threads here (one core?): nothing to tell apart")
        free, plain = hand([quiet]), hand([probe])
        free.step(), plain.step()       # (a step that plans the fused step runs inside the limit)
        seen.clear()
        for _ in range(3):
            free.step()
            assert seen.pop() == outer and blas_counts() == outer
            plain.step()
            assert all(n == 1 for n in seen.pop()) and blas_counts() == outer
        assert isinstance(free._fused, GS.FusedGraspStep) and free._fused.blas_free
        assert isinstance(plain._fused, GS.FusedGraspStep) and not plain._fused.blas_free
        # a declined call: the stages' build and solve take the step, inside the limit
        staged = []
        build = free.stages.build
        monkeypatch.setattr(free.stages, "build", lambda w: staged.append(blas_counts()) or build(w))
        monkeypatch.setattr(TB, "tree_box_fused_step", lambda *a: (
            TB.DECLINED, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0, 0, 0.0, TB._NOT_JUDGED, np.zeros(0), np.zeros(0, np.int8)))
        rec = free.step()
        assert seen.pop() == outer and staged and all(n == 1 for n in staged[-1]) and blas_counts() == outer
        assert rec.success

"""The Delassus operator's module (mechanics/delassus.py): the pattern of contact rows computed once
and refilled with values, against scipy's product H M^-1 H' + diag on the same rows."""
import dataclasses

import numpy as np
import pytest

from contactlab.mechanics.system import build_system
from contactlab.scenarios.registry import make_scene
from contactlab.sim import Simulator


def _system(count: int, steps: int):
    sim = Simulator(make_scene("stack", count=count), "stewart-trinkle", "lemke")
    for _ in range(steps):
        sim.step()
    return build_system(sim.model, sim.data, sim.data.contacts)


@pytest.fixture(scope="module")
def systems():
    return _system(3, 3), _system(4, 3)


def _reference(sys, diag):
    H = sys.NST
    return (H @ sys.Minv @ H.T).toarray() + np.diag(diag)


def test_pattern_values_are_the_product_and_refill_on_new_values(systems):
    """DelassusPattern.of builds the structure of the contact rows once; values() on it equals
    H W H' + diag to round-off, for the system's W and for another W on the same rows (the refill)."""
    from contactlab.mechanics.delassus import DelassusPattern
    sys = systems[0]
    nc, H = sys.nc, sys.NST
    assert nc > 0
    ip, ix = H.indptr[:nc + 1].astype(np.int64), H.indices[:H.indptr[nc]].astype(np.int64)
    data = H.data.reshape(3, -1)
    p = DelassusPattern.of(ip, ix, sys.W_blocks.shape[0], np.zeros(0, np.int32))
    assert p is not None
    diag = np.linspace(1e-8, 3e-8, 3 * nc)
    for scale in (1.0, 0.25):
        sys_w = dataclasses.replace(sys, W_blocks=scale * sys.W_blocks, Minv=scale * sys.Minv)
        D = p.matrix(data, sys_w.W_blocks, diag)
        R = _reference(sys_w, diag)
        assert np.abs(D.toarray() - R).max() <= 1e-12 * np.abs(R).max()
        assert np.array_equal(D.toarray(), D.toarray().T)            # exactly symmetric by construction
    D1, D2 = p.matrix(data, sys.W_blocks, diag), p.matrix(data, sys.W_blocks, diag)
    assert not np.shares_memory(D1.indices, D2.indices) and not np.shares_memory(D1.indices, p.indices)


def test_pattern_reuses_a_values_buffer_only_when_nothing_holds_it(systems):
    """values() writes into a buffer of the pattern's pool that nothing else references: a matrix still
    held keeps its numbers while later ones are built on other arrays; once dropped, its array is
    reused (no allocation a step: an array above glibc's 32 MiB mmap cap is otherwise mapped and its
    pages zeroed by the kernel every step), and the values are the product's every time."""
    from contactlab.mechanics.delassus import DelassusPattern
    sys = systems[0]
    nc, H = sys.nc, sys.NST
    ip, ix = H.indptr[:nc + 1].astype(np.int64), H.indices[:H.indptr[nc]].astype(np.int64)
    data = H.data.reshape(3, -1)
    p = DelassusPattern.of(ip, ix, sys.W_blocks.shape[0], np.zeros(0, np.int32))
    diag = np.linspace(1e-8, 3e-8, 3 * nc)
    R1 = _reference(sys, diag)
    D1 = p.matrix(data, sys.W_blocks, diag)
    held = D1.toarray()
    sys_w = dataclasses.replace(sys, W_blocks=0.5 * sys.W_blocks, Minv=0.5 * sys.Minv)
    R2 = _reference(sys_w, diag)
    D2 = p.matrix(data, sys_w.W_blocks, diag)           # D1 held: another array
    D3 = p.matrix(data, sys_w.W_blocks, diag)           # D1 and D2 held: a third, outside the pool
    assert not np.shares_memory(D1.data, D2.data) and not np.shares_memory(D3.data, D1.data)
    assert not np.shares_memory(D3.data, D2.data)
    assert np.array_equal(D1.toarray(), held) and np.abs(held - R1).max() <= 1e-12 * np.abs(R1).max()
    view = D2.data[:5]                                  # a view holds its array too
    address = lambda a: a.__array_interface__["data"][0]
    first = address(D1.data)
    del D1, D3
    D4 = p.matrix(data, sys.W_blocks, diag)             # D1's array is free again: reused
    assert address(D4.data) == first and not np.shares_memory(D4.data, view)
    assert np.abs(D4.toarray() - R1).max() <= 1e-12 * np.abs(R1).max()
    assert np.abs(D2.toarray() - R2).max() <= 1e-12 * np.abs(R2).max()   # untouched under D4


def test_pattern_fits_the_same_rows_only(systems):
    """fits(): the same row structure, body count and index type; another stack's rows do not."""
    from contactlab.mechanics.delassus import DelassusPattern
    a, b = systems
    rows = lambda s: (s.NST.indptr[:s.nc + 1].astype(np.int64), s.NST.indices[:s.NST.indptr[s.nc]].astype(np.int64))
    p = DelassusPattern.of(*rows(a), a.W_blocks.shape[0], np.zeros(0, np.int32))
    assert p.fits(*rows(a), a.W_blocks.shape[0], np.zeros(0, np.int32))
    assert not p.fits(*rows(a), a.W_blocks.shape[0], np.zeros(0, np.int64))
    assert not p.fits(*rows(b), b.W_blocks.shape[0], np.zeros(0, np.int32))


def test_delassus_entry_point_and_old_names(systems):
    """delassus() through the pattern equals the row-by-row CSR and the dense product; the names moved
    out of mechanics/kernels.py and mechanics/system.py stay importable there (the same objects)."""
    import contactlab.mechanics.delassus as MD
    import contactlab.mechanics.kernels as MK
    import contactlab.mechanics.system as MS
    sys = systems[0]
    n = sys.NST.shape[0]
    R = _reference(sys, np.full(n, 1e-8))
    for dense in (False, True):
        D = MD.delassus(sys, sys.NST, 1e-8, dense=dense)
        D = D if dense else D.toarray()
        assert np.abs(D - R).max() <= 1e-12 * np.abs(R).max()
    assert MS.delassus is MD.delassus
    for name in ("delassus_dense", "delassus_csr", "delassus_frames_csr", "frame_pattern", "frame_values"):
        assert getattr(MK, name) is getattr(MD, name)

"""contactlab.heap: the Simulator keeps freed memory in the process."""
import ctypes
import os
import sys

import pytest


_HEAP_PROBE = """
import resource, numpy as np
from contactlab.heap import keep_freed_memory
from contactlab.scenarios import make_scene
from contactlab.sim import Simulator
Simulator(make_scene("stack", count=2), "box-friction", "pgs", iterations=5)     # applies it
def step_like():        # 200 arrays of 100 kB allocated and freed, as a large step's kernels do
    arrs = [np.ones(12_500) for _ in range(200)]
    del arrs
step_like()
f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(4):
    step_like()
print(keep_freed_memory(), (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0) / 4)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux") or not hasattr(ctypes.CDLL(None), "gnu_get_libc_version"),
                    reason="the heap thresholds are glibc's")
def test_simulator_keeps_freed_memory_so_steps_do_not_fault_it_back():
    """Built, a Simulator sets glibc's thresholds (contactlab/heap.py): memory a step frees stays in
    the process, and the next step's allocations of the same size take no page fault (20 MB in
    100 kB arrays: glibc's defaults give most of it back to the system and fault it in again, 4,900
    pages);
    CONTACTLAB_KEEP_HEAP=0 leaves the allocator as it is."""
    import subprocess

    def run(env_value):
        env = dict(os.environ, CONTACTLAB_KEEP_HEAP=env_value)
        out = subprocess.run([sys.executable, "-c", _HEAP_PROBE], env=env, capture_output=True, text=True,
                             check=True).stdout.split()
        return out[0] == "True", float(out[1])

    kept, faults = run("1")
    assert kept and faults < 50
    kept, faults = run("0")
    assert not kept and faults > 2000

"""Sweep tasks for tests/hostile/test_outputs.py (importable by sweep workers as tests.hostile_tasks)."""
import os
import signal
import time


def crash_on(i: int, bad: int = 3) -> dict:
    """Row i; the row i == bad kills its own process with SIGSEGV (a crash in compiled code)."""
    if i == bad:
        os.kill(os.getpid(), signal.SIGSEGV)
    return {"square": i * i}


def slow(i: int, pause: float = 0.4) -> dict:
    """Row i after ``pause`` seconds (two sweeps on one output overlap)."""
    time.sleep(pause)
    return {"square": i * i}

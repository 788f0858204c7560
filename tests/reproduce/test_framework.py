"""The report framework: sections are discovered, a failing section is reported, not lost."""
import types

import pytest

from contactlab import reproduce


def test_failing_section_is_kept_in_report(tmp_path, monkeypatch):
    good = types.SimpleNamespace(__name__="sec_good", TITLE="Good", ORDER=1, run=lambda ctx: "all fine: 42")
    bad = types.SimpleNamespace(__name__="sec_bad", TITLE="Bad", ORDER=2, run=lambda ctx: 1 / 0)
    monkeypatch.setattr(reproduce, "sections", lambda: [good, bad])
    with pytest.raises(reproduce.SectionsFailed) as info:
        reproduce.run_report(tmp_path, quick=True)
    text = (tmp_path / "report.md").read_text()
    assert "all fine: 42" in text and "ZeroDivisionError" in text and info.value.failed == ["sec_bad"]


def test_sections_have_titles_and_orders():
    mods = reproduce.sections()
    assert mods and all(isinstance(m.TITLE, str) and isinstance(m.ORDER, int) for m in mods)
    assert [m.ORDER for m in mods] == sorted(m.ORDER for m in mods)


def test_the_main_job_compiles_ahead_only_on_a_cold_cache(monkeypatch):
    """A whole report on a cold numba cache compiles the kernels first on every core
    (contactlab warmup); on a warm one it does not (loading is cheap)."""
    import contactlab.kernels._jit as jit
    import contactlab.warmup as warmup
    from contactlab import reproduce

    calls = []
    monkeypatch.setattr(warmup, "warm_up", lambda progress=None: calls.append(1) or [("solve lemke", 1.0, None)])

    class Bar:
        def add_task(self, *a, **k):
            return 0

        def update(self, *a, **k):
            pass

    monkeypatch.setattr(jit, "cached_fraction", lambda: 0.9)
    assert reproduce._compile_ahead_if_cold(Bar()) == "90% of the kernels cached at start" and calls == []
    monkeypatch.setattr(jit, "cached_fraction", lambda: 0.1)
    line = reproduce._compile_ahead_if_cold(Bar())
    assert calls == [1] and line.startswith("10% of the kernels cached at start: compiled ahead on")


def test_cached_fraction_counts_kernels_with_machine_code_on_disk(tmp_path):
    """An empty NUMBA_CACHE_DIR: no kernel cached; after compiling one, that one is."""
    import os
    import subprocess
    import sys
    script = ("import numpy as np, contactlab\n"
              "from contactlab.kernels import _jit\n"
              "from contactlab.kernels.residual import lcp_residual_kernel as k\n"
              "before = _jit.cached_fraction()\n"
              "with _jit.compile_always():\n"
              "    k(np.ones(2), np.zeros(2))\n"
              "print(before, _jit.cached_fraction(), len(_jit._KERNELS))\n")
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path))
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    before, after, count = r.stdout.split()
    assert float(before) == 0.0 and float(after) == 1.0 / int(count)   # the kernel calls no other

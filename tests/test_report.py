"""The report framework (issue 18): sections addressable by name and title, --only updates its
block in place, unknown names are errors, failed rows read as failures, provenance on every
report, an interrupted run is marked INCOMPLETE, numba compilation outside warm-ups is named."""
import types

import numpy as np
import pytest
from typer.testing import CliRunner

from contactlab import reproduce
from contactlab.cli import app
from contactlab.errors import ParamError


def _sec(name, title, order, run):
    return types.SimpleNamespace(__name__=f"contactlab.reproduce.sec_{name}", TITLE=title, ORDER=order, run=run)


@pytest.fixture
def fake_sections(monkeypatch):
    state = {"alpha": "alpha v1", "beta": "beta v1"}
    mods = [_sec("alpha", "Alpha experiments", 1, lambda ctx: state["alpha"]),
            _sec("beta", "Beta benchmarks", 2, lambda ctx: state["beta"])]
    monkeypatch.setattr(reproduce, "sections", lambda: mods)
    return state


def test_only_updates_its_section_in_place_by_name_or_title(tmp_path, fake_sections):
    path = reproduce.run_report(tmp_path, progress=False)
    text = path.read_text()
    assert "**Status: COMPLETE**" in text and "alpha v1" in text and "beta v1" in text
    fake_sections.update(alpha="alpha v2", beta="beta v2")
    reproduce.run_report(tmp_path, only=["Alpha experiments"], progress=False)     # by title
    text = path.read_text()
    assert "alpha v2" in text and "alpha v1" not in text and "beta v1" in text and "beta v2" not in text
    assert text.index("## Alpha experiments") < text.index("## Beta benchmarks")   # order kept
    reproduce.run_report(tmp_path, only=["sec_beta"], progress=False)               # by module name
    assert "beta v2" in path.read_text()
    assert [section for section in reproduce.select_sections(["beta"])] == [reproduce.sections()[1]]


def test_unknown_section_is_an_error_listing_names(tmp_path, fake_sections):
    with pytest.raises(ParamError, match=r"alpha \(Alpha experiments\).*beta \(Beta benchmarks\)"):
        reproduce.run_report(tmp_path, only=["gamma"], progress=False)
    assert not (tmp_path / "report.md").exists()
    r = CliRunner().invoke(app, ["reproduce", "--out", str(tmp_path), "--only", "gamma", "--quiet"])
    assert r.exit_code == 2 and "matches no report section" in r.output and "alpha" in r.output


def test_failed_rows_read_as_failures(tmp_path, monkeypatch):
    def run(ctx):
        return reproduce.markdown_table(["method", "ms/step"], [["lemke", 0.7], ["lemke(reduced)",
                                                                ctx.failed("crashed at step 2")]])
    monkeypatch.setattr(reproduce, "sections", lambda: [_sec("one", "One", 1, run)])
    with pytest.raises(reproduce.SectionsFailed) as info:
        reproduce.run_report(tmp_path, progress=False)
    text = (tmp_path / "report.md").read_text()
    assert "| lemke(reduced) | **FAILED** (crashed at step 2) |" in text
    assert "**Status: FAILED" in text and "1 failed row(s) in this section" in text
    assert info.value.failed_rows == {"one": 1}


def test_raising_section_is_kept_and_the_others_run(tmp_path, monkeypatch):
    monkeypatch.setattr(reproduce, "sections", lambda: [_sec("bad", "Bad", 1, lambda ctx: 1 / 0),
                                                        _sec("good", "Good", 2, lambda ctx: "fine: 42")])
    with pytest.raises(reproduce.SectionsFailed):
        reproduce.run_report(tmp_path, progress=False)
    text = (tmp_path / "report.md").read_text()
    assert "This section FAILED" in text and "ZeroDivisionError" in text and "fine: 42" in text


def test_provenance_on_every_report(tmp_path, fake_sections):
    text = reproduce.run_report(tmp_path, progress=False).read_text()
    for word in ("commit:", "numpy", "scipy", "numba", "coal", "highspy", "cores", "load at start", "started",
                 "ended"):
        assert word in text, word
    assert "UTC" in text and np.__version__ in text


def test_interrupted_report_is_marked_incomplete(tmp_path, monkeypatch):
    def stop(ctx):
        raise KeyboardInterrupt
    monkeypatch.setattr(reproduce, "sections", lambda: [_sec("a", "A", 1, lambda ctx: "a done"),
                                                        _sec("b", "B", 2, stop), _sec("c", "C", 3, lambda ctx: "c")])
    with pytest.raises(KeyboardInterrupt):
        reproduce.run_report(tmp_path, progress=False)
    text = (tmp_path / "report.md").read_text()
    assert "**Status: INCOMPLETE: interrupted (Ctrl-C) during section b; not run: c**" in text and "a done" in text


def test_compilation_outside_warm_up_is_named(tmp_path, monkeypatch):
    import numba

    def leaky(ctx):
        @numba.njit(cache=False)
        def f(x):
            return x + 1.0
        ctx.advance("timed kernel")
        f(1.0)                      # compiled inside the (pretend) timing
        return "done"

    def clean(ctx):
        @numba.njit(cache=False)
        def g(x):
            return x * 2.0
        t, out = ctx.best_time(g, 3.0, repeat=2)
        assert out == 6.0 and t >= 0
        return "done"
    monkeypatch.setattr(reproduce, "sections", lambda: [_sec("leaky", "Leaky", 1, leaky),
                                                        _sec("clean", "Clean", 2, clean)])
    text = reproduce.run_report(tmp_path, progress=False).read_text()
    leaky_block, clean_block = text.split("## Clean")
    assert "outside warm-ups" in leaky_block and "timed kernel" in leaky_block
    assert "outside warm-ups" not in clean_block


def test_report_file_permissions_are_normal(tmp_path, fake_sections):
    import os
    mask = os.umask(0)
    os.umask(mask)
    path = reproduce.run_report(tmp_path, progress=False)
    assert os.stat(path).st_mode & 0o777 == 0o666 & ~mask


def test_only_keeps_earlier_failures_in_the_status(tmp_path, monkeypatch):
    state = {"fail": True}

    def flaky(ctx):
        if state["fail"]:
            raise RuntimeError("broken today")
        return "fixed"
    mods = [_sec("flaky", "Flaky", 1, flaky), _sec("fine", "Fine", 2, lambda ctx: "fine")]
    monkeypatch.setattr(reproduce, "sections", lambda: mods)
    with pytest.raises(reproduce.SectionsFailed):
        reproduce.run_report(tmp_path, progress=False)
    path = reproduce.run_report(tmp_path, only=["fine"], progress=False)      # the failure is still in the report
    assert "**Status: FAILED: kept from an earlier run: flaky with failures**" in path.read_text()
    state["fail"] = False
    reproduce.run_report(tmp_path, only=["flaky"], progress=False)
    text = path.read_text()
    assert "**Status: COMPLETE**" in text and "broken today" not in text and "fixed" in text

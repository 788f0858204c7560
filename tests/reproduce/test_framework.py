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

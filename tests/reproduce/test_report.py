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


# ----------------------------------------------------------------------------- the opening summary table
VERDICT = {v: f'<span class="verdict-{v.replace(" ", "-")}">{v}</span>' for v in
           ("agree", "differ", "not reproduced", "not run")}


def _summary_part(text):
    """The report between its status line and the provenance: the summary table's lines."""
    head = text.split("Provenance of the last run", 1)[0]
    return [line for line in head.splitlines() if line.startswith("| ") and not line.startswith("| paper |")]


def test_summary_table_comes_first_and_is_built_from_the_sections_rows(tmp_path, monkeypatch):
    from contactlab.reproduce import papers
    state = {"ratio": 6.0}

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    def gripper(ctx):                      # a section judging drumwright Table I from its own "result"
        ok = 6.58 / 1.5 <= state["ratio"] <= 6.58 * 1.5
        fig = ctx.figure("gripper", plt.figure(figsize=(1, 1)))
        ctx.summary("drumwright", "Table I", paper_value="6.58x", ours=f"{state['ratio']:.2f}x", agrees=ok,
                    reason="" if ok else "outside a factor 1.5", figures=[fig])
        return "gripper table"
    mods = [_sec("box_gripper", "Box gripper", 1, gripper), _sec("other", "Other", 2, lambda ctx: "other")]
    monkeypatch.setattr(reproduce, "sections", lambda: mods)
    text = reproduce.run_report(tmp_path, progress=False).read_text()
    # order: title, status, summary, provenance, sections
    assert text.index("# contactlab reproduction report") < text.index("**Status: COMPLETE**") \
        < text.index("## Summary") < text.index("Provenance of the last run") < text.index("## Box gripper")
    rows = _summary_part(text)
    assert len(rows) == len(papers.ITEMS)          # every table and figure of the five papers has its row
    table1 = [r for r in rows if r.startswith("| drumwright | Table I |")]
    assert table1 == ['| drumwright | Table I | 6.58x | 6.00x | <span class="verdict-agree">agree</span> |  | '
                      '[box_gripper](#sec-box_gripper) | <img src="figures/gripper.png" alt="gripper" width="220"> |']
    assert '<a id="sec-box_gripper"></a>' in text
    # items whose section is not in the report say how to run it; illustrations say why nothing is compared
    fig2 = next(r for r in rows if r.startswith("| drumwright | Table II |"))
    assert "not run" in fig2 and "`contactlab reproduce --only quadruped`" in fig2
    illus = next(r for r in rows if r.startswith("| loomis-balkcom | Fig. 2 |"))
    assert "not reproduced" in illus and "illustration" in illus
    assert "1 agree" in text.split("## Summary", 1)[1].splitlines()[0]
    # the verdict follows the section's result, and --only of another section keeps the row
    state["ratio"] = 1.65
    reproduce.run_report(tmp_path, only=["box_gripper"], progress=False)
    reproduce.run_report(tmp_path, only=["other"], progress=False)
    text = (tmp_path / "report.md").read_text()
    row = next(r for r in _summary_part(text) if r.startswith("| drumwright | Table I |"))
    assert '| 1.65x | <span class="verdict-differ">differ</span> | outside a factor 1.5 |' in row
    # report.html: title, status, summary, then the contents list; the summary's figure embedded
    page = (tmp_path / "report.html").read_text()
    assert page.index("<h1>") < page.index("Status: COMPLETE") < page.index("Summary: the papers") < page.index("<nav>")
    assert page.index("<nav>") < page.index("Provenance of the last run")
    summary_html = page[page.index("Summary: the papers"):page.index("<nav>")]
    assert 'src="data:image/png;base64,' in summary_html and 'href="#sec-box_gripper"' in summary_html


def test_summary_rows_need_a_known_paper_and_a_reason(tmp_path):
    ctx = reproduce.ReportContext(tmp_path)
    with pytest.raises(ParamError, match="unknown paper"):
        ctx.summary("nobody", "Table I", paper_value="1", ours="1", agrees=True)
    with pytest.raises(ParamError, match="needs its reason"):
        ctx.summary("drumwright", "Table I", paper_value="1", ours="2", agrees=False)
    ctx.summary("drumwright", "Table I", paper_value="a | b", ours="c\nd", agrees=None, reason="why -- not")
    from contactlab.reproduce import papers
    row = papers.decode(papers.encode(ctx.summaries[0]))[0]
    assert row == ctx.summaries[0] and "--" not in papers.encode(row)[4:-3]   # safe inside an HTML comment


def test_quick_sections_give_their_papers_rows(tmp_path):
    """A quick run of two real sections, side by side in two worker processes: the rows come from
    their computed results (verdicts checked against the numbers the sections print), not from a
    fixed table."""
    import re

    from contactlab.reproduce import papers
    path = reproduce.run_report(tmp_path, quick=True, only=["box_gripper", "quasistatic"], progress=False, jobs=2)
    text = path.read_text()
    assert "- sections: 2 at a time, each in its own process" in text and "**Status: COMPLETE" in text
    rows = {tuple(c.strip() for c in r.split("|")[1:3]): [c.strip() for c in r.split("|")[1:-1]]
            for r in _summary_part(text)}
    t1 = rows["drumwright", "Table I"]
    # the verdict reads Stewart-Trinkle with Lemke cold each step (the paper's run), CPU time
    st, ppm, ratio = map(float, re.match(r"CPU time, Lemke cold each step \(the paper's run\): ([0-9.]+) s vs "
                                         r"([0-9.]+) s: ([0-9.]+)x", t1[3]).groups())
    assert ratio == pytest.approx(st / ppm, rel=0.01, abs=0.01)
    assert t1[4] == VERDICT["agree" if 6.58 / 1.5 <= ratio <= 6.58 * 1.5 else "differ"]
    assert "with Lemke's warm basis (ours, not the paper's experiment)" in t1[3]
    block = text[text.index("## Box gripper"):]
    assert re.search(r"\| stewart-trinkle \| lemke\(warm_basis=False\) \(cold: [^|]*the paper's experiment\) \| 10 \(10\) \|",
                     block)
    assert re.search(r"\| stewart-trinkle \| lemke \(warm basis [^|]*ours, not the paper's experiment\) \| 10 \(10\) \|",
                     block)
    fig1 = rows["drumwright", "Fig. 1"]
    assert fig1[4] == VERDICT["agree"] and "held in 1/1 trials" in fig1[3]    # no-slip holds the boxes
    assert rows["trinkle-pang-sudarsky-lo", "(no table or figure)"][4] == VERDICT["not reproduced"]
    ds = rows["pang-trinkle-lo", "Data Sets 1-4"]
    assert "DS 4: MIP no solution" in ds[3] and ds[4] == VERDICT["agree"]     # Data Set 4 jams: proven by the MIP
    assert rows["pang-trinkle-lo", "Table 1"][4] == VERDICT["not reproduced"] and "quick mode" in rows["pang-trinkle-lo", "Table 1"][5]
    jam = rows["pang-trinkle-lo", "56 friction combinations"]
    n = sum(map(int, re.findall(r"(\d+) (?:solved by Step 1|via Step 3|unsolved)", jam[3])))
    assert n == 56 and "quasistatic_jamming.png" in jam[7]
    assert rows["drumwright", "Table II"][4] == VERDICT["not run"]
    assert len(rows) == len(papers.ITEMS)


def test_a_sections_own_name_wins_over_words_in_other_titles():
    """`--only sim` is the simulation section, not every section whose title mentions simulations;
    a word that names no section whole still matches inside titles."""
    names = lambda only: [reproduce.section_name(m) for m in reproduce.select_sections(only)]
    assert names(["sim"]) == ["sim"]
    assert names(["sec_reuse"]) == ["reuse"]
    assert "grasping" in names(["grasp"]) and len(names(["simulation"])) >= 2

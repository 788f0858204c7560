"""The report's opening table: every table and figure of the five papers the project reproduces.

:data:`ITEMS` is the catalogue (paper, item, what it shows, the sections that reproduce it). Its
verdicts are not here: each section computes its own rows from its results with
:meth:`ReportContext.summary <contactlab.reproduce.ReportContext.summary>` (the paper's key figure,
ours, whether they agree and why not), and :func:`summary_table` puts them in catalogue order. An
item no section reproduces carries the reason here (an illustration, a theory paper); an item whose
section did not run in this report says which ``--only`` name runs it.
"""
from __future__ import annotations

import json
import re

#: short name -> citation (the short names are the ones the docs and sections use)
PAPERS = {
    "arechavaleta": "G. Arechavaleta, E. López-Damian, J. L. Morales: On the use of iterative LCP solvers for dry "
                    "frictional contacts in grasping",
    "drumwright": "E. Drumwright: Rapidly computable viscous friction and no-slip rigid contact models",
    "loomis-balkcom": "A. Loomis, D. Balkcom: Computation reuse for rigid-body dynamics",
    "pang-trinkle-lo": "J.-S. Pang, J. C. Trinkle, G. Lo: A complementarity approach to a quasistatic "
                       "multi-rigid-body contact problem",
    "trinkle-pang-sudarsky-lo": "J. Trinkle, J.-S. Pang, S. Sudarsky, G. Lo: On dynamic multi-rigid-body contact "
                                "problems with Coulomb friction",
}

_ILLUSTRATION = "an illustration of the method, with no measured result to compare"

#: (paper, item, what the paper shows, sections reproducing it, reason when no section does)
ITEMS = [
    ("arechavaleta", "Table I", "CPU time of Lemke, PGS and PGS-SM per grasp LCP", ("grasping",), ""),
    ("arechavaleta", "Fig. 1", "five-fingered hand picks up a rubber ball", ("replays",), ""),
    ("arechavaleta", "Fig. 2", "Barrett hand, plastic links (mu 0.2): the glass slips", ("grasping",), ""),
    ("arechavaleta", "Fig. 3", "Barrett hand, rubber links (mu 1.0): a stable grasp", ("grasping",), ""),
    ("drumwright", "Table I", "box gripper: time of Stewart-Trinkle/Lemke vs no-slip/PPM and quadprog",
     ("box_gripper",), ""),
    ("drumwright", "Fig. 1", "box gripper: the grippers hold the boxes by friction", ("box_gripper",), ""),
    ("drumwright", "Table II", "quadruped: no-slip/PPM vs Coulomb/Lemke run time", ("quadruped",), ""),
    ("drumwright", "Table III", "quadruped: viscous PPM vs viscous Lemke run time", ("quadruped",), ""),
    ("drumwright", "Fig. 2", "quadruped trotting", ("quadruped",), ""),
    ("loomis-balkcom", "Table I", "disassembly planning: total pivots LP / Dantzig / Dantzig + reuse", ("reuse",), ""),
    ("loomis-balkcom", "Fig. 1", "a column falling apart: motionless set changes at frames 60 and 195",
     ("reuse",), ""),
    ("loomis-balkcom", "Fig. 2", "sequential contact forces of sub-assemblies", (), _ILLUSTRATION),
    ("loomis-balkcom", "Fig. 3", "how an LCP solution is reused in simulation", (), _ILLUSTRATION),
    ("loomis-balkcom", "Fig. 4", "three motionless sets; reuse slows the second segment", ("reuse",), ""),
    ("loomis-balkcom", "Fig. 5", "a simple structure and its disassembly graph", (), _ILLUSTRATION),
    ("loomis-balkcom", "Fig. 6", "pivots per stability test by sub-assembly size (random-84)", ("reuse",), ""),
    ("loomis-balkcom", "Fig. 7", "a random assembly coloured by removal order", ("reuse",), ""),
    ("pang-trinkle-lo", "Figure 1", "workpiece in contact with a manipulator", (), "a schematic of the problem"),
    ("pang-trinkle-lo", "Data Sets 1-4", "bilinear LP method on the published data sets", ("quasistatic",), ""),
    ("pang-trinkle-lo", "56 friction combinations", "Data Set 2 over 56 (mu_1, mu_2, mu_3): solved and jamming",
     ("quasistatic",), ""),
    ("pang-trinkle-lo", "Table 1", "twenty random problems", ("quasistatic",), ""),
    ("trinkle-pang-sudarsky-lo", "(no table or figure)", "existence and uniqueness theory of the acceleration-level "
     "model; no numerical table or figure", ("box_gripper",),
     "the paper reports theory, not measurements; its model runs as `--model trinkle-pang`"),
]

VERDICTS = {True: "agree", False: "differ", None: "not reproduced"}
_MARK = "<!-- contactlab:summary {} -->"
_MARK_RE = re.compile(r"<!-- contactlab:summary (\{.*?\}) -->")


def encode(row: dict) -> str:
    """A summary row as an HTML comment kept inside its section's block (so ``--only`` keeps it)."""
    return _MARK.format(json.dumps(row, ensure_ascii=False).replace("--", "-\\u002d"))


def decode(text: str) -> list[dict]:
    """The summary rows stored in ``text`` (a section block or a whole report), in order."""
    return [json.loads(m.group(1)) for m in _MARK_RE.finditer(text)]


def _cell(value) -> str:
    return " ".join(str(value).split()).replace("|", "\\|") if value not in (None, "") else ""


def _figure_cell(links: list[str]) -> str:
    out = []
    for link in links:
        if link.endswith((".png", ".svg", ".jpg", ".jpeg", ".gif")):
            name = link.rsplit("/", 1)[-1].rsplit(".", 1)[0]
            out.append(f'<img src="{link}" alt="{name}" width="220">')
        else:
            out.append(f"[{link.rsplit('/', 1)[-1]}]({link})")
    return " ".join(out)


def summary_table(blocks: dict[str, str], titles: dict[str, str]) -> str:
    """The report's opening table from the sections' stored rows.

    ``blocks``: section short name -> its block in the report (sections not run are absent);
    ``titles``: short name -> title, of every section (for links and ``--only`` hints). Each
    catalogue item gets the rows its sections computed; an item without rows says why (no section
    reproduces it, its section did not run in this report, or it produced no row this run).
    Sections' rows for items outside the catalogue are listed after it."""
    rows_by_item: dict[tuple, list] = {}
    figures: dict[tuple, list] = {}
    for name, block in blocks.items():
        for r in decode(block):
            key = (r["paper"], r["item"])
            if r.get("kind") == "figure":
                figures.setdefault(key, []).append(r["figure"])
            else:
                rows_by_item.setdefault(key, []).append({**r, "section": name})
    head = ["paper", "table / figure", "the paper", "ours", "verdict", "why they differ", "section", "figure"]
    lines = ["| " + " | ".join(head) + " |", "|" + ":---|" * len(head)]   # left-aligned: text, not numbers
    counts = {"agree": 0, "differ": 0, "not reproduced": 0, "not run": 0}

    def link(section):
        return f"[{section}](#sec-{section})" if section in blocks else f"`--only {section}`"

    def emit(paper, item, paper_value, ours, verdict, reason, section, figs):
        counts[verdict] += 1
        shown = f'<span class="verdict-{verdict.replace(" ", "-")}">{verdict}</span>'
        lines.append("| " + " | ".join([paper, _cell(item), _cell(paper_value), _cell(ours), shown, _cell(reason),
                                         section, _figure_cell(figs)]) + " |")

    seen = set()
    for paper, item, what, secs, why in ITEMS:
        key = (paper, item)
        seen.add(key)
        rows = rows_by_item.get(key, [])
        figs = list(dict.fromkeys(figures.get(key, []) + [f for r in rows for f in r.get("figures", [])]))
        if rows:
            for k, r in enumerate(rows):
                emit(paper, item, r["paper_value"], r["ours"], VERDICTS[r["agrees"]], r.get("reason", ""),
                     link(r["section"]), figs if k == 0 else [])
        elif not secs:
            emit(paper, item, what, "-", "not reproduced", why, "-", figs)
        else:
            ran = [s for s in secs if s in blocks]
            if ran:
                reason = f"section {', '.join(ran)} ran but gave no result for it" + (
                    " (it raised; see the section)" if any("This section FAILED" in blocks[s] for s in ran) else "")
                emit(paper, item, what, "-", "not reproduced", reason, ", ".join(link(s) for s in ran), figs)
            else:
                emit(paper, item, what, "-", "not run", "its section is not in this report: "
                     + ", ".join(f"`contactlab reproduce --only {s}`" for s in secs), "-", figs)
    for key, rows in rows_by_item.items():
        if key not in seen:
            for r in rows:
                emit(key[0], key[1], r["paper_value"], r["ours"], VERDICTS[r["agrees"]], r.get("reason", ""),
                     link(r["section"]), r.get("figures", []))
    tally = ", ".join(f"{v} {k}" for k, v in counts.items() if v)
    legend = ("*agree*: the paper's key figure or claim holds in ours within the tolerance the row states; "
              "*differ*: it does not (why: the next column); *not reproduced*: no result to compare (why "
              "given); *not run*: the section was not run in this report.")
    papers = [f"- {k}: {v}" for k, v in PAPERS.items()]
    return "\n".join([f"## Summary: the papers' tables and figures ({tally})", "", legend, "", *lines, "",
                      "Papers:", "", *papers])

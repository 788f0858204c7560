"""MkDocs hooks of the documentation site (mkdocs.yml ``hooks:``).

- Tutorials: every ``docs/tutorials/*.py`` runs when the site is built, in a scratch folder, with
  ``CONTACTLAB_DOCS_OUT`` naming where it writes its figures and replay pages. A tutorial page says
  ``<!-- tutorial: NAME.py -->``; the hook puts there the script itself, what it printed, and every
  file it wrote (pictures shown, pages embedded and linked). A script that fails stops the build.
- CLI reference: ``<!-- cli-reference -->`` in docs/cli.md becomes the ``--help`` of every
  ``contactlab`` command, rendered from the typer app itself, so the page cannot drift from the CLI.
- Sphinx-style roles left in docstrings (``:class:`~contactlab.sim.Simulator```) render as code.
"""
from __future__ import annotations

import html
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from mkdocs.structure.files import File

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
TUTORIALS = DOCS / "tutorials"
_OUT: dict[str, dict] = {}          # script name -> {"stdout": str, "files": [relative paths]}
_GEN: Path | None = None            # scratch folder holding the generated files
_ROLE = re.compile(r":(?:class|func|meth|mod|attr|exc|data|obj|py:\w+):<code>~?([^<]*?)</code>")


def _env() -> dict:
    env = dict(os.environ)
    src = str(ROOT / "src")
    env["PYTHONPATH"] = src + os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else src
    env.setdefault("MPLBACKEND", "Agg")
    env["COLUMNS"] = "100"
    return env


def on_pre_build(config, **kwargs):
    """Run every tutorial script (a failing script fails the build, with its output)."""
    global _GEN
    _GEN = Path(tempfile.mkdtemp(prefix="contactlab-docs-"))
    _OUT.clear()
    for script in sorted(TUTORIALS.glob("*.py")):
        out = _GEN / "tutorials" / "generated" / script.stem
        out.mkdir(parents=True)
        run = subprocess.run([sys.executable, str(script)], cwd=out, env={**_env(), "CONTACTLAB_DOCS_OUT": str(out)},
                             capture_output=True, text=True, timeout=600)
        if run.returncode != 0:
            raise RuntimeError(f"tutorial {script.name} failed (exit {run.returncode}):\n{run.stdout}\n{run.stderr}")
        files = sorted(p.relative_to(_GEN).as_posix() for p in out.rglob("*") if p.is_file())
        _OUT[script.name] = {"stdout": run.stdout, "files": files}


def on_files(files, config, **kwargs):
    """Add the tutorials' outputs to the site (so links to them are checked like any other)."""
    for entry in _OUT.values():
        for rel in entry["files"]:
            files.append(File(rel, str(_GEN), config["site_dir"], config["use_directory_urls"]))
    return files


def _tutorial_block(name: str, page_dir: str) -> str:
    if name not in _OUT:
        raise RuntimeError(f"a page names tutorial {name!r}, which is not a script in docs/tutorials/")
    source = (TUTORIALS / name).read_text()
    # the printed output (timings that change from build to build) is kept out of the search index:
    # a search index that changes with every build made the site search fail for some builds
    # (mkdocs-material's lunr worker, "reading '_index'"), and run-dependent numbers are not what a
    # reader searches for
    parts = [f"```python title=\"docs/tutorials/{name}\"\n{source.rstrip()}\n```", "",
             "It prints:", "", '<pre data-search-exclude><code class="language-text">'
             + html.escape(_OUT[name]["stdout"].rstrip()) + "</code></pre>", ""]
    for rel in _OUT[name]["files"]:
        link = os.path.relpath(rel, page_dir).replace(os.sep, "/")
        if rel.endswith((".png", ".svg")):
            parts += [f"![{Path(rel).stem}]({link})", ""]
        elif rel.endswith(".html"):
            parts += [f'<iframe src="{html.escape(link)}" style="width:100%;height:480px;border:1px solid #ccc" '
                      f'loading="lazy" title="{Path(rel).name}"></iframe>', "",
                      f"[Open `{Path(rel).name}` on its own page]({link})", ""]
        else:
            parts += [f"Written by the script: [`{Path(rel).name}`]({link})", ""]
    return "\n".join(parts)


def _cli_reference() -> str:
    from typer.main import get_command
    from typer.testing import CliRunner

    from contactlab.cli import app
    runner = CliRunner()
    group = get_command(app)
    env = {"COLUMNS": "100", "NO_COLOR": "1", "TERM": "dumb"}
    out = ["## contactlab", "", "```text\n" + runner.invoke(app, ["--help"], env=env, prog_name="contactlab").output.rstrip() + "\n```", ""]
    for name in sorted(group.commands):
        r = runner.invoke(app, [name, "--help"], env=env, prog_name="contactlab")
        if r.exit_code != 0:
            raise RuntimeError(f"contactlab {name} --help failed: {r.output}")
        out += [f"## contactlab {name}", "", "```text\n" + "\n".join(line.rstrip() for line in r.output.rstrip().splitlines()) + "\n```", ""]
    return "\n".join(out)


def on_page_markdown(markdown, page, config, files, **kwargs):
    page_dir = Path(page.file.src_uri).parent.as_posix()
    markdown = re.sub(r"<!-- tutorial: (\S+) -->", lambda m: _tutorial_block(m.group(1), page_dir), markdown)
    if "<!-- cli-reference -->" in markdown:
        markdown = markdown.replace("<!-- cli-reference -->", _cli_reference())
    return markdown


def on_page_content(html_text, page, config, files, **kwargs):
    return _ROLE.sub(lambda m: f"<code>{m.group(1).rsplit('.', 1)[-1] if m.group(0).find('~') >= 0 else m.group(1)}</code>",
                     html_text)


def on_post_build(config, **kwargs):
    if _GEN is not None:
        shutil.rmtree(_GEN, ignore_errors=True)

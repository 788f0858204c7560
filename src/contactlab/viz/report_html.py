"""The ``reproduce`` report as one self-contained web page.

The Markdown report is rendered with markdown-it-py (CommonMark plus tables); every image it
links is embedded as a data URI, so the page opens offline and can be mailed as one file. Links to
other files (the 3D replays under ``replays/``) stay relative, next to the report.
"""
from __future__ import annotations

import base64
import html
import re
from pathlib import Path

_MIME = {".png": "image/png", ".svg": "image/svg+xml", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif"}

_STYLE = """body{font-family:-apple-system,Segoe UI,Helvetica,Arial,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;
line-height:1.45;color:#222}table{border-collapse:collapse;margin:1em 0;font-size:.9em}th,td{border:1px solid #ccc;
padding:3px 8px;text-align:right}th{background:#f3f3f3}td:first-child,th:first-child{text-align:left}img{max-width:100%}
pre{background:#f6f6f6;padding:.6em;overflow-x:auto}code{background:#f6f6f6}nav{columns:2;font-size:.9em}
h2{border-bottom:2px solid #ddd;padding-bottom:.2em;margin-top:2em}"""


def _embed_images(body: str, base: Path) -> str:
    def repl(m):
        src = m.group(2)
        if src.startswith(("data:", "http:", "https:")):
            return m.group(0)
        p = (base / src).resolve()
        mime = _MIME.get(p.suffix.lower())
        if mime is None or not p.is_file():
            return m.group(0)
        data = base64.b64encode(p.read_bytes()).decode("ascii")
        return f'{m.group(1)}data:{mime};base64,{data}{m.group(3)}'
    return re.sub(r'(<img[^>]*?src=")([^"]+)(")', repl, body)


def markdown_to_html(markdown: str, base_dir, *, title: str = "contactlab report") -> str:
    """One self-contained HTML page of ``markdown`` (images relative to ``base_dir`` embedded),
    with a table of contents of its ``##`` sections."""
    from markdown_it import MarkdownIt
    md = MarkdownIt("commonmark", {"html": True}).enable("table")   # our own report: <sub>, comments pass through
    tokens = md.parse(markdown)
    toc, used = [], set()
    for i, tok in enumerate(tokens):
        if tok.type == "heading_open" and tok.tag == "h2":
            text = tokens[i + 1].content
            slug = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "section"
            while slug in used:
                slug += "-"
            used.add(slug)
            tok.attrSet("id", slug)
            toc.append((slug, text))
    body = md.renderer.render(tokens, md.options, {})
    body = _embed_images(body, Path(base_dir))
    nav = "".join(f'<li><a href="#{s}">{html.escape(t)}</a></li>' for s, t in toc)
    return (f'<!DOCTYPE html><html><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
            f"<style>{_STYLE}</style></head><body><nav><ul>{nav}</ul></nav>{body}</body></html>")


def write_report_html(report_md, out=None) -> Path:
    """Render ``report.md`` to ``report.html`` beside it (atomically); returns the page's path."""
    from ..files import atomic_write
    report_md = Path(report_md)
    out = Path(out) if out is not None else report_md.with_suffix(".html")
    page = markdown_to_html(report_md.read_text(encoding="utf-8"), report_md.parent)
    return atomic_write(out, lambda tmp: Path(tmp).write_text(page, encoding="utf-8"))

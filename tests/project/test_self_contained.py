"""The product reads nothing outside the repository: a user who clones it has no ``../shared``
(the papers and samples beside the project are for its developers only)."""
import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _non_docstring_strings(tree: ast.AST):
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                docstrings.add(id(body[0].value))
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            yield node


def test_no_code_builds_a_path_to_the_developers_shared_folder():
    """Docstrings may cite ../shared/scenario-specs.md as a source; code may not name the folder."""
    offenders = []
    for folder in ("src", "tests", "benchmarks"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path == Path(__file__).resolve():
                continue
            for node in _non_docstring_strings(ast.parse(path.read_text())):
                text = node.value
                if text == "shared" or "shared/" in text or "fclib-samples" in text and "/" in text:
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}: {text!r}")
    assert not offenders, "\n".join(offenders)


def _tracked_files() -> list[str]:
    out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    return [f for f in out.decode().split("\0") if f and (ROOT / f).is_file()]


def test_the_fclib_section_of_the_main_job_runs_from_a_clone_with_nothing_beside_it(tmp_path):
    """The repository's files alone (and numba's caches, copied with their times so that they stay
    valid), in a folder with no ../shared: reproduce's fclib section is COMPLETE and exits 0."""
    clone = tmp_path / "isolated" / "contactlab"
    for rel in _tracked_files():
        (clone / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, clone / rel)
    for cache in (ROOT / "src").rglob("__pycache__"):
        shutil.copytree(cache, clone / cache.relative_to(ROOT), dirs_exist_ok=True, copy_function=shutil.copy2)
    assert not (clone.parent.parent / "shared").exists() and not (clone.parent / "shared").exists()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(clone / "src")
    r = subprocess.run([sys.executable, "-c", "import contactlab, sys; assert contactlab.__file__.startswith(sys.argv[1]);"
                        "from contactlab.cli import main; sys.argv = ['contactlab'] + sys.argv[2:]; main()",
                        str(clone / "src"), "reproduce", "--only", "fclib", "--quick", "--out", str(tmp_path / "out")],
                       cwd=clone, env=env, capture_output=True, text=True, timeout=1500)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    report = (tmp_path / "out" / "report.md").read_text()
    assert "COMPLETE" in report and "FAILED" not in report
    assert "fclib-samples" in report       # the shipped FCLIB sample was solved, not skipped

"""The README's two set-up commands are the project's contract (the brief's "two commands"): CI runs
exactly the README's test command, and both commands install from the project's own files."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _readme_commands() -> list[str]:
    setup = ROOT.joinpath("README.md").read_text().split("## Set-up", 1)[1].split("\n## ", 1)[0]
    return [line.strip() for line in setup.splitlines() if line.startswith("    python3 -m venv")]


def test_the_readme_gives_two_commands_main_job_then_tests():
    main, tests = _readme_commands()
    assert main.endswith(".venv/bin/contactlab reproduce") and "pip install -e ." in main
    assert re.search(r"\.venv/bin/python -m pytest\b", tests) and 'pip install -e ".[dev]"' in tests


def test_ci_runs_exactly_the_readmes_test_command():
    ci = [line.strip() for line in ROOT.joinpath(".ci", "run").read_text().splitlines()
          if line.strip() and not line.lstrip().startswith("#")]
    assert _readme_commands()[1] == ci[-1]


def test_the_tests_run_on_every_core_with_the_plugin_from_the_dev_extra():
    """`-n auto` (every core) needs pytest-xdist: the dev extra installs it."""
    tests = _readme_commands()[1]
    dev = ROOT.joinpath("pyproject.toml").read_text().split("dev = [", 1)[1].split("]", 1)[0]
    assert tests.endswith("-m pytest -q -n auto") and '"pytest-xdist' in dev

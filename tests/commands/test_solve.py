"""`contactlab solve` reads a file, solves it and prints the certified result."""
import json

import numpy as np
from typer.testing import CliRunner

import contactlab as cl
from contactlab.cli import app
from contactlab.problems import generators as gen


def test_solve_json_roundtrip(tmp_path):
    path = tmp_path / "murty.npz"
    cl.save(gen.murty(6), path)
    result = CliRunner().invoke(app, ["solve", str(path), "--method", "lemke", "--json", "--out", str(tmp_path / "z.npz")])
    assert result.exit_code == 0, result.output
    rec = json.loads(result.output)
    assert rec["status"] == "SOLVED" and rec["pivots"] == 64 and rec["residual"] == 0.0
    assert np.load(tmp_path / "z.npz")["z"][-1] == 64.0


def test_solve_reports_failure_and_bad_method(tmp_path):
    path = tmp_path / "bad.npz"
    cl.save(cl.LCP(-np.eye(2), -np.ones(2)), path)
    result = CliRunner().invoke(app, ["solve", str(path), "--method", "enumerate", "--json"])
    assert result.exit_code == 1 and json.loads(result.output)["status"] == "NO_SOLUTION"
    result = CliRunner().invoke(app, ["solve", str(path), "--method", "nope"])
    assert result.exit_code == 2 and "known methods" in result.output

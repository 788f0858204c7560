#!/usr/bin/env bash
# Installs the peer libraries the benchmarks compare against. For comparison only: tests never need them.
# Idempotent: run it again at any time. Usage: bash benchmarks/setup_peers.sh [path/to/venv]
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${1:-.venv}"
PIP="$VENV/bin/pip"
SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"

# --- pivoting (issue 2) -----------------------------------------------------------------------
# Measured here (Debian 12, Python 3.11): python3-siconos 4.4.0 is ~120 MB installed (plus its libsiconos*/bullet
# deps; it was already present on this machine, so its install time was not measured); pip step (drake 1.51.1,
# ~170 MB in site-packages, and quantecon 0.11.4, ~3 MB, with sympy/requests/Mosek wheels) took 22 s.
# Siconos numerics (Debian package; runs under the system /usr/bin/python3, not the venv).
if ! /usr/bin/python3 -c "import siconos.numerics" 2>/dev/null; then
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq python3-siconos
fi
# Drake (MobyLcpSolver, through MathematicalProgram) and QuantEcon (numba lcp_lemke), into the venv.
"$PIP" install -q drake quantecon

# --- simulation (issue 4) -----------------------------------------------------------------------
# PyBullet and MuJoCo (issue 11: benchmarks/bench_sim.py writes the boxes as MJCF) into the venv;
# ODE's Python binding (python3-pyode, Debian) for the system python3.
"$PIP" install -q pybullet mujoco
if ! /usr/bin/python3 -c "import ode" 2>/dev/null; then
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq python3-pyode
fi

# --- frictional contact (issue 15) -------------------------------------------------------------
# The same python3-siconos (above) provides fc3d NSGS, NSN_AC, NSN_FB, PROX, ADMM and fc2d NSGS, run by
# benchmarks/peers/siconos_fc_runner.py (system python; apt install measured here: ~1 min, Debian 12).

# --- iterative and convex solvers (issue 3) ----------------------------------------------------
# Siconos (above) provides PGS, PSOR, RPGS, CPG, Newton-FB/min and its convex QP LCP solver.
# QP peers of the `qp` route (proxsuite and qpsolvers themselves are contactlab dependencies).
"$PIP" install -q osqp quadprog

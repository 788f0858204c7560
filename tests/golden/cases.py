"""The golden trajectories: a fixed set of scenes x contact models x methods, each run for a fixed
number of steps from its scene's start (issue 37 item 1).

A :class:`Case` names the scene and its parameters, the contact model, the method and the
simulator's options, how many steps to run and every how many steps the body poses are kept
(``stride``; the first and the last pose always). :func:`run_case` runs it and returns the arrays
stored in ``tests/golden/data/<case>.npz`` (:mod:`tests.golden.regenerate` writes them,
``tests/golden/test_golden_trajectories.py`` compares a fresh run with them).

Each case carries the tolerance its path guarantees (``tol``: the largest |difference| of a
position coordinate, in m, and of a quaternion component, in 1) and why (``basis``):

- ``bits`` (``tol = 0``): the path's arithmetic is the project's numba kernels (``fastmath=False``:
  no reassociation, no contraction into fused multiply-adds, so each sum is taken in the order
  written) and scipy.sparse's C++ products, whose order does not depend on the CPU or the BLAS
  build. Run again under each of OpenBLAS's CPU kernels (``OPENBLAS_CORETYPE``: each changes the
  blocking and the summation order of every BLAS/LAPACK call), under NumPy without its AVX-512 and
  AVX2 loops, and with every kernel compiled for a generic x86-64 CPU, these cases gave the same bits (``python -m tests.golden.regenerate --check --variants``, README.md).
- ``blas``: some value that reaches the state goes through BLAS/LAPACK (NumPy's ``@``, a dense
  factorisation or solve), whose rounding depends on the CPU kernel OpenBLAS picks; a contact that
  enters the margin or a pivot that a rounding decides can then differ as well. The tolerance is
  the largest difference measured under those variants times 100, rounded up to a power of ten, at
  least 1e-12 (README.md lists the figures).

``sanity`` names the physical checks the stored data must pass whatever the code does (a resting
stack stays put, nothing falls through the ground, the robot stands, the gripper holds its boxes):
``tests/golden/test_golden_trajectories.py`` runs them on the stored arrays, so the golden data cannot be
garbage.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

#: the arrays of one case's .npz (besides the string ``names``): positions (frames, bodies, 3),
#: quaternions (frames, bodies, 4), frame_steps (frames,), and per step: success, rescued, contacts,
#: max_penetration
ARRAYS = ("positions", "quaternions", "frame_steps", "success", "rescued", "contacts", "max_penetration")


@dataclass(frozen=True)
class Case:
    """One golden trajectory (see the module docstring)."""
    name: str
    scene: str
    model: str
    method: str | None
    steps: int
    stride: int
    params: dict = field(default_factory=dict)
    options: dict = field(default_factory=dict)     # Simulator keyword arguments (iterations, reuse, ...)
    tol: tuple = (0.0, 0.0)                         # (position m, quaternion component)
    basis: str = "bits"                             # "bits" or "blas" (module docstring)
    sanity: tuple = ()                              # names of checks in test_golden_trajectories.SANITY
    bounds: dict = field(default_factory=dict)      # their bounds (m, rad) where not the checks' own
    slow: bool = False                              # pytest.mark.slow (still run by the test command)
    grid: bool = False                              # box-gripper: the paper's contact grid (scenarios/box_gripper.py)


def _box_cases(scene: str, params: dict, steps: int, stride: int, sanity: tuple, bounds: dict, tols: dict) -> list[Case]:
    """Every contact model that applies to free boxes, each with its certified method, and box
    friction's fixed-budget mode (20 PGS sweeps, as PyBullet's and ODE's budgets). ``tols``: the
    tolerance of each run that is not bit-identical (tag -> (position, quaternion)); ``bounds``: the
    sanity bounds (tag -> dict, "*" for every run)."""
    runs = [("box-qp", "box-friction", "box-qp", {}),
            ("pgs20", "box-friction", "pgs", {"iterations": 20}),
            ("lemke", "stewart-trinkle", "lemke", {}),
            ("frictionless", "frictionless", "lemke", {}),
            ("noslip", "no-slip", "ppm", {}),
            ("viscous", "viscous", "ppm", {}),
            ("trinkle-pang", "trinkle-pang", "lemke", {})]
    return [Case(f"{scene}-{tag}", scene, model, method, steps, stride, dict(params), opts,
                 tol=tols.get(tag, (0.0, 0.0)), basis="blas" if tag in tols else "bits", sanity=sanity,
                 bounds={**bounds.get("*", {}), **bounds.get(tag, {})})
            for tag, model, method, opts in runs]


CASES: list[Case] = [
    # a resting stack of 5 boxes, 1 s at 10 ms: drift bounded by the 1e-6 m (certified), a
    # fixed budget of 20 sweeps sinks and sways by up to 1 mm
    *_box_cases("stack", {"count": 5}, 100, 10, ("finite", "boxes_above_ground", "stack_rests"),
                {"*": {"penetration": 1e-6, "drift": 1e-6, "turn": 1e-6},
                 "pgs20": {"penetration": 2e-4, "drift": 2e-3, "turn": 2e-3}},
                {"box-qp": (1e-9, 1e-8), "noslip": (1e-9, 1e-9), "viscous": (1e-9, 1e-9),
                 "trinkle-pang": (1e-8, 1e-7)}),
    # 8 boxes, each turned a little, dropped 0.1 m into a walled bin (they land at ~0.14 s and lie
    # flat on the ground by 1 s), 1 s at 10 ms
    *_box_cases("pile", {"count": 8}, 100, 5, ("finite", "boxes_above_ground", "in_bin", "pile_landed"),
                {"*": {"penetration": 1e-5}},
                {"box-qp": (1e-9, 1e-8), "noslip": (1e-12, 1e-12), "viscous": (1e-12, 1e-12),
                 "trinkle-pang": (1e-7, 1e-5)}),
    # loomis-balkcom's column: two blocks knocked off, sliding to their walls, 1 s at 10 ms
    # (solved island by island once the column falls apart: three islands' Lemke runs take the
    # equilibrated retry, whose refinement goes through BLAS)
    Case("column-collapse-lemke", "column-collapse", "stewart-trinkle", "lemke", 100, 5,
         tol=(1e-5, 1e-4), basis="blas", sanity=("finite", "column"), bounds={"motionless": 1e-6}),
    # the same frictionless with Dantzig warm-started from the motionless set (loomis-balkcom §IV),
    # whose tolerance lets the column's resting blocks creep (b4 nudged by b5, 2 mm/s)
    Case("column-collapse-dantzig-reuse", "column-collapse", "frictionless", "dantzig", 100, 5,
         options={"warm_start": False, "reuse": "motionless"}, tol=(1e-12, 1e-11), basis="blas",
         sanity=("finite", "column"), bounds={"motionless": 1e-3}),
    # drumwright §VII-A: two boxes held between two motorised gripper boxes, no-slip, 0.5 s; with the
    # simulator's contacts and with the paper's 4 x 3 contact grid per face
    Case("box-gripper-noslip", "box-gripper", "no-slip", "ppm", 50, 5, tol=(1e-12, 1e-12), basis="blas",
         sanity=("finite", "held")),
    Case("box-gripper-grid-noslip", "box-gripper", "no-slip", "ppm", 50, 5, grid=True, tol=(1e-12, 1e-12),
         basis="blas", sanity=("finite", "held")),
    # drumwright §VII-B: the quadruped settling and starting its trot, no-slip, 0.3 s at 1 ms
    Case("quadruped-noslip", "quadruped", "no-slip", "ppm", 300, 20, tol=(1e-12, 1e-12), basis="blas",
         sanity=("finite", "stands"), bounds={"base": "base", "penetration": 1e-6}),
    # Solo-12 (example-robot-data URDF) settling, no-slip, 0.2 s at 1 ms
    Case("solo12-noslip", "solo12", "no-slip", "ppm", 200, 20, tol=(1e-12, 1e-12), basis="blas",
         sanity=("finite", "stands"), bounds={"base": "base_link", "penetration": 1e-6}),
    # arechavaleta §V: the Barrett hand closing on the glass and starting to lift, 0.5 s at 5 ms; with
    # the CLI's default model and with the paper's (box friction, joints by Schur complement, PGS-SM).
    # With Lemke a contact enters the margin one step earlier or later with the BLAS kernel (steps
    # 45 and 73): 1.8e-7 m and 1.8e-6 apart after 100 steps
    Case("barrett-lemke", "barrett-grasp", "stewart-trinkle", "lemke", 100, 5, tol=(1e-4, 1e-3), basis="blas",
         sanity=("finite", "grasp"), bounds={"penetration": 2e-4}, slow=True),
    Case("barrett-pgs-sm", "barrett-grasp", "box-friction", "pgs-sm", 100, 5, tol=(1e-9, 1e-8), basis="blas",
         options={"model_options": {"joints": "schur", "coupling": "previous"}},
         sanity=("finite", "grasp"), bounds={"penetration": 2e-4}, slow=True),
]

BY_NAME = {c.name: c for c in CASES}


def make_simulator(case: Case):
    """The case's Simulator, as ``contactlab simulate`` builds it (the scene's controllers attached);
    the box gripper with ``grid`` as its paper reproduction does (scenarios/box_gripper.py)."""
    from contactlab.scenarios import make_scene
    from contactlab.sim import Simulator
    if case.grid:
        from contactlab.scenarios.box_gripper import make_simulator as gripper
        return gripper(case.model, case.method, contacts="grid", fallback=True, **case.params)
    scene = make_scene(case.scene, **case.params)
    return Simulator(scene, case.model, case.method, controllers=getattr(scene, "controllers", ()), **case.options)


def run_case(case: Case) -> dict:
    """Run ``case`` and return its arrays (:data:`ARRAYS` and ``names``)."""
    sim = make_simulator(case)
    frames = sorted({0, case.steps, *range(0, case.steps, case.stride)})
    pos, quat = [], []
    per_step = {k: [] for k in ("success", "rescued", "contacts", "max_penetration")}
    for k in range(case.steps + 1):
        if k in frames:
            pos.append(sim.data.position.copy())
            quat.append(sim.data.quaternion.copy())
        if k == case.steps:
            break
        rec = sim.step()
        for key in per_step:
            per_step[key].append(getattr(rec, key))
    return {"names": np.array(sim.model.names), "positions": np.array(pos), "quaternions": np.array(quat),
            "frame_steps": np.array(frames, dtype=np.int64),
            "success": np.array(per_step["success"], dtype=bool), "rescued": np.array(per_step["rescued"], dtype=bool),
            "contacts": np.array(per_step["contacts"], dtype=np.int64),
            "max_penetration": np.array(per_step["max_penetration"], dtype=np.float64)}

"""Golden trajectories (issue 37 item 1): every case of tests/golden/cases.py run afresh must match
its stored poses within the tolerance its path guarantees (0: the same bits), and the stored data
must itself be physically sound (a resting stack stays put, nothing falls through the ground or
out of the bin, the robots stand, the gripper holds), so the reference cannot be garbage.

A case beyond its tolerance means the engine's arithmetic changed: run
``PYTHONPATH=src python -m tests.golden.regenerate --check`` to see every case's difference, and
rewrite the data (without ``--check``) only with the difference explained in the commit message
(tests/golden/README.md).
"""
from __future__ import annotations

import numpy as np
import pytest

from contactlab.blas import blas_threads
from contactlab.mechanics.rotation import quat_to_matrix

from .cases import CASES, run_case
from .regenerate import describe, difference, load, within

STORED = {c.name: load(c) for c in CASES}

#: the 8 corners of a cube of side 1, centred at 0
_CORNERS = np.array([[x, y, z] for x in (-0.5, 0.5) for y in (-0.5, 0.5) for z in (-0.5, 0.5)])


def _boxes(case, data):
    """(indices of the boxes named box*, their side) of a stack or pile case."""
    idx = [i for i, n in enumerate(data["names"]) if str(n).startswith("box")]
    return idx, float(case.params.get("size", 0.2))


def _corners(data, idx, size):
    """World corners of the cubes ``idx`` in every frame: (frames, boxes, 8, 3), from the stored
    positions and quaternions alone (mechanics.rotation.quat_to_matrix, a closed form)."""
    R = quat_to_matrix(data["quaternions"][:, idx].reshape(-1, 4)).reshape(len(data["frame_steps"]), len(idx), 3, 3)
    return np.einsum("fbij,cj->fbci", R, size * _CORNERS) + data["positions"][:, idx, None, :]


def _finite(case, data):
    """Every pose finite, every quaternion of unit norm, frames as the case says."""
    assert np.all(np.isfinite(data["positions"])) and np.all(np.isfinite(data["quaternions"]))
    np.testing.assert_allclose(np.linalg.norm(data["quaternions"], axis=-1), 1.0, atol=1e-12)
    assert data["frame_steps"][0] == 0 and data["frame_steps"][-1] == case.steps
    assert data["success"].shape == (case.steps,)


def _boxes_above_ground(case, data):
    """No box corner below the ground (z = 0) by more than the case's penetration bound, in any frame."""
    idx, size = _boxes(case, data)
    assert _corners(data, idx, size)[..., 2].min() >= -case.bounds["penetration"]


def _stack_rests(case, data):
    """A resting stack stays put: no box moves by more than the drift bound or turns by more than
    the turn bound (quaternion components) from its start, in any frame."""
    idx, _ = _boxes(case, data)
    p, q = data["positions"][:, idx], data["quaternions"][:, idx]
    assert np.abs(p - p[0]).max() <= case.bounds["drift"]
    assert np.abs(q - q[0]).max() <= case.bounds["turn"]


def _in_bin(case, data):
    """Every corner of every box stays inside the bin's walls (scenarios/pile.py: inner half-width
    (per_side pitch + size) / 2) with a millimetre of slack."""
    from contactlab.scenarios import make_scene
    scene = make_scene(case.scene, **case.params)
    walls = next(b for b in scene.bodies if b.name == "bin").shapes
    half = min(abs(s.position[0]) - s.size[0] / 2 for s in walls if s.position[0] != 0)
    idx, size = _boxes(case, data)
    assert np.abs(_corners(data, idx, size)[..., :2]).max() <= half + 1e-3


def _pile_landed(case, data):
    """The pile fell and came to rest: every box ends lying on the ground (centre at size / 2 within
    0.1 mm, having dropped from above size), and none moved more than 0.1 mm over the last frames."""
    idx, size = _boxes(case, data)
    p = data["positions"][:, idx]
    assert np.all(p[0, :, 2] >= size - 1e-9)
    np.testing.assert_allclose(p[-1, :, 2], size / 2, atol=1e-4)
    assert np.abs(p[-1] - p[-2]).max() <= 1e-4


def _column(case, data):
    """loomis-balkcom's column (scenarios/column_collapse.py): b0..b4 stay put (the motionless bound),
    b5 flies right and stops at wall5, b6 flies left (2.5 m/s, 1 s), nothing sinks below its half height."""
    names = [str(n) for n in data["names"]]
    p = data["positions"]
    rest = [names.index(f"b{i}") for i in range(5)]
    b5, b6 = names.index("b5"), names.index("b6")
    assert np.abs(p[:, rest] - p[0, rest]).max() <= case.bounds["motionless"]
    assert 0.3 <= p[-1, b5, 0] - p[0, b5, 0] <= 0.7 + 1e-3        # wall5's face at 0.9, half width 0.2
    assert -2.6 <= p[-1, b6, 0] - p[0, b6, 0] <= -1.5
    assert p[:, 3:, 2].min() >= 0.1 - 1e-3


def _held(case, data):
    """The gripper holds its boxes: no body moves by more than 1 um (mu = 100, 50 N push)."""
    p = data["positions"]
    assert np.abs(p - p[0]).max() <= 1e-6


def _stands(case, data):
    """The robot stands: its base stays within 1 cm of its start height, every link above the ground,
    and the deepest contact overlap of every step within the penetration bound."""
    names = [str(n) for n in data["names"]]
    z = data["positions"][:, names.index(case.bounds["base"]), 2]
    assert np.abs(z - z[0]).max() <= 0.01
    assert data["positions"][:, 1:, 2].min() > 0.0
    assert data["max_penetration"].max() <= case.bounds["penetration"]


def _grasp(case, data):
    """The Barrett hand closes on the object and starts lifting: the palm (kinematic, the script's
    wrist) never goes down and ends higher, the object stays above the table within 1 cm of where it
    was, every step's deepest overlap within the bound (the contact margin is 3 mm)."""
    names = [str(n) for n in data["names"]]
    palm, obj = names.index("palm"), names.index("object")
    pz = data["positions"][:, palm, 2]
    assert np.all(np.diff(pz) >= -1e-12) and pz[-1] > pz[0] + 0.01
    po = data["positions"][:, obj]
    assert np.abs(po - po[0]).max() <= 0.01 and po[:, 2].min() > 0.0
    assert data["max_penetration"].max() <= case.bounds["penetration"]


SANITY = {"finite": _finite, "boxes_above_ground": _boxes_above_ground, "stack_rests": _stack_rests,
          "in_bin": _in_bin, "pile_landed": _pile_landed, "column": _column, "held": _held, "stands": _stands,
          "grasp": _grasp}


def _param(case):
    return pytest.param(case, id=case.name, marks=[pytest.mark.slow] if case.slow else [])


def test_cases_are_unique_and_stored():
    """Every case has its own name, its data file, and a tolerance of its kind."""
    assert len({c.name for c in CASES}) == len(CASES)
    for c in CASES:
        assert STORED[c.name] is not None, f"{c.name}: no data; run python -m tests.golden.regenerate"
        assert c.basis in ("bits", "blas") and (c.tol == (0.0, 0.0)) == (c.basis == "bits"), c.name
        assert set(c.sanity) <= set(SANITY), c.name


@pytest.mark.parametrize("case", [_param(c) for c in CASES])
def test_stored_data_is_physical(case):
    """The stored trajectory passes its physical checks (the checks read the stored arrays only)."""
    data = STORED[case.name]
    assert data is not None
    for name in case.sanity:
        SANITY[name](case, data)


@pytest.mark.parametrize("case", [_param(c) for c in CASES])
def test_trajectory_matches_golden(case):
    """A fresh run of the case is within its tolerance of the stored one (tolerance 0: same bits)."""
    stored = STORED[case.name]
    assert stored is not None
    with blas_threads(1):
        fresh = run_case(case)
    diff = difference(stored, fresh)
    assert within(case, diff), f"{case.name}: {describe(diff)}; tolerance {case.tol} ({case.basis}); " \
                               "see tests/golden/README.md"


def test_difference_sees_one_ulp():
    """The comparison is exact: one unit in the last place of one stored coordinate is 'not the same
    bits', and shows as that difference."""
    case = next(c for c in CASES if c.basis == "bits")
    data = STORED[case.name]
    other = {k: v.copy() for k, v in data.items()}
    x = other["positions"][-1, -1, 0]
    other["positions"][-1, -1, 0] = np.nextafter(x, np.inf)
    diff = difference(data, other)
    assert not diff["same_bits"] and diff["position"] == abs(np.nextafter(x, np.inf) - x) > 0
    assert not within(case, diff)
    assert difference(data, data)["same_bits"]


@pytest.mark.parametrize("case", [_param(c) for c in CASES if len(c.sanity) > 1])
def test_sanity_checks_reject_a_sunk_trajectory(case):
    """The physical checks can fail: the stored data with every moving body sunk 5 cm in the last
    frame fails at least one of its case's checks."""
    data = {k: v.copy() for k, v in STORED[case.name].items()}
    moved = np.any(data["positions"] != data["positions"][0], axis=(0, 2)) | \
        np.array([str(n) not in ("ground", "bin", "table", "wall5", "wall6") for n in data["names"]])
    data["positions"][-1, moved, 2] -= 0.05
    failed = []
    for name in case.sanity:
        try:
            SANITY[name](case, data)
        except AssertionError:
            failed.append(name)
    assert failed

"""The ``pile`` scenario's ``max_layers`` option (scenarios/pile.py): a wide pile of bounded height for the
scaling benchmark (benchmarks/bench_scaling.py, issue 37); the default scene stays the tower of 25 boxes a
layer, box for box."""
import numpy as np
import pytest

from contactlab.errors import ParamError
from contactlab.mechanics.rotation import quat_to_matrix
from contactlab.scenarios import pile


def _boxes(scene):
    boxes = [b for b in scene.bodies if b.name.startswith("box")]
    pos = np.array([b.position for b in boxes], dtype=float)
    rot = quat_to_matrix(np.array([b.orientation for b in boxes], dtype=float))
    return pos, rot


def _same(a, b):
    pa, ra = _boxes(a)
    pb, rb = _boxes(b)
    walls_a = [(s.position, s.size) for s in a.bodies[1].shapes]
    walls_b = [(s.position, s.size) for s in b.bodies[1].shapes]
    return pa.shape == pb.shape and np.array_equal(pa, pb) and np.array_equal(ra, rb) and walls_a == walls_b


@pytest.mark.parametrize("count", [1, 24, 60, 130])
def test_default_and_a_bound_the_tower_meets_leave_the_scene_as_it_was(count):
    default = pile.build(count=count, seed=2)
    layers = len(np.unique(_boxes(default)[0][:, 2]))
    assert layers == max(1, int(np.ceil(count / 25)))           # towers of 25 (5 x 5) a layer
    assert _same(pile.build(count=count, seed=2, max_layers=None), default)
    assert _same(pile.build(count=count, seed=2, max_layers=layers), default)
    assert _same(pile.build(count=count, seed=2, max_layers=layers + 7), default)


@pytest.mark.parametrize("count,max_layers", [(130, 2), (60, 1), (200, 3)])
def test_max_layers_widens_the_grid_and_bounds_the_height(count, max_layers):
    size, spacing = 0.2, 1.3
    scene = pile.build(count=count, seed=2, max_layers=max_layers, size=size, spacing=spacing)
    pos, rot = _boxes(scene)
    assert len(pos) == count
    zs = np.unique(pos[:, 2])
    assert len(zs) <= max_layers < int(np.ceil(count / 25))
    per_side = int(np.ceil(np.sqrt(count / max_layers)))          # the smallest square grid that fits
    assert (per_side - 1) ** 2 * max_layers < count <= per_side ** 2 * max_layers
    assert np.sum(pos[:, 2] == zs[0]) == min(count, per_side ** 2)  # a full bottom layer (or all boxes)
    # every turned box's bounding box lies inside its own grid cell (none starts overlapping another)
    half = np.abs(rot) @ np.full(3, size / 2)
    lo, hi = pos - half, pos + half
    for i in range(count):
        overlap = np.all((lo[i] < hi) & (lo < hi[i]), axis=1)
        overlap[i] = False
        assert not overlap.any()
    # and inside the bin: the walls' inner faces bound the grid
    inner = min(abs(s.position[0]) - s.size[0] / 2 for s in scene.bodies[1].shapes if s.position[0] != 0)
    assert np.all(np.abs(hi[:, :2]) < inner) and np.all(np.abs(lo[:, :2]) < inner)
    assert min(s.position[2] + s.size[2] / 2 for s in scene.bodies[1].shapes) > zs[-1] * 0.5


@pytest.mark.parametrize("bad", [0, -3])
def test_max_layers_must_be_positive(bad):
    with pytest.raises(ParamError, match="max_layers"):
        pile.build(count=30, max_layers=bad)

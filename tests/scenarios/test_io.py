"""scenarios/io.py: scenes from plain data refuse what the certified solvers cannot resolve."""
import pytest

from contactlab.errors import ModelError
from contactlab.mechanics import mass_ratio_limit
from contactlab.scenarios.io import scene_from_dict


def _two_boxes(light, heavy):
    box = lambda name, mass, z: {"name": name, "mass": mass, "position": [0, 0, z],
                                 "shapes": [{"kind": "box", "size": [0.2, 0.2, 0.2]}]}
    return {"name": "two", "bodies": [
        {"name": "ground", "kind": "fixed", "shapes": [{"kind": "halfspace", "normal": [0, 0, 1]}]},
        box("light", light, 0.1), box("heavy", heavy, 0.3)]}


def test_scene_from_dict_refuses_a_mass_ratio_beyond_the_limit_naming_both_bodies():
    with pytest.raises(ModelError, match=r"bodies 'heavy' \(1e\+06 kg\) and 'light' \(0\.001 kg\) have a mass "
                                         r"ratio of 1e\+09.*--max-mass-ratio"):
        scene_from_dict(_two_boxes(1e-3, 1e6))
    with mass_ratio_limit(None):
        assert [b.mass for b in scene_from_dict(_two_boxes(1e-3, 1e6)).bodies[1:]] == [1e-3, 1e6]
    assert [b.mass for b in scene_from_dict(_two_boxes(1.0, 1e5)).bodies[1:]] == [1.0, 1e5]
    # validate=False builds the data as written (the URDF scene loader checks the whole scene after)
    assert scene_from_dict(_two_boxes(1e-3, 1e6), validate=False).bodies[2].mass == 1e6

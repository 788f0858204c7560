"""Named scenes. ``make_scene(name, **params)``; ``scene_parameters(name)`` lists the parameters
with their defaults (``contactlab simulate SCENE --set KEY=VALUE``). A SCENE may also be a path to
a TOML or JSON scene file (:mod:`contactlab.scenarios.io`)."""
from __future__ import annotations

from . import incline, pendulum, pile, stack
from .registry import SCENES, URDF_PARAMETERS, make_scene, register_scene, scene_parameters  # noqa: F401

register_scene("incline", incline.build)
register_scene("stack", stack.build)
register_scene("pendulum-chain", pendulum.build)
register_scene("pile", pile.build)

__all__ = ["SCENES", "make_scene", "scene_parameters", "register_scene"]

# issue 5: the box-gripper of drumwright Sec. VII-A (its module also holds the paper's 12-point contact grid)
from . import box_gripper as _box_gripper  # noqa: E402

register_scene("box-gripper", _box_gripper.build)

# issue 12: grasping hands of arechavaleta §V (each scene carries its grasp script: controllers, summary, duration)
from . import barrett as _barrett  # noqa: E402

register_scene("barrett-grasp", _barrett.build)

# issue 13: legged locomotion of drumwright §VII-B (each scene carries its trot controller and a "locomotion" summary)
from . import quadruped as _quadruped  # noqa: E402

register_scene("quadruped", _quadruped.build)
from . import solo12 as _solo12  # noqa: E402

register_scene("solo12", _solo12.build)
register_scene("go1", _solo12.build_go1)

# issue 14: computation reuse of loomis-balkcom §IV (Figs. 1 and 4): motionless sets that change
from . import column_collapse as _column_collapse  # noqa: E402
from . import reuse_slowdown as _reuse_slowdown  # noqa: E402

register_scene("column-collapse", _column_collapse.build)
register_scene("reuse-slowdown", _reuse_slowdown.build)
from . import allegro as _allegro  # noqa: E402

register_scene("allegro-grasp", _allegro.build)
from . import hand5 as _hand5  # noqa: E402

register_scene("hand5-grasp", _hand5.build)

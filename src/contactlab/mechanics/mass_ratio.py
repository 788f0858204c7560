"""The largest mass ratio a scene may have (issue 40 item 5): the certified solvers' residual is
relative to the problem's scale, and across a large ratio of two dynamic bodies' masses the heavy
body's impulses set that scale, so the light body's velocities drown in it and a "certified" step
can fling it or lift the heavy body. Every loader of scenes
(:func:`~contactlab.mechanics.load_urdf`, scene files, ``contactlab simulate``) refuses a scene
above the limit with a :class:`~contactlab.errors.ModelError` naming both bodies;
:func:`mass_ratio_limit` raises or lifts it for a block of code."""
from __future__ import annotations

import contextlib
import contextvars
import math

from ..errors import ModelError

#: the largest ratio of two dynamic bodies' masses a scene may have (heaviest / lightest): the
#: largest every certified default (box friction by box-qp, Stewart-Trinkle by lemke or dantzig)
#: keeps a box at rest on a lighter box, measured in docs/robustness.md
MAX_MASS_RATIO = 1e5

_MASS_RATIO_LIMIT = contextvars.ContextVar("max_mass_ratio", default=MAX_MASS_RATIO)


@contextlib.contextmanager
def mass_ratio_limit(limit: float | None):
    """Within the block, :func:`check_mass_ratio` (scene files, URDF scenes, ``contactlab simulate``)
    refuses ratios above ``limit`` instead of :data:`MAX_MASS_RATIO` (None or inf: no limit; the
    CLI's ``--max-mass-ratio``)."""
    limit = math.inf if limit is None else float(limit)
    if not limit >= 1:
        raise ModelError(f"max_mass_ratio must be a number >= 1 (or inf), got {limit!r}")
    token = _MASS_RATIO_LIMIT.set(limit)
    try:
        yield
    finally:
        _MASS_RATIO_LIMIT.reset(token)


def check_mass_ratio(scene, limit: float | None = None) -> None:
    """Raise :class:`ModelError` naming the heaviest and the lightest dynamic body when their mass
    ratio is above ``limit`` (default: :data:`MAX_MASS_RATIO`, or the block's
    :func:`mass_ratio_limit`). Fixed and kinematic bodies have no mass in the problem and do not count."""
    limit = _MASS_RATIO_LIMIT.get() if limit is None else float(limit)
    dyn = [(float(b.mass), b.name) for b in scene.bodies if getattr(b, "kind", "dynamic") == "dynamic"]
    if len(dyn) < 2 or not math.isfinite(limit):
        return
    (lo, light), (hi, heavy) = min(dyn), max(dyn)
    if lo > 0 and hi / lo > limit:
        raise ModelError(
            f"bodies {heavy!r} ({hi:.6g} kg) and {light!r} ({lo:.6g} kg) have a mass ratio of {hi / lo:.3g}, above "
            f"{limit:.3g}: the certified solvers do not resolve contacts across such a ratio (the light body's "
            f"velocities drown in the heavy body's impulses); bring the masses closer, make the heavy body fixed "
            f"or kinematic, or raise the limit (contactlab simulate --max-mass-ratio R; in Python, load the scene "
            f"inside 'with contactlab.mechanics.mass_ratio_limit(R):')")

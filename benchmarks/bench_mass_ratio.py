"""The mass-ratio sweep behind contactlab.sim.faults.MAX_MASS_RATIO (docs/robustness.md): a box of
mass r kg resting on a 1 kg box resting on the ground (0.2 m cubes, mu 0.5, dt 10 ms), 40 steps, for
each certified default; prints certified steps, the largest speed and drift (a resting stack: both
should be ~0) and the deepest penetration.

    PYTHONPATH=src python benchmarks/bench_mass_ratio.py                      # box-qp, lemke, dantzig
    PYTHONPATH=src python benchmarks/bench_mass_ratio.py stewart-trinkle/lemke
"""
import sys

import numpy as np

from contactlab.mechanics.scene import Body, Scene, Shape
from contactlab.sim import Simulator
from contactlab.sim.faults import mass_ratio_limit

EXPONENTS = (4, 4.5, 5, 5.5, 6, 6.5, 7)


def scene(r: float) -> Scene:
    box = lambda: [Shape("box", size=(0.2, 0.2, 0.2))]
    return Scene(name="ratio", mu=0.5, bodies=[Body("ground", kind="fixed", shapes=[Shape("halfspace", normal=(0, 0, 1))]),
                                               Body("light", mass=1.0, position=(0, 0, 0.1), shapes=box()),
                                               Body("heavy", mass=r, position=(0, 0, 0.3), shapes=box())])


def main(combos):
    for spec in combos:
        model, method = (None, None) if spec == "default" else spec.split("/")
        for k in EXPONENTS:
            with mass_ratio_limit(float("inf")):
                sim = Simulator(scene(10.0 ** k), model, method)
            x0 = sim.data.position.copy()
            recs = [sim.step() for _ in range(40)]
            speed = max(float(np.abs(sim.data.linear_velocity).max()), 0.0)
            print(f"{sim.model_name}/{sim.method} ratio 1e{k:g}: certified {sum(r.success for r in recs)}/40, "
                  f"rescued {sum(r.rescued for r in recs)}, final max speed {speed:.2g} m/s, "
                  f"drift {np.abs(sim.data.position - x0).max():.2g} m, "
                  f"penetration {max(r.max_penetration for r in recs):.2g} m, "
                  f"implausible steps {sum(not r.plausible for r in recs)}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:] or ["default", "stewart-trinkle/lemke", "stewart-trinkle/dantzig"])

"""The former home of box friction's compiled step, kept so that its names still import from here:
the kernels are in :mod:`contactlab.sim.box_kernels`, the stages that call them in
:mod:`contactlab.sim.box_stages` (this module imports both; neither imports it)."""
from .box_kernels import (DECLINED, SOLVED, TRIVIAL, box_friction_fixed_step, box_friction_step,  # noqa: F401
                          results, state_before, system_terms, warm_start_stop)
from .box_stages import BoxFrictionStep, CompiledRowStages, free_bodies_only, matrix_free_solution  # noqa: F401

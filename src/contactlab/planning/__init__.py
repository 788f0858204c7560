"""Stable disassembly planning with statics (LP) and dynamics (LCP, with reuse) stability tests
(loomis-balkcom §V). ``plan(get_structure("column-50"), test="reuse")``."""
from .planner import PlanResult, plan
from .statics import ACC_TOL, NodeResult, PlanningError, StaticsModel, lp_feasible, make_test
from .blocks import Structure, make_structure
from .structures import column, get_structure, load_structure, pyramid, random_structure

__all__ = ["ACC_TOL", "NodeResult", "PlanningError", "PlanResult", "StaticsModel", "Structure", "column", "get_structure",
           "load_structure", "lp_feasible", "make_structure", "make_test", "plan", "pyramid", "random_structure"]

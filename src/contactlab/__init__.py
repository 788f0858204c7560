"""contactlab: multi-rigid-body contact dynamics on certified complementarity solvers."""
from .errors import ContactlabError, ModelError, ParamError, ProblemError, SimulationError, SolverNotFound
from .problems import LCP, BoxedLCP, FactoredLCP, MixedLCP, Problem
from .problems.io import load, save
from .problems.ucp import UCP
from .solution import Solution, Status
from .solvers import available_solvers, register, solve

__version__ = "0.1.0"

__all__ = ["LCP", "BoxedLCP", "MixedLCP", "FactoredLCP", "Problem", "Solution", "Status", "solve",
           "available_solvers", "register", "load", "save", "ContactlabError", "ProblemError",
           "ParamError", "SolverNotFound", "ModelError"]
__all__ += ["UCP", "SimulationError"]
from .problems.friction_contact import FrictionContact, GlobalFrictionContact  # noqa: E402
__all__ += ["FrictionContact", "GlobalFrictionContact"]

"""Problem types, validation, the one residual definition and file I/O."""
from .base import Problem
from .factored import FactoredLCP
from .lcp import LCP, BoxedLCP
from .mixed import MixedLCP
from .residual import Residuals, box_residuals, lcp_residuals
from .structure import ProblemStructure

__all__ = ["Problem", "ProblemStructure", "LCP", "BoxedLCP", "MixedLCP", "FactoredLCP", "Residuals",
           "lcp_residuals", "box_residuals"]

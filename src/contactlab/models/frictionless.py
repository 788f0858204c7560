"""Frictionless contact: Baraff's acceleration-level LCP (loomis-balkcom eq. 4).

A = N M^-1 N', b = N M^-1 F with F the external and velocity-dependent forces. In a time step
the relative normal velocity after the step must not be negative, which adds (N v + n_bias)/h
to b (zero for resting contacts, so A and b are exactly eq. 4 there). Variables are forces;
impulses are h times them. Joints are free variables of a MixedLCP (Schur complement), joint
limits and motors are rows as in ``stewart-trinkle``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..problems import ProblemStructure
from .common import StepResult, contact_modes, mixed_problem, mixed_recover

NAME = "frictionless"
DEFAULT_METHOD = "lemke"
DESCRIPTION = "acceleration-level LCP A = N M^-1 N', b = N M^-1 F (loomis-balkcom eq. 4)"


@dataclass(frozen=True)
class Options:
    """cfm: added to the normal rows' diagonal (in force units), on top of settings.cfm."""
    cfm: float = 0.0


def _parts(sys):
    nc, nl, nm, ndof = sys.nc, sys.nl, sys.nm, sys.ndof
    H = sp.vstack([sys.L, sys.N, sys.A, sp.csr_matrix((nm, ndof))], format="csr")
    o_u, o_s = nl + nc, nl + nc + nm
    ny = o_s + nm
    K = sp.csr_matrix((np.concatenate([np.ones(nm), -np.ones(nm)]),
                       (np.concatenate([o_u + np.arange(nm), o_s + np.arange(nm)]),
                        np.concatenate([o_s + np.arange(nm), o_u + np.arange(nm)]))), shape=(ny, ny))
    c = np.concatenate([sys.l_bias, sys.n_bias, -sys.a_target, 2.0 * sys.a_max])
    v0 = sys.v_free()
    if nm:
        v0 = v0 - sys.Minv @ (sys.A.T @ sys.a_max)
    return H, K, c, v0, (nl, o_u, o_s)


def build(sys, options: Options | None = None):
    options = options or Options()
    H, K, c, v0, (o_cn, o_u, o_s) = _parts(sys)
    cfm = sys.cfm + options.cfm
    if cfm and sys.nc:
        idx = o_cn + np.arange(sys.nc)
        K = K + sp.csr_matrix((np.full(sys.nc, cfm), (idx, idx)), shape=K.shape)
    # the (u, s) block is in impulse units; scale=h divides constants so all variables are forces
    rows = {"limit": slice(0, o_cn), "normal": slice(o_cn, o_u), "motor": slice(o_u, o_s),
            "motor_slack": slice(o_s, o_s + sys.nm)}
    return mixed_problem(sys, H, K, c, v0, scale=sys.h, structure=ProblemStructure(row_groups=rows))


def recover(sys, problem, solution, options: Options | None = None) -> StepResult:
    H, K, c, v0, (o_cn, o_u, o_s) = _parts(sys)
    v_next, x, y = mixed_recover(sys, problem, solution, H, v0, scale=sys.h)
    normal = y[o_cn:o_u]
    return StepResult(v_next=v_next, normal=normal, tangent=np.zeros((sys.nc, 2)), joint=x, limit=y[:o_cn],
                      motor=y[o_u:o_s] - sys.a_max, modes=contact_modes(sys, v_next, normal),
                      info={"forces": y / sys.h})

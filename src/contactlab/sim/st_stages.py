"""The Stewart-Trinkle model's compiled stages on jointed scenes (:class:`CompiledSTStages`;
:mod:`contactlab.sim.st_kernels` for the call).

Planned where a contact model declares ``COMPILED_STEP = "stewart-trinkle-mixed"``
(models/stewart_trinkle.py) and the method's options are Lemke's (``lemke``, given at most ``tol``,
``max_iterations`` and ``certify``), on a compiled simulator without reuse, islands or a fixed
budget, on a scene with joints (a hand, an arm: its problem is a MixedLCP, arechavaleta eq. 13-15).
The step's ConstraintSystem is built as the general stages build it (``build_system``, the
``Simulator.last_system`` of the step); the model's build, solve(), its certification and the
model's recovery are one compiled call (:func:`~contactlab.sim.st_kernels.st_mixed_step`); the
integration, position corrections and records are the general stages'. The step's problem is
assembled from its system only when read (``Simulator.last_problem``).

A step the call declines (an A that needs the QR branch of the Schur complement, a trivial
problem, an answer that Lemke's first reduced run does not certify) is taken by the general stages
on the same system: build, solve() with Lemke's retries and the fallbacks, so its status is theirs.
"""
from __future__ import annotations

import time

import numpy as np

from ..kernels.tolerances import CERTIFY
from ..mechanics.model import KIND_KINEMATIC
from ..mechanics.system import build_system
from ..models.common import StepResult, contact_modes
from ..solution import Solution, Status
from ..solvers.lemke import LemkeOptions
from .stages import Stages, StepWork, energies
from . import st_kernels as SK

#: what a model's ``COMPILED_STEP`` names for :class:`CompiledSTStages` (:mod:`contactlab.models.stewart_trinkle`)
COMPILED_FORM = "stewart-trinkle-mixed"
#: the solver options the call honours (any other: the general stages)
_OPTIONS = frozenset({"tol", "max_iterations", "certify"})


def _csr(H) -> tuple:
    """(indptr, indices, data) of a CSR matrix as the call takes them (int64 indices)."""
    return (H.indptr.astype(np.int64, copy=False), H.indices.astype(np.int64, copy=False),
            H.data.astype(np.float64, copy=False))


class CompiledSTStages(Stages):
    """The general stages with the model's build, solve, certificate and recovery in one compiled
    call (module docstring)."""

    compiled = True

    @classmethod
    def plan(cls, sim, state):
        model = sim.contact_model
        if not (sim.compiled and getattr(model, "COMPILED_STEP", None) == COMPILED_FORM and sim.reuse is None
                and not sim.islands and sim.iterations is None and sim.model.joints
                and not set(sim.solver_options) - _OPTIONS):
            return None
        stages = cls(sim, state)
        spec = stages.spec
        if spec is None or spec.options is not LemkeOptions:
            return None
        try:
            opts = spec.make_options({k: v for k, v in sim.solver_options.items() if k != "certify"})
        except Exception:       # a bad option: the general stages raise it at solve()
            return None
        stages.tol = float(opts.tol)
        certify = float(sim.solver_options.get("certify", CERTIFY))
        stages.threshold = stages.tol if stages.tol > certify else certify     # solve()'s max(certify, tol)
        stages.max_pivots = -1 if opts.max_iterations is None else int(opts.max_iterations)
        stages.pivot_tol, stages.restarts = float(opts.pivot_tol), int(opts.restarts)
        m = sim.model      # the kinematic bodies' blocks: eliminated from the call's problem (st_mixed_step)
        stages.kin = (m.dof_start[(m.kind == KIND_KINEMATIC) & (m.dof_start >= 0)] // 6).astype(np.int64)
        return stages

    # -- build: the step's system; the problem only where the call declines -------------------------
    def build(self, w: StepWork) -> None:
        sim = self.sim
        w.e0 = sum(energies(sim.model, sim.data))
        w.sys = sys = build_system(sim.model, sim.data, w.contacts, w.h)
        Wb = sys.W_blocks
        # the rows as build_system makes them (canonical CSR, body blocks covering every dof), as
        # models/common.py _block_delassus requires
        if Wb is None or 6 * Wb.shape[0] != sys.ndof or sys.nj == 0 or not (
                sys.J.format == "csr" and sys.J.has_canonical_format and sys.N.format == "csr"):
            return self.general(w)
        w.compiled = True

    def general(self, w: StepWork) -> None:
        """The general stages' warm start and problem on the step's system (a declined step)."""
        w.compiled = False
        w.warm = self.warm(w)
        self.assemble(w)

    # -- solve: the model's build, Lemke, solve()'s certificate, the recovery ----------------------
    def solve(self, w: StepWork) -> None:
        if not w.compiled:
            return super().solve(w)
        sys = w.sys
        sim = self.sim
        w.t0 = time.perf_counter()
        Jp, Ji, Jd = _csr(sys.J)
        Lp, Li, Ld = _csr(sys.L)
        Np, Ni, Nd = _csr(sys.N)
        Sp, Si, Sd = _csr(sys.S)
        Ap, Ai, Ad = _csr(sys.A)
        Mp, Mi, Md = _csr(sys.Minv)
        f = np.float64
        out = SK.st_mixed_step(
            Jp, Ji, Jd, np.ascontiguousarray(sys.j_rhs, dtype=f), Lp, Li, Ld, np.ascontiguousarray(sys.l_bias, dtype=f),
            Np, Ni, Nd, np.ascontiguousarray(sys.n_bias, dtype=f), Sp, Si, Sd, sys.T.data.astype(f, copy=False),
            Ap, Ai, Ad, np.ascontiguousarray(sys.a_target, dtype=f), np.ascontiguousarray(sys.a_max, dtype=f),
            np.ascontiguousarray(sys.mu, dtype=f), int(sys.d), float(sys.cfm + sim.model_options.cfm), sys.W_blocks,
            Mp, Mi, Md, sys.v_free(), int(sys.ndof), self.max_pivots, self.pivot_tol, self.restarts, self.tol,
            self.threshold, self.kin)
        ok, pivots, n, scale, z, x, wv, c, v_next, tangent = out
        if not ok:     # the general stages take the step on the same system
            self.general(w)
            return super().solve(w)
        sol = Solution(z=z, w=wv, status=Status.SOLVED, iterations=int(pivots), pivots=int(pivots), method=sim.method,
                       info={"covering": "ones", "basis": "reduced", "scale": float(scale), "reduced_n": int(n),
                             "compiled_step": True},
                       x=x)
        sol.residual, sol.complementarity, sol.infeasibility = c[0], c[1], c[2]
        sol.relative_residual = max(c[3], c[5])
        sol.time_s = time.perf_counter() - w.t0
        w.sol, w.n = sol, int(n)
        w.call = (v_next, tangent)
        w.problem, w.built, w.unbuilt = None, None, True     # the problem from the system when read

    # -- certify: the call certified its answer as solve() does -----------------------------------
    def certify(self, w: StepWork) -> None:
        if not w.compiled:
            return super().certify(w)
        w.primary_ok, w.rescued = True, False
        w.t_solve = w.sol.time_s
        w.t_solved = time.perf_counter()

    # -- recover: models/stewart_trinkle.py recover from the call's v+ and answer -------------------
    def recover(self, w: StepWork):
        if not w.compiled:
            return super().recover(w)
        sys, sol = w.sys, w.sol
        v_next, tangent = w.call
        nl, nc, d, nm = sys.nl, sys.nc, sys.d, sys.nm
        o_lam = nl + nc + nc * d
        o_u = o_lam + nc
        y = sol.z
        normal = y[nl:nl + nc]
        return StepResult(v_next=v_next, normal=normal, tangent=tangent, joint=sol.x, limit=y[:nl],
                          motor=y[o_u:o_u + nm] - sys.a_max, modes=contact_modes(sys, v_next, normal),
                          info={"lambda": y[o_lam:o_u]})


#: the Stewart-Trinkle model's compiled stages (:func:`contactlab.sim.simulator.plan_stages`)
ST_STAGES = (CompiledSTStages,)

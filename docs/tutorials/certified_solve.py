"""A certified solve: an LCP, three methods, the certificate checked by hand, and an infeasible problem.

Every answer of ``contactlab.solve`` carries a residual that ``solve()`` computes itself from z
(never reported by the algorithm): SOLVED means that residual is below the tolerance. A problem
without a solution ends NO_SOLUTION with a certificate (Farkas' lemma), never with a wrong z.
"""
import numpy as np

import contactlab as cl

rng = np.random.default_rng(0)
A = rng.standard_normal((8, 8))
M = A @ A.T + 0.1 * np.eye(8)              # symmetric positive definite: exactly one solution
q = rng.standard_normal(8)
problem = cl.LCP(M, q)

for method in ("lemke", "dantzig", "pgs-sm"):
    sol = cl.solve(problem, method=method)
    print(f"{method:8s} {sol.status.name:8s} pivots {sol.pivots:3d} iterations {sol.iterations:4d} "
          f"residual {sol.residual:.1e}")

# the certificate, checked independently: z >= 0, w = Mz + q >= 0, z'w = 0
sol = cl.solve(problem, method="lemke")
z = sol.z
w = M @ z + q
print("min z", z.min().round(12), " min w", w.min().round(12), " z.w", abs(z @ w).round(12))
print(f"||min(z, w)||_inf = {np.abs(np.minimum(z, w)).max():.1e} by hand, {sol.residual:.1e} reported by solve() (both at rounding level)")

# an LCP without a solution: w = -z - 1 >= 0 is impossible for z >= 0
bad = cl.solve(cl.LCP(-np.eye(2), -np.ones(2)), method="lemke")
print("infeasible:", bad.status.name, "success =", bad.success, "certificate:", "certificate" in bad.info)

# warm start: Cottle-Dantzig from a sub-problem's solution (loomis-balkcom Theorem 1)
sub = cl.solve(cl.LCP(M[:4, :4], q[:4]), method="dantzig")
warm = cl.solve(problem, method="dantzig", warm_start=(list(range(4)), sub.z))
cold = cl.solve(problem, method="dantzig")
print(f"dantzig pivots: cold {cold.pivots}, warm-started from the 4-row sub-problem {warm.pivots}; "
      f"same z: {np.allclose(warm.z, cold.z)}")

"""The pivoting solvers without peers: time and pivots vs n, Murty's 2^n example, and loomis-balkcom
computation reuse (Theorem 1, Table I). Peer comparisons live in benchmarks/bench_pivoting.py."""
from __future__ import annotations

import time

import numpy as np

from . import markdown_table

TITLE = "Pivoting solvers: scaling, Murty's example, computation reuse (loomis-balkcom)"
ORDER = 10

# loomis-balkcom Table I: total pivots, frictionless examples (structure, blocks) -> (LpSolve, Dantzig, reuse)
PAPER_TABLE_I = {
    ("Random", 10): (102, 127, 13),
    ("Column", 50): (2352, 2352, 96),
    ("Column", 80): (6162, 6162, 156),
    ("Random", 84): (11975, 15136, 420),
    ("Pyramid", 91): (8190, 8190, 180),
}


def _timed(fn, reps: int):
    best, out = np.inf, None
    for _ in range(reps):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def _attempt(fn, reps):
    """(time, pivots, major cycles, residual, status); an exception is reported as the status, not raised."""
    try:
        t, s = _timed(fn, reps)
        return t, s.pivots, s.iterations, s.residual, s.status.name
    except Exception as exc:  # a solver bug must show in the report, not end it
        return np.nan, -1, -1, np.inf, f"raised {type(exc).__name__}"


def scaling(ctx):
    """Time and pivots vs n: lemke and dantzig on random SPD LCPs; ppm, dantzig, lemke on contact LCPs
    of box stacks with a 5 x 5 contact grid per face pair (n ~ 4.2 m)."""
    import contactlab as cl
    from ..problems import generators as gen
    spd_sizes = [25, 50, 100] if ctx.quick else [25, 50, 100, 200, 400]
    box_sizes = [2, 4, 8] if ctx.quick else [2, 4, 8, 16]
    reps = 2 if ctx.quick else 3
    cl.solve(gen.random_spd(6, ctx.rng(0)), method="lemke")        # numba compilation outside the timings
    cl.solve(gen.random_spd(6, ctx.rng(0)), method="dantzig")
    cl.solve(gen.box_stack_factored(1, ctx.rng(0)), method="ppm")
    rows = []
    for n in spd_sizes:
        P = gen.random_spd(n, ctx.rng(100 + n), cond=1e3)
        for method in ("lemke", "dantzig"):
            rows.append(("spd", n, None, method, *_attempt(lambda: cl.solve(P, method=method), reps)))
        ctx.advance(f"spd n={n}")
    for b in box_sizes:
        F = gen.box_stack_factored(b, ctx.rng(200 + b), contacts_per_face=25)
        L = F.to_lcp()
        for method, prob in (("ppm", F), ("dantzig", L), ("lemke", L)):
            rows.append(("box-stack-25", F.n, F.m, method,
                         *_attempt(lambda: cl.solve(prob, method=method), reps)))
        ctx.advance(f"box stack {b}")
    return rows


def murty_counts(ctx):
    import contactlab as cl
    from ..problems.generators import murty
    out = []
    for n in (range(4, 11) if ctx.quick else range(4, 15)):
        s = cl.solve(murty(n), method="lemke", max_pivots=2 ** (n + 1) + 100)
        out.append((n, s.pivots, s.status.name, s.residual))
    ctx.advance("murty")
    return out


def reuse_sequence(structure):
    """Solve the contact LCPs of the sub-assemblies of the first k blocks (k = 1..B, build order), cold and
    warm-started from the previous sub-assembly's solution (loomis-balkcom Theorem 1).

    With blocks in build order (each rests on earlier blocks or the ground) the contacts of the first k
    blocks are the leading rows of the full contact list, so each LCP is a principal sub-problem of the
    next one (loomis-balkcom eq. 8).
    """
    import contactlab as cl
    from ..problems.generators import box_contacts, box_structure_factored
    full = box_structure_factored(structure).to_lcp()
    uppers = np.array([u for _, u, _ in box_contacts(structure)])
    tot = {"cold_piv": 0, "warm_piv": 0, "cold_maj": 0, "warm_maj": 0, "cold_s": 0.0, "warm_s": 0.0,
           "bound_ok": True, "failures": 0, "solves": 0, "n": 0}
    prev = None
    for k in range(1, structure.n_boxes + 1):
        nk = int(np.sum(uppers < k))          # contacts of the first k blocks = leading rows (eq. 8)
        L = cl.LCP(full.M[:nk, :nk], full.q[:nk])
        t0 = time.perf_counter()
        cold = cl.solve(L, method="dantzig")
        t1 = time.perf_counter()
        if prev is not None and prev.success and prev.z.size <= L.n:
            ws = (np.arange(prev.z.size), prev.z)
            warm = cl.solve(L, method="dantzig", warm_start=ws)
            bound = L.n - prev.z.size
        else:
            warm = cl.solve(L, method="dantzig")
            bound = L.n
        t2 = time.perf_counter()
        tot["cold_piv"] += cold.pivots
        tot["warm_piv"] += warm.pivots
        tot["cold_maj"] += cold.iterations
        tot["warm_maj"] += warm.iterations
        tot["cold_s"] += t1 - t0
        tot["warm_s"] += t2 - t1
        tot["bound_ok"] &= warm.iterations <= bound
        tot["failures"] += (not cold.success) + (not warm.success)
        tot["solves"] += 1
        tot["n"] = L.n
        prev = warm if warm.success else cold
    return tot


def reuse_table(ctx):
    from ..problems.generators import box_column, box_pyramid, random_box_stack
    if ctx.quick:
        cases = [("Random", 10, random_box_stack(10, ctx.rng(10), dim=2, new_tower=0.3)),
                 ("Column", 50, box_column(50)), ("Pyramid", 28, box_pyramid(7))]
    else:
        cases = [("Random", 10, random_box_stack(10, ctx.rng(10), dim=2, new_tower=0.3)),
                 ("Column", 50, box_column(50)), ("Column", 80, box_column(80)),
                 ("Random", 84, random_box_stack(84, ctx.rng(84), dim=2, new_tower=0.1)),
                 ("Pyramid", 91, box_pyramid(13))]
    rows = []
    for name, blocks, structure in cases:
        t = reuse_sequence(structure)
        paper = PAPER_TABLE_I.get((name, blocks))
        rows.append([name, blocks, t["n"], t["solves"], t["cold_maj"], t["cold_piv"], t["warm_maj"], t["warm_piv"],
                     f"{t['cold_s'] * 1e3:.0f} / {t['warm_s'] * 1e3:.0f}", "yes" if t["bound_ok"] else "NO",
                     t["failures"], f"{paper[1]} / {paper[2]}" if paper else "-"])
        ctx.advance(f"reuse {name} {blocks}")
    return rows


def figures(ctx, rows):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullFormatter
    colors = {"lemke": "tab:blue", "dantzig": "tab:orange", "ppm": "tab:green"}
    links = []
    for what, col, ylabel in (("time", 4, "time per solve (s)"), ("pivots", 5, "pivots")):
        fig, axes = plt.subplots(1, 2, figsize=(10, 4))
        for ax, fam in zip(axes, ("spd", "box-stack-25")):
            for method in ("lemke", "dantzig", "ppm"):
                pts = [(r[1], r[col]) for r in rows if r[0] == fam and r[3] == method and r[8] == "SOLVED"]
                if pts:
                    x, y = zip(*pts)
                    ax.loglog(x, y, "o-", label=method, color=colors[method])
            ax.set_xlabel("n (complementarity variables)")
            ax.set_ylabel(ylabel)
            ax.set_title("random SPD (cond 1e3)" if fam == "spd" else "box stacks, 25 contacts per face (n ~ 4.2 m)")
            ax.xaxis.set_minor_formatter(NullFormatter())
            ax.grid(True, which="both", alpha=0.3)
            ax.legend()
        links.append(ctx.figure(f"pivoting_{what}_vs_n", fig))
    return links


def run(ctx) -> str:
    rows = scaling(ctx)
    links = figures(ctx, rows)
    murty = murty_counts(ctx)
    reuse = reuse_table(ctx)
    scale_table = markdown_table(
        ["family", "n", "m", "method", "time ms (best of reps)", "pivots", "major cycles", "residual", "status"],
        [[f, n, m if m is not None else "-", meth, f"{t * 1e3:.3g}", p, it, f"{res:.1e}", st]
         for f, n, m, meth, t, p, it, res, st in rows])
    murty_table = markdown_table(["n", "lemke pivots", "2^n", "status", "residual"],
                                 [[n, p, 2 ** n, st, f"{r:.1e}"] for n, p, st, r in murty])
    murty_exact = all(p == 2 ** n for n, p, _, _ in murty)
    reuse_md = markdown_table(
        ["structure", "blocks", "contacts (full)", "LCPs solved", "cold major cycles", "cold pivots",
         "warm major cycles", "warm pivots", "cold / warm ms", "Theorem 1 bound held", "failed solves",
         "paper Dantzig / reuse pivots"], reuse)
    return "\n".join([
        "Pivoting solvers on problem families that need no peer library (peer comparisons: "
        "`docs/benchmarks-pivoting.md`, made by `benchmarks/bench_pivoting.py`). Times are best-of-repeats "
        "through `contactlab.solve` (certification included) on a machine that may be shared; pivots are "
        "deterministic.",
        "",
        "### Time and pivots vs n",
        "",
        scale_table, "", *links, "",
        "### Murty's example (Lemke's exponential case)",
        "",
        "M upper triangular with 1 on the diagonal and 2 above, q_i = -(2^i + ... + 2^n). Lemke's method with "
        "covering vector e visits every one of the 2^n complementary cones on the way (Murty 1978); the count "
        "below includes the first pivot (z0 entering), so 2^n is the expected number "
        f"({'matched at every n' if murty_exact else 'NOT matched at every n'}).",
        "",
        murty_table, "",
        "### Computation reuse (loomis-balkcom Theorem 1 and Table I)",
        "",
        "Planar blocks (2 contacts per touching face pair, velocity-level frictionless contact LCP at rest under "
        "gravity). For each structure, the sub-assemblies of its first k blocks (k = 1..B, in build order) are "
        "solved with Cottle-Dantzig cold and warm-started from the previous sub-assembly's solution "
        "(`warm_start=(indices, z_sub)`); totals over the sequence. Theorem 1 bounds the warm major cycles of "
        "each solve by the number of new contacts (n - k); 'bound held' checks it for every solve. The "
        "paper's counts (last column) come from a depth-first disassembly planner with static friction, not "
        "this exact sequence, and its random structures are not ours: compare orders of magnitude and the "
        "cold/warm ratio, not exact numbers.",
        "",
        reuse_md,
    ])

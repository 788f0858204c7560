"""The pivoting solvers without peers: time and pivots vs n, Murty's 2^n example. Peer comparisons
live in benchmarks/bench_pivoting.py; loomis-balkcom computation reuse (Theorem 1, Table I) in
sec_reuse.py."""
from __future__ import annotations

import numpy as np

from . import Failed, markdown_table

TITLE = "Pivoting solvers: scaling, Murty's example"
ORDER = 10

def _attempt(ctx, fn, reps):
    """(time, pivots, major cycles, certified residual, status) of ``fn`` warmed up, then best of
    ``reps`` (ctx.best_time). A crash or an uncertified answer gives a :class:`Failed` time: it must
    never read as a fast row."""
    try:
        t, s = ctx.best_time(fn, repeat=reps)
    except Exception as exc:  # a solver bug must show in the report, not end it
        return ctx.failed(f"raised {type(exc).__name__}: {exc}"), "-", "-", np.inf, "RAISED"
    if not s.success:
        t = ctx.failed(f"{s.status.name}, certified residual {s.relative_residual:.1e}")
    return t, s.pivots, s.iterations, s.relative_residual, s.status.name


def scaling(ctx):
    """Time and pivots vs n: lemke and dantzig on random SPD LCPs; ppm, dantzig, lemke on contact LCPs
    of box stacks with a 5 x 5 contact grid per face pair (n ~ 4.2 m)."""
    import contactlab as cl
    from ..problems import generators as gen
    spd_sizes = [25, 50, 100] if ctx.quick else [25, 50, 100, 200, 400]
    box_sizes = [2, 4, 8] if ctx.quick else [2, 4, 8, 16]
    reps = 2 if ctx.quick else 3
    rows = []
    for n in spd_sizes:
        P = gen.random_spd(n, ctx.rng(100 + n), cond=1e3)
        for method in ("lemke", "dantzig"):
            rows.append(("spd", n, None, method, *_attempt(ctx, lambda: cl.solve(P, method=method), reps)))
        ctx.advance(f"spd n={n}")
    for b in box_sizes:
        F = gen.box_stack_factored(b, ctx.rng(200 + b), contacts_per_face=25)
        L = F.to_lcp()
        for method, prob in (("ppm", F), ("dantzig", L), ("lemke", L)):
            rows.append(("box-stack-25", F.n, F.m, method,
                         *_attempt(ctx, lambda: cl.solve(prob, method=method), reps)))
        ctx.advance(f"box stack {b}")
    return rows


def murty_counts(ctx):
    import contactlab as cl
    from ..problems.generators import murty
    out = []
    for n in (range(4, 11) if ctx.quick else range(4, 15)):
        s = cl.solve(murty(n), method="lemke", max_iterations=2 ** (n + 1) + 100)   # pivots counted, not timed
        out.append((n, s.pivots, s.status.name, s.relative_residual))
    ctx.advance("murty")
    return out


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
    scale_table = markdown_table(
        ["family", "n", "m", "method", "time ms (best of reps)", "pivots", "major cycles", "certified residual",
         "status"],
        [[f, n, m if m is not None else "-", meth, t if isinstance(t, Failed) else f"{t * 1e3:.3g}", p, it,
          f"{res:.1e}", st]
         for f, n, m, meth, t, p, it, res, st in rows])
    # Murty's count is a theorem: a different count or an uncertified answer is a failure of the kernel
    murty_table = markdown_table(["n", "lemke pivots", "2^n", "status", "certified residual"],
                                 [[n, p if p == 2 ** n else ctx.failed(f"{p} pivots, theory says {2 ** n}"), 2 ** n,
                                   st if st == "SOLVED" else ctx.failed(st), f"{r:.1e}"] for n, p, st, r in murty])
    murty_exact = all(p == 2 ** n for n, p, _, _ in murty)
    return "\n".join([
        "Pivoting solvers on problem families that need no peer library (peer comparisons: "
        "`docs/benchmarks-pivoting.md`, made by `benchmarks/bench_pivoting.py`). Times are best-of-repeats "
        "through `contactlab.solve` (certification included) after one untimed warm-up call per cell "
        "(numba compilation and cache loading are not timed), on a machine that may be shared; pivots are "
        "deterministic. A crash or an answer that `solve()` does not certify is printed as **FAILED**, never "
        "as a time. No number in this section is compared with a paper's timing: the only reference is "
        "Murty's theorem below (an exact pivot count), and the peer comparisons live in the benchmark document.",
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
        "Computation reuse (loomis-balkcom Theorem 1, Table I) has its own section: stable disassembly "
        "planning and motionless sets in simulation.",
    ])

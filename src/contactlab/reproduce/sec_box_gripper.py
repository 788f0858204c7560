"""drumwright Sec. VII-A / Table I: the box-gripper under Stewart-Trinkle, no-slip, Trinkle-Pang, viscous."""
from __future__ import annotations

from . import markdown_table

TITLE = "Box gripper: no-slip vs Stewart-Trinkle (drumwright Table I)"
ORDER = 50


def run(ctx) -> str:
    from ..scenarios.box_gripper import DEFAULT_CONFIGS, PAPER_LCP_VARIABLES, PAPER_TABLE_I, table_one
    from ..solvers import available_solvers
    configs = list(DEFAULT_CONFIGS)
    if "qp" in available_solvers():
        configs.insert(2, ("no-slip", "qp"))
    if ctx.quick:
        configs, steps, trials = [c for c in configs if c[0] in ("stewart-trinkle", "no-slip")], (10,), 1
    else:
        steps, trials = (10, 100), 3
    rows = table_one(configs, steps=steps, trials=trials, progress=ctx.advance)
    table = []
    for r in rows:
        paper = PAPER_TABLE_I.get((r["model"], r["method"].split("(")[0]))
        table.append([r["model"], r["method"], r["steps"],
                      f"{r['lcp_variables']:.0f} ({PAPER_LCP_VARIABLES.get(r['model'], '-')})",
                      f"{r['total_s_mean']:.3f} ± {r['total_s_std']:.3f}", f"{1e3 * r['per_step_s']:.1f}",
                      f"{1e3 * r['model_per_step_s']:.2f}", f"{1e3 * r['solve_per_step_s']:.2f}",
                      f"{'held' if r['held'] else 'dropped'} ({r['held_trials']}/{r['trials']})", f"{r['drift_m']:.1e}",
                      ", ".join(f"{k} {v}" for k, v in sorted(r["statuses"].items())),
                      f"{paper[0]:.2f} ± {paper[1]:.2f}" if paper and r["steps"] == 10 else ""])
    by = {(r["model"], r["method"], r["steps"]): r for r in rows}
    st, ppm = by.get(("stewart-trinkle", "lemke", 10)), by.get(("no-slip", "ppm", 10))
    dz = by.get(("no-slip", "qp", 10)) or by.get(("no-slip", "dantzig", 10))
    ratios = ""
    if st and ppm and dz:
        other = f"no-slip+{dz['method']}"
        ratios = (f"Total-time ratios at 10 steps (Stewart-Trinkle with the default Lemke): "
                  f"Stewart-Trinkle / no-slip+PPM = "
                  f"{st['total_s_mean'] / ppm['total_s_mean']:.2f} (paper 6.58), Stewart-Trinkle / "
                  f"{other} = {st['total_s_mean'] / dz['total_s_mean']:.2f} (paper, vs quadprog: 5.51), "
                  f"{other} / PPM = {dz['total_s_mean'] / ppm['total_s_mean']:.2f} (paper, quadprog/PPM: 1.19). "
                  f"Solver-only ratio Stewart-Trinkle / no-slip+PPM = "
                  f"{st['solve_per_step_s'] / max(ppm['solve_per_step_s'], 1e-12):.1f}; contact-model share "
                  f"(build + solve + recover) = {st['model_per_step_s'] / max(ppm['model_per_step_s'], 1e-12):.1f}.")
    crashes = [f"- {r['model']}/{r['method']}, {r['steps']} steps: {r['errors'].count(e)} of {r['trials']} "
               f"trial(s) crashed at {e}" for r in rows for e in sorted(set(r["errors"]))]
    return "\n".join([
        "Two gripper boxes on prismatic actuators (push 50 N) hold two 1 kg boxes by friction, dt = 0.01, "
        "12 contact points per touching pair (36 in all), mu = 100 and a 4-sided pyramid for the Coulomb "
        "models. Times are whole simulation steps (contacts, assembly, solve, recovery, integration; "
        "'model ms/step' is the contact model's build + solve + recover alone), "
        f"mean ± sd over {trials} trial(s), BLAS on one thread. LCP variables in parentheses: the paper's. "
        "Stewart-Trinkle's count includes 4 motor variables (216 contact variables); no-slip, viscous "
        "and Trinkle-Pang apply the saturated actuators as forces. 'held (k/N)': in k of N trials every "
        "held box moved vertically less than 1 mm; the drift column is the worst trial. The paper's "
        "second no-slip solver was MATLAB's active-set quadprog; here "
        "contactlab's `qp` method (when registered) and the Cottle-Dantzig principal pivoting method (an "
        "active-set method for the PSD LCP) stand in.",
        "",
        markdown_table(["model", "method", "steps", "LCP vars (paper)", "total s", "ms/step", "model ms/step",
                        "solve ms/step", "held", "max vertical drift m", "solver statuses", "paper total s"], table),
        "", ratios, "", *crashes, "",
        "Viscous friction cannot hold a box statically (its force vanishes with the sliding speed), so "
        "'dropped' is the physically right outcome for that model.",
    ])

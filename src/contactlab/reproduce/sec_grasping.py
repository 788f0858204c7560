"""arechavaleta §V: the Barrett grasp with plastic (mu 0.2, slips) and rubber (mu 1.0, holds) links,
the five-finger hand lifting a rubber ball (Fig. 1), and both halves of Table I (3-fingered and
5-fingered hand) measured on the LCPs these simulations produce."""
from __future__ import annotations

import numpy as np

from . import markdown_table

#: Table I's sample, (Barrett every k-th step, hand5 every k-th step, timed repeats per solve):
#: the times come from a regular sample of each run's steps, each solve timed as the median of a
#: few repeats after a warm-up call (the paper times every step once; its statistics are min / max
#: / mean over steps, which a regular sample estimates); hand5's sample is timed on its 4-12
#: contact steps only (the rows its half of Table I reports)
SAMPLE = {"quick": (20, 20, 3), "full": (10, 10, 3)}

TITLE = "Grasping: Barrett hand on a glass, five-finger hand on a ball, Table I from the simulations (arechavaleta §V)"
ORDER = 62


def snapshot_figure(scene_name: str, params: dict, poses: list, title: str):
    """matplotlib 3D drawings of the scene's shapes at the recorded poses (one panel per pose)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from mpl_toolkits.mplot3d.art3d import Poly3DCollection
    from scipy.spatial import ConvexHull

    from ..mechanics.model import build_model
    from ..mechanics.rotation import quat_to_matrix
    from ..scenarios import make_scene
    model, _ = build_model(make_scene(scene_name, **params))

    def shape_points(s):
        if s.kind == "box":
            h = 0.5 * np.asarray(s.size)
            return np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)]) * h
        if s.kind == "convex":
            return np.asarray(s.vertices, dtype=float)
        if s.kind in ("cylinder", "capsule"):
            a = np.linspace(0, 2 * np.pi, 17)[:-1]
            ring = np.column_stack([s.radius * np.cos(a), s.radius * np.sin(a)])
            return np.vstack([np.column_stack([ring, np.full(16, z)]) for z in (-s.length / 2, s.length / 2)])
        if s.kind == "sphere":
            g = np.random.default_rng(0).normal(size=(80, 3))
            return s.radius * g / np.linalg.norm(g, axis=1, keepdims=True)
        return None

    fig = plt.figure(figsize=(4 * len(poses), 4))
    for k, (t, P, Q) in enumerate(poses):
        ax = fig.add_subplot(1, len(poses), k + 1, projection="3d")
        R = quat_to_matrix(Q)
        for b, s in model.shapes:
            pts = shape_points(s)
            if pts is None:
                continue
            Rs = quat_to_matrix(np.asarray(s.orientation, dtype=float))
            W = P[b] + (pts @ Rs.T + np.asarray(s.position)) @ R[b].T
            hull = ConvexHull(W)
            color = "tab:cyan" if model.names[b] == "object" else ("0.55" if model.names[b] == "palm" else "tab:orange")
            ax.add_collection3d(Poly3DCollection([W[f] for f in hull.simplices], facecolor=color, alpha=0.35,
                                                 edgecolor="none"))
        g = np.array([[-0.15, -0.15, 0], [0.15, -0.15, 0], [0.15, 0.15, 0], [-0.15, 0.15, 0]])
        ax.add_collection3d(Poly3DCollection([g], facecolor="burlywood", alpha=0.3))
        ax.set_xlim(-0.15, 0.15); ax.set_ylim(-0.15, 0.15); ax.set_zlim(0, 0.3)
        ax.view_init(elev=14, azim=-55)
        ax.set_title(f"t = {t:.2f} s", fontsize=9)
        ax.set_xticks([]); ax.set_yticks([]); ax.set_zticks([])
    fig.suptitle(title, fontsize=10)
    return fig


def run(ctx) -> str:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ..scenarios.grasp_runs import PAPER_TABLE_I, TABLE_METHODS, TABLE_VARIANTS, run_grasp, step_table, summarize, \
        table_i
    quick = ctx.quick
    hold = 0.3 if quick else 2.0
    every, every5, repeats = SAMPLE["quick" if quick else "full"]
    # quick: a 0.3 s hold (480 steps per run instead of 820); the grasp itself is not shortened
    # further: at dt 10 ms the rubber grasp does not hold
    fast = {}
    t_end = 1.05 + 0.1 / 0.1 + hold     # settle + close timeout + lift + hold
    runs = {}
    lines = []
    for material in ("plastic", "rubber"):
        ctx.advance(f"barrett-grasp {material}")
        runs[material] = run_grasp("barrett-grasp", record_systems=True, record_every=every, hold=hold,
                                   material=material, snapshot_times=(0.0, 0.4, 1.0, t_end),
                                   friction_directions=8, **fast)   # lemke's pyramid: GraspIt!'s 8 edges
    table_rows = []
    for material, r in runs.items():
        ctx.advance(f"Table I steps ({material})")
        table_rows += step_table(r, repeats=repeats)
    summary = summarize(table_rows)
    # the run table
    run_table = []
    for material, r in runs.items():
        s = r.summary
        run_table.append([material, "0.2" if material == "plastic" else "1.0", "lifted" if s["lifted"] else "not lifted",
                          f"{1e3 * s['object_drop_m']:.1f}", f"{1e3 * s['hold_drift_m']:.2f}", s["max_contacts"],
                          f"{1e3 * float(r.penetration.max(initial=0.0)):.2f}", f"{float(r.joint_error.max(initial=0.0)):.1e}",
                          f"{r.wall_s:.1f}", f"{r.time[-1] if r.time.size else 0:.2f}", r.error or ""])
    lines += ["The Barrett hand (GraspIt! dimensions, masses, coupled distal joints) over the stemmed wine "
              "glass lying on a wood table; script: close at 0.5 rad/s with force-limited motors (2.5 N m, "
              f"thumb 5 N m) until the fingers stall, lift the wrist 10 cm at 0.1 m/s, "
              f"hold {hold:g} s. Simulated with box-friction (joints eliminated, eq. 15; box bounds mu c_n from "
              f"the previous step, eq. 16) and pgs-sm, dt = {1e3 * fast.get('dt', 0.005):g} ms"
              + (" (quick mode)." if quick else "."), "",
              markdown_table(["links", "mu (glass)", "result", "drop mm", "hold drift mm", "max contacts",
                              "max penetration mm", "max joint error", "wall s", "simulated s", "error"], run_table), ""]
    # Table I
    rows = []
    for e in summary:
        for m in TABLE_METHODS:
            x = e[m]
            paper = PAPER_TABLE_I["3-fingered"][TABLE_VARIANTS.get(m, (m,))[0]] if e["contacts"] == "4-12" else None
            rows.append([e["contacts"], e["steps"], m, f"{x['min']:.0f}", f"{x['max']:.0f}", f"{x['mean']:.0f}",
                         f"{paper[0]} / {paper[1]} / {paper[2]}" if paper else "-",
                         f"{x['iterations_mean']:.1f}", f"{x['pivots_mean']:.1f}", f"{x['certified']}/{e['steps']}"])
    ratio = "; ".join(f"contacts {e['contacts']}: lemke/pgs-sm mean ratio {e['ratio_lemke_pgs_sm']:.2f} "
                      f"(paper {672 / 145:.1f}-{1885 / 155:.1f}), pgs-sm faster on every step: "
                      f"{e['pgs_sm_faster_every_step']} ({e['pgs_sm_faster_steps']} of {e['steps']}); LCP size box {e['n_box'][0]}-{e['n_box'][1]}, "
                      f"pyramid {e['n_lemke'][0]}-{e['n_lemke'][1]}; median cond {e['cond_box_median']:.1e}"
                      for e in summary)
    n_steps = {m: len(r.time) for m, r in runs.items()}
    lines += ["Table I from these runs: a sample of the steps, every " + ("" if every == 1 else f"{every}th ") +
              "step (" + ", ".join(f"{len(r.systems)} of {n_steps[m]} in the {m} run" for m, r in runs.items()) +
              "), each step's problem solved by each method separately at its default tolerance; time of the solver "
              f"call only (median of {repeats} after a warm-up), in microseconds. lemke solves the "
              "friction-pyramid LCP (Stewart-Trinkle, 8 edges, joints eliminated as in GraspIt!), pgs and pgs-sm the "
              "friction-box LCP of eq. 16-17; pgs-paper is PGS with the paper's stop (||u^{k+1} - u^k||_inf <= "
              "1e-8, CFM 1e-11: §III-B, §V-B), which certifies nothing, pgs ours (until the residual certifies, "
              "or 10,000 sweeps). Paper: min / max / mean on an AMD Turion 3 GHz (2009), 3-fingered hand.", "",
              markdown_table(["contacts", "steps", "method", "min us", "max us", "mean us", "paper (us)",
                              "iterations", "pivots", "certified"], rows), "", ratio, ""]
    # the 5-fingered half: hand5-grasp (arechavaleta Fig. 1: metal hand, rubber ball, mu 1.0)
    ctx.advance("hand5-grasp")
    h5 = run_grasp("hand5-grasp", record_systems=True, record_every=every5, hold=hold, friction_directions=8)
    ctx.advance("Table I steps (hand5)")
    h5_rows = step_table(h5, repeats=repeats, contacts=(4, 12))     # the only rows the 5-fingered half reports
    s5 = h5.summary
    lines += ["The five-finger hand (GraspIt!'s HumanHand20DOF bones and bases, box links, metal) over a rubber "
              "ball on the wood table (Fig. 1: metal hand, rubber ball, mu 1.0). It starts clear of the ball "
              "(every hand-ball gap above the contact margin), closes from its pre-grasp (thumb rolled open) "
              f"until the fingers stall, lifts 10 cm and holds {hold:g} s; same model, solver and step as the "
              "Barrett runs.", "",
              markdown_table(["hand", "result", "drop mm", "hold drift mm", "max contacts", "max penetration mm",
                              "max joint error", "wall s", "simulated s", "error"],
                             [["hand5 (metal / rubber ball)", "lifted" if s5["lifted"] else "not lifted",
                               f"{1e3 * s5['object_drop_m']:.1f}", f"{1e3 * s5['hold_drift_m']:.2f}",
                               s5["max_contacts"], f"{1e3 * float(h5.penetration.max(initial=0.0)):.2f}",
                               f"{float(h5.joint_error.max(initial=0.0)):.1e}", f"{h5.wall_s:.1f}",
                               f"{h5.time[-1] if h5.time.size else 0:.2f}", h5.error or ""]]), ""]
    five = summarize(h5_rows)
    both = table_i({"3-fingered": summary, "5-fingered": five})
    t1 = [[x["hand"], x["method"], x["steps"], f"{x['min']:.0f}", f"{x['max']:.0f}", f"{x['mean']:.0f}",
           " / ".join(str(v) for v in x["paper"]), f"{x['iterations_mean']:.1f}", f"{x['pivots_mean']:.1f}",
           f"{x['certified']}/{x['steps']}"] for x in both]
    ratios = "; ".join(f"{x['hand']}: lemke / pgs-sm mean {x['ratio_lemke_pgs_sm']:.1f} (paper "
                       f"{x['paper_ratio_lemke_pgs_sm']:.1f}), LCP size box {x['n_box'][0]}-{x['n_box'][1]}, "
                       f"pyramid {x['n_lemke'][0]}-{x['n_lemke'][1]}"
                       for x in both if x["method"] == "lemke" and x["ratio_lemke_pgs_sm"] is not None)
    lines += ["**Table I, both halves** (arechavaleta §V-B: steps with 4-12 contacts; min / max / mean solve "
              "time in microseconds; ours beside the paper's). Where the experiment differs from the paper's: "
              "the 3-fingered rows come from our Barrett hand on the glass (plastic and rubber runs), the "
              "5-fingered rows from our box-link HumanHand20DOF on a rubber ball (the paper's five-fingered "
              f"hand model and ball size are not given); a sample of the steps (the 5-fingered rows from every "
              f"{every5}th step with 4-12 contacts, {len(h5_rows)} of {len(h5.time)} steps, the 3-fingered from every "
              f"{every}th), each "
              f"time the median of {repeats} repeats, where the paper times every step once; lemke, as the paper's, without "
              "contactlab's restarts from a stalled basis, is our Lemke on the 8-edge friction pyramid "
              "(GraspIt!'s) with its equilibrated retry (where the run on the LCP as formed does not certify, "
              "the symmetrically scaled LCP D M D, D q is solved and its answer mapped back, refined and "
              "certified on the unscaled LCP; its time is in the figure), pgs and pgs-sm ours on the friction box of eq. 16-17; a 2026 CPU against the "
              "paper's AMD Turion (2009), so only the ratios between methods compare; our contact counts "
              "come from box links (up to 4 points per face pair).", "",
              markdown_table(["hand", "method", "steps", "min us", "max us", "mean us", "paper min / max / mean",
                              "iterations", "pivots", "certified"], t1), "", ratios, ""]
    # figures
    snaps = {}
    for material, r in runs.items():
        if r.poses:
            fig = snapshot_figure("barrett-grasp", {"material": material, "hold": hold, **fast}, r.poses,
                                  f"barrett-grasp, {material} links on glass")
            snaps[material] = ctx.figure(f"grasp_snapshots_{material}", fig)
            lines.append(snaps[material])
            plt.close(fig)
    fig, ax = plt.subplots(1, 2, figsize=(10, 3.5))
    for material, r in runs.items():
        ax[0].plot(r.time, 1e3 * r.object_z, label=f"object, {material} (mu {0.2 if material == 'plastic' else 1.0})")
        ax[1].plot(r.time, r.contacts, label=material)
    ax[0].plot(h5.time, 1e3 * h5.object_z, label="ball, hand5 (mu 1.0)")
    ax[1].plot(h5.time, h5.contacts, label="hand5")
    r = runs["rubber"]
    ax[0].plot(r.time, 1e3 * (r.palm_z - r.palm_z[0]) + 1e3 * r.object_z[0], "k--", lw=0.8, label="palm rise")
    ax[0].set_xlabel("t (s)"); ax[0].set_ylabel("height (mm)"); ax[0].legend(fontsize=7)
    ax[1].set_xlabel("t (s)"); ax[1].set_ylabel("contacts"); ax[1].legend(fontsize=7)
    lines.append(ctx.figure("grasp_height_contacts", fig))
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(5, 3.5))
    for m, mk in (("lemke", "o"), ("pgs", "s"), ("pgs-sm", "^")):
        ax.scatter([x["contacts"] for x in table_rows], [1e6 * x[m]["time_s"] for x in table_rows], s=8, marker=mk,
                   label=m, alpha=0.6)
    ax.set_yscale("log"); ax.set_xlabel("contacts"); ax.set_ylabel("solve time (us)"); ax.legend(fontsize=7)
    times_fig = ctx.figure("grasp_solve_time_vs_contacts", fig)
    lines.append(times_fig)
    plt.close(fig)
    summarize_rows(ctx, runs, summary, snaps, times_fig, five)
    return "\n".join(lines)


def summarize_rows(ctx, runs: dict, summary: list[dict], snaps: dict, times_fig: str,
                   five: list[dict] | None = None) -> None:
    """The report's opening rows from these runs: Figs. 2-3 (plastic slips, rubber lifts) and Table I
    (the paper's ordering of mean times on its 4-12 contact grasps, PGS-SM < PGS < Lemke, in each
    half computed: the 3-fingered from the Barrett runs, the 5-fingered from hand5's (``five``))."""
    for material, item, want in (("plastic", "Fig. 2", False), ("rubber", "Fig. 3", True)):
        if material not in runs:
            continue
        s = runs[material].summary
        ok = bool(s["lifted"]) == want
        ctx.summary("arechavaleta", item, paper_value="the glass slips out (mu 0.2)" if not want else
                    "a stable grasp: the glass is lifted (mu 1.0)",
                    ours=f"{'lifted' if s['lifted'] else 'not lifted'}, drop {1e3 * s['object_drop_m']:.1f} mm"
                    + (f"; {runs[material].error}" if runs[material].error else ""), agrees=ok,
                    reason="" if ok else f"the glass was {'lifted' if s['lifted'] else 'not lifted'}",
                    figures=[snaps[material]] if material in snaps else [])
    e = next((e for e in summary if e["contacts"] == "4-12"), None)
    if e is None:
        ctx.summary("arechavaleta", "Table I", paper_value="mean us: PGS-SM 145 < PGS 207 < Lemke 672",
                    ours="-", agrees=None, reason="no simulated step had 4-12 contacts")
        return
    halves = [("3-fingered", e)]
    e5 = next((x for x in five or () if x["contacts"] == "4-12"), None)
    if e5 is not None:
        halves.append(("5-fingered", e5))
    texts, bad = [], []
    ours_order = []
    for hand, x in halves:
        mean = {m: x[m]["mean"] for m in ("lemke", "pgs-paper", "pgs-sm")}     # the paper's PGS: its stop
        texts.append(f"{hand}, {x['steps']} steps with 4-12 contacts, mean us: PGS-SM {mean['pgs-sm']:.0f}, PGS "
                     f"with the paper's stop {mean['pgs-paper']:.0f} (ours, to a certified residual, "
                     f"{x['pgs']['mean']:.0f}), Lemke {mean['lemke']:.0f} (Lemke/PGS-SM {x['ratio_lemke_pgs_sm']:.1f}x; "
                     f"certified: Lemke {x['lemke']['certified']}, PGS {x['pgs-paper']['certified']} / ours "
                     f"{x['pgs']['certified']}, PGS-SM {x['pgs-sm']['certified']} of {x['steps']})")
        if not mean["pgs-sm"] < mean["pgs-paper"] < mean["lemke"]:
            bad.append(f"{hand}: " + " < ".join(sorted(mean, key=mean.get)))
        if not mean["pgs-sm"] < mean["pgs-paper"] < mean["lemke"]:
            ours_order.append(f"{hand} {x['pgs-paper']['iterations_mean']:.0f} sweeps with the paper's stop and "
                              f"{x['pgs']['iterations_mean']:.0f} to a certified residual (median cond "
                              f"{x['cond_box_median']:.0e})")
    ok = not bad
    ctx.summary("arechavaleta", "Table I", paper_value="mean us: 3-fingered PGS-SM 145 < PGS 207 < Lemke 672 "
                "(Lemke/PGS-SM 4.6x); 5-fingered PGS-SM 155 < PGS 238 < Lemke 1885 (12.2x)", ours="; ".join(texts),
                agrees=ok, reason="" if ok else "the order of the mean times is not the paper's (" + "; ".join(bad)
                + "). Not the stopping rule: PGS is timed as the paper ran it (stop at ||u^{k+1} - u^k||_inf <= 1e-8, "
                "CFM 1e-11, §III-B and §V-B) beside ours (to a certified residual), and on these ill-conditioned "
                "steps both need thousands of sweeps (" + "; ".join(ours_order) + "), where the paper's PGS "
                "'identified the active set in few iterations'; its grasp LCPs (GraspIt!'s hands and objects, "
                "conditioning not given) and sweep order are not ours",
                figures=[times_fig])

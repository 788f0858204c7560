"""Time series of a recorded trajectory (``contactlab plot``), with matplotlib.

Panels (``what``): ``energy`` (kinetic and total energy, and the cumulative kinetic energy added
by contact impulses, which a dissipative model keeps <= 0), ``contacts`` (contacts and LCP size),
``penetration`` (deepest penetration per step), ``solver`` (iterations / pivots, solve time,
certified residual on log axes, failed steps marked) and ``bodies`` (chosen bodies' positions).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import ParamError

PANELS = ("energy", "contacts", "penetration", "solver", "bodies")


def _load(path):
    from .replay import open_trajectory_file
    with open_trajectory_file(path, ParamError) as f:
        if "steps" not in f:
            raise ParamError(f"{path} has no /steps group: not a trajectory written by 'contactlab simulate --out'")
        steps = {k: f["steps"][k][()] for k in f["steps"]}
        names = [n.decode() if isinstance(n, bytes) else str(n) for n in f["bodies/names"][()]] if "bodies/names" in f else []
        pos = f["bodies/position"][()] if "bodies/position" in f else None
    return steps, names, pos


def plot_trajectory(path, what=PANELS, out=None, bodies=None):
    """A figure with one panel per entry of ``what`` (see the module docstring); saved to ``out``
    (.png, .svg or .pdf, atomically) when given. ``bodies``: names to plot (default: up to 5 moving ones)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    what = [w.strip() for w in (what.split(",") if isinstance(what, str) else what) if w.strip()]
    bad = [w for w in what if w not in PANELS]
    if bad or not what:
        raise ParamError(f"--what takes a comma-separated subset of {', '.join(PANELS)}; got {', '.join(bad) or 'nothing'}")
    steps, names, pos = _load(path)
    t = np.asarray(steps.get("time", np.zeros(0)), dtype=float)
    if t.size == 0:
        raise ParamError(f"{path} holds no steps")
    fig, axes = plt.subplots(len(what), 1, figsize=(8, 2.4 * len(what)), sharex=True, squeeze=False)
    for ax, w in zip(axes[:, 0], what):
        if w == "energy":
            ax.plot(t, steps["kinetic_energy"], label="kinetic")
            ax.plot(t, steps["energy"], label="total (kinetic + potential)")
            ax.plot(t, np.cumsum(steps["contact_energy_gain"]), label="cumulative contact gain")
            ax.set_ylabel("energy (J)")
        elif w == "contacts":
            ax.step(t, steps["contacts"], where="post", label="contacts")
            ax.step(t, steps["lcp_size"], where="post", label="LCP size")
            ax.set_ylabel("count")
        elif w == "penetration":
            ax.plot(t, 1e3 * np.asarray(steps["max_penetration"]), label="max penetration")
            ax.set_ylabel("mm")
        elif w == "solver":
            it = np.maximum(steps["iterations"], steps["pivots"])
            ax.plot(t, np.maximum(it, 1), label="iterations / pivots")
            ax.plot(t, np.maximum(1e6 * np.asarray(steps["solve_time"]), 1e-3), label="solve time (us)")
            ax.plot(t, np.maximum(np.asarray(steps["residual"], dtype=float), 1e-300), label="residual")
            bad_steps = ~np.asarray(steps["success"], dtype=bool)
            if bad_steps.any():
                ax.plot(t[bad_steps], np.ones(bad_steps.sum()), "rx", label="uncertified step")
            ax.set_yscale("log")
        elif w == "bodies":
            if pos is None:
                raise ParamError(f"{path} has no body poses; record them with 'contactlab simulate --out' (poses are kept by default)")
            sel = list(bodies) if bodies else None
            if sel is None:
                moving = np.flatnonzero(np.ptp(pos, axis=0).max(axis=1) > 0)
                sel = [names[i] for i in moving[:5]]
            missing = [b for b in sel if b not in names]
            if missing:
                raise ParamError(f"no body named {', '.join(missing)}; bodies: {', '.join(names)}")
            tp = np.concatenate([[t[0] - (t[1] - t[0]) if t.size > 1 else 0.0], t])[: len(pos)]
            for b in sel:
                i = names.index(b)
                for k, axis in enumerate("xyz"):
                    ax.plot(tp, pos[:, i, k], ls=("-", "--", ":")[k], label=f"{b} {axis}")
            ax.set_ylabel("position (m)")
        ax.legend(fontsize=7, loc="best")
        ax.grid(alpha=0.3)
    axes[-1, 0].set_xlabel("time (s)")
    fig.tight_layout()
    if out is not None:
        from ..files import atomic_write
        out = Path(out)
        fmt = out.suffix.lstrip(".").lower()
        if fmt not in ("png", "svg", "pdf"):
            raise ParamError(f"--out must end in .png, .svg or .pdf, got {out.name!r}")
        atomic_write(out, lambda tmp: fig.savefig(tmp, format=fmt, dpi=110, bbox_inches="tight"))
    return fig

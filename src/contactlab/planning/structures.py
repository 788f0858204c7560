"""The catalogue of block structures for disassembly planning (loomis-balkcom §V, Figs. 5-7,
Table I): named, random and read from files, each a :class:`~contactlab.planning.blocks.Structure`.

Built-in structures: ``column-N``, ``pyramid-N`` (N = r (r + 1) / 2 bricks in r staggered rows),
``random-N`` (seeded generator), ``column3d-N``, ``pyramid3d-N`` (square layers r^2, (r-1)^2, ..,
1, each box on four quarter-boxes), and structures read from TOML/JSON files (:func:`load_structure`).
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np

from ..errors import ModelError, ParamError
from .blocks import Structure, make_structure
from .statics import StaticsModel, lp_feasible


def column(n: int, *, width: float = 1.0, height: float = 0.5) -> Structure:
    """A column of ``n`` aligned blocks on the ground (Table I's Column 50 / Column 80)."""
    return make_structure(f"column-{n}", [(0.0, height * (k + 0.5), width, height) for k in range(n)])


def pyramid(n: int, *, width: float = 1.0, height: float = 0.5, joint: float = 0.02) -> Structure:
    """A pyramid of ``n = r (r + 1) / 2`` bricks in ``r`` rows, staggered like brickwork: a brick
    rests on two half-bricks below; ``joint`` is the mortar gap between neighbours in a row (no
    side contacts). Table I's Pyramid 91 has 13 rows."""
    r = int(round((np.sqrt(8 * n + 1) - 1) / 2))
    if r * (r + 1) // 2 != n:
        raise ParamError(f"pyramid-{n}: n must be a triangular number r(r+1)/2 (e.g. 91 = 13 rows)")
    blocks = [((k + row / 2) * width, height * (row + 0.5), width - joint, height)
              for row in range(r) for k in range(r - row)]
    return make_structure(f"pyramid-{n}", blocks)


def column3d(n: int, *, size: float = 1.0, height: float = 0.5) -> Structure:
    """A 3D column of ``n`` aligned boxes (four contacts per face)."""
    return make_structure(f"column3d-{n}", [(0.0, height * (k + 0.5), 0.0, size, height, size) for k in range(n)],
                          dim=3)


def pyramid3d(n: int, *, size: float = 1.0, height: float = 0.5, joint: float = 0.02) -> Structure:
    """A square pyramid of ``n = r^2 + (r-1)^2 + .. + 1`` boxes: each box above the bottom layer
    rests on four quarter-boxes (16 contacts); ``joint`` gaps between neighbours."""
    r, tot = 0, 0
    while tot < n:
        r += 1
        tot += r * r
    if tot != n:
        raise ParamError(f"pyramid3d-{n}: n must be a sum of squares 1 + 4 + .. + r^2 (e.g. 5, 14, 30, 55)")
    blocks = [((i + lay / 2) * size, height * (lay + 0.5), (j + lay / 2) * size, size - joint, height, size - joint)
              for lay in range(r) for i in range(r - lay) for j in range(r - lay)]
    return make_structure(f"pyramid3d-{n}", blocks, dim=3)


def _lever(x0: float) -> list[tuple]:
    """Four blocks where a lower block must go before the one above it (Fig. 7's remark): pillar
    Q, pillar P, plank L cantilevered off P (tips alone), weight U resting on Q and on L's tail.
    Removing U first tips L; removing L first leaves U balanced on Q. Width 3.8."""
    return [(x0 + 0.5, 0.65, 1.0, 1.3),           # Q
            (x0 + 2.0, 0.5, 0.8, 1.0),            # P, top at 1.0
            (x0 + 2.7, 1.15, 3.0, 0.3),           # L over [x0+1.2, x0+4.2], centre beyond P's edge
            (x0 + 0.7, 1.55, 1.8, 0.5)]           # U over [x0-0.2, x0+1.6], centre over Q


def random_structure(n: int, seed: int = 0) -> Structure:
    """A random stable planar structure of ``n`` blocks (like Fig. 7), from ``seed``.

    Left to right on the ground: columns of 1-3 blocks with random sizes and offsets, and now and
    then a lever motif (:func:`_lever`) in which a block must be removed before a block above it;
    then blocks are dropped at random places onto the top surface, each kept only when the whole
    structure stays stable (frictionless statics LP). Sizes are multiples of 0.1, coordinates of 0.05 and each
    dropped block's centre stays 0.1 inside its support, so no node sits on a stability tie.
    """
    if n < 1:
        raise ParamError(f"random-N needs N >= 1, got {n}")
    rng = np.random.default_rng(seed)
    q = lambda v: round(round(v / 0.05) * 0.05, 10)  # noqa: E731
    q2 = lambda v: round(round(v / 0.1) * 0.1, 10)   # noqa: E731  sizes: halves stay on the 0.05 grid
    blocks: list[tuple] = []
    x = 0.0
    n_base = max(1, int(round(0.5 * n)))

    def stable(bl):
        s = make_structure("tmp", bl)
        return lp_feasible(StaticsModel(s), np.ones(s.n, dtype=bool))[0]

    while len(blocks) < n_base:
        if n - len(blocks) >= 4 and rng.random() < 0.2:
            blocks += [tuple(q(v) for v in b) for b in _lever(x + 0.2)]
            x = max(bx + bw / 2 for bx, _, bw, _ in blocks) + q(rng.uniform(0.1, 0.6))
            continue
        k = int(min(rng.integers(1, 4), n_base - len(blocks)))
        w = q2(rng.uniform(0.6, 1.4))
        cx, y = x + w / 2, 0.0
        col = []
        for _ in range(k):
            h = q2(rng.uniform(0.4, 0.8))
            col.append((q(cx), q(y + h / 2), w, h))
            y += h
            w_new = q2(rng.uniform(0.6, 1.4))
            cx = cx + q(rng.uniform(-0.2, 0.2) * min(w, w_new))
            w = w_new
        shift = q(x - min(bx - bw / 2 for bx, _, bw, _ in col) + 0.05)   # the column's widest point clears x
        col = [(q(bx + shift), by, bw, bh) for bx, by, bw, bh in col]
        if not stable(col):
            continue
        blocks += col
        x = max(bx + bw / 2 for bx, _, bw, _ in blocks) + q(rng.uniform(0.1, 0.6))
    span = x
    tries = 0
    while len(blocks) < n:
        tries += 1
        if tries > 200 * n:
            raise ParamError(f"random-{n}: could not place the blocks (seed {seed}); try another seed")
        w = q2(rng.uniform(0.6, 2.4))
        h = q2(rng.uniform(0.3, 0.7))
        cx = q(rng.uniform(0.0, span))
        lo, hi = cx - w / 2, cx + w / 2
        tops = [(by + bh / 2, bx - bw / 2, bx + bw / 2) for bx, by, bw, bh in blocks
                if min(hi, bx + bw / 2) - max(lo, bx - bw / 2) > 1e-9]
        land = max((t for t, _, _ in tops), default=0.0)
        if land == 0.0:
            continue                                 # on the ground: not a drop onto the structure
        sup = [(max(lo, a), min(hi, b)) for t, a, b in tops if abs(t - land) < 1e-9]
        s_lo, s_hi = min(a for a, _ in sup), max(b for _, b in sup)
        if not (s_lo + 0.1 <= cx <= s_hi - 0.1):
            continue
        cand = blocks + [(cx, q(land + h / 2), w, h)]
        if stable(cand):
            blocks = cand
    return make_structure(f"random-{n}", blocks)


def random3d_structure(n: int, seed: int = 0) -> Structure:
    """A random stable structure of ``n`` 3D boxes: towers of 1-3 boxes on a 4 x 4 grid of
    ground cells, then boxes dropped at random onto the top surfaces, each kept only when the
    whole stays stable (frictionless statics LP). Sizes are multiples of 0.1, centres of 0.05;
    a dropped box's centre stays 0.1 inside the bounding box of its supports."""
    if n < 1:
        raise ParamError(f"random3d-N needs N >= 1, got {n}")
    rng = np.random.default_rng(seed)
    q = lambda v: round(round(v / 0.05) * 0.05, 10)  # noqa: E731
    q2 = lambda v: round(round(v / 0.1) * 0.1, 10)   # noqa: E731
    blocks: list[tuple] = []

    def stable(bl):
        st = make_structure("tmp", bl, dim=3)
        return lp_feasible(StaticsModel(st), np.ones(st.n, dtype=bool))[0]

    cells = [(1.5 * i, 1.5 * j) for i in range(4) for j in range(4)]
    rng.shuffle(cells)
    for cx, cz in cells:
        if len(blocks) >= max(1, n // 2):
            break
        y = 0.0
        for _ in range(int(min(rng.integers(1, 4), max(1, n // 2) - len(blocks)))):
            h = q2(rng.uniform(0.3, 0.6))
            blocks.append((q(cx), q(y + h / 2), q(cz), 1.0, h, 1.0))
            y += h
    tries = 0
    while len(blocks) < n:
        tries += 1
        if tries > 200 * n:
            raise ParamError(f"random3d-{n}: could not place the boxes (seed {seed}); try another seed")
        w, d, h = q2(rng.uniform(0.6, 2.4)), q2(rng.uniform(0.6, 2.4)), q2(rng.uniform(0.3, 0.6))
        cx, cz = q(rng.uniform(0.0, 4.5)), q(rng.uniform(0.0, 4.5))
        under = [(by + bh / 2, bx - bw / 2, bx + bw / 2, bz - bd / 2, bz + bd / 2) for bx, by, bz, bw, bh, bd in blocks
                 if min(cx + w / 2, bx + bw / 2) - max(cx - w / 2, bx - bw / 2) > 1e-9
                 and min(cz + d / 2, bz + bd / 2) - max(cz - d / 2, bz - bd / 2) > 1e-9]
        land = max((t for t, *_ in under), default=0.0)
        if land == 0.0:
            continue
        sup = [u for u in under if abs(u[0] - land) < 1e-9]
        x_lo, x_hi = max(cx - w / 2, min(u[1] for u in sup)), min(cx + w / 2, max(u[2] for u in sup))
        z_lo, z_hi = max(cz - d / 2, min(u[3] for u in sup)), min(cz + d / 2, max(u[4] for u in sup))
        if not (x_lo + 0.1 <= cx <= x_hi - 0.1 and z_lo + 0.1 <= cz <= z_hi - 0.1):
            continue
        cand = blocks + [(cx, q(land + h / 2), cz, w, h, d)]
        if stable(cand):
            blocks = cand
    return make_structure(f"random3d-{n}", blocks, dim=3)


_NAMED = {"column": column, "pyramid": pyramid, "column3d": column3d, "pyramid3d": pyramid3d}


def get_structure(spec: str, seed: int | None = None) -> Structure:
    """``column-N``, ``pyramid-N``, ``random-N`` (seed: ``seed``, default N), ``column3d-N``,
    ``pyramid3d-N``, ``random3d-N`` or a .toml/.json file."""
    m = re.fullmatch(r"(column3d|pyramid3d|random3d|column|pyramid|random)-(\d+)", spec)
    if m:
        kind, n = m.group(1), int(m.group(2))
        if kind in ("random", "random3d"):
            gen = random_structure if kind == "random" else random3d_structure
            return gen(n, n if seed is None else seed)
        if seed is not None:
            raise ParamError(f"--seed applies to random-N and random3d-N, not {spec!r}")
        return _NAMED[kind](n)
    p = Path(spec)
    if p.suffix.lower() in (".toml", ".json"):
        return load_structure(p)
    raise ParamError(f"unknown structure {spec!r}; use column-N, pyramid-N (N triangular), random-N, "
                     "column3d-N, pyramid3d-N (N = 1 + 4 + .. + r^2), random3d-N, or a .toml/.json file")


def load_structure(path) -> Structure:
    """Read ``{name?, mu?, g?, blocks: [{id?, x, y, width, height, density?}, ...]}`` from TOML or JSON
    (x, y: the block's centre; the ground is y = 0). Blocks with ``z`` and ``depth`` (all of them)
    make a 3D structure (y up)."""
    p = Path(path)
    if not p.is_file():
        raise ParamError(f"structure file {str(p)!r} does not exist")
    try:
        if p.suffix.lower() == ".toml":
            import tomllib
            data = tomllib.loads(p.read_text())
        else:
            data = json.loads(p.read_text())
    except Exception as exc:
        raise ModelError(f"cannot parse {str(p)!r}: {exc}") from exc
    blocks = data.get("blocks") if isinstance(data, dict) else None
    if not isinstance(blocks, list) or not blocks:
        raise ModelError(f"{str(p)!r} needs a non-empty 'blocks' list of {{x, y, width, height}} tables")
    rows, ids = [], []
    dim = 3 if all(isinstance(b, dict) and "z" in b and "depth" in b for b in blocks) else 2
    keys = ("x", "y", "z", "width", "height", "depth") if dim == 3 else ("x", "y", "width", "height")
    for k, b in enumerate(blocks):
        try:
            rows.append(tuple(float(b[key]) for key in keys) + (float(b.get("density", 1.0)),))
        except (KeyError, TypeError, ValueError) as exc:
            raise ModelError(f"block {k} of {str(p)!r} needs numeric x, y, width, height: {exc}") from exc
        ids.append(b.get("id", k))
    return make_structure(str(data.get("name", p.stem)), rows, ids=ids, mu=float(data.get("mu", 0.0)),
                          g=float(data.get("g", 9.81)), dim=dim)

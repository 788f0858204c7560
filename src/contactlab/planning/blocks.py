"""A block structure as data (loomis-balkcom §V): :class:`Structure` and its checked constructor
:func:`make_structure`. The named and random structures built from it are in
:mod:`contactlab.planning.structures`; its statics in :mod:`contactlab.planning.statics`.

A :class:`Structure` holds axis-aligned rectangular blocks (centre, half extents, density) on a
ground line y = 0 (planar), or boxes on the ground plane y = 0 (3D: a depth coordinate ``zc`` and
half depth ``hd`` as well; y is up in both), plus a friction coefficient for the statics LP.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import ModelError


@dataclass(frozen=True)
class Structure:
    """Blocks i = 0..n-1: centre (x[i], y[i]), half width hw[i], half height hh[i], density rho[i]
    (mass per unit area); ``ids`` are the names reported in a removal sequence; ``mu`` is the
    friction coefficient of the statics LP (0: frictionless, as Table I); ``g`` gravity (m/s^2)."""
    name: str
    ids: tuple
    x: np.ndarray
    y: np.ndarray
    hw: np.ndarray
    hh: np.ndarray
    rho: np.ndarray
    mu: float = 0.0
    g: float = 9.81
    zc: np.ndarray | None = None     # 3D: depth coordinate of the centre
    hd: np.ndarray | None = None     # 3D: half depth

    @property
    def n(self) -> int:
        return int(self.x.size)

    @property
    def dim(self) -> int:
        return 2 if self.zc is None else 3

    @property
    def mass(self) -> np.ndarray:
        """Planar: density x area; 3D: density x volume."""
        m = self.rho * 4.0 * self.hw * self.hh
        return m if self.dim == 2 else m * 2.0 * self.hd

    @property
    def inertia(self) -> np.ndarray:
        """Planar: the moment about the out-of-plane axis, (n,). 3D: the principal moments about x,
        y (up) and z, (n, 3)."""
        w, h, m = 2 * self.hw, 2 * self.hh, self.mass
        if self.dim == 2:
            return m * (w ** 2 + h ** 2) / 12.0
        d = 2 * self.hd
        return np.column_stack([m * (h ** 2 + d ** 2), m * (w ** 2 + d ** 2), m * (w ** 2 + h ** 2)]) / 12.0

    def to_dict(self) -> dict:
        blocks = [{"id": i, "x": float(a), "y": float(b), "width": float(2 * w), "height": float(2 * h),
                   "density": float(r)} for i, a, b, w, h, r in
                  zip(self.ids, self.x, self.y, self.hw, self.hh, self.rho)]
        if self.dim == 3:
            for blk, z, d in zip(blocks, self.zc, self.hd):
                blk["z"], blk["depth"] = float(z), float(2 * d)
        return {"name": self.name, "mu": self.mu, "g": self.g, "blocks": blocks}


def _overlap(c, half):
    return np.minimum(c[:, None] + half[:, None], c + half) - np.maximum(c[:, None] - half[:, None], c - half)


def make_structure(name: str, blocks: list[tuple], *, ids=None, mu: float = 0.0, g: float = 9.81,
                   dim: int = 2) -> Structure:
    """``blocks``: (x, y, width, height[, density]) per block (planar, y up), or with ``dim=3``
    (x, y, z, width, height, depth[, density]) (y up); checked: positive sizes, no block below the
    ground, no two blocks overlapping."""
    if not blocks:
        raise ModelError(f"structure {name!r} has no blocks")
    if dim not in (2, 3):
        raise ModelError(f"dim must be 2 or 3, got {dim}")
    k = 4 if dim == 2 else 6
    arr = np.array([tuple(b) + ((1.0,) if len(b) == k else ()) for b in blocks], dtype=np.float64)
    if arr.ndim != 2 or arr.shape[1] != k + 1 or not np.all(np.isfinite(arr)):
        raise ModelError("each block needs finite x, y, width, height[, density]" if dim == 2 else
                         "each block needs finite x, y, z, width, height, depth[, density]")
    if dim == 2:
        x, y, w, h, rho = arr.T
        z = dd = None
    else:
        x, y, z, w, h, dd, rho = arr.T
    if np.any(w <= 0) or np.any(h <= 0) or np.any(rho <= 0) or (dd is not None and np.any(dd <= 0)):
        raise ModelError("block width, height, depth and density must be > 0")
    scale = max(1.0, float(np.max(np.abs(arr[:, :k]))))
    eps = 1e-9 * scale
    if np.any(y - h / 2 < -eps):
        raise ModelError(f"block {int(np.argmin(y - h / 2))} of {name!r} is below the ground (y - height/2 < 0)")
    bad = (_overlap(x, w / 2) > eps) & (_overlap(y, h / 2) > eps)
    if dim == 3:
        bad &= _overlap(z, dd / 2) > eps
    np.fill_diagonal(bad, False)
    if np.any(bad):
        i, j = np.argwhere(bad)[0]
        raise ModelError(f"blocks {i} and {j} of {name!r} overlap; blocks may touch but not interpenetrate")
    if not (np.isfinite(mu) and mu >= 0):
        raise ModelError(f"mu must be >= 0, got {mu}")
    ids = tuple(range(len(blocks))) if ids is None else tuple(ids)
    if len(ids) != len(blocks) or len(set(ids)) != len(ids):
        raise ModelError("block ids must be distinct, one per block")
    return Structure(name, ids, x, y, w / 2, h / 2, rho, float(mu), float(g),
                     None if z is None else z, None if dd is None else dd / 2)

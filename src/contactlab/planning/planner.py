"""Stable disassembly sequences by depth-first search of the disassembly graph (loomis-balkcom §V).

Nodes are sub-assemblies, edges remove one block. A stable disassembly sequence is a path of
stable nodes from the full structure to the empty one. The search walks that graph from the
empty end, adding one block at a time (as the paper does: "since we add a single block at a
time, and only consider successors to stable nodes, we can use the complementary feasible
solution from any parent"): a node's parent is then a stable sub-structure of it, whose contact
forces solve a principal sub-problem of the node's LCP, which is what Theorem 1 needs to
warm-start Dantzig. The path found, read from the full structure down, is the removal order.

Search rules: blocks are tried lowest first (bottom edge, then x, then index); a block is a
candidate only when it touches the ground or the current sub-assembly (a block touching nothing
falls: no test is spent on it); a node found unstable, or stable without a stable way on to the
full structure, is remembered and never tested again. Before searching, the full structure is
checked by the statics LP (``precheck``): when it is unstable there is no sequence and the
search (which could otherwise enumerate every stable sub-assembly) is skipped. The precheck's
simplex iterations are reported apart (``precheck_pivots``), except for test ``lp``, where it
is the full node's own test and is counted once, in ``pivots``. ``time_s`` is the wall time of
the plan (contacts, precheck, search, tests), after the numba kernels are loaded.
"""
from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field

import numpy as np

from ..errors import ParamError
from .statics import NodeResult, StaticsModel, lp_feasible, make_test
from .blocks import Structure


@dataclass
class PlanResult:
    """The ``contactlab plan --json`` record (``as_json``) plus the per-test log ``tests``
    (size, pivots, major cycles, n, k, stable) for Fig. 6 and the Theorem 1 check."""
    structure: str
    blocks: int
    test: str
    stable: bool
    sequence: list
    nodes_visited: int
    pivots: int
    time_s: float
    precheck_pivots: int = 0
    tests: list = field(default_factory=list)

    def as_json(self) -> dict:
        return {"structure": self.structure, "blocks": self.blocks, "test": self.test, "stable": self.stable,
                "sequence": list(self.sequence), "nodes_visited": self.nodes_visited, "pivots": self.pivots,
                "time_s": self.time_s, "precheck_pivots": self.precheck_pivots}


def _load_kernels() -> None:
    """Load (or compile) the numba Dantzig kernels once per process, outside the timing."""
    from ..problems import LCP
    from ..solvers import solve
    M, q = np.array([[2.0, 1.0], [1.0, 2.0]]), np.array([-1.0, -1.0])
    sub = solve(LCP(M[:1, :1], q[:1]), method="dantzig")
    solve(LCP(M, q), method="dantzig", warm_start=([0], sub.z))


def plan(structure: Structure, test: str = "reuse", *, max_nodes: int = 200_000,
         model: StaticsModel | None = None, progress=None) -> PlanResult:
    """Find a stable disassembly sequence of ``structure`` with stability test ``test``
    (``lp``, ``dantzig`` or ``reuse``, see :mod:`contactlab.planning.statics`). Raises
    ParamError when more than ``max_nodes`` nodes would have to be tested. ``progress(nodes,
    size, n)``, when given, is called after each node's test with the nodes tested so far and the
    size of the sub-assembly just tested (of ``n`` blocks)."""
    if test in ("dantzig", "reuse"):
        _load_kernels()
    t0 = time.perf_counter()
    model = model or StaticsModel(structure)
    tester = make_test(test, model)
    n = structure.n
    order = np.lexsort((np.arange(n), structure.x, structure.y - structure.hh))
    full = np.ones(n, dtype=bool)
    ok, pre_its, _ = lp_feasible(model, full)
    res = PlanResult(structure.name, n, test, False, [], 0, 0, 0.0)
    if test == "lp":
        res.nodes_visited, res.pivots = 1, pre_its
        res.tests.append((n, pre_its, 0, model.contacts_of(full).size, 0, bool(ok)))
    else:
        res.precheck_pivots = pre_its
    if not ok:
        res.time_s = time.perf_counter() - t0
        return res
    dead: set[int] = set()
    in_s = np.zeros(n, dtype=bool)
    touching = np.zeros(n, dtype=np.int64)       # neighbours of each block in the sub-assembly
    removal: list = []

    def test_node(parent):
        if res.nodes_visited >= max_nodes:
            raise ParamError(f"plan {structure.name!r}: more than max_nodes = {max_nodes} nodes to test")
        r = tester(in_s, parent)
        res.nodes_visited += 1
        res.pivots += r.pivots
        res.tests.append((r.size, r.pivots, r.majors, r.n, r.k, r.stable))
        if progress is not None:
            progress(res.nodes_visited, int(r.size), n)
        return r

    def dfs(mask: int, size: int, parent: NodeResult | None) -> bool:
        if size == n:
            return True
        for b in order:
            if in_s[b] or not (model.grounded[b] or touching[b]):
                continue
            child = mask | (1 << int(b))
            if child in dead:
                continue
            in_s[b] = True
            for nb in model.neighbours[b]:
                touching[nb] += 1
            if size + 1 == n and test == "lp":
                r = NodeResult(True, 0)                 # the precheck tested this node
            else:
                r = test_node(parent)
            if r.stable and dfs(child, size + 1, r):
                removal.append(structure.ids[b])
                return True
            in_s[b] = False
            for nb in model.neighbours[b]:
                touching[nb] -= 1
            dead.add(child)
        return False

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 4 * n + 200))
    try:
        found = dfs(0, 0, None)
    finally:
        sys.setrecursionlimit(limit)
    res.stable = bool(found)
    res.sequence = removal if found else []
    res.time_s = time.perf_counter() - t0
    return res

"""Stable disassembly planning (loomis-balkcom §V): sequences checked by an independent statics
LP, a structure without a stable disassembly, agreement of the three stability tests on every
node, Theorem 1's n - k bound on every reuse solve, the `contactlab plan --json` contract."""
import itertools
import json

import numpy as np
import pytest
from scipy.optimize import linprog
from typer.testing import CliRunner

from contactlab.cli import app
from contactlab.planning import StaticsModel, make_structure, make_test, plan
from contactlab.planning import get_structure as _get

_CACHE = {}


def get_structure(spec):
    """Structures are deterministic (seeded): build each once per test session."""
    if spec not in _CACHE:
        _CACHE[spec] = _get(spec)
    return _CACHE[spec]


def equilibrium(blocks, present, g=9.81):
    """Independent statics check (not the planner's code): corners of the overlap of touching
    horizontal faces carry f >= 0 (frictionless, vertical); each present block's force and
    moment balance about its centre is an equality of scipy's linprog (HiGHS)."""
    B = [blocks[i] for i in present]
    cols, eq = [], np.zeros((3 * len(B), 0))
    for a, (xa, ya, wa, ha) in enumerate(B):
        supports = [(-1, (-np.inf, np.inf))] if abs(ya - ha / 2) < 1e-9 else []
        supports += [(b, (xb - wb / 2, xb + wb / 2)) for b, (xb, yb, wb, hb) in enumerate(B)
                     if abs(yb + hb / 2 - (ya - ha / 2)) < 1e-9]
        for b, (lo, hi) in supports:
            lo, hi = max(lo, xa - wa / 2), min(hi, xa + wa / 2)
            if hi - lo <= 1e-9:
                continue
            for px in (lo, hi):
                col = np.zeros(3 * len(B))
                col[3 * a + 1], col[3 * a + 2] = 1.0, px - xa        # up on a, moment about a's centre
                if b >= 0:
                    col[3 * b + 1], col[3 * b + 2] = -1.0, -(px - B[b][0])
                cols.append(col)
    A = np.array(cols).T if cols else np.zeros((3 * len(B), 0))
    rhs = np.zeros(3 * len(B))
    rhs[1::3] = [w * h * g for _, _, w, h in B]
    if A.shape[1] == 0:
        return False
    r = linprog(np.zeros(A.shape[1]), A_eq=A, b_eq=rhs, bounds=(0, None), method="highs")
    return r.status == 0


def block_list(s):
    return [(float(x), float(y), float(2 * w), float(2 * h)) for x, y, w, h in zip(s.x, s.y, s.hw, s.hh)]


def equilibrium3d(s, present, g=9.81):
    """Independent 3D statics check: vertical forces f >= 0 at the corners of the overlap of
    touching horizontal faces (and of a box's bottom with the ground); per present box, vertical
    force balance and the moments about its centre's x and z axes (linprog, HiGHS)."""
    B = list(present)
    cols = []
    for a_pos, a in enumerate(B):
        lo_a = np.array([s.x[a] - s.hw[a], s.zc[a] - s.hd[a]])
        hi_a = np.array([s.x[a] + s.hw[a], s.zc[a] + s.hd[a]])
        sup = [(-1, lo_a, hi_a)] if abs(s.y[a] - s.hh[a]) < 1e-9 else []
        for b_pos, b in enumerate(B):
            if abs(s.y[b] + s.hh[b] - (s.y[a] - s.hh[a])) < 1e-9:
                lo = np.maximum(lo_a, [s.x[b] - s.hw[b], s.zc[b] - s.hd[b]])
                hi = np.minimum(hi_a, [s.x[b] + s.hw[b], s.zc[b] + s.hd[b]])
                if np.all(hi - lo > 1e-9):
                    sup.append((b_pos, lo, hi))
        for b_pos, lo, hi in sup:
            for px in (lo[0], hi[0]):
                for pz in (lo[1], hi[1]):
                    col = np.zeros(3 * len(B))
                    # force (0, f, 0) at (px, pz): moment about the centre r x F = (-r_z f, 0, r_x f)
                    col[3 * a_pos:3 * a_pos + 3] = (1.0, -(pz - s.zc[a]), px - s.x[a])
                    if b_pos >= 0:
                        bb = B[b_pos]
                        col[3 * b_pos:3 * b_pos + 3] = (-1.0, pz - s.zc[bb], -(px - s.x[bb]))
                    cols.append(col)
    if not cols:
        return False
    rhs = np.zeros(3 * len(B))
    rhs[0::3] = [s.mass[i] * g for i in B]
    r = linprog(np.zeros(len(cols)), A_eq=np.array(cols).T, b_eq=rhs, bounds=(0, None), method="highs")
    return r.status == 0


@pytest.mark.parametrize("spec,test", [("random-10", "lp"), ("random-84", "reuse"), ("pyramid-91", "reuse"),
                                       ("column-50", "dantzig"), ("pyramid3d-14", "reuse"), ("pyramid3d-14", "lp"),
                                       ("random3d-30", "reuse")])
def test_sequence_stable_at_every_step(spec, test):
    s = get_structure(spec)
    r = plan(s, test)
    assert r.stable and sorted(r.sequence) == sorted(s.ids) and r.nodes_visited >= s.n
    check = (lambda left: equilibrium(block_list(s), left)) if s.dim == 2 else (lambda left: equilibrium3d(s, left))
    left = list(range(s.n))
    assert check(left)
    for b in r.sequence:
        left.remove(s.ids.index(b))
        if left:
            assert check(left), f"{spec}: unstable after removing {b}"


def test_random_structure_needs_a_lower_block_removed_first():
    """Fig. 7's remark: some block must go before a block resting on it (a lever motif); the
    planner's order has such an inversion, and removing the upper block first is unstable."""
    s = get_structure("random-84")
    r = plan(s, "lp")
    m = StaticsModel(s)
    pos = {b: k for k, b in enumerate(r.sequence)}
    inversions = [(a, b) for a, b in zip(m.body_a, m.body_b) if a >= 0 and pos[a] < pos[b]]
    assert inversions
    blocks = block_list(s)
    forced = [(a, b) for a, b in inversions
              if not equilibrium(blocks, [i for i in range(s.n) if i != b])]
    assert forced, "some upper block cannot be removed from the full structure before the block below it"


def lever():
    """Pillar P, plank L cantilevered off P, counterweight K on L's tail: stable as a whole, but
    removing K tips L, removing L drops K, removing P drops both."""
    return make_structure("lever", [(0.5, 0.5, 1.0, 1.0), (1.2, 1.1, 3.2, 0.2), (-0.1, 1.5, 0.6, 0.6)])


def offset3d():
    """3D boxes offset in x and z: some sub-assemblies tip about an edge, some about a corner."""
    return make_structure("offset3d", [(0, 0.25, 0, 1, 0.5, 1), (0.3, 0.75, 0.3, 1, 0.5, 1),
                                       (-0.2, 0.75, -0.65, 0.5, 0.5, 0.8), (0.7, 1.25, 0.2, 1, 0.5, 1)], dim=3)


@pytest.mark.parametrize("test", ["lp", "dantzig", "reuse"])
def test_no_stable_disassembly_reported(test):
    s = lever()
    blocks = block_list(s)
    assert equilibrium(blocks, [0, 1, 2])
    assert not any(equilibrium(blocks, [i for i in range(3) if i != b]) for b in range(3))
    r = plan(s, test)
    assert r.stable is False and r.sequence == []
    # an unstable whole: no sequence, found without searching
    tip = make_structure("tip", [(0.5, 0.5, 1.0, 1.0), (1.3, 1.25, 1.0, 0.5)])
    r = plan(tip, test)
    assert r.stable is False and r.sequence == [] and r.nodes_visited <= 1


@pytest.mark.parametrize("spec", ["random-8", "pyramid-6", "lever", "pyramid3d-5", "offset3d", "random3d-7"])
def test_three_tests_agree_on_every_node(spec):
    s = {"lever": lever, "offset3d": offset3d}.get(spec, lambda: get_structure(spec))()
    m = StaticsModel(s)
    tests = {name: make_test(name, m) for name in ("lp", "dantzig", "reuse")}
    blocks = block_list(s)
    indep = (lambda node: equilibrium(blocks, node)) if s.dim == 2 else (lambda node: equilibrium3d(s, node))
    stable_nodes = {}
    for size in range(1, s.n + 1):
        for node in itertools.combinations(range(s.n), size):
            in_s = np.zeros(s.n, dtype=bool)
            in_s[list(node)] = True
            a = tests["lp"](in_s, None).stable
            b = tests["dantzig"](in_s, None).stable
            parents = [stable_nodes[p] for p in itertools.combinations(node, size - 1) if p in stable_nodes]
            for parent in parents or [None]:
                c = tests["reuse"](in_s, parent)
                assert c.stable == a, (node, "reuse")
                if parent is not None:
                    assert c.k == parent.idx.size and c.majors <= c.n - c.k
            assert a == b == indep(list(node)), node
            if b:
                stable_nodes[node] = tests["dantzig"](in_s, None)


@pytest.mark.parametrize("spec", ["column-50", "column-80", "pyramid-91", "random-10", "random-84"])
def test_theorem1_bound_on_every_reuse_solve(spec):
    r = plan(get_structure(spec), "reuse")
    assert r.stable
    warm = [t for t in r.tests if t[4] > 0]
    assert len(warm) >= r.nodes_visited - 1
    for size, pivots, majors, n, k, stable in r.tests:
        assert majors <= n - k, (size, majors, n, k)


def test_plan_cli_json_contract(tmp_path):
    runner = CliRunner()
    out = runner.invoke(app, ["plan", "random-10", "--test", "lp", "--seed", "3", "--json"])
    assert out.exit_code == 0, out.output
    rec = json.loads(out.stdout)
    assert {"structure", "blocks", "test", "stable", "sequence", "nodes_visited", "pivots", "time_s"} <= set(rec)
    assert rec["structure"] == "random-10" and rec["blocks"] == 10 and rec["test"] == "lp" and rec["stable"]
    assert sorted(rec["sequence"]) == list(range(10))
    f = tmp_path / "lever.json"
    f.write_text(json.dumps(lever().to_dict()))
    rec = json.loads(runner.invoke(app, ["plan", str(f), "--test", "reuse", "--json"]).stdout)
    assert rec["stable"] is False and rec["sequence"] == []
    t = tmp_path / "two.toml"
    t.write_text('[[blocks]]\nid = "base"\nx = 0\ny = 0.5\nwidth = 2\nheight = 1\n'
                 '[[blocks]]\nid = "top"\nx = 0.3\ny = 1.25\nwidth = 1\nheight = 0.5\n')
    rec = json.loads(runner.invoke(app, ["plan", str(t), "--json"]).stdout)
    assert rec["stable"] and rec["sequence"] == ["top", "base"]
    bad = runner.invoke(app, ["plan", "column-5", "--test", "simplex"])
    assert bad.exit_code == 2 and "--test" in bad.output
    bad = runner.invoke(app, ["plan", "column-5", "--seed", "3"])
    assert bad.exit_code == 2 and "--seed" in bad.output
    # friction: the LP test takes it, the frictionless LCP tests refuse it by name
    t.write_text('mu = 0.5\n' + t.read_text())
    assert json.loads(runner.invoke(app, ["plan", str(t), "--test", "lp", "--json"]).stdout)["stable"]
    bad = runner.invoke(app, ["plan", str(t), "--test", "dantzig"])
    assert bad.exit_code == 2 and "mu" in bad.output and "lp" in bad.output


def test_lp_friction_holds_a_wedged_block():
    """A block wedged between two heavy pillars, nothing under it: it falls without friction
    and is held by friction (mu = 0.5: side forces of 0.5 g per face suffice, and the pillars'
    ground friction and weight resist them); the pillars alone stand either way."""
    from contactlab.planning import lp_feasible
    blocks = [(0.5, 1.0, 1.0, 2.0), (2.5, 1.0, 1.0, 2.0), (1.5, 1.25, 1.0, 0.5)]
    for mu, held in ((0.0, False), (0.5, True)):
        m = StaticsModel(make_structure("wedge", blocks, mu=mu))
        assert lp_feasible(m, np.ones(3, dtype=bool))[0] is held
        assert lp_feasible(m, np.array([True, True, False]))[0]


def test_plan_reports_progress_after_each_tested_sub_assembly():
    from contactlab.planning import get_structure, plan
    seen = []
    res = plan(get_structure("pyramid-15", None), "reuse", progress=lambda nodes, size, n: seen.append((nodes, size, n)))
    assert [s[0] for s in seen] == list(range(1, res.nodes_visited + 1))
    assert all(s[2] == 15 and 1 <= s[1] <= 15 for s in seen) and res.stable

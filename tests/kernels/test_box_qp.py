"""The compiled projected Newton of ``box-qp`` (kernels/box_qp.py) against the Python path it replaces
on dense problems (solvers/box_qp/ ``_solve(..., compiled=False)``) and against independent
references: the unique minimiser by exhaustive active-set enumeration, and the certified residual. Islands
(independent row groups): their labels from the rows' bodies (kernels/components.py
``row_block_components``) against scipy's connected components, and box-qp's island-by-island
solve (``_islands``, kernels/box_qp.py ``box_qp_islands``) against each island solved alone on
every path it takes, and in the simulator against the whole-problem solve."""
import itertools
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp

from contactlab.kernels.box_qp import (INTERIOR, SOLVED, _abs_terms, box_qp_dense, box_relative_error,
                                      new_factor_cache, no_groups)
from contactlab.problems import BoxedLCP
from contactlab.problems.residual import box_relative, relative_error, row_terms
from contactlab.solution import Status
from contactlab.solvers import solve
from contactlab.solvers.box_qp import BoxQPOptions, _solve
import contactlab.solvers.box_qp as BQ
from contactlab.kernels.components import row_block_components
from contactlab.scenarios import make_scene
from contactlab.sim import Simulator
from contactlab.sim.islands import island_labels
from scipy.sparse.csgraph import connected_components


def contact_problem(rng, nc, coupled, psd, cfm=1e-6):
    """A contact-like boxed LCP: rows (normal, friction, friction) per contact, M = J J' (+ cfm: SPD;
    PSD and singular with fewer columns than rows), friction bounds static or coupled to the normal."""
    n = 3 * nc
    m = max(1, n - 3) if psd else n + 3
    J = rng.normal(size=(n, m))
    M = J @ J.T
    if not psd:
        M += cfm * np.trace(M) / n * np.eye(n)
    q = rng.normal(size=n)
    q[::3] -= 0.5
    lo, hi = np.zeros(n), np.full(n, np.inf)
    fr = np.arange(n) % 3 != 0
    if coupled:
        fi = np.where(fr, np.arange(n) - np.arange(n) % 3, -1)
        return BoxedLCP(M, q, lo, hi, fi, np.full(n, 0.6))
    lo[fr] = -rng.uniform(0.1, 1.0, fr.sum())
    hi[fr] = -lo[fr]
    return BoxedLCP(M, q, lo, hi)


OPTIONS = [BoxQPOptions(), BoxQPOptions(algorithm="newton"),
           BoxQPOptions(small_n=0, newton_steps=2)]        # full steps only, then the interior point


@pytest.mark.parametrize("coupled", [False, True])
@pytest.mark.parametrize("psd", [False, True])
@pytest.mark.parametrize("opts", OPTIONS, ids=["auto", "newton", "full-steps"])
def test_compiled_path_matches_the_python_path(coupled, psd, opts):
    """Same status and z (to rounding) as the Python loop, on random SPD and singular PSD problems with
    static and friction-coupled bounds; the same Newton iterations and bound updates but where a
    rounding tie decides a held row (a free row within eps of its bound with w_i ~ 0: its sign is
    rounding) -- none on this set here, at most 10 % allowed for other BLAS builds."""
    rng = np.random.default_rng(7)
    same = 0
    for _ in range(30):
        p = contact_problem(rng, int(rng.integers(1, 15)), coupled, psd)
        a = _solve(p, opts, None)
        b = _solve(p, opts, None, compiled=False)
        assert a.status == b.status
        same += (a.iterations, a.info) == (b.iterations, b.info)
        if b.status == Status.SOLVED:
            assert np.abs(a.z - b.z).max() <= 1e-7 * max(1.0, np.abs(b.z).max())
            assert relative_error(p.relative_residuals(a.z)) <= opts.tol
    assert same >= 27


def test_warm_start_and_sparse_input_take_the_same_path():
    """A warm start, and a sparse M with n <= dense_max (densified for the kernel), give what the
    Python path gives."""
    rng = np.random.default_rng(3)
    opts = BoxQPOptions()
    for coupled in (False, True):
        p = contact_problem(rng, 10, coupled, False)
        z0 = np.abs(rng.normal(size=p.n)) * 0.1
        a, b = _solve(p, opts, z0), _solve(p, opts, z0, compiled=False)
        assert (a.status, a.iterations, a.info) == (b.status, b.iterations, b.info)
        assert np.abs(a.z - b.z).max() <= 1e-7 * max(1.0, np.abs(b.z).max())
        s = BoxedLCP(sp.csr_matrix(p.M), p.q, p.lo, p.hi, p.findex if coupled else None, p.mu if coupled else None)
        c, d = _solve(s, opts, z0), _solve(s, opts, z0, compiled=False)
        assert (c.status, c.iterations, c.info) == (a.status, a.iterations, a.info) == (d.status, d.iterations, d.info)
        assert np.abs(c.z - a.z).max() <= 1e-7 * max(1.0, np.abs(a.z).max())


def _enumerate(M, q, lo, hi):
    """The unique minimiser of a strictly convex box QP: each row at lo, at hi or free (M_FF z_F =
    -(q_F + M_FB z_B)), kept where z is inside the box and w = M z + q has the right sign per row."""
    n = q.size
    found = []
    for choice in itertools.product((0, 1, 2), repeat=n):
        c = np.array(choice)
        if np.any((c == 0) & ~np.isfinite(lo)) or np.any((c == 1) & ~np.isfinite(hi)):
            continue
        z = np.where(c == 0, lo, np.where(c == 1, hi, 0.0))
        F, B = np.flatnonzero(c == 2), np.flatnonzero(c != 2)
        if F.size:
            z[F] = np.linalg.solve(M[np.ix_(F, F)], -(q[F] + M[np.ix_(F, B)] @ z[B]))
        w = M @ z + q
        s = 1e-10 * (1.0 + np.abs(q).max() + np.abs(M).max() * np.abs(z).max())
        if (np.all(z >= lo - s) and np.all(z <= hi + s) and np.all(w[c == 0] >= -s) and np.all(w[c == 1] <= s)
                and np.all(np.abs(w[F]) <= s)):
            found.append(z)
    assert found
    return found[0]


def test_projected_newton_reaches_the_enumerated_minimiser():
    """Tiny strictly convex box QPs (one-sided, two-sided, free and fixed rows): the compiled Newton
    (through solve(), algorithm 'newton' and 'auto') lands on the minimiser found by enumeration."""
    rng = np.random.default_rng(5)
    for _ in range(40):
        n = int(rng.integers(1, 6))
        B = rng.normal(size=(n, n))
        M = B @ B.T + 0.05 * np.eye(n)
        q = rng.normal(size=n) * 2
        lo = np.where(rng.random(n) < 0.7, -rng.random(n), -np.inf)
        hi = np.where(rng.random(n) < 0.7, rng.random(n), np.inf)
        if n > 2:
            lo[0] = hi[0] = 0.2
        ref = _enumerate(M, q, lo, hi)
        for alg in ("newton", "auto"):
            sol = solve(BoxedLCP(M, q, lo, hi), "box-qp", algorithm=alg)
            assert sol.success
            assert np.abs(sol.z - ref).max() <= 1e-8 * max(1.0, np.abs(ref).max())


@pytest.mark.parametrize("sparse", [False, True])
def test_interior_point_from_a_warm_start_reaches_the_cold_minimiser(sparse):
    """The interior point started from a warm start near the answer (its relative residual below
    IPM_WARM_MAX) certifies the same minimiser of a strictly convex box QP as from its cold start,
    in fewer iterations; a warm start far from it (residual above IPM_WARM_MAX) is not used: the
    iterations are the cold start's."""
    from contactlab.solvers.box_qp import IPM_WARM_MAX
    rng = np.random.default_rng(21)
    fewer = 0
    for trial in range(12):
        n = 300
        J = sp.random(n, n // 2, density=0.05, random_state=trial, format="csr")
        M = (J @ J.T + 1e-2 * sp.identity(n)).tocsr()
        M = M if sparse else M.toarray()
        q = rng.normal(size=n)
        lo = np.where(rng.random(n) < 0.5, 0.0, -rng.uniform(0.1, 1.0, n))
        hi = np.where(lo == 0.0, np.inf, -lo)
        p = BoxedLCP(M, q, lo, hi)
        opts = dict(algorithm="ipm", dense_max=100)
        cold = solve(p, "box-qp", **opts)
        assert cold.success
        near = np.clip(cold.z + 1e-3 * rng.normal(size=n) * (1.0 + np.abs(cold.z)), lo, hi)
        far = np.clip(rng.normal(size=n) * 10.0, lo, hi)
        assert relative_error(box_relative(near, p.w(near), lo, hi, q, row_terms(p.M, near, q))) <= IPM_WARM_MAX
        assert relative_error(box_relative(far, p.w(far), lo, hi, q, row_terms(p.M, far, q))) > IPM_WARM_MAX
        warm = solve(p, "box-qp", warm_start=near, **opts)
        assert warm.success
        assert np.abs(warm.z - cold.z).max() <= 1e-5 * max(1.0, np.abs(cold.z).max())
        fewer += warm.iterations < cold.iterations
        assert solve(p, "box-qp", warm_start=far, **opts).iterations == cold.iterations
    assert fewer >= 10


def test_newton_reuses_the_cached_factor_of_a_block_that_barely_moved():
    """The compiled Newton's first step reuses the cached Cholesky factor when the free block moved by
    at most STALE (relative), with one refinement: a matrix perturbed by 1e-12 leaves the cache as it
    was (no factorisation) and certifies the same answer as a cold cache; one perturbed by 1e-6 is
    factorised again (the cache then holds its block); the same matrix again gives the same bits."""
    from contactlab.kernels.box_qp import STALE
    rng = np.random.default_rng(12)
    n = 40
    B = rng.normal(size=(n, n))
    M0 = B @ B.T + 1e-3 * np.eye(n)
    q = -np.abs(rng.normal(size=n))
    lo, hi = np.full(n, -np.inf), np.full(n, np.inf)        # every row free: one Newton step
    fi, mu = np.full(n, -1), np.zeros(n)
    opts = BoxQPOptions()

    def run(M, cache):
        return box_qp_dense(np.ascontiguousarray(M), q, lo, hi, fi, mu, np.zeros(n), opts.tol, opts.max_iterations,
                            opts.armijo, False, False, opts.max_outer, *cache)

    cache = new_factor_cache(n)
    first = run(M0, cache)
    assert first[0] == SOLVED and cache[3][0] == n
    held = cache[1].copy()
    again = run(M0, cache)
    assert np.array_equal(again[1], first[1])                       # the cached factor of the same block
    E = rng.normal(size=(n, n))
    for size, reused in ((1e-12, True), (1e-6, False)):
        M = M0 + size * np.abs(M0).max() * (E + E.T) / 2
        assert (size * 2 * np.abs(E).max() <= STALE) == reused
        got, cold = run(M, cache), run(M, new_factor_cache(n))
        assert got[0] == cold[0] == SOLVED
        assert np.abs(got[1] - cold[1]).max() <= 1e-8 * np.abs(cold[1]).max()
        assert np.array_equal(cache[1], held) == reused                 # reused: no new factorisation
        held = cache[1].copy()


def test_singular_free_block_falls_back_to_least_squares():
    """M_FF = [[1, 1], [1, 1]]: Cholesky fails at the second pivot and the Newton step is the
    least-squares (minimum-norm) solution z = (1/2, 1/2), in the kernel as in the Python path."""
    p = BoxedLCP(np.ones((2, 2)), [-1.0, -1.0], [0.0, 0.0], [10.0, 10.0])
    for compiled in (True, False):
        s = _solve(p, BoxQPOptions(algorithm="newton"), None, compiled=compiled)
        assert s.status == Status.SOLVED and s.iterations == 1
        np.testing.assert_allclose(s.z, [0.5, 0.5], rtol=1e-14)


def test_kernel_hands_the_interior_point_a_later_bound_update():
    """With full steps only, a coupled problem whose first bound update converges but a later one does
    not: the kernel stops at that update (INTERIOR, z its start) and _solve's interior point goes on from
    there exactly as the Python path does."""
    rng = np.random.default_rng(7)
    opts = BoxQPOptions(small_n=0, newton_steps=2)
    seen = 0
    for _ in range(40):
        p = contact_problem(rng, int(rng.integers(2, 15)), True, False)
        code, z, w, its, outer = box_qp_dense(np.ascontiguousarray(p.M), p.q, p.lo, p.hi, p.findex, p.mu,
                                              np.zeros(p.n), opts.tol, 2, opts.armijo, True, False, opts.max_outer,
                                              *new_factor_cache(p.n))
        if code == INTERIOR and outer > 1:
            seen += 1
            a, b = _solve(p, opts, None), _solve(p, opts, None, compiled=False)
            assert (a.status, a.iterations, a.info) == (b.status, b.iterations, b.info)
            assert np.abs(a.z - b.z).max() <= 1e-7 * max(1.0, np.abs(b.z).max())
        assert code in (SOLVED, INTERIOR)
    assert seen > 0


def test_residual_kernels_equal_the_residual_definition():
    """box_relative_error is relative_error(box_relative(...)) with either row terms (|q| + |w - q| and
    row_terms' |q| + |M||z|), z = 0 (units of the largest finite bound) and non-finite w included."""
    rng = np.random.default_rng(1)
    for k in range(60):
        n = int(rng.integers(1, 12))
        M = rng.normal(size=(n, n))
        q = rng.normal(size=n)
        lo = np.where(rng.random(n) < 0.6, -rng.random(n), -np.inf)
        hi = np.where(rng.random(n) < 0.6, rng.random(n), np.inf)
        z = np.clip(rng.normal(size=n), lo, hi) * (rng.random(n) < 0.7) * (k % 5 != 0)
        w = M @ z + q
        if k % 7 == 3:
            w[0] = np.nan
        work = np.empty((4, n))
        t1 = np.abs(q) + np.abs(w - q)
        t2 = np.empty(n)
        _abs_terms(np.ascontiguousarray(M), q, z, t2)
        np.testing.assert_allclose(t2, row_terms(M, z, q), rtol=1e-14)
        for t in (t1, t2):
            ref = relative_error(box_relative(z, w, lo, hi, q, t=t))
            got = box_relative_error(z, w, lo, hi, q, t, work)
            assert got == ref or abs(got - ref) <= 1e-14 * max(1.0, ref), (k, got, ref)


SCRIPT = r"""
import json, numpy as np
from contactlab.solvers import solve
from tests.kernels.test_box_qp import contact_problem
rng = np.random.default_rng(11)
out = {}
for s in range(6):
    p = contact_problem(rng, int(rng.integers(1, 8)), s % 2 == 0, s % 3 == 0)
    r = solve(p, "box-qp", algorithm="newton")
    out[s] = [r.status.name, r.iterations, r.z.tolist()]
print(json.dumps(out))
"""


def test_kernel_runs_as_plain_python():
    """DESIGN.md convention 7: the same statuses, iterations and answers with NUMBA_DISABLE_JIT=1."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    runs = []
    for flag in ("1", "0"):
        res = subprocess.run([sys.executable, "-c", SCRIPT], env=dict(os.environ, NUMBA_DISABLE_JIT=flag),
                             capture_output=True, text=True, timeout=600, cwd=root)
        assert res.returncode == 0, res.stderr
        runs.append(json.loads(res.stdout.strip().splitlines()[-1]))
    plain, jitted = runs
    assert plain.keys() == jitted.keys()
    for key in plain:
        assert plain[key][:2] == jitted[key][:2], key
        np.testing.assert_allclose(plain[key][2], jitted[key][2], atol=1e-12, err_msg=key)


# --- islands: labels from the rows' bodies, and box-qp solving a problem's islands apart ---

def test_row_block_components_match_scipy_on_random_row_matrices():
    """Rows joined by a shared 6-column block or a findex link: the same partition as scipy's
    connected components of the row-block graph, numbered in order of first row, with each row's
    columns sorted or shuffled."""
    rng = np.random.default_rng(3)
    for trial in range(40):
        n, nb = int(rng.integers(1, 60)), int(rng.integers(1, 30))
        rows, cols = [], []
        for i in range(n):
            for b in rng.choice(nb, size=int(rng.integers(0, min(nb, 2) + 1)), replace=False):   # 0-2 bodies a row
                for c in rng.choice(6, size=int(rng.integers(1, 4)), replace=False):
                    rows.append(i)
                    cols.append(6 * b + c)
        H = sp.csr_matrix((rng.normal(size=len(rows)), (rows, cols)), shape=(n, 6 * nb))
        H.sum_duplicates()
        if trial % 2:           # any column order within a row: each row's entries shuffled
            for i in range(n):
                a, b = H.indptr[i], H.indptr[i + 1]
                perm = a + rng.permutation(b - a)
                H.indices[a:b], H.data[a:b] = H.indices[perm].copy(), H.data[perm].copy()
            H.has_sorted_indices = False
        findex = np.full(n, -1, dtype=np.int64)
        linked = rng.random(n) < 0.3
        findex[linked] = rng.integers(0, n, size=int(linked.sum()))
        count, labels = row_block_components(H.indptr, H.indices, findex, 6)
        # the reference: rows and blocks as nodes of one graph
        block_of = H.indices // 6
        row_of = np.repeat(np.arange(n), np.diff(H.indptr))
        links = np.flatnonzero(findex >= 0)
        G = sp.coo_matrix((np.ones(row_of.size + links.size),
                           (np.concatenate([row_of, links]), np.concatenate([n + block_of, findex[links]]))),
                          shape=(n + nb, n + nb))
        _, ref = connected_components(G, directed=False)
        ref = ref[:n]
        assert count == np.unique(ref).size
        assert np.array_equal(labels[np.argsort(labels, kind="stable")], np.sort(labels))
        # the same partition: label pairs correspond one to one, numbered by first row
        assert len(set(zip(labels.tolist(), ref.tolist()))) == count
        first = [int(np.flatnonzero(labels == k)[0]) for k in range(count)]
        assert first == sorted(first)


def block_problem(rng, blocks):
    """A block-diagonal sparse boxed LCP of random contact problems (tests/kernels/test_box_qp.py), one
    island each, with its islands set as a model sets them; and the blocks."""
    parts = [contact_problem(rng, nc, coupled, psd=False) for nc, coupled in blocks]
    M = sp.block_diag([p.M for p in parts], format="csr")
    M.sort_indices()
    offs = np.cumsum([0] + [p.n for p in parts])
    fi = np.concatenate([np.where(p.findex >= 0, p.findex + o, -1) for p, o in zip(parts, offs)])
    mu = np.concatenate([p.mu for p in parts])
    P = BoxedLCP(M, np.concatenate([p.q for p in parts]), np.concatenate([p.lo for p in parts]),
                 np.concatenate([p.hi for p in parts]), fi, mu)
    P.islands = (len(parts), np.repeat(np.arange(len(parts)), [p.n for p in parts]))
    return P, parts, offs


@pytest.mark.parametrize("options", [{}, {"max_iterations": 1}, {"island_iterations": 1},
                                     {"island_poor_iterations": 1}, {"dense_max": 20},
                                     {"small_n": 10}, {"island_search_max": 10, "newton_steps": 0}],
                         ids=["compiled-newton", "interior-point-after-newton", "island-budget-one-step",
                              "poor-start-budget-one-step", "large-islands-sparse",
                              "islands-above-small_n-whole-method", "islands-above-island_search_max-ipm"])
def test_islands_are_solved_as_each_island_alone(options, monkeypatch):
    """A block-diagonal problem with its islands: SOLVED, each island's z the one box-qp finds for that
    island alone (SPD blocks: one minimiser), on the compiled Newton path, with Newton cut to one
    step (the interior point takes over on the islands it leaves) and with islands above dense_max
    (their sliced sparse blocks through the whole method) or above small_n (the whole method, full
    Newton steps then the interior point, on their dense blocks), and with the compiled call's islands
    above island_search_max given newton_steps (here 0) full steps, then one interior point on the
    union of the islands it leaves. The islands are the problem's own labels (island_labels on the
    matrix agrees)."""
    rng = np.random.default_rng(11)
    P, parts, offs = block_problem(rng, [(2, True), (5, False), (9, True), (1, False), (12, True), (4, True)])
    assert island_labels(P)[0] == len(parts) and np.array_equal(island_labels(P)[1], P.islands[1])
    calls = []
    original = BQ._python_path
    monkeypatch.setattr(BQ.solver, "_python_path", lambda *a: calls.append(a[4][0]) or original(*a))
    sol = solve(P, "box-qp", **options)
    assert sol.status is Status.SOLVED and sol.relative_residual <= 1e-6
    assert sol.info["islands"] == len(parts)
    if 1 in (options.get("max_iterations"), options.get("island_iterations"), options.get("island_poor_iterations")):
        assert "ipm" in calls       # some island's Newton gave up and the interior point went on
    if "island_search_max" in options:      # the four islands of more than 10 rows: no Newton step,
        assert calls == ["ipm"]             # one interior point on their union
    for p, a, b in zip(parts, offs[:-1], offs[1:]):
        alone = solve(p, "box-qp", algorithm="ipm", tol=1e-9)
        assert alone.success
        assert np.allclose(sol.z[a:b], alone.z, rtol=1e-5, atol=1e-6 * np.abs(alone.z).max())
    whole = solve(P, "box-qp", islands=False)
    assert whole.success and "islands" not in whole.info


def test_newton_only_islands_report_max_iterations_when_an_island_does_not_settle():
    """algorithm="newton" with one step: an island whose answer needs more is UNSETTLED, so the
    whole answer is MAX_ITERATIONS (never SOLVED), and its residual says so."""
    rng = np.random.default_rng(5)
    P, parts, _ = block_problem(rng, [(6, False), (8, False), (7, False)])
    one_step = [solve(p, "box-qp", algorithm="newton", max_iterations=1) for p in parts]
    assert not all(s.success for s in one_step)         # this data: some island needs more than one step
    sol = solve(P, "box-qp", algorithm="newton", max_iterations=1)
    assert sol.status is Status.MAX_ITERATIONS and sol.relative_residual > 1e-6
    # Newton alone has no interior point to hand over to: its islands keep max_iterations, whatever
    # island_iterations says (the "auto" islands' budget before the interior point)
    full = solve(P, "box-qp", algorithm="newton", island_iterations=1)
    assert full.status is Status.SOLVED and full.relative_residual <= 1e-6 and full.iterations > len(parts)


def test_simulator_islands_give_the_whole_problems_motion():
    """Six separate 4-box stacks (288 rows: sparse, friction-coupled bounds): the model's islands,
    solved apart, move the boxes as the whole-problem solve does; a 50-box pile (25 columns of two)
    certifies every step solved island by island."""
    scene = lambda: make_scene("stack", count=4, columns=6)
    a = Simulator(scene(), "box-friction", "box-qp")
    b = Simulator(scene(), "box-friction", "box-qp", solver_options={"islands": False})
    for sim in (a, b):      # box-qp every step (not the warm start certified without it, most steps here)
        sim.stages.warm_start_certify = False
    for _ in range(30):
        ra, rb = a.step(), b.step()
        assert ra.success and rb.success
        assert a.last_solution.info["islands"] == 6 and "islands" not in b.last_solution.info
    p = a.last_problem                  # the model's labels (bodies of the rows) = the matrix's components
    assert p.islands[0] == 6 and np.array_equal(p.islands[1], island_labels(p)[1])
    assert np.abs(a.data.position - b.data.position).max() <= 1e-9
    pile = Simulator(make_scene("pile", count=50), "box-friction", "box-qp", model_options={"coupling": "previous"})
    for _ in range(60):
        assert pile.step().success
    assert pile.last_solution.info["islands"] == 25 and pile.last_solution.relative_residual <= 1e-6


def test_centrality_correctors_keep_the_answer_and_save_iterations(monkeypatch):
    """The interior point with Gondzio's centrality correctors (CENTRALITY_CORRECTORS = 2) against
    Mehrotra's predictor-corrector alone (0) on random SPD contact problems, static and coupled
    bounds, sparse (above dense_max) and dense: both certify every problem, the answers agree (one
    minimiser per bound update), and the correctors take fewer iterations in all (this data: 679
    -> 645; recorded 500-box pile steps of 4,600-7,500 rows: 112 -> 88)."""
    rng = np.random.default_rng(21)
    problems = []
    for k in range(16):
        p = contact_problem(rng, int(rng.integers(3, 25)), coupled=bool(k % 2), psd=False)
        if k % 4 == 0:
            p = BoxedLCP(sp.csr_matrix(p.M), p.q, p.lo, p.hi, p.findex if p.has_coupling else None,
                         p.mu if p.has_coupling else None)
        problems.append(p)
    its = {}
    answers = {}
    for K in (0, 2):
        monkeypatch.setattr(BQ.interior_point, "CENTRALITY_CORRECTORS", K)
        sols = [solve(p, "box-qp", algorithm="ipm", dense_max=10) for p in problems]
        assert all(s.status is Status.SOLVED for s in sols)
        its[K] = sum(s.iterations for s in sols)
        answers[K] = sols
    for a, b in zip(answers[0], answers[2]):
        assert np.allclose(a.z, b.z, rtol=1e-5, atol=1e-6 * max(np.abs(a.z).max(), 1e-300))
    assert its[2] < its[0]


def test_wrong_island_labels_are_never_certified():
    """Labels that split rows M couples (a builder's bug): box-qp solves the blocks apart, and
    solve()'s certification, computed on the whole problem, refuses the answer (no false SOLVED)."""
    rng = np.random.default_rng(4)
    p = contact_problem(rng, 8, coupled=False, psd=False)
    P = BoxedLCP(sp.csr_matrix(p.M), p.q, p.lo, p.hi)
    P.islands = (2, (np.arange(P.n) >= P.n // 2).astype(np.int64))
    whole = solve(P, "box-qp", islands=False)
    assert whole.status is Status.SOLVED
    split = solve(P, "box-qp")
    assert split.info.get("islands") == 2 and split.info.get("claimed_status") == "SOLVED"
    assert split.status is Status.NUMERICAL_FAILURE and split.relative_residual > 1e-6


def test_cholmod_and_qdldl_factorisations_reach_the_same_minimiser(monkeypatch):
    """box-qp's sparse factorisations through CHOLMOD (forced here from 0 rows) and through QDLDL
    certify the same minimiser of strictly convex box QPs, by the interior point and by projected
    Newton, cold and warm; the pattern cache holds CHOLMOD factors when forced."""
    rng = np.random.default_rng(33)
    for trial in range(4):
        n = 400
        J = sp.random(n, n // 2, density=0.04, random_state=100 + trial, format="csr")
        M = (J @ J.T + 1e-2 * sp.identity(n)).tocsr()
        q = rng.normal(size=n)
        lo = np.where(rng.random(n) < 0.5, 0.0, -rng.uniform(0.1, 1.0, n))
        hi = np.where(lo == 0.0, np.inf, -lo)
        p = BoxedLCP(M, q, lo, hi)
        for algorithm in ("ipm", "auto", "newton"):
            opts = dict(algorithm=algorithm, dense_max=50)
            answers = []
            for cholmod_min in (10 ** 9, 0):
                monkeypatch.setattr(BQ.factors, "CHOLMOD_MIN", cholmod_min)
                BQ._LDL.entries.clear()
                sol = solve(p, "box-qp", **opts)
                assert sol.success, (trial, algorithm, cholmod_min, sol.status)
                kinds = {type(e[2]) for e in BQ._LDL.entries.values()}
                assert kinds == ({BQ._CholmodFactor} if cholmod_min == 0 else {BQ._QDLDLFactor}), kinds
                answers.append(sol.z)
            assert np.abs(answers[0] - answers[1]).max() <= 1e-5 * max(1.0, np.abs(answers[0]).max())
    monkeypatch.undo()
    BQ._LDL.entries.clear()


@pytest.mark.parametrize("algorithm", ["ipm", "auto", "newton"])
def test_islands_whose_answer_is_zero_are_solved_by_every_algorithm(algorithm):
    """A sparse problem with islands, some of them separating contacts (z = 0 solves them: q >= 0 on
    their normals, their friction rows boxed to 0): box-qp certifies the whole problem with every
    algorithm. The interior point alone never reaches z = 0 exactly, and the scale-free residual
    measures z in units of max|z|, so such an island was reported MAX_ITERATIONS (residual ~1)."""
    rng = np.random.default_rng(8)
    blocks, qs, los, his = [], [], [], []
    for k in range(4):
        m = 3 * (k + 1)
        J = rng.normal(size=(m, m))
        blocks.append(J @ J.T + 0.5 * np.eye(m))
        trivial = k % 2 == 1
        q = np.abs(rng.normal(size=m)) + 0.5 if trivial else rng.normal(size=m)
        lo = np.zeros(m)
        hi = np.where(np.arange(m) < m // 3, np.inf, 0.0) if trivial else np.full(m, np.inf)
        qs.append(q), los.append(lo), his.append(hi)
    M = sp.block_diag(blocks, format="csr")
    labels = np.concatenate([np.full(b.shape[0], k, dtype=np.int64) for k, b in enumerate(blocks)])
    p = BoxedLCP(M, np.concatenate(qs), np.concatenate(los), np.concatenate(his))
    p.islands = (len(blocks), labels)
    sol = solve(p, "box-qp", algorithm=algorithm, dense_max=2, small_n=2)
    assert sol.success and sol.relative_residual <= 1e-7, (sol.status, sol.relative_residual)
    off = 0
    for k, b in enumerate(blocks):
        if k % 2 == 1:
            assert np.all(sol.z[off:off + b.shape[0]] == 0.0)
        off += b.shape[0]


# --- islands factorised block by block over their body-pair groups (kernels/box_qp.py island_groups) ---

def _stacked_columns_problem(count=8, columns=3, steps=20):
    sim = Simulator(make_scene("stack", count=count, columns=columns), "box-friction", "box-qp")
    for _ in range(steps):
        assert sim.step().success
    return sim.last_system, sim.last_problem


def test_body_pair_groups_are_the_rows_first_and_last_body():
    sys_, p = _stacked_columns_problem()
    H = sys_.NST
    assert sp.issparse(p.M) and p.body_groups.shape == (p.n,)
    keys = [(H.indices[H.indptr[r]] // 6, H.indices[H.indptr[r + 1] - 1] // 6) for r in range(H.shape[0])]
    ids = {}
    expected = np.array([ids.setdefault(k, len(ids)) for k in keys])
    # the same partition of the rows (numbering aside)
    assert len(set(zip(expected, p.body_groups))) == len(ids) == p.body_groups.max() + 1


def _island_structures(p, label):
    """Per island of p: (idx, the island's CSR block (ptr, idx, val), island_groups' structure, the dense block)."""
    from contactlab.kernels.box_qp import csr_sub_block, island_groups
    from contactlab.problems.islands import island_rows
    M = p.M.tocsr()
    ip, ii = M.indptr.astype(np.int64), M.indices.astype(np.int64)
    order, bounds = island_rows(*p.islands)
    at = np.full(p.n, -1, dtype=np.int64)
    scratch = np.full(label.max() + 1, -1, dtype=np.int64)
    for k in range(bounds.size - 1):
        idx = np.sort(order[bounds[k]:bounds[k + 1]])
        at[idx] = np.arange(idx.size)
        groups = island_groups(ip, ii, idx, at, label, scratch)
        at[idx] = -1
        assert np.all(scratch == -1) and sorted(groups[1]) == list(range(groups[1].size))
        val, sidx, sptr = csr_sub_block(ip, ii, M.data, idx, p.n)
        yield idx, (sptr, sidx, val), groups, M[idx][:, idx].toarray()


def test_grouped_newton_solves_are_the_dense_solves():
    """On each island of stacked columns (8 body pairs of 12 rows, a path), the block Cholesky over
    the groups, on the dense block (``_grouped_solve``) and on the island's CSR block in panels
    (``_panel_solve``), solves M_FF x = r for random free sets to the backward error of a dense
    solve; the groups' order is the minimum-degree order of kernels/dense.py's dense version."""
    from contactlab.kernels.box_qp import _grouped_solve, _panel_solve
    from contactlab.kernels.dense import elimination_steps
    _, p = _stacked_columns_problem()
    rng = np.random.default_rng(4)
    checked = 0
    for idx, (sptr, sidx, val), (grp, gstep, nbr, nnb), A in _island_structures(p, p.body_groups):
        G = gstep.size
        gstart = np.concatenate([[0], np.cumsum(np.bincount(grp, minlength=G))])
        adj = np.zeros((G, G), dtype=np.bool_)
        for i, j in zip(*np.nonzero(A)):
            adj[grp[i], grp[j]] = grp[i] != grp[j]
        _, step_of, nbr_d, nnb_d = elimination_steps(gstart, adj)
        assert np.array_equal(step_of, gstep) and np.array_equal(nnb_d, nnb)
        assert all(np.array_equal(nbr_d[s, :nnb[s]], nbr[s, :nnb[s]]) for s in range(G))
        for _ in range(5):
            F = np.flatnonzero(rng.random(idx.size) < 0.8)
            r = rng.normal(size=F.size)
            AF = A[np.ix_(F, F)]
            ref = np.linalg.solve(AF, r)
            for ok, x in (_grouped_solve(A, F, F.size, r, grp, gstep, nbr, nnb),
                          _panel_solve(sptr, sidx, val, F, F.size, r, grp, gstep, nbr, nnb)):
                assert ok
                scale = np.abs(AF).max() * np.abs(x).max()
                assert np.abs(AF @ x - r).max() <= 1e-9 * scale
                assert np.abs(AF @ ref - r).max() <= 1e-9 * scale
            checked += 1
    assert checked >= 15


def test_panel_solves_take_islands_of_many_groups():
    """An island of a group per row (more groups than the dense ordering took: fill between the
    rows of a body pair's contacts) and islands of 120 body pairs, columns: the panels solve
    M_FF x = r as a dense solve does, and report a matrix that is not positive definite."""
    from contactlab.kernels.box_qp import _panel_solve
    rng = np.random.default_rng(6)
    for count, columns, per_row in ((10, 2, True), (120, 2, False)):
        _, p = _stacked_columns_problem(count=count, columns=columns, steps=5)
        label = np.arange(p.n, dtype=np.int64) if per_row else p.body_groups
        for idx, (sptr, sidx, val), (grp, gstep, nbr, nnb), A in _island_structures(p, label):
            assert gstep.size > 96
            F = np.flatnonzero(rng.random(idx.size) < 0.7)
            r = rng.normal(size=F.size)
            AF = A[np.ix_(F, F)]
            ok, x = _panel_solve(sptr, sidx, val, F, F.size, r, grp, gstep, nbr, nnb)
            assert ok
            assert np.abs(AF @ x - r).max() <= 1e-9 * np.abs(AF).max() * np.abs(x).max()
            bad = val.copy()
            bad[sidx == np.repeat(np.arange(idx.size), np.diff(sptr))] *= -1.0     # negative diagonal
            assert not _panel_solve(sptr, sidx, bad, F, F.size, r, grp, gstep, nbr, nnb)[0]


def test_grouped_islands_reach_the_dense_islands_minimiser():
    """box-qp on the stacked columns with the islands' Newton steps factorised by groups (default) and
    densely (grouped_max=0): both certified, the same minimiser (SPD: unique)."""
    _, p = _stacked_columns_problem(count=10, columns=4)
    grouped = solve(p, "box-qp")
    dense = solve(p, "box-qp", grouped_max=0)
    assert grouped.status is Status.SOLVED and dense.status is Status.SOLVED
    assert grouped.info["islands"] == dense.info["islands"] == 4
    assert np.allclose(grouped.z, dense.z, rtol=1e-5, atol=1e-6 * np.abs(dense.z).max())


def test_box_qp_refuses_an_island_budget_below_one_step():
    from contactlab.errors import ParamError
    P, _, _ = block_problem(np.random.default_rng(5), [(3, False), (4, True)])
    with pytest.raises(ParamError, match="island_iterations"):
        solve(P, "box-qp", island_iterations=0)
    with pytest.raises(ParamError, match="island_poor_iterations"):
        solve(P, "box-qp", island_poor_iterations=0)


def test_a_poor_start_gets_the_poor_budget_and_a_good_one_the_full_budget(monkeypatch):
    """box_qp_islands (kernels/box_qp.py projected_newton): from z = 0 (relative error above
    IPM_WARM_MAX) each island gets island_poor_iterations Newton steps, then the interior point; from
    a start near its answer, island_iterations (it lands). Both certify the same minimiser."""
    rng = np.random.default_rng(5)
    P, parts, _ = block_problem(rng, [(9, False), (12, False)])
    for p in parts:         # each island's Newton alone needs more than one step from z = 0
        assert solve(p, "box-qp", algorithm="newton").iterations > 1
    ref = solve(P, "box-qp", algorithm="ipm", tol=1e-12, islands=False)
    seen = []
    original = BQ._python_path
    monkeypatch.setattr(BQ.solver, "_python_path", lambda *a: seen.append(a[3][0]) or original(*a))
    cold = solve(P, "box-qp", island_poor_iterations=1)
    assert ref.success and cold.success
    assert np.allclose(cold.z, ref.z, rtol=1e-5, atol=1e-6 * np.abs(ref.z).max())
    assert seen == [2]      # one Newton step per island (2 counted), then one interior point on both
    seen.clear()
    warm = ref.z * (1 + 1e-7 * rng.normal(size=ref.z.size))
    good = solve(P, "box-qp", island_poor_iterations=1, warm_start=warm)
    assert good.success and not seen        # a good start: Newton lands, no interior point


def test_dense_islands_factorise_island_by_island_to_the_dense_minimiser():
    """A dense block-diagonal problem carrying its islands (as box friction's dense build sets them):
    box-qp's compiled Newton factorises its systems island by island (kernels/box_qp.py
    ``island_blocks``, no dense Cholesky of the whole free block) and reaches the minimiser the
    dense factorisation reaches (SPD: unique), certified, in as many Newton steps; one island is the
    dense path itself."""
    import contactlab.kernels.box_qp as KQ
    rng = np.random.default_rng(21)
    for blocks in ([(3, False), (2, True), (4, False)], [(1, False)] * 6, [(5, True)]):
        P, parts, offs = block_problem(rng, blocks)
        dense_M = P.M.toarray()
        with_islands = BoxedLCP(dense_M, P.q, P.lo, P.hi, P.findex, P.mu)
        with_islands.islands = P.islands
        plain = BoxedLCP(dense_M, P.q, P.lo, P.hi, P.findex, P.mu)
        cache = BQ._dense_factors(P.n)                      # the factor cache of problems of this size
        cache[3][0] = -1                                    # no factor: a dense solve sets its rows, a block solve 0
        a = solve(with_islands, "box-qp", algorithm="newton")
        grouped = cache[3][0] == 0
        b = solve(plain, "box-qp", algorithm="newton")
        assert cache[3][0] > 0                              # the dense solve cached its factor
        assert grouped == (len(blocks) > 1)
        assert a.status is Status.SOLVED and b.status is Status.SOLVED
        assert a.iterations == b.iterations
        assert np.abs(a.z - b.z).max() <= 1e-9 * max(1.0, np.abs(b.z).max())
        grp, gstep, nbr, nnb = KQ.island_blocks(*P.islands)
        if len(blocks) == 1:
            assert grp.size == 0                            # one island: the dense factorisation
        else:
            assert np.array_equal(grp, P.islands[1]) and np.array_equal(gstep, np.arange(len(blocks)))
            assert nbr.shape == (len(blocks), 0) and not nnb.any()
        for k, part in enumerate(parts):                   # each island's z is that island's own minimiser
            alone = solve(part, "box-qp", algorithm="newton")
            assert np.abs(a.z[offs[k]:offs[k + 1]] - alone.z).max() <= 1e-7 * max(1.0, np.abs(alone.z).max())


def test_box_friction_dense_problems_carry_the_islands_of_their_matrix():
    """The dense problem of a falling 10-box pile (the general path's build) carries islands
    (box_friction.py ``row_islands``) whose partition is that of scipy's connected components of the
    matrix's pattern, at every step."""
    sim = Simulator(make_scene("pile", count=10), "box-friction", "box-qp", model_options={"coupling": "previous"},
                    compiled=False)
    seen = 0
    for _ in range(60):
        sim.step()
        p = sim.last_problem
        if p is None or p.n == 0 or sp.issparse(p.M):
            continue
        count, label = p.islands
        ref_count, ref = connected_components(sp.csr_matrix(p.M != 0.0), directed=False)
        assert count == ref_count
        pairs = set(zip(label.tolist(), ref.tolist()))
        assert len(pairs) == count                         # the same partition, label for label
        seen += count > 1
    assert seen >= 10


def test_dense_island_labels_that_are_wrong_or_not_labels_are_never_certified_falsely():
    """A dense problem whose islands split rows M couples: Newton systems factorised on the wrong
    blocks do not converge, and the answer is refused (projected Newton alone: MAX_ITERATIONS at the
    residual it reached, certified on the whole M), while the default method's interior point then
    certifies the whole problem's minimiser; labels out of range, of the wrong size or type fall back
    to the dense factorisation: the minimiser in as many Newton steps."""
    rng = np.random.default_rng(4)
    p = contact_problem(rng, 8, coupled=False, psd=False)
    ref = solve(p, "box-qp", algorithm="newton")
    assert ref.status is Status.SOLVED

    def with_islands(islands):
        P = BoxedLCP(p.M.copy(), p.q, p.lo, p.hi)
        P.islands = islands
        return P

    split = with_islands((2, (np.arange(p.n) >= p.n // 2).astype(np.int64)))
    newton = solve(split, "box-qp", algorithm="newton")
    assert newton.status is Status.MAX_ITERATIONS and newton.relative_residual > 1e-6
    auto = solve(split, "box-qp")
    assert auto.status is Status.SOLVED
    assert np.abs(auto.z - ref.z).max() <= 1e-6 * max(1.0, np.abs(ref.z).max())
    for islands in ((2, np.full(p.n, 5)), (3, np.zeros(p.n - 1, dtype=np.int64)), (2, np.linspace(0, 1, p.n))):
        got = solve(with_islands(islands), "box-qp", algorithm="newton")
        assert got.status is Status.SOLVED and got.iterations == ref.iterations
        assert np.abs(got.z - ref.z).max() <= 1e-12 * max(1.0, np.abs(ref.z).max())


def test_a_large_island_from_a_poor_start_is_left_to_the_whole_method():
    """box_qp_islands gives an island above POOR_LEFT_FROM rows whose start is poor POOR_LEFT_STEPS Newton
    steps (on its CSR block, the face step tried first; one where the first does not cut the error below
    POOR_PROGRESS of the start's) and, where they do not certify it, leaves it untouched (LEFT: the whole
    method takes it): from impulses five (and 10^6) times too large with friction at the cone's edge,
    alternately the wrong way. From
    z = 0 (poor by the scale-free measure, yet every row free: one Newton step is the answer) and from
    a good start it solves the island itself (SOLVED, on its CSR block); box-qp certifies the same
    minimiser (SPD: unique) either way, and as the interior point alone."""
    from contactlab.kernels.box_qp import LEFT
    from contactlab.kernels.box_qp_islands import POOR_LEFT_FROM, POOR_LEFT_STEPS, box_qp_islands, new_island_layouts
    from contactlab.problems.islands import island_rows
    from contactlab.solvers.box_qp.interior_point import IPM_WARM_MAX
    _, p = _stacked_columns_problem(count=60, columns=2, steps=5)
    ref = solve(p, "box-qp", algorithm="ipm", tol=1e-12)
    order, bounds = island_rows(*p.islands)
    assert np.diff(bounds).min() > POOR_LEFT_FROM and ref.success
    M = p.M.tocsr()
    opts = BQ.BoxQPOptions()
    normal = p.findex < 0
    wrong = ref.z * 5
    wrong[~normal] = np.where(np.arange(p.n)[~normal] % 2, 1.0, -1.0) * p.mu[~normal] * wrong[p.findex[~normal]]
    for start, expected in ((wrong, {LEFT}), (wrong * 1e6, {LEFT}), (np.zeros(p.n), {SOLVED}), (ref.z.copy(), {SOLVED})):
        z, w = np.full(p.n, np.nan), np.empty(p.n)
        codes, its, outers = (np.zeros(bounds.size - 1, dtype=np.int64) for _ in range(3))
        box_qp_islands(M.indptr.astype(np.int64), M.indices.astype(np.int64), M.data, p.q, p.lo, p.hi, p.findex,
                       p.mu, start, order, bounds, opts.tol, 20, opts.armijo, False, opts.max_outer, z, w, codes,
                       its, outers, p.body_groups, 64, p.n, opts.newton_steps, 8, IPM_WARM_MAX,
                       *new_island_layouts())
        assert set(codes.tolist()) == expected
        assert np.all(np.isnan(z)) if expected == {LEFT} else np.allclose(z, ref.z, atol=1e-6 * np.abs(ref.z).max())
        if expected == {LEFT}:      # the Newton steps it was given: POOR_LEFT_STEPS where the first gains
            # (5x the impulses), one where it does not (10^6 x: the scale-free error stays 1, POOR_PROGRESS)
            assert np.all(its == (POOR_LEFT_STEPS if start is wrong else 1))
    cold = solve(p, "box-qp")
    assert cold.success and np.allclose(cold.z, ref.z, rtol=1e-5, atol=1e-6 * np.abs(ref.z).max())


def test_csr_islands_from_a_good_start_land_on_the_interior_points_minimiser():
    """box_qp_islands on the 720-row islands of two 60-box columns (CSR blocks, where projected Newton
    tries the face step first, kernels/box_qp.py ``_face_step``) from the answer perturbed by 1 % (a
    good start: its error below IPM_WARM_MAX): SOLVED in the compiled call within a few Newton steps,
    at the interior point's minimiser alone (SPD: unique); and box-qp certifies it from there."""
    from contactlab.kernels.box_qp_islands import CSR_FROM, box_qp_islands, new_island_layouts
    from contactlab.problems.islands import island_rows
    from contactlab.solvers.box_qp.interior_point import IPM_WARM_MAX
    opts = BQ.BoxQPOptions()
    _, p = _stacked_columns_problem(count=60, columns=2, steps=5)
    ref = solve(p, "box-qp", algorithm="ipm", tol=1e-12)
    order, bounds = island_rows(*p.islands)
    assert np.diff(bounds).min() > CSR_FROM and ref.success
    scale = np.abs(ref.z).max()
    start = ref.z * (1.0 + 1e-2 * np.where(np.arange(p.n) % 2, 1.0, -1.0))
    assert BQ.solver._certified(p.M, p.q, *p.bounds(start), start, np.empty(p.n), np.empty((5, p.n)))[1] <= IPM_WARM_MAX
    M = p.M.tocsr()
    z, w = np.full(p.n, np.nan), np.empty(p.n)
    codes, its, outers = (np.zeros(bounds.size - 1, dtype=np.int64) for _ in range(3))
    box_qp_islands(M.indptr.astype(np.int64), M.indices.astype(np.int64), M.data, p.q, p.lo, p.hi, p.findex,
                   p.mu, start, order, bounds, opts.tol, 20, opts.armijo, False, opts.max_outer, z, w, codes,
                   its, outers, p.body_groups, 64, p.n, opts.newton_steps, 8, IPM_WARM_MAX, *new_island_layouts())
    assert np.all(codes == SOLVED) and np.all(its <= 3 * outers)
    assert np.allclose(z, ref.z, rtol=1e-5, atol=1e-6 * scale)
    sol = solve(p, "box-qp", warm_start=start)
    assert sol.success and np.allclose(sol.z, ref.z, rtol=1e-5, atol=1e-6 * scale)


@pytest.mark.parametrize("seed", range(6))
def test_face_step_is_the_minimiser_on_the_face_of_its_held_rows(seed):
    """kernels/box_qp.py ``_face_step`` against numpy: z + d holds every row it holds at that row's bound
    (those projected Newton holds from z, and those an earlier solve carried across a bound), and on the
    others solves M_FF x_F = -(q_F + M_FH b_H) (np.linalg.solve: the minimiser of the QP on that face);
    where a row free in its last solve leaves the box, an earlier solve held rows (FACE_SOLVES)."""
    from contactlab.kernels.box_qp import FACE_SOLVES, _face_step
    rng = np.random.default_rng(seed)
    p = contact_problem(rng, 8, False, psd=False)
    M, q, lo, hi = p.M, p.q, p.lo, p.hi
    z = np.clip(rng.normal(scale=0.5, size=p.n), lo, hi)
    z[::5] = lo[::5]                                  # some rows at a bound
    w = M @ z + q
    eps = 1e-3 * np.abs(z).max()
    d, held = np.empty(p.n), np.empty(p.n, dtype=np.bool_)
    from contactlab.kernels.box_qp_panels import new_panel_state
    assert _face_step(M, z, w, lo, hi, eps, d, held, *new_factor_cache(p.n), *no_groups(),
                      np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0), new_panel_state(0))[0]
    x = z + d
    first = ((z <= lo + eps) & (w > 0)) | ((z >= hi - eps) & (w < 0))
    assert np.all(held[first])
    tiny = 4 * np.finfo(float).eps * np.abs(z).max()     # z + (bound - z): the bound to rounding
    assert np.all((np.abs(x[held] - lo[held]) <= tiny) | (np.abs(x[held] - hi[held]) <= tiny))
    F, H = np.flatnonzero(~held), np.flatnonzero(held)
    ref = np.linalg.solve(M[np.ix_(F, F)], -(q[F] + M[np.ix_(F, H)] @ x[H]))
    assert np.allclose(x[F], ref, rtol=1e-9, atol=1e-9 * np.abs(ref).max())
    # a row free in the last solve lies in its box, unless that was the last solve allowed
    crossed = (x[F] < lo[F]) | (x[F] > hi[F])
    assert not crossed.any() or (held & ~first).sum() > 0 or FACE_SOLVES == 1


def _islands_call(p, M, order, bounds, cache):
    """box_qp_islands on (order, bounds) of p with M (CSR) from z = 0, the layout cache ``cache``:
    (z, w, codes, its, outers, the returned layouts)."""
    from contactlab.kernels.box_qp_islands import box_qp_islands
    from contactlab.solvers.box_qp.interior_point import IPM_WARM_MAX
    opts = BQ.BoxQPOptions()
    z, w = np.full(p.n, np.nan), np.full(p.n, np.nan)
    codes, its, outers = (np.zeros(bounds.size - 1, dtype=np.int64) for _ in range(3))
    out = box_qp_islands(M.indptr.astype(np.int64), M.indices.astype(np.int64), M.data, p.q, p.lo, p.hi, p.findex,
                         p.mu, np.zeros(p.n), order, bounds, opts.tol, 20, opts.armijo, False, opts.max_outer, z, w,
                         codes, its, outers, p.body_groups, 64, p.n, opts.newton_steps, 8, np.inf, *cache)
    return z, w, codes, its, outers, out


def test_cached_island_layouts_are_the_recomputed_ones_and_a_changed_island_recomputes_its_own():
    """box_qp_islands reuses an island's symbolic layout (groups, order, block pattern) from the
    previous call only where it is that island's: the same rows, groups and pattern. Reused, the
    answers are the same bits as with the layout computed afresh; an island that loses a contact
    (its normal and friction rows) or a coupling (two entries of M) fails the check and is
    recomputed -- again the same bits as a fresh call -- while the unchanged island keeps its cache."""
    from contactlab.kernels.box_qp import csr_sub_block
    from contactlab.kernels.box_qp_islands import CSR_FROM, _layout_values, new_island_layouts
    from contactlab.problems.islands import island_rows
    _, p = _stacked_columns_problem(count=30, columns=2, steps=5)
    M = p.M.tocsr()
    order, bounds = island_rows(*p.islands)
    assert bounds.size == 3 and np.diff(bounds).min() > CSR_FROM      # two islands, both on the CSR path
    fresh = _islands_call(p, M, order, bounds, new_island_layouts())
    layout, at_ = fresh[5]
    assert set(fresh[2].tolist()) == {SOLVED}
    spare = np.empty(0, dtype=np.int64)
    again = _islands_call(p, M, order, bounds, (layout, at_, spare))
    for a, b in zip(fresh[:5], again[:5]):
        assert np.array_equal(a, b)
    assert np.array_equal(again[5][0], layout) and np.array_equal(again[5][1], at_)
    ip, ii = M.indptr.astype(np.int64), M.indices.astype(np.int64)
    scratch = np.full(p.body_groups.max() + 1, -1, dtype=np.int64)

    def holds(M_, k, idx):
        at = np.full(p.n, -1, dtype=np.int64)
        at[idx] = np.arange(idx.size)
        ok, val = _layout_values(layout, at_[k], at_[k + 1], M_.indptr.astype(np.int64),
                                 M_.indices.astype(np.int64), M_.data, idx, at, p.body_groups, scratch)
        if ok:      # the block's values, as csr_sub_block gathers them
            assert np.array_equal(val, csr_sub_block(M_.indptr.astype(np.int64), M_.indices.astype(np.int64),
                                                     M_.data, idx, p.n)[0])
        return ok

    isl = [order[bounds[k]:bounds[k + 1]] for k in range(2)]
    assert holds(M, 0, isl[0]) and holds(M, 1, isl[1]) and not holds(M, 1, isl[0])
    # island 0 loses a contact: its normal row and the friction rows tied to it
    normal = next(r for r in isl[0] if p.findex[r] < 0 and np.any(p.findex[isl[0]] == r))
    lost = np.concatenate([isl[0][(isl[0] != normal) & (p.findex[isl[0]] != normal)], isl[1]])
    bounds_lost = np.array([0, lost.size - isl[1].size, lost.size])
    assert not holds(M, 0, lost[:bounds_lost[1]]) and holds(M, 1, isl[1])
    cached = _islands_call(p, M, lost, bounds_lost, (layout, at_, spare))
    new = _islands_call(p, M, lost, bounds_lost, new_island_layouts())
    for a, b in zip(cached[:5], new[:5]):
        assert np.array_equal(a, b, equal_nan=True)
    assert np.array_equal(cached[5][0], new[5][0]) and not np.array_equal(cached[5][0], layout)
    # island 1 loses a coupling between two of its rows (an entry pair of M): its pattern changes
    i, j = isl[1][0], next(c for c in M.indices[M.indptr[isl[1][0]]:M.indptr[isl[1][0] + 1]] if c != isl[1][0])
    rows_of = np.repeat(np.arange(p.n), np.diff(M.indptr))
    keep = ~(((rows_of == i) & (M.indices == j)) | ((rows_of == j) & (M.indices == i)))
    assert keep.sum() == M.nnz - 2          # the same entries in the same order, less (i, j) and (j, i)
    M2 = sp.csr_matrix((M.data[keep], M.indices[keep], np.concatenate([[0], np.cumsum(np.bincount(
        rows_of[keep], minlength=p.n))])), shape=M.shape)
    assert holds(M2, 0, isl[0]) and not holds(M2, 1, isl[1])
    cached = _islands_call(p, M2, order, bounds, (layout, at_, spare))
    new = _islands_call(p, M2, order, bounds, new_island_layouts())
    for a, b in zip(cached[:5], new[:5]):
        assert np.array_equal(a, b, equal_nan=True)
    assert np.array_equal(cached[5][0], new[5][0])

"""The compiled projected Newton of ``box-qp`` (kernels/box_qp.py) against the Python path it replaces
on dense problems (solvers/box_qp/ ``_solve(..., compiled=False)``) and against independent
references: the unique minimiser by exhaustive active-set enumeration, and the certified residual;
the interior point (warm starts, centrality correctors), the sparse factorisations (CHOLMOD and
QDLDL) and the face step (``_face_step``) against numpy. Islands (independent row groups) solved
apart: tests/kernels/test_box_qp_island_solves.py; islands factorised over their body-pair groups:
tests/kernels/test_box_qp_groups.py."""
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

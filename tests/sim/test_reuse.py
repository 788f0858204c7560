"""Motionless-set computation reuse in simulation (loomis-balkcom §IV): the motionless set, the
rows of a contact's variables, the same trajectory with and without reuse, Theorem 1's bound."""
import numpy as np
import pytest

from contactlab.errors import ModelError
from contactlab.mechanics.scene import Body, Scene, Settings, Shape
from contactlab.scenarios import make_scene
from contactlab.sim import Simulator
from contactlab.sim.reuse import contact_rows, motionless_bodies


def stack(velocities):
    ground = Body("ground", kind="fixed", shapes=[Shape("halfspace", normal=(0, 0, 1))])
    boxes = [Body(f"box{i}", position=(0.0, 0.0, 0.1 + 0.2 * i), linear_velocity=v,
                  shapes=[Shape("box", size=(0.2, 0.2, 0.2))]) for i, v in enumerate(velocities)]
    return Scene(name="s", bodies=[ground, *boxes], mu=0.5, settings=Settings(dt=0.01))


def test_motionless_set_is_at_rest_and_grounded():
    sim = Simulator(stack([(0, 0, 0)] * 3), "frictionless", "dantzig", reuse="motionless")
    sim.step()
    assert sim.reuse.log.motionless == [3]
    # the middle box slides: it and the box resting on it are not motionless, the bottom one is
    sim = Simulator(stack([(0, 0, 0), (0.5, 0, 0), (0, 0, 0)]), "frictionless", "dantzig", reuse="motionless")
    sim.step()
    mask = motionless_bodies(sim.model, sim.data, sim.data.contacts, sim.reuse.radius, sim.reuse.tol_v)
    assert mask.tolist() == [False, True, False, False]
    assert sim.reuse.log.sets[-1][1] == ["box0"]


def _motionless_reference(kind, lin, ang, radius, tol_v, a, b):
    """GETMOTIONLESSBODIES with numpy norms and scipy's connected components (the compiled union-find's
    independent reference; kind 0 dynamic, 1 fixed)."""
    import scipy.sparse as sp
    from scipy.sparse.csgraph import connected_components
    nb = kind.size
    speed = np.linalg.norm(lin, axis=1) + np.linalg.norm(ang, axis=1) * radius
    rest = (kind == 0) & (speed <= tol_v)
    fixed = kind == 1
    node = rest | fixed
    if a.size == 0 or not rest.any():
        return np.zeros(nb, dtype=bool)
    keep = node[a] & node[b]
    aa, bb = np.where(fixed[a[keep]], nb, a[keep]), np.where(fixed[b[keep]], nb, b[keep])
    _, label = connected_components(sp.coo_matrix((np.ones(aa.size), (aa, bb)), shape=(nb + 1, nb + 1)),
                                    directed=False)
    return rest & (label[:nb] == label[nb])


@pytest.mark.parametrize("seed", range(20))
def test_compiled_bookkeeping_is_the_numpy_one(seed):
    """kernels/reuse.py: the motionless mask equals numpy norms + scipy's connected components, and the
    warm start equals the nearest-point matching by broadcast numpy (random bodies, contacts, speeds
    around the tolerance, several fixed bodies, repeated shape pairs, ties in distance)."""
    from contactlab.kernels import reuse as KR
    rng = np.random.default_rng(seed)
    nb = int(rng.integers(2, 15))
    kind = rng.choice([0, 0, 0, 1], size=nb)
    lin, ang = rng.standard_normal((nb, 3)) * 1e-3, rng.standard_normal((nb, 3)) * 1e-3
    radius, tol = rng.random(nb), 1.5e-3
    m = int(rng.integers(0, 25))
    a, b = rng.integers(0, nb, size=m), rng.integers(0, nb, size=m)
    got = KR.motionless_mask(kind == 0, kind == 1, lin, ang, radius, tol, a, b)
    assert got.tolist() == _motionless_reference(kind, lin, ang, radius, tol, a, b).tolist()
    # warm start: stored contacts (shape pairs, points, values), new contacts matched by pair and nearest point
    k, nc, r = int(rng.integers(1, 12)), int(rng.integers(1, 15)), int(rng.integers(1, 4))
    sa, sb = rng.integers(0, 3, size=k), rng.integers(0, 3, size=k)
    sp_ = np.round(rng.random((k, 3)), 1)                      # a 0.1 grid: equal distances happen
    vals = rng.random((k, r))
    na, nb_ = rng.integers(0, 3, size=nc), rng.integers(0, 3, size=nc)
    npt = np.round(rng.random((nc, 3)), 1)
    rows = rng.permutation(nc * r).reshape(nc, r)
    z = np.full(nc * r, np.nan)
    hits = KR.warm_values(sa, sb, sp_, vals, na, nb_, npt, 0.3, rows, z)
    d = np.linalg.norm(npt[:, None, :] - sp_[None, :, :], axis=2)
    d[(na[:, None] != sa[None, :]) | (nb_[:, None] != sb[None, :])] = np.inf
    j = np.argmin(d, axis=1)
    ok = d[np.arange(nc), j] <= 0.3
    ref = np.zeros(nc * r)
    ref[rows[ok]] = vals[j[ok]]
    assert hits == ok.sum() and np.array_equal(z, ref)


@pytest.mark.parametrize("model", ["stewart-trinkle", "box-friction"])
def test_contact_rows_are_each_contacts_variables(model):
    sim = Simulator(stack([(0, 0, 0)] * 2), model, "pgs")
    sim.step()
    P, nc = sim.last_problem, sim.data.contacts.count
    rows = contact_rows(getattr(sim, "last_built", None) or P, nc)
    assert rows.shape[0] == nc and np.unique(rows).size == rows.size
    if model == "box-friction":      # friction rows are coupled to their own contact's normal row
        assert rows.shape[1] == 3 and np.all(P.findex[rows[:, 1:]] == rows[:, :1])
    else:                            # lambda row i holds mu_i in normal i's column (arechavaleta eq. 9)
        mu = sim.data.contacts.mu
        assert rows.shape[1] == 2 + sim.model.settings.friction_directions
        assert np.allclose(P.M[rows[:, -1], rows[:, 0]], mu)


def run(scene, model, method, steps, reuse, **params):
    sc = scene if isinstance(scene, Scene) else make_scene(scene, **params)
    sim = Simulator(sc, model, method, warm_start=False, reuse=reuse)
    pos, bounds = [], []
    for _ in range(steps):
        sim.step()
        pos.append(sim.data.position.copy())
        info = sim.last_solution.info
        if "major_cycle_bound" in info:
            bounds.append((sim.last_solution.iterations, info["major_cycle_bound"]))
    return sim, np.array(pos), bounds


def test_same_trajectory_with_and_without_reuse_frictionless():
    """Frictionless (the paper's model, Dantzig): body velocities are unique, so the run with reuse
    must retrace the run without it; the motionless set changes (frame 79 of column-collapse) and
    every warm-started solve takes at most n - k major cycles (Theorem 1)."""
    cold, p0, _ = run("column-collapse", "frictionless", "dantzig", 90, None)
    warm, p1, bounds = run("column-collapse", "frictionless", "dantzig", 90, "motionless")
    assert np.allclose(p0, p1, rtol=0, atol=1e-9)
    assert [len(s) for _, s in warm.reuse.log.sets] == [5, 6]     # b0..b4, then b5 at rest by the wall
    assert len(bounds) >= 80 and all(maj <= bound for maj, bound in bounds)


@pytest.mark.parametrize("model,method", [("box-friction", "pgs-sm"), ("stewart-trinkle", "lemke")])
def test_same_trajectory_with_and_without_reuse_velocity_level(model, method):
    """Velocity-level friction models: the stack at rest and the sliding top blocks follow the
    same path with reuse (the warm start changes the work, not the answer, to the solver's
    tolerance). Lemke takes no warm start: the hook must then pass none, so its two runs are the
    same computation; both runs are therefore also checked against an independent reference, the
    velocity-stepping Coulomb slide in closed form: the top box (0.3 m/s along x, a friction
    direction of the pyramid and of the box, so the sliding friction is exactly mu m g) loses
    mu g h of speed per step, v_k+1 = max(v_k - mu g h, 0), x_k+1 = x_k + h v_k+1, while the two
    boxes under it stay where they are (box1's friction from box2, mu m g, is below what box0 can
    hold, 2 mu m g)."""
    scene = lambda: stack([(0, 0, 0), (0, 0, 0), (0.3, 0, 0)])   # noqa: E731  the top box slides
    _, p0, _ = run(scene(), model, method, 30, None)
    warm, p1, _ = run(scene(), model, method, 30, "motionless")
    assert np.allclose(p0, p1, rtol=0, atol=1e-6)
    sc = scene()
    mu, g, h = sc.mu, 9.81, sc.settings.dt
    v, x, ref = 0.3, 0.0, []
    for _ in range(30):
        v = max(v - mu * g * h, 0.0)
        x += h * v
        ref.append(x)
    start = np.array([b.position for b in sc.bodies[1:]])
    for p in (p0, p1):
        top = p[:, 3] - start[2]
        assert np.allclose(top[:, 0], ref, rtol=0, atol=1e-6)        # the slide, step by step
        assert ref[-1] > 5e-3 and np.abs(top[:, 1:]).max() < 1e-6   # it slid 7.7 mm, along x only
        assert np.abs(p[:, 1:3] - start[:2]).max() < 1e-6           # the boxes under it at rest
    assert warm.reuse.log.sets and warm.reuse.log.sets[0][1] == ["box0", "box1"]
    assert any(r > 0 for r in warm.reuse.log.warm_rows) == (method != "lemke")


def test_reuse_option_checked():
    with pytest.raises(ModelError, match="reuse"):
        Simulator(stack([(0, 0, 0)]), "frictionless", "dantzig", reuse="everything")

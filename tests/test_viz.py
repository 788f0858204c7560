"""Replays, plots and the report page: recorded physics, and pages rendered in headless Chromium.

The browser tests load each page from a file:// URL in Debian's chromium (driven by playwright),
assert there are no console errors and no network requests, and look at the pixels.
"""
from __future__ import annotations

import shutil

import h5py
import numpy as np
import pytest

from contactlab.mechanics.scene import Body, Scene, Settings, Shape
from contactlab.sim import Simulator
from contactlab.viz.replay import (ReplayData, ReplayError, ReplayRecorder, read_replay, replay_html,
                                   write_replay)

CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--disable-quic", "--use-gl=swiftshader",
                 "--enable-unsafe-swiftshader"]


def drop_scene():
    """A box resting on the ground and a ball falling beside it, then rolling away in +x."""
    ground = Body("ground", kind="fixed", shapes=[Shape("halfspace", normal=(0, 0, 1), offset=0.0)])
    box = Body("box", mass=2.0, position=(0.0, 0.0, 0.1), shapes=[Shape("box", size=(0.2, 0.2, 0.2))])
    ball = Body("ball", mass=1.0, position=(0.3, 0.0, 0.4), linear_velocity=(1.5, 0.0, 0.0),
                shapes=[Shape("sphere", radius=0.1)])
    return Scene(name="drop", bodies=[ground, box, ball], mu=0.5, settings=Settings(dt=0.01))


def record(scene, steps, model="box-friction", method="pgs-sm"):
    sim = Simulator(scene, model, method)
    rec = ReplayRecorder(sim)
    rec.capture(sim)
    for _ in range(steps):
        sim.step()
        rec.capture(sim)
    return sim, rec.data()


@pytest.fixture(scope="module")
def recorded():
    return record(drop_scene(), 60)


def test_recorded_contact_forces_carry_the_resting_weight(recorded):
    """At rest the ground's normal forces on the box add up to its weight (m g = 19.62 N), and the
    recorded poses are the simulator's."""
    sim, data = recorded
    assert data.frames == 61 and data.position.shape == (61, 3, 3)
    k = 30   # the box has rested for many steps; the ball is in the air or rolling (its contact is separate)
    a, b = data.contact_offset[k], data.contact_offset[k + 1]
    pts, fn = data.contact_point[a:b], data.contact_normal_force[a:b]
    on_box = np.abs(pts[:, 0]) <= 0.1 + 1e-6
    assert fn[on_box].sum() == pytest.approx(2.0 * 9.81, rel=1e-3)
    assert np.allclose(data.contact_normal[a:b], [0, 0, 1], atol=1e-9)
    np.testing.assert_array_equal(data.position[-1], sim.data.position)
    assert data.status[0] == "" and all(s for s in data.status[1:])


def test_replay_file_round_trip(recorded, tmp_path):
    _, data = recorded
    p = write_replay(tmp_path / "r.h5", data)
    back = read_replay(p)
    for name in ("time", "position", "orientation", "contact_offset", "contact_point", "contact_normal_force",
                 "contact_friction_force", "lcp_size"):
        np.testing.assert_array_equal(getattr(back, name), getattr(data, name))
    assert back.shapes == data.shapes and back.status == data.status and back.body_names == data.body_names


def test_replay_errors_name_the_problem(tmp_path):
    with pytest.raises(ReplayError, match="is a directory"):
        read_replay(tmp_path)
    with h5py.File(tmp_path / "t.h5", "w") as f:
        f.create_group("steps")
    with pytest.raises(ReplayError, match="no /replay group"):
        read_replay(tmp_path / "t.h5")
    (tmp_path / "x.h5").write_text("not hdf5")
    with pytest.raises(ReplayError, match="not an HDF5"):
        read_replay(tmp_path / "x.h5")


def synthetic(nb, frames, contacts_per_frame, rng):
    """A large replay without simulating it: nb boxes, random poses and contacts."""
    shapes = [{"body": 0, "kind": "halfspace", "normal": [0, 0, 1], "offset": 0.0, "size": [1, 1, 1], "radius": 0.5,
               "length": 1.0, "position": [0, 0, 0], "orientation": [1, 0, 0, 0], "name": ""}]
    shapes += [{"body": i, "kind": "box", "size": [0.1, 0.1, 0.1], "radius": 0.5, "length": 1.0, "normal": [0, 0, 1],
                "offset": 0.0, "position": [0, 0, 0], "orientation": [1, 0, 0, 0], "name": ""} for i in range(1, nb)]
    q = rng.standard_normal((frames, nb, 4))
    q /= np.linalg.norm(q, axis=2, keepdims=True)
    K = frames * contacts_per_frame
    return ReplayData([f"b{i}" for i in range(nb)], shapes, np.arange(frames) * 0.01,
                      rng.uniform(0, 2, (frames, nb, 3)), q, np.arange(frames + 1) * contacts_per_frame,
                      rng.uniform(0, 2, (K, 3)), np.tile([0.0, 0.0, 1.0], (K, 1)), rng.uniform(0, 10, K),
                      rng.uniform(-1, 1, (K, 3)), np.full(frames, 3 * contacts_per_frame), ["SOLVED"] * frames)


def test_large_replay_stays_below_20_mb():
    """A 500-box pile recorded over 2,000 steps with 1,500 contacts a step: the page is decimated
    to fit, keeps first and last frames, and stays below 20 MB."""
    data = synthetic(501, 2000, 1500, np.random.default_rng(0))
    page = replay_html(data)
    assert len(page.encode()) < 20e6
    import json
    import re
    info = json.loads(re.search(r"var info = (\{.*?\});", page).group(1))
    assert 2 <= info["frames"] < 2000 and info["source_frames"] == 2000
    assert info["time"][0] == 0.0 and info["time"][-1] == pytest.approx(19.99)


# ------------------------------------------------------------------------------------ browser
@pytest.fixture(scope="module")
def browser():
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        pytest.fail("the page tests need Debian's chromium (apt-get install chromium; .ci/run installs it)")
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS)
        yield b
        b.close()


def open_page(browser, path):
    page = browser.new_page(viewport={"width": 640, "height": 480})
    log = {"errors": [], "requests": []}
    page.on("console", lambda m: log["errors"].append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: log["errors"].append(str(e)))
    page.on("request", lambda r: log["requests"].append(r.url))
    page.goto(path.as_uri())
    return page, log


def pixels(page):
    from io import BytesIO

    from PIL import Image
    return np.asarray(Image.open(BytesIO(page.screenshot())).convert("RGB")).astype(int)


def test_replay_page_renders_the_motion(recorded, browser, tmp_path):
    _, data = recorded
    out = tmp_path / "drop.html"
    replay_html(data, out, title="drop")
    page, log = open_page(browser, out)
    page.wait_for_function("window.contactlab !== undefined && window.contactlab.viewer.animator.actions.length > 0")
    page.evaluate("window.contactlab.seek(0)")
    page.wait_for_timeout(400)
    first = pixels(page)
    text0 = page.inner_text("#cl-info")
    page.evaluate("window.contactlab.seek(window.contactlab.info.frames - 1)")
    page.wait_for_timeout(400)
    last = pixels(page)
    text1 = page.inner_text("#cl-info")
    assert log["errors"] == []
    assert log["requests"] == [out.as_uri()]      # nothing but the page itself
    assert "t = 0.0000 s" in text0 and "contacts 0" in text0
    assert f"t = {data.time[-1]:.4f} s" in text1 and f"contacts {data.contacts[-1]}" in text1
    # the bodies are drawn (saturated colours of the palette, not the grey ground or the sky) near the centre
    def coloured(img):
        r, g, b = img[..., 0], img[..., 1], img[..., 2]
        return (np.max(img, axis=2) - np.min(img, axis=2) > 60) & ~((b > r + 40) & (b > g))   # not sky blue
    c0 = coloured(first)
    h, w = c0.shape
    assert c0[h // 4: 3 * h // 4, w // 4: 3 * w // 4].sum() > 200
    # the ball moved: the two frames differ (below the text overlay), and only around bodies
    diff = np.abs(first - last).sum(axis=2) > 30
    diff[:60] = False
    assert diff.sum() > 200
    bodies = coloured(first) | coloured(last)
    ys, xs = np.nonzero(bodies[60:])
    dy, dx = np.nonzero(diff[60:])
    assert dy.min() >= ys.min() - 10 and dy.max() <= ys.max() + 10
    assert dx.min() >= xs.min() - 10 and dx.max() <= xs.max() + 10
    page.close()


def test_report_page_embeds_every_figure(browser, tmp_path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from contactlab.viz.report_html import write_report_html
    (tmp_path / "figures").mkdir()
    for k in range(2):
        fig, ax = plt.subplots(figsize=(3, 2))
        ax.plot([0, 1], [0, k + 1])
        fig.savefig(tmp_path / "figures" / f"f{k}.png")
        plt.close(fig)
    (tmp_path / "report.md").write_text("# Report\n\n## One\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n"
                                        "![f0](figures/f0.png)\n\n## Two\n\n![f1](figures/f1.png)\n")
    out = write_report_html(tmp_path / "report.md")
    page, log = open_page(browser, out)
    page.wait_for_load_state("load")
    imgs = page.evaluate("Array.from(document.images).map(i => [i.complete, i.naturalWidth])")
    assert len(imgs) == 2 and all(ok and w > 0 for ok, w in imgs)
    assert page.evaluate("document.querySelectorAll('table td').length") == 2
    assert page.evaluate("Array.from(document.querySelectorAll('nav a')).map(a => a.textContent)") == ["One", "Two"]
    assert log["errors"] == [] and log["requests"] == [out.as_uri()]
    page.close()


# ------------------------------------------------------------------------------------ plots
def test_plot_command_writes_png_and_svg(tmp_path):
    from typer.testing import CliRunner

    from contactlab.cli import app
    from contactlab.sim import write_trajectory
    sim = Simulator(drop_scene(), "box-friction", "pgs-sm")
    traj = sim.run(0.2, record_poses=True)
    f = write_trajectory(tmp_path / "t.h5", traj)
    r = CliRunner()
    for suffix in ("png", "svg"):
        res = r.invoke(app, ["plot", str(f), "--what", "energy,contacts,penetration,solver,bodies", "--out",
                             str(tmp_path / f"p.{suffix}")])
        assert res.exit_code == 0, res.output
        assert (tmp_path / f"p.{suffix}").stat().st_size > 5000
    res = r.invoke(app, ["plot", str(f), "--what", "energy,nonsense", "--out", str(tmp_path / "q.png")])
    assert res.exit_code == 2 and "nonsense" in res.output
    res = r.invoke(app, ["plot", str(f), "--what", "bodies", "--bodies", "nobody", "--out", str(tmp_path / "q.png")])
    assert res.exit_code == 2 and "no body named nobody" in res.output


def test_simulate_html_and_replay_from_the_trajectory_file(tmp_path):
    """`simulate --out F --html P` writes the page and the /replay group; `replay F --html Q`
    rebuilds the same animation from the file."""
    import json
    import re

    from typer.testing import CliRunner

    from contactlab.cli import app
    r = CliRunner()
    res = r.invoke(app, ["simulate", "stack", "--set", "count=2", "--duration", "0.2", "--model", "box-friction",
                         "--method", "pgs-sm", "--out", str(tmp_path / "s.h5"), "--html", str(tmp_path / "s.html"),
                         "--json"])
    assert res.exit_code == 0, res.output
    data = read_replay(tmp_path / "s.h5")
    assert data.frames == 21 and data.time[-1] == pytest.approx(0.2)
    with h5py.File(tmp_path / "s.h5", "r") as f:   # the replay's contacts are the steps' contacts
        np.testing.assert_array_equal(data.contacts[1:], f["steps/contacts"][()])
        assert f.attrs["complete"]
    res = r.invoke(app, ["replay", str(tmp_path / "s.h5"), "--html", str(tmp_path / "r.html")])
    assert res.exit_code == 0, res.output
    info = [json.loads(re.search(r"var info = (\{.*?\});", (tmp_path / n).read_text()).group(1)) for n in ("s.html", "r.html")]
    assert info[0] == info[1] and info[0]["frames"] == 21
    res = r.invoke(app, ["replay", str(tmp_path), "--html", str(tmp_path / "x.html")])
    assert res.exit_code == 2 and "is a directory" in res.output


def test_urdf_visual_meshes_are_drawn(browser, tmp_path):
    """A URDF's <visual> meshes (the Allegro hand's, from example-robot-data) become drawing-only
    triangle meshes: they never collide, the replay draws them and hides the collision shapes."""
    from contactlab.mechanics.urdf import load_urdf
    from contactlab.scenarios.allegro import urdf_path
    scene = load_urdf(urdf_path(), fixed_base=True)
    meshes = [s for b in scene.bodies for s in b.visuals if s.kind == "mesh"]
    assert len(meshes) >= 10 and all(s.faces is not None and s.faces.max() < len(s.vertices) for s in meshes)
    ground = Body("ground", kind="fixed", shapes=[Shape("halfspace", normal=(0, 0, 1), offset=-0.3)])
    scene.bodies.append(ground)
    sim = Simulator(scene, "box-friction", "pgs-sm")
    n_collision = len(sim.model.shapes)
    rec = ReplayRecorder(sim)
    rec.capture(sim)
    sim.step()
    rec.capture(sim)
    data = rec.data()
    assert sum(1 for s in data.shapes if s.get("visual")) == sum(len(b.visuals) for b in scene.bodies)
    assert sum(1 for s in data.shapes if not s.get("visual") and s["name"] != "skeleton") == n_collision
    out = tmp_path / "allegro.html"
    replay_html(data, out)
    page, log = open_page(browser, out)
    page.wait_for_function("window.contactlab !== undefined")
    page.wait_for_timeout(300)
    palm = [b.name for b in scene.bodies if b.visuals and b.shapes][0]
    hidden, visuals = page.evaluate(f"""() => {{
        const node = window.contactlab.viewer.scene_tree.find(["contactlab", "bodies", "{palm}"]);
        return [node.children["collision"].object.visible,
                Object.keys(node.children).filter(k => k.startsWith("visual")).length];
    }}""")
    assert hidden is False and visuals >= 1
    assert log["errors"] == [] and log["requests"] == [out.as_uri()]
    page.close()

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


def strip_cursor(page):
    """Where the strip's cursor (its black column) is, as a fraction of the plot's width."""
    from io import BytesIO

    from PIL import Image
    img = np.asarray(Image.open(BytesIO(page.locator("#cl-strip").screenshot())).convert("RGB")).astype(int)
    dark = (img.max(axis=2) < 60).sum(axis=0)
    x = int(np.argmax(dark))
    assert dark[x] > 0.6 * img.shape[0]            # a full-height line
    left = 150   # the plot starts right of the labels (replay_page.py LEFT)
    return (x - left) / (img.shape[1] - left - 8)


def test_replay_page_renders_the_motion(recorded, browser, tmp_path):
    _, data = recorded
    out = tmp_path / "drop.html"
    replay_html(data, out, title="drop")
    page, log = open_page(browser, out)
    page.wait_for_function("window.contactlab !== undefined && window.contactlab.startedAt() !== null")
    page.evaluate("window.contactlab.seek(0)")
    page.wait_for_timeout(400)
    first = pixels(page)
    text0 = page.inner_text("#cl-info")
    page.evaluate("window.contactlab.seek(window.contactlab.info.frames - 1)")
    page.wait_for_timeout(400)
    last = pixels(page)
    text1 = page.inner_text("#cl-info")
    strip1 = strip_cursor(page)
    page.evaluate("window.contactlab.seek(0)")
    page.wait_for_timeout(200)
    strip0 = strip_cursor(page)
    assert log["errors"] == []
    assert log["requests"] == [out.as_uri()]      # nothing but the page itself
    assert "t = 0.0000 s" in text0 and "contacts 0" in text0
    # the strip under the view: its cursor is at the start for frame 0 and at the end for the last
    assert strip0 < 0.3 and strip1 > 0.95
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
    with h5py.File(tmp_path / "s.h5", "r") as f:   # the replay's contacts, LCP sizes, residuals are the steps'
        np.testing.assert_array_equal(data.contacts[1:], f["steps/contacts"][()])
        np.testing.assert_array_equal(data.lcp_size[1:], f["steps/lcp_size"][()])
        np.testing.assert_array_equal(data.residual[1:], f["steps/residual"][()])
        assert data.lcp_size[0] == 0 and np.isnan(data.residual[0])
        assert f.attrs["complete"]
    res = r.invoke(app, ["replay", str(tmp_path / "s.h5"), "--html", str(tmp_path / "r.html")])
    assert res.exit_code == 0, res.output
    info = [json.loads(re.search(r"var info = (\{.*?\});", (tmp_path / n).read_text()).group(1)) for n in ("s.html", "r.html")]
    assert info[0] == info[1] and info[0]["frames"] == 21
    res = r.invoke(app, ["replay", str(tmp_path), "--html", str(tmp_path / "x.html")])
    assert res.exit_code == 2 and "is a directory" in res.output
    res = r.invoke(app, ["replay", str(tmp_path / "s.h5"), "--html", str(tmp_path / "q.html"), "--speed", "3", "--loop"])
    assert res.exit_code == 0, res.output
    q = json.loads(re.search(r"var info = (\{.*?\});", (tmp_path / "q.html").read_text()).group(1))
    assert q["speed"] == 3.0 and q["loop"] is True and 3.0 in q["speeds"]
    res = r.invoke(app, ["replay", str(tmp_path / "s.h5"), "--html", str(tmp_path / "q.html"), "--speed", "0"])
    assert res.exit_code == 2 and "--speed" in res.output


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


# ------------------------------------------------------------------------------------ playback and camera
def translated(body_names, shapes, position0, orientation0, shift, seconds, frames):
    """A replay without simulating: the bodies that are not fixed carried from their initial poses
    along ``shift`` (m) at a steady speed over ``seconds``, no contacts."""
    nb = len(body_names)
    fixed = np.array([any(s.get("fixed") or s["kind"] == "halfspace" for s in shapes if s["body"] == b) for b in range(nb)])
    s = np.linspace(0.0, 1.0, frames)[:, None, None]
    position = position0[None] + s * np.asarray(shift, dtype=float)[None, None] * ~fixed[None, :, None]
    return ReplayData(list(body_names), shapes, np.linspace(0.0, seconds, frames), position,
                      np.repeat(orientation0[None], frames, axis=0), np.zeros(frames + 1, np.int64), np.zeros((0, 3)),
                      np.zeros((0, 3)), np.zeros(0), np.zeros((0, 3)), np.zeros(frames, np.int64), [""] * frames)


def slide(seconds=3.0, frames=301):
    """A box sliding 1 m along x over ``seconds`` on the ground (100 frames a second)."""
    shapes = [{"body": 0, "kind": "halfspace", "normal": [0, 0, 1], "offset": 0.0, "size": [1, 1, 1], "radius": 0.5,
               "length": 1.0, "position": [0, 0, 0], "orientation": [1, 0, 0, 0], "name": "", "fixed": True},
              {"body": 1, "kind": "box", "size": [0.2, 0.2, 0.2], "radius": 0.5, "length": 1.0, "normal": [0, 0, 1],
               "offset": 0.0, "position": [0, 0, 0], "orientation": [1, 0, 0, 0], "name": ""}]
    return translated(["ground", "box"], shapes, np.array([[0.0, 0, 0], [0.0, 0, 0.1]]), np.tile([1.0, 0, 0, 0], (2, 1)),
                      [1.0, 0, 0], seconds, frames)


#: in the page: the frame shown every 250 ms from the page's load + 250 ms, with ms since the load and
#: since the clip's clock started (null before)
SAMPLE = """(n) => new Promise(done => {
    const load = performance.getEntriesByType("navigation")[0].loadEventStart, cl = window.contactlab, out = [];
    function sample(k) {
        const now = performance.now(), s = cl.startedAt();
        out.push([now - load, s === null ? null : now - s, cl.frame()]);
        if (k < n) setTimeout(() => sample(k + 1), 250); else done({out: out, started: s === null ? null : s - load});
    }
    setTimeout(() => sample(1), Math.max(0, load + 250 - performance.now()));
})"""

#: in the page: play from frame 0 at a speed (null: the menu's) for 800 ms; the frame then and the ms it took
RATE = """(speed) => new Promise(done => {
    const cl = window.contactlab;
    cl.seek(0);
    if (speed !== null) cl.setSpeed(speed);
    const t = performance.now();
    cl.play();
    setTimeout(() => done([cl.frame(), performance.now() - t, cl.speed()]), 800);
})"""


def test_replay_plays_at_real_time_from_its_first_frame_and_holds_the_last(browser, tmp_path):
    """The clip's clock starts once the page has loaded and frame 0 is drawn: from the load on, the
    frame shown is never ahead of real time (a page whose clock ran while it was built showed frame
    98 of 201 at load + 250 ms), it advances at real time, and after the clip's end the last frame stays."""
    data = slide(seconds=5.0, frames=501)
    out = tmp_path / "slide.html"
    replay_html(data, out)
    page, log = open_page(browser, out)
    fps, N = 100.0, data.frames
    res = page.evaluate(SAMPLE, 8)        # ~2 s of samples (more on a loaded machine)
    assert res["started"] is not None and res["started"] >= 0    # the clock started after the page's load
    frames = [f for _, _, f in res["out"]]
    for since_load, since_start, f in res["out"]:
        assert f <= since_load / 1000 * fps + 1                   # never ahead of real time since the load
        if since_start is None:
            assert f == 0
        else:
            assert f <= since_start / 1000 * fps + 1
    assert frames[0] <= 0.25 * N                                  # near the start
    assert all(b >= a for a, b in zip(frames, frames[1:])) and len(set(frames)) >= 4
    since_start, f = res["out"][-1][1], frames[-1]
    assert f >= min(0.4 * since_start / 1000 * fps, N - 1)       # real time (a loaded machine may lag a little)
    # the end holds: once the clock passed the clip's duration the last frame stays, and the page says so
    page.wait_for_function("window.contactlab.clipTime() >= window.contactlab.info.duration "
                           "&& !window.contactlab.playing()", timeout=30000)
    held = []
    for _ in range(3):
        held.append(page.evaluate("window.contactlab.frame()"))
        page.wait_for_timeout(300)
    assert held == [N - 1] * 3
    assert f"frame {N}/{N}" in page.inner_text("#cl-info") and page.inner_text("#cl-play") == "play"
    assert log["errors"] == [] and log["requests"] == [out.as_uri()]
    page.close()


def test_replay_speed_loop_and_pause_controls(browser, tmp_path):
    data = slide(seconds=8.0, frames=801)     # 4 s at 2x: room for a loaded machine's slow timers
    out = tmp_path / "slide.html"
    replay_html(data, out)
    page, log = open_page(browser, out)
    page.wait_for_function("window.contactlab !== undefined && window.contactlab.startedAt() !== null")
    fps, N = 100.0, data.frames
    rates = {}
    for speed in (0.5, 2.0):
        if speed == 2.0:                      # through the menu, as a user picks it
            page.select_option("#cl-speed", "2")
            f, ms, shown = page.evaluate(RATE, None)
        else:
            f, ms, shown = page.evaluate(RATE, speed)
        assert shown == speed
        assert f <= speed * fps * ms / 1000 + 1                   # never ahead of speed x real time
        rates[speed] = f / (ms / 1000)
    assert rates[0.5] >= 0.5 * 0.5 * fps and rates[2.0] >= 0.5 * 2.0 * fps
    assert rates[2.0] > 2.5 * rates[0.5]
    # pause (the button) holds the frame; loop starts over at the end
    page.evaluate("() => { const cl = window.contactlab; cl.setSpeed(0.25); cl.seek(10); cl.play(); }")   # 30 s to go
    page.click("#cl-play")
    assert not page.evaluate("window.contactlab.playing()")
    f0 = page.evaluate("window.contactlab.frame()")
    page.wait_for_timeout(300)
    assert page.evaluate("window.contactlab.frame()") == f0 and page.inner_text("#cl-play") == "play"
    page.evaluate(f"() => {{ const cl = window.contactlab; cl.setSpeed(1); cl.setLoop(true); cl.seek({N - 20}); cl.play(); }}")
    page.wait_for_timeout(700)
    assert page.evaluate("window.contactlab.playing()") and page.evaluate("window.contactlab.frame()") < N - 20
    assert page.is_checked("#cl-loop")
    assert log["errors"] == []
    page.close()


#: in the page: the moving bodies' box (their meshes, as drawn) projected with the page's camera: x and y ranges in [-1, 1]
PROJECT = """() => {
    const cl = window.contactlab, THREE = MeshCat.THREE, cam = cl.viewer.camera, box = new THREE.Box3();
    cam.updateMatrixWorld();
    for (const n of cl.moving) box.expandByObject(cl.viewer.scene_tree.find(["contactlab", "bodies", n]).object);
    const x = [], y = [];
    for (let i = 0; i < 8; i++) {
        const v = new THREE.Vector3(i & 1 ? box.max.x : box.min.x, i & 2 ? box.max.y : box.min.y,
                                    i & 4 ? box.max.z : box.min.z).project(cam);
        x.push(v.x); y.push(v.y);
    }
    return [Math.min(...x), Math.max(...x), Math.min(...y), Math.max(...y)];
}"""


def in_view_share(ndc):
    """The projected box is inside the view; its larger share of the view's width or height."""
    x0, x1, y0, y1 = ndc
    assert -1.0 <= x0 < x1 <= 1.0 and -1.0 <= y0 < y1 <= 1.0
    return max(x1 - x0, y1 - y0) / 2.0


def test_camera_frames_the_column_not_the_ground(browser, tmp_path):
    """The column-collapse column (7 blocks on a ground plane with walls) fills a fair share of the
    view: projected with the page's camera, and counted in pixels (it was a few pixels tall)."""
    from io import BytesIO

    from PIL import Image

    from contactlab.scenarios import make_scene
    _, data = record(make_scene("column-collapse"), 2)
    out = tmp_path / "column.html"
    replay_html(data, out)
    page, log = open_page(browser, out)
    page.wait_for_function("window.contactlab !== undefined && window.contactlab.startedAt() !== null")
    page.evaluate("window.contactlab.seek(0)")
    page.wait_for_timeout(300)
    assert len(page.evaluate("window.contactlab.moving")) == 7
    assert in_view_share(page.evaluate(PROJECT)) >= 0.6
    # the bodies' pixels: what changes when they are hidden (contact markers hidden in both shots)
    shots = []
    for shown in ("true", "false"):
        page.evaluate(f"""() => {{ const cl = window.contactlab, tree = cl.viewer.scene_tree;
            tree.find(["contactlab", "contacts"]).object.visible = false;
            for (const n of cl.moving) tree.find(["contactlab", "bodies", n]).object.visible = {shown};
            cl.viewer.render(); }}""")
        shots.append(np.asarray(Image.open(BytesIO(page.locator("#meshcat-pane").screenshot())).convert("RGB")).astype(int))
    body = np.abs(shots[0] - shots[1]).sum(axis=2) > 30
    rows = np.flatnonzero(body.sum(axis=1) > 3)
    assert rows.size and (rows.max() - rows.min()) >= 0.5 * body.shape[0]
    assert log["errors"] == []
    page.close()


def test_camera_follows_a_walking_robot(browser, tmp_path):
    """The quadruped carried 3 m along x (ten times its size): the camera follows it, so at the
    first and the last frame it is near the middle of the view and fills a fair share of it."""
    from contactlab.scenarios import make_scene
    sim = Simulator(make_scene("quadruped"), "box-friction", "pgs-sm")
    rec = ReplayRecorder(sim)
    rec.capture(sim)
    d = rec.data()
    data = translated(d.body_names, d.shapes, d.position[0], d.orientation[0], [3.0, 0.0, 0.0], 3.0, 151)
    out = tmp_path / "walk.html"
    replay_html(data, out)
    page, log = open_page(browser, out)
    page.wait_for_function("window.contactlab !== undefined && window.contactlab.startedAt() !== null")
    assert page.evaluate("window.contactlab.follow") is True
    for f in (0, data.frames - 1):
        page.evaluate(f"window.contactlab.seek({f})")
        x0, x1, y0, y1 = ndc = page.evaluate(PROJECT)
        assert in_view_share(ndc) >= 0.3
        assert abs(x0 + x1) / 2 < 0.25 and abs(y0 + y1) / 2 < 0.25
    assert log["errors"] == []
    page.close()


def test_robot_links_are_drawn_as_volumes():
    """The quadruped's legs have no collision shapes but their feet: each link is drawn as the
    uniform box of its own mass and inertia (I = R diag(m (b^2 + c^2) / 12, ...) R^T, the body's
    tensor), not as lines; the base keeps its collision blocks."""
    from contactlab.mechanics.model import KIND_FIXED
    from contactlab.scenarios import make_scene
    from contactlab.viz.replay import shape_volume, shapes_of
    sim = Simulator(make_scene("quadruped"), "box-friction", "pgs-sm")
    model = sim.model
    shapes = shapes_of(model)
    links = [b for b in range(len(model.names)) if model.kind[b] != KIND_FIXED]
    boxes = {s["body"]: s for s in shapes if s["name"] == "inertia"}
    assert len(links) == 13 and len(boxes) == 12 and model.names.index("base") not in boxes
    from contactlab.mechanics.rotation import quat_to_matrix
    for b, s in boxes.items():
        a = np.asarray(s["size"])
        m = float(model.mass[b])
        R = quat_to_matrix(np.asarray(s["orientation"]))
        if a.min() > 0.15 * a.max() + 1e-12:         # not widened: the box has the body's inertia exactly
            I = R @ np.diag(m / 12 * np.array([a[1] ** 2 + a[2] ** 2, a[0] ** 2 + a[2] ** 2, a[0] ** 2 + a[1] ** 2])) @ R.T
            np.testing.assert_allclose(I, model.inertia[b], rtol=1e-9, atol=1e-12 * np.abs(model.inertia[b]).max())
        assert a.min() >= 0.15 * a.max() - 1e-12    # a volume, never a line
        collision = sum(shape_volume(c) for c in shapes if c["body"] == b and not c.get("visual"))
        assert collision < 0.25 * np.prod(a)
    base = model.names.index("base")
    assert sum(shape_volume(c) for c in shapes if c["body"] == base and not c.get("visual")) > 0

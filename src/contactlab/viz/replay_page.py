"""The replay page (:func:`contactlab.viz.replay.replay_html`): HTML, style and the player script.

meshcat's viewer (inlined at ``@VIEWER@``) builds the scene from the packed commands at
``@PAYLOAD@``; the script below owns the clock. It draws frame 0, and starts the clip's clock at the next
animation frame after the page's load (frame 0 is then on screen), so a page that takes seconds
to build still shows the run from its start; each animation
frame it shows the frame at clip time (real time x speed since the start, by the frames' own
times), holds the last frame at the end (or starts over with *loop*), and moves the camera with
the bodies where they travel. Camera framing: the framed box's corners, seen from the view
direction, fit 85% of the narrower field of view (pinhole projection: a point at depth z and
lateral offset x lies inside where |x| <= z tan(fov / 2)).
"""

#: the speed menu (x real time)
SPEEDS = (0.25, 0.5, 1.0, 2.0, 4.0)

PAGE = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>@TITLE@</title>
<style>
html,body{margin:0;height:100%;overflow:hidden;font-family:sans-serif}
#cl-root{display:flex;flex-direction:column;height:100vh}
#meshcat-pane{flex:1 1 auto;min-height:0;position:relative;overflow:hidden}
#cl-bar{flex:0 0 auto;display:flex;align-items:center;gap:8px;padding:3px 8px;background:#f2f2f2;
border-top:1px solid #bbb;font:13px sans-serif}
#cl-bar button{width:64px}
#cl-slider{flex:1 1 auto;min-width:60px}
#cl-time{font:12px monospace;white-space:pre}
#cl-strip{flex:0 0 auto;display:block;width:100%;height:96px;background:#fff;cursor:crosshair}
#cl-info{position:absolute;left:8px;top:8px;padding:4px 8px;background:rgba(255,255,255,.85);font:13px monospace;
white-space:pre;pointer-events:none;z-index:10}
</style></head>
<body><div id="cl-root"><div id="meshcat-pane"></div>
<div id="cl-bar"><button id="cl-play" title="play / pause (space)">pause</button>
<input id="cl-slider" type="range" min="0" max="0" step="1" value="0" title="frame">
<label title="playback speed (x real time)">speed <select id="cl-speed"></select></label>
<label title="start over at the end"><input id="cl-loop" type="checkbox"> loop</label>
<span id="cl-time"></span></div>
<canvas id="cl-strip" title="contacts, LCP size and residual per frame; click to seek"></canvas></div>
<div id="cl-info"></div>
<script>@VIEWER@</script>
<script>
(function() {
  "use strict";
  var THREE = MeshCat.THREE;
  var pane = document.getElementById("meshcat-pane");
  var viewer = new MeshCat.Viewer(pane);
  // the 3D view fills its pane (meshcat sizes it to the window's height), the bar and strip below it
  var setSize = viewer.set_3d_pane_size.bind(viewer);
  viewer.set_3d_pane_size = function() { setSize(pane.clientWidth, pane.clientHeight); frameCamera(); };
  var info = @INFO@;
  var data = @FRAMES@;
  var cmds = @PAYLOAD@;
  function bytes(b64) {
    var s = atob(b64), a = new Uint8Array(s.length);
    for (var i = 0; i < s.length; i++) a[i] = s.charCodeAt(i);
    return a;
  }
  cmds.forEach(function(c) { viewer.handle_command_bytearray(bytes(c)); });
  var poses = new Float32Array(bytes(data.poses).buffer);
  var rows = new Float32Array(bytes(data.contacts).buffer);
  var offsets = new Int32Array(bytes(data.contact_offset).buffer);
  var target = data.target ? new Float32Array(bytes(data.target).buffer) : null;
  var find = function(path) { return viewer.scene_tree.find(path.map(String)).object; };
  var bodies = data.bodies.map(find);
  var slots = [];
  for (var s = 0; s < data.slots; s++)
    slots.push([find(["contactlab", "contacts", "points", s]), find(["contactlab", "contacts", "normal", s]),
                find(["contactlab", "contacts", "friction", s])]);
  var N = info.frames, T0 = info.time[0], D = info.duration;

  // ---- camera. meshcat turns its scene (z up) by -90 degrees about x into three.js' world (y up)
  // and hangs the camera inside it; orbit controls look at their target in world coordinates, so
  // the camera is taken out into the world and the scene's points are turned with W
  var camera = viewer.camera, controls = viewer.controls;
  camera.fov = 40;                          // less wide-angle stretch than three.js' 75 degrees
  if (camera.parent) camera.parent.remove(camera);
  camera.up.set(0, 1, 0);
  function W(p) { return new THREE.Vector3(p.x, p.z, -p.y); }
  var lo = new THREE.Vector3().fromArray(data.lo), hi = new THREE.Vector3().fromArray(data.hi);
  var focus = new THREE.Vector3();          // where the camera follows (a travelling robot's centre), else 0
  var userMoved = false;
  controls.addEventListener("start", function() { userMoved = true; });
  function focusAt(f) {
    return target ? new THREE.Vector3(target[3 * f], target[3 * f + 1], target[3 * f + 2]) : new THREE.Vector3();
  }
  function frameCamera() {
    // fit the box [lo, hi] (about the focus) seen from the view direction into 85% of the view
    if (userMoved || !camera) return;
    var dir = new THREE.Vector3(0.9, -0.9, 0.55).normalize();    // from the target towards the camera
    var right = new THREE.Vector3().crossVectors(new THREE.Vector3(0, 0, 1), dir).normalize();
    var up = new THREE.Vector3().crossVectors(dir, right);
    var ty = Math.tan(camera.fov * Math.PI / 360), tx = ty * camera.aspect, fill = 0.85;
    var c = lo.clone().add(hi).multiplyScalar(0.5), h = hi.clone().sub(lo).multiplyScalar(0.5);
    var d = 0;
    for (var i = 0; i < 8; i++) {
      var p = new THREE.Vector3(i & 1 ? h.x : -h.x, i & 2 ? h.y : -h.y, i & 4 ? h.z : -h.z);
      d = Math.max(d, p.dot(dir) + Math.abs(p.dot(right)) / (fill * tx), p.dot(dir) + Math.abs(p.dot(up)) / (fill * ty));
    }
    d = Math.max(d, 1e-3);
    var look = c.clone().add(focus);
    controls.target.copy(W(look));
    camera.position.copy(W(look.addScaledVector(dir, d)));
    camera.near = d / 1000;
    camera.far = 100 * (d + h.length());
    camera.updateProjectionMatrix();
    controls.update();
  }

  // ---- one frame: poses, contacts, camera, overlay, slider, strip cursor
  var Y = new THREE.Vector3(0, 1, 0), v = new THREE.Vector3();
  var shown = -1;
  var box = document.getElementById("cl-info"), slider = document.getElementById("cl-slider");
  var clock = document.getElementById("cl-time");
  slider.max = N - 1;
  function fmt(x) { return x === null || x === undefined ? "-" : x.toExponential(2); }
  function show(f) {
    if (f === shown) return;
    shown = f;
    var nb = bodies.length, k = f * nb * 7;
    for (var i = 0; i < nb; i++, k += 7) {
      bodies[i].position.set(poses[k], poses[k + 1], poses[k + 2]);
      bodies[i].quaternion.set(poses[k + 3], poses[k + 4], poses[k + 5], poses[k + 6]);
    }
    if (slots.length) {
      var a = offsets[f], n = offsets[f + 1] - a;
      for (var s = 0; s < slots.length; s++) {
        var on = s < n, r = 9 * (a + s);
        slots[s][0].visible = on;
        if (on) slots[s][0].position.set(rows[r], rows[r + 1], rows[r + 2]);
        for (var j = 1; j < 3; j++) {
          var o = slots[s][j];
          if (on) v.set(rows[r + 3 * j], rows[r + 3 * j + 1], rows[r + 3 * j + 2]);
          var L = on ? v.length() : 0;
          o.visible = L > 1e-9;
          if (o.visible) {
            o.position.set(rows[r], rows[r + 1], rows[r + 2]);
            o.quaternion.setFromUnitVectors(Y, v.multiplyScalar(1 / L));
            o.scale.set(1, L, 1);
          }
        }
      }
    }
    if (target) {   // follow: move the camera and its orbit target by the focus' step
      var next = focusAt(f), step = W(next.clone().sub(focus));
      focus.copy(next);
      camera.position.add(step);
      controls.target.add(step);
    }
    box.textContent = "t = " + info.time[f].toFixed(4) + " s   frame " + (f + 1) + "/" + N +
      "\\ncontacts " + info.contacts[f] + "   LCP size " + info.lcp[f] + "   " + (info.status[f] || "") +
      (info.residual[f] === null ? "" : "   residual " + fmt(info.residual[f]));
    slider.value = f;
    clock.textContent = (info.time[f] - T0).toFixed(3) + " / " + D.toFixed(3) + " s";
    drawCursor();
    viewer.render();
  }
  function frameAt(t) {    // the last frame whose time (from the first) is <= t
    var a = 0, b = N - 1, x = t + T0 + 1e-9;
    if (x >= info.time[b]) return b;
    while (b - a > 1) { var m = (a + b) >> 1; if (info.time[m] <= x) a = m; else b = m; }
    return a;
  }

  // ---- the clock: clip time = t0 + (now - since) x speed while playing
  var state = {playing: true, speed: info.speed, loop: info.loop, t0: 0, since: null, started: null};
  function clipTime() {
    if (!state.playing || state.since === null) return state.t0;
    return state.t0 + (performance.now() - state.since) / 1000 * state.speed;
  }
  function setClock(t) { state.t0 = t; state.since = performance.now(); }
  var button = document.getElementById("cl-play");
  function play() {
    if (state.t0 >= D && !state.playing) state.t0 = 0;    // at the end: play from the start
    state.playing = true; setClock(state.t0); button.textContent = "pause";
  }
  function pause() { state.t0 = clipTime(); state.playing = false; button.textContent = "play"; }
  function seek(f) {
    f = Math.max(0, Math.min(N - 1, Math.round(f)));
    state.t0 = info.time[f] - T0; state.since = performance.now();
    show(f);
  }
  function tick() {
    if (state.started === null) {        // draw frame 0; start the clock once it is on screen and the page loaded
      if (shown < 0) { frameCamera(); show(0); }
      else if (document.readyState === "complete") { state.started = performance.now(); setClock(state.t0); }
    } else if (state.playing) {
      var t = clipTime();
      if (t >= D) {
        if (state.loop && D > 0) { t = t % D; setClock(t); }
        else { t = D; state.t0 = D; state.playing = false; button.textContent = "play"; }
      }
      show(frameAt(t));
    }
    requestAnimationFrame(tick);
  }

  // ---- controls
  button.onclick = function() { state.playing ? pause() : play(); };
  slider.oninput = function() { seek(+slider.value); };
  var menu = document.getElementById("cl-speed");
  info.speeds.forEach(function(x) {
    var o = document.createElement("option"); o.value = x; o.textContent = x + "x";
    if (x === state.speed) o.selected = true;
    menu.appendChild(o);
  });
  function setSpeed(x) { state.t0 = clipTime(); if (state.playing) setClock(state.t0); state.speed = +x; menu.value = String(+x); }
  menu.onchange = function() { setSpeed(menu.value); };
  var loopBox = document.getElementById("cl-loop");
  loopBox.checked = state.loop;
  loopBox.onchange = function() { state.loop = loopBox.checked; };
  document.addEventListener("keydown", function(e) {
    if (e.code === "Space" && e.target.tagName !== "INPUT" && e.target.tagName !== "SELECT") {
      e.preventDefault(); button.onclick();
    }
  });

  // ---- the strip: contacts, LCP size and residual (log) against time, the current frame's cursor
  var strip = document.getElementById("cl-strip"), plot = document.createElement("canvas");
  var series = [["contacts", info.contacts, false, "#c44e52"], ["LCP size", info.lcp, false, "#4c72b0"],
                ["residual", info.residual, true, "#55a868"]];
  var LEFT = 150;
  function xOf(t, w) { return LEFT + (D > 0 ? (t - T0) / D : 0) * (w - LEFT - 8); }
  function drawPlot() {
    var dpr = window.devicePixelRatio || 1, w = strip.clientWidth, h = strip.clientHeight;
    strip.width = plot.width = Math.max(1, Math.round(w * dpr)); strip.height = plot.height = Math.max(1, Math.round(h * dpr));
    var g = plot.getContext("2d");
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.fillStyle = "#fff"; g.fillRect(0, 0, w, h);
    g.font = "11px sans-serif"; g.textBaseline = "middle";
    var rowH = h / series.length;
    series.forEach(function(sr, i) {
      var pos = sr[2] ? sr[1].filter(function(y) { return y > 0; }) : [];   // a log axis: zeros drawn at the least positive
      var floor = pos.length ? Math.min.apply(null, pos) : 1;
      var ys = sr[1].map(function(y) { return y === null ? null : sr[2] ? Math.log10(Math.max(y, floor)) : y; });
      var ok = ys.filter(function(y) { return y !== null && isFinite(y); });
      var y0 = i * rowH, lo = ok.length ? Math.min.apply(null, ok) : 0, hi = ok.length ? Math.max.apply(null, ok) : 1;
      if (!sr[2]) lo = Math.min(lo, 0);
      if (hi <= lo) hi = lo + 1;
      g.strokeStyle = "#ddd"; g.beginPath(); g.moveTo(LEFT, y0 + rowH - 0.5); g.lineTo(w, y0 + rowH - 0.5); g.stroke();
      g.fillStyle = sr[3];
      var range = ok.length ? (sr[2] ? "1e" + Math.floor(lo) + " .. 1e" + Math.ceil(hi) : lo + " .. " + hi) : "none";
      g.fillText(sr[0] + "  " + range, 6, y0 + rowH / 2);
      g.strokeStyle = sr[3]; g.lineWidth = 1.5; g.beginPath();
      var pen = false;
      for (var k = 0; k < N; k++) {
        if (ys[k] === null || !isFinite(ys[k])) { pen = false; continue; }
        var x = xOf(info.time[k], w), y = y0 + rowH - 3 - (ys[k] - lo) / (hi - lo) * (rowH - 6);
        if (pen) g.lineTo(x, y); else g.moveTo(x, y);
        pen = true;
      }
      g.stroke();
    });
  }
  function drawCursor() {
    var g = strip.getContext("2d"), dpr = window.devicePixelRatio || 1;
    g.setTransform(1, 0, 0, 1, 0, 0);
    g.drawImage(plot, 0, 0);
    if (shown < 0) return;
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    var x = Math.round(xOf(info.time[shown], strip.clientWidth));
    g.fillStyle = "#000"; g.fillRect(x - 1, 0, 2, strip.clientHeight);
  }
  function seekStrip(e) {
    var r = strip.getBoundingClientRect(), w = r.width;
    if (e.clientX - r.left < LEFT) return;
    seek(frameAt(Math.max(0, (e.clientX - r.left - LEFT) / (w - LEFT - 8)) * D));
  }
  strip.addEventListener("mousedown", function(e) { seekStrip(e); });
  strip.addEventListener("mousemove", function(e) { if (e.buttons & 1) seekStrip(e); });
  window.addEventListener("resize", function() { drawPlot(); drawCursor(); });
  drawPlot();

  window.contactlab = {
    viewer: viewer, info: info, moving: data.moving, follow: data.follow,
    seek: function(f) { pause(); seek(f); },
    frame: function() { return shown < 0 ? 0 : shown; },
    clipTime: clipTime,
    startedAt: function() { return state.started; },
    playing: function() { return state.playing; },
    play: play, pause: pause,
    speed: function() { return state.speed; }, setSpeed: setSpeed,
    setLoop: function(b) { state.loop = !!b; loopBox.checked = state.loop; }
  };
  viewer.set_3d_pane_size();
  requestAnimationFrame(tick);
})();
</script></body></html>
"""

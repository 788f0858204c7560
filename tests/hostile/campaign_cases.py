"""The inputs of the hostile campaign (tests/hostile/campaign.py): the issue's own list (group
``issue``), then new ones by entry point. ``{tmp}`` is the case's own folder, ``{data}`` tests/data."""
from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

from .campaign import DATA, ENV, PY, Case, _child, _result, cli_cmd

NPZ = "{data}/barrett_wood_step565.npz"
#: root ignores file modes: a read-only target is then written, as it should be
AS_ROOT = os.geteuid() == 0
TRAJ = "{data}/stack2_traj.h5"
LCP2 = "cl.save(cl.LCP(np.array([[2.0, 1.0], [1.0, 2.0]]), np.array([-3.0, 0.0])), TMP + '/p.npz')\n"
SCENE = ('name = "s"\n[settings]\ndt = 0.01\n[[bodies]]\nname = "ground"\nkind = "fixed"\n'
         '[[bodies.shapes]]\nkind = "halfspace"\nnormal = [0, 0, 1]\noffset = 0.0\n'
         '[[bodies]]\nname = "box"\nmass = {mass}\nposition = [0, 0, 0.1]\n{extra}'
         '[[bodies.shapes]]\nkind = "box"\nsize = {size}\n')
LINK = ('<link name="{n}"><inertial><mass value="{m}"/><inertia ixx="{i}" iyy="{i}" izz="{i}" ixy="0" ixz="0" '
        'iyz="0"/></inertial><collision><geometry><box size="0.1 0.1 0.1"/></geometry></collision></link>\n')
JOINT = ('<joint name="{n}" type="{t}"><parent link="{p}"/><child link="{c}"/><origin xyz="0 0 0.2"/>'
         '<axis xyz="{ax}"/><limit lower="{lo}" upper="{hi}" effort="1" velocity="1"/></joint>\n')


def scene(mass="1.0", size="[0.2, 0.2, 0.2]", extra="") -> str:
    return SCENE.format(mass=mass, size=size, extra=extra)


def urdf(links, joints) -> str:
    body = "".join(LINK.format(n=n, m=m, i=i) for n, m, i in links)
    body += "".join(JOINT.format(**{"t": "revolute", "ax": "0 0 1", "lo": -1, "hi": 1, **j}) for j in joints)
    return '<?xml version="1.0"?>\n<robot name="r">\n' + body + "</robot>\n"


def write(name: str, text: str) -> str:
    """A setup snippet that writes ``text`` to {tmp}/name."""
    return f"open(TMP + '/{name}', 'w', encoding='utf-8').write({text!r})\n"


def sim(scene_file: str, text: str, *args, **kw) -> dict:
    return dict(setup=write(scene_file, text), cli=["simulate", "{tmp}/" + scene_file, "--duration", "0.02", "-q",
                                                    *args], **kw)


def api_every(setup: str) -> str:
    """A snippet that builds ``p`` and solves it with every registered method."""
    return setup + "\nout = every(p)\n"


# ------------------------------------------------------------------------------------ custom cases
def _popen(args, tmp, **kw):
    return subprocess.Popen(cli_cmd(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV,
                            cwd=tmp, **kw)


def _valid_traj(path: Path) -> str | None:
    import h5py
    try:
        with h5py.File(path, "r") as f:
            n = f["steps/time"].shape[0]
            complete = bool(f.attrs.get("complete", True))
        return None if n > 0 else "no steps"
    except Exception as exc:  # noqa: BLE001
        return f"unreadable: {type(exc).__name__}: {exc}"


def signal_mid_write(sig):
    def run(tmp: Path):
        out = tmp / "run.h5"
        p = _popen(["simulate", "pile", "--set", "count=8", "--duration", "600", "--out", str(out), "-q"], tmp)
        t0 = time.time()
        while time.time() - t0 < 200 and not any(q.name.endswith(".partial") for q in tmp.iterdir()):
            time.sleep(0.2)
        time.sleep(2.0)
        if p.poll() is not None:
            return "setup", f"the run ended (exit {p.returncode}) before the signal"
        p.send_signal(sig)
        so, se = p.communicate(timeout=120)
        if p.returncode != 130:
            return ("crash" if p.returncode < 0 else "wrong"), f"exit {p.returncode}: {se[-300:]}"
        if "Traceback" in se:
            return "raw", se[-300:]
        bad = _valid_traj(out)
        if bad:
            return "wrong", f"exit 130 but the file is {bad}"
        import h5py
        with h5py.File(out, "r") as f:
            n, complete = f["steps/time"].shape[0], f.attrs.get("complete")
        left = [q.name for q in tmp.iterdir() if q.name.startswith(".")]
        if left:
            return "wrong", f"files left beside the output: {left}"
        return "ok", f"exit 130, file valid: {n} steps, complete={complete}"
    return run


def two_reproduce(tmp: Path):
    """Two ``reproduce --only`` runs into one folder at once: both sections in the report."""
    out = tmp / "rep"
    a = _popen(["reproduce", "--only", "quasistatic", "--quick", "--out", str(out), "-q"], tmp)
    time.sleep(0.3)
    b = _popen(["reproduce", "--only", "planning", "--quick", "--out", str(out), "-q"], tmp)
    res = [p.communicate(timeout=500) for p in (a, b)]
    if any("Traceback" in so + se for so, se in res):
        return "raw", "traceback: " + " / ".join(se[-200:] for _, se in res)
    rcs = (a.returncode, b.returncode)
    report = (out / "report.md").read_text() if (out / "report.md").exists() else ""
    has = [k for k in ("quasistatic", "planning") if k.lower() in report.lower()]
    if rcs != (0, 0) or len(has) != 2:
        return "wrong", f"exits {rcs}; sections in the report: {has}; {res[0][1][-150:]} {res[1][1][-150:]}"
    return "ok", f"exits {rcs}, both sections in report.md"


def three_sweeps(tmp: Path):
    out = tmp / "rows.parquet"
    ps = [_popen(["sweep", "tests.hostile_tasks:slow", "--grid", f"i={k}0,{k}1,{k}2", "--out", str(out), "-q"], tmp)
          for k in (1, 2, 3)]
    res = [p.communicate(timeout=300) for p in ps]
    import pandas as pd
    rows = sorted(pd.read_parquet(out)["i"]) if out.exists() else []
    want = sorted(int(f"{k}{j}") for k in (1, 2, 3) for j in range(3))
    if [p.returncode for p in ps] != [0, 0, 0] or rows != want:
        return "wrong", f"exits {[p.returncode for p in ps]}, rows {rows}: {[r[1][-100:] for r in res]}"
    return "ok", "3 writers, exit 0 each, all 9 rows"


def sweep_interrupted(tmp: Path):
    out = tmp / "rows.parquet"
    import pandas as pd
    p = _popen(["sweep", "tests.hostile_tasks:slow", "--grid", "i=" + ",".join(map(str, range(400))),
                "--out", str(out), "-q"], tmp)
    t0 = time.time()
    while time.time() - t0 < 200 and not out.exists():
        time.sleep(0.1)
    n0 = len(pd.read_parquet(out)) if out.exists() else 0
    time.sleep(2)
    p.send_signal(signal.SIGINT)
    so, se = p.communicate(timeout=120)
    if p.returncode != 130 or "Traceback" in se:
        return ("raw" if "Traceback" in se else "wrong"), f"exit {p.returncode}: {se[-300:]}"
    try:
        n = len(pd.read_parquet(out))
    except Exception as exc:  # noqa: BLE001
        return "wrong", f"exit 130, output unreadable: {type(exc).__name__} {exc}"
    return ("ok" if n >= n0 else "wrong"), f"exit 130, {n} finished rows kept ({n0} on disk before the signal)"


def fsize(limit):
    def cap():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        import resource
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return cap


def previous_intact(name: str, content: str = "previous") -> str:
    return (f"import os\nassert open(TMP + '/{name}').read() == {content!r}, 'previous file changed'\n"
            f"left = [n for n in os.listdir(TMP) if n.startswith('.') and not n.startswith('._')]\n"
            "assert not left, f'temporary files left: {left}'\n")


def help_width(tmp: Path):
    env = {k: v for k, v in ENV.items() if k != "COLUMNS"}
    p = subprocess.run(cli_cmd(["simulate", "--help"]), capture_output=True, text=True, env=env, cwd=tmp, timeout=120)
    width = max(len(ln) for ln in p.stdout.splitlines())
    return ("ok" if p.returncode == 0 and width <= 80 else "wrong"), f"exit {p.returncode}, widest line {width}"


# --------------------------------------------------------------------------------------- the cases
CASES: list[Case] = []


def add(id, group, text, **kw):
    CASES.append(Case(id=id, group=group, text=text, **kw))


# ---- the issue's own list -------------------------------------------------------------------------
add("I01", "issue", "sparse M with column index 7 in a 3x3 CSR, every method (API)", api=api_every(
    "M = sp.csr_matrix((np.ones(3), np.array([0, 7, 2]), np.array([0, 1, 2, 3])), shape=(3, 3))\n"
    "p = cl.LCP(M, -np.ones(3))"))
add("I02", "issue", "sparse M with a negative column index, every method", api=api_every(
    "M = sp.csr_matrix((np.ones(3), np.array([0, -5, 2]), np.array([0, 1, 2, 3])), shape=(3, 3))\n"
    "p = cl.LCP(M, -np.ones(3))"))
add("I03", "issue", ".npz with out-of-range sparse indices, `solve` every method via CLI",
    setup="import zipfile\nM = sp.csr_matrix(np.eye(3))\n"
          "np.savez(TMP + '/bad.npz', kind='LCP', M__data=M.data, M__indices=np.array([0, 9, 2]), M__indptr=M.indptr,"
          " M__shape=np.array([3, 3]), q=-np.ones(3))\n", cli=["solve", "{tmp}/bad.npz", "--method", "lemke"])
add("I04", "issue", "FCLIB file with bad CSC row indices", setup=
    "fc = cl.FrictionContact(sp.csr_matrix(np.eye(6)*2), -np.ones(6), [0.5, 0.5])\np = cl.save(fc, TMP + '/f.hdf5')\n"
    "import h5py\nf = h5py.File(p, 'a')\nname = [n for n in ['fclib_local/W/i'] if n in f][0]\n"
    "a = f[name][()]; a[0] = 99; del f[name]; f[name] = a; f.close()\n", cli=["solve", "{tmp}/f.hdf5"])
add("I05", "issue", "FCLIB file with a non-monotone column pointer", setup=
    "fc = cl.FrictionContact(sp.csr_matrix(np.eye(6)*2), -np.ones(6), [0.5, 0.5])\np = cl.save(fc, TMP + '/f.hdf5')\n"
    "import h5py\nf = h5py.File(p, 'a')\na = f['fclib_local/W/p'][()]; a[2], a[3] = a[3], a[2] - 1\n"
    "del f['fclib_local/W/p']; f['fclib_local/W/p'] = a; f.close()\n", cli=["solve", "{tmp}/f.hdf5"])
add("I06", "issue", "sweep over a folder with one corrupt-index problem file among 6", setup=
    "import os\nos.mkdir(TMP + '/d')\n"
    "for k in range(5): cl.save(cl.LCP(np.eye(2) * (k + 1), -np.ones(2)), TMP + f'/d/p{k}.npz')\n"
    "M = sp.csr_matrix(np.eye(3))\nnp.savez(TMP + '/d/bad.npz', kind='LCP', M__data=M.data, "
    "M__indices=np.array([0, 9, 2]), M__indptr=M.indptr, M__shape=np.array([3, 3]), q=-np.ones(3))\n",
    cli=["sweep", "solve", "{tmp}/d", "--out", "{tmp}/rows.parquet", "-q", "--json"], rc=(0,),
    after="import pandas as pd\ndf = pd.read_parquet(TMP + '/rows.parquet')\nassert len(df) == 6, len(df)\n")
add("I07", "issue", "disk full (RLIMIT_FSIZE 4 KiB) during `simulate --out`", cli=[
    "simulate", "stack", "--duration", "0.5", "--out", "{tmp}/run.h5", "-q"], preexec=fsize(4096), rc=(1,),
    setup=write("run.h5", "previous"), want="could not write", after=previous_intact("run.h5"))
add("I08", "issue", "dantzig/enumerate on infeasible LCP with 1e308 entries (false certificate?)", api=api_every(
    "p = cl.LCP(np.array([[1e308, -1e308], [-1e308, 1e308]]), np.array([-1e308, -1e308]))"))
add("I09", "issue", "`solve FILE --out result.txt` writes result.txt", setup=LCP2,
    cli=["solve", "{tmp}/p.npz", "--out", "{tmp}/result.txt"], rc=(0,),
    after="t = np.loadtxt(TMP + '/result.txt', skiprows=1)\nassert np.allclose(t[:, 0], [1.5, 0]), t\n")
add("I10", "issue", "two sweeps on one --out at once", custom=lambda tmp: three_sweeps(tmp))
add("I11", "issue", "two `reproduce --only X` into one folder at once", custom=two_reproduce, timeout=600)
add("I12", "issue", "`simulate --out /proc/x.h5`", cli=["simulate", "stack", "--out", "/proc/x.h5"], rc=(2,),
    want="cannot write there")
add("I13", "issue", "`simulate --html DIR` (a directory)", cli=["simulate", "stack", "--html", "{tmp}"], rc=(2,),
    want="is a directory")
add("I14", "issue", "`sweep --out DIR`", cli=["sweep", "tests.hostile_tasks:slow", "--grid", "i=1", "--out", "{tmp}"],
    rc=(2,), want="is a directory")
add("I15", "issue", "1e6 kg box on a 1e-3 kg box (scene file)", **sim("heavy.toml", scene(
    "1e6", extra="") + '[[bodies]]\nname = "light"\nmass = 1e-3\nposition = [0, 0, 0.3]\n'
    '[[bodies.shapes]]\nkind = "box"\nsize = [0.2, 0.2, 0.2]\n'), rc=(2,), want="mass ratio")
add("I16", "issue", "1e6 kg box on a 1e-3 kg box, dt 5 ms, limit lifted (--max-mass-ratio inf): fault reported, exit 1",
    **sim("heavy.toml", scene("1e-3", extra="").replace("dt = 0.01", "dt = 0.005")
          + '[[bodies]]\nname = "heavy"\nmass = 1e6\nposition = [0, 0, 0.3]\n'
    '[[bodies.shapes]]\nkind = "box"\nsize = [0.2, 0.2, 0.2]\n', "--max-mass-ratio", "inf", "--model",
    "stewart-trinkle", "--method", "lemke", "--duration", "0.1"), rc=(1,), want="physics fault")
add("I17", "issue", "URDF link whose collision mesh is missing", setup=write("m.urdf", urdf(
    [("base", 1, 1)], []).replace("<box size=\"0.1 0.1 0.1\"/>", '<mesh filename="gone.stl"/>')),
    cli=["simulate", "{tmp}/m.urdf", "--duration", "0.01"], rc=(2,), want="gone.stl")
add("I18", "issue", "`--duration inf`", cli=["simulate", "stack", "--duration", "inf"], rc=(2,))
add("I19", "issue", "`--set friction_directions=100000`", cli=["simulate", "stack", "--set",
                                                                "friction_directions=100000"], rc=(2,))
add("I20", "issue", "deeply nested JSON scene", setup=write("n.json", "[" * 100000 + "]" * 100000),
    cli=["simulate", "{tmp}/n.json"], rc=(2,))
add("I21", "issue", "`[[urdf]] path = \".\"`", setup=write("d.toml", '[[urdf]]\npath = "."\n'),
    cli=["simulate", "{tmp}/d.toml"], rc=(2,))
add("I22", "issue", "NaN joint origin in URDF", setup=write("j.urdf", urdf(
    [("a", 1, 1), ("b", 1, 1)], [dict(n="j", p="a", c="b")]).replace('xyz="0 0 0.2"', 'xyz="0 nan 0"')),
    cli=["simulate", "{tmp}/j.urdf"], rc=(2,))
add("I23", "issue", "`--set count=5000` (stack)", cli=["simulate", "stack", "--set", "count=5000", "--model",
                                                       "stewart-trinkle", "--duration", "0.01"], rc=(1, 2), timeout=300)
add("I24", "issue", "solver option 1e23 (`-o max_iterations=1e23`)", cli=["solve", NPZ, "--method", "pgs", "-o",
                                                                          "max_iterations=1e23"], rc=(2,))
add("I25", "issue", "inconsistent trajectory (steps/time cut) in `plot`", setup=(
    "import shutil, h5py\nshutil.copy(%r, TMP + '/t.h5')\nf = h5py.File(TMP + '/t.h5', 'a')\n"
    "a = f['steps/time'][:3]; del f['steps/time']; f['steps/time'] = a; f.close()\n") % str(DATA / "stack2_traj.h5"),
    cli=["plot", "{tmp}/t.h5", "--out", "{tmp}/p.png"], rc=(2,))
add("I26", "issue", "inconsistent trajectory in `replay`", setup=(
    "import shutil, h5py\nshutil.copy(%r, TMP + '/t.h5')\nf = h5py.File(TMP + '/t.h5', 'a')\n"
    "a = f['replay/position'][:2]; del f['replay/position']; f['replay/position'] = a; f.close()\n")
    % str(DATA / "stack2_traj.h5"), cli=["replay", "{tmp}/t.h5", "--html", "{tmp}/r.html"], rc=(2,))
add("I27", "issue", "complex M (API), every method", api=api_every(
    "p = cl.LCP(np.array([[2, 1j], [1j, 2]]), np.array([-1.0, -1.0]))"))
add("I28", "issue", "`tol=10**400` (API)", api="p = cl.LCP(np.eye(2), -np.ones(2))\nout = cl.solve(p, 'pgs', tol=10**400)")
add("I29", "issue", "malformed warm-start pairs (dantzig)", api=(
    "p = cl.LCP(np.eye(2), -np.ones(2))\nres = []\n"
    "for bad in ((['a'], [1.0]), ([5], [1.0]), ([0, 1], [1.0]), 'x', (None, None)):\n"
    "    try: cl.solve(p, 'dantzig', warm_start=bad); res.append('accepted')\n"
    "    except ContactlabError as e: res.append(type(e).__name__)\nout = res\n"))
add("I30", "issue", "Simulator.run(nan), run(inf), run(-1)", api=(
    "from contactlab.scenarios import make_scene\nfrom contactlab.sim import Simulator\n"
    "s = Simulator(make_scene('stack', count=1))\nres = []\nfor d in (float('nan'), float('inf'), -1):\n"
    "    try: s.run(d); res.append('ran')\n    except ContactlabError as e: res.append(type(e).__name__)\n"
    "assert res == ['ParamError'] * 3, res\nout = res\n"))
add("I31", "issue", "`qp` with a NaN warm start", api=(
    "p = cl.LCP(np.eye(2), -np.ones(2))\nout = cl.solve(p, 'qp', warm_start=np.array([np.nan, 0.0]))"))
add("I32", "issue", "`interior-point` on lo = hi rows", api=(
    "p = cl.BoxedLCP(np.array([[2.0, .5], [.5, 1.0]]), np.array([-1.0, 1.0]), lo=[.3, .2], hi=[.3, .2])\n"
    "s = cl.solve(p, 'interior-point')\nassert s.status == cl.Status.SOLVED, s.status\nout = s.status"))
add("I33", "issue", "`--help` piped to a file stays 80 columns", custom=help_width)
add("I34", "issue", "`10**400` as a matrix entry (API)", api=api_every(
    "p = cl.LCP([[10**400, 0], [0, 1]], [-1, -1])"))
add("I35", "issue", "`solve --out` to a directory", setup=LCP2, cli=["solve", "{tmp}/p.npz", "--out", "{tmp}"], rc=(2,))


# ---- new: problem constructors and solve() with every method (API) ------------------------------------
A = "np.array([[2.0, 1.0], [1.0, 2.0]])"
for i, (text, code) in enumerate([
    ("0x0 LCP", "p = cl.LCP(np.zeros((0, 0)), np.zeros(0))"),
    ("1x1 M = 0, q = -1 (no solution)", "p = cl.LCP([[0.0]], [-1.0])"),
    ("M = -I, q = -1 (not P: many solutions or none)", "p = cl.LCP(-np.eye(3), -np.ones(3))"),
    ("non-square M (2x3)", "p = cl.LCP(np.ones((2, 3)), np.ones(2))"),
    ("q as a column (2, 1)", f"p = cl.LCP({A}, -np.ones((2, 1)))"),
    ("M of strings", "p = cl.LCP([['1', '0'], ['0', '1']], [-1, -1])"),
    ("M object array of Fractions", "from fractions import Fraction as F\np = cl.LCP(np.array([[F(2), F(1)], [F(1), F(2)]], dtype=object), [-1, -1])"),
    ("M bool", "p = cl.LCP(np.eye(2, dtype=bool), -np.ones(2))"),
    ("M int8 with -128", "p = cl.LCP(np.array([[-128, 0], [0, 1]], dtype=np.int8), -np.ones(2))"),
    ("subnormal entries 1e-320", "p = cl.LCP(np.eye(2) * 1e-320, -np.ones(2) * 1e-320)"),
    ("tiny scale M 1e-300, q = -1", "p = cl.LCP(np.eye(2) * 1e-300, -np.ones(2))"),
    ("entries 1e154 (squares overflow)", f"p = cl.LCP({A} * 1e154, -np.ones(2) * 1e154)"),
    ("entries 1e200 mixed with 1e-200", "p = cl.LCP(np.array([[1e200, 1e-200], [1e-200, 1e-200]]), np.array([-1.0, -1e-200]))"),
    ("sparse CSC M", f"p = cl.LCP(sp.csc_matrix({A}), -np.ones(2))"),
    ("sparse COO with duplicate entries", "p = cl.LCP(sp.coo_matrix(([1.0, 1.0, 2.0], ([0, 0, 1], [0, 0, 1])), shape=(2, 2)), -np.ones(2))"),
    ("sparse CSR with unsorted indices", "M = sp.csr_matrix((np.array([1.0, 2.0, 2.0]), np.array([1, 0, 1]), np.array([0, 2, 3])), shape=(2, 2))\np = cl.LCP(M, -np.ones(2))"),
    ("sparse with explicit zeros", "M = sp.csr_matrix((np.array([2.0, 0.0, 0.0, 2.0]), np.array([0, 1, 0, 1]), np.array([0, 2, 4])), shape=(2, 2))\np = cl.LCP(M, -np.ones(2))"),
    ("sparse LIL / DOK / BSR", "p = cl.LCP(sp.lil_matrix(np.eye(2) * 2), -np.ones(2))\nevery(p)\np = cl.LCP(sp.dok_matrix(np.eye(2) * 2), -np.ones(2))\nevery(p)\np = cl.LCP(sp.bsr_matrix(np.eye(2) * 2), -np.ones(2))"),
    ("scipy sparse *array* (csr_array)", f"p = cl.LCP(sp.csr_array({A}), -np.ones(2))"),
    ("sparse int64 indptr, float32 data", f"M = sp.csr_matrix({A}.astype(np.float32))\nM.indptr = M.indptr.astype(np.int64)\np = cl.LCP(M, -np.ones(2))"),
    ("sparse M with NaN data", "M = sp.csr_matrix(np.eye(2))\nM.data[0] = np.nan\np = cl.LCP(M, -np.ones(2))"),
    ("sparse shape (3, 3) with q of 2", "p = cl.LCP(sp.eye(3, format='csr'), -np.ones(2))"),
    ("sparse indptr too short", "M = sp.csr_matrix(np.eye(3))\nM.indptr = M.indptr[:3]\np = cl.LCP(M, -np.ones(3))"),
    ("np.matrix M", f"p = cl.LCP(np.matrix({A}), -np.ones(2))"),
    ("masked array with a masked entry", f"p = cl.LCP(np.ma.masked_array({A}, mask=[[0, 1], [0, 0]]), -np.ones(2))"),
    ("read-only, Fortran-order, big-endian M", f"M = np.asfortranarray({A}).astype('>f8')\nM.setflags(write=False)\np = cl.LCP(M, -np.ones(2))"),
    ("float16 / longdouble M", f"p = cl.LCP({A}.astype(np.float16), -np.ones(2))\nevery(p)\np = cl.LCP({A}.astype(np.longdouble), -np.ones(2))"),
    ("strided view M[::2, ::2]", "B = np.eye(4) * 2\np = cl.LCP(B[::2, ::2], -np.ones(2))"),
    ("q with inf", f"p = cl.LCP({A}, [-np.inf, 0.0])"),
    ("M 3-D array", "p = cl.LCP(np.ones((2, 2, 2)), -np.ones(2))"),
    ("BoxedLCP lo = -inf, hi = inf (unbounded, singular M)", "p = cl.BoxedLCP(np.array([[1.0, 1], [1, 1]]), [-1.0, 1.0], lo=[-np.inf] * 2, hi=[np.inf] * 2)"),
    ("BoxedLCP lo > hi", f"p = cl.BoxedLCP({A}, -np.ones(2), lo=[1, 0], hi=[0, 1])"),
    ("BoxedLCP lo = +inf", f"p = cl.BoxedLCP({A}, -np.ones(2), lo=[np.inf, 0], hi=[np.inf, 1])"),
    ("BoxedLCP lo NaN", f"p = cl.BoxedLCP({A}, -np.ones(2), lo=[np.nan, 0], hi=[1, 1])"),
    ("BoxedLCP findex out of range", f"p = cl.BoxedLCP({A}, -np.ones(2), lo=[0, -1], hi=[1, 1], findex=[-1, 7], mu=[0, 0.5])"),
    ("BoxedLCP findex pointing at itself", f"p = cl.BoxedLCP({A}, -np.ones(2), lo=[0, -1], hi=[1, 1], findex=[-1, 1], mu=[0, 0.5])"),
    ("BoxedLCP findex cycle 0->1->0", f"p = cl.BoxedLCP({A}, -np.ones(2), lo=[-1, -1], hi=[1, 1], findex=[1, 0], mu=[0.5, 0.5])"),
    ("BoxedLCP findex -2, float findex 0.5", f"p = cl.BoxedLCP({A}, -np.ones(2), lo=[0, -1], hi=[1, 1], findex=[-2, 0.5], mu=[0, 0.5])"),
    ("BoxedLCP mu = -1 / NaN with findex", f"p = cl.BoxedLCP({A}, -np.ones(2), lo=[0, -1], hi=[1, 1], findex=[-1, 0], mu=[0, np.nan])"),
    ("BoxedLCP findex without mu", f"p = cl.BoxedLCP({A}, -np.ones(2), lo=[0, -1], hi=[1, 1], findex=[-1, 0])"),
    ("BoxedLCP mu = 1e308 with findex", f"p = cl.BoxedLCP({A}, -np.ones(2), lo=[0, -1], hi=[1, 1], findex=[-1, 0], mu=[0, 1e308])"),
    ("MixedLCP inconsistent block sizes", "p = cl.MixedLCP(np.eye(2), np.ones((2, 3)), np.ones((1, 2)), np.eye(2), np.ones(2), np.ones(2))"),
    ("MixedLCP singular A", "p = cl.MixedLCP(np.zeros((2, 2)), np.ones((2, 1)), np.ones((1, 2)), np.eye(1), np.ones(2), -np.ones(1))"),
    ("MixedLCP empty blocks (0 equalities)", "p = cl.MixedLCP(np.zeros((0, 0)), np.zeros((0, 2)), np.zeros((2, 0)), 2 * np.eye(2), np.zeros(0), -np.ones(2))"),
    ("FrictionContact dim 4", "p = cl.FrictionContact(np.eye(8), -np.ones(8), [0.5, 0.5], dim=4)"),
    ("FrictionContact dim 0 / -3", "p = cl.FrictionContact(np.eye(3), -np.ones(3), [0.5], dim=0)"),
    ("FrictionContact W not a multiple of dim", "p = cl.FrictionContact(np.eye(4), -np.ones(4), [0.5], dim=3)"),
    ("FrictionContact mu length mismatch", "p = cl.FrictionContact(np.eye(6), -np.ones(6), [0.5], dim=3)"),
    ("FrictionContact mu NaN / -1", "p = cl.FrictionContact(np.eye(3), -np.ones(3), [np.nan], dim=3)"),
    ("FrictionContact mu 1e300", "p = cl.FrictionContact(np.eye(3) * 2, -np.ones(3), [1e300], dim=3)"),
    ("FrictionContact W indefinite", "p = cl.FrictionContact(-np.eye(3), -np.ones(3), [0.5], dim=3)"),
    ("GlobalFrictionContact H wrong shape", "p = cl.GlobalFrictionContact(np.eye(3), np.ones((3, 2)), np.zeros(3), np.zeros(3), [0.5])"),
    ("GlobalFrictionContact singular M", "p = cl.GlobalFrictionContact(np.zeros((3, 3)), np.eye(3), -np.ones(3), np.zeros(3), [0.5])"),
    ("UCP with contacts = -1 / 1e9", "p = cl.UCP(np.eye(2), np.zeros(2), np.eye(2), np.zeros(2), contacts=-1)"),
    ("UCP with mismatched shapes", "p = cl.UCP(np.eye(2), np.zeros(3), np.eye(2), np.zeros(2))"),
    ("FactoredLCP cfm = -1 / NaN", "p = cl.FactoredLCP(np.ones((1, 2)), np.eye(2), cfm=-1.0)"),
    ("FactoredLCP N of wrong width", "p = cl.FactoredLCP(np.ones((1, 3)), np.eye(2))"),
    ("FactoredLCP singular M", "p = cl.FactoredLCP(np.ones((1, 2)), np.zeros((2, 2)))"),
    ("n = 1000 random dense SPD LCP, every LCP method (size, time)", "rng = np.random.default_rng(0)\nB = rng.normal(size=(1000, 1000))\np = cl.LCP(B @ B.T / 1000 + np.eye(1000), rng.normal(size=1000))\nout = every(p, ['lemke', 'dantzig', 'enumerate', 'pgs', 'psor', 'interior-point', 'qp', 'pgs-sm'])\n"),
]):
    add(f"P{i + 1:02d}", "problems", text, api=api_every(code) if "out = every" not in code else code, timeout=400)

for i, (text, code) in enumerate([
    ("method '' / 'LEMKE' / None / 123", "p = cl.LCP(np.eye(2), -np.ones(2))\nres = []\nfor m in ('', 'LEMKE', None, 123, 'lemke '):\n    try: res.append(cl.solve(p, m).status.name)\n    except ContactlabError as e: res.append(type(e).__name__)\nout = res"),
    ("certify = -1, NaN, 0, inf, 'x'", "p = cl.LCP(np.eye(2), -np.ones(2))\nres = []\nfor c in (-1, float('nan'), 0, float('inf'), 'x'):\n    try: res.append(cl.solve(p, 'lemke', certify=c).status.name)\n    except ContactlabError as e: res.append(type(e).__name__)\nassert 'SOLVED' not in res[:2] and res[-1] == 'ParamError', res\nout = res"),
    ("unknown option key", "p = cl.LCP(np.eye(2), -np.ones(2))\nout = cl.solve(p, 'pgs', frobnicate=3)"),
    ("max_iterations 0 / -1 / 1.5 / True", "p = cl.LCP(np.eye(2), -np.ones(2))\nres = []\nfor v in (0, -1, 1.5, True):\n    try: res.append(cl.solve(p, 'pgs', max_iterations=v).status.name)\n    except ContactlabError as e: res.append(type(e).__name__)\nout = res"),
    ("tol 0 / -1 / NaN", "p = cl.LCP(np.eye(2), -np.ones(2))\nres = []\nfor v in (0.0, -1.0, float('nan')):\n    try: res.append(cl.solve(p, 'pgs', tol=v).status.name)\n    except ContactlabError as e: res.append(type(e).__name__)\nout = res"),
    ("warm start of the wrong length (every method)", "p = cl.LCP(np.eye(2), -np.ones(2))\nres = []\nfor m in ALL:\n    try: res.append(cl.solve(p, m, warm_start=np.ones(5)).status.name)\n    except ContactlabError as e: res.append(type(e).__name__)\nout = res"),
    ("warm start with inf (every method)", "p = cl.LCP(np.eye(2), -np.ones(2))\nres = []\nfor m in ALL:\n    try: res.append(cl.solve(p, m, warm_start=np.array([np.inf, 0.0])).status.name)\n    except ContactlabError as e: res.append(type(e).__name__)\nout = res"),
    ("solve(not a problem: a dict / None)", "res = []\nfor x in ({'M': 1}, None, 'p.npz'):\n    try: cl.solve(x); res.append('accepted')\n    except ContactlabError as e: res.append(type(e).__name__)\nassert 'accepted' not in res, res\nout = res"),
    ("a user subclass of Problem", "class P(cl.Problem):\n    pass\ntry:\n    p = P()\nexcept TypeError as e:\n    p = None\nout = cl.solve(p) if p is not None else 'abstract'"),
    ("LCP mutated after construction (M set to NaN)", "p = cl.LCP(np.eye(2) * 2, -np.ones(2))\ntry:\n    p.M[0, 0] = np.nan\nexcept (ValueError, AttributeError, TypeError):\n    pass\nout = every(p)"),
    ("a registered user solver claiming SOLVED with a wrong z", "from contactlab.solution import Solution\n@cl.register('liar', problems=(cl.LCP,))\ndef liar(p, opts, warm):\n    return Solution(z=np.ones(2), w=np.ones(2), status=cl.Status.SOLVED)\ntry:\n    s = cl.solve(cl.LCP(np.eye(2), -2 * np.ones(2)), 'liar')\n    assert s.status != cl.Status.SOLVED, 'false certificate'\n    out = s.status\nexcept ContactlabError as e:\n    out = type(e).__name__"),
    ("a registered user solver returning z of the wrong length", "from contactlab.solution import Solution\n@cl.register('short', problems=(cl.LCP,))\ndef short(p, opts, warm):\n    return Solution(z=np.ones(5), w=np.ones(5), status=cl.Status.SOLVED)\ns = cl.solve(cl.LCP(np.eye(2), -np.ones(2)), 'short')\nassert s.status != cl.Status.SOLVED, 'false certificate'\nout = s.status"),
    ("a registered user solver returning None", "@cl.register('nothing', problems=(cl.LCP,))\ndef nothing(p, opts, warm):\n    return None\nout = cl.solve(cl.LCP(np.eye(2), -np.ones(2)), 'nothing')"),
]):
    add(f"S{i + 1:02d}", "solve", text, api=code)


# ---- new: problem files (load, solve FILE) ------------------------------------------------------------
GOODNPZ = "cl.save(cl.LCP(np.array([[2.0, 1.0], [1.0, 2.0]]), np.array([-3.0, 0.0])), TMP + '/g.npz')\n"
FC = ("fc = cl.FrictionContact(sp.csr_matrix(np.eye(6) * 2), -np.ones(6), [0.5, 0.5])\n"
      "cl.save(fc, TMP + '/f.hdf5')\nimport h5py\n")
for i, (text, setup, args) in enumerate([
    ("empty .npz file", "open(TMP + '/e.npz', 'wb').close()\n", ["{tmp}/e.npz"]),
    ("empty .dat file", "open(TMP + '/e.dat', 'wb').close()\n", ["{tmp}/e.dat"]),
    ("empty .hdf5 file", "open(TMP + '/e.hdf5', 'wb').close()\n", ["{tmp}/e.hdf5"]),
    ("a directory named x.npz", "import os\nos.mkdir(TMP + '/x.npz')\n", ["{tmp}/x.npz"]),
    ("/dev/null as the problem", "", ["/dev/null"]),
    ("/dev/zero as the problem (endless bytes)", "import os\nos.symlink('/dev/zero', TMP + '/z.dat')\n", ["{tmp}/z.dat"]),
    ("a FIFO with no writer", "import os\nos.mkfifo(TMP + '/f.npz')\n", ["{tmp}/f.npz"]),
    ("a symlink loop", "import os\nos.symlink(TMP + '/a.npz', TMP + '/b.npz')\nos.symlink(TMP + '/b.npz', TMP + '/a.npz')\n", ["{tmp}/a.npz"]),
    ("unreadable file (mode 000)", GOODNPZ + "import os\nos.chmod(TMP + '/g.npz', 0)\n", ["{tmp}/g.npz"]),
    (".npz with a pickled object array", "np.savez(TMP + '/o.npz', kind='LCP', M=np.array([object()], dtype=object), q=np.ones(1))\n", ["{tmp}/o.npz"]),
    (".npz of kind '../../etc/passwd'", "np.savez(TMP + '/k.npz', kind='../../etc/passwd', M=np.eye(2), q=np.ones(2))\n", ["{tmp}/k.npz"]),
    (".npz kind as an int array", "np.savez(TMP + '/k.npz', kind=np.array([1, 2]), M=np.eye(2), q=np.ones(2))\n", ["{tmp}/k.npz"]),
    (".npy header claiming shape (10**12,) (truncated data)",
     "import zipfile, io\nb = io.BytesIO(); np.save(b, np.zeros(4)); raw = b.getvalue().replace(b\"(4,)\", b\"(1000000000000,)\")\n"
     "z = zipfile.ZipFile(TMP + '/h.npz', 'w'); z.writestr('kind.npy', (lambda c: (np.save(c, np.array('LCP')), c.getvalue())[1])(io.BytesIO())); z.writestr('M.npy', raw); z.writestr('q.npy', raw); z.close()\n",
     ["{tmp}/h.npz"]),
    (".npz that is a zip bomb (1 GB of zeros, 1 MB file)",
     "import zipfile\nz = zipfile.ZipFile(TMP + '/b.npz', 'w', zipfile.ZIP_DEFLATED)\n"
     "hdr = b\"\\x93NUMPY\\x01\\x00v\\x00{'descr': '<f8', 'fortran_order': False, 'shape': (11585, 11585), }\" \n"
     "hdr = hdr + b' ' * (128 - len(hdr) - 1) + b'\\n'\n"
     "with z.open('M.npy', 'w', force_zip64=True) as f:\n    f.write(hdr)\n    blk = bytes(1 << 24)\n    for _ in range(64): f.write(blk)\n"
     "z.writestr('q.npy', (lambda c: (np.save(c, -np.ones(11585)), c.getvalue())[1])(__import__('io').BytesIO()))\n"
     "z.writestr('kind.npy', (lambda c: (np.save(c, np.array('LCP')), c.getvalue())[1])(__import__('io').BytesIO()))\nz.close()\n",
     ["{tmp}/b.npz", "--method", "pgs"]),
    (".dat header n = 999999999999", "open(TMP + '/h.dat', 'w').write('999999999999\\n0 2 2\\n2 2\\n1 0 0 1\\n-1 -1\\n')\n", ["{tmp}/h.dat"]),
    (".dat with negative counts", "open(TMP + '/h.dat', 'w').write('-2\\n0 -2 -2\\n2 2\\n1 0 0 1\\n-1 -1\\n')\n", ["{tmp}/h.dat"]),
    (".dat with non-UTF-8 bytes", "open(TMP + '/h.dat', 'wb').write(b'2\\n0 2 2\\n2 2\\n\\xff\\xfe 0 0 1\\n-1 -1\\n')\n", ["{tmp}/h.dat"]),
    (".dat with 1e309 and hex floats", "open(TMP + '/h.dat', 'w').write('2\\n0 2 2\\n2 2\\n1e309 0 0 0x1p3\\n-1 -1\\n')\n", ["{tmp}/h.dat"]),
    ("FCLIB without /fclib_local", FC + "f = h5py.File(TMP + '/f.hdf5', 'a'); del f['fclib_local']; f.close()\n", ["{tmp}/f.hdf5"]),
    ("FCLIB with W a group where a dataset belongs", FC + "f = h5py.File(TMP + '/f.hdf5', 'a'); del f['fclib_local/vectors/q']; f.create_group('fclib_local/vectors/q'); f.close()\n", ["{tmp}/f.hdf5"]),
    ("FCLIB with a soft link to nowhere", FC + "f = h5py.File(TMP + '/f.hdf5', 'a'); del f['fclib_local/vectors/q']; f['fclib_local/vectors/q'] = h5py.SoftLink('/nowhere'); f.close()\n", ["{tmp}/f.hdf5"]),
    ("FCLIB with an external link to /etc/passwd", FC + "f = h5py.File(TMP + '/f.hdf5', 'a'); del f['fclib_local/vectors/q']; f['fclib_local/vectors/q'] = h5py.ExternalLink('/etc/passwd', '/x'); f.close()\n", ["{tmp}/f.hdf5"]),
    ("FCLIB with string dataset for mu", FC + "f = h5py.File(TMP + '/f.hdf5', 'a'); del f['fclib_local/vectors/mu']; f['fclib_local/vectors/mu'] = np.array([b'a', b'b']); f.close()\n", ["{tmp}/f.hdf5"]),
    ("FCLIB with spacedim 7", FC + "f = h5py.File(TMP + '/f.hdf5', 'a')\nk = [k for k in ('fclib_local/spacedim', 'fclib_local/info/spacedim') if k in f]\nfor n in k: del f[n]; f[n] = np.array([7])\nf.attrs['spacedim'] = 7\nf.close()\n", ["{tmp}/f.hdf5"]),
    ("FCLIB with W nnz 10**9 claimed", FC + "f = h5py.File(TMP + '/f.hdf5', 'a')\nfor n in ('fclib_local/W/nzmax', 'fclib_local/W/nz'):\n    if n in f: del f[n]; f[n] = np.array([10 ** 9])\nf.close()\n", ["{tmp}/f.hdf5"]),
    ("unicode + spaces + newline in the path", GOODNPZ + "import shutil\nshutil.copy(TMP + '/g.npz', TMP + '/problème ü\\n1.npz')\n", ["{tmp}/problème ü\n1.npz"]),
    ("unknown suffix .xyz", GOODNPZ + "import shutil\nshutil.copy(TMP + '/g.npz', TMP + '/g.xyz')\n", ["{tmp}/g.xyz"]),
    (".npz renamed .dat (wrong content for the suffix)", GOODNPZ + "import shutil\nshutil.copy(TMP + '/g.npz', TMP + '/g.dat')\n", ["{tmp}/g.dat"]),
]):
    add(f"F{i + 1:02d}", "files", text, setup=setup, cli=["solve", *args, "-q"], timeout=180)

for i, (text, code) in enumerate([
    ("load() of a path given as bytes / int / None", "res = []\nfor x in (b'/tmp/x.npz', 3, None):\n    try: cl.load(x); res.append('accepted')\n    except ContactlabError as e: res.append(type(e).__name__)\nout = res"),
    ("save() to a directory, /proc, unknown suffix", "p = cl.LCP(np.eye(2), -np.ones(2))\nres = []\nfor x in (TMP, '/proc/x.npz', TMP + '/x.xyz'):\n    try: cl.save(p, x); res.append('accepted')\n    except ContactlabError as e: res.append(type(e).__name__)\nassert 'accepted' not in res, res\nout = res"),
    ("save() a FrictionContact to .npz / an LCP to .hdf5", "res = []\nfor p, x in ((cl.FrictionContact(np.eye(3), -np.ones(3), [0.5]), TMP + '/f.npz'), (cl.LCP(np.eye(2), -np.ones(2)), TMP + '/l.hdf5')):\n    try: cl.save(p, x); res.append('accepted')\n    except ContactlabError as e: res.append(type(e).__name__)\nout = res"),
    ("save()/load() round trip of a sparse BoxedLCP with findex", "p = cl.BoxedLCP(sp.csr_matrix(np.eye(3) * 2), -np.ones(3), lo=[0, -1, -1], hi=[np.inf, 1, 1], findex=[-1, 0, 0], mu=[0, .5, .5])\nq = cl.load(cl.save(p, TMP + '/b.npz'))\nassert np.array_equal(q.findex, p.findex) and (q.M != p.M).nnz == 0\nout = every(q)"),
]):
    add(f"F{i + 30:02d}", "files", text, api=code)


# ---- new: scene files and URDF ----------------------------------------------------------------------
BOX2 = '[[bodies]]\nname = "b2"\nmass = 1.0\nposition = [0, 0, 0.4]\n[[bodies.shapes]]\nkind = "box"\nsize = [0.2, 0.2, 0.2]\n'
for i, (text, name, content) in enumerate([
    ("body mass 0", "s.toml", scene("0.0")),
    ("body mass -1", "s.toml", scene("-1.0")),
    ("body mass nan", "s.toml", scene("nan")),
    ("body mass inf", "s.toml", scene("inf")),
    ("body mass 1e-300 (ratio to 1 kg huge)", "s.toml", scene("1e-300") + BOX2),
    ("inertia negative", "s.toml", scene(extra="inertia = [-1, 1, 1]\n")),
    ("inertia zero", "s.toml", scene(extra="inertia = [0, 0, 0]\n")),
    ("inertia violating the triangle inequality", "s.toml", scene(extra="inertia = [1, 1, 5]\n")),
    ("inertia non-symmetric 3x3", "s.toml", scene(extra="inertia = [[1, 2, 0], [0, 1, 0], [0, 0, 1]]\n")),
    ("box size 0", "s.toml", scene(size="[0, 0.2, 0.2]")),
    ("box size negative", "s.toml", scene(size="[-0.2, 0.2, 0.2]")),
    ("box size 1e300", "s.toml", scene(size="[1e300, 1e300, 1e300]")),
    ("box size as a string", "s.toml", scene(size='"big"')),
    ("unknown shape kind", "s.toml", scene().replace('kind = "box"', 'kind = "torus"')),
    ("duplicate body names", "s.toml", scene() + BOX2.replace('"b2"', '"box"')),
    ("body named 'world'", "s.toml", scene().replace('name = "box"', 'name = "world"')),
    ("unicode / RTL / NUL-free control chars in a body name", "s.toml", scene().replace('name = "box"', 'name = "b\\u202eox\\u0007✓"')),
    ("zero quaternion", "s.toml", scene(extra="orientation = [0, 0, 0, 0]\n")),
    ("unnormalised quaternion [2, 0, 0, 0]", "s.toml", scene(extra="orientation = [2, 0, 0, 0]\n")),
    ("halfspace normal [0, 0, 0]", "s.toml", scene().replace("normal = [0, 0, 1]", "normal = [0, 0, 0]")),
    ("gravity of 2 components", "s.toml", 'gravity = [0, -9.81]\n' + scene()),
    ("gravity 1e300", "s.toml", 'gravity = [0, 0, -1e300]\n' + scene()),
    ("settings dt = 0", "s.toml", scene().replace("dt = 0.01", "dt = 0")),
    ("settings dt = -0.01", "s.toml", scene().replace("dt = 0.01", "dt = -0.01")),
    ("settings friction_directions = 3 / 0", "s.toml", scene().replace("dt = 0.01", "dt = 0.01\nfriction_directions = 0")),
    ("settings margin = nan", "s.toml", scene().replace("dt = 0.01", "dt = 0.01\nmargin = nan")),
    ("settings contact_stabilization = 'magic'", "s.toml", scene().replace("dt = 0.01", "dt = 0.01\ncontact_stabilization = \"magic\"")),
    ("mu = -0.5", "s.toml", "mu = -0.5\n" + scene()),
    ("pair_mu naming a body that does not exist", "s.toml", 'pair_mu = { "box/ghost" = 0.8 }\n' + scene()),
    ("joint to a missing body", "s.toml", scene() + '[[joints]]\nname = "j"\nkind = "revolute"\nparent = "world"\nchild = "ghost"\nanchor = [0, 0, 0]\naxis = [0, 0, 1]\n'),
    ("joint axis [0, 0, 0]", "s.toml", scene() + '[[joints]]\nname = "j"\nkind = "revolute"\nparent = "world"\nchild = "box"\nanchor = [0, 0, 0]\naxis = [0, 0, 0]\n'),
    ("joint cycle box->b2->box", "s.toml", scene() + BOX2 + '[[joints]]\nname = "j1"\nkind = "revolute"\nparent = "box"\nchild = "b2"\nanchor = [0, 0, 0.3]\naxis = [0, 0, 1]\n[[joints]]\nname = "j2"\nkind = "revolute"\nparent = "b2"\nchild = "box"\nanchor = [0, 0, 0.3]\naxis = [0, 0, 1]\n'),
    ("joint lower > upper", "s.toml", scene() + '[[joints]]\nname = "j"\nkind = "revolute"\nparent = "world"\nchild = "box"\nanchor = [0, 0, 0]\naxis = [0, 0, 1]\nlower = 1\nupper = -1\n'),
    ("joint follows itself", "s.toml", scene() + '[[joints]]\nname = "j"\nkind = "revolute"\nparent = "world"\nchild = "box"\nanchor = [0, 0, 0]\naxis = [0, 0, 1]\nfollows = "j"\nratio = 2\n'),
    ("motor max_force = -1", "s.toml", scene() + '[[joints]]\nname = "j"\nkind = "revolute"\nparent = "world"\nchild = "box"\nanchor = [0, 0, 0]\naxis = [0, 0, 1]\n[joints.motor]\ntarget_velocity = 1e308\nmax_force = -1\n'),
    ("convex shape with 2 vertices", "s.toml", scene().replace('kind = "box"\nsize = [0.2, 0.2, 0.2]', 'kind = "convex"\nvertices = [[0, 0, 0], [1, 0, 0]]')),
    ("convex shape with NaN vertex", "s.toml", scene().replace('kind = "box"\nsize = [0.2, 0.2, 0.2]', 'kind = "convex"\nvertices = [[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, nan]]')),
    ("5000 bodies in one file (20000 box corners on the ground)", "s.json", None),
    ("JSON with NaN / Infinity literals", "s.json", '{"name": "x", "gravity": [0, 0, NaN], "bodies": [{"name": "b", "mass": Infinity}]}'),
    ("JSON top level a list", "s.json", "[1, 2, 3]"),
    ("TOML with 10 MB string", "s.toml", 'name = "' + "x" * 10_000_000 + '"\n' + scene()),
    ("TOML with a duplicate key (invalid TOML)", "s.toml", "mu = 0.5\nmu = 0.6\n" + scene()),
    ("scene file that is a binary blob", "s.toml", "\x00\x01\x02" * 1000),
    ("scene [[urdf]] with path traversal ../../../etc/passwd", "s.toml", '[[urdf]]\npath = "../../../../../../etc/passwd"\n'),
    ("scene [[urdf]] including itself (the .toml as URDF)", "s.toml", '[[urdf]]\npath = "s.toml"\n'),
]):
    if content is None:
        setup = ("import json\nb = [{'name': 'ground', 'kind': 'fixed', 'shapes': [{'kind': 'halfspace', 'normal': [0, 0, 1], 'offset': 0}]}]\n"
                 "b += [{'name': f'b{k}', 'mass': 1.0, 'position': [k % 100 * 0.3, k // 100 * 0.3, 0.1], 'shapes': [{'kind': 'box', 'size': [0.2, 0.2, 0.2]}]} for k in range(5000)]\n"
                 "json.dump({'name': 'big', 'bodies': b}, open(TMP + '/s.json', 'w'))\n")
        add(f"C{i + 1:02d}", "scenes", text, setup=setup, cli=["simulate", "{tmp}/s.json", "--duration", "0.01", "-q"],
            timeout=400)
    else:
        add(f"C{i + 1:02d}", "scenes", text, **sim(name, content), timeout=240)

for i, (text, content) in enumerate([
    ("URDF joint cycle a->b->a", urdf([("a", 1, 1), ("b", 1, 1)], [dict(n="j1", p="a", c="b"), dict(n="j2", p="b", c="a")])),
    ("URDF link with two parents", urdf([("a", 1, 1), ("b", 1, 1), ("c", 1, 1)], [dict(n="j1", p="a", c="c"), dict(n="j2", p="b", c="c")])),
    ("URDF joint to a missing link", urdf([("a", 1, 1)], [dict(n="j1", p="a", c="ghost")])),
    ("URDF joint to itself", urdf([("a", 1, 1)], [dict(n="j1", p="a", c="a")])),
    ("URDF zero inertia on a moving link", urdf([("a", 1, 1), ("b", 1, 0)], [dict(n="j", p="a", c="b")])),
    ("URDF negative inertia", urdf([("a", 1, 1), ("b", 1, -1)], [dict(n="j", p="a", c="b")])),
    ("URDF zero mass on a moving link", urdf([("a", 1, 1), ("b", 0, 1)], [dict(n="j", p="a", c="b")])),
    ("URDF negative mass", urdf([("a", 1, 1), ("b", -2, 1)], [dict(n="j", p="a", c="b")])),
    ("URDF limit lower > upper", urdf([("a", 1, 1), ("b", 1, 1)], [dict(n="j", p="a", c="b", lo=2, hi=-2)])),
    ("URDF axis 0 0 0", urdf([("a", 1, 1), ("b", 1, 1)], [dict(n="j", p="a", c="b", ax="0 0 0")])),
    ("URDF unknown joint type 'screw'", urdf([("a", 1, 1), ("b", 1, 1)], [dict(n="j", p="a", c="b", t="screw")])),
    ("URDF mesh path traversal ../../../../etc/passwd", urdf([("a", 1, 1)], []).replace('<box size="0.1 0.1 0.1"/>', '<mesh filename="../../../../etc/passwd"/>')),
    ("URDF package:// mesh", urdf([("a", 1, 1)], []).replace('<box size="0.1 0.1 0.1"/>', '<mesh filename="package://x/y.stl"/>')),
    ("URDF with no links", '<?xml version="1.0"?>\n<robot name="r"></robot>\n'),
    ("URDF root element not robot", '<?xml version="1.0"?>\n<html><body/></html>\n'),
    ("URDF billion-laughs entities", '<?xml version="1.0"?>\n<!DOCTYPE r [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;"><!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;"><!ENTITY d "&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;"><!ENTITY e "&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;"><!ENTITY f "&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;"><!ENTITY g "&f;&f;&f;&f;&f;&f;&f;&f;&f;&f;">]>\n<robot name="&g;"></robot>\n'),
    ("URDF 600-link chain", urdf([("l0", 1, 1)] + [(f"l{k}", 1, 1) for k in range(1, 600)], [dict(n=f"j{k}", p=f"l{k - 1}", c=f"l{k}") for k in range(1, 600)])),
    ("URDF box size '1 2' (2 numbers)", urdf([("a", 1, 1)], []).replace('size="0.1 0.1 0.1"', 'size="1 2"')),
    ("URDF mass 'heavy'", urdf([("a", 1, 1)], []).replace('mass value="1"', 'mass value="heavy"')),
]):
    add(f"U{i + 1:02d}", "urdf", text, setup=write("r.urdf", content),
        cli=["simulate", "{tmp}/r.urdf", "--duration", "0.02", "-q"], timeout=300)
add("U20", "urdf", "unicode file name 'röbot ✓.urdf'", setup=write("röbot ✓.urdf", urdf([("a", 1, 1), ("b", 1, 1)], [dict(n="j", p="a", c="b")])),
    cli=["simulate", "{tmp}/röbot ✓.urdf", "--duration", "0.02", "-q"], rc=(0,))
add("U21", "urdf", "load_urdf (API) of a URDF whose masses differ 1e9 times", api=(
    "from contactlab.mechanics.urdf import load_urdf\n" + write("r.urdf", urdf([("a", 1, 1), ("b", 1e9, 1), ("c", 1, 1)], [dict(n="j", p="a", c="b"), dict(n="k", p="b", c="c")]))
    + "out = len(load_urdf(TMP + '/r.urdf', fixed_base=False).bodies)\n"))


# ---- new: trajectory readers (plot, replay) --------------------------------------------------------
def traj(edit: str) -> str:
    return (f"import shutil, h5py\nshutil.copy({str(DATA / 'stack2_traj.h5')!r}, TMP + '/t.h5')\n"
            f"f = h5py.File(TMP + '/t.h5', 'a')\n{edit}\nf.close()\n")


for i, (text, setup, args, kw) in enumerate([
    ("plot a .npz problem file as a trajectory", GOODNPZ, ["plot", "{tmp}/g.npz", "--out", "{tmp}/p.png"], {}),
    ("plot an HDF5 without steps/", traj("del f['steps']"), ["plot", "{tmp}/t.h5", "--out", "{tmp}/p.png"], {}),
    ("plot steps/time all NaN", traj("a = f['steps/time'][()] * np.nan; del f['steps/time']; f['steps/time'] = a"), ["plot", "{tmp}/t.h5", "--out", "{tmp}/p.png"], {}),
    ("plot steps/time as strings", traj("n = f['steps/time'].shape[0]; del f['steps/time']; f['steps/time'] = np.array([b'x'] * n)"), ["plot", "{tmp}/t.h5", "--out", "{tmp}/p.png"], {}),
    ("plot --what bogus", traj(""), ["plot", "{tmp}/t.h5", "--out", "{tmp}/p.png", "--what", "bogus"], {"rc": (2,)}),
    ("plot --what ''", traj(""), ["plot", "{tmp}/t.h5", "--out", "{tmp}/p.png", "--what", ""], {"rc": (2,)}),
    ("plot --bodies ghost", traj(""), ["plot", "{tmp}/t.h5", "--out", "{tmp}/p.png", "--what", "bodies", "--bodies", "ghost"], {"rc": (2,)}),
    ("plot --out p.gif (unsupported suffix)", traj(""), ["plot", "{tmp}/t.h5", "--out", "{tmp}/p.gif"], {"rc": (2,)}),
    ("plot --out /proc/p.png", traj(""), ["plot", "{tmp}/t.h5", "--out", "/proc/p.png"], {"rc": (2,)}),
    ("plot --out onto a read-only existing file", traj("") + "open(TMP + '/p.png', 'w').write('previous')\nimport os\nos.chmod(TMP + '/p.png', 0o444)\nos.chmod(TMP, 0o555)\n", ["plot", "{tmp}/t.h5", "--out", "{tmp}/p.png"], {"rc": (0, 1, 2) if AS_ROOT else (1, 2)}),
    ("plot a trajectory whose file is still being written (.partial name)", traj(""), ["plot", "{tmp}/.t.h5.partial", "--out", "{tmp}/p.png"], {"rc": (2,)}),
    ("replay --max-frames 0 / -1", traj(""), ["replay", "{tmp}/t.h5", "--html", "{tmp}/r.html", "--max-frames", "-1"], {"rc": (2,)}),
    ("replay --max-contacts -5", traj(""), ["replay", "{tmp}/t.h5", "--html", "{tmp}/r.html", "--max-contacts", "-5"], {"rc": (2,)}),
    ("replay --speed nan", traj(""), ["replay", "{tmp}/t.h5", "--html", "{tmp}/r.html", "--speed", "nan"], {"rc": (2,)}),
    ("replay --speed -1 / inf", traj(""), ["replay", "{tmp}/t.h5", "--html", "{tmp}/r.html", "--speed", "inf"], {"rc": (2,)}),
    ("replay --title with </script><script>alert(1)", traj(""), ["replay", "{tmp}/t.h5", "--html", "{tmp}/r.html", "--title", "</script><script>alert(1)</script>"],
     {"rc": (0,), "after": "t = open(TMP + '/r.html').read()\nassert '<script>alert(1)' not in t, 'title injected'\n"}),
    ("replay body name with </script>", traj("n = f['bodies/names'][()]; n[0] = b'</script><b>'; del f['bodies/names']; f['bodies/names'] = n"),
     ["replay", "{tmp}/t.h5", "--html", "{tmp}/r.html"], {"after": "import os\nif os.path.exists(TMP + '/r.html'):\n    assert '</script><b>' not in open(TMP + '/r.html').read(), 'name injected'\n"}),
    ("replay of NaN positions", traj("a = f['replay/position'][()]; a[:] = np.nan; del f['replay/position']; f['replay/position'] = a"), ["replay", "{tmp}/t.h5", "--html", "{tmp}/r.html"], {}),
    ("replay --html onto the trajectory itself", traj(""), ["replay", "{tmp}/t.h5", "--html", "{tmp}/t.h5"],
     {"after": "import h5py\nh5py.File(TMP + '/t.h5', 'r').close()\n"}),
    ("plot --out onto the trajectory itself", traj(""), ["plot", "{tmp}/t.h5", "--out", "{tmp}/t.h5"],
     {"after": "import h5py\nh5py.File(TMP + '/t.h5', 'r').close()\n"}),
]):
    add(f"T{i + 1:02d}", "trajectory", text, setup=setup, cli=args, **kw)


# ---- new: sweep ------------------------------------------------------------------------------------
for i, (text, args, kw) in enumerate([
    ("grid value list empty 'i='", ["tests.hostile_tasks:slow", "--grid", "i="], {"rc": (2,)}),
    ("grid without '='", ["tests.hostile_tasks:slow", "--grid", "i"], {"rc": (2,)}),
    ("grid key repeated", ["tests.hostile_tasks:slow", "--grid", "i=1", "--grid", "i=2"], {}),
    ("task module that does not exist", ["nosuch.module:fn", "--grid", "i=1"], {"rc": (2,)}),
    ("task 'os:getcwd' (a callable with no such parameter)", ["os:getcwd", "--grid", "i=1"], {}),
    ("task not callable 'os:sep'", ["os:sep", "--grid", "i=1"], {"rc": (2,)}),
    ("--repeat 0", ["tests.hostile_tasks:slow", "--grid", "i=1", "--repeat", "0"], {"rc": (2,)}),
    ("--repeat -1", ["tests.hostile_tasks:slow", "--grid", "i=1", "--repeat", "-1"], {"rc": (2,)}),
    ("--workers 0", ["tests.hostile_tasks:slow", "--grid", "i=1", "--workers", "0"], {"rc": (2,)}),
    ("--workers -3", ["tests.hostile_tasks:slow", "--grid", "i=1", "--workers", "-3"], {"rc": (2,)}),
    ("--timeout 0 / nan", ["tests.hostile_tasks:slow", "--grid", "i=1", "--timeout", "nan"], {"rc": (2,)}),
    ("--timeout 0.001 (every row times out)", ["tests.hostile_tasks:slow", "--grid", "i=1,2", "--timeout", "0.001"], {"rc": (0,)}),
    ("--scheduler tcp://256.0.0.1:1", ["tests.hostile_tasks:slow", "--grid", "i=1", "--scheduler", "tcp://256.0.0.1:1"], {"rc": (1, 2), "timeout": 120}),
    ("a row raising MemoryError (serial, worker)", ["tests.hostile_tasks:out_of_memory", "--grid", "i=0,1,2"], {"rc": (0,)}),
    ("sweep simulate with a bad scene", ["simulate", "nosuch-scene", "--grid", "count=1"], {"rc": (0, 1, 2)}),
    ("sweep solve of a folder with no problem files", ["solve", "{tmp}", "--grid", "method=lemke"], {"rc": (2,)}),
    ("grid values of the wrong type for the task ('i=a,b')", ["tests.hostile_tasks:slow", "--grid", "i=a,b"], {"rc": (0,)}),
]):
    add(f"W{i + 1:02d}", "sweep", text, cli=["sweep", *args, "--out", "{tmp}/r.parquet", "-q"], **kw)
add("W18", "sweep", "--out an existing corrupt Parquet file (resume)", setup="open(TMP + '/r.parquet', 'w').write('not parquet')\n",
    cli=["sweep", "tests.hostile_tasks:slow", "--grid", "i=1", "--out", "{tmp}/r.parquet", "-q"], rc=(2,),
    after="assert open(TMP + '/r.parquet').read() == 'not parquet', 'the corrupt file was replaced silently'\n")
add("W19", "sweep", "--out an existing Parquet of other columns (resume)", setup="import pandas as pd\npd.DataFrame({'zz': [1]}).to_parquet(TMP + '/r.parquet')\n",
    cli=["sweep", "tests.hostile_tasks:slow", "--grid", "i=1", "--out", "{tmp}/r.parquet", "-q"])
add("W20", "sweep", "--out /dev/full", cli=["sweep", "tests.hostile_tasks:slow", "--grid", "i=1", "--out", "/dev/full"], rc=(2,))
add("W21", "sweep", "disk full (RLIMIT_FSIZE 4 KiB) during sweep --out", setup="open(TMP + '/r.parquet', 'w').write('previous')\n",
    cli=["sweep", "tests.hostile_tasks:slow", "--grid", "i=1,2", "--out", "{tmp}/r.parquet", "-q"], preexec=fsize(4096), rc=(1, 2),
    after=previous_intact("r.parquet"))
add("W22", "sweep", "SIGINT mid-sweep: finished rows kept, file valid", custom=sweep_interrupted)
add("W23", "sweep", "three sweeps on one --out at once", custom=three_sweeps)


# ---- new: reproduce --------------------------------------------------------------------------------
for i, (text, args, kw) in enumerate([
    ("--only nosuchsection", ["--only", "nosuchsection", "--out", "{tmp}/r"], {"rc": (2,)}),
    ("--only ''", ["--only", "", "--out", "{tmp}/r"], {"rc": (2,)}),
    ("--only '*'", ["--only", "*", "--out", "{tmp}/r"], {"rc": (2,)}),
    ("--out /proc/rep", ["--only", "planning", "--quick", "--out", "/proc/rep"], {"rc": (2,)}),
    ("--out below a file ({tmp}/file/sub)", ["--only", "planning", "--quick", "--out", "{tmp}/file/sub"], {"rc": (2,)}),
    ("--jobs 0", ["--only", "planning", "--jobs", "0", "--out", "{tmp}/r"], {"rc": (2,)}),
    ("--jobs 100000", ["--only", "planning", "--quick", "--jobs", "100000", "--out", "{tmp}/r"], {"rc": (0, 2), "timeout": 600}),
]):
    setup = "open(TMP + '/file', 'w').write('x')\n" if "below a file" in text else None
    add(f"R{i + 1:02d}", "reproduce", text, setup=setup, cli=["reproduce", *args, "-q"], **kw)
add("R08", "reproduce", "disk full (RLIMIT_FSIZE 1 KiB) during reproduce --only planning",
    setup="import os\nos.mkdir(TMP + '/r')\nopen(TMP + '/r/report.md', 'w').write('previous')\n",
    cli=["reproduce", "--only", "planning", "--quick", "--out", "{tmp}/r", "-q"], preexec=fsize(1024), rc=(1,),
    after="assert open(TMP + '/r/report.md').read() == 'previous', 'report changed'\n", timeout=400)


# ---- new: simulate options ----------------------------------------------------------------------------
for i, (text, args, kw) in enumerate([
    ("--dt 0", ["--dt", "0"], {"rc": (2,)}),
    ("--dt -0.01", ["--dt", "-0.01"], {"rc": (2,)}),
    ("--dt nan", ["--dt", "nan"], {"rc": (2,)}),
    ("--dt inf", ["--dt", "inf"], {"rc": (2,)}),
    ("--dt 1e-12 --duration 1 (1e12 steps)", ["--dt", "1e-12", "--duration", "1"], {"rc": (2,)}),
    ("--dt 10 (one huge step)", ["--dt", "10", "--duration", "10"], {"rc": (0, 1)}),
    ("--dt 1e-300", ["--dt", "1e-300", "--duration", "1e-299"], {"rc": (0, 1, 2)}),
    ("--duration 0", ["--duration", "0"], {"rc": (0,)}),
    ("--duration -1", ["--duration", "-1"], {"rc": (2,)}),
    ("--duration 1e-9 (less than a step)", ["--duration", "1e-9"], {"rc": (0,)}),
    ("--set without '='", ["--set", "count"], {"rc": (2,)}),
    ("--set unknown key", ["--set", "colour=red"], {"rc": (2,)}),
    ("--set count=abc", ["--set", "count=abc"], {"rc": (2,)}),
    ("--set count=2.5", ["--set", "count=2.5"], {"rc": (2,)}),
    ("--set count=0", ["--set", "count=0"], {"rc": (0, 2)}),
    ("--set mu=-1", ["--set", "mu=-1"], {"rc": (2,)}),
    ("--set mu=nan", ["--set", "mu=nan"], {"rc": (2,)}),
    ("--set size=0", ["--set", "size=0"], {"rc": (2,)}),
    ("--set mass=-1", ["--set", "mass=-1"], {"rc": (2,)}),
    ("--set mass=1e-300", ["--set", "mass=1e-300"], {"rc": (0, 1, 2)}),
    ("--set dt=0 (through --set)", ["--set", "dt=0"], {"rc": (2,)}),
    ("--set offset=1e308", ["--set", "offset=1e308"], {"rc": (0, 1, 2)}),
    ("--set count=1 twice with different values", ["--set", "count=1", "--set", "count=3"], {"rc": (0, 2)}),
    ("--set columns=-1", ["--set", "columns=-1"], {"rc": (2,)}),
    ("--model bogus", ["--model", "bogus"], {"rc": (2,)}),
    ("--method bogus", ["--method", "bogus"], {"rc": (2,)}),
    ("--model no-slip --method nsgs (mismatch)", ["--model", "no-slip", "--method", "nsgs"], {"rc": (2,)}),
    ("--model viscous --method enumerate (exponential)", ["--model", "stewart-trinkle", "--method", "enumerate", "--set", "count=3"], {"rc": (0, 1, 2), "timeout": 300}),
    ("--iterations 0", ["--iterations", "0"], {"rc": (2,)}),
    ("--iterations -1", ["--iterations", "-1"], {"rc": (2,)}),
    ("--w-step-tol nan", ["--w-step-tol", "nan"], {"rc": (2,)}),
    ("--max-mass-ratio 0", ["--max-mass-ratio", "0"], {"rc": (2,)}),
    ("--max-mass-ratio nan", ["--max-mass-ratio", "nan"], {"rc": (2,)}),
    ("--reuse bogus", ["--reuse", "bogus"], {"rc": (2,)}),
    ("--out a directory", ["--out", "{tmp}"], {"rc": (2,)}),
    ("--out /dev/full", ["--out", "/dev/full"], {"rc": (2,)}),
    ("--out in a missing folder a/b/c/r.h5", ["--out", "{tmp}/a/b/c/r.h5"], {"rc": (0,)}),
    ("--out x.txt (not HDF5 suffix)", ["--out", "{tmp}/x.txt"], {"rc": (0, 2)}),
    ("--export-fclib onto an existing file", ["--export-fclib", "{tmp}/file"], {"rc": (2,)}),
    ("--export-fclib /proc/x", ["--export-fclib", "/proc/x"], {"rc": (2,)}),
    ("--html /proc/x.html", ["--html", "/proc/x.html"], {"rc": (2,)}),
    ("--out and --html the same file", ["--out", "{tmp}/same.h5", "--html", "{tmp}/same.h5"], {"rc": (2,)}),
    ("--json with --quiet", ["--json", "-q"], {"rc": (0,)}),
    ("scene name with path traversal '../../etc/passwd'", [], {"rc": (2,), "scene": "../../etc/passwd"}),
    ("scene '' (empty name)", [], {"rc": (2,), "scene": ""}),
]):
    scene_arg = kw.pop("scene", "stack")
    setup = "open(TMP + '/file', 'w').write('x')\n" if "existing file" in text else None
    add(f"M{i + 1:02d}", "simulate", text, setup=setup,
        cli=["simulate", scene_arg, "--set", "count=2", "--duration", "0.05", "-q", *args]
        if scene_arg == "stack" and "count=" not in " ".join(args) else ["simulate", scene_arg, "--duration", "0.05", "-q", *args],
        timeout=kw.pop("timeout", 240), **kw)
add("M46", "simulate", "--out onto an existing read-only file", setup="open(TMP + '/r.h5', 'w').write('previous')\nimport os\nos.chmod(TMP + '/r.h5', 0o444)\n",
    cli=["simulate", "stack", "--set", "count=2", "--duration", "0.05", "-q", "--out", "{tmp}/r.h5"], rc=(0, 1, 2))
add("M47", "simulate", "--out in a read-only folder", setup="import os\nos.mkdir(TMP + '/ro')\nos.chmod(TMP + '/ro', 0o555)\n",
    cli=["simulate", "stack", "--set", "count=2", "--duration", "0.05", "-q", "--out", "{tmp}/ro/r.h5"],
    rc=(0, 2) if AS_ROOT else (2,))
add("M48", "simulate", "disk full (RLIMIT_FSIZE 64 KiB) while flushing steps", setup=write("run.h5", "previous"),
    cli=["simulate", "pile", "--set", "count=6", "--duration", "2", "--out", "{tmp}/run.h5", "-q"], preexec=fsize(65536), rc=(1,),
    after=previous_intact("run.h5"), timeout=400)
add("M49", "simulate", "disk full (RLIMIT_FSIZE 4 KiB) for --html", setup=write("r.html", "previous"),
    cli=["simulate", "stack", "--set", "count=2", "--duration", "0.2", "--html", "{tmp}/r.html", "-q"], preexec=fsize(4096), rc=(1,),
    after=previous_intact("r.html"))
add("M50", "simulate", "disk full (RLIMIT_FSIZE 1 KiB) for --export-fclib", cli=[
    "simulate", "stack", "--set", "count=2", "--duration", "0.05", "--export-fclib", "{tmp}/fc", "-q"], preexec=fsize(1024), rc=(1,))
add("M51", "simulate", "disk full (RLIMIT_FSIZE 100 B) for solve --out", setup=LCP2 + write("r.npz", "previous"),
    cli=["solve", "{tmp}/p.npz", "--out", "{tmp}/r.npz"], preexec=fsize(100), rc=(1,), after=previous_intact("r.npz"))
add("M52", "simulate", "SIGINT mid-write of simulate --out", custom=signal_mid_write(signal.SIGINT), timeout=400)
add("M53", "simulate", "SIGTERM mid-write of simulate --out", custom=signal_mid_write(signal.SIGTERM), timeout=400)
add("M54", "simulate", "two simulate --out into one file at once", custom=lambda tmp: two_simulates(tmp), timeout=400)


def two_simulates(tmp: Path):
    out = tmp / "run.h5"
    ps = [_popen(["simulate", "stack", "--set", f"count={k}", "--duration", "0.5", "--out", str(out), "-q"], tmp)
          for k in (2, 3)]
    res = [p.communicate(timeout=300) for p in ps]
    if any("Traceback" in se for _, se in res):
        return "raw", " / ".join(se[-200:] for _, se in res)
    bad = _valid_traj(out)
    if bad or [p.returncode for p in ps] != [0, 0]:
        return "wrong", f"exits {[p.returncode for p in ps]}, file {bad or 'valid'}"
    import h5py
    with h5py.File(out, "r") as f:
        names = len(f["bodies/names"])
    left = [q.name for q in tmp.iterdir() if q.name.startswith(".")]
    return ("ok" if not left else "wrong"), f"exit 0 both; the file holds one whole run ({names} bodies); left {left}"


# ---- what this campaign found, for the table (class: defect fixed / defect left) ----------------------
FIXED = {
    "S02": "certify='x' raised TypeError; inf certified any finite answer",
    "S12": "SOLVED: the certificate read the first n of 5 entries",
    "S13": "AttributeError traceback",
    "F06": "read for ever", "F07": "blocked for ever in open()",
    "F20": "AttributeError traceback", "F30": "TypeError", "F31": "FileNotFoundError from the temporary file",
    "C26": "accepted; the run used NaN contact distances",
    "T13": "accepted silently", "T15": "accepted", "T19": "the trajectory was replaced by the page",
    "M07": "OverflowError traceback in the fault check", "M42": "the page replaced the trajectory",
    "M48": "SIGSEGV in HDF5's close of the failed file, no message, .partial left",
    "M50": "SIGSEGV in HDF5's close; then 'could not write None'",
    "M53": "the KeyboardInterrupt landed in an h5py clean-up callback: 'Exception ignored' traceback, run went on, "
           "exit 0",
}
LEFT = {
    "C08": "an inertia breaking the triangle inequality is accepted (URDFs in the wild break it by rounding; "
           "a warning needs a tolerance chosen with care)",
}
for _c in CASES:
    _c.fixed = FIXED.get(_c.id, "")
    _c.left = LEFT.get(_c.id, "")

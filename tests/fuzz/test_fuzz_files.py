"""Fuzzing the file readers and CLI commands with mutated files (issue 40): valid problem files
(.npz dense and sparse, Siconos .dat, FCLIB .hdf5), scene files (.json, .toml), URDF files and a
trajectory file are mutated (bytes flipped, inserted, cut; number tokens replaced by hostile numbers;
HDF5 and .npz datasets replaced by arrays of another length, type or content) and read in a child
process (tests/fuzz/harness.py): a contactlab error or an honest answer, never a crash or a raw
exception. Mutations are drawn by hypothesis with fixed examples (tests/conftest.py)."""
import json
import re
import shutil
from pathlib import Path

import h5py
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import strategies as st

import contactlab as cl

from .harness import failures, run_cases
from .test_fuzz_problems import collect

DATA = Path(__file__).resolve().parents[1] / "data"
HOSTILE = ["nan", "inf", "-inf", "1e309", "-1", "0", "-7", "1e308", "99999999999", "10" * 200, "2.5", "x", "", "[]"]


# --------------------------------------------------------------------------- valid starting files
def base_files(tmp: Path) -> dict:
    rng = np.random.default_rng(0)
    A = rng.normal(size=(4, 4))
    M, q = A @ A.T + np.eye(4), rng.normal(size=4)
    files = {"npz": [cl.save(cl.LCP(M, q), tmp / "dense.npz"),
                     cl.save(cl.LCP(sp.csr_matrix(M), q), tmp / "sparse.npz"),
                     cl.save(cl.BoxedLCP(M, q, -np.ones(4), np.ones(4)), tmp / "boxed.npz")]}
    dat = tmp / "lcp.dat"
    dat.write_text("4\n0 4 4\n4 4\n" + " ".join(f"{x:.17g}" for x in M.T.ravel()) + "\n"
                   + " ".join(f"{x:.17g}" for x in q) + "\n")
    W = sp.csr_matrix(np.kron(np.eye(2), np.eye(3)) * 2.0 + 0.1)
    fc = cl.FrictionContact(W, -np.ones(6), [0.5, 0.3], dim=3)
    files["dat"] = [dat, cl.save(fc, tmp / "fc.dat")]
    files["hdf5"] = [cl.save(fc, tmp / "fc.hdf5")]
    from contactlab.scenarios import make_scene
    from contactlab.scenarios.io import save_scene
    files["scene"] = [save_scene(make_scene("stack", count=2), tmp / "stack.json")]
    toml = tmp / "ramp.toml"
    toml.write_text('name = "ramp"\nmu = 0.4\ngravity = [0, 0, -9.81]\n[settings]\ndt = 0.005\n'
                    'friction_directions = 4\n[[bodies]]\nname = "ground"\nkind = "fixed"\n'
                    '[[bodies.shapes]]\nkind = "halfspace"\nnormal = [0, 0, 1]\noffset = 0.0\n'
                    '[[bodies]]\nname = "box"\nmass = 1.0\nposition = [0, 0, 0.1]\n'
                    '[[bodies.shapes]]\nkind = "box"\nsize = [0.2, 0.2, 0.2]\n')
    files["scene"].append(toml)
    urdf = tmp / "arm.urdf"
    link = ('<link name="{n}"><inertial><origin xyz="0 0 0.1"/><mass value="1"/><inertia ixx="0.1" '
            'iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial><collision><origin xyz="0 0 0.1"/>'
            '<geometry><box size="0.1 0.1 0.2"/></geometry></collision></link>\n')
    urdf.write_text('<?xml version="1.0"?>\n<robot name="arm">\n' + link.format(n="base") + link.format(n="upper")
                    + '<joint name="shoulder" type="revolute"><parent link="base"/><child link="upper"/>'
                      '<origin xyz="0 0 0.2" rpy="0 0 0"/><axis xyz="0 1 0"/>'
                      '<limit lower="-1.5" upper="1.5" effort="10" velocity="2"/></joint>\n</robot>\n')
    files["urdf"] = [urdf]
    files["trajectory"] = [shutil.copy(DATA / "stack2_traj.h5", tmp / "traj.h5")]
    return files


# --------------------------------------------------------------------------------------- mutators
@st.composite
def byte_mutation(draw):
    """A list of (operation, position fraction, bytes) edits of a file's bytes."""
    ops = st.tuples(st.sampled_from(["flip", "cut", "insert", "zero", "dup"]), st.floats(0, 1),
                    st.binary(min_size=1, max_size=8))
    return draw(st.lists(ops, min_size=1, max_size=3))


def apply_bytes(data: bytes, edits) -> bytes:
    b = bytearray(data)
    for op, frac, blob in edits:
        if not b:
            break
        i = min(int(frac * len(b)), len(b) - 1)
        if op == "flip":
            b[i] ^= blob[0] or 0xFF
        elif op == "cut":
            del b[i:]
        elif op == "insert":
            b[i:i] = blob
        elif op == "zero":
            b[i:i + len(blob)] = bytes(len(blob))
        else:
            b[i:i] = b[max(0, i - 16):i]
    return bytes(b)


NUMBER = re.compile(rb"-?\d+(\.\d+)?([eE][-+]?\d+)?")


@st.composite
def token_mutation(draw):
    """Replace some number tokens of a text file by hostile ones, or drop / duplicate a line."""
    return draw(st.lists(st.tuples(st.sampled_from(["number", "number", "dropline", "dupline"]), st.floats(0, 1),
                                   st.sampled_from(HOSTILE)), min_size=1, max_size=3))


def apply_tokens(text: bytes, edits) -> bytes:
    for op, frac, token in edits:
        if op == "number":
            spots = list(NUMBER.finditer(text))
            if spots:
                m = spots[min(int(frac * len(spots)), len(spots) - 1)]
                text = text[:m.start()] + token.encode() + text[m.end():]
        else:
            lines = text.split(b"\n")
            i = min(int(frac * len(lines)), len(lines) - 1)
            lines[i:i + 1] = [] if op == "dropline" else [lines[i], lines[i]]
            text = b"\n".join(lines)
    return text


@st.composite
def array_mutation(draw):
    """Which dataset (fraction of the sorted list) becomes what: another length, dtype or content."""
    return (draw(st.floats(0, 1)),
            draw(st.sampled_from(["shorter", "longer", "negative", "huge", "nan", "float", "complex", "scalar",
                                  "2d", "text"])),
            draw(st.integers(0, 2 ** 31)))


def new_array(a: np.ndarray, what: str, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    a = np.asarray(a)
    flat = a.reshape(-1) if a.ndim else a.reshape(1)
    if what == "shorter":
        return a[: max(len(a) - 1 - seed % 3, 0)] if a.ndim else flat[:0]
    if what == "longer":
        return np.concatenate([flat, flat[: 1 + seed % 5] if flat.size else np.zeros(2, flat.dtype)])
    if what == "negative" and flat.dtype.kind in "iuf":
        return (-np.abs(flat) - 1).astype(flat.dtype if flat.dtype.kind != "u" else np.int64)
    if what == "huge" and flat.dtype.kind in "iuf":
        return np.full_like(flat, np.iinfo(np.int32).max if flat.dtype.kind in "iu" else 1e308)
    if what == "nan" and flat.dtype.kind == "f":
        out = flat.copy()
        out[rng.integers(len(out))] = np.nan
        return out
    if what == "float" and flat.dtype.kind in "iu":
        return flat.astype(float) + 0.5
    if what == "complex" and flat.dtype.kind in "iuf":
        return flat.astype(complex) * (1 + 1j)
    if what == "scalar":
        return np.array(7)
    if what == "2d":
        return np.stack([flat, flat]) if flat.size else np.zeros((2, 2))
    if what == "text":
        return np.array([b"garbage"])
    return rng.integers(-5, 50, size=max(flat.size, 1)).astype(np.int64)


def mutate_h5(src: Path, dst: Path, mutation) -> Path:
    shutil.copy(src, dst)
    frac, what, seed = mutation
    with h5py.File(dst, "a") as f:
        names = []
        f.visititems(lambda n, o: names.append(n) if isinstance(o, h5py.Dataset) else None)
        name = sorted(names)[min(int(frac * len(names)), len(names) - 1)]
        new = new_array(f[name][()], what, seed)
        del f[name]
        f[name] = new
    return dst


def mutate_npz(src: Path, dst: Path, mutation) -> Path:
    frac, what, seed = mutation
    with np.load(src, allow_pickle=False) as f:
        arrays = {k: f[k] for k in f.files}
    name = sorted(arrays)[min(int(frac * len(arrays)), len(arrays) - 1)]
    arrays[name] = new_array(arrays[name], what, seed)
    with open(dst, "wb") as out:
        np.savez(out, **arrays)
    return dst


# ------------------------------------------------------------------------------------------ tests
def _cases(tmp: Path, files: list[Path], n_bytes: int, n_tokens: int, n_arrays: int, array_mutator=None) -> list:
    out = []
    for k, edits in enumerate(collect(byte_mutation(), n_bytes)):
        src = files[k % len(files)]
        dst = tmp / f"b{k}{src.suffix}"
        dst.write_bytes(apply_bytes(src.read_bytes(), edits))
        out.append(dst)
    for k, edits in enumerate(collect(token_mutation(), n_tokens)):
        src = files[k % len(files)]
        dst = tmp / f"t{k}{src.suffix}"
        dst.write_bytes(apply_tokens(src.read_bytes(), edits))
        out.append(dst)
    if array_mutator is not None:
        for k, m in enumerate(collect(array_mutation(), n_arrays)):
            src = files[k % len(files)]
            out.append(array_mutator(src, tmp / f"a{k}{src.suffix}", m))
    return [str(p) for p in out]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    return base_files(tmp_path_factory.mktemp("fuzz-base"))


def check(kind: str, cases: list):
    results = run_cases(kind, cases)
    assert len(results) == len(cases)
    bad = failures(results, cases)
    assert not bad, bad[:5]
    return results


def test_fuzz_problem_files(tmp_path, files):
    cases = _cases(tmp_path, files["npz"], 10, 0, 30, mutate_npz)
    cases += _cases(tmp_path, files["dat"], 10, 25, 0)
    cases += _cases(tmp_path, files["hdf5"], 8, 0, 30, mutate_h5)
    results = check("load", cases)
    assert {"ok", "refused"} <= {r[1] for r in results}


def test_fuzz_scene_and_urdf_files(tmp_path, files):
    check("scene", _cases(tmp_path, files["scene"], 10, 25, 0))
    check("urdf", _cases(tmp_path, files["urdf"], 10, 25, 0))


def test_fuzz_cli_on_mutated_files(tmp_path, files):
    """The commands that read files: solve (mutated problem files), plot and replay (mutated
    trajectories). Scene files are fuzzed through their loader above (a successful simulate would
    spend the suite's time compiling kernels)."""
    trajs = _cases(tmp_path, files["trajectory"], 3, 0, 14, mutate_h5)
    probs = _cases(tmp_path, files["npz"] + files["dat"], 4, 6, 0)
    cases = [["solve", p, "--method", "lemke"] for p in probs]
    cases += [[cmd, t, flag, str(tmp_path / f"out{i}{ext}")] for i, t in enumerate(trajs)
              for cmd, flag, ext in (("replay", "--html", ".html"),)]
    cases += [["plot", t, "--out", str(tmp_path / f"fig{i}.png"), "--what", "energy"] for i, t in enumerate(trajs[:6])]
    check("cli", cases)


def test_fuzz_cli_arguments(tmp_path, files):
    """Hostile option values for the commands (numbers, paths, names), in the child. The simulate
    cases are all refused before a step (a run would spend the suite's time compiling kernels)."""
    prob = str(files["npz"][0])
    values = collect(st.sampled_from(HOSTILE + ["1e23", "-0", "1e-400", "auto", "..", "/proc/x", str(tmp_path)]), 20)
    keys = collect(st.sampled_from(["tol", "max_iterations", "omega", "warm", "max_pivots"]), 20)
    cases = [["solve", prob, "--method", m, "-o", f"{k}={v}"]
             for m, k, v in zip(["pgs", "lemke", "dantzig", "interior-point"] * 5, keys, values)]
    cases += [["solve", prob, "--out", v if v else "x"] for v in values[:8]]
    cases += [["simulate", "stack", "--set", f"{k}={v}", "--duration", "0"]
              for k, vals in (("count", ("-1", "0", "99999999999", "1e23", "x")),
                              ("friction_directions", ("-1", "0", "99999999999", "1e23", "x", "3")))
              for v in vals]
    cases += [["simulate", "stack", "--duration", v] for v in ("inf", "nan", "-1", "1e400")]
    results = check("cli", cases)
    assert all(r[1] == "refused" for r in results[-15:]), results[-15:]

"""Rewrite the golden trajectories and say, per case, how far the fresh run is from the stored one.

    PYTHONPATH=src python -m tests.golden.regenerate                 # run every case, print, rewrite
    PYTHONPATH=src python -m tests.golden.regenerate --check         # print only; exit 1 beyond a tolerance
    PYTHONPATH=src python -m tests.golden.regenerate --case 'pile-*' # some cases (fnmatch patterns)
    PYTHONPATH=src python -m tests.golden.regenerate --check --variants
        # each case again under OpenBLAS's other CPU kernels and NumPy's other SIMD loops (VARIANTS,
        # one process each): the differences the tolerances of tests/golden/cases.py are set from

Per case it prints the largest |difference| of the positions (m) and quaternions against the stored
data ("same bits" when every stored number is identical), the steps whose certification changed,
and whether the difference is within the case's tolerance. An engine change then shows either the
same bits or a difference to explain in its commit message (and, for a deliberate change, the
rewritten data). Files are written atomically (a temporary file in the same folder, then renamed).
"""
from __future__ import annotations

import argparse
import fnmatch
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

# compiled kernels from the first call (kernels/_jit.py): stored bits never depend on a cold cache
os.environ.setdefault("CONTACTLAB_JIT", "compile")

from .cases import ARRAYS, CASES, Case, run_case

DATA = Path(__file__).resolve().parent / "data"

#: the environments the variants run in, each in its own process: OpenBLAS's other CPU kernels
#: (OPENBLAS_CORETYPE: each changes the blocking and the summation order of every BLAS/LAPACK call;
#: a kernel whose instructions the CPU lacks, e.g. SkylakeX's AVX-512 on an AMD EPYC, stops the child
#: with SIGILL and is reported as not run) and NumPy without its AVX-512 or AVX2 loops
#: (NPY_DISABLE_CPU_FEATURES: its SIMD sin, cos, exp... round differently from its baseline ones).
#: ``numba-generic`` (opt-in, --variant numba-generic: every kernel compiled again, minutes) compiles
#: the kernels for a generic x86-64 CPU (no AVX), in a cache of its own.
VARIANTS = {
    **{f"openblas-{core}": {"OPENBLAS_CORETYPE": core}
       for core in ("Haswell", "SkylakeX", "Sandybridge", "Nehalem", "Prescott")},
    "numpy-no-avx512": {"NPY_DISABLE_CPU_FEATURES": "X86_V4 AVX512_ICL AVX512_SPR"},
    "numpy-no-avx2": {"NPY_DISABLE_CPU_FEATURES": "X86_V3 X86_V4 AVX512_ICL AVX512_SPR"},
}
OPT_IN = {"numba-generic": {"NUMBA_CPU_NAME": "generic",
                            "NUMBA_CACHE_DIR": str(Path(tempfile.gettempdir()) / "contactlab-numba-generic")}}


def path_of(case: Case) -> Path:
    return DATA / f"{case.name}.npz"


def load(case: Case) -> dict | None:
    """The stored arrays of ``case`` (None when it has none yet)."""
    p = path_of(case)
    if not p.exists():
        return None
    with np.load(p, allow_pickle=False) as f:
        return {k: f[k] for k in f.files}


def save(case: Case, arrays: dict, folder: Path = DATA) -> None:
    """Write ``arrays`` as ``folder/<case>.npz`` (compressed), atomically."""
    folder.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{case.name}.", suffix=".npz", dir=folder)
    try:
        with os.fdopen(fd, "wb") as f:
            np.savez_compressed(f, **arrays)
        os.chmod(tmp, 0o644)        # mkstemp's 0600 is no repository file's mode
        os.replace(tmp, folder / f"{case.name}.npz")
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def difference(stored: dict, fresh: dict) -> dict:
    """How ``fresh`` differs from ``stored``: same_bits, the largest |difference| of positions and
    quaternions (inf when the shapes or body names differ), and the steps whose ``success`` differs."""
    shape_ok = all(stored[k].shape == fresh[k].shape for k in ARRAYS) and \
        np.array_equal(stored["names"], fresh["names"]) and np.array_equal(stored["frame_steps"], fresh["frame_steps"])
    if not shape_ok:
        return {"same_bits": False, "position": np.inf, "quaternion": np.inf, "success_changed": []}
    same = all(stored[k].tobytes() == fresh[k].tobytes() for k in ARRAYS)
    dp = float(np.max(np.abs(stored["positions"] - fresh["positions"]), initial=0.0))
    dq = float(np.max(np.abs(stored["quaternions"] - fresh["quaternions"]), initial=0.0))
    if not (np.all(np.isfinite(fresh["positions"])) and np.all(np.isfinite(fresh["quaternions"]))):
        dp = dq = np.inf
    changed = np.flatnonzero(stored["success"] != fresh["success"]).tolist()
    return {"same_bits": same, "position": dp, "quaternion": dq, "success_changed": changed}


def within(case: Case, diff: dict) -> bool:
    """Whether ``diff`` is within the case's tolerance (tol 0: the same bits)."""
    if case.tol == (0.0, 0.0):
        return diff["same_bits"]
    return diff["position"] <= case.tol[0] and diff["quaternion"] <= case.tol[1]


def describe(diff: dict) -> str:
    if diff["same_bits"]:
        return "same bits"
    text = f"max |dx| {diff['position']:.3g} m, max |dq| {diff['quaternion']:.3g}"
    if diff["success_changed"]:
        steps = diff["success_changed"]
        text += f"; certification changed at {len(steps)} step(s) ({', '.join(map(str, steps[:8]))}" + \
                (" ...)" if len(steps) > 8 else ")")
    return text


def select(patterns) -> list[Case]:
    if not patterns:
        return list(CASES)
    chosen = [c for c in CASES if any(fnmatch.fnmatchcase(c.name, p) for p in patterns)]
    if not chosen:
        raise SystemExit(f"no case matches {patterns}; cases: {', '.join(c.name for c in CASES)}")
    return chosen


def _variants(cases: list[Case], fresh: dict, names) -> None:
    """Run ``cases`` in each environment of :data:`VARIANTS` (or those named) in its own process and
    print the differences to ``fresh`` (this process's runs)."""
    worst = {c.name: [0.0, 0.0] for c in cases}
    for name in names or VARIANTS:
        env = dict(os.environ, OPENBLAS_VERBOSE="2", **{**VARIANTS, **OPT_IN}[name])
        with tempfile.TemporaryDirectory() as tmp:
            cmd = [sys.executable, "-m", "tests.golden.regenerate", "--dump", tmp, "--quiet",
                   *[a for c in cases for a in ("--case", c.name)]]
            out = subprocess.run(cmd, env=env, capture_output=True, text=True,
                                 cwd=Path(__file__).resolve().parents[2])
            kernel = sorted({ln.split(":", 1)[1].strip() for ln in out.stdout.splitlines() + out.stderr.splitlines()
                             if ln.startswith("Core:")})
            if out.returncode == -signal.SIGILL:     # OpenBLAS runs a forced kernel the CPU lacks
                print(f"{name}: not run (this CPU lacks the instructions of OpenBLAS kernel {', '.join(kernel)})")
                continue
            if out.returncode != 0:
                print(f"{name}: failed\n{out.stderr[-2000:]}")
                continue
            print(f"{name} (OpenBLAS kernel {', '.join(kernel) or '?'}):")
            for c in cases:
                with np.load(Path(tmp) / f"{c.name}.npz", allow_pickle=False) as f:
                    other = {k: f[k] for k in f.files}
                d = difference(fresh[c.name], other)
                worst[c.name] = [max(worst[c.name][0], d["position"]), max(worst[c.name][1], d["quaternion"])]
                print(f"  {c.name:32s} {describe(d)}")
    print("largest difference in the variants (position m, quaternion):")
    for c in cases:
        p, q = worst[c.name]
        print(f"  {c.name:32s} {p:9.3g} {q:9.3g}   tolerance {c.tol[0]:g}, {c.tol[1]:g} ({c.basis})")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.golden.regenerate", description=__doc__.split("\n\n")[0])
    ap.add_argument("--case", action="append", default=[], help="fnmatch pattern of case names (repeatable)")
    ap.add_argument("--check", action="store_true", help="compare only, write nothing; exit 1 beyond a tolerance")
    ap.add_argument("--variants", action="store_true", help="also run in each environment of VARIANTS "
                    "(other BLAS kernels, NumPy without AVX-512/AVX2) and print the differences")
    ap.add_argument("--variant", action="append", default=[], choices=sorted({**VARIANTS, **OPT_IN}),
                    help="run only this variant (repeatable; implies --variants)")
    ap.add_argument("--dump", type=Path, help=argparse.SUPPRESS)     # the variants' child processes
    ap.add_argument("--quiet", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    from contactlab.blas import blas_threads
    cases = select(args.case)
    fresh, bad = {}, []
    with blas_threads(1):
        for case in cases:
            t = time.perf_counter()
            arrays = fresh[case.name] = run_case(case)
            wall = time.perf_counter() - t
            if args.dump is not None:
                save(case, arrays, args.dump)
                continue
            stored = load(case)
            if stored is None:
                verdict, ok = "new", True
            else:
                diff = difference(stored, arrays)
                ok = within(case, diff)
                verdict = describe(diff) + ("" if ok else f"  BEYOND tolerance {case.tol}")
            if not ok:
                bad.append(case.name)
            steps = arrays["success"].size
            if not args.quiet:
                print(f"{case.name:32s} {wall:6.2f} s  certified {int(arrays['success'].sum())}/{steps}  {verdict}",
                      flush=True)
            if not args.check:
                save(case, arrays)
    if args.variants or args.variant:
        _variants(cases, fresh, args.variant)
    if bad and not args.quiet:
        print(f"beyond tolerance: {', '.join(bad)}")
    return 1 if (bad and args.check) else 0


if __name__ == "__main__":
    sys.exit(main())

"""Frictional contact files: FCLIB HDF5 (read/write) and Siconos' FrictionContact text files (read/write).

FCLIB (Acary, Bremond, Koziara, Perignon 2014, INRIA RT-0444; layout of the fclib repository's
``src/fclib.h``): an HDF5 file holds ``/fclib_local`` (W as a CSparse matrix group {nzmax, m, n,
nz, p, i, x}, ``vectors/{q, mu}``, ``spacedim``) or ``/fclib_global`` (M, H, optional G;
``vectors/{f, w, mu, b}``, ``spacedim``): M v = H r + G lambda + f, u = H' v + w. Optional
``/solution/{v, u, r, l}`` and ``/guesses/{k}/...``. Matrix groups: nz >= 0 triplet (i row,
p column indices), nz = -1 CSC, nz = -2 CSR.

Siconos text files (``frictionContact_printInFile`` / ``globalFrictionContact_printInFile`` in
siconos/numerics): ``dim``, ``nc``, then the NumericsMatrix W (storage 0 dense column-major,
1 sparse-block, 2 CSparse printout), then q (n values) and mu (nc values); the global file has
``dim``, ``nc``, M, H, q, b, mu.

Unsupported content (rolling friction, equality rows G or V/R) is refused with an error naming
what the file holds.
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from ..errors import ProblemError
from ..files import atomic_write
from .friction_contact import FrictionContact, GlobalFrictionContact

FCLIB_SUFFIXES = (".hdf5", ".h5", ".fclib")


# -- FCLIB HDF5 --------------------------------------------------------------------------------

def _read_matrix(g, path, name):
    try:
        m, n, nz = int(g["m"][0]), int(g["n"][0]), int(g["nz"][0])
        from .validation import check_dtype
        for key in ("p", "i"):
            if g[key].dtype.kind not in "iu":
                raise ProblemError(f"{path}: matrix {name}/{key} must hold integers, got {g[key].dtype}")
        check_dtype(f"{path}: matrix {name}/x", g["x"].dtype)
        p, i, x = np.asarray(g["p"][:], np.int64), np.asarray(g["i"][:], np.int64), np.asarray(g["x"][:], float)
    except KeyError as exc:
        raise ProblemError(f"{path}: matrix group {name} lacks {exc} (needs m, n, nz, p, i, x)") from None
    except (TypeError, ValueError, IndexError, OverflowError) as exc:
        raise ProblemError(f"{path}: matrix group {name} is malformed ({exc})") from None
    from .validation import compressed_error
    if m < 0 or n < 0:
        raise ProblemError(f"{path}: matrix {name} has size {m} x {n}; sizes must be >= 0")
    if not np.isfinite(x).all():
        raise ProblemError(f"{path}: matrix {name} contains NaN or inf")
    if nz in (-1, -2):       # checked before SciPy reads the arrays: a bad index corrupts memory
        why = compressed_error(p, i, x.size, *((n, m) if nz == -1 else (m, n)))
        if why is not None:
            raise ProblemError(f"{path}: matrix {name} ({'CSC' if nz == -1 else 'CSR'}) is malformed: {why}")
    elif nz >= 0:
        if nz > min(x.size, i.size, p.size):
            raise ProblemError(f"{path}: matrix {name} has nz = {nz} but holds {min(x.size, i.size, p.size)} entries")
        if nz and (i[:nz].min() < 0 or i[:nz].max() >= m or p[:nz].min() < 0 or p[:nz].max() >= n):
            raise ProblemError(f"{path}: matrix {name} has a triplet index outside its {m} x {n} size")
    try:
        if nz >= 0:
            A = sp.coo_matrix((x[:nz], (i[:nz], p[:nz])), shape=(m, n)).tocsr()
        elif nz == -1:
            A = sp.csc_matrix((x[:p[-1]], i[:p[-1]], p), shape=(m, n)).tocsr()
        elif nz == -2:
            A = sp.csr_matrix((x[:p[-1]], i[:p[-1]], p), shape=(m, n))
        else:
            raise ProblemError(f"{path}: matrix {name} has nz = {nz}; FCLIB uses >= 0 (triplet), -1 (CSC), -2 (CSR)")
    except (ValueError, IndexError) as exc:
        raise ProblemError(f"{path}: matrix {name} is malformed ({exc})") from None
    A.sum_duplicates()
    return A


def _write_matrix(f, name, A):
    A = sp.csc_matrix(A)
    A.sort_indices()
    g = f.create_group(name)
    g["nzmax"] = np.array([A.nnz], np.int32)
    g["m"] = np.array([A.shape[0]], np.int32)
    g["n"] = np.array([A.shape[1]], np.int32)
    g["nz"] = np.array([-1], np.int32)
    g["p"] = A.indptr.astype(np.int32)
    g["i"] = A.indices.astype(np.int32)
    g["x"] = A.data.astype(np.float64)


def _vec(g, key, path, where):
    if key not in g:
        raise ProblemError(f"{path}: {where}/{key} is missing")
    from .validation import check_dtype
    check_dtype(f"{path}: {where}/{key}", g[key].dtype)
    return np.asarray(g[key][:], dtype=np.float64).ravel()


def _solutions(f):
    def grab(g):
        return {k: np.asarray(g[k][:], float).ravel() for k in ("v", "u", "r", "l") if k in g}
    sol = grab(f["solution"]) if "solution" in f else None
    guesses = []
    if "guesses" in f:
        g = f["guesses"]
        keys = sorted((k for k in g.keys() if k.isdigit()), key=int)
        guesses = [grab(g[k]) for k in keys]
    return sol, guesses


def _info(g):
    out = {}
    if "info" in g:
        for k in ("title", "description", "math_info"):
            if k in g["info"]:
                v = g["info"][k][()]
                out[k] = v.decode(errors="replace") if isinstance(v, bytes) else str(v)
    return out


def read_fclib(path: str | os.PathLike):
    """Read an FCLIB HDF5 file into a :class:`FrictionContact` or :class:`GlobalFrictionContact`.

    The file's stored solution (dict with keys among v, u, r, l) is attached as ``problem.reference``
    (None if absent), its guesses as ``problem.guesses`` (list of dicts), its info as ``problem.info``.
    """
    import h5py
    path = Path(path)
    try:
        f = h5py.File(path, "r")
    except OSError as exc:
        raise ProblemError(f"{path}: not an HDF5 file ({exc})") from None
    try:
        with f:
            keys = sorted(f.keys())
            if "fclib_local" in f:
                g = f["fclib_local"]
                if "V" in g or "R" in g:
                    raise ProblemError(f"{path}: this FCLIB local problem has equality rows (V, R: a mixed problem); "
                                       "only plain local problems (W, q, mu) are supported")
                dim = int(np.asarray(g["spacedim"][:]).ravel()[0])
                if "W" not in g or "vectors" not in g:
                    raise ProblemError(f"{path}: fclib_local needs W and vectors/{{q, mu}}")
                W = _read_matrix(g["W"], path, "fclib_local/W")
                q = _vec(g["vectors"], "q", path, "fclib_local/vectors")
                mu = _vec(g["vectors"], "mu", path, "fclib_local/vectors")
                prob = FrictionContact(W, q, mu, dim)
            elif "fclib_global" in f:
                g = f["fclib_global"]
                if "G" in g and int(g["G"]["n"][0]) > 0:
                    raise ProblemError(f"{path}: this FCLIB global problem has equality rows (G, b: bilateral "
                                       "constraints); only problems without G are supported")
                dim = int(np.asarray(g["spacedim"][:]).ravel()[0])
                M = _read_matrix(g["M"], path, "fclib_global/M")
                H = _read_matrix(g["H"], path, "fclib_global/H")
                fv = _vec(g["vectors"], "f", path, "fclib_global/vectors")
                w = _vec(g["vectors"], "w", path, "fclib_global/vectors")
                mu = _vec(g["vectors"], "mu", path, "fclib_global/vectors")
                prob = GlobalFrictionContact(M, H, fv, w, mu, dim)
            else:
                rolling = [k for k in keys if "rolling" in k.lower()]
                what = f"rolling-friction problem ({', '.join(rolling)})" if rolling else f"groups {keys}"
                raise ProblemError(f"{path}: unsupported FCLIB content: the file holds {what}; "
                                   "contactlab reads fclib_local and fclib_global problems")
            prob.reference, prob.guesses = _solutions(f)
            prob.info = _info(g)
    except ProblemError:
        raise
    except (KeyError, IndexError, TypeError, ValueError, OverflowError, OSError, AttributeError) as exc:
        raise ProblemError(f"{path}: malformed FCLIB file ({type(exc).__name__}: {exc})") from None
    return prob


def write_fclib(problem, path: str | os.PathLike, solution: dict | None = None, guesses=(),
                title: str = "", description: str = "") -> Path:
    """Write ``problem`` (FrictionContact / GlobalFrictionContact) as FCLIB HDF5, atomically.

    ``solution``/``guesses``: dicts with keys among v, u, r, l (written to /solution, /guesses/k).
    """
    import h5py
    if not isinstance(problem, (FrictionContact, GlobalFrictionContact)):
        raise ProblemError(f"FCLIB files hold friction problems; got a {type(problem).__name__}")

    def write(tmp):
        # built in memory, then written as plain bytes: on a full disk HDF5's close of a file whose
        # write failed crashed the process (SIGSEGV in H5Fclose); Python's own write raises OSError
        import io
        buf = io.BytesIO()
        build(buf)
        Path(tmp).write_bytes(buf.getvalue())

    def build(target):
        with h5py.File(target, "w") as f:
            if isinstance(problem, FrictionContact):
                g = f.create_group("fclib_local")
                _write_matrix(g, "W", problem.W)
                v = g.create_group("vectors")
                v["q"] = problem.q
                v["mu"] = problem.mu
            else:
                g = f.create_group("fclib_global")
                _write_matrix(g, "M", problem.M)
                _write_matrix(g, "H", problem.H)
                v = g.create_group("vectors")
                v["f"] = problem.q
                v["w"] = problem.b
                v["mu"] = problem.mu
            g["spacedim"] = np.array([problem.dim], np.int32)
            info = g.create_group("info")
            info["title"] = np.bytes_(title or type(problem).__name__)
            info["description"] = np.bytes_(description or "written by contactlab")
            info["math_info"] = np.bytes_("")
            for name, d in ([("solution", solution)] if solution else []):
                s = f.create_group(name)
                for k, val in d.items():
                    s[k] = np.asarray(val, float)
            if guesses:
                gg = f.create_group("guesses")
                gg["number_of_guesses"] = np.array([len(guesses)], np.int32)
                for k, d in enumerate(guesses, 1):
                    s = gg.create_group(str(k))
                    for key, val in d.items():
                        s[key] = np.asarray(val, float)

    return atomic_write(path, write)


# -- Siconos text files ------------------------------------------------------------------------

class _Tokens:
    def __init__(self, path: Path):
        self.path = path
        self.tok = path.read_text().split()
        self.pos = 0

    def take(self, k=1, what="value"):
        if self.pos + k > len(self.tok):
            raise ProblemError(f"{self.path}: file ends early (reading {what} at token {self.pos})")
        out = self.tok[self.pos:self.pos + k]
        self.pos += k
        return out

    def ints(self, k, what):
        toks = self.take(k, what)
        try:
            return [int(t) for t in toks]
        except ValueError:
            raise ProblemError(f"{self.path}: expected integer(s) for {what} at token {self.pos - k}") from None

    def floats(self, k, what):
        toks = self.take(k, what)
        try:
            return np.array(toks, dtype=np.float64)
        except ValueError:
            raise ProblemError(f"{self.path}: expected {k} number(s) for {what} at token {self.pos - k}") from None


def _read_cs_print(t: _Tokens, rows: int, cols: int):
    """A CSparse ``cs_print`` listing (CSC 'col j : locations a to b' / 'i : x', or triplet 'i j : x')."""
    while t.pos < len(t.tok) and t.tok[t.pos] not in ("nnz:",):
        t.pos += 1
    t.take(1, "nnz:")
    nnz = int(t.take(1, "nnz")[0].rstrip(","))
    while t.pos < len(t.tok) and t.tok[t.pos] not in ("col", ) and not t.tok[t.pos].lstrip("-").isdigit():
        t.pos += 1
    r_idx, c_idx, vals = np.empty(nnz, np.int64), np.empty(nnz, np.int64), np.empty(nnz)
    k = 0
    try:
        if t.tok[t.pos] == "col":
            while k < nnz:
                head = t.take(7, "CSparse column header")
                j, a, b = int(head[1]), int(head[4]), int(head[6])
                cnt = b - a + 1
                body = t.take(3 * cnt, "CSparse column entries")
                r_idx[k:k + cnt] = [int(x) for x in body[0::3]]
                vals[k:k + cnt] = [float(x) for x in body[2::3]]
                c_idx[k:k + cnt] = j
                k += cnt
        else:
            body = t.take(4 * nnz, "CSparse triplet entries")
            r_idx[:] = [int(x) for x in body[0::4]]
            c_idx[:] = [int(x) for x in body[1::4]]
            vals[:] = [float(x) for x in body[3::4]]
    except (ValueError, IndexError):
        raise ProblemError(f"{t.path}: malformed CSparse listing near token {t.pos}") from None
    if np.any(r_idx >= rows) or np.any(c_idx >= cols) or np.any(r_idx < 0) or np.any(c_idx < 0):
        raise ProblemError(f"{t.path}: CSparse entry outside the {rows} x {cols} matrix")
    return sp.csr_matrix((vals, (r_idx, c_idx)), shape=(rows, cols))


def _read_numerics_matrix(t: _Tokens, what: str):
    storage, rows, cols = t.ints(3, f"{what} header (storage rows cols)")
    if storage == 0:
        r2, c2 = t.ints(2, f"{what} dense size")
        if (r2, c2) != (rows, cols):
            raise ProblemError(f"{t.path}: {what} dense header {rows}x{cols} disagrees with {r2}x{c2}")
        return t.floats(rows * cols, what).reshape((cols, rows)).T
    if storage == 1:
        from .sbm import read_sparse_block
        M, t.pos = read_sparse_block(t.tok, t.pos, t.path, shape=(rows, cols))
        return M
    if storage == 2:
        return _read_cs_print(t, rows, cols)
    raise ProblemError(f"{t.path}: {what} has unsupported Siconos storage type {storage} "
                       "(0 dense, 1 sparse block, 2 sparse)")


def read_siconos_fc(path: str | os.PathLike, kind: str = "local"):
    """Read a Siconos FrictionContact (``kind='local'``) or GlobalFrictionContact text file."""
    path = Path(path)
    t = _Tokens(path)
    dim, nc = t.ints(2, "dimension and number of contacts")
    rolling = (f"{path}: this is a rolling-friction problem (dimension {dim}: normal, tangent and rolling "
               "components, with rolling coefficients mu_r); contactlab reads sliding friction (dim 2 or 3) only")
    if dim == 5:
        raise ProblemError(rolling)
    if dim not in (2, 3):
        raise ProblemError(f"{path}: contact dimension {dim}; friction problems have 2 or 3 (5 is rolling friction)")
    n = dim * nc
    if kind == "local":
        W = _read_numerics_matrix(t, "W")
        if W.shape != (n, n):
            raise ProblemError(f"{path}: W is {W.shape}, expected {(n, n)} for {nc} contacts of dim {dim}")
        q = t.floats(n, "q")
        mu = t.floats(nc, "mu")
        if len(t.tok) - t.pos >= nc > 1:   # mu_r after mu: a 2D rolling-friction file (dim 3)
            raise ProblemError(rolling)
        return FrictionContact(W, q, mu, dim)
    M = _read_numerics_matrix(t, "M")
    H = _read_numerics_matrix(t, "H")
    if H.shape[1] != n:
        raise ProblemError(f"{path}: H has {H.shape[1]} columns, expected {n}")
    q = t.floats(M.shape[0], "q")
    b = t.floats(n, "b")
    mu = t.floats(nc, "mu")
    return GlobalFrictionContact(M, H, q, b, mu, dim)


def sniff_siconos(path: Path) -> str | None:
    """'local' / 'global' / None: whether a Siconos .dat file holds a friction problem, and which."""
    tok = []
    with open(path) as fh:
        for line in fh:
            tok += line.split()
            if len(tok) >= 8:
                break
    try:
        head = [int(x) for x in tok[:5]]
    except ValueError:
        return None
    if len(head) < 5:
        return None
    # friction: dim nc storage rows cols ; LCP: n storage rows cols
    d, nc, storage, rows, cols = head
    if d in (2, 3, 5) and storage in (0, 1, 2) and rows == cols == d * nc:
        return "local"
    if d in (2, 3, 5) and nc > 0 and storage in (0, 1, 2) and rows == cols and rows != d * nc:
        return "global"
    return None


def write_siconos_fc(problem: FrictionContact, path: str | os.PathLike) -> Path:
    """Write a local problem as a Siconos FrictionContact text file (W sparse-block, dim x dim blocks)."""
    W = sp.csr_matrix(problem.W)
    d, nc = problem.dim, problem.nc
    B = sp.bsr_matrix(W, blocksize=(d, d))
    B.sort_indices()
    nb = B.indices.size
    lines = [str(d), str(nc), "1", str(problem.n), str(problem.n), str(nb), f"{nc} {nc}",
             " ".join(str(d * (k + 1)) for k in range(nc)), " ".join(str(d * (k + 1)) for k in range(nc)),
             f"{nc + 1} {nb}", " ".join(map(str, B.indptr)), " ".join(map(str, B.indices))]
    for k in range(nb):
        lines.append(str(k))
        lines.append(" ".join(repr(float(v)) for v in B.data[k].T.ravel()))
    lines.append(" ".join(repr(float(v)) for v in problem.q))
    lines.append(" ".join(repr(float(v)) for v in problem.mu))

    def write(tmp):
        Path(tmp).write_text("\n".join(lines) + "\n")
    return atomic_write(path, write)


class StepExporter:
    """A simulator controller writing each step's frictional contact problem as an FCLIB file.

    Called before every step (``Simulator.add_controller``) and once after the run, it writes the
    previous step's ``sim.last_system`` as ``DIR/step_NNNNN.hdf5`` (local form, exact Coulomb cone,
    the scene's mu; see :func:`friction_contact.from_system`). Steps without contacts, or with
    joint rows an FCLIB problem cannot hold, are skipped and counted in ``skipped``.
    """

    def __init__(self, directory, form: str = "local", title: str = ""):
        self.directory = Path(directory)
        if self.directory.exists() and not self.directory.is_dir():
            raise ProblemError(f"--export-fclib {directory}: exists and is not a directory")
        self.directory.mkdir(parents=True, exist_ok=True)
        self.form, self.title = form, title
        self.done = 0
        self.written: list[Path] = []
        self.skipped: dict[int, str] = {}

    def __call__(self, sim) -> None:
        from .friction_contact import from_system
        steps = int(sim.data.steps)
        if sim.last_system is None or steps == self.done:
            return
        self.done = steps
        try:
            prob = from_system(sim.last_system, self.form)
        except ProblemError as exc:
            self.skipped[steps] = str(exc)
            return
        path = self.directory / f"step_{steps:05d}.hdf5"
        try:
            self.written.append(write_fclib(prob, path, title=self.title or f"contactlab step {steps}",
                                            description=f"contactlab simulate, step {steps}, t = {sim.data.time:.6g} s"))
        except OSError as exc:      # a failed write (disk full) names the file it was writing
            if exc.filename is None:
                exc.filename = str(path)
            raise

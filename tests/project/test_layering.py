"""The import structure of ``src/contactlab``: imports run down the layers, and no module imports
itself back through others (no import circles).

Every ``import`` and ``from ... import`` statement of every module is read with :mod:`ast`, those
inside functions included (an import at call time is still a dependency). ``from pkg import name``
counts as an import of the submodule ``pkg.name`` when one exists, else of ``pkg``. A package's
``__init__`` is its own node (``contactlab.solvers`` is the package face, ``contactlab.solvers.registry``
a module); the implicit import of parent packages that Python performs is not counted.

The layers, lowest first (``LAYERS``): a module may import modules of its own layer and of any
layer below it, never above. The ground modules (``GROUND``: errors, the ``Solution`` type, files
written atomically, tolerances, ...) import nothing of contactlab outside the ground and may be
imported from everywhere.

    kernels < mechanics < collision, problems < solvers < models, planning, the package face
    < sim, control, viz < scenarios < reproduce, batch < commands, cli

Names moved to a lower or higher layer stay importable from their old module for one release
through a module ``__getattr__`` (loaded on first use): those imports run the wrong way on purpose
and are listed in ``TRANSITIONAL`` with the release that removes them.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"
PACKAGE = SRC / "contactlab"

#: modules every layer may import; they import only each other (or nothing of contactlab)
GROUND = {"contactlab.errors", "contactlab.solution", "contactlab.files", "contactlab.heap",
          "contactlab.blas", "contactlab.highs", "contactlab.quiet", "contactlab.kernels.tolerances",
          "contactlab.data"}

#: layer of each top-level package or module of contactlab, lowest first
LAYERS = {
    "kernels": 0,                                     # compiled numerics shared by every domain
    "mechanics": 1,                                   # bodies, joints, constraint rows, integration
    "collision": 2, "problems": 2,                    # contact detection; the complementarity problems
    "solvers": 3,                                     # methods on the problems, solve() and its registry
    "models": 4, "planning": 4, "__init__": 4,        # contact models, disassembly planning, the package face
    "sim": 5, "control": 5, "viz": 5,                 # the simulator, controllers, replays and plots
    "scenarios": 6,                                   # named scenes and data sets
    "reproduce": 7, "batch": 7, "warmup": 7,          # the paper reproductions, the sweep engine, compiling ahead
    "commands": 8, "cli": 8, "__main__": 8,           # the command line (python -m contactlab)
}

#: (importer, imported): lazy re-exports of moved names, kept for one release (0.2 removes them)
TRANSITIONAL = {
    ("contactlab.problems.trinkle_pang_cone", "contactlab.models.trinkle_pang_cone"),
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    """The longest prefix of ``name`` that is a module of contactlab, or None."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def import_graph() -> dict[str, set[str]]:
    """Module -> the contactlab modules it imports (any statement, at any depth of the file)."""
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for mod, path in modules.items():
        package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        out: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    source = ".".join(base + ([node.module] if node.module else []))
                else:
                    source = node.module or ""
                targets = [f"{source}.{a.name}" if f"{source}.{a.name}" in modules else source for a in node.names]
            else:
                continue
            out.update(t for t in (_resolve(t, modules) for t in targets if t.startswith("contactlab")) if t)
        out.discard(mod)
        graph[mod] = out
    return graph


def layer(mod: str) -> int | None:
    """The layer of a module (None for the ground)."""
    if mod in GROUND or any(mod.startswith(g + ".") for g in GROUND):
        return None
    top = mod.split(".")[1] if "." in mod else "__init__"
    return LAYERS[top]


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            v, children = work[-1]
            w = next(children, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    found.append(sorted(comp))
    return found


@pytest.fixture(scope="module")
def graph():
    return import_graph()


def test_the_graph_is_read(graph):
    """The reader sees the package (a guard against a test that passes on an empty graph): known
    edges of both kinds, a module-level and a call-time import, are present."""
    assert len(graph) > 150
    assert "contactlab.solvers.registry" in graph["contactlab.solvers.enumerate"]        # module level
    assert "contactlab.planning" in graph["contactlab.commands.plan"]                     # inside a function
    assert "contactlab.files" in graph["contactlab.problems.fclib"]


def test_every_module_has_a_layer(graph):
    """A new top-level package or module must be placed in LAYERS (or GROUND) to be checked."""
    for mod in graph:
        if mod != "contactlab" and mod.split(".")[1] not in LAYERS:
            assert layer(mod) is None, f"{mod} has no layer: add its package to LAYERS or GROUND"


def test_ground_modules_import_only_the_ground(graph):
    for mod in graph:
        if layer(mod) is None:
            up = sorted(t for t in graph[mod] if layer(t) is not None)
            assert not up, f"ground module {mod} imports {up}"


def test_imports_run_down_the_layers(graph):
    """No module imports a module of a higher layer, except the transitional re-exports."""
    back = sorted((m, t) for m, ts in graph.items() for t in ts
                  if layer(m) is not None and layer(t) is not None and layer(t) > layer(m))
    assert set(back) == TRANSITIONAL, f"imports that run up a layer: {sorted(set(back) - TRANSITIONAL)}" \
                                      f"; listed but gone: {sorted(TRANSITIONAL - set(back))}"


def test_no_library_module_imports_the_command_line(graph):
    for mod, targets in graph.items():
        if layer(mod) is not None and layer(mod) < LAYERS["commands"]:
            cli = sorted(t for t in targets if t.startswith(("contactlab.commands", "contactlab.cli")))
            assert not cli, f"{mod} imports the command line: {cli}"


def test_no_import_circles(graph):
    assert circles(graph) == []


def test_circles_are_found():
    """The circle finder on a small graph with one circle of three and a self-free chain."""
    g = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"d"}}
    assert circles(g) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []

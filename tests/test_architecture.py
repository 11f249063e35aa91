"""The layering of the code base (docs/concepts/architecture.md, "Layers"): every import points down the layers,
and no import circle between our modules.

The graph has a node per module of ``lib/``, ``actors/`` and ``models/`` and an edge per import statement
between them, wherever it stands: at the top of a module or inside a function (a function-local import up the
layers, or one that closes a circle, only hides it). ``from a.b import c`` is an edge to the module ``a.b.c`` when
there is one, else to ``a.b``. A package's ``__init__`` is its own node, reached only by importing the package
itself.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Mapping, Set
from pathlib import Path

ROOT = Path(__file__).parent.parent
PACKAGES = ("lib", "actors", "models")

#: The layers, lowest first, each with its packages (or modules): a module may import modules of its own layer
#: and of the layers below, never of one above. docs/concepts/architecture.md lists the same.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("core", ("lib.core",)),
    ("models", ("models",)),
    ("libraries", ("lib.crawling", "lib.segments", "lib.alerts", "lib.standins")),
    ("messaging", ("lib.messaging",)),
    ("start-up", ("lib.app",)),
    ("scheduling", ("lib.scheduling",)),
    ("domain", ("lib.market", "lib.text_pools", "lib.collection")),
    ("forecasts", ("lib.forecast",)),
    ("web", ("lib.web",)),
    ("operations", ("lib.operations", "lib.docs")),
    ("actors", ("actors",)),
    ("cli", ("lib.cli",)),
)
#: ``lib/__init__.py``: the namespace's docstring, importing nothing and imported by nothing.
UNLAYERED = {"lib"}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for package in PACKAGES for p in (ROOT / package).rglob("*.py")}


def imports_of(name: str, path: Path, known: set[str]) -> set[str]:
    is_package = path.name == "__init__.py"
    package = name if is_package else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)] if node.level > 1 else base
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            targets = [f"{source}.{a.name}" if f"{source}.{a.name}" in known else source for a in node.names]
        else:
            continue
        found.update(t for t in targets if t in known and t != name)
    return found


@functools.cache
def code_graph() -> dict[str, frozenset[str]]:
    """The import graph of our code, read once for all the tests."""
    known = modules()
    return {name: frozenset(imports_of(name, path, set(known))) for name, path in known.items()}


def layer_of(name: str, layers=LAYERS) -> tuple[int, str] | None:
    """The index and name of the layer of module ``name``: the layer of the longest package (or module) in
    ``layers`` that is ``name`` or holds it; None when none does."""
    found: tuple[int, str, str] | None = None
    for index, (layer, packages) in enumerate(layers):
        for package in packages:
            if (name == package or name.startswith(package + ".")) and (found is None or len(package) > len(found[2])):
                found = (index, layer, package)
    return (found[0], found[1]) if found else None


def upward_imports(graph: Mapping[str, Set[str]], layers=LAYERS) -> list[str]:
    """Every import of ``graph`` from a module to one of a higher layer, named with both layers."""
    found = []
    for name in sorted(graph):
        here = layer_of(name, layers)
        for target in sorted(graph[name]):
            there = layer_of(target, layers)
            if here is not None and there is not None and there[0] > here[0]:
                found.append(f"{name} (layer {here[1]}) imports {target} (layer {there[1]}, above it)")
    return found


def find_cycle(graph: Mapping[str, Set[str]]) -> list[str] | None:
    state: dict[str, int] = {}  # 1: on the path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def test_the_graph_is_read():
    graph = code_graph()
    assert "lib.core.settings" in graph["lib.app"]  # a top-level import
    assert "lib.operations.supervisor" in graph["lib.cli.operations"]  # a function-local one


def test_no_import_circle():
    graph = code_graph()
    cycle = find_cycle(graph)
    assert cycle is None, " -> ".join(cycle or [])


def test_every_import_points_down_the_layers():
    graph = code_graph()
    upward = upward_imports(graph)
    assert not upward, "\n".join(upward)


def test_every_module_has_a_layer():
    graph = code_graph()
    assert {name for name in graph if layer_of(name) is None} == UNLAYERED
    assert not any(graph[name] or name in targets for name in UNLAYERED for targets in graph.values())


def test_an_upward_import_is_found():
    layers = (("low", ("a",)), ("middle", ("b", "c.d")), ("high", ("c",)))
    graph = {"a.x": {"a.y"}, "a.y": set(), "b.x": {"a.x", "c.d.y"}, "c.d.y": {"b.x"}, "c.z": {"b.x"},
             "a.z": {"c.z"}}
    assert layer_of("c.d.y", layers) == (1, "middle")  # the longest package holding it
    assert upward_imports(graph, layers) == ["a.z (layer low) imports c.z (layer high, above it)"]
    graph["b.x"].add("c.z")
    assert upward_imports(graph, layers) == ["a.z (layer low) imports c.z (layer high, above it)",
                                             "b.x (layer middle) imports c.z (layer high, above it)"]


def test_a_function_local_upward_import_in_a_source_file_is_found(tmp_path):
    (tmp_path / "low.py").write_text("def late():\n    from high import g\n\n    return g\n")
    (tmp_path / "high.py").write_text("def g():\n    return 1\n")
    known = {"low": tmp_path / "low.py", "high": tmp_path / "high.py"}
    graph = {name: imports_of(name, path, set(known)) for name, path in known.items()}
    layers = (("lower", ("low",)), ("higher", ("high",)))
    assert upward_imports(graph, layers) == ["low (layer lower) imports high (layer higher, above it)"]


def test_the_architecture_page_lists_these_layers():
    page = (ROOT / "docs" / "concepts" / "architecture.md").read_text()
    section = page.split("\n## Layers\n", 1)[1].split("\n## ", 1)[0]
    listed = tuple((name, tuple(re.findall(r"`([\w.]+)`", packages)))
                   for name, packages in re.findall(r"^\d+\. \*\*([\w-]+)\*\*: ([^—\n]*)", section, flags=re.M))
    assert listed == LAYERS


def test_a_circle_is_found():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None

"""The layering of the code base: no import circle between our modules.

The graph has a node per module of ``lib/``, ``actors/`` and ``models/`` and an edge per import statement
between them, wherever it stands: at the top of a module or inside a function (a function-local import that
closes a circle only hides it). ``from a.b import c`` is an edge to the module ``a.b.c`` when there is one,
else to ``a.b``. A package's ``__init__`` is its own node, reached only by importing the package itself.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).parent.parent
PACKAGES = ("lib", "actors", "models")


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


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
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
    known = modules()
    graph = {name: imports_of(name, path, set(known)) for name, path in known.items()}
    assert "lib.core.settings" in graph["lib.app"]  # a top-level import
    assert "lib.operations.supervisor" in graph["lib.cli.operations"]  # a function-local one


def test_no_import_circle():
    known = modules()
    graph = {name: imports_of(name, path, set(known)) for name, path in known.items()}
    cycle = find_cycle(graph)
    assert cycle is None, " -> ".join(cycle or [])


def test_a_circle_is_found():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None

"""``publisher/site/`` has no import cycle: its modules form layers (urls and staleness
below the catalog, the catalog below the graph, the index and archive pages below the
stages, the build on top), so each can be read, tested and replaced from the bottom up.

Every import of the package counts: at module level, inside functions (a deferred import
is still a dependency) and under ``if TYPE_CHECKING:`` (a type is one too). Imports of
modules outside ``publisher/site/`` are not followed: a cycle through them would be
another package's."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.helpers import ROOT

pytestmark = pytest.mark.unit

PACKAGE = "publisher.site"


def modules() -> dict[str, Path]:
    """Every module of the package, by dotted name."""
    found = {}
    for path in sorted((ROOT / "publisher" / "site").rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def imports(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The modules of the package ``name`` (at ``path``) imports, anywhere in it."""
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name in known)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target in known:
                found.add(target)
            found.update(f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in known)
    found.discard(name)
    return found


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm,
    iterative), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def test_the_site_package_has_no_import_cycle() -> None:
    known = modules()
    assert len(known) > 20 and f"{PACKAGE}.catalog" in known
    graph = {name: imports(name, path, known) for name, path in known.items()}
    assert graph[f"{PACKAGE}.build"], "the walk finds imports"
    assert cycles(graph) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    """The check above can fail: a cycle of three modules, and one of two beside a chain."""
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": {"a", "c"}, "c": set()}) == [["a", "b"]]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": set()}) == []

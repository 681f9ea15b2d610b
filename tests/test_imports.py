"""The shape of the code: no import cycle anywhere in kafkalab, and no oversized module in the
protocol core or the simulation.

The import graph is read from the source with :mod:`ast`, so it counts every import: at module
level, inside functions, and under ``if TYPE_CHECKING:`` (a cycle hidden from the interpreter is
still a cycle for a reader). Each test is parametrized by package, so a failure names the part of
the code it is about.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import pytest

import kafkalab

ROOT = Path(kafkalab.__file__).parent
MAX_LINES = 600
LINE_LIMITED = ("protocol", "sim")


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def _modules() -> dict[str, Path]:
    """Every module of kafkalab, by dotted name (a package by its own name)."""
    return {_module_name(path): path for path in sorted(ROOT.rglob("*.py"))}


def _base(module: str, is_package: bool, level: int) -> str:
    """The package a relative import of ``level`` dots starts from."""
    package = module if is_package else module.rpartition(".")[0]
    for _ in range(level - 1):
        package = package.rpartition(".")[0]
    return package


def _imported(module: str, source: str, *, is_package: bool = False) -> set[str]:
    """The kafkalab modules that ``module`` (with this ``source``) imports: ``from pkg import
    name`` counts as an import of the module ``pkg.name`` when there is one, else of ``pkg``."""
    modules = _modules()
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            source_module = node.module or ""
            if node.level:
                base = _base(module, is_package, node.level)
                source_module = f"{base}.{source_module}" if source_module else base
            for alias in node.names:
                submodule = f"{source_module}.{alias.name}"
                found.add(submodule if submodule in modules else source_module)
    return {name for name in found if name in modules and name != module}


@cache
def _graph() -> dict[str, frozenset[str]]:
    return {
        name: frozenset(_imported(name, path.read_text(), is_package=path.name == "__init__.py"))
        for name, path in _modules().items()
    }


def _cycles(graph: dict[str, frozenset[str]]) -> list[list[str]]:
    """One cycle through each strongly connected component of more than one module (Tarjan's
    algorithm, then a path back to the component's first module)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[set[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                components.append(component)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return [_cycle_in(graph, component) for component in components]


def _cycle_in(graph: dict[str, frozenset[str]], component: set[str]) -> list[str]:
    """A shortest import path from the component's first module back to itself."""
    start = min(component)
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        following = []
        for v in frontier:
            for w in sorted(graph[v] & component):
                if w == start:
                    return [*paths[v], start]
                if w not in paths:
                    paths[w] = [*paths[v], w]
                    following.append(w)
        frontier = following
    raise AssertionError(f"{sorted(component)} is not a cycle")  # pragma: no cover


def _packages() -> list[str]:
    """kafkalab's subpackages, and kafkalab itself for its top-level modules."""
    return ["kafkalab", *sorted(n for n, p in _modules().items() if p.name == "__init__.py")[1:]]


def _in_package(module: str, package: str) -> bool:
    if package == "kafkalab":  # the top-level modules only
        return module == "kafkalab" or (module.count(".") == 1 and module not in _packages())
    return module == package or module.startswith(package + ".")


def test_the_graph_sees_every_kind_of_import() -> None:
    """Absolute and relative imports, ``from pkg import module``, and imports inside a
    function or under TYPE_CHECKING all count; imports from outside kafkalab do not."""
    source = (
        "import ast\n"
        "import kafkalab.config\n"
        "from typing import TYPE_CHECKING\n"
        "from kafkalab.protocol import messages\n"
        "from .log import Log\n"
        "if TYPE_CHECKING:\n"
        "    from kafkalab.protocol.rules import Rules\n"
        "def f():\n"
        "    from .. import sim\n"
        "    from ..errors import ConfigError\n"
    )
    assert _imported("kafkalab.protocol.example", source) == {
        "kafkalab.config",
        "kafkalab.protocol.messages",
        "kafkalab.protocol.log",
        "kafkalab.protocol.rules",
        "kafkalab.sim",
        "kafkalab.errors",
    }
    assert _imported("kafkalab.protocol", "from . import log", is_package=True) == {
        "kafkalab.protocol.log"
    }
    assert "kafkalab.protocol.replica" in _graph()["kafkalab.protocol.broker"]


def test_cycle_finder_finds_a_cycle() -> None:
    graph = {"a": frozenset({"b"}), "b": frozenset({"c"}), "c": frozenset({"a"}), "d": frozenset()}
    assert _cycles(graph) == [["a", "b", "c", "a"]]
    assert _cycles({"a": frozenset({"b"}), "b": frozenset()}) == []


@pytest.mark.parametrize("package", _packages())
def test_no_import_cycle(package: str) -> None:
    cycles = [c for c in _cycles(_graph()) if any(_in_package(m, package) for m in c)]
    assert not cycles, f"import cycles through {package}:\n" + "\n".join(
        "  " + " -> ".join(cycle) for cycle in cycles
    )


@pytest.mark.parametrize("package", LINE_LIMITED)
def test_no_module_over_the_line_limit(package: str) -> None:
    too_long = {
        path.relative_to(ROOT.parent).as_posix(): count
        for path in sorted((ROOT / package).rglob("*.py"))
        if (count := len(path.read_text().splitlines())) > MAX_LINES
    }
    assert not too_long, f"modules of kafkalab/{package} over {MAX_LINES} lines: " + ", ".join(
        f"{path} ({count})" for path, count in too_long.items()
    )

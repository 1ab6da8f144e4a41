"""The extension reads bottom-up: no two C files of simhash_mih or of
find_all call each other, directly or around a loop, and no two subsystems
(the folders of pg_ext/src/: core, type, fingerprint, blocks, index,
find_all, locks) do; the fingerprint core (core/) calls nothing outside it.  A call is a use of a function another file
defines (extern, at the start of a line, as PostgreSQL's style writes a
definition); the module's entry point (_PG_init) calls every subsystem and is
left out of the subsystems' graph."""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

import pytest

from toolbox import ROOT

SRC = ROOT / "pg_ext" / "src"
COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
DEFINITION = re.compile(r"^(?!static\b)[A-Za-z_][\w \t*]*\n(\w+)\s*\([^;{]*\)\s*\{", re.M)
IDENTIFIER = re.compile(r"\b(\w+)\s*\(")


def sources() -> dict[Path, str]:
    return {path: COMMENT.sub("", path.read_text()) for path in sorted(SRC.rglob("*.c"))}


def call_graph(texts: dict[Path, str]) -> dict[Path, dict[Path, set[str]]]:
    """file -> file it calls -> the functions it calls there."""
    defined = {name: path for path, text in texts.items() for name in DEFINITION.findall(text)}
    graph: dict[Path, dict[Path, set[str]]] = defaultdict(lambda: defaultdict(set))
    for path, text in texts.items():
        for name in set(IDENTIFIER.findall(text)):
            where = defined.get(name)
            if where is not None and where != path:
                graph[path][where].add(name)
    return graph


def loops(graph: dict) -> list[list]:
    """The strongly connected components of more than one node (Tarjan)."""
    index: dict = {}
    low: dict = {}
    stack: list = []
    on_stack: set = set()
    found: list[list] = []

    def visit(node) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in list(graph):
        if node not in index:
            visit(node)
    return found


def test_the_definitions_are_found() -> None:
    """The parser sees the definitions and calls this test relies on."""
    graph = call_graph(sources())
    scan, utils = SRC / "index/mih/mih_scan.c", SRC / "index/mih/mih_page.c"
    assert utils in graph[scan] and "mih_run_view" in graph[scan][utils]


@pytest.mark.parametrize("folder", ["index/mih", "find_all"])
def test_no_call_loop_between_files(folder: str) -> None:
    graph = call_graph(sources())
    inside = {path: {callee: names for callee, names in callees.items() if (SRC / folder) in callee.parents}
              for path, callees in graph.items() if (SRC / folder) in path.parents}
    described = [[str(path.relative_to(SRC)) for path in loop] for loop in loops(inside)]
    details = {str(a.relative_to(SRC)): {str(b.relative_to(SRC)): sorted(names) for b, names in inside[a].items()}
               for loop in loops(inside) for a in loop}
    assert not described, (described, details)


def test_no_call_loop_between_subsystems() -> None:
    graph = call_graph(sources())

    def subsystem(path: Path) -> str:
        """Its folder below src/ (index/mih is part of index), or "." at the top."""
        parts = path.relative_to(SRC).parts
        return parts[0] if len(parts) > 1 else "."

    folders: dict[str, set[str]] = defaultdict(set)
    for path, callees in graph.items():
        if "_PG_init" in DEFINITION.findall(sources()[path]):
            continue
        for callee in callees:
            if subsystem(callee) != subsystem(path):
                folders[subsystem(path)].add(subsystem(callee))
    assert not loops(folders), (loops(folders), dict(folders))


def test_the_core_calls_nothing_above_it() -> None:
    """pg_ext/src/core is the bottom: portable C that the Python module
    compiles too, so it uses no function of another folder."""
    core = SRC / "core"
    outside = {str(path.relative_to(SRC)): {str(callee.relative_to(SRC)): sorted(names)
                                             for callee, names in callees.items() if core not in callee.parents}
               for path, callees in call_graph(sources()).items() if core in path.parents}
    assert not {path: callees for path, callees in outside.items() if callees}

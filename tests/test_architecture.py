"""The import contract: rooms only look down, and no module imports itself through others.

Both checks read the real import graph (grimp, which import-linter builds on), imports inside
functions included, so an upward import hidden in a function body fails here too.
"""

from __future__ import annotations

import grimp
from importlinter import cli

from conftest import ROOT


def test_layers_only_look_down():
    """pyproject.toml's [tool.importlinter] contracts, by folder: kernel → frontend → engine → ml
    → train → cells/models → storage/lang → config/cluster/progress/arrays → objectstore → options → errors →
    masking; inside frontend/ the shells over the driver over what they share, inside cluster/ the warm pool over the
    link to Ray over the log filters over Ray's internals."""
    assert cli.lint_imports(config_filename=str(ROOT / "pyproject.toml"), no_cache=True, no_logo=True) == 0


def _cycles(graph: grimp.ImportGraph, modules: set[str]) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan), i.e. import cycles."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for target in graph.find_modules_directly_imported_by(module) & modules:
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in on_stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == module:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for module in sorted(modules):
        if module not in index:
            visit(module)
    return found


def test_no_import_cycles_between_modules():
    graph = grimp.build_graph("mlsql_ray", cache_dir=None)
    # a package's __init__ re-exports its modules; that is not a cycle between rooms
    modules = {m for m in graph.modules if not graph.find_children(m)}
    assert _cycles(graph, modules) == []


def test_only_ray_internals_imports_rays_private_modules():
    """Ray's private API is reached through ``mlsql_ray.cluster.ray_internals`` alone, whose test
    (tests/test_ray_internals.py) says which internal moved when Ray changes."""
    graph = grimp.build_graph("mlsql_ray", "ray", cache_dir=None)
    private = {m for m in graph.modules if m.split(".")[1:2] and m.split(".")[1].startswith("_")}
    users = {(importer, imported) for imported in private
             for importer in graph.find_modules_that_directly_import(imported) if importer.startswith("mlsql_ray")}
    assert {importer for importer, _ in users} == {"mlsql_ray.cluster.ray_internals"}, sorted(users)


def test_nothing_outside_the_session_reaches_into_its_private_attributes():
    """Statement handlers, commands, sources and front ends use the session's public runtime
    (``query``, ``local_path``, ``location``, ``run_one``, ``run_script``, ``include_stack``, …),
    never its private state: ``session._anything`` appears in ``engine/session.py`` alone."""
    import ast as python_ast

    reaching = []
    for file in sorted((ROOT / "mlsql_ray").rglob("*.py")):
        if file == ROOT / "mlsql_ray" / "engine" / "session.py":
            continue
        for node in python_ast.walk(python_ast.parse(file.read_text(), str(file))):
            if (isinstance(node, python_ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__")
                    and isinstance(node.value, (python_ast.Name, python_ast.Attribute))
                    and (getattr(node.value, "id", None) or getattr(node.value, "attr", None)) in {"session", "_session"}):
                reaching.append(f"{file.relative_to(ROOT)}:{node.lineno}: .{node.attr}")
    assert reaching == []

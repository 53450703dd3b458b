"""The import contract: rooms only look down, and no module imports itself through others.

Both checks read the real import graph (grimp, which import-linter builds on), imports inside
functions included, so an upward import hidden in a function body fails here too.
"""

from __future__ import annotations

import ast as python_ast
import io
import tokenize
import subprocess
import sys
import tomllib
from pathlib import Path

import grimp
from importlinter import cli

from conftest import ROOT


def test_layers_only_look_down():
    """pyproject.toml's [tool.importlinter] contracts, by folder: kernel → frontend → engine → ml
    → train → cells/models → storage/lang → spark → config/cluster/progress/arrays → objectstore → options → errors →
    masking; inside frontend/ the shells over the driver over what they share, inside cluster/ the warm pool over the
    link to Ray over the log filters over Ray's internals, inside engine/ the session over the statements
    over the commands over the data sources over the ETs over the catalog and the files."""
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


def _contract(name: str) -> dict:
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    return next(c for c in contracts if c["name"] == name)


def _layer_names(layer: str) -> set[str]:
    """The modules of one layer, ``(optional)`` ones unwrapped."""
    return {name.strip().strip("()") for name in layer.split("|")}


def test_the_engine_rooms_only_look_down_and_hold_every_module():
    """The engine's contract in pyproject.toml: the session over the statements over the ``!``
    commands over the data sources over the ETs over the catalog and the files; every module of
    ``engine/`` sits in one of its layers (a new one must be placed), and no import, inside a
    function or not, goes up or sideways between two of them."""
    contract = _contract("the engine's rooms")
    layers = contract["layers"]
    assert contract["containers"] == ["mlsql_ray.engine"] and contract.get("exhaustive") is True
    graph = grimp.build_graph("mlsql_ray", cache_dir=None)
    children = {m.rpartition(".")[2] for m in graph.find_children("mlsql_ray.engine")}
    placed = set().union(*map(_layer_names, layers))
    assert children - placed == set()
    order = [name for layer in layers for name in sorted(_layer_names(layer))]
    assert order.index("session") < order.index("statements") < order.index("commands") \
        < order.index("datasources") < order.index("ets") < order.index("catalog") < order.index("files")
    present = [{name for name in _layer_names(layer) if name in children} for layer in layers]
    illegal = graph.find_illegal_dependencies_for_layers(
        layers=[grimp.Layer(*names) for names in present if names], containers={"mlsql_ray.engine"})
    assert [(d.importer, d.imported) for d in illegal] == []


def _unexplained_imports(source: str) -> list[int]:
    """Lines of the imports made inside a function of ``source`` with no comment saying why: a run
    of consecutive import statements is explained by a comment on one of its lines or on the line
    just above it."""
    comments = {token.start[0] for token in tokenize.generate_tokens(io.StringIO(source).readline)
                if token.type == tokenize.COMMENT}
    unexplained = set()
    for function in python_ast.walk(python_ast.parse(source)):
        if not isinstance(function, (python_ast.FunctionDef, python_ast.AsyncFunctionDef)):
            continue
        for node in python_ast.walk(function):
            for body in (getattr(node, field, None) for field in ("body", "orelse", "finalbody")):
                run: list[python_ast.stmt] = []
                for statement in [*(body if isinstance(body, list) else []), None]:
                    if isinstance(statement, (python_ast.Import, python_ast.ImportFrom)):
                        run.append(statement)
                        continue
                    if run and not comments & set(range(run[0].lineno - 1, run[-1].end_lineno + 1)):
                        unexplained.add(run[0].lineno)
                    run = []
    return sorted(unexplained)


def test_the_check_of_function_level_imports_sees_a_missing_reason():
    bare = "def f():\n    import json\n\n    return json\n"
    explained = "def f():\n    import ray  # heavy: Ray\n    from . import x\n\n    return ray, x\n"
    above = "def f():\n    # the kernel starts without DuckDB\n    from .engine import Session\n    return Session\n"
    assert _unexplained_imports(bare) == [2]
    assert _unexplained_imports(explained) == _unexplained_imports(above) == []


def test_every_function_level_import_says_why():
    """An import inside a function is there for a reason, which its comment gives: the library is
    heavy (TensorFlow, Ray, scikit-learn, deltalake, …) and only some runs need it, or a start
    (the kernel's, ``mlsql-ray run``'s, a Ray worker's) must not pay for it; every other import
    belongs at the top of its module, where the import graph shows it."""
    found = [f"{file.relative_to(ROOT)}:{line}" for file in sorted((ROOT / "mlsql_ray").rglob("*.py"))
             for line in _unexplained_imports(file.read_text())]
    assert found == []


def test_every_module_imports():
    """Function-level imports hide from the import graph, so a module that moved leaves them
    pointing nowhere until the one run that calls them. Importing every module, each import
    inside it resolved by Python itself, catches that before a user does."""
    modules = [f"mlsql_ray.{'.'.join(file.relative_to(ROOT / 'mlsql_ray').with_suffix('').parts)}"
               for file in sorted((ROOT / "mlsql_ray").rglob("*.py")) if file.name != "__main__.py"]
    modules = [name.removesuffix(".__init__") for name in modules]
    assert len(modules) > 100
    check = ("import importlib, sys\n"
             "failed = []\n"
             "for name in sys.argv[1:]:\n"
             "    try: importlib.import_module(name)\n"
             "    except Exception as error: failed.append(f'{name}: {error!r}')\n"
             "print('\\n'.join(failed)); sys.exit(1 if failed else 0)\n")
    done = subprocess.run([sys.executable, "-c", check, *modules], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr


def test_every_function_level_import_names_a_module_that_exists():
    """The imports inside functions (the ones a module's import does not run) resolve too."""
    missing = []
    for file in sorted((ROOT / "mlsql_ray").rglob("*.py")):
        package = ".".join(("mlsql_ray", *file.relative_to(ROOT / "mlsql_ray").parent.parts))
        for node in python_ast.walk(python_ast.parse(file.read_text())):
            if isinstance(node, python_ast.ImportFrom) and node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                target = f"{base}.{node.module}" if node.module else base
                path = ROOT / Path(*target.split("."))
                if not (path.with_suffix(".py").exists() or (path / "__init__.py").exists()):
                    missing.append(f"{file.relative_to(ROOT)}:{node.lineno}: {target}")
    assert missing == []

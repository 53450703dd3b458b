"""One module per statement kind, behind one table (as ``lang``'s ``STATEMENT_PARSERS`` parses them).

``RUNNERS`` maps a statement's type to its runner, ``runner(session, statement)``, which returns a
``Result`` or yields several. Runners use the session's public runtime (``catalog``, ``con``,
``variables``, ``query``, ``prepare``, ``location``, ``local_path``, ``run_script``, ``run_one``,
``set_variable``, ``set_conf``, …), never its private state (tests/test_architecture.py).
"""

from __future__ import annotations

from typing import Callable, Iterator

from ...lang import ast
from ..branches import run_if
from ..commands import run_command
from ..includes import run_include
from ..result import Result
from . import connect, load, python, register, save, select, train, variables

Runner = Callable[..., "Result | Iterator[Result]"]

RUNNERS: dict[type[ast.Statement], Runner] = {
    ast.Load: load.run,
    ast.Select: select.run,
    ast.Save: save.run,
    ast.Set: variables.run,
    ast.Include: run_include,
    ast.Command: run_command,
    ast.PythonCell: python.run,
    ast.Train: train.run,
    ast.Register: register.run,
    ast.Unregister: register.unregister,
    ast.Connect: connect.run,
    ast.If: run_if,
}

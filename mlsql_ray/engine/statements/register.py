"""``register FORMAT.`...` as f;`` and ``unregister``: SQL functions from models, fitted ETs and scripts."""

from __future__ import annotations

from typing import Callable

from ...errors import MLSQLError
from ...lang import ast
from ...storage import delta, rows as file_rows
from ...ml import statements as model_statements
from .. import ets, udfs
from ..result import Result
from ...ml.serving import FunctionRegistry, ModelFunction

MODEL_FORMATS = ("tf", "keras")


def model_function(session, name: str, fmt: str, table: str, options: dict):
    """Load a model table's rows and start the actors that serve it."""
    if fmt.lower() not in MODEL_FORMATS:
        raise MLSQLError(f"models are registered as {' or '.join(MODEL_FORMATS)}.`db.table`, not {fmt}")
    path = delta.table_path(session.warehouse, table, options)
    delta_table = delta.open_table(path, table, {k: v for k, v in options.items() if k == "version"})
    rows = file_rows.model_rows(delta.arrow_dataset(delta_table, path).to_table(), table)
    session.ray_link.ensure()
    return ModelFunction.start(name, table, delta_table.version(), rows, options,
                               session.ray_link.cpus(), pool=session.workers)


def run(session, s: ast.Register) -> Result:
    handler = REGISTER_FORMATS.get(s.format.lower())
    if handler is not None:
        return handler(session, s)
    if model_statements.is_algorithm(s.format):
        functions = model_statements.model_functions(session, s)
    elif s.format.lower() in ets.ETS:
        functions = ets.fitted_functions(session, s)
    else:
        functions = [model_function(session, s.function, s.format, s.path, dict(s.options))]
    if session.model_functions is None:
        session.model_functions = FunctionRegistry(session.con)
    for function in functions:
        session.model_functions.add(function)
    function, *companions = functions
    also = f"; also {', '.join(c.name for c in companions)}" if companions else ""
    return Result(s, f"registered {s.function} from {s.path} version {function.version} "
                     f"({sum(len(f.actors) for f in functions)} workers, output {function.output}{also})",
                  name=s.function)


def unregister(session, s: ast.Unregister) -> Result:
    removed = []
    if session.model_functions is not None:
        removed = [s.path] if session.model_functions.remove(s.path) else session.model_functions.remove_for_table(s.path)
    if not removed:
        raise MLSQLError(f"no function is registered as {s.path} or from a model table of that name")
    return Result(s, f"unregistered {', '.join(removed)}")


REGISTER_FORMATS: dict[str, Callable[..., Result]] = {
    "scriptudf": udfs.register,
}
"""``register FORMAT.`...` as f``: formats with their own handler; the rest are model formats (tf, keras)."""

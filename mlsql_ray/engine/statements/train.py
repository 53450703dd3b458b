"""``train|run|predict T as FORMAT.`...` [where ...] [as OUT];``: ETs, algorithms, models and ``run ... as Ray``."""

from __future__ import annotations

from typing import Callable

import pyarrow as pa

from ...errors import MLSQLError
from ...lang import ast
from ...ml import statements as model_statements
from .. import ets, vectors
from ..result import PREVIEW_ROWS, Result
from . import python, register


def predict(session, s: ast.Train) -> Result:
    """``predict T as tf.`db.model` [where inputCol="image"] [as OUT];``: T plus a prediction column."""
    options = dict(s.options)
    table = session.catalog.arrow(s.table)
    column = options.get("inputCol") or next(
        (f.name for f in table.schema if pa.types.is_list(f.type) or pa.types.is_fixed_size_list(f.type)
         or pa.types.is_large_list(f.type)), None)
    if column is None or column not in table.column_names:
        raise MLSQLError(f"predict needs a list column of {s.table} to feed the model (inputCol=\"...\"); "
                         f"columns: {', '.join(table.column_names)}")
    function = register.model_function(session, "predict", s.format, s.path, options)
    function.argument = column
    try:
        scored = table.append_column("prediction", function(table.column(column)))
    except ValueError as exc:
        raise MLSQLError(str(exc)) from exc
    finally:
        function.close()
    output = s.output or f"{s.table}_predictions"
    session.catalog.add_arrow(output, scored, f"predict {s.path}")
    return Result(s, f"{output}: {scored.num_rows} rows", table=scored.slice(0, PREVIEW_ROWS),
                  num_rows=scored.num_rows, name=output)


def train_algorithm(session, s: ast.Train) -> Result:
    """``train T as ALG.`TARGET` [as OUT]``: the groups' results, named OUT (else ``output``)."""
    result, version, trained, failed = model_statements.train(session, s)
    output = s.output or "output"
    session.catalog.add_arrow(output, result, f"train {s.format}.`{s.path}`")
    return Result(s, f"trained {trained} {s.format} model(s) into {s.path} version {version}"
                     + (f" ({failed} failed)" if failed else ""),
                  table=result, num_rows=result.num_rows, name=output, version=version)


def predict_algorithm(session, s: ast.Train) -> Result:
    """``predict T as ALG.`TARGET` [as OUT]``: T scored, named OUT (else T_predictions)."""
    scored, model = model_statements.predict(session, s)
    output = s.output or f"{s.table}_predictions"
    scored = vectors.mark_predicted(session, scored, s.table)
    session.catalog.add_arrow(output, scored, f"predict {s.format}.`{s.path}`")
    return Result(s, f"{output}: {scored.num_rows} rows ({model})",
                  table=scored.slice(0, PREVIEW_ROWS), num_rows=scored.num_rows, name=output)


def run(session, s: ast.Train) -> Result:
    """``train|run|predict T as FORMAT.`...```: an ET by name first (``run``/``train``, and
    ``run`` with any format but Ray: mlsql_ray.engine.ets, where an unknown name fails listing
    the known), else looked up in ``_TRAIN_VERBS`` by verb and format, then by verb alone (any
    other format names a built-in algorithm)."""
    fmt = s.format.lower()
    if (s.verb in ("run", "train") and fmt in ets.ETS) or (s.verb == "run" and fmt != "ray"):
        return ets.run(session, s)
    handler = _TRAIN_VERBS.get((s.verb, fmt)) or _TRAIN_VERBS.get((s.verb, None))
    if handler is None:
        raise MLSQLError(f"{s.verb} ... as {s.format} is not supported (supported: run ... as Ray.``, "
                         f"predict ... as tf.`...`, train|predict ... as an algorithm or a feature ET)")
    return handler(session, s)


def run_ray(session, s: ast.Train) -> Result:
    """``run T as Ray.`` where code=... and outputTable=...``: a Python cell as a statement."""
    if "code" not in s.options:
        raise MLSQLError("run ... as Ray.`` needs the Python code in a code='''...''' option")
    annotations = {k: v for k, v in s.options.items() if k not in ("code", "inputTable", "outputTable")}
    input_table = s.options.get("inputTable") or (s.table if s.table.lower() != "command" else None)
    if input_table:
        annotations["input"] = input_table
    output = s.options.get("outputTable") or s.output
    if output:
        annotations["output"] = output
    cell = ast.PythonCell(code=s.options["code"], annotations=annotations, line=s.code_line or s.line, col=1)
    return python.run(session, cell)


_TRAIN_VERBS: dict[tuple[str, str | None], Callable[..., Result]] = {
    ("run", "ray"): run_ray,
    **{("predict", fmt): predict for fmt in register.MODEL_FORMATS},
    **{("predict", name): ets.predict for name in ets.ETS},  # a feature ET's fitted state (ml/ets/fitted.py)
    ("train", None): train_algorithm,  # a built-in algorithm (mlsql_ray.ml)
    ("predict", None): predict_algorithm,
}

"""``train|run|predict T as FORMAT.`...` [where ...] [as OUT];``: ETs, algorithms, models and ``run ... as Ray``."""

from __future__ import annotations

from typing import Callable

from ...errors import MLSQLError
from ...lang import ast
from ...ml.kinds import ALGORITHMS
from .. import ets, vectors
from ..kinds import KINDS
from ..result import PREVIEW_ROWS, Result
from . import python


def train_algorithm(session, s: ast.Train) -> Result:
    """``train T as ALG.`TARGET` [as OUT]``: the groups' results, named OUT (else ``output``)."""
    result, version, trained, failed = ALGORITHMS.train(session, s)
    output = s.output or "output"
    session.catalog.add_arrow(output, result, f"train {s.format}.`{s.path}`")
    return Result(s, f"trained {trained} {s.format} model(s) into {s.path} version {version}"
                     + (f" ({failed} failed)" if failed else ""),
                  table=result, num_rows=result.num_rows, name=output, version=version)


def predict(session, s: ast.Train) -> Result:
    """``predict T as FORMAT.`TARGET` [as OUT]``: T scored by what FORMAT's kind stored at TARGET
    (``engine.kinds``; a name no kind knows is an algorithm's), named OUT (else T_predictions)."""
    predicted = (KINDS.find(s.format, "predict") or ALGORITHMS).predict(session, s)
    scored = predicted.table
    if predicted.vectors:
        scored = vectors.mark_predicted(session, scored, s.table)
    output = s.output or f"{s.table}_predictions"
    session.catalog.add_arrow(output, scored, predicted.source)
    return Result(s, f"{output}: {scored.num_rows} rows{predicted.about}",
                  table=scored.slice(0, PREVIEW_ROWS), num_rows=scored.num_rows, name=output)


def run(session, s: ast.Train) -> Result:
    """``train|run|predict T as FORMAT.`...```: an ET by name first (``run``/``train``, and
    ``run`` with any format but Ray: mlsql_ray.engine.ets, where an unknown name fails listing
    the known), else looked up in ``_TRAIN_VERBS`` by verb and format, then by verb alone (``train``
    of any other format names a built-in algorithm; ``predict`` asks the format's kind)."""
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
    ("train", None): train_algorithm,  # a built-in algorithm (mlsql_ray.ml)
    ("predict", None): predict,
}

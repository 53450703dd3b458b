"""``train|run|predict T as FORMAT.`...` [where ...] [as OUT];``: ETs, algorithms, models and ``run ... as Ray``."""

from __future__ import annotations

from typing import Callable

from ...errors import MLSQLError
from ...lang import ast
from ...ml.kinds import ALGORITHMS, Trained
from .. import vectors
from ..kinds import FEATURE_ETS, KINDS
from ..result import PREVIEW_ROWS, Result
from . import python


def train(session, s: ast.Train) -> Result:
    """``train T as FORMAT.`TARGET` [as OUT]``: what FORMAT's kind made (``engine.kinds``; a name
    no kind knows is an algorithm's, whose error lists the algorithms)."""
    return _kept(session, s, (KINDS.find(s.format, "train") or ALGORITHMS).train(session, s))


def run_et(session, s: ast.Train) -> Result:
    """``run T as NAME.`PATH` [as OUT]``: Byzer runs ETs, and only ETs (an unknown name fails
    listing the known), as ``train`` of an ET does."""
    return _kept(session, s, FEATURE_ETS.train(session, s))


def _kept(session, s: ast.Train, trained: Trained) -> Result:
    """The result of what a train made, the table kept in the catalog under its output name."""
    table = trained.table
    if table is None:
        return Result(s, trained.report)
    if trained.output:
        session.catalog.add_arrow(trained.output, table, trained.source, partitions=trained.partitions)
    return Result(s, trained.report, table=table if trained.whole else table.slice(0, PREVIEW_ROWS),
                  num_rows=table.num_rows, name=trained.output, version=trained.version)


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
    """``train|run|predict T as FORMAT.`...```: looked up in ``_TRAIN_VERBS`` by verb and format,
    then by verb alone (``run ... as Ray`` runs a Python cell, ``run`` of any other format an ET;
    ``train`` and ``predict`` ask the format's kind)."""
    return (_TRAIN_VERBS.get((s.verb, s.format.lower())) or _TRAIN_VERBS[(s.verb, None)])(session, s)


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
    ("run", None): run_et,
    ("train", None): train,
    ("predict", None): predict,
}

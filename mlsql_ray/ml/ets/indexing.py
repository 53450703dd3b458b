"""``StringIndex``: a string column to numbers, as Spark's StringIndexer orders them (the most
frequent value is 0.0; equal counts in alphabetical order). ``train T as StringIndex.`TARGET`
where inputCol="word" [and outputCol="word_index"]`` learns the order and writes the indexed
table; ``register StringIndex.`TARGET` as f`` gives ``f(word)``, -1.0 for a value never seen
(so scoring new rows never fails on one)."""

from __future__ import annotations

from collections import Counter

import pyarrow as pa
import pyarrow.compute as pc

from ...errors import MLSQLError
from ...options import Param
from . import fitted
from .base import ET, Call

NAME = "StringIndex"
UNSEEN = -1.0


def _labels(column: pa.ChunkedArray) -> list[str]:
    counts = Counter(v for v in column.to_pylist() if v is not None)
    return [label for label, _ in sorted(counts.items(), key=lambda item: (-item[1], item[0]))]


def _index(state: dict, values: pa.Array) -> pa.Array:
    labels = pa.array(state["labels"], pa.string())
    position = pc.index_in(pc.cast(values, pa.string()), value_set=labels)
    return pc.cast(pc.fill_null(position, -1), pa.float64())


def _fit(table: pa.Table, call: Call) -> dict:
    column = call.column("inputCol", table.column_names, NAME)
    if table.column(column).null_count:
        raise MLSQLError(f"{NAME}: inputCol {column!r} has nulls; fill or filter them first")
    output = call.option("outputCol", f"{column}_index") or f"{column}_index"
    return {"inputCol": column, "outputCol": output, "labels": _labels(pc.cast(table.column(column), pa.string()))}


def _transform(state: dict, table: pa.Table, table_name: str) -> pa.Table:
    column, output = state["inputCol"], state.get("outputCol", f"{state['inputCol']}_index")
    text = pc.cast(fitted.column_of(table, column, table_name, NAME), pa.string())
    indexed = pa.chunked_array([_index(state, chunk) for chunk in text.chunks], pa.float64())
    return fitted.replace_or_append(table, output, indexed)


LEARNER = fitted.Learner(NAME, _fit, _transform, fitted.Applier(_index, "DOUBLE"))

ETS = (
    ET(NAME, "a string column to numbers, most frequent first (Spark's StringIndexer); register maps new values",
       LEARNER.train,
       (Param("inputCol", "", "the column to index (numbers are indexed as their text)"),
        Param("outputCol", "INPUTCOL_index", "the index column's name (the inputCol itself: in place)")),
       kind="feature engineer", learner=LEARNER, example="""select word from values ('pear'), ('apple'), ('fig'), ('apple') as t(word) as words;
train words as StringIndex.`db.si` where inputCol="word" as indexed;
register StringIndex.`db.si` as word_index;
select word, word_index(word) as i from values ('fig'), ('mango') as t(word) as scored;
"""),
)

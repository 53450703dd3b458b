"""Rows made, marked or numbered: ``RateSampler`` (``ml/feature/rate_sample.md``),
``SampleDatasetExt`` (mock data for machine learning) and ``UniqueIdentifier``
(``ml/eda/UniqueIdentifier.md``)."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
from sqlglot import exp

from ...cells.schema import parse_schema
from ...errors import MLSQLError
from ...spark import sql_build
from ...options import Param
from ...ml.ets.base import ET, Call, input_table
from .base import PEOPLE_DATA, input_name

SPLIT_COLUMN = "__split__"


def _rates(call: Call) -> tuple[float, float]:
    text = call.option("sampleRate", "0.9,0.1")
    try:
        rates = [float(r) for r in text.split(",")]
    except ValueError:
        raise MLSQLError(f"sampleRate must be two numbers like \"0.7,0.3\", not {text!r}") from None
    if len(rates) != 2 or abs(sum(rates) - 1) > 0.001:
        raise MLSQLError("Sum of sampleRates should equal to 1 and number of elements should be 2")
    return rates[0], rates[1]


def _rate_sample(session, call: Call) -> pa.Table:
    """T plus ``__split__`` (0: the first share, 1: the second). Each row draws its set at random;
    with ``isSplitWithSubLabel="true"``, each label's rows are split exactly in row order: the first
    floor(rate × count) go to 0, the rest to 1 (Byzer's code there also drops one row per label
    between the two sets, a bug not copied)."""
    first, _ = _rates(call)
    label = call.option("labelCol", "label")
    table = input_name(session, call)
    schema = session.catalog.schema(call.table)
    if label not in schema.names:
        raise MLSQLError(f"RateSampler: {call.table} has no label column {label!r} (labelCol; columns: {', '.join(schema.names)})")
    label_type = schema.field(label).type
    if not (pa.types.is_integer(label_type) or pa.types.is_floating(label_type) or pa.types.is_decimal(label_type)):
        raise MLSQLError(f"The type of labelCol should be int/double/float/long, {label} is {label_type}")
    if call.flag("isSplitWithSubLabel", False):
        split = sql_build.shaped("CASE WHEN row_number() OVER (PARTITION BY CAST($label AS INTEGER) ORDER BY seen) <= "
                                 "floor(CAST(? AS DOUBLE) * count(*) OVER (PARTITION BY CAST($label AS INTEGER))) "
                                 "THEN 0 ELSE 1 END", label=sql_build.column(label))
    else:
        split = sql_build.shaped("CASE WHEN random() <= CAST(? AS DOUBLE) THEN 0 ELSE 1 END")
    numbered = sql_build.shaped("SELECT *, row_number() OVER () AS seen FROM $table", table=table).subquery()
    query = exp.select(*(sql_build.column(n) for n in schema.names),
                       exp.cast(split, "INTEGER").as_(SPLIT_COLUMN, quoted=True)).from_(numbered).order_by("seen")
    return session.con.sql(query.sql("duckdb"), params=[first]).to_arrow_table()


_MOCK_COLUMNS = ("id", "features", "label")


def _sample_dataset(session, call: Call) -> pa.Table:
    """``size`` rows of ``columns`` from: id (0, 1, ...), features (``featuresSize`` random floats
    in [0, 1)), label (a random whole number below ``labelSize``)."""
    columns = [c.strip() for c in call.option("columns", "id").split(",") if c.strip()] or ["id"]
    for column in columns:
        if column not in _MOCK_COLUMNS:
            raise MLSQLError(f"SampleDatasetExt: {column} is not supported (columns come from: {', '.join(_MOCK_COLUMNS)})")
    size = call.integer("size", 10000, minimum=0)
    width = call.integer("featuresSize", 100, minimum=0)
    labels = call.integer("labelSize", 2, minimum=1)
    rng = np.random.default_rng()
    made = {
        "id": lambda: pa.array(np.arange(size, dtype=np.int64)),
        "features": lambda: pa.ListArray.from_arrays(
            pa.array(np.arange(0, (size + 1) * width, width, dtype=np.int64)).cast(pa.int32()),
            pa.array(rng.random(size * width, dtype=np.float32))),
        "label": lambda: pa.array(rng.integers(0, labels, size, dtype=np.int32)),
    }
    order = ["id"] + [c for c in dict.fromkeys(columns) if c != "id"]
    return pa.table({c: made[c]() for c in order})


_SOURCES = ("new", "replace")


def _unique_identifier(session, call: Call) -> pa.Table:
    """Numbers the rows 1, 2, ... in a new first column (``source="new"``) or in place of an
    existing one (``"replace"``; a column that does not exist is made new). ``mode="inferSchema"``
    only tells the resulting columns of ``inputSchema`` (JSON: name → type) as col_name, data_type."""
    source = call.option("source", "new").strip().lower()
    if source not in _SOURCES:
        raise MLSQLError(f"Illegal source parameter: {source}")
    name = call.option("columnName", "Unique_ID")
    if call.option("mode", "data").strip() == "inferSchema":
        return _inferred_schema(call, source, name)
    table = input_table(session, call)
    numbers = pa.array(np.arange(1, table.num_rows + 1, dtype=np.int64))
    if source == "replace" and name in table.column_names:
        return table.set_column(table.column_names.index(name), pa.field(name, pa.int64(), nullable=False), numbers)
    if name in table.column_names:
        raise MLSQLError(f"The newly created column name `{name}` already exists.")
    return table.add_column(0, pa.field(name, pa.int64(), nullable=False), numbers)


def _inferred_schema(call: Call, source: str, name: str) -> pa.Table:
    try:
        declared = json.loads(call.option("inputSchema", "{}"))
    except json.JSONDecodeError as exc:
        raise MLSQLError(f"UniqueIdentifier: inputSchema is not JSON: {exc}") from exc
    if not isinstance(declared, dict):
        raise MLSQLError('UniqueIdentifier: inputSchema is a JSON object of column → type, e.g. {"age":"bigint"}')
    parse_schema(", ".join(f"`{k}` {v}" for k, v in declared.items()) or "x int")  # the types must be Spark types
    rows = dict(declared) if source == "replace" and name in declared else {name: "bigint", **declared}
    return pa.table({"col_name": pa.array(list(rows), pa.string()), "data_type": pa.array([str(v) for v in rows.values()], pa.string())})


ETS = (
    ET("RateSampler", "marks each row with __split__: 0 or 1, in the proportions of sampleRate", _rate_sample, (
        Param("labelCol", "label", "the label column (whole numbers or decimals)"),
        Param("sampleRate", "0.9,0.1", "the two shares, summing to 1"),
        Param("isSplitWithSubLabel", "false", "true: split each label's rows exactly, in row order"),
    ), kind="feature engineer", example=PEOPLE_DATA + (
        'train table1 as RateSampler.`` where labelCol="label" and sampleRate="0.7,0.3" as marked_dataset;\n'
        "select * from marked_dataset where __split__=0 as trainingTable;\n")),
    ET("SampleDatasetExt", "mock data: id, features (random floats), label (random class)", _sample_dataset, (
        Param("columns", "id", "which of id, features, label to make, comma-separated"),
        Param("size", "10000", "how many rows"),
        Param("featuresSize", "100", "the length of each features array"),
        Param("labelSize", "2", "how many label classes"),
    ), example='run command as SampleDatasetExt.`` where columns="id,features,label" and size="100" '
               'and featuresSize="10" and labelSize="2" as mockData;\n'),
    ET("UniqueIdentifier", "numbers the rows 1, 2, ... in a new or an existing column", _unique_identifier, (
        Param("source", "new", "new: a new first column; replace: overwrite columnName"),
        Param("columnName", "Unique_ID", "the column of numbers"),
        Param("mode", "data", "data, or inferSchema: only the resulting columns of inputSchema"),
        Param("inputSchema", "{}", "inferSchema: the input's columns as JSON, name → Spark type"),
    ), kind="data analysis", example=PEOPLE_DATA + (
        'run table1 as UniqueIdentifier.`` where source="replace" and columnName="income" as uniqueIdentifier;\n')),
)

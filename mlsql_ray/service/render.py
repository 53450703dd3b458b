"""Results as Byzer's REST API answers them: a table's rows as Spark's ``Dataset.toJSON`` writes
them (one JSON object per row, null fields left out, vectors as Spark's ``VectorUDT`` JSON, binary as
base64), with ``includeSchema`` the table's Spark ``StructType`` JSON beside them; and the parsed
statements ``executeMode=analyze`` answers."""

from __future__ import annotations

import base64
import dataclasses
import datetime as dt
import decimal
import json
import math

import pyarrow as pa

from ..lang import ast
from ..spark.type_names import schema_json


def rows_json(table: pa.Table, vectors: dict[str, str]) -> str:
    """``[{...},{...}]``: each row's non-null fields, in column order (written as text, not via a
    dict: ``select 1 as a, 2 as a`` has two columns ``a``, and Spark writes both)."""
    names = [_ENCODE(name) for name in table.column_names]
    kinds = [vectors.get(name.lower()) for name in table.column_names]
    columns = [column.to_pylist() for column in table.columns]
    rows = []
    for values in zip(*columns):
        fields = [f"{name}:{_json(_vector(value, kind) if kind else value)}"
                  for name, kind, value in zip(names, kinds, values) if value is not None]
        rows.append("{" + ",".join(fields) + "}")
    return "[" + ",".join(rows) + "]"


def result_json(table: pa.Table | None, vectors: dict[str, str], include_schema: bool) -> str:
    """The body of ``/run/script``: the rows, or ``{"schema": …, "data": […]}``; no table: ``[]``
    (``{}`` with ``includeSchema``), as Byzer answers a script without a select."""
    if table is None:
        return "{}" if include_schema else "[]"
    rows = rows_json(table, vectors)
    return f'{{"schema":{schema_json(table.schema)},"data":{rows}}}' if include_schema else rows


_AS_IS = frozenset((int, str, bool))  # by their exact type: a subclass (an IntEnum) goes the long way


def _vector(values: list, kind: str) -> dict:
    """Spark's ``VectorUDT`` JSON: dense ``{"type":1,"values":[…]}``, sparse with size and indices."""
    if kind == "sparse":
        indices = [i for i, v in enumerate(values) if v]
        return {"type": 0, "size": len(values), "indices": indices, "values": [values[i] for i in indices]}
    return {"type": 1, "values": values}


def _plain(value):
    """A value JSON can hold, as Spark's JSON writer writes it."""
    if type(value) in _AS_IS:
        return value
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, dt.datetime):
        return value.isoformat(timespec="milliseconds")
    if isinstance(value, (dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return str(value)
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        if value and all(isinstance(v, tuple) for v in value):  # an Arrow map's (key, value) pairs: an object
            return {str(k): _plain(v) for k, v in value if v is not None}
        return [_plain(v) for v in value]
    return value


#: json.dumps with these options, made once: ``dumps`` makes an encoder each call (1 µs of 2)
_ENCODE = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def _json(value) -> str:
    return _ENCODE(_plain(value))


def statements_json(statements: list[ast.Statement]) -> str:
    """``executeMode=analyze``: each parsed statement as an object, its kind first, nothing run."""
    return json.dumps([{"type": type(s).__name__.lower(), **_fields(s)} for s in statements],
                      ensure_ascii=False, default=str)


def _fields(statement) -> dict:
    return {f.name: _field(getattr(statement, f.name)) for f in dataclasses.fields(statement)}


def _field(value):
    if dataclasses.is_dataclass(value):
        return {"type": type(value).__name__.lower(), **_fields(value)}
    if isinstance(value, (list, tuple)):
        return [_field(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _field(v) for k, v in value.items()}
    return value

"""The Spark type of an Arrow column, spelt the ways Spark spells types: ``typeName`` (``integer``,
``long``: what Byzer's ETs print), ``simpleString`` (``int``, ``bigint``, ``array<double>``: what
``DESCRIBE`` prints) and the schema JSON (``StructType.json``: what Byzer's ``!desc T json`` gives).

The Spark type of an Arrow type is the one Spark gives the same data: unsigned integers widen as
Spark reads Parquet's (uint8 → smallint, uint32 → bigint, uint64 → decimal(20,0)), every
timestamp is ``timestamp``, a dictionary is its values' type. A type Spark has no name for (a time
of day) keeps Arrow's name.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import pyarrow as pa

#: Spark's SQLConf.maxToStringFields: a struct's simpleString shows this many fields at most
MAX_TO_STRING_FIELDS = 25

#: (test, typeName, simpleString) for Spark's atomic types
_ATOMIC: list[tuple[Callable[[pa.DataType], bool], str, str]] = [
    (pa.types.is_int8, "byte", "tinyint"), (pa.types.is_int16, "short", "smallint"),
    (pa.types.is_uint8, "short", "smallint"), (pa.types.is_int32, "integer", "int"),
    (pa.types.is_uint16, "integer", "int"), (pa.types.is_int64, "long", "bigint"), (pa.types.is_uint32, "long", "bigint"),
    (pa.types.is_float16, "float", "float"), (pa.types.is_float32, "float", "float"),
    (pa.types.is_float64, "double", "double"), (pa.types.is_string, "string", "string"),
    (pa.types.is_large_string, "string", "string"), (pa.types.is_string_view, "string", "string"),
    (pa.types.is_boolean, "boolean", "boolean"),
    (pa.types.is_date, "date", "date"), (pa.types.is_timestamp, "timestamp", "timestamp"),
    (pa.types.is_binary, "binary", "binary"), (pa.types.is_large_binary, "binary", "binary"),
    (pa.types.is_fixed_size_binary, "binary", "binary"), (pa.types.is_binary_view, "binary", "binary"),
    (pa.types.is_null, "void", "void"),
    (pa.types.is_interval, "calendarinterval", "interval"),
]


def _lists(t: pa.DataType) -> bool:
    return (pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)
            or pa.types.is_list_view(t) or pa.types.is_large_list_view(t))


def _atomic(t: pa.DataType) -> tuple[str, str] | None:
    """(typeName, simpleString) of an atomic type, None for a nested one."""
    if pa.types.is_dictionary(t):
        return _atomic(t.value_type)
    if pa.types.is_decimal(t):
        name = f"decimal({t.precision},{t.scale})"
        return name, name
    if pa.types.is_uint64(t):
        return "decimal(20,0)", "decimal(20,0)"
    if _lists(t) or pa.types.is_map(t) or pa.types.is_struct(t):
        return None
    return next(((name, simple) for test, name, simple in _ATOMIC if test(t)), (str(t), str(t)))


def type_name(t: pa.DataType) -> str:
    """Spark's ``DataType.typeName``: ``integer``, ``long``, ``decimal(38,18)``, ``void`` (Spark 3's
    NullType), ``array``, ``struct``..."""
    if pa.types.is_dictionary(t):
        return type_name(t.value_type)
    if _lists(t):
        return "array"
    if pa.types.is_map(t):
        return "map"
    if pa.types.is_struct(t):
        return "struct"
    return _atomic(t)[0]


def simple_string(t: pa.DataType) -> str:
    """Spark's ``DataType.simpleString``: ``int``, ``array<double>``, ``map<string,bigint>``,
    ``struct<a:int,b:string>`` (past 25 fields: ``... N more fields``, as Spark truncates it)."""
    if pa.types.is_dictionary(t):
        return simple_string(t.value_type)
    if _lists(t):
        return f"array<{simple_string(t.value_type)}>"
    if pa.types.is_map(t):
        return f"map<{simple_string(t.key_type)},{simple_string(t.item_type)}>"
    if pa.types.is_struct(t):
        fields = [f"{f.name}:{simple_string(f.type)}" for f in t]
        if len(fields) > MAX_TO_STRING_FIELDS:
            shown = MAX_TO_STRING_FIELDS - 1
            return f"struct<{','.join(fields[:shown])},... {len(fields) - shown} more fields>"
        return f"struct<{','.join(fields)}>"
    return _atomic(t)[1]


def _json_value(t: pa.DataType):
    """Spark's ``DataType.jsonValue``."""
    if pa.types.is_dictionary(t):
        return _json_value(t.value_type)
    if _lists(t):
        return {"type": "array", "elementType": _json_value(t.value_type), "containsNull": t.value_field.nullable}
    if pa.types.is_map(t):
        return {"type": "map", "keyType": _json_value(t.key_type), "valueType": _json_value(t.item_type),
                "valueContainsNull": t.item_field.nullable}
    if pa.types.is_struct(t):
        return {"type": "struct", "fields": [_field_json(f) for f in t]}
    return _atomic(t)[0]


def _field_json(f: pa.Field) -> dict:
    return {"name": f.name, "type": _json_value(f.type), "nullable": f.nullable, "metadata": {}}


def schema_json(schema: pa.Schema) -> str:
    """Spark's ``StructType.json`` of the table's columns (compact, as Spark writes it)."""
    value = {"type": "struct", "fields": [_field_json(f) for f in schema]}
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


DESCRIBE_SCHEMA = pa.schema([("col_name", pa.string()), ("data_type", pa.string()), ("comment", pa.string())])


def describe(schema: pa.Schema, vectors=()) -> pa.Table:
    """Spark's ``DESCRIBE`` of a table: one row per column, ``col_name``, ``data_type`` (its
    simpleString; ``vector``, VectorUDT's, for the columns named in ``vectors``, lower case) and
    ``comment`` (null: our tables have no column comments)."""
    types = ["vector" if f.name.lower() in vectors else simple_string(f.type) for f in schema]
    return pa.table([schema.names, types, [None] * len(schema)], schema=DESCRIBE_SCHEMA)

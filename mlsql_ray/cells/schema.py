"""``--%schema`` for a cell's result: ``file``, Byzer's ``st(field(a,long),...)``, a Spark DDL
string (``a BIGINT, b ARRAY<STRING>``) or Spark's StructType JSON; and checking a result against it.

Spark DDL is read by sqlglot's Spark dialect and its types mapped to Arrow; Byzer's ``st()`` form,
which sqlglot does not know, has a small parser of its own.
"""

from __future__ import annotations

import json
import re

import pyarrow as pa
import sqlglot
from sqlglot import exp

from ..errors import MLSQLError, first_line

from ..storage.rows import FILE_SCHEMA

_SIMPLE = {
    "string": pa.string(), "str": pa.string(), "varchar": pa.string(), "char": pa.string(),
    "long": pa.int64(), "bigint": pa.int64(), "int": pa.int32(), "integer": pa.int32(),
    "short": pa.int16(), "smallint": pa.int16(), "byte": pa.int8(), "tinyint": pa.int8(),
    "float": pa.float32(), "real": pa.float32(), "double": pa.float64(), "boolean": pa.bool_(),
    "bool": pa.bool_(), "binary": pa.binary(), "date": pa.date32(), "timestamp": pa.timestamp("us"),
}
_TOKEN = re.compile(r"\s*(?:([A-Za-z_][\w]*)|(`[^`]*`)|(\d+)|([(),]))")


def _schema_error(text: str, message: str, pos: int | None = None) -> MLSQLError:
    where = f" at character {pos + 1}" if pos is not None else ""
    return MLSQLError(f"bad --%schema {text!r}: {message}{where}")


class _TypeParser:
    """A small recursive-descent parser for Byzer's ``st(field(name,type),...)`` and the type
    names of Spark's StructType JSON (``long``, ``decimal(10,2)``)."""

    def __init__(self, text: str):
        self.text = text
        self.tokens = []
        pos = 0
        while pos < len(text):
            match = _TOKEN.match(text, pos)
            if not match or match.end() == pos:
                if text[pos:].strip() == "":
                    break
                raise self.error(f"unexpected {text[pos:pos + 10]!r}", pos)
            self.tokens.append((match.group(match.lastindex), match.start(match.lastindex)))
            pos = match.end()
        self.i = 0

    def error(self, message: str, pos: int | None = None) -> MLSQLError:
        return _schema_error(self.text, message, pos)

    def peek(self) -> str | None:
        return self.tokens[self.i][0] if self.i < len(self.tokens) else None

    def take(self, expected: str | None = None) -> str:
        if self.i >= len(self.tokens):
            raise self.error(f"expected {expected or 'more'} at the end")
        value, pos = self.tokens[self.i]
        if expected is not None and value.lower() != expected:
            raise self.error(f"expected {expected!r}, found {value!r}", pos)
        self.i += 1
        return value

    def done(self) -> None:
        if self.i < len(self.tokens):
            value, pos = self.tokens[self.i]
            raise self.error(f"unexpected {value!r}", pos)

    def number(self) -> int:
        if self.peek() is None or not self.peek().isdigit():
            where = self.tokens[self.i][1] if self.i < len(self.tokens) else None
            raise self.error(f"expected a number, found {self.peek() or 'the end'!r}", where)
        return int(self.take())

    def name(self) -> str:
        value = self.take()
        return value[1:-1] if value.startswith("`") else value

    def type(self) -> pa.DataType:
        word = self.take().lower()
        if word == "st":
            return pa.struct(self.struct_fields())
        if word == "array":
            self.take("(")
            inner = self.type()
            self.take(")")
            return pa.list_(inner)
        if word == "map":
            self.take("(")
            key = self.type()
            self.take(",")
            value = self.type()
            self.take(")")
            return pa.map_(key, value)
        if word == "decimal":
            precision, scale = 10, 0
            if self.peek() == "(":
                self.take("(")
                precision = self.number()
                if self.peek() == ",":
                    self.take(",")
                    scale = self.number()
                self.take(")")
            if not 1 <= precision <= 38 or scale > precision:
                raise self.error(f"decimal({precision},{scale}) is out of range: precision 1 to 38, scale at most the precision")
            return pa.decimal128(precision, scale)
        if word in _SIMPLE:
            return _SIMPLE[word]
        raise self.error(f"unknown type {word!r}")

    def struct_fields(self) -> list[pa.Field]:
        """The ``(field(a,long),...)`` after ``st``."""
        fields = []
        self.take("(")
        while True:
            self.take("field")
            self.take("(")
            name = self.name()
            self.take(",")
            fields.append(pa.field(name, self.type()))
            self.take(")")
            if self.peek() != ",":
                break
            self.take(",")
        self.take(")")
        return fields


_DDL_PREFIX = "STRUCT<"
_SCALARS = {
    exp.DataType.Type.TEXT: pa.string(), exp.DataType.Type.VARCHAR: pa.string(), exp.DataType.Type.CHAR: pa.string(),
    exp.DataType.Type.BIGINT: pa.int64(), exp.DataType.Type.INT: pa.int32(), exp.DataType.Type.SMALLINT: pa.int16(),
    exp.DataType.Type.TINYINT: pa.int8(), exp.DataType.Type.FLOAT: pa.float32(), exp.DataType.Type.DOUBLE: pa.float64(),
    exp.DataType.Type.BOOLEAN: pa.bool_(), exp.DataType.Type.BINARY: pa.binary(), exp.DataType.Type.DATE: pa.date32(),
    # Spark's TIMESTAMP (sqlglot: TIMESTAMPTZ) and TIMESTAMP_NTZ: microseconds, as in the st() form
    exp.DataType.Type.TIMESTAMPTZ: pa.timestamp("us"), exp.DataType.Type.TIMESTAMPNTZ: pa.timestamp("us"),
    exp.DataType.Type.TIMESTAMP: pa.timestamp("us"),
}


def _ddl_fields(text: str) -> list[pa.Field]:
    """Spark DDL (``a BIGINT, b ARRAY<STRING>``, also ``a: long``) as Arrow fields, read by
    sqlglot's Spark dialect as the fields of a ``STRUCT<...>``."""
    try:
        struct = sqlglot.parse_one(_DDL_PREFIX + text + ">", read="spark", into=exp.DataType)
    except sqlglot.errors.ParseError as exc:
        error = exc.errors[0] if exc.errors else {}
        pos = error.get("col", 0) - len(error.get("highlight", "")) - len(_DDL_PREFIX) if error.get("line") == 1 else None
        if pos is None or not 0 <= pos < len(text):
            raise _schema_error(text, "not Spark DDL (name TYPE, ...): it ends too early") from None
        raise _schema_error(text, f"not Spark DDL (name TYPE, ...): stuck at {text[pos:pos + 20]!r}", pos) from None
    return [_ddl_field(text, column) for column in struct.expressions]


def _ddl_field(text: str, column: exp.ColumnDef) -> pa.Field:
    pos = column.this.meta.get("start", len(_DDL_PREFIX)) - len(_DDL_PREFIX)
    return pa.field(column.name, _arrow_type(text, column.args["kind"], column.name, pos))


def _arrow_type(text: str, kind: exp.DataType, column: str, pos: int) -> pa.DataType:
    """The Arrow type of a sqlglot type; ``pos`` (the column's name) places errors."""
    if kind.this in _SCALARS:
        return _SCALARS[kind.this]
    inner = [_arrow_type(text, e, column, pos) for e in kind.expressions if isinstance(e, exp.DataType)]
    if kind.this == exp.DataType.Type.ARRAY and len(inner) == 1:
        return pa.list_(inner[0])
    if kind.this == exp.DataType.Type.MAP and len(inner) == 2:
        return pa.map_(*inner)
    if kind.this == exp.DataType.Type.STRUCT:
        return pa.struct([_ddl_field(text, e) for e in kind.expressions])
    if kind.this == exp.DataType.Type.DECIMAL:
        precision, scale = ([int(p.name) for p in kind.expressions] + [10, 0][len(kind.expressions):])[:2]
        return pa.decimal128(precision, scale)
    raise _schema_error(text, f"column {column!r} has the type {kind.sql('spark')}, which has no Arrow counterpart here "
                              "(use a string, number, boolean, binary, date, timestamp, decimal, array, map or struct type)",
                        pos)


def _from_spark_json(spec) -> pa.DataType:
    """A type of Spark's StructType JSON: a type name, or an object for struct, array and map."""
    if isinstance(spec, str):
        return _TypeParser(spec).type()
    kind = _member(spec, "type", str)
    if kind == "struct":
        return pa.struct([_json_field(f) for f in _member(spec, "fields", list)])
    if kind == "array":
        return pa.list_(_from_spark_json(_member(spec, "elementType")))
    if kind == "map":
        return pa.map_(_from_spark_json(_member(spec, "keyType")), _from_spark_json(_member(spec, "valueType")))
    raise MLSQLError(f"bad --%schema JSON: unknown type {kind!r}")


def _json_field(spec) -> pa.Field:
    nullable = spec.get("nullable", True) if isinstance(spec, dict) else True
    if not isinstance(nullable, bool):
        raise MLSQLError(f"bad --%schema JSON: \"nullable\" must be true or false in {json.dumps(spec)[:80]}")
    return pa.field(_member(spec, "name", str), _from_spark_json(_member(spec, "type")), nullable)


def _member(spec, key: str, kind: type | None = None):
    """``spec[key]``, or an error saying which object lacks it (Spark's JSON has no optional parts here)."""
    if not isinstance(spec, dict):
        raise MLSQLError(f"bad --%schema JSON: expected an object with \"{key}\", found {json.dumps(spec)[:80]}")
    if key not in spec:
        raise MLSQLError(f"bad --%schema JSON: {json.dumps(spec)[:80]} has no \"{key}\"")
    value = spec[key]
    if kind is not None and not isinstance(value, kind):
        raise MLSQLError(f"bad --%schema JSON: \"{key}\" must be a {'string' if kind is str else 'list'}, "
                         f"not {json.dumps(value)[:40]}")
    return value


def parse_schema(text: str) -> pa.Schema:
    """The Arrow schema a ``--%schema`` value describes."""
    text = text.strip()
    if text.lower() == "file":
        return FILE_SCHEMA
    if text.startswith("{"):
        try:
            spec = json.loads(text)
        except json.JSONDecodeError as exc:
            raise MLSQLError(f"bad --%schema JSON: {exc}") from exc
        struct = _from_spark_json(spec)
        if not pa.types.is_struct(struct):
            raise MLSQLError(f"bad --%schema JSON: a result schema is a struct (\"type\": \"struct\"), not {struct}")
        return pa.schema(list(struct))
    if not re.match(r"st\s*\(", text, re.IGNORECASE):
        return pa.schema(_ddl_fields(text))
    parser = _TypeParser(text)
    parser.take("st")
    fields = parser.struct_fields()
    parser.done()
    return pa.schema(fields)


def conform(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """The result with exactly the schema's columns, in its order and types; a clear error
    naming the column when one is missing, extra or cannot be converted."""
    if table.num_columns == 0 and table.num_rows == 0:
        # nothing came back (a foreach that dropped every row): no columns to check, and the
        # schema says what the empty result looks like
        return schema.empty_table()
    names = set(table.column_names)
    wanted = set(schema.names)
    missing = [n for n in schema.names if n not in names]
    if missing:
        raise MLSQLError(f"the cell's result has no column {missing[0]!r} required by --%schema "
                         f"(result columns: {', '.join(table.column_names) or 'none'})")
    extra = [n for n in table.column_names if n not in wanted]
    if extra:
        raise MLSQLError(f"the cell's result has a column {extra[0]!r} that --%schema does not declare")
    columns = []
    for field in schema:
        column = table.column(field.name)
        try:
            columns.append(column.cast(field.type) if column.type != field.type else column)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
            raise MLSQLError(f"column {field.name!r} of the cell's result is {column.type}, which cannot become "
                             f"{field.type} as --%schema says: {first_line(exc)}") from exc
    return pa.Table.from_arrays(columns, schema=schema.with_metadata(table.schema.metadata))

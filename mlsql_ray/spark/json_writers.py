"""Spark's ``to_json`` and ``to_csv`` as DuckDB functions (issue 23, item 4): ``spark_to_json(json,
type)`` and ``spark_to_csv(json, type, sep)`` read DuckDB's JSON text of a value (``to_json(x)``)
with its DuckDB type (``typeof(x)``) and print it as Spark's Jackson and univocity writers do:
fields in order without spaces, a struct's NULL fields left out, doubles as Java's
``Double.toString`` (``1.0E20``, as ``java_numbers`` prints it), decimals with their scale (``1.10``), timestamps as
``2020-01-02T03:04:05.123Z``, a map's struct key as Spark's row text (``[1,2]``).

Written by hand because no library prints Java's number forms, and DuckDB's own JSON differs in
exactly those places; the rewrite in ``json_csv`` calls them (the json and csv family declares them). Vectorised over Arrow: DuckDB
hands a batch of rows, each is formatted in Python.
"""

from __future__ import annotations

import ast
import datetime as dt
import json
import re
from decimal import Decimal

import duckdb
import numpy as np
import pyarrow as pa

from .java_numbers import java_double


# -- DuckDB type strings ---------------------------------------------------------------------------

_TOKEN = re.compile(r'\s*("(?:[^"]|"")*"|[A-Za-z_][A-Za-z0-9_ ]*?(?=[\s(),\[\]]|$)|\d+|[(),\[\]])')


def parse_type(text: str):
    """``STRUCT(a INTEGER, "b c" DECIMAL(3,2)[])`` → a nested tuple: ``("STRUCT", [(name, type)])``,
    ``("LIST", type)``, ``("MAP", key, value)``, ``("DECIMAL", scale)`` or ``(NAME,)``."""
    tokens = [t for t in _TOKEN.findall(text) if t]
    position = 0

    def take() -> str:
        nonlocal position
        position += 1
        return tokens[position - 1]

    def peek() -> str | None:
        return tokens[position] if position < len(tokens) else None

    def one():
        name = take().strip().upper()
        if name == "STRUCT":
            take()
            fields = []
            while peek() != ")":
                field = take()
                field = field[1:-1].replace('""', '"') if field.startswith('"') else field.strip()
                fields.append((field, one()))
                if peek() == ",":
                    take()
            take()
            result = ("STRUCT", fields)
        elif name == "MAP":
            take()
            key = one()
            take()
            value = one()
            take()
            result = ("MAP", key, value)
        elif name == "DECIMAL" and peek() == "(":
            take(), take(), take()
            scale = int(take())
            take()
            result = ("DECIMAL", scale)
        else:
            while peek() in ("WITH", "TIME", "ZONE"):  # TIMESTAMP WITH TIME ZONE
                name += " " + take()
            result = (name,)
        while peek() == "[":
            take(), take()
            result = ("LIST", result)
        return result

    return one()


# -- printing --------------------------------------------------------------------------------------

def _timestamp(text: str, zoned: bool, pattern: str | None) -> str:
    """DuckDB's ``2020-01-02 03:04:05.123+00`` as Spark's ``2020-01-02T03:04:05.123Z`` (or in the
    ``strftime`` pattern of the ``timestampFormat`` option, ``%g`` its milliseconds)."""
    value = dt.datetime.fromisoformat(text.replace(" ", "T", 1) + (":00" if re.search(r"[+-]\d\d$", text) else ""))
    if pattern is not None:
        return value.strftime(pattern.replace("%g", f"{value.microsecond // 1000:03d}"))
    printed = value.strftime("%Y-%m-%dT%H:%M:%S") + f".{value.microsecond // 1000:03d}"
    if zoned:
        offset = value.utcoffset() or dt.timedelta(0)
        if not offset:
            return printed + "Z"
        minutes = int(offset.total_seconds()) // 60
        printed += f"{'+' if minutes >= 0 else '-'}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"
    return printed


def _json(value, t, formats: dict[str, str]) -> str:
    kind = t[0]
    if value is None:
        return "null"
    if kind == "STRUCT":
        return "{" + ",".join(json.dumps(name, ensure_ascii=False) + ":" + _json(value.get(name), ft, formats)
                              for name, ft in t[1] if value.get(name) is not None) + "}"
    if kind == "MAP":
        return "{" + ",".join(json.dumps(_key(k, t[1]), ensure_ascii=False) + ":" + _json(v, t[2], formats)
                              for k, v in _entries(value)) + "}"
    if kind == "LIST":
        return "[" + ",".join(_json(v, t[1], formats) for v in value) + "]"
    return _scalar(value, t, quote=True, formats=formats)


def _entries(value):
    """DuckDB writes a map as a JSON object when its keys are text, else as a list of entries."""
    if isinstance(value, dict):
        return value.items()
    return [(e["key"], e["value"]) for e in value]


def _key(key, t) -> str:
    """A map key as Spark's ``toString`` of it: a struct as ``[v1,v2]`` (DuckDB writes a struct
    key as its text, ``{'a': 1}``)."""
    if t[0] in ("STRUCT", "LIST") and isinstance(key, str):
        key = ast.literal_eval(key)
    if t[0] == "STRUCT":
        return "[" + ",".join(_key(key.get(name), ft) for name, ft in t[1]) + "]"
    if t[0] == "LIST":
        return "[" + ", ".join(_key(v, t[1]) for v in key) + "]"
    return "null" if key is None else _scalar(key, t, quote=False, formats={})


def _scalar(value, t, quote: bool, formats: dict[str, str]) -> str:
    kind = t[0]
    if kind in ("DOUBLE", "FLOAT", "REAL"):
        # a FLOAT prints its own shortest digits (Float.toString): 2.2, not 2.200000047683716
        text = java_double(float(value) if kind == "DOUBLE" else float(str(np.float32(value))))
        return text if not quote or text[-1].isdigit() else json.dumps(text)
    if kind == "DECIMAL":
        return format(Decimal(str(value)).quantize(Decimal(1).scaleb(-t[1])), "f")
    if kind == "BOOLEAN":
        return "true" if value else "false"
    if kind in ("TIMESTAMP WITH TIME ZONE", "TIMESTAMP", "TIMESTAMP_NS", "TIMESTAMP_MS", "TIMESTAMP_S"):
        text = _timestamp(str(value), zoned=kind == "TIMESTAMP WITH TIME ZONE", pattern=formats.get("timestampFormat"))
        return json.dumps(text) if quote else text
    if kind == "DATE" and "dateFormat" in formats:
        text = dt.date.fromisoformat(str(value)).strftime(formats["dateFormat"])
        return json.dumps(text) if quote else text
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False) if quote else value
    return str(value)


def _csv(value, t, formats: dict[str, str], sep: str) -> str:
    if t[0] != "STRUCT":
        raise duckdb.InvalidInputException(f"to_csv: the value must be a struct, not {t[0]}")
    fields = []
    for name, ft in t[1]:
        field = value.get(name)
        if ft[0] in ("STRUCT", "LIST", "MAP"):
            raise duckdb.InvalidInputException(f"to_csv: the field {name} of type {ft[0]} cannot be written as CSV")
        text = "" if field is None else _scalar(field, ft, quote=False, formats=formats)
        if field is not None and (text == "" or any(c in text for c in (sep, '"', "\n", "\r"))):
            text = '"' + text.replace('"', '\\"') + '"'
        fields.append(text)
    return sep.join(fields)


def _formatted(format_one, *columns: pa.Array) -> pa.Array:
    """Each row's ``(json, type, formats, *rest)`` formatted; ``formats`` is the JSON text of the
    strftime patterns of ``timestampFormat``/``dateFormat``."""
    rows = zip(*(c.to_pylist() for c in columns))
    return pa.array([None if text is None else format_one(json.loads(text, parse_float=Decimal), parse_type(type_text),
                                                          json.loads(formats or "{}"), *rest)
                     for text, type_text, formats, *rest in rows], pa.string())


def spark_to_json(text: pa.Array, type_text: pa.Array, formats: pa.Array) -> pa.Array:
    return _formatted(_json, text, type_text, formats)


def spark_to_csv(text: pa.Array, type_text: pa.Array, formats: pa.Array, sep: pa.Array) -> pa.Array:
    return _formatted(_csv, text, type_text, formats, sep)

"""Spark's JSON and CSV functions on DuckDB (issue 23, item 4): tree rewrites (``TRANSFORMS``).

``from_json(text, schema)``/``from_csv(text, schema)`` take a DDL schema string (``'a INT, b
DOUBLE'``, ``'array<int>'``, ``'map<string,int>'``, or ``schema_of_json('…')``), known here, so
the conversion of each field is written out as DuckDB SQL with Spark's PERMISSIVE rules: a field of
another JSON type is NULL (``{"a":"1"}`` read as ``a INT``), a string field takes the raw text of
any other value, a document that is no JSON is a struct of NULLs (NULL for an array or a map),
an array with an element of the wrong type is NULL. ``schema_of_json``/``schema_of_csv`` of a
literal are computed here with Spark's inference rules. ``to_json``/``to_csv`` are formatted by
the engine's ``spark_to_json``/``spark_to_csv`` functions from DuckDB's JSON text of the value and
its type (``typeof``), as Spark's Jackson and univocity writers print them.

Options are read where they change the result (``sep``/``delimiter`` for CSV,
``primitivesAsString``/``prefersDecimal`` for ``schema_of_json``); any other option, e.g.
``timestampFormat``, is an error naming it, not silently ignored.
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Callable
from decimal import Decimal

from sqlglot import exp
from sqlglot.errors import ParseError

from ..errors import MLSQLError
from ..options import flag
from .datetime_patterns import strftime_format
from .arrays_maps import gated
from .family import Family, PythonFunction

T = exp.DataType.Type
INTEGERS = (T.TINYINT, T.SMALLINT, T.INT, T.BIGINT)
FRACTIONS = (T.FLOAT, T.DOUBLE, T.DECIMAL)
TIMESTAMPS = (T.TIMESTAMP, T.TIMESTAMPTZ, T.TIMESTAMPLTZ, T.TIMESTAMPNTZ)


def _call(name: str, *args: exp.Expression) -> exp.Anonymous:
    return exp.Anonymous(this=name, expressions=list(args))


def _lambda(params: list[str], body: exp.Expression) -> exp.Lambda:
    return exp.Lambda(this=body, expressions=[exp.to_identifier(p) for p in params])


def _cast(node: exp.Expression, to: exp.DataType | str, safe: bool = False) -> exp.Expression:
    to = to if isinstance(to, exp.DataType) else exp.DataType.build(to, dialect="duckdb")
    return (exp.TryCast if safe else exp.Cast)(this=node, to=to.copy())


def _is(node: exp.Expression, *json_types: str) -> exp.Expression:
    """``json_type(node) IN (...)``"""
    return exp.In(this=_call("json_type", node.copy()), expressions=[exp.Literal.string(t) for t in json_types])


def _case(condition: exp.Expression, value: exp.Expression) -> exp.Case:
    return exp.Case(ifs=[exp.If(this=condition, true=value)])


def _field(j: exp.Expression, name: str) -> exp.Expression:
    return _call("json_extract", j.copy(), exp.Literal.string('$."' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'))


# -- schemas ---------------------------------------------------------------------------------------

def spark_schema(text: str, function: str) -> exp.DataType:
    """A DDL schema string as Spark's ``DataType.fromDDL`` reads it: a type, or a field list."""
    if text.lstrip().startswith("{"):
        raise MLSQLError(f"{function}: Cannot parse the data type: a JSON schema; write it as DDL, e.g. 'a INT, b STRING'")
    field_list = f"STRUCT<{text}>"
    complex_type = re.match(r"\s*(array|map|struct)\s*<", text, re.IGNORECASE)
    for candidate in ((text, field_list) if complex_type else (field_list, text)):
        try:
            schema = exp.DataType.build(candidate, dialect="spark")
        except (ParseError, ValueError):
            continue
        named = bool(schema.expressions) and all(isinstance(c, exp.ColumnDef) and c.args.get("kind") for c in schema.expressions)
        if candidate is field_list and not named:
            continue
        unknown = [d for d in schema.find_all(exp.DataType) if d.is_type(T.USERDEFINED)]
        if unknown:
            raise MLSQLError(f"{function}: Cannot parse the data type: {text} (DataType {unknown[0].sql('spark').lower()} is not supported)")
        if schema.this not in (T.STRUCT, T.ARRAY, T.MAP):
            raise MLSQLError(f"{function}: Input schema {schema.sql('spark')} must be a struct, an array or a map")
        return schema
    raise MLSQLError(f"{function}: Cannot parse the data type: {text}")


def _fields(schema: exp.DataType) -> list[tuple[str, exp.DataType]]:
    return [(c.name, c.args["kind"]) for c in schema.expressions]


def _options(node: exp.Expression | None, function: str, known: tuple[str, ...]) -> dict[str, str]:
    """A ``map('k', 'v', ...)`` of options; options that would change the result and are not
    supported are an error."""
    if node is None:
        return {}
    pairs: list[exp.Expression] = []
    if isinstance(node, exp.VarMap):
        pairs = [x for kv in zip(node.args["keys"].expressions, node.args["values"].expressions) for x in kv]
    elif isinstance(node, exp.Map):
        pairs = [x for kv in zip(node.args["keys"].expressions, node.args["values"].expressions) for x in kv]
    elif isinstance(node, exp.Anonymous) and node.name.lower() == "map":
        pairs = list(node.expressions)
    else:
        raise MLSQLError(f"{function}: options must be a map of string literals, e.g. map('sep', ';')")
    options = {}
    for key, value in zip(pairs[::2], pairs[1::2]):
        if not (isinstance(key, exp.Literal) and isinstance(value, exp.Literal)):
            raise MLSQLError(f"{function}: options must be a map of string literals, e.g. map('sep', ';')")
        if key.this not in known:
            raise MLSQLError(f"{function}: the option '{key.this}' is not supported")
        options[key.this] = value.this
    return options


DATETIME_OPTIONS = ("timestampFormat", "dateFormat")


def _datetime_formats(options: dict[str, str], function: str) -> dict[str, str]:
    return {k: strftime_format(v, function) for k, v in options.items() if k in DATETIME_OPTIONS}


# -- from_json -------------------------------------------------------------------------------------

def _from_json_value(j: exp.Expression, t: exp.DataType, depth: int = 0, formats: dict[str, str] | None = None) -> exp.Expression:
    """DuckDB SQL converting the JSON value ``j`` (NULL when missing) to ``t`` as Spark does
    (``formats``: strptime formats of dates and timestamps)."""
    formats = formats or {}
    if t.this in INTEGERS:
        return _case(_is(j, "BIGINT", "UBIGINT"), _cast(j.copy(), t, safe=True))
    if t.this in FRACTIONS:
        return _case(_is(j, "BIGINT", "UBIGINT", "DOUBLE"), _cast(j.copy(), t, safe=True))
    if t.this == T.BOOLEAN:
        return _case(_is(j, "BOOLEAN"), _cast(j.copy(), t))
    if t.this in (T.TEXT, T.VARCHAR, T.CHAR):
        text = _call("json_extract_string", j.copy(), exp.Literal.string("$"))
        return exp.Case(ifs=[exp.If(this=_is(j, "VARCHAR"), true=text), exp.If(this=_is(j, "NULL"), true=exp.Null())],
                        default=_cast(j.copy(), "VARCHAR"))
    if t.this == T.DATE or t.this in TIMESTAMPS:
        text = _call("json_extract_string", j.copy(), exp.Literal.string("$"))
        return _case(_is(j, "VARCHAR"), _parsed_datetime(text, t, formats))
    if t.this == T.STRUCT:
        fields = [exp.PropertyEQ(this=exp.to_identifier(name, quoted=True), expression=_from_json_value(_field(j, name), kind, depth + 1, formats))
                  for name, kind in _fields(t)]
        return _case(_is(j, "OBJECT"), exp.Struct(expressions=fields))
    if t.this == T.ARRAY:
        element = t.expressions[0]
        e = f"__mlsql_e{depth}"
        items = _cast(_call("json_extract", j.copy(), exp.Literal.string("$[*]")), "JSON[]")
        value = _from_json_value(exp.to_identifier(e), element, depth + 1, formats)
        converted = _call("list_transform", items.copy(), _lambda([e], value))
        bad = exp.GT(this=exp.Length(this=_call("list_filter", items, _lambda([e], exp.and_(
            exp.Not(this=_is(exp.to_identifier(e), "NULL")), exp.Is(this=value.copy(), expression=exp.Null()))))),
            expression=exp.Literal.number(0))
        ifs = [exp.If(this=exp.and_(_is(j, "ARRAY"), exp.Not(this=bad)), true=converted)]
        if element.this == T.STRUCT:  # Spark reads a lone object as an array of one
            ifs.append(exp.If(this=_is(j, "OBJECT"), true=exp.Array(expressions=[_from_json_value(j, element, depth + 1, formats)])))
        return exp.Case(ifs=ifs)
    if t.this == T.MAP:
        value_type = t.expressions[1]
        entry = f"__mlsql_m{depth}"
        entries = _call("map_entries", _call("json_transform", j.copy(), exp.Literal.string('"MAP(VARCHAR, JSON)"')))
        dot = lambda part: exp.Dot(this=exp.to_identifier(entry), expression=exp.to_identifier(part))  # noqa: E731
        pair = exp.Struct(expressions=[exp.PropertyEQ(this=exp.to_identifier("key"), expression=dot("key")),
                                       exp.PropertyEQ(this=exp.to_identifier("value"),
                                                      expression=_from_json_value(dot("value"), value_type, depth + 1, formats))])
        return _case(_is(j, "OBJECT"), _call("map_from_entries", _call("list_transform", entries, _lambda([entry], pair))))
    raise MLSQLError(f"from_json: the type {t.sql('spark')} is not supported")


def _parsed_datetime(text: exp.Expression, t: exp.DataType, formats: dict[str, str]) -> exp.Expression:
    pattern = formats.get("dateFormat" if t.this == T.DATE else "timestampFormat")
    if pattern is None:
        return _cast(text, t, safe=True)
    return _cast(_call("try_strptime", text, exp.Literal.string(pattern)), t)


def _from_json(text: exp.Expression, schema: exp.DataType, formats: dict[str, str]) -> exp.Expression:
    doc = "__mlsql_doc"
    valid = _case(_call("json_valid", exp.to_identifier(doc)), _cast(exp.to_identifier(doc), "JSON"))
    if schema.this != T.STRUCT:
        value = _from_json_value(valid, schema, 0, formats)
    else:  # a document that is no object is a struct of NULLs
        value = exp.Case(ifs=[exp.If(this=exp.Is(this=exp.to_identifier(doc), expression=exp.Null()), true=exp.Null())],
                         default=exp.Struct(expressions=[
                             exp.PropertyEQ(this=exp.to_identifier(name, quoted=True),
                                            expression=_from_json_value(_field(valid, name), kind, 1, formats))
                             for name, kind in _fields(schema)]))
    bound = _call("list_transform", exp.Array(expressions=[_cast(text.copy(), "VARCHAR")]), _lambda([doc], value))
    return exp.Bracket(this=bound, expressions=[exp.Literal.number(1)], offset=1)


# -- schema_of_json / schema_of_csv ------------------------------------------------------------------

def _json_type(value, options: dict[str, str]) -> str:
    as_text = flag(options, "primitivesAsString", False)
    if value is None:
        return "STRING"
    if isinstance(value, bool):
        return "STRING" if as_text else "BOOLEAN"
    if isinstance(value, int):
        return "STRING" if as_text else ("BIGINT" if -2**63 <= value < 2**63 else "DECIMAL(38,0)")
    if isinstance(value, Decimal):
        if as_text:
            return "STRING"
        if flag(options, "prefersDecimal", False):
            digits, exponent = len(value.as_tuple().digits), -value.as_tuple().exponent
            return f"DECIMAL({max(digits, exponent)},{exponent})"
        return "DOUBLE"
    if isinstance(value, str):
        return "STRING"
    if isinstance(value, list):
        types = [_json_type(v, options) for v in value if v is not None]
        return f"ARRAY<{_merge(types)}>"
    fields = sorted(value.items())
    return "STRUCT<" + ", ".join(f"{_quote(k)}: {_json_type(v, options)}" for k, v in fields) + ">"


def _merge(types: list[str]) -> str:
    distinct = list(dict.fromkeys(types))
    if not distinct:
        return "STRING"
    if len(distinct) == 1:
        return distinct[0]
    if set(distinct) <= {"BIGINT", "DOUBLE"}:
        return "DOUBLE"
    return "STRING"


def _quote(name: str) -> str:
    return name if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) else "`" + name.replace("`", "``") + "`"


def schema_of_json(text: str, options: dict[str, str]) -> str:
    if flag(options, "allowNumericLeadingZeros", False):  # 01 is 1; strings stay as they are
        text = re.sub(r'"(?:[^"\\]|\\.)*"|(?<![\w.])0+(?=\d)', lambda m: m.group(0) if m.group(0).startswith('"') else "", text)
    try:
        value = json.loads(text, parse_float=Decimal)
    except ValueError as exc:
        raise MLSQLError(f"schema_of_json: the input is no JSON ({exc})") from exc
    return _json_type(value, options)


def _csv_type(field: str) -> str:
    text = field.strip()
    if re.fullmatch(r"[-+]?\d+", text):
        return "INT" if -2**31 <= int(text) < 2**31 else ("BIGINT" if -2**63 <= int(text) < 2**63 else "DECIMAL(38,0)")
    if re.fullmatch(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?", text):
        return "DOUBLE"
    if text.lower() in ("true", "false"):
        return "BOOLEAN"
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}([ T]\d{2}:\d{2}(:\d{2}(\.\d+)?)?)?", text):
        return "TIMESTAMP"
    return "STRING"


def schema_of_csv(text: str, options: dict[str, str]) -> str:
    sep = options.get("sep", options.get("delimiter", ","))
    return "STRUCT<" + ", ".join(f"_c{i}: {_csv_type(f)}" for i, f in enumerate(_csv_fields(text, sep))) + ">"


def _csv_fields(text: str, sep: str) -> list[str]:
    return next(csv.reader([text], delimiter=sep, quotechar='"'), [])


# -- the transforms --------------------------------------------------------------------------------

def _literal_text(node: exp.Expression, function: str) -> str:
    if isinstance(node, exp.Literal) and node.is_string:
        return node.this
    raise MLSQLError(f"{function}: The input should be a foldable string expression and not null; however, got "
                     f"{node.sql('spark')}")


def schemas_of_literals(tree: exp.Expression) -> None:
    """``schema_of_json('…')``/``schema_of_csv('…')`` of a literal, computed here (Spark also
    requires a literal)."""
    for node in list(tree.find_all(exp.Anonymous)):
        name = node.name.lower()
        if name in ("schema_of_json", "schema_of_csv") and node.expressions:
            known = ("primitivesAsString", "prefersDecimal", "allowNumericLeadingZeros") if name == "schema_of_json" \
                else ("sep", "delimiter")
            options = _options(node.expressions[1] if len(node.expressions) > 1 else None, name, known)
            text = _literal_text(node.expressions[0], name)
            infer = schema_of_json if name == "schema_of_json" else schema_of_csv
            node.replace(exp.Literal.string(infer(text, options)))


def from_json(tree: exp.Expression) -> None:
    """Spark's ``from_json(text, schema)``: see the module's docstring."""
    for node in list(tree.find_all(exp.FromJson, exp.Anonymous)):
        if isinstance(node, exp.FromJson):
            text, schema_node, options = node.this, node.expression, node.args.get("options")
        elif isinstance(node, exp.Anonymous) and node.name.lower() == "from_json" and len(node.expressions) >= 2:
            text, schema_node, *rest = node.expressions
            options = rest[0] if rest else None
        else:
            continue
        formats = _datetime_formats(_options(options, "from_json", DATETIME_OPTIONS), "from_json")
        schema = spark_schema(_literal_text(schema_node, "from_json"), "from_json")
        node.replace(_from_json(text, schema, formats))


def from_csv(tree: exp.Expression) -> None:
    """Spark's ``from_csv(text, schema[, options])``: the fields split as a CSV line (quotes,
    ``sep``), each cast to its type, NULL when it does not parse or is missing."""
    for node in [n for n in tree.find_all(exp.Anonymous) if n.name.lower() == "from_csv" and len(n.expressions) >= 2]:
        text, schema_node, *rest = node.expressions
        options = _options(rest[0] if rest else None, "from_csv", ("sep", "delimiter", *DATETIME_OPTIONS))
        formats = _datetime_formats(options, "from_csv")
        sep = options.get("sep", options.get("delimiter", ","))
        schema = spark_schema(_literal_text(schema_node, "from_csv"), "from_csv")
        if schema.this != T.STRUCT:
            raise MLSQLError(f"from_csv: the schema must be a struct, not {schema.sql('spark')}")
        parts = _call("spark_csv_fields", _cast(text.copy(), "VARCHAR"), exp.Literal.string(sep))
        fields = []
        for i, (name, kind) in enumerate(_fields(schema)):
            part = exp.Bracket(this=parts.copy(), expressions=[exp.Literal.number(i + 1)], offset=1)
            if kind.this in (T.TEXT, T.VARCHAR):
                value = part
            elif kind.this == T.DATE or kind.this in TIMESTAMPS:
                value = _parsed_datetime(_call("trim", part), kind, formats)
            else:
                value = _cast(_call("trim", part), kind, safe=True)
            fields.append(exp.PropertyEQ(this=exp.to_identifier(name, quoted=True), expression=value))
        node.replace(_case(exp.Not(this=exp.Is(this=text.copy(), expression=exp.Null())), exp.Struct(expressions=fields)))


def to_json_and_csv(tree: exp.Expression) -> None:
    """``to_json(x)``/``to_csv(x)``: the engine's ``spark_to_json(to_json(x), typeof(x), formats)``
    and ``spark_to_csv(to_json(x), typeof(x), formats, sep)`` print them as Spark does."""
    for node in list(tree.find_all(exp.JSONFormat, exp.Anonymous)):
        if isinstance(node, exp.JSONFormat):
            value, options, name = node.this, node.args.get("options"), "to_json"
        elif isinstance(node, exp.Anonymous) and node.name.lower() in ("to_json", "to_csv") and node.expressions:
            value, options, name = node.expressions[0], (node.expressions[1] if len(node.expressions) > 1 else None), node.name.lower()
        else:
            continue
        if isinstance(value, exp.Anonymous) and value.name.lower() in ("spark_to_json", "json_extract"):
            continue  # ours, or get_json_object's matches as JSON text (json_path_wildcards_give_json_text)
        known = ("sep", "delimiter", *DATETIME_OPTIONS) if name == "to_csv" else DATETIME_OPTIONS
        opts = _options(options, name, known)
        args = [_call("to_json", value.copy()), _call("typeof", value.copy()),
                exp.Literal.string(json.dumps(_datetime_formats(opts, name)))]
        if name == "to_csv":
            args.append(exp.Literal.string(opts.get("sep", opts.get("delimiter", ","))))
        replacement = _call(f"spark_{name}", *args)
        (node.parent if isinstance(node.parent, exp.Cast) and node.parent.to.is_type(T.TEXT, T.VARCHAR) else node).replace(replacement)


def json_functions(tree: exp.Expression) -> None:
    """``json_array_length``/``json_object_keys`` (NULL for text that is no JSON array/object; an
    INT length), ``get_json_object`` of text that is no JSON (NULL), and the ``json_tuple``
    generator (columns ``c0``, ``c1``…; strings unquoted, objects as JSON text)."""
    for node in list(tree.find_all(exp.JSONKeys, exp.Anonymous, exp.JSONExtractScalar)):
        if isinstance(node, exp.Anonymous) and node.name.lower() == "json_array_length" and node.expressions:
            j = node.expressions[0]
            node.replace(_guarded(j, "ARRAY", _cast(_call("json_array_length", _cast(j.copy(), "VARCHAR")), "INT")))
        elif isinstance(node, exp.JSONKeys):
            node.replace(_guarded(node.this, "OBJECT", _call("json_keys", _cast(node.this.copy(), "VARCHAR"))))
        elif isinstance(node, exp.JSONExtractScalar) and not _guarded_already(node):
            j = node.this
            node.replace(_case(_call("json_valid", _cast(j.copy(), "VARCHAR")), node.copy()))
        elif isinstance(node, exp.Anonymous) and node.name.lower() == "json_tuple" and len(node.expressions) >= 2:
            _json_tuple(node)


def _guarded(j: exp.Expression, json_type: str, value: exp.Expression) -> exp.Expression:
    text = _cast(j.copy(), "VARCHAR")
    return _case(exp.and_(_call("json_valid", text), _is(_cast(text.copy(), "JSON"), json_type)), value)


def _guarded_already(node: exp.Expression) -> bool:
    return isinstance(node.parent, exp.If) and isinstance(node.parent.this, exp.Anonymous) and node.parent.this.name == "json_valid"


def _json_tuple(node: exp.Anonymous) -> None:
    doc, *keys = node.expressions
    text = _cast(doc.copy(), "VARCHAR")
    columns = []
    for i, key in enumerate(keys):
        path = exp.DPipe(this=exp.DPipe(this=exp.Literal.string('$."'), expression=key.copy()), expression=exp.Literal.string('"'))
        value = _case(_call("json_valid", text.copy()), _call("json_extract_string", text.copy(), path))
        columns.append(exp.alias_(value, f"c{i}"))
    parent = node.parent
    if isinstance(parent, exp.Lateral):
        alias = parent.args.get("alias")
        names = [c.name for c in alias.columns] if alias is not None and alias.columns else [f"c{i}" for i in range(len(keys))]
        parent.set("this", exp.Subquery(this=exp.select(*[exp.alias_(c.this, n) for c, n in zip(columns, names)])))
        parent.set("view", None)
        if alias is not None:
            alias.set("columns", None)
    elif isinstance(parent, exp.Select):
        projections = []
        for projection in parent.expressions:
            projections.extend(columns if projection is node else [projection])
        parent.set("expressions", projections)
    else:
        raise MLSQLError("json_tuple is a generator: call it alone in a select list or in LATERAL VIEW")


TRANSFORMS: tuple[Callable[[exp.Expression], None], ...] = (gated(
    (schemas_of_literals, (), frozenset({"schema_of_json", "schema_of_csv"})),
    (from_json, (exp.FromJson,), frozenset({"from_json"})),
    (from_csv, (), frozenset({"from_csv"})),
    (to_json_and_csv, (exp.JSONFormat,), frozenset({"to_json", "to_csv"})),
    (json_functions, (exp.JSONKeys, exp.JSONExtractScalar), frozenset({"json_array_length", "json_tuple"})),
),)

FAMILY = Family("json and csv", transforms=TRANSFORMS, python_functions=(
    PythonFunction("spark_to_json", 3, "json_writers:spark_to_json"),
    PythonFunction("spark_to_csv", 4, "json_writers:spark_to_csv"),
))

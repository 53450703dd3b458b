"""Spark's types of a query's expressions, known while the query is translated (issue 23).

The engine hands ``translate`` the schemas of the tables a query reads (``Schemas``: the catalog
knows every table's columns); a rewrite asks ``spark_type(node)`` for the type Spark gives an
expression, and gets None where it cannot be known here (a table without a schema, a Python UDF's
result, a function sqlglot cannot type). Knowing the type, a rewrite writes plain typed SQL that
DuckDB can push down (``D_YEAR = 1993``) instead of a run-time ``typeof`` guard.

Typing is lazy, because translating must stay cheap: a literal, a cast, arithmetic and aggregates
over those, and a column of a table the query's FROM names directly are typed on the spot (most
filters and projections). Only a node that needs more (a subquery's column, a function's result)
makes the whole query annotated, once, by sqlglot (``qualify`` + ``annotate_types``, Spark dialect,
with Spark's own rules for literals, arithmetic and aggregates below). That runs on a copy: qualify
normalises names to lower case and adds aliases, while the SQL we write must keep every name as the
user wrote it; the copy's types are mapped back onto the original nodes.
"""

from __future__ import annotations

import contextvars
import re
from collections.abc import Iterator
from contextlib import contextmanager
from decimal import Decimal, InvalidOperation
from functools import lru_cache

from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.optimizer.annotate_types import annotate_types
from sqlglot.optimizer.qualify import qualify
from sqlglot.schema import MappingSchema

Schemas = tuple[tuple[str, tuple[tuple[str, str], ...]], ...]
"""The tables a query reads, as the catalog knows them: ``((table, ((column, type), ...)), ...)``, each
type as DuckDB spells it (``INTEGER``, ``DECIMAL(18,3)``, ``VARCHAR[]``). Hashable: part of the
translation cache's key."""

T = exp.DataType.Type
INTEGRAL = (T.TINYINT, T.SMALLINT, T.INT, T.BIGINT)  # narrowest first
FRACTIONAL = (T.FLOAT, T.DOUBLE)
STRING_TYPES = frozenset({T.TEXT, T.VARCHAR, T.CHAR, T.NVARCHAR, T.NCHAR})
BINARY_TYPES = frozenset({T.BINARY, T.VARBINARY})
MAX_PRECISION = 38
_INTEGRAL_AS_DECIMAL = {T.TINYINT: 3, T.SMALLINT: 5, T.INT: 10, T.BIGINT: 20}  # Spark's DecimalType.forType


def build(name: str) -> exp.DataType:
    return exp.DataType.build(name, dialect="spark")


STRING, DOUBLE, BIGINT, INT, BOOLEAN = (build(n) for n in ("STRING", "DOUBLE", "BIGINT", "INT", "BOOLEAN"))


def decimal(precision: int, scale: int) -> exp.DataType:
    return exp.DataType.build(f"DECIMAL({precision}, {scale})")


def kind(t: exp.DataType | None) -> str | None:
    """The family of a type as Spark's coercion rules tell them apart: ``integral``, ``decimal``,
    ``fractional``, ``string``, ``boolean``, ``date``, ``timestamp``, ``binary``, ``null``,
    ``other``; None when not known."""
    if t is None or t.this == T.UNKNOWN:
        return None
    this = t.this
    if this in INTEGRAL:
        return "integral"
    if this in FRACTIONAL:
        return "fractional"
    if this == T.DECIMAL:
        return "decimal"
    if this in STRING_TYPES:
        return "string"
    if this == T.BOOLEAN:
        return "boolean"
    if this == T.DATE:
        return "date"
    if this in (T.TIMESTAMPTZ, T.TIMESTAMPNTZ, T.TIMESTAMP, T.TIMESTAMPLTZ):
        return "timestamp"
    if this in BINARY_TYPES:
        return "binary"
    if this == T.NULL:
        return "null"
    return "other"


def precision_scale(t: exp.DataType) -> tuple[int, int]:
    """A decimal's (precision, scale); an integral type's as Spark widens it to a decimal."""
    if t.this in _INTEGRAL_AS_DECIMAL:
        return _INTEGRAL_AS_DECIMAL[t.this], 0
    params = [int(p.this.this) for p in t.expressions]
    return (params + [10, 0][len(params):])[:2] if params else (10, 0)


# -- Spark's typing rules -------------------------------------------------------------------------------

def literal_type(node: exp.Expression) -> exp.DataType | None:
    """A literal's Spark type: a whole number is INT, else BIGINT, else DECIMAL(digits, 0); a number
    with a point is a DECIMAL of its digits, with an exponent a DOUBLE (Spark's AstBuilder).
    ``-n`` is one literal in Spark (``-2147483648`` is an INT)."""
    negative = isinstance(node, exp.Neg)
    literal = node.this if negative else node
    if not isinstance(literal, exp.Literal):
        return None
    if literal.is_string:
        return STRING
    text = literal.this
    if re.fullmatch(r"\d+", text):
        value = -int(text) if negative else int(text)
        if -2**31 <= value < 2**31:
            return INT
        if -2**63 <= value < 2**63:
            return BIGINT
        return decimal(len(text.lstrip("0") or "0"), 0)
    if "e" in text.lower():
        return DOUBLE
    try:
        parts = Decimal(text).as_tuple()
    except InvalidOperation:
        return None
    scale = max(-int(parts.exponent), 0)
    return decimal(max(len(parts.digits), scale, 1), scale)


def _adjusted(precision: int, scale: int) -> exp.DataType:
    """Spark's ``DecimalType.adjustPrecisionScale`` (``spark.sql.decimalOperations.allowPrecisionLoss``,
    on by default): beyond 38 digits the integral part is kept and the scale gives way, down to 6."""
    if precision <= MAX_PRECISION:
        return decimal(precision, scale)
    integral_digits = precision - scale
    return decimal(MAX_PRECISION, max(MAX_PRECISION - integral_digits, min(scale, 6)))


TYPED_LITERAL = "spark_typed_literal"
"""Meta flag of the cast a suffixed literal (``2L``, ``1Y``) became: still a literal to Spark."""


def _decimal_operand(node: exp.Expression, t: exp.DataType) -> tuple[int, int]:
    """An operand of decimal arithmetic: an integer literal (``2``, ``2L``) counts with its own digits
    (Spark's ``DecimalType.fromLiteral``), other integral values as their type's widest decimal."""
    if isinstance(node, (exp.Cast, exp.TryCast)) and node.meta.get(TYPED_LITERAL):
        node = node.this
    if t.this in INTEGRAL and literal_type(node) is not None:
        inner = node.this if isinstance(node, exp.Neg) else node
        return len(inner.this.lstrip("0") or "0"), 0
    return precision_scale(t)


def wider_integral(a: exp.DataType, b: exp.DataType) -> exp.DataType:
    return a if INTEGRAL.index(a.this) >= INTEGRAL.index(b.this) else b


ARITHMETIC = (exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Mod, exp.IntDiv)

INTERVAL_FIELDS = ("YEAR", "MONTH", "DAY", "HOUR", "MINUTE", "SECOND")
_UNIT_FIELDS = {"WEEK": "DAY", "MILLISECOND": "SECOND", "MICROSECOND": "SECOND"}


def interval_type(start: str, end: str) -> exp.DataType:
    """Spark's ANSI interval type ``INTERVAL start [TO end]`` (``INTERVAL DAY``, ``INTERVAL YEAR TO MONTH``)."""
    unit = exp.var(start) if start == end else exp.IntervalSpan(this=exp.var(start), expression=exp.var(end))
    return exp.DataType(this=exp.Interval(unit=unit))


def interval_fields(t: exp.DataType | None) -> tuple[str, str] | None:
    """The (start, end) fields of an ANSI interval type, None for any other type."""
    unit = t.this.args.get("unit") if t is not None and isinstance(t.this, exp.Interval) else None
    if isinstance(unit, exp.IntervalSpan):
        return unit.this.name.upper(), unit.expression.name.upper()
    return (unit.name.upper(),) * 2 if unit is not None else None


def _interval_literal_type(node: exp.Interval) -> exp.DataType | None:
    """Spark 3.3's type of an interval literal with its unit(s) written after it (``INTERVAL '2' DAY``,
    ``INTERVAL '1-2' YEAR TO MONTH``); None for one whose units are inside the string."""
    unit = node.args.get("unit")
    names = [unit.this, unit.expression] if isinstance(unit, exp.IntervalSpan) else [unit] if unit is not None else []
    fields = [_UNIT_FIELDS.get(n.name.upper().rstrip("S"), n.name.upper().rstrip("S")) for n in names]
    if not fields or any(f not in INTERVAL_FIELDS for f in fields):
        return None
    return interval_type(fields[0], fields[-1])


def _interval_sum_type(left: exp.DataType | None, right: exp.DataType | None) -> exp.DataType | None:
    """Two ANSI intervals of one family (year-month, day-time) add up to the span of both."""
    a, b = interval_fields(left), interval_fields(right)
    if a is None or b is None or (a[0] in ("YEAR", "MONTH")) != (b[0] in ("YEAR", "MONTH")):
        return None
    order = [INTERVAL_FIELDS.index(f) for f in (*a, *b)]
    return interval_type(INTERVAL_FIELDS[min(order)], INTERVAL_FIELDS[max(order)])


def arithmetic_type(node: exp.Expression, left: exp.DataType | None, right: exp.DataType | None) -> exp.DataType | None:
    """Spark's type of ``left op right`` (non-ANSI): a string operand counts as a DOUBLE; integers
    stay integers (the wider); a FLOAT with integers stays FLOAT, else DOUBLE; decimals follow
    ``DecimalPrecision``; ``/`` of non-decimals is DOUBLE, ``div`` is BIGINT. None for datetime and
    most interval arithmetic (not this module's) and unknown operands; a date minus a date is an
    INTERVAL DAY, an ANSI interval plus or minus one of its family the span of both."""
    kinds = [kind(left), kind(right)]
    if isinstance(node, exp.Sub) and kinds[1] == "date" and kinds[0] in ("date", "string", "null"):
        return interval_type("DAY", "DAY")  # Spark's SubtractDates: whole days
    if isinstance(node, (exp.Add, exp.Sub)) and "other" in kinds:
        return _interval_sum_type(left, right)
    if None in kinds or any(k not in ("integral", "fractional", "decimal", "string", "null") for k in kinds):
        return None
    left, right = (DOUBLE if k == "string" else t for k, t in zip(kinds, (left, right)))
    kinds = ["fractional" if k == "string" else k for k in kinds]
    if "null" in kinds:
        other = right if kinds[0] == "null" else left
        if kinds == ["null", "null"] or isinstance(node, exp.Div):
            return DOUBLE
        return BIGINT if isinstance(node, exp.IntDiv) else other
    if isinstance(node, exp.IntDiv):
        return BIGINT
    if "fractional" in kinds:
        if isinstance(node, exp.Div) or T.DOUBLE in (left.this, right.this) or "decimal" in kinds:
            return DOUBLE
        return build("FLOAT")
    if kinds == ["integral", "integral"]:
        return DOUBLE if isinstance(node, exp.Div) else wider_integral(left, right)
    (p1, s1), (p2, s2) = _decimal_operand(node.left, left), _decimal_operand(node.right, right)
    if isinstance(node, (exp.Add, exp.Sub)):
        scale = max(s1, s2)
        return _adjusted(max(p1 - s1, p2 - s2) + scale + 1, scale)
    if isinstance(node, exp.Mul):
        return _adjusted(p1 + p2 + 1, s1 + s2)
    if isinstance(node, exp.Div):
        scale = max(6, s1 + p2 + 1)
        return _adjusted(p1 - s1 + s2 + scale, scale)
    return _adjusted(min(p1 - s1, p2 - s2) + max(s1, s2), max(s1, s2))  # % and pmod


def aggregate_type(node: exp.Expression, argument: exp.DataType | None) -> exp.DataType | None:
    """Spark's type of ``sum``/``avg``: integers sum to BIGINT, decimals to DECIMAL(p + 10, s) and
    average to DECIMAL(p + 4, s + 4); everything else numeric (and strings) to DOUBLE."""
    k = kind(argument)
    if k is None or k not in ("integral", "fractional", "decimal", "string", "null"):
        return None
    if k == "decimal":
        p, s = precision_scale(argument)
        if isinstance(node, exp.Sum):
            return decimal(min(MAX_PRECISION, p + 10), s)
        return decimal(min(MAX_PRECISION, p + 4), min(MAX_PRECISION, s + 4))
    if k == "integral" and isinstance(node, exp.Sum):
        return BIGINT
    return DOUBLE


def cast_target(to: exp.DataType) -> exp.DataType:
    """The type a Spark cast gives: ``DECIMAL`` alone is DECIMAL(10, 0), ``DECIMAL(p)`` is (p, 0);
    ``timestamp(x)`` is Spark's TIMESTAMP (an instant), whatever sqlglot calls it."""
    if to.this == T.DECIMAL and len(to.expressions) < 2:
        return decimal(*precision_scale(to))
    if to.this == T.TIMESTAMP:
        return exp.DataType(this=T.TIMESTAMPTZ)
    return to


def wider_type(a: exp.DataType | None, b: exp.DataType | None) -> exp.DataType | None:
    """Spark's ``findWiderTypeForTwo`` (non-ANSI), the type ``IN`` lists and ``UNION`` columns are
    cast to: the same type; numbers to the highest of the two (an integer and a decimal to a decimal
    wide enough for both, a decimal and a FLOAT/DOUBLE to DOUBLE); a date and a timestamp to the
    timestamp; a string and any other simple type but binary and boolean to STRING. None when
    there is none, or a type is not known."""
    ka, kb = kind(a), kind(b)
    if ka is None or kb is None:
        return None
    if a == b or kb == "null":
        return a
    if ka == "null":
        return b
    numeric = ("integral", "fractional", "decimal")
    if ka in numeric and kb in numeric:
        if "decimal" in (ka, kb):
            if "fractional" in (ka, kb):
                return DOUBLE
            (p1, s1), (p2, s2) = precision_scale(a), precision_scale(b)
            scale = max(s1, s2)
            return decimal(min(MAX_PRECISION, max(p1 - s1, p2 - s2) + scale), scale)
        order = INTEGRAL + FRACTIONAL
        return a if order.index(a.this) >= order.index(b.this) else b
    if {ka, kb} == {"date", "timestamp"}:
        return a if ka == "timestamp" else b
    if "string" in (ka, kb) and {ka, kb} - {"string"} <= {"integral", "fractional", "decimal", "date", "timestamp"}:
        return STRING
    return _wider_complex(a, b)


def _wider_complex(a: exp.DataType, b: exp.DataType) -> exp.DataType | None:
    """Spark's ``findWiderTypeForTwoComplex``: arrays and maps of wider elements, structs with the
    same field names (the first's spelling) of wider fields; None otherwise."""
    if a.this != b.this or a.this not in (T.ARRAY, T.MAP, T.STRUCT) or len(a.expressions) != len(b.expressions):
        return None
    if a.this == T.STRUCT:
        if not all(isinstance(f, exp.ColumnDef) and isinstance(g, exp.ColumnDef) and f.name.lower() == g.name.lower()
                   for f, g in zip(a.expressions, b.expressions)):
            return None
        fields = [wider_type(f.args.get("kind"), g.args.get("kind")) for f, g in zip(a.expressions, b.expressions)]
        if any(t is None for t in fields):
            return None
        return exp.DataType(this=T.STRUCT, nested=True, expressions=[
            exp.ColumnDef(this=f.this.copy(), kind=t) for f, t in zip(a.expressions, fields)])
    inner = [wider_type(x, y) for x, y in zip(a.expressions, b.expressions)]
    if any(t is None for t in inner):
        return None
    return exp.DataType(this=a.this, nested=True, expressions=inner)


# -- typing a query ------------------------------------------------------------------------------------

class _Typing:
    """The types of one query being translated: the tables' schemas, and (once asked for) the
    whole tree annotated by sqlglot."""

    def __init__(self, tree: exp.Expression, schemas: Schemas | None, text: str):
        self.tree = tree
        self.text = text
        self.schemas = schemas
        self.tables = _parsed_schemas(schemas) if schemas is not None else {}
        self.annotated = False
        self._ctes: set[str] | None = None
        self._sources: dict[int, tuple[exp.Select, list[exp.Table] | None]] = {}
        self.unknown: dict[int, exp.Expression] = {}  # nodes known to have no type here (kept alive: ids stay theirs)

    def sources(self, select: exp.Select) -> list[exp.Table] | None:
        """The tables a select reads, if it reads only catalog tables directly (FROM and JOINs)."""
        key = id(select)
        if key not in self._sources:
            from_ = select.args.get("from_")
            found = ([from_.this] if from_ else []) + [join.this for join in select.args.get("joins") or []]
            plain = found and not select.args.get("laterals") and all(_plain_table(s, self) for s in found)
            self._sources[key] = (select, found if plain else None)  # the select kept alive: its id stays its own
        return self._sources[key][1]

    @property
    def complete(self) -> bool:
        """Whether every type asked for so far was known. The tables' schemas are read only to answer
        a question that has no answer without them (a column's type, sqlglot's annotation): when
        none went unanswered, a translation with them would ask and hear the same, and be the same."""
        return not self.unknown

    def ctes(self) -> set[str]:
        if self._ctes is None:
            self._ctes = {cte.alias_or_name.lower() for cte in self.tree.find_all(exp.CTE)}
        return self._ctes

    def annotate(self) -> None:
        """sqlglot's annotation of the whole query on a copy, mapped back node by node: the copy is
        made before qualify changes it, so walking both in order pairs each node with its twin."""
        self.annotated = True
        if self.schemas is None:
            return
        copy = self.tree.copy()
        pairs = list(zip(self.tree.walk(), copy.walk()))
        try:
            schema = _mapping_schema(self.schemas)
            qualified = qualify(copy, schema=schema, dialect="spark", validate_qualify_columns=False,
                                quote_identifiers=False, identify=False)
            annotate_types(qualified, schema=schema, expression_metadata=_spark_metadata())
        except Exception:  # noqa: BLE001 - a query sqlglot cannot qualify stays untyped: its rewrites keep run-time guards
            return
        for original, twin in pairs:
            if _known(original.type) is None and _known(twin.type) is not None:
                original.type = twin.type


_CURRENT: contextvars.ContextVar[_Typing | None] = contextvars.ContextVar("mlsql_sql_types", default=None)


@contextmanager
def typing_of(tree: exp.Expression, schemas: Schemas | None, text: str) -> Iterator[_Typing]:
    """While translating ``tree`` (parsed from ``text``): ``spark_type`` answers for its nodes (None
    for all columns when ``schemas`` is None, as when the parser checks a script's SQL before
    anything runs)."""
    typing = _Typing(tree, schemas, text)
    token = _CURRENT.set(typing)
    try:
        yield typing
    finally:
        _CURRENT.reset(token)


def spark_type(node: exp.Expression) -> exp.DataType | None:
    """Spark's type of ``node``, or None when it cannot be known while translating."""
    known = _known(node.type)
    if known is not None:
        return known
    typing = _CURRENT.get()
    if typing is not None and typing.unknown.get(id(node)) is node:
        return None
    found = _local_type(node)
    if found is not None:
        node.type = found
        return found
    if typing is None:
        return None
    if not typing.annotated and typing.schemas is not None and _inside(node, typing.tree):
        typing.annotate()
        found = _known(node.type)
    if found is None:  # final: the whole query has been annotated, or cannot be
        typing.unknown[id(node)] = node
    return found


def written(node: exp.Expression) -> str | None:
    """The SQL text a parsed token came from (``128Y`` for the literal 128 sqlglot made of it), if
    sqlglot kept its position."""
    typing = _CURRENT.get()
    start, end = node.meta.get("start"), node.meta.get("end")
    if typing is None or start is None or end is None:
        return None
    return typing.text[start:end + 1]


def text_before(node: exp.Expression) -> str:
    """The SQL text before a parsed token, without the blanks just before it."""
    typing = _CURRENT.get()
    start = node.meta.get("start")
    return typing.text[:start].rstrip() if typing is not None and start is not None else ""


def set_type(node: exp.Expression, t: exp.DataType | None) -> exp.Expression:
    """Give a node a rewrite made its Spark type (the type of the node it replaces), so that rewrites
    after it still know it."""
    if t is not None:
        node.type = t
    return node


def _known(t: exp.DataType | None) -> exp.DataType | None:
    return None if t is None or t.this == T.UNKNOWN else t


def _inside(node: exp.Expression, tree: exp.Expression) -> bool:
    return node is tree or node.root() is tree


def _local_type(node: exp.Expression) -> exp.DataType | None:
    """The type of what can be typed without annotating the whole query."""
    if isinstance(node, exp.Literal) or (isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal)):
        return literal_type(node)
    if isinstance(node, (exp.Cast, exp.TryCast)):
        return cast_target(node.to)
    if isinstance(node, exp.Boolean) or isinstance(node, (exp.Predicate, exp.Connector, exp.Not)):
        return BOOLEAN
    if isinstance(node, exp.Null):
        return exp.DataType(this=T.NULL)
    if isinstance(node, exp.HexString):
        return build("BINARY")
    if isinstance(node, exp.Interval):
        return _interval_literal_type(node)
    if isinstance(node, exp.Typeof):
        return STRING
    if isinstance(node, exp.Anonymous) and node.name.lower() in CALL_TYPES:
        return build(CALL_TYPES[node.name.lower()])
    if isinstance(node, exp.Array) and node.expressions:
        element = spark_type(node.expressions[0])
        for item in node.expressions[1:]:
            element = wider_type(element, spark_type(item))
        return exp.DataType(this=T.ARRAY, nested=True, expressions=[element]) if kind(element) is not None else None
    if isinstance(node, (exp.Paren, exp.Alias, exp.Neg)):
        return spark_type(node.this)
    if isinstance(node, ARITHMETIC):
        return arithmetic_type(node, spark_type(node.left), spark_type(node.right))
    if isinstance(node, (exp.Sum, exp.Avg)):
        return aggregate_type(node, spark_type(node.this))
    if isinstance(node, (exp.Min, exp.Max)) and not node.expressions:
        return spark_type(node.this)
    if isinstance(node, exp.Count):
        return BIGINT
    if isinstance(node, exp.Column):
        return _column_type(node)
    if isinstance(node, exp.Bracket) and len(node.expressions) == 1:  # an array's element, a map's value
        container = spark_type(node.this)
        if container is not None and container.this in (T.ARRAY, T.MAP) and container.expressions:
            return container.expressions[-1]
    return None


CALL_TYPES: dict[str, str] = {
    "typeof": "STRING", "date_format": "STRING", "from_unixtime": "STRING",
    **dict.fromkeys(("timestamp", "to_timestamp", "make_timestamp", "date_trunc", "from_utc_timestamp", "to_utc_timestamp",
                     "timestamp_seconds", "timestamp_millis", "timestamp_micros"), "TIMESTAMPTZ"),
    **dict.fromkeys(("date", "to_date", "date_add", "date_sub", "add_months", "last_day", "next_day", "make_date", "trunc",
                     "date_from_unix_date"), "DATE"),
    **dict.fromkeys(("unix_timestamp", "to_unix_timestamp", "unix_seconds", "unix_millis", "unix_micros"), "BIGINT"),
}
"""Spark's result type of the calls sqlglot leaves as plain calls (``spark_functions.PLAIN_CALLS``: the datetime
functions ``spark_datetime`` translates itself), by lower-case name."""


def _column_type(column: exp.Column) -> exp.DataType | None:
    """A column of one of the tables its select reads directly (FROM and JOINs naming catalog
    tables), matched without regard to case as Spark does; None when it may be anything else (an
    alias of the select list, a column of a subquery or an outer query, a lambda's variable)."""
    typing = _CURRENT.get()
    if typing is None or not typing.tables or column.args.get("db") or not isinstance(column.this, exp.Identifier):
        return None
    select = column.find_ancestor(exp.Select, exp.Lambda)
    if not isinstance(select, exp.Select):
        return None
    sources = typing.sources(select)
    if not sources:
        return None
    name, qualifier = column.name.lower(), column.table.lower()
    if qualifier:
        sources = [s for s in sources if s.alias_or_name.lower() == qualifier]
    elif _clause_of(column, select) in ("group", "order", "having") and \
            any(p.alias.lower() == name for p in select.expressions if isinstance(p, exp.Alias)):
        return None  # GROUP BY, ORDER BY and HAVING may mean the alias
    found = [typing.tables[s.name.lower()].get(name) for s in sources]
    found = [t for t in found if t is not None]
    return found[0] if len(found) == 1 else None


def _clause_of(node: exp.Expression, select: exp.Select) -> str:
    """Which part of ``select`` (``expressions``, ``where``, ``group``, ``order``...) holds ``node``."""
    while node.parent is not select:
        node = node.parent
    return node.arg_key


def _plain_table(source: exp.Expression, typing: _Typing) -> bool:
    return (isinstance(source, exp.Table) and isinstance(source.this, exp.Identifier) and not source.args.get("db")
            and source.name.lower() in typing.tables and source.name.lower() not in typing.ctes()
            and not source.args.get("pivots") and not (source.args.get("alias") and source.args["alias"].columns))


@lru_cache(maxsize=256)
def _parsed_schemas(schemas: Schemas) -> dict[str, dict[str, exp.DataType]]:
    return {table.lower(): {column.lower(): duckdb_type(t) for column, t in columns} for table, columns in schemas}


@lru_cache(maxsize=4096)
def duckdb_type(text: str) -> exp.DataType:
    """A DuckDB type's text (``STRUCT(a INTEGER)``) as the type tree the rewrites read (unknown
    when sqlglot cannot read it)."""
    try:
        return exp.DataType.build(text, dialect="duckdb")
    except Exception:  # noqa: BLE001 - a DuckDB type sqlglot cannot read (e.g. a union or an enum) is unknown
        return exp.DataType(this=T.UNKNOWN)


@lru_cache(maxsize=64)
def _mapping_schema(schemas: Schemas):
    tables = _parsed_schemas(schemas)
    return MappingSchema({table: dict(columns) for table, columns in tables.items()}, dialect="spark")


@lru_cache(maxsize=1)
def _spark_metadata() -> dict:
    """sqlglot's Spark typing, with Spark's own rules where sqlglot's differ (decimal literals,
    decimal arithmetic, ``sum``/``avg``, casts to ``DECIMAL``), and the types rewrites gave their macro calls."""
    metadata = dict(Dialect.get_or_raise("spark").EXPRESSION_METADATA)

    def by_rule(rule):
        def annotate(annotator, node):
            annotator._set_type(node, rule(node) or T.UNKNOWN)
        return {"annotator": annotate}

    metadata[exp.Literal] = by_rule(literal_type)
    for cls in ARITHMETIC:
        metadata[cls] = by_rule(lambda node: arithmetic_type(node, _known(node.left.type), _known(node.right.type)))
    for cls in (exp.Sum, exp.Avg):
        metadata[cls] = by_rule(lambda node: aggregate_type(node, _known(node.this.type)))
    metadata[exp.Neg] = by_rule(lambda node: literal_type(node) if isinstance(node.this, exp.Literal) else _known(node.this.type))
    for cls in (exp.Cast, exp.TryCast):
        metadata[cls] = by_rule(lambda node: cast_target(node.to))
    metadata[exp.Anonymous] = by_rule(lambda node: _known(node.type))  # a rewrite's macro call keeps the type it was given
    return metadata

"""``DataSummary`` (``ml/eda/DataSummary.md``): one row per column of T, one string column per
metric, as Byzer's ``SQLDataSummaryV2`` computes and prints them.

All metrics but the mode come from one DuckDB aggregate over T; the modes from one more query.
Definitions (Spark's): ``standardDeviation`` is the sample standard deviation (``stddev``),
``standardError`` that over the square root of the count, ``skewness`` the population skewness
(Spark's ``skewness``), ``%25``/``median``/``%75`` the exact percentiles with linear interpolation
(Spark's ``percentile``, which Byzer uses up to ``approxThreshold`` rows; above it Byzer switches
to ``percentile_approx`` and ``approx_count_distinct``, whose answers the exact ones here are within
the error bounds of). Values are left out as Byzer leaves them out: nulls, NaN, and blank strings.
Every number is printed as Byzer prints it: BigDecimal HALF_UP rounding to ``roundAt`` places
(two more for ratios), then Java's ``Double.toString`` (so never ``-0.0``); counts as whole
numbers; ``max``, ``min`` and the mode as Spark's cast to string writes the value (Byzer's
``.cast(StringType)``: a struct ``{1, a}``, a timestamp without offset); ``dataType`` is Spark's ``typeName`` (``long``, ``integer``, ``void``); ``totalCount`` is T's
row count (a default metric of Byzer's current SQLDataSummaryV2).
"""

from __future__ import annotations

import pyarrow as pa
from sqlglot import exp

from ...errors import MLSQLError
from ...spark import sql_build
from ...options import Param
from ...spark import java_numbers as spark_format
from ...spark.casts import spark_cast
from ...spark.sql_types import STRING, duckdb_type
from ...ml.ets.base import ET, Call
from .base import PEOPLE_DATA, input_name, is_numeric, spark_type_name

METRICS = ("%25", "median", "%75", "blankValueRatio", "dataLength", "dataType", "max", "maximumLength", "mean", "min",
           "minimumLength", "nonNullCount", "nullValueRatio", "skewness", "totalCount", "standardDeviation",
           "standardError", "uniqueValueRatio", "categoryCount", "primaryKeyCandidate", "mode")
DEFAULT_METRICS = ("dataType", "dataLength", "max", "min", "maximumLength", "minimumLength", "mean", "standardDeviation",
                   "standardError", "nullValueRatio", "blankValueRatio", "nonNullCount", "uniqueValueRatio",
                   "primaryKeyCandidate", "median", "mode", "totalCount")
_ALWAYS = ("columnName", "ordinalPosition")
_WHOLE = {"ordinalPosition", "dataLength", "maximumLength", "minimumLength", "nonNullCount", "categoryCount",
          "primaryKeyCandidate", "totalCount"}
_AS_IS = {"columnName", "dataType"}
_SPELLINGS = {m.lower(): m for m in METRICS + _ALWAYS} | {"25%": "%25", "75%": "%75", "50%": "median", "%50": "median"}
_FIXED_LENGTH = {"byte": 1, "short": 2, "integer": 4, "long": 8, "float": 4, "double": 8, "date": 8, "timestamp": 8,
                 "boolean": 1}


def selected_metrics(text: str | None) -> list[str]:
    """The metrics asked for, in Byzer's column order. Names are matched without regard to case or
    surrounding spaces, and ``25%``/``75%`` (the doc's spelling) name ``%25``/``%75``."""
    if text is None:
        wanted = set(DEFAULT_METRICS)
    else:
        wanted = set()
        for name in (n.strip() for n in text.split(",")):
            if not name:
                continue
            metric = _SPELLINGS.get(name.lower())
            if metric is None:
                raise MLSQLError(f"DataSummary: unknown metric {name!r} (known: {', '.join(_ALWAYS + METRICS)})")
            wanted.add(metric)
    return [m for m in METRICS if m in wanted]


def _kept(arrow_type: pa.DataType) -> str:
    """The rows whose value ``$q`` counts: not null, not NaN, not a blank string."""
    if pa.types.is_floating(arrow_type):
        return "$q IS NOT NULL AND NOT isnan($q)"
    if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type):
        return "$q IS NOT NULL AND trim($q) <> ''"
    return "$q IS NOT NULL"


def _aggregates(i: int, name: str, arrow_type: pa.DataType, column_type: exp.DataType) -> list[exp.Alias]:
    """The aggregates of one column (``$q`` in their shapes), named ``c{i}_...``."""
    kept = f"(CASE WHEN {_kept(arrow_type)} THEN $q END)"
    number = f"CAST({kept} AS DOUBLE)"
    is_string = pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type)
    missing = "$q IS NULL OR isnan($q)" if pa.types.is_floating(arrow_type) else "$q IS NULL"
    out = [
        ("kept", f"count({kept})"),
        ("nulls", f"count(*) FILTER (WHERE {missing})"),
        ("blanks", "count(*) FILTER (WHERE trim($q) = '')" if is_string else "0"),
        ("max", f"max({kept})"),
        ("min", f"min({kept})"),
        ("distinct", f"count(DISTINCT {kept})"),
    ]
    if is_string:
        out += [("maxlen", "max(length($q))"), ("minlen", "min(length($q))")]
    if is_numeric(arrow_type):
        n = f"count({kept})"
        out += [
            ("mean", f"avg({number})"),
            ("std", f"stddev_samp({number})"),
            ("stderr", f"stddev_samp({number}) / sqrt({n})"),
            # DuckDB's skewness is the sample-adjusted one; Spark's is the population skewness
            ("skew", f"CASE WHEN {n} = 0 OR var_pop({number}) = 0 THEN NULL WHEN {n} = 2 THEN 0.0 "
                     f"ELSE skewness({number}) * ({n} - 2) / sqrt({n} * ({n} - 1)) END"),
            ("quartiles", f"quantile_cont({number}, [0.25, 0.5, 0.75])"),
        ]
    q = sql_build.column(name)
    return [(_as_text(sql_build.shaped(shape, q=q), column_type) if what in ("max", "min") else sql_build.shaped(shape, q=q))
            .as_(f"c{i}_{what}") for what, shape in out]


def _as_text(value: exp.Expression, column_type: exp.DataType) -> exp.Expression:
    """A value of the column's type as Byzer prints it: Spark's ``cast(... as string)`` (a struct
    ``{1, a}``, a timestamp without offset in the session time zone), before the metric's rounding."""
    return spark_cast(value, STRING, column_type)


def _modes(session, table: exp.Table, schema: pa.Schema, column_types: list[exp.DataType]) -> list[str | None]:
    """Each column's most frequent value as text (nulls and NaN left out, values compared as
    text as Byzer groups them); None when the two most frequent tie."""
    parts = []
    for i, (field, column_type) in enumerate(zip(schema, column_types)):
        where = "$q IS NOT NULL AND NOT isnan($q)" if pa.types.is_floating(field.type) else "$q IS NOT NULL"
        parts.append(sql_build.shaped(
            f"SELECT $i AS i, $v AS v, count(*) AS n FROM $table WHERE {where} GROUP BY v ORDER BY n DESC, v LIMIT 2",
            i=exp.Literal.number(i), v=_as_text(sql_build.column(field.name), column_type),
            q=sql_build.column(field.name), table=table).subquery())
    query = exp.union(*parts, distinct=False) if len(parts) > 1 else parts[0]
    top: dict[int, list[tuple[str, int]]] = {}
    sql = query.sql("duckdb")
    session.define_macros_of(sql)
    for i, value, count in session.con.sql(sql).fetchall():
        top.setdefault(i, []).append((value, count))
    top = {i: sorted(values, key=lambda vc: -vc[1]) for i, values in top.items()}
    return [None if i not in top or (len(top[i]) == 2 and top[i][0][1] == top[i][1][1]) else top[i][0][0]
            for i in range(len(schema))]


def _summarize(session, call: Call) -> pa.Table:
    metrics = selected_metrics(call.option("metrics"))
    places = call.integer("roundAt", 2, minimum=0)
    table = input_name(session, call)
    schema = session.catalog.schema(call.table)
    columns = list(_ALWAYS) + metrics
    if len(schema) == 0:
        return pa.table({c: pa.array([], pa.string()) for c in columns})
    # the DuckDB types, as the translator reads them: Spark's cast to string is written for them
    column_types = [duckdb_type(t) for _, t in session.catalog.schemas([call.table])[0][1]]
    select = [sql_build.shaped("count(*)").as_("total")] + [
        a for i, (f, t) in enumerate(zip(schema, column_types)) for a in _aggregates(i, f.name, f.type, t)]
    sql = exp.select(*select).from_(table).sql("duckdb")
    session.define_macros_of(sql)
    stats = session.con.sql(sql).fetchall()[0]
    got = dict(zip((a.alias for a in select), stats))
    total = got["total"]
    if total == 0:
        return pa.table({c: pa.array([], pa.string()) for c in columns})
    modes = _modes(session, table, schema, column_types) if "mode" in metrics else [None] * len(schema)
    rows = []
    for i, field in enumerate(schema):
        type_name = spark_type_name(field.type)
        kept, distinct = got[f"c{i}_kept"], got[f"c{i}_distinct"]
        ratio = distinct / kept if kept else 0.0
        quartiles = got.get(f"c{i}_quartiles") or [None, None, None]
        values = {
            "columnName": field.name, "ordinalPosition": i + 1,
            "%25": quartiles[0], "median": quartiles[1], "%75": quartiles[2],
            "blankValueRatio": got[f"c{i}_blanks"] / total,
            "dataLength": got.get(f"c{i}_maxlen") if type_name == "string"
            else 16 if type_name.startswith("decimal") else _FIXED_LENGTH.get(type_name),
            "dataType": type_name, "max": got[f"c{i}_max"], "min": got[f"c{i}_min"],
            "maximumLength": got.get(f"c{i}_maxlen"), "minimumLength": got.get(f"c{i}_minlen"),
            "mean": got.get(f"c{i}_mean"), "nonNullCount": kept, "nullValueRatio": got[f"c{i}_nulls"] / total,
            "skewness": got.get(f"c{i}_skew"), "totalCount": total, "standardDeviation": got.get(f"c{i}_std"),
            "standardError": got.get(f"c{i}_stderr"), "uniqueValueRatio": ratio,
            "categoryCount": 0 if is_numeric(field.type) else distinct,
            "primaryKeyCandidate": 1 if ratio >= 1 else 0, "mode": modes[i],
        }
        rows.append([_printed(m, values[m], places) for m in columns])
    return pa.table({c: pa.array([r[k] for r in rows], pa.string()) for k, c in enumerate(columns)})


def _printed(metric: str, value, places: int) -> str:
    text = spark_format.text(value)
    if metric in _AS_IS:
        return text
    if metric in _WHOLE:
        return spark_format.whole(text)
    return spark_format.rounded(text, places + 2 if metric.endswith("Ratio") else places)


ETS = (
    ET("DataSummary", "one row per column: type, lengths, extremes, mean, spread, quartiles, ratios, mode", _summarize, (
        Param("metrics", ",".join(DEFAULT_METRICS), "the metrics to show, comma-separated, from: " + ", ".join(METRICS)),
        Param("roundAt", "2", "decimal places of the numbers (ratios get two more)"),
        Param("rountAt", "", "accepted and ignored, as Byzer does: the misspelling of roundAt in Byzer's "
                             "DataSummary page"),
        Param("approxSwitch", "false", "accepted (Byzer 1.x); the numbers here are always exact"),
        Param("approxThreshold", "100000", "accepted; the numbers here are always exact"),
        Param("relativeError", "0.01", "accepted; the numbers here are always exact"),
        Param("approxCountDistinct", "true", "accepted; the numbers here are always exact"),
        Param("threshold", "0.9", "accepted; the numbers here are always exact"),
    ), kind="data analysis", example=PEOPLE_DATA + "run table1 as DataSummary.`` as summaryTable;\n"),
)

"""How values are spread: ``DescriptiveMetrics`` (value counts, ``ml/eda/DescriptiveMetrics.md``)
and ``PatternDistribution`` (text shapes, ``ml/eda/PatternDistribution.md``)."""

from __future__ import annotations

import json

import pyarrow as pa
from sqlglot import exp

from ...errors import MLSQLError
from ...spark import sql_build
from ...options import Param
from ...spark import java_numbers as spark_format
from ...ml.ets.base import ET, Call
from .base import PEOPLE_DATA, input_name


def _descriptive(session, call: Call) -> pa.Table:
    """Per column, its ``metricSize`` most frequent values with their counts, shown in value order
    as a JSON array of one-key objects (``[{"18":1},{"21":7}]``; null shows as "")."""
    size = call.integer("metricSize", 100)
    if size <= 0:
        raise MLSQLError("The limit parameter `metricSize` is not allowed to be less than 1!")
    table = input_name(session, call)
    names, texts = [], []
    for name in session.catalog.schema(call.table).names:
        counts = session.con.sql(sql_build.shaped(
            "SELECT v, n FROM (SELECT $v AS v, count(*) AS n FROM $table GROUP BY $v ORDER BY n DESC, v LIMIT $size) "
            "ORDER BY v NULLS FIRST", v=sql_build.column(name), table=table, size=exp.Literal.number(size)).sql("duckdb")).fetchall()
        items = [json.dumps({spark_format.text(v): n}, ensure_ascii=False, separators=(",", ":")) for v, n in counts]
        names.append(name)
        texts.append("[" + ",".join(items) + "]")
    return pa.table({"columnName": pa.array(names, pa.string()), "descriptiveMetrics": pa.array(texts, pa.string())})


# Byzer's pattern alphabet: a lower-case letter is a, an upper-case letter or a CJK character A,
# a digit 9; everything else stands for itself.
_PATTERN_SQL = ("regexp_replace(regexp_replace(regexp_replace($v, '[a-z]', 'a', 'g'), "
                "'[A-Z\u4e00-\u9fff]', 'A', 'g'), '[0-9]', '9', 'g')")
_CLASSES = "Aa9"


def alternative_pattern(pattern: str) -> str:
    """Byzer's run-length form of a pattern: ``AAAAAA,A,AA`` → ``A(6),A,A(2)``, ``Aaa.AAAA#999``
    → ``Aa(2).A(4)#9(3)``. A run is closed by a change of class or by a symbol, which follows it."""
    out, run_class, run_length = [], "", 0

    def close() -> str:
        return "" if not run_class else run_class if run_length == 1 else f"{run_class}({run_length})"

    for ch in pattern:
        if ch in _CLASSES:
            if ch != run_class:
                out.append(close())
                run_class, run_length = ch, 0
            run_length += 1
        else:
            out.append(close() + ch)
            run_class, run_length = "", 0
    out.append(close())
    return "".join(out)


def _patterns(session, call: Call) -> pa.Table:
    """Per string column: its text patterns (``alternative_pattern``), most frequent first, as the
    JSON Byzer writes: ``{"colPatternDistribution": "[{count, ratio, pattern, alternativePattern},
    ...]", "totalCount": "N", "limit": "L"}``. Patterns longer than ``patternLimit`` are cut; nulls are
    always left out, empty strings unless ``excludeEmptyVal="false"``."""
    limit = call.integer("limit", 100, minimum=1)
    exclude_empty = call.flag("excludeEmptyVal", True)
    cut = call.integer("patternLimit", 1000, minimum=1)
    table = input_name(session, call)
    names, texts = [], []
    for field in session.catalog.schema(call.table):
        if not (pa.types.is_string(field.type) or pa.types.is_large_string(field.type)):
            continue
        where = "$v IS NOT NULL AND $v <> ''" if exclude_empty else "$v IS NOT NULL"
        groups = session.con.sql(sql_build.shaped(
            f"SELECT {_PATTERN_SQL} AS p, count(*) AS n FROM $table WHERE {where} GROUP BY p ORDER BY n DESC, p",
            v=sql_build.column(field.name), table=table).sql("duckdb")).fetchall()
        if not groups:
            raise MLSQLError(f"Please make sure the column {field.name} contains content except null or empty content!")
        rows = sum(n for _, n in groups)
        # written by hand, not by json.dumps, so the ratio is printed as Java prints a double
        items = [f'{{"count":{n},"ratio":{spark_format.java_double(n / rows)},'
                 f'"pattern":{json.dumps(p[:cut], ensure_ascii=False)},'
                 f'"alternativePattern":{json.dumps(alternative_pattern(p), ensure_ascii=False)}}}'
                 for p, n in groups[:limit]]
        names.append(field.name)
        texts.append(json.dumps({"colPatternDistribution": "[" + ",".join(items) + "]", "totalCount": str(len(groups)),
                                 "limit": str(limit)}, ensure_ascii=False, separators=(",", ":")))
    return pa.table({"columnName": pa.array(names, pa.string()), "patternDistribution": pa.array(texts, pa.string())})


ETS = (
    ET("DescriptiveMetrics", "per column, its most frequent values and their counts, as JSON", _descriptive, (
        Param("metricSize", "100", "how many of the most frequent values to show per column"),
    ), kind="data analysis", example=PEOPLE_DATA + "run table1 as DescriptiveMetrics.`` where metricSize=\"100\" as descriptiveMetrics;\n"),
    ET("PatternDistribution", "per text column, the shapes of its values (a for a-z, A for A-Z, 9 for digits) and their shares",
       _patterns, (
           Param("limit", "100", "how many patterns to show per column"),
           Param("excludeEmptyVal", "true", "leave out empty strings"),
           Param("patternLimit", "1000", "patterns longer than this are cut"),
       ), kind="data analysis", example=PEOPLE_DATA + "run table1 as PatternDistribution.`` as pd_table;\n"),
)

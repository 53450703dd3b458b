"""Nested Spark functions stay small for DuckDB (``spark.macro_expansion``): a macro's argument is
copied wherever its body names it, so nested calls multiplied into binds of seconds."""

from __future__ import annotations

import sqlglot

from mlsql_ray.spark import macro_expansion
from mlsql_ray.spark.translate import translate

NESTED = ("cast(round(cast(round(cast(round(c) as string) * 2) as string) / 3) as string)")


def test_nested_calls_compute_their_arguments_once():
    schemas = (("t", (("c", "DOUBLE"),)),)
    written = translate(f"select {NESTED} as s from t", schemas=schemas).sql
    rewritten = sqlglot.parse_one(written, dialect="duckdb")
    assert "__once" in written
    assert macro_expansion.expanded_size(rewritten) < 4 * macro_expansion.LIMIT
    # the same calls written plainly would have DuckDB bind far more
    plain = sqlglot.parse_one(
        "select spark_real_to_string(spark_round_double(spark_str_to_double(spark_real_to_string(spark_round_double(c, 0, false),"
        " spark_cast_string(spark_round_double(c, 0, false)))), 0, false), spark_cast_string(spark_round_double("
        "spark_str_to_double(spark_real_to_string(spark_round_double(c, 0, false), spark_cast_string(spark_round_double(c, 0, false)))),"
        " 0, false))) from t", dialect="duckdb")
    assert macro_expansion.expanded_size(plain) > 10 * macro_expansion.LIMIT


def test_nested_calls_still_give_sparks_answers(session):
    session.execute("select 2.5D as c union all select -7.25D union all select 1e20D union all select null as t;")
    session.execute(f"select {NESTED} as s, sum(round(round(c) * round(c))) over () as w from t as out;")
    rows = session.table("out").to_pylist()
    # round(2.5) = 3.0 -> '3.0' * 2 = 6.0 -> round(6.0 / 3) = 2.0; round(-7.25) = -7.0 -> -14.0 / 3 -> -5.0;
    # 1e20 stays 1.0E20 -> 2.0E20 / 3 = 6.666...E19, rounded to 6.666666666666666E19
    assert [r["s"] for r in rows] == ["2.0", "-5.0", "6.666666666666666E19", None]
    assert {r["w"] for r in rows} == {9.0 + 49.0 + 1e40}


def test_months_between_reads_each_timestamp_once(session):
    """spark_months_between hands its two timestamps to spark_months_between_of, which names each a
    dozen times: passed as calls, they were copied into every place (some 7 000 nodes, seconds of
    binding per query); passed through a one-element list, the expansion stays small."""
    assert macro_expansion.shape("spark_months_between").size < macro_expansion.LIMIT
    session.execute("select timestamp'1997-02-28 10:30:00' as a, '1996-10-30' as b, false as spark_mb as t;"
                    "select months_between(a, b) as rounded, months_between(a, b, spark_mb) as exact from t as out;")
    assert session.table("out").to_pylist() == [{"rounded": 3.94959677, "exact": 3.9495967741935485}]

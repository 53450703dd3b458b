"""Issue 23's "types known at translation": ``translate`` gets the tables' schemas from the catalog,
rewrites ask ``sql_types.spark_type``, and typed SQL stays plain (no run-time ``typeof`` guards) while
the names keep the case the user wrote. Spark's answers themselves are the conformance cases
(tests/conformance/cases/casts.txt, arithmetic.txt, ...); these tests pin the machinery."""

from __future__ import annotations

import pyarrow as pa
import pytest

from mlsql_ray import MLSQLError, Session
from mlsql_ray.spark import functions as spark_functions, sql_types
from mlsql_ray.spark.translate import translate

DATES = (("dates", (("D_DATEKEY", "DATE"), ("D_YEAR", "INTEGER"), ("D_MONTH", "VARCHAR"))),)


def test_a_typed_filter_stays_a_plain_comparison():
    typed = translate("select * from dates where D_YEAR = 1993 and D_MONTH = 'May'", schemas=DATES).sql
    assert "D_YEAR = 1993" in typed and "D_MONTH = 'May'" in typed
    assert "TYPEOF" not in typed.upper() and "CASE" not in typed.upper()


def test_without_schemas_the_comparison_decides_when_duckdb_binds():
    untyped = translate("select * from dates where D_YEAR = 1993 and D_MONTH = 'May'").sql
    assert "TYPEOF(D_YEAR)" in untyped.upper() and "TYPEOF(D_MONTH)" in untyped.upper()


def test_the_translation_cache_keys_on_the_schemas():
    as_int = translate("select * from t where x = '7'", schemas=(("t", (("x", "INTEGER"),)),)).sql
    as_text = translate("select * from t where x = '7'", schemas=(("t", (("x", "VARCHAR"),)),)).sql
    assert as_int != as_text
    assert "x = '7'" in as_text  # a string compared with a string: no cast


def test_names_keep_the_case_the_user_wrote_when_the_whole_query_is_annotated():
    """A column of a subquery needs sqlglot's annotation (qualify normalises names to lower case):
    it runs on a copy, and the SQL written keeps ``D_Year``, ``Total`` and ``sub`` as they were."""
    sql = translate("select D_Year + 1 as Total from (select D_YEAR as D_Year from dates) sub", schemas=DATES).sql
    assert "D_Year" in sql and "Total" in sql and "sub" in sql
    assert "SPARK_WRAP_INT" in sql.upper()  # the subquery's column was typed INT: Java's wrapping


def test_typing_is_lazy_columns_of_tables_named_in_from_need_no_annotation():
    tree = spark_functions.parse("select D_YEAR + 1 from dates where D_MONTH = 'x'")[0]
    with sql_types.typing_of(tree, DATES, "") as typing:
        column = next(c for c in tree.find_all(sql_types.exp.Column) if c.name == "D_YEAR")
        assert sql_types.kind(sql_types.spark_type(column)) == "integral"
        assert sql_types.kind(sql_types.spark_type(column.parent)) == "integral"
        assert not typing.annotated
        function = spark_functions.parse("select upper(D_MONTH) from dates")[0]
    with sql_types.typing_of(function, DATES, "") as typing:
        assert sql_types.kind(sql_types.spark_type(function.expressions[0])) == "string"
        assert typing.annotated


def test_a_sum_of_a_type_not_known_here_is_fixed_by_binding():
    assert translate("select sum(x) from unknown_table").bound_types
    assert not translate("select sum(D_YEAR) from dates", schemas=DATES).bound_types


@pytest.fixture()
def session(tmp_path):
    with Session(warehouse=tmp_path) as s:
        yield s


def test_the_catalog_knows_the_types_of_arrow_tables_file_scans_and_selects(session, tmp_path):
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"n": pa.array([1, 2], pa.int32()), "s": ["a", "b"]}), tmp_path / "f.parquet")
    session.execute(f"load parquet.`{tmp_path / 'f.parquet'}` as files;")
    session.catalog.add_arrow("memory", pa.table({"d": pa.array([1.5], pa.float64())}), "test")
    session.execute("select n * 2 as twice, s from files as doubled;")
    found = dict(session.catalog.schemas(["files", "memory", "doubled", "not_a_table"]))
    assert found == {"files": (("n", "INTEGER"), ("s", "VARCHAR")), "memory": (("d", "DOUBLE"),),
                     "doubled": (("twice", "INTEGER"), ("s", "VARCHAR"))}


def test_a_sum_of_an_int_column_is_bigint_and_wraps_as_spark(session):
    session.execute("select 2147483647 as i from range(3) as t; select sum(i) as total, i * 2 as twice from t group by i as s;")
    table = session.table("s")
    assert table.schema.field("total").type == pa.int64() and table.column("total").to_pylist() == [6442450941]
    assert table.schema.field("twice").type == pa.int32() and table.column("twice").to_pylist() == [-2]


def test_a_cast_spark_refuses_is_an_error_at_its_line(session):
    with pytest.raises(MLSQLError) as raised:
        session.execute("select 1 as a as t;\nselect cast(a as date) as d from t as u;")
    assert raised.value.line == 2 and "cannot cast int to date" in str(raised.value)


def test_a_bad_literal_stops_the_script_before_anything_runs(session):
    with pytest.raises(MLSQLError, match="does not fit in range"):
        session.execute("select 1 as a as first;\nselect 128Y as b as second;")
    assert "first" not in session.catalog


def test_a_udf_result_whose_type_only_duckdb_knows_is_cast_as_spark_does(session):
    """A Python UDF's result has no type at translation: the SQL decides by ``typeof`` when DuckDB
    binds it, and text still takes Spark's reading (``' 1.7'`` is 1 as an int, not DuckDB's 2)."""
    session.execute("""register ScriptUDF.`` as f where lang="python" and dataType="string" and code='''def apply(self, x):
    return " " + str(x) + ".7"''';""")
    session.execute("select cast(f(id) as int) as n, f(id) = 1 as one, f(id) = 2 as two from range(1, 3) as t;")
    assert session.table("t").to_pylist() == [{"n": 1, "one": True, "two": False}, {"n": 2, "one": False, "two": True}]


SSB = (  # the columns SSB's query 13 reads (shared/ssb: byzer-lang's Star Schema Benchmark), as DuckDB types them
    ("lineorder", (("LO_ORDERDATE", "DATE"), ("LO_CUSTKEY", "INTEGER"), ("LO_SUPPKEY", "INTEGER"), ("LO_PARTKEY", "INTEGER"),
                   ("LO_REVENUE", "BIGINT"), ("LO_SUPPLYCOST", "BIGINT"))),
    ("dates", (("D_DATEKEY", "DATE"), ("D_YEAR", "INTEGER"))),
    ("customer", (("C_CUSTKEY", "INTEGER"), ("C_REGION", "VARCHAR"))),
    ("supplier", (("S_SUPPKEY", "INTEGER"), ("S_NATION", "VARCHAR"), ("S_CITY", "VARCHAR"))),
    ("part", (("P_PARTKEY", "INTEGER"), ("P_CATEGORY", "VARCHAR"), ("P_BRAND", "VARCHAR"))),
)


def test_the_ssb_selects_stay_plain_and_need_no_bind_for_their_types():
    query = """select D_YEAR, S_CITY, P_BRAND, sum(LO_REVENUE) - sum(LO_SUPPLYCOST) as PROFIT
    from lineorder
    left join dates on LO_ORDERDATE = D_DATEKEY
    left join customer on LO_CUSTKEY = C_CUSTKEY
    left join supplier on LO_SUPPKEY = S_SUPPKEY
    left join part on LO_PARTKEY = P_PARTKEY
    where C_REGION = 'AMERICA'and S_NATION = 'UNITED STATES'
    and (D_YEAR = 1997 or D_YEAR = 1998)
    and P_CATEGORY = 'MFGR#14'
    group by D_YEAR, S_CITY, P_BRAND
    order by D_YEAR, S_CITY, P_BRAND"""
    translation = translate(query, schemas=SSB)
    assert "CASE" not in translation.sql.upper() and "TYPEOF" not in translation.sql.upper()
    assert "(D_YEAR = 1997 OR D_YEAR = 1998)" in translation.sql and "P_CATEGORY = 'MFGR#14'" in translation.sql
    assert not translation.bound_types


def test_a_select_that_asks_no_column_type_is_translated_once(session):
    """The parser's translation serves the run when no rewrite asked a type only the schemas know
    (``Translation.wants_schemas``); one that asks one is translated again with them."""
    session.execute("select 1 as a, 'x' as s as once_base;")
    plain, typed = "select *, 7 as k from once_base", "select a + 1 as b from once_base"
    assert not translate(plain).wants_schemas and translate(typed).wants_schemas
    schemas_asked = []
    original = session.catalog.schemas
    session.catalog.schemas = lambda names: schemas_asked.append(names) or original(names)
    try:
        session.execute(f"{plain} as once_plain;\n{typed} as once_typed;")
    finally:
        del session.catalog.schemas
    assert schemas_asked == [("once_base",)]  # the typed select's only
    assert session.table("once_typed").schema.field("b").type == pa.int32()
    assert session.table("once_plain").column("k").to_pylist() == [7]

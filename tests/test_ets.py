"""ETs (``run|train T as NAME.`` where ... as OUT;``) with the examples and numbers of Byzer's
docs (``ml/eda/``, ``ml/feature/rate_sample.md``, ``extension/et/``) and, where the docs show no
numbers, those of Byzer's own unit tests (byzer-extension's ``SQLDataSummaryV2Test``,
``SQLPatternSummaryTest``)."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal

import pyarrow as pa
import pytest

from mlsql_ray import MLSQLError, Session
from mlsql_ray.engine.ets.base import PARENT_CHILD_DATA, PEOPLE_DATA
from mlsql_ray.engine.ets.distributions import alternative_pattern
from mlsql_ray.spark.java_numbers import java_double, rounded

Q = "'''"


def run(session: Session, text: str):
    return session.execute(text.replace("QQQ", Q))


def rows(session: Session, table: str) -> list[dict]:
    return session.table(table).to_pylist()


PEOPLE = PEOPLE_DATA  # the rows of the EDA pages (ml/eda/)
TREE = PARENT_CHILD_DATA  # the id/parentId rows of the TreeBuildExt page

# -- DataSummary ------------------------------------------------------------------------------

ALL_METRICS = ("columnName,ordinalPosition,%25,%75,blankValueRatio,dataLength,dataType,max,maximumLength,mean,median,"
               "min,minimumLength,nonNullCount,nullValueRatio,skewness,standardDeviation,standardError,"
               "uniqueValueRatio,categoryCount,primaryKeyCandidate,mode")

# byzer-extension SQLDataSummaryV2Test, second dataset: Byzer's own expected rows
BYZER_SUMMARY = """\
name,1,,,,0.1667,5,string,elena,5,,AA,0,5,0.0,,,,1.0,5,1,
favoriteNumber,2,14.25,57.0,57.0,0.0,4,integer,57.0,,37.83,-1.0,,6,0.0,-0.71,29.69,12.12,0.5,0,0,57.0
age,3,23.25,35.0,47.5,0.0,4,integer,57.0,,34.67,10.0,,6,0.0,-0.11,17.77,7.26,1.0,0,1,
mock_col1,4,112.5,125.0,145.0,0.0,8,long,160.0,,128.33,100.0,,6,0.0,0.22,23.17,9.46,1.0,0,1,
income,5,,,,0.1667,6,string,533000.0,6,,432000.0,0,5,0.0,,,,0.8,4,0,433000.0
date,6,,,,0.0,8,timestamp,2021-03-08 18:00:00,,,2021-03-08 18:00:00,,6,0.0,,,,0.1667,1,0,2021-03-08 18:00:00
mock_col2,7,117.5,125.0,135.0,0.0,4,float,150.0,,127.5,110.0,,4,0.3333,0.43,17.08,8.54,1.0,0,1,
alived,8,,,,0.0,1,boolean,true,,,false,,6,0.0,,,,0.3333,2,0,true
extra,9,,,,0.0,,void,,,,,,0,1.0,,,,0.0,0,0,
extra1,10,,,,0.0,,void,,,,,,0,1.0,,,,0.0,0,0,
extra2,11,2.0,2.0,2.0,0.0,16,decimal(38,18),12.0,,3.67,2.0,,6,0.0,1.79,4.08,1.67,0.3333,0,0,2.0
extra3,12,1.34,2.11,3.09,0.0,8,double,3.38,,2.2,1.12,,6,0.0,0.15,1.01,0.41,0.6667,0,0,""".splitlines()


def byzer_summary_table() -> pa.Table:
    at = dt.datetime(2021, 3, 8, 18, 0)
    nan = float("nan")
    return pa.table({
        "name": ["elena", "abe", "AA", "cc", "", "bb"],
        "favoriteNumber": pa.array([57, 57, 57, 0, -1, 57], pa.int32()),
        "age": pa.array([57, 50, 10, 40, 30, 21], pa.int32()),
        "mock_col1": pa.array([110, 120, 130, 100, 150, 160], pa.int64()),
        "income": ["433000", "433000", "432000", "", "434000", "533000"],
        "date": pa.array([at] * 6, pa.timestamp("us")),
        "mock_col2": pa.array([110, 120, 130, nan, 150, nan], pa.float32()),
        "alived": [True] * 5 + [False],
        "extra": pa.nulls(6), "extra1": pa.nulls(6),
        "extra2": pa.array([Decimal(12)] + [Decimal(2)] * 5, pa.decimal128(38, 18)),
        "extra3": [1.123, 1.123, 2.224, 2.0, 3.375, 3.375],
    })


def test_data_summary_gives_byzers_own_expected_numbers(session):
    session.catalog.add_arrow("t", byzer_summary_table(), "test")
    run(session, f"run t as DataSummary.`` where metrics='{ALL_METRICS}' as summary;")
    table = session.table("summary")
    assert table.column_names == ["columnName", "ordinalPosition", "%25", "median", "%75", "blankValueRatio",
                                  "dataLength", "dataType", "max", "maximumLength", "mean", "min", "minimumLength",
                                  "nonNullCount", "nullValueRatio", "skewness", "standardDeviation", "standardError",
                                  "uniqueValueRatio", "categoryCount", "primaryKeyCandidate", "mode"]
    assert all(f.type == pa.string() for f in table.schema)
    assert [",".join(r.values()) for r in table.to_pylist()] == BYZER_SUMMARY


# byzer-extension's current SQLDataSummaryV2Test: its first dataset and one of nulls, with totalCount
CURRENT_METRICS = ALL_METRICS.replace("skewness,", "skewness,totalCount,")
CURRENT_SUMMARY = """\
name,1,,,,0.1667,5,string,elena,5,,AA,0,5,0.0,,6,,,1.0,5,1,
age,2,23.25,35.0,47.5,0.0,4,integer,57.0,,34.67,10.0,,6,0.0,-0.11,6,17.77,7.26,1.0,0,1,
income,3,,,,0.0,6,string,533000.0,6,,432000.0,6,6,0.0,,6,,,0.6667,4,0,433000.0
date,4,,,,0.0,8,timestamp,2021-03-08 18:00:00,,,2021-03-08 18:00:00,,6,0.0,,6,,,0.1667,1,0,2021-03-08 18:00:00
col1,1,,,,0.0,,void,,,,,,0,1.0,,2,,,0.0,0,0,
col2,2,,,,0.0,,void,,,,,,0,1.0,,2,,,0.0,0,0,""".splitlines()


def test_data_summary_gives_byzers_current_rows_with_total_count(session):
    at = dt.datetime(2021, 3, 8, 18, 0)
    session.catalog.add_arrow("t1", pa.table({
        "name": ["elena", "abe", "AA", "cc", "", "bb"], "age": pa.array([57, 50, 10, 40, 30, 21], pa.int32()),
        "income": ["433000", "433000", "432000", "433000", "434000", "533000"],
        "date": pa.array([at] * 6, pa.timestamp("us"))}), "test")
    session.catalog.add_arrow("t3", pa.table({"col1": pa.nulls(2), "col2": pa.nulls(2)}), "test")
    run(session, f"run t1 as DataSummary.`` where metrics='{CURRENT_METRICS}' as s1;\n"
                 f"run t3 as DataSummary.`` where metrics='{CURRENT_METRICS}' as s3;")
    assert session.table("s1").column_names[15:18] == ["skewness", "totalCount", "standardDeviation"]
    assert [",".join(r.values()) for name in ("s1", "s3") for r in rows(session, name)] == CURRENT_SUMMARY


def test_data_summary_defaults_and_the_docs_metric_spelling(session):
    run(session, PEOPLE + "select age, income from table1 as table2;\n"
                 "run table2 as DataSummary.`` as summaryTable;")
    assert session.table("summaryTable").column_names == [
        "columnName", "ordinalPosition", "median", "blankValueRatio", "dataLength", "dataType", "max", "maximumLength",
        "mean", "min", "minimumLength", "nonNullCount", "nullValueRatio", "totalCount", "standardDeviation",
        "standardError", "uniqueValueRatio", "primaryKeyCandidate", "mode"]
    assert {r["totalCount"] for r in rows(session, "summaryTable")} == {"6"}
    # the doc's own call: `as OUT where ...`, spaces after commas, datatype and 75% spelt its way
    run(session, "run table2 as DataSummary.`` as summaryTable\n"
                 "where metrics='mean, datatype, mode, median, 75%' and roundAt='1' and approxSwitch=\"false\";")
    assert rows(session, "summaryTable") == [
        {"columnName": "age", "ordinalPosition": "1", "median": "44.0", "%75": "57.0", "dataType": "long",
         "mean": "43.3", "mode": "57.0"},
        {"columnName": "income", "ordinalPosition": "2", "median": "163500.0", "%75": "284500.0", "dataType": "long",
         "mean": "182866.7", "mode": ""},
    ]


def test_data_summary_prints_structs_arrays_and_timestamps_as_spark_casts_them(session):
    """Byzer's SQLDataSummaryV2 prints ``max(c).cast(StringType)`` (and ``min``) and groups the mode by
    ``c.cast(StringType)``: Spark's text of a struct is its values (``{2, b}``), of an array ``[3]``, of
    a timestamp its wall time in the session time zone without an offset (issue 43)."""
    run(session, 'set spark.sql.session.timeZone = "Asia/Shanghai" where type="conf";\n'
                 "select * from values (named_struct('x', 1, 'y', 'a'), array(1, 2), timestamp '2021-03-08 10:00:00Z'), "
                 "(named_struct('x', 2, 'y', 'b'), array(3), timestamp '2021-03-08 11:00:00Z'), "
                 "(named_struct('x', 2, 'y', 'b'), array(3), timestamp '2021-03-08 11:00:00Z') as v(st, arr, ts) as t;\n"
                 "run t as DataSummary.`` where metrics='max,min,mode' as s;")
    assert rows(session, "s") == [
        {"columnName": "st", "ordinalPosition": "1", "max": "{2, b}", "min": "{1, a}", "mode": "{2, b}"},
        {"columnName": "arr", "ordinalPosition": "2", "max": "[3]", "min": "[1, 2]", "mode": "[3]"},
        {"columnName": "ts", "ordinalPosition": "3", "max": "2021-03-08 19:00:00", "min": "2021-03-08 18:00:00",
         "mode": "2021-03-08 19:00:00"},
    ]


def test_data_summary_refuses_an_unknown_metric_and_an_unknown_option(session):
    run(session, PEOPLE)
    with pytest.raises(MLSQLError, match="unknown metric 'avg'"):
        run(session, "run table1 as DataSummary.`` where metrics='mean,avg' as s;")
    with pytest.raises(MLSQLError) as info:  # an error with strictOptions, else a warning (issue 43)
        run(session, 'set strictOptions="true";\nrun table1 as DataSummary.`` where roundTo="4" as s;')
    assert info.value.message == ("DataSummary has no option 'roundTo' (did you mean 'roundAt'?); it knows: metrics, "
                                  "roundAt, rountAt, approxSwitch, approxThreshold, relativeError, approxCountDistinct, "
                                  "threshold")
    assert "s" not in session.catalog.names()


def test_spark_number_printing():
    assert [java_double(x) for x in (57.0, 1.5552231521e10, 1e-5, 0.001, 1234567.0, 1e7, -0.5)] == [
        "57.0", "1.5552231521E10", "1.0E-5", "0.001", "1234567.0", "1.0E7", "-0.5"]
    assert [rounded(v, 2) for v in ("2.675", "433000", "elena", "1.0E10", "")] == ["2.68", "433000.0", "elena",
                                                                                   "1.0E10", ""]


# -- DescriptiveMetrics, PatternDistribution -------------------------------------------------


def test_descriptive_metrics_as_the_doc_shows(session):
    run(session, "select * from values (18, '上海'), " + ", ".join(["(21, '广州')"] * 7) +
        " as t(age, address) as table1;\n"
        "run table1 as DescriptiveMetrics.`` as descriptiveMetrics where metricSize='1000';")
    assert rows(session, "descriptiveMetrics") == [
        {"columnName": "age", "descriptiveMetrics": '[{"18":1},{"21":7}]'},
        {"columnName": "address", "descriptiveMetrics": '[{"上海":1},{"广州":7}]'},
    ]
    run(session, "run table1 as DescriptiveMetrics.`` where metricSize='1' as top;")
    assert rows(session, "top")[0]["descriptiveMetrics"] == '[{"21":7}]'
    with pytest.raises(MLSQLError, match="`metricSize` is not allowed to be less than 1"):
        run(session, "run table1 as DescriptiveMetrics.`` where metricSize='0' as top;")


def pattern_json(groups: list[tuple[int, float, str, str]], total: int) -> str:
    items = ",".join(f'{{"count":{n},"ratio":{r},"pattern":"{p}","alternativePattern":"{a}"}}' for n, r, p, a in groups)
    return json.dumps({"colPatternDistribution": f"[{items}]", "totalCount": str(total), "limit": "100"},
                      ensure_ascii=False, separators=(",", ":"))


def test_pattern_distribution_gives_byzers_own_expected_json(session):
    # SQLPatternSummaryTest's second dataset (its embarked column) and the first one's income
    run(session, """
select * from values (1, 'kkk', '433000'), (2, null, '433000'), (3, 'cc', '432000'), (4, null, ''), (5, 'gg', '434000'),
  (7, '', '533000'), (8, 'bdbds', '220'), (9, '', '220'), (6, 'bvd', '220') as t(id, embarked, income) as table2;
run table2 as PatternDistribution.`` as pd_table;
""")
    assert rows(session, "pd_table") == [
        {"columnName": "embarked", "patternDistribution": pattern_json(
            [(2, 0.4, "aa", "a(2)"), (2, 0.4, "aaa", "a(3)"), (1, 0.2, "aaaaa", "a(5)")], 3)},
        {"columnName": "income", "patternDistribution": pattern_json(
            [(5, 0.625, "999999", "9(6)"), (3, 0.375, "999", "9(3)")], 2)},
    ]


def test_pattern_of_letters_digits_symbols_and_chinese(session):
    run(session, "select 'Abc.中文字符#123.01/abc中文' as s union all select 'elenA我的' as s as t;\n"
                 "run t as PatternDistribution.`` where limit=\"1\" and patternLimit=\"4\" as p;")
    distribution = json.loads(rows(session, "p")[0]["patternDistribution"])
    assert distribution["totalCount"] == "2" and distribution["limit"] == "1"
    assert json.loads(distribution["colPatternDistribution"]) == [
        {"count": 1, "ratio": 0.5, "pattern": "Aaa.", "alternativePattern": "Aa(2).A(4)#9(3).9(2)/a(3)A(2)"}]
    assert alternative_pattern("AAAAAA,A,AA") == "A(6),A,A(2)"
    assert alternative_pattern("aaaaAAA") == "a(4)A(3)"
    run(session, "select cast(null as string) as s as empty;")
    with pytest.raises(MLSQLError, match="contains content except null or empty content"):
        run(session, "run empty as PatternDistribution.`` as p;")


# -- UniqueIdentifier, DataTranspose ----------------------------------------------------------


def test_unique_identifier_as_the_doc_shows(session):
    run(session, "select * from values (1, 'aaa', 'bbb'), (2, 'aaa', 'bbb'), (3, 'aaa', 'bbb'), (1, 'aaa', 'bbb'), "
                 "(2, 'aaa', 'bbb'), (3, 'aaa', 'bbb') as t(havana_id, a, b) as table2;\n"
                 "run table2 as UniqueIdentifier.`` as uniqueIdentifier;")
    table = session.table("uniqueIdentifier")
    assert table.column_names == ["Unique_ID", "havana_id", "a", "b"]
    assert table.schema.field("Unique_ID").type == pa.int64()
    assert table.column("Unique_ID").to_pylist() == [1, 2, 3, 4, 5, 6]
    assert table.column("havana_id").to_pylist() == [1, 2, 3, 1, 2, 3]
    run(session, PEOPLE + 'select age, income from table1 as table2;\n'
                 'run table2 as UniqueIdentifier.`` where source="replace" and columnName="income" as u;')
    assert rows(session, "u") == [{"age": a, "income": i} for a, i in zip([57, 67, 57, 25, 31, 23], range(1, 7))]
    with pytest.raises(MLSQLError, match="`age` already exists"):
        run(session, 'run table2 as UniqueIdentifier.`` where columnName="age" as u;')
    run(session, 'run table2 as UniqueIdentifier.`` where source="new" and columnName="income1" and mode="inferSchema" '
                 'and inputSchema=QQQ{"age":"bigint", "income":"bigint"}QQQ as s;')
    assert rows(session, "s") == [{"col_name": "income1", "data_type": "bigint"}, {"col_name": "age", "data_type": "bigint"},
                                  {"col_name": "income", "data_type": "bigint"}]


SCORES = """
set jsonStr=QQQ
{"subject":"数学","name":"张三","score":88},
{"subject":"语文","name":"张三","score":92}
{"subject":"英语","name":"张三","score":77}
{"subject":"数学","name":"王五","score":65}
{"subject":"语文","name":"王五","score":87}
{"subject":"英语","name":"王五","score":90}
QQQ;
load jsonStr.`jsonStr` as data;
run data as DataTranspose.`` where method='pivot' and indexCols='name' and inputCol='subject' and aggCol='score' as data1;
run data1 as DataTranspose.`` where method='unpivot' and indexCols='name' and mergedCol='sbject'
  and unPivotCols='数学,英语,语文' and aggCol='score' as res;
"""


def test_data_transpose_pivots_and_back_as_byzers_example(session):
    run(session, SCORES)
    pivoted = session.table("data1")
    assert pivoted.column_names == ["name", "数学", "英语", "语文"]
    assert pivoted.schema.field("数学").type == pa.int64()
    # Spark's order: 王五 hashes to shuffle partition 8, 张三 to 165 (test_data_transpose_rows_in_sparks_order)
    assert pivoted.to_pylist() == [{"name": "王五", "数学": 65, "英语": 90, "语文": 87},
                                   {"name": "张三", "数学": 88, "英语": 77, "语文": 92}]
    assert rows(session, "res") == [
        {"name": "王五", "sbject": "数学", "score": 65}, {"name": "王五", "sbject": "英语", "score": 90},
        {"name": "王五", "sbject": "语文", "score": 87}, {"name": "张三", "sbject": "数学", "score": 88},
        {"name": "张三", "sbject": "英语", "score": 77}, {"name": "张三", "sbject": "语文", "score": 92}]


def test_data_transpose_rows_in_sparks_order(session):
    """Byzer's pivot is Spark's groupBy(name).pivot(subject).sum(score): its rows come out by the
    shuffle partition of their key, pmod(hash(name), 200) (Spark's default 200 partitions, which
    Byzer keeps), not sorted and not in input order; an unpivot keeps its input's order, each row's
    columns in unPivotCols order (Spark's stack)."""
    names = ["张三", "王五", "李雷", "宫九"]  # Byzer's DataTranspose code example, in its order
    run(session, "set jsonStr=QQQ\n" + "\n".join(
        f'{{"subject":"{s}","name":"{n}","score":{10 * i + j}}}' for i, n in enumerate(names)
        for j, s in enumerate(["数学", "语文", "英语"])) + "\nQQQ;\nload jsonStr.`jsonStr` as data;\n"
        "run data as DataTranspose.`` where method='pivot' and indexCols='name' and inputCol='subject' "
        "and aggCol='score' as data1;\n"
        "run data1 as DataTranspose.`` where method='unpivot' and indexCols='name' and mergedCol='sbject' "
        "and unPivotCols='语文,数学' and aggCol='score' as res;\n"
        "select name, pmod(hash(name), 200) as part from data1 as parts;")
    # the partitions of Spark's Murmur3 hash (seed 42) of the names' UTF-8 bytes
    assert rows(session, "parts") == [{"name": "王五", "part": 8}, {"name": "李雷", "part": 58},
                                      {"name": "宫九", "part": 139}, {"name": "张三", "part": 165}]
    assert [(r["name"], r["数学"]) for r in rows(session, "data1")] == [("王五", 10), ("李雷", 20), ("宫九", 30),
                                                                      ("张三", 0)]
    assert [(r["name"], r["sbject"], r["score"]) for r in rows(session, "res")][:4] == [
        ("王五", "语文", 11), ("王五", "数学", 10), ("李雷", "语文", 21), ("李雷", "数学", 20)]


# -- extension/et: JsonExpandExt, SyntaxAnalyzeExt, TreeBuildExt, TableRepartition, CacheExt ----


def test_json_expand_as_the_doc_shows(session):
    run(session, """
SELECT '{"name":"Michael"}' AS col_1
UNION ALL
SELECT '{"name":"Andy", "age":30}' AS col_1 AS table_1;
run table_1 as JsonExpandExt.`` where inputCol="col_1" AND samplingRatio = "1.0" as table_2;
""")
    assert rows(session, "table_2") == [{"age": None, "name": "Michael"}, {"age": "30", "name": "Andy"}]
    run(session, """
SELECT '{"name":"Michael", "address":{"city":"hangzhou", "district":"xihu"} } ' AS col_1 AS table_1;
run table_1 as JsonExpandExt.`` where inputCol="col_1" AND samplingRatio = "1.0" as table_2;
run table_2 AS JsonExpandExt.`` WHERE inputCol="address" AS table_3;
""")
    assert rows(session, "table_3") == [{"name": "Michael", "city": "hangzhou", "district": "xihu"}]
    run(session, """SELECT '{"key","value"}' AS col1 AS bad;""")
    with pytest.raises(MLSQLError, match="Corrupted JSON in column col1"):
        run(session, 'run bad as JsonExpandExt.`` where inputCol="col1" as out;')


def test_json_expand_gives_a_missing_key_nulls_and_blank_rows_no_keys(session):
    """A key some rows lack (``extra``) is a column, null where it is missing, and expanding it again
    leaves those rows null; a row whose text is blank or JSON's null is no record to Spark's schema
    inference, and json_tuple gives it nulls: not corrupted JSON."""
    run(session, """
SELECT 1 AS id, '{"name":"Michael", "extra":{"city":"hangzhou"}}' AS col_1
UNION ALL SELECT 2 AS id, '{"name":"Andy"}' AS col_1
UNION ALL SELECT 3 AS id, '' AS col_1
UNION ALL SELECT 4 AS id, 'null' AS col_1
UNION ALL SELECT 5 AS id, '  ' AS col_1 AS table_1;
run table_1 as JsonExpandExt.`` where inputCol="col_1" as table_2;
run table_2 as JsonExpandExt.`` where inputCol="extra" as table_3;
""")
    assert rows(session, "table_2") == [
        {"id": 1, "extra": '{"city":"hangzhou"}', "name": "Michael"}, {"id": 2, "extra": None, "name": "Andy"},
        *({"id": i, "extra": None, "name": None} for i in (3, 4, 5))]
    assert [(r["id"], r["city"]) for r in rows(session, "table_3")] == [(1, "hangzhou"), (2, None), (3, None), (4, None),
                                                                       (5, None)]
    run(session, "SELECT 1 AS id, '' AS col_1 AS blank;")
    with pytest.raises(MLSQLError, match="column col_1 of blank holds no JSON object with a key to expand"):
        run(session, 'run blank as JsonExpandExt.`` where inputCol="col_1" as out;')


def test_syntax_analyze_extracts_the_tables_a_query_reads(session):
    run(session, """
 select "stub" as table1;
 select "stub" as table2;
 run command as SyntaxAnalyzeExt.`` where
 action = "extractTables" and sql=QQQ
 select * from (select * from table1 as c) as d left join table2 as e on d.id=e.id
 QQQ as extractedTables;
 select * from extractedTables as output;
""")
    assert rows(session, "output") == [{"tableName": "table1"}, {"tableName": "table2"}]
    run(session, """
set test_sql = QQQselect * from table1 as outputQQQ;
run command as SyntaxAnalyzeExt.`` where action = "extractTables" and sql="${test_sql}" as extractedTables;
run command as SyntaxAnalyzeExt.`` where sql=QQQwith x as (select a from t1) select x.a, y.b from x join db.t2 y on x.a = y.a QQQ
  and action="extractColumns" as columns;
""")
    assert rows(session, "extractedTables") == [{"tableName": "table1"}]
    assert sorted(tuple(r.values()) for r in rows(session, "columns")) == [("", "a"), ("db.t2", "a"), ("db.t2", "b"),
                                                                          ("t1", "a")]


def test_tree_build_per_node_and_per_tree(session):
    run(session, TREE + 'run data as TreeBuildExt.`` where idCol="id" and parentIdCol="parentId" '
                        'and treeType="nodeTreePerRow" as result;')
    table = session.table("result")
    assert table.schema == pa.schema([("id", pa.string()), ("level", pa.int32()), ("children", pa.list_(pa.string()))])
    # the doc's table (Spark shows rows and children in hash order)
    assert sorted((r["id"], r["level"], sorted(r["children"])) for r in table.to_pylist()) == sorted([
        ("200", 0, []), ("0", 1, ["7"]), ("1", 2, sorted(["200", "2", "201", "199"])), ("7", 0, []), ("201", 0, []),
        ("199", 1, ["200", "201"]), ("2", 0, [])])
    run(session, 'run data as TreeBuildExt.`` where idCol="id" and parentIdCol="parentId" and treeType="treePerRow" as trees;')
    trees = session.table("trees")
    assert trees.column_names == ["children", "id", "parentID", "level"]
    assert trees.to_pylist() == [
        {"children": [{"children": [], "id": 7, "parentID": 0}], "id": 0, "parentID": None, "level": 1},
        {"children": [{"children": [], "id": 2, "parentID": 1},
                      {"children": [{"children": [], "id": 200, "parentID": 199}, {"children": [], "id": 201, "parentID": 199}],
                       "id": 199, "parentID": 1}], "id": 1, "parentID": None, "level": 2}]


def test_tree_build_marks_a_cycle_with_the_break_level(session):
    run(session, "select * from values (1, 2), (2, 1), (3, null) as t(id, p) as loop;\n"
                 'run loop as TreeBuildExt.`` where idCol="id" and parentIdCol="p" and treeType="nodeTreePerRow" '
                 'and recurringDependencyBreakTimes="5" as result;')
    assert rows(session, "result") == [{"id": "1", "level": 5, "children": []}, {"id": "2", "level": 5, "children": []},
                                       {"id": "3", "level": 0, "children": []}]


PARTITION_STATS = """QQQselect spark_partition_id() as partition, min(id) as min_id, max(id) as max_id,
count(id) as count from simpleData group by partition order by partition QQQ"""


def partition_stats(session) -> list[tuple]:
    return [tuple(r.values()) for r in run(session, f"!profiler sql {PARTITION_STATS};")[-1].table.to_pylist()]


def test_table_repartition_by_range_gives_the_docs_partitions(session):
    run(session, TREE + 'run data as TableRepartition.`` where partitionNum="3" and partitionType="range" '
                        'and partitionCols="id" as simpleData;')
    assert session.catalog.partitions("simpleData") == (3, 3, 2)
    assert partition_stats(session) == [(0, 0, 2, 3), (1, 3, 199, 3), (2, 200, 201, 2)]  # the doc's table
    run(session, "run data as TableRepartition.`` where partitionNum=2 \nas newdata;")
    assert session.catalog.partitions("newdata") == (4, 4)
    run(session, "!tableRepartition _ -i data -num 3 -o newcc;")  # the command runs the ET
    assert session.catalog.partitions("newcc") == (3, 3, 2)
    with pytest.raises(MLSQLError, match="needs partitionNum"):
        run(session, "run data as TableRepartition.`` as x;")
    with pytest.raises(MLSQLError, match="partitionCols"):
        run(session, 'run data as TableRepartition.`` where partitionNum="2" and partitionType="range" as x;')


def test_table_repartition_deals_rows_evenly_and_hashes_keys_into_one_partition(session):
    run(session, "select id, id % 3 as k from range(10) as t(id) as ten;")
    run(session, 'run ten as TableRepartition.`` where partitionNum="4" as simpleData;')
    assert partition_stats(session) == [(0, 0, 2, 3), (1, 3, 5, 3), (2, 6, 7, 2), (3, 8, 9, 2)]
    run(session, 'run ten as TableRepartition.`` where partitionNum="12" as wide;')
    assert session.catalog.partitions("wide") == (1,) * 10 + (0, 0)  # Spark too leaves partitions empty
    run(session, 'run ten as TableRepartition.`` where partitionNum="2" and partitionType="hash" and partitionCols="k" as hashed;')
    by_partition = run(session, "!profiler sql QQQselect spark_partition_id() as p, collect_set(k) as keys, count(*) as n "
                                "from hashed group by p order by p QQQ;")[-1].table.to_pylist()
    keys = [set(r["keys"]) for r in by_partition]
    assert sum(r["n"] for r in by_partition) == 10 and set().union(*keys) == {0, 1, 2}
    assert all(not (a & b) for i, a in enumerate(keys) for b in keys[i + 1:])  # a key lives in one partition
    assert sum(session.catalog.partitions("hashed")) == 10 and len(session.catalog.partitions("hashed")) == 2


def test_spark_partition_id_reads_the_from_table_and_stars_leave_it_out(session):
    run(session, TREE + 'run data as TableRepartition.`` where partitionNum="2" as parted;')
    run(session, "select *, spark_partition_id() as p from parted as seen;")
    assert session.table("seen").column_names == ["id", "parentId", "p"]
    assert session.table("seen").column("p").to_pylist() == [0, 0, 0, 0, 1, 1, 1, 1]
    run(session, "select x.*, d.id as other, spark_partition_id() as p from parted x join data d on x.id = d.id as joined;")
    assert session.table("joined").column_names == ["id", "parentId", "other", "p"]
    run(session, "select spark_partition_id() as p from data as whole;")  # a table read whole: one partition
    assert set(session.table("whole").column("p").to_pylist()) == {0}
    with pytest.raises(MLSQLError, match="takes no arguments"):
        run(session, "select spark_partition_id(id) as p from parted as bad;")


def test_table_repartition_partitions_are_the_python_cells_data_servers(ray_session):
    """The partitions reach a Python cell as its data servers, one per partition, in order."""
    run(ray_session, TREE + 'run data as TableRepartition.`` where partitionNum="3" as parted;\n'
                           "!tableRepartition _ -i data -num 4 -o four;")
    for table, sizes in (("parted", [3, 3, 2]), ("four", [2, 2, 2, 2])):
        run(ray_session, f"""--%python
--%input={table}
--%output=servers
from pyjava.api.mlsql import RayContext
rc = RayContext.connect(globals(), None)
rc.build_result([{{"index": s.index, "num_rows": s.num_rows}} for s in rc.data_servers()])
""")
        assert rows(ray_session, "servers") == [{"index": i, "num_rows": n} for i, n in enumerate(sizes)]


def test_every_example_of_the_et_registry_runs_and_model_example_shows_it(session, tmp_path, monkeypatch):
    """``load modelExample.`NAME` as t;``: Byzer's rows name/value; the example is the registry's
    and runs as written, in a fresh session."""
    from mlsql_ray.engine import ets

    monkeypatch.chdir(tmp_path)
    assert [et.name for et in ets.ETS.values() if not et.example] == []  # every ET comes with one
    for et in ets.ETS.values():
        with Session(warehouse=tmp_path / et.name) as fresh:
            assert fresh.execute(et.example), et.name
    run(session, "load modelExample.`TableRepartition` as ex;")
    assert dict((r["name"], r["value"]) for r in rows(session, "ex")) == {
        "name": "TableRepartition", "codeExample": ets.find("TableRepartition").example, "codeType": "sql",
        "doc": ets.find("TableRepartition").description, "docType": "text"}
    with pytest.raises(MLSQLError, match="no ET or algorithm of that name"):
        run(session, "load modelExample.`NoSuchExt` as ex;")


def test_cache_ext_caches_and_releases(session, tmp_path):
    (tmp_path / "a.csv").write_text("a\n1\n")
    run(session, f"load csv.`{tmp_path / 'a.csv'}` where header=\"true\" as table1;")
    run(session, 'run table1 as CacheExt.`` where execute="cache" and lifeTime="session";')
    assert [r["kind"] for r in session.catalog.listing().to_pylist() if r["name"] == "table1"] == ["cached"]
    run(session, 'run table1 as CacheExt.`` where execute="uncache";')
    assert [r["kind"] for r in session.catalog.listing().to_pylist() if r["name"] == "table1"] == ["lazy"]
    with pytest.raises(MLSQLError, match="lifeTime must be"):
        run(session, 'run table1 as CacheExt.`` where lifeTime="forever";')


def test_empty_tables(session):
    run(session, "run command as EmptyTable.`` as e;\n"
                 'run command as EmptyTableWithSchema.`` where schema="st(field(a,string),field(b,long))" as s;')
    assert session.table("e").num_columns == 0 and session.table("e").num_rows == 0
    assert session.table("s").schema == pa.schema([("a", pa.string()), ("b", pa.int64())])
    assert session.table("s").num_rows == 0


# -- ml/feature/rate_sample.md, SampleDatasetExt --------------------------------------------

LABELS = """
set jsonStr=QQQ
{"features":[5.1,3.5,1.4,0.2],"label":0.0},
{"features":[5.1,3.5,1.4,0.2],"label":1.0}
{"features":[5.1,3.5,1.4,0.2],"label":0.0}
{"features":[4.4,2.9,1.4,0.2],"label":0.0}
{"features":[5.1,3.5,1.4,0.2],"label":1.0}
{"features":[5.1,3.5,1.4,0.2],"label":0.0}
{"features":[5.1,3.5,1.4,0.2],"label":0.0}
{"features":[4.7,3.2,1.3,0.2],"label":1.0}
{"features":[5.1,3.5,1.4,0.2],"label":0.0}
{"features":[5.1,3.5,1.4,0.2],"label":0.0}
QQQ;
load jsonStr.`jsonStr` as data;
"""


def test_rate_sampler_marks_every_row_with_train_as_the_doc_runs_it(session):
    run(session, LABELS + 'train data as RateSampler.`/tmp/model` \nwhere labelCol="label"\nand sampleRate="0.7,0.3" '
                          'as marked_dataset;\nselect * from marked_dataset where __split__=0 as trainingTable;')
    marked = session.table("marked_dataset")
    assert marked.column_names == ["features", "label", "__split__"]
    assert marked.schema.field("__split__").type == pa.int32()
    assert marked.num_rows == 10 and set(marked.column("__split__").to_pylist()) <= {0, 1}
    run(session, 'train data as RateSampler.`` where labelCol="label" and sampleRate="0.7,0.3" '
                 'and isSplitWithSubLabel="true" as exact;')
    # per label, the first floor(0.7 × count) rows in order go to 0: label 0 has 7 rows (4 → 0), label 1 has 3 (2 → 0)
    assert session.table("exact").column("__split__").to_pylist() == [0, 0, 0, 0, 0, 0, 1, 1, 1, 1]
    with pytest.raises(MLSQLError, match="Sum of sampleRates should equal to 1"):
        run(session, 'run data as RateSampler.`` where sampleRate="0.7,0.4" as x;')


def test_sample_dataset_makes_mock_data(session):
    run(session, 'run command as SampleDatasetExt.`` where columns="id,features,label" and size="50" '
                 'and featuresSize="7" and labelSize="3" as mockData;')
    table = session.table("mockData")
    assert table.schema == pa.schema([("id", pa.int64()), ("features", pa.list_(pa.float32())), ("label", pa.int32())])
    assert table.column("id").to_pylist() == list(range(50))
    assert all(len(f) == 7 and all(0 <= x < 1 for x in f) for f in table.column("features").to_pylist())
    assert set(table.column("label").to_pylist()) <= {0, 1, 2}
    with pytest.raises(MLSQLError, match="price is not supported"):
        run(session, 'run command as SampleDatasetExt.`` where columns="id,price" as m;')


# -- PredictionEva (Byzer's SQLPredictionEva) ---------------------------------------------------

SCORED = """select * from values (0.9, 1.0), (0.8, 0.0), (0.7, 1.0), (0.3, 1), (0.2, 0), (0.7, 0.0)
  as t(prob, label) as scored;"""


def test_prediction_eva_prints_byzers_metrics(session):
    """The counts at threshold 0.5: TP 2 (0.9, 0.7), FP 2 (0.8, 0.7), FN 1 (0.3). Spark's curves
    have one point per distinct score, highest first (0.7 holds a positive and a negative): ROC
    (0,0) (0,1/3) (1/3,1/3) (2/3,2/3) (2/3,1) (1,1); PR (0,1) (1/3,1) (1/3,1/2) (2/3,1/2) (1,3/5)
    (1,1/2): trapezoids 1/3 + 1/3 * (1/2 + 1/2) / 2 + 1/3 * (1/2 + 3/5) / 2."""
    from sklearn.metrics import roc_auc_score

    run(session, SCORED + "run scored as PredictionEva.`` where labelCol='label' and probCol='prob' as metrics;")
    table = session.table("metrics")
    assert table.schema == pa.schema([("metrics", pa.string()), ("value", pa.string())])
    values = {r["metrics"]: r["value"] for r in table.to_pylist()}
    assert list(values) == ["threshold", "precision", "recall", "f1", "auc", "prc"]
    assert values["threshold"] == "0.5" and values["precision"] == "0.5"
    assert values["recall"] == java_double(2 / 3) and values["f1"] == java_double(4 / 7)
    auc = roc_auc_score([1, 0, 1, 1, 0, 0], [0.9, 0.8, 0.7, 0.3, 0.2, 0.7])  # the same trapezoids, ties as one point
    assert float(values["auc"]) == pytest.approx(auc) == pytest.approx(1 / 9 + 1 / 6 + 1 / 3)
    assert float(values["prc"]) == pytest.approx(1 / 3 + 1 / 6 + (1 / 2 + 3 / 5) / 6)


def test_prediction_eva_threshold_label_value_and_mistakes(session):
    run(session, SCORED + "run scored as PredictionEva.`` where threshold='0.95' as none_positive;\n"
                 "run scored as PredictionEva.`` where labelValue='0' and threshold='0.75' as zero_positive;")
    values = {r["metrics"]: r["value"] for r in rows(session, "none_positive")}
    assert (values["threshold"], values["precision"], values["recall"], values["f1"]) == ("0.95", "NaN", "0.0", "0.0")
    # 0 is the positive label: predicted positive are 0.9 (a 1) and 0.8 (a 0)
    values = {r["metrics"]: r["value"] for r in rows(session, "zero_positive")}
    assert (values["precision"], values["recall"]) == ("0.5", java_double(1 / 3))
    run(session, "select 'x' as prob, 1 as label as words;")
    with pytest.raises(MLSQLError, match="probCol 'prob' must be numeric"):
        run(session, "run words as PredictionEva.`` as m;")
    with pytest.raises(MLSQLError, match="labelCol names 'y', which scored does not have"):
        run(session, "run scored as PredictionEva.`` where labelCol='y' as m;")
    with pytest.raises(MLSQLError, match="threshold must be a number, not 'high'"):
        run(session, "run scored as PredictionEva.`` where threshold='high' as m;")
    with pytest.raises(MLSQLError, match="scored has no rows to evaluate"):
        run(session, "select * from scored where prob > 1 as scored;\nrun scored as PredictionEva.`` as m;")


# -- the registry ----------------------------------------------------------------------------

ALL_ETS = ["TableRepartition", "CacheExt", "EmptyTable", "EmptyTableWithSchema", "JsonExpandExt", "SyntaxAnalyzeExt",
           "TreeBuildExt", "DataSummary", "DataTranspose", "DescriptiveMetrics", "PatternDistribution", "RateSampler",
           "SampleDatasetExt", "UniqueIdentifier", "ScalerInPlace", "NormalizeInPlace", "Discretizer",
           "StringIndex", "ConfusionMatrix", "VecMapInPlace", "TfIdfInPlace", "Word2VecInPlace",
           "FeatureExtractInPlace", "PredictionEva"]


def test_show_et_lists_every_et_and_its_params(session):
    run(session, "!show et;\n!lastCommand named ets;")
    assert sorted(session.table("ets").column("name").to_pylist()) == sorted(ALL_ETS)
    run(session, '!show "et/params/RateSampler";\n!lastCommand named p;')
    assert session.table("p").column("param").to_pylist() == ["labelCol", "sampleRate", "isSplitWithSubLabel"]


def test_an_unknown_et_is_the_users_error_with_its_position(session):
    with pytest.raises(MLSQLError, match="unknown ET 'NoSuchExt'") as caught:
        run(session, "select 1 as a as t;\nrun t as NoSuchExt.`` as x;")
    assert str(caught.value).startswith("2:1: unknown ET 'NoSuchExt'")

"""Issue 14, item 10: a conformance table of the Spark SQL functions byzer-doc's scripts call (and
Byzer's built-ins of transform/udf/built_in_udf/udf_funcs.md), each run through our translation on
DuckDB and compared — value and type — with what Spark gives. The expected values and types are
written from Spark's definitions (Spark 3, non-ANSI mode, as Byzer runs it) and, for Byzer's
built-ins, from their definitions in Byzer's ``streaming.udf.Functions``; types are written as Spark
prints them (``int``, ``bigint``, ``array<string>``...).

Not in the table, because they cannot run here: ``aes_encrypt``/``aes_decrypt`` (jdbc.md: Byzer's
own key, inside its JVM), ``keepChinese`` and ``sleep`` (not implemented), the ``vec_*``/``matrix_*``
functions (another part of issue 14), ``crawler_*``/``rest_request`` (network). Known gaps: a string
compared with a *decimal* literal (``s > 1.5``) fails in DuckDB, where Spark compares as doubles;
``string(binary)`` escapes quotes as ``\\x22`` (DuckDB's BLOB to VARCHAR) where Spark decodes UTF-8.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pyarrow as pa
import pytest

from mlsql_ray import Session

from conformance.harness import spark_type

# t: three rows (i int, b bigint, d double, s string with a NULL); one: a single row
TABLES = """
select cast(id as int) as i, cast(id * 10 as bigint) as b, cast(id as double) - 0.5 as d,
       case when id < 3 then concat('s', id) end as s
from range(1, 4) as t;
select 1 as a, 'x' as b as one;
"""

FLOAT32 = pa.array([1.1, 2.2, 3.3, 4.4], pa.float32()).to_pylist()  # Scala's "1.1".toFloat, widened

# (Spark SQL expression, table, expected values (all rows, sorted), Spark type, where byzer-doc uses it)
CONFORMANCE = [
    # split: grammar/branch_statement.md, outline.md, restapi.md
    ('split("jack,2", ",")[0]', "one", ["jack"], "string", "grammar/branch_statement.md"),
    ('split("jack,2", ",")[1]', "one", ["2"], "string", "grammar/branch_statement.md"),
    ('split("a1b22c3", "[0-9]+")', "one", [["a", "b", "c", ""]], "array<string>", "Spark: a regex, trailing empty kept"),
    ('split("a,b,c", ",", 2)', "one", [["a", "b,c"]], "array<string>", "Spark: limit > 0"),
    ('split("a1b22c3", "[0-9]+", 2)', "one", [["a", "b22c3"]], "array<string>", "Spark: limit keeps the separators in the rest"),
    ('split("a,b,c", ",", 1)', "one", [["a,b,c"]], "array<string>", "Spark: limit 1"),
    ('split("a,b,,", ",", 0)', "one", [["a", "b", "", ""]], "array<string>", "Spark: limit <= 0 is -1"),
    ('split("a,b", ",", 5)', "one", [["a", "b"]], "array<string>", "Spark: fewer parts than limit"),
    # concat: grammar/branch_statement.md, restapi.md
    ('concat("jack", "dj")', "one", ["jackdj"], "string", "grammar/branch_statement.md"),
    ('concat("[", array_join(array("1", "2"), ","), "]")', "one", ["[1,2]"], "string", "datasource/restapi/restapi.md"),
    # dates: grammar/set.md
    ("date_sub(CAST(current_timestamp() as DATE), 1) = date_sub(current_date(), 1)", "one", [True], "boolean", "grammar/set.md"),
    ("date_sub(CAST(CAST('2022-03-01 10:00:00' AS TIMESTAMP) as DATE), 1)", "one", [dt.date(2022, 2, 28)], "date", "grammar/set.md"),
    ("date_add('2020-12-31', 1)", "one", [dt.date(2021, 1, 1)], "date", "Spark: date_add of a string"),
    ("datediff('2020-03-01', '2020-02-01')", "one", [29], "int", "Spark: datediff is int"),
    # aggregates: grammar/select.md, restapi.md, ml/eda
    ("sum(i)", "t", [6], "bigint", "grammar/select.md (sum of int)"),
    ("sum(b)", "t", [60], "bigint", "Spark: sum of bigint"),
    ("sum(d)", "t", [4.5], "double", "Spark: sum of double"),
    ("sum(i) + 1", "t", [7], "bigint", "Spark: bigint + int"),
    ("count(*)", "t", [3], "bigint", "count"),
    ("count(s)", "t", [2], "bigint", "count skips NULL"),
    ("avg(i)", "t", [2.0], "double", "avg"),
    ("max(i)", "t", [3], "int", "max keeps the type"),
    ("min(s)", "t", ["s1"], "string", "min"),
    ("collect_list(s)", "t", [["s1", "s2"]], "array<string>", "restapi.md (NULL skipped)"),
    ('array_join(collect_list(s), ",")', "t", ["s1,s2"], "string", "datasource/restapi/restapi.md"),
    # Velocity template example of grammar/select.md: an int compared with '' is NULL in Spark
    ("SUM( case when i is null or i='' then 1 else 0 end )", "t", [0], "bigint", "grammar/select.md"),
    ("SUM( case when s is null or s='' then 1 else 0 end )", "t", [1], "bigint", "grammar/select.md"),
    ("i = ''", "t", [None, None, None], "boolean", "Spark: '' cast to int is NULL"),
    ("s = 1", "t", [None, None, None], "boolean", "Spark: 's1' cast to int is NULL"),
    ("concat('', i) = 2", "t", [False, True, False], "boolean", "Spark: a string compared with an int as an int"),
    ("i = 2", "t", [False, True, False], "boolean", "int = int unchanged"),
    # numbers: restapi.md's ceil(row_number() over (...) / 1000)
    ("ceil(row_number() over (order by i) / 2)", "t", [1, 1, 2], "bigint", "datasource/restapi/restapi.md"),
    ("row_number() over (order by i)", "t", [1, 2, 3], "int", "Spark: row_number is int"),
    ("ceil(d)", "t", [1, 2, 3], "bigint", "Spark: ceil of double is bigint"),
    ("floor(d)", "t", [0, 1, 2], "bigint", "Spark: floor of double is bigint"),
    ("ceil(2.5)", "one", [Decimal(3)], "decimal(2,0)", "Spark: ceil of decimal(2,1)"),
    ("7 div 2", "one", [3], "bigint", "Spark: div is bigint"),
    ("1 / 2", "one", [0.5], "double", "Spark: / is double"),
    ("unix_timestamp('1970-01-02 00:00:00')", "one", [86400], "bigint", "Spark: unix_timestamp is bigint (UTC session)"),
    ('size(array(1, 2, 3))', "one", [3], "int", "Spark: size is int"),
    ("instr('hello', 'l')", "one", [3], "int", "Spark: instr is int"),
    ("length('héllo')", "one", [5], "int", "Spark: length in characters, int"),
    # JSON: restapi.md, save_data/dw/delta.md
    ("get_json_object('{\"access_token\":\"abc\"}', '$.access_token')", "one", ["abc"], "string", "datasource/restapi/restapi.md"),
    ("get_json_object('{\"a\":{\"b\":1}}', '$.a')", "one", ['{"b":1}'], "string", "Spark: an object as JSON text"),
    ("replace(get_json_object('[{\"id\":\"a\"},{\"id\":\"b\"}]', '$[*].id'), \"\\\"\", \"\")", "one", ["[a,b]"], "string",
     "datasource/restapi/restapi.md"),
    ("to_json(struct(*))", "one", ['{"a":1,"b":"x"}'], "string", "save_data/dw/delta.md"),
    ("to_json(struct(a, b))", "one", ['{"a":1,"b":"x"}'], "string", "Spark: named struct fields"),
    # collections: python_udf.md, outline.md, restapi.md
    ('map("a", "b")', "one", [[("a", "b")]], "map<string,string>", "transform/udf/extend_udf/python_udf.md"),
    ('array("a", "b")', "one", [["a", "b"]], "array<string>", "grammar/outline.md"),
    ("explode(array(1, 2))", "one", [1, 2], "int", "datasource/restapi/restapi.md"),
    ("exists(array(1, 2), x -> x > 1)", "one", [True], "boolean", "Spark: exists with a lambda"),
    ("forall(array(1, 2), x -> x > 1)", "one", [False], "boolean", "Spark: forall"),
    ("transform(array(1, 2), x -> x + 1)", "one", [[2, 3]], "array<int>", "Spark: transform"),
    ('replace("abc", "b")', "one", ["ac"], "string", "Spark: replace without replacement removes"),
    ("isnull(s)", "t", [False, False, True], "boolean", "Spark: isnull"),
    ("cast('1' as int)", "one", [1], "int", "cast"),
    ("string(1)", "one", ["1"], "string", "restapi.md: string(x) is a cast"),
    # Byzer's built-ins: transform/udf/built_in_udf/udf_funcs.md
    ('array_intersect(array("a","b","c"),array("a","d","e"))', "one", [["a"]], "array<string>", "udf_funcs.md"),
    ('array_intersect(array("c","b","a"),array("a","b"))', "one", [["b", "a"]], "array<string>", "udf_funcs.md: first array's order"),
    ('array_index(array("a","b","c","d","e"),"b")', "one", [1], "int", "udf_funcs.md"),
    ('array_index(array("a"),"z")', "one", [-1], "int", "udf_funcs.md: indexOf, -1 when absent"),
    ('array_concat(array(array("a","b"), array("c","d")))', "one", [["a", "b", "c", "d"]], "array<string>", "udf_funcs.md"),
    ("array_number_concat(array(array(1,2), array(3,4)))", "one", [[1.0, 2.0, 3.0, 4.0]], "array<double>", "udf_funcs.md"),
    ("array_number_to_string(array(1,2,3,4))", "one", [["1", "2", "3", "4"]], "array<string>", "udf_funcs.md"),
    ('array_slice(array("a","b","c","d","e"),3,-1)', "one", [["d", "e"]], "array<string>", "udf_funcs.md"),
    ('array_slice(array("a","b","c","d","e"),1,3)', "one", [["b", "c"]], "array<string>", "udf_funcs.md: to is exclusive"),
    ('array_string_to_double(array("1.1","2.2","3.3","4.4"))', "one", [[1.1, 2.2, 3.3, 4.4]], "array<double>", "udf_funcs.md"),
    ('array_string_to_float(array("1.1","2.2","3.3","4.4"))', "one", [FLOAT32], "array<float>", "udf_funcs.md"),
    ('array_string_to_int(array("1","2","3","4"))', "one", [[1, 2, 3, 4]], "array<int>", "udf_funcs.md"),
    ('ngram(array("a","b","c","d","e"),3)', "one", [["a b c", "b c d", "c d e"]], "array<string>", "udf_funcs.md"),
    ('ngram(array("a","b"),3)', "one", [[]], "array<string>", "udf_funcs.md: no partial window"),
    ("uuid() rlike '^[0-9a-f]{32}$'", "one", [True], "boolean", "udf_funcs.md: uuid without dashes"),
]


@pytest.fixture(scope="module")
def spark_session(tmp_path_factory):
    with Session(warehouse=tmp_path_factory.mktemp("warehouse")) as session:
        session.execute(TABLES)
        yield session


@pytest.mark.parametrize("expression, table, values, type_name, used_in", CONFORMANCE,
                         ids=[row[0][:60] for row in CONFORMANCE])
def test_spark_function(spark_session: Session, expression: str, table: str, values: list, type_name: str, used_in: str):
    result = spark_session.execute(f"select {expression} as v from {table} as conformance;")[-1].table
    column = result.column("v")
    assert sorted(column.to_pylist(), key=repr) == sorted(values, key=repr)
    assert spark_type(column.type) == type_name


def test_sum_of_a_saved_bigint_column_stays_bigint_in_delta(spark_session: Session):
    """What a Delta reader sees: Spark's bigint, not a decimal(38,0)."""
    spark_session.execute("select i % 2 as k, sum(b) as total from t group by i % 2 as sums;"
                          "save overwrite sums as delta.`conformance.sums`;")
    loaded = spark_session.execute("load delta.`conformance.sums` as back;")[-1]
    assert spark_session.table("back").schema.field("total").type == pa.int64()
    assert loaded is not None

"""Issue 23 item 5: Byzer's remaining behaviours. ``!desc`` and Spark's ``DESCRIBE`` as Spark prints
them, the single-column Discretizer, ``load modelParams`` of every ET, AutoML's ``ALG.N``
algIndex, DataSummary's and DataTranspose's output as Byzer's code writes it, and Excel's
``header`` as Byzer's Excel source reads it.

Expected values come from Spark's and Byzer's sources, quoted where they are used."""

from __future__ import annotations

import json
import math

import pyarrow as pa
import pytest

from mlsql_ray import MLSQLError
from mlsql_ray.engine.ets.base import PEOPLE_DATA


def rows(session, name: str) -> list[dict]:
    return session.table(name).to_pylist()


# -- !desc and DESCRIBE --------------------------------------------------------------------------

TYPED = """select 1 as i, 2L as l, 'x' as s, 1.5D as d, 1.5f as f, cast(1.5 as decimal(10,2)) as dec,
  cast(1 as tinyint) as ti, cast(1 as smallint) as si, true as b, unbase64('aGk=') as bin,
  date'2024-01-02' as dt, timestamp'2024-01-02 03:04:05' as ts, array(1.0D, 2.0D) as arr,
  map('k', 2) as m, named_struct('p', 1L, 'q', array('a')) as st, null as n as typed;"""

# Spark's DataType.simpleString of each column, as DESCRIBE prints it
SIMPLE = {"i": "int", "l": "bigint", "s": "string", "d": "double", "f": "float", "dec": "decimal(10,2)",
          "ti": "tinyint", "si": "smallint", "b": "boolean", "bin": "binary", "dt": "date", "ts": "timestamp",
          "arr": "array<double>", "m": "map<string,int>", "st": "struct<p:bigint,q:array<string>>", "n": "void"}


def test_desc_prints_sparks_describe(session):
    """Byzer's ``!desc T`` is Spark's ``desc T`` (SQLShowTableExt): col_name, data_type, comment."""
    session.execute(TYPED)
    [result] = session.execute("!desc typed;")
    assert result.table.schema.names == ["col_name", "data_type", "comment"]
    assert result.table.to_pylist() == [{"col_name": k, "data_type": v, "comment": None} for k, v in SIMPLE.items()]


def test_desc_json_is_sparks_schema_json(session):
    """``!desc T json``: one row, column value, ``df.schema.json`` (typeName for atomic types)."""
    session.execute("select 1 as i, array(1.0D) as arr, map('k', 2L) as m, named_struct('p', 'x') as st, null as n as t;")
    [result] = session.execute("!desc t json;")
    assert result.table.column_names == ["value"]
    [text] = result.table.column("value").to_pylist()
    assert "\n" not in text and ", " not in text  # compact, as json4s writes it
    assert json.loads(text) == {"type": "struct", "fields": [
        {"name": "i", "type": "integer", "nullable": True, "metadata": {}},
        {"name": "arr", "type": {"type": "array", "elementType": "double", "containsNull": True}, "nullable": True,
         "metadata": {}},
        {"name": "m", "type": {"type": "map", "keyType": "string", "valueType": "long", "valueContainsNull": True},
         "nullable": True, "metadata": {}},
        {"name": "st", "type": {"type": "struct", "fields": [{"name": "p", "type": "string", "nullable": True,
                                                              "metadata": {}}]}, "nullable": True, "metadata": {}},
        {"name": "n", "type": "void", "nullable": True, "metadata": {}}]}
    with pytest.raises(MLSQLError, match=r"usage: !desc TABLE; or !desc TABLE json;"):
        session.execute("!desc t yaml;")


def test_spark_describe_statement_answers_as_spark(session):
    """``DESC[RIBE] [TABLE] [EXTENDED] T`` in Spark SQL (here through ``!profiler sql``) gives the
    same rows for a temporary view; ``DESCRIBE SELECT ...`` describes the query's columns."""
    session.execute(TYPED)
    expected = [{"col_name": k, "data_type": v, "comment": None} for k, v in SIMPLE.items()]
    for sql in ("describe typed", "DESC TABLE typed", "describe extended `typed`"):
        [result] = session.execute(f"!profiler sql '''{sql}''';")
        assert result.table.to_pylist() == expected, sql
    [query] = session.execute("!profiler sql '''describe select i, s, i + l as total from typed''';")
    assert query.table.to_pylist() == [{"col_name": "i", "data_type": "int", "comment": None},
                                       {"col_name": "s", "data_type": "string", "comment": None},
                                       {"col_name": "total", "data_type": "bigint", "comment": None}]
    with pytest.raises(MLSQLError, match="ghost"):
        session.execute("!profiler sql '''describe ghost''';")


def test_a_wide_struct_is_cut_as_spark_cuts_its_simple_string(session):
    """Spark's StructType.simpleString shows maxToStringFields (25) - 1 fields, then "... N more fields"."""
    fields = ", ".join(f"'f{i}', {i}" for i in range(27))
    session.execute(f"select named_struct({fields}) as wide as t;")
    [result] = session.execute("!desc t;")
    shown = ",".join(f"f{i}:int" for i in range(24))
    assert result.table.column("data_type").to_pylist() == [f"struct<{shown},... 3 more fields>"]


# -- load modelParams of every ET ------------------------------------------------------------------


def test_model_params_of_every_et_lists_its_options(session):
    """Byzer answers ``load modelParams.`ET``` from the ET's explainParams, as ``!show "et/params/ET"``."""
    [listing] = session.execute("!show et;")
    for name in listing.table.column("name").to_pylist():
        session.execute(f"load modelParams.`{name}` as p;")
        [shown] = session.execute(f'!show "et/params/{name}";')
        assert rows(session, "p") == shown.table.to_pylist(), name
    session.execute("load modelParams.`jsonexpandext` as p;")  # names are case-insensitive
    assert "inputCol" in [r["param"] for r in rows(session, "p")]
    with pytest.raises(MLSQLError, match=r"modelParams.`Nope`: no algorithm or ET of that name"):
        session.execute("load modelParams.`Nope` as p;")


def test_show_et_answers_for_the_algorithms_of_train_too(session):
    """Byzer's algorithms are ETs: ``!show "et/RandomForest"`` and ``"et/params/RandomForest"``."""
    [one] = session.execute('!show "et/RandomForest";')
    assert one.table.column_names == ["name", "algType", "doc"]
    assert one.table.column("name").to_pylist() == ["RandomForest"]
    [params] = session.execute('!show "et/params/randomForest";')
    session.execute("load modelParams.`RandomForest` as p;")
    assert params.table.to_pylist() == rows(session, "p")


def test_model_params_of_automl_lists_its_own_options(session):
    session.execute("load modelParams.`AutoML` as p;")
    params = {r["param"]: r for r in rows(session, "p")}
    assert list(params) == ["algos", "sortedBy"]
    assert params["algos"]["defaultValue"] == "GBTs,LogisticRegression,NaiveBayes,RandomForest"
    assert params["sortedBy"]["defaultValue"] == "accuracy"


# -- the single-column Discretizer -------------------------------------------------------------------

VALUES = "select * from values (1.5), (-2.0), (0.5), (null), (cast('NaN' as double)), (7.0) as t(a) as data;"


def test_discretizer_single_column_form_buckets_and_registers_a_number_function(session):
    """Byzer's first SQLDiscretizer: inputCol, outputCol and the edges at the top (bucketSplits, default
    -inf,0.0,1.0,inf); the registered function maps one double to its bucket (DiscretizerMeta's
    Double => Double). NaN goes to one more bucket (handleInvalid keep), null stays null."""
    session.execute(VALUES + 'train data as Discretizer.`db.one` where inputCol="a" and outputCol="bucket" as out;')
    assert [r["bucket"] for r in rows(session, "out")] == [2.0, 0.0, 1.0, None, 3.0, 2.0]
    session.execute("register Discretizer.`db.one` as b;\nselect b(7.0) as x, b(-1) as y, b(null) as z, b(0.5D) as w as o;")
    assert rows(session, "o") == [{"x": 2.0, "y": 0.0, "z": None, "w": 1.0}]
    assert session.table("o").schema.field("x").type == pa.float64()
    with pytest.raises(MLSQLError, match=r"takes a number, not array<decimal\(2,1\)>"):
        session.execute("select b(array(1.0)) as x as o2;")


def test_discretizer_single_column_edges_quantiles_and_skip(session):
    session.execute(VALUES + """
        train data as Discretizer.`db.two` where inputCol="a" and bucketSplits="-inf,0,inf" and handleInvalid="skip" as split;
        train data as Discretizer.`db.three` where inputCol="a" and splitArray="-10,0,10" as in_place;
        train data as Discretizer.`db.q` where method="quantile" and inputCol="a" and numBuckets="3" as quantiles;""")
    assert rows(session, "split") == [{"a": 1.0}, {"a": 0.0}, {"a": 1.0}, {"a": 1.0}]  # the null and NaN rows dropped
    assert [r["a"] for r in rows(session, "in_place")] == [1.0, 0.0, 1.0, None, 2.0, 1.0]
    # the edges are the values at ranks ceil(1/3 * 4) = 2 and ceil(2/3 * 4) = 3 of -2, 0.5, 1.5, 7
    assert [r["a"] for r in rows(session, "quantiles")] == [2.0, 0.0, 1.0, None, 3.0, 2.0]


@pytest.mark.parametrize("options, message", [
    ('inputCol="a" and handleInvalid="error"', r'a value is NaN; handleInvalid="keep" puts NaN'),
    ('inputCol="a" and `fitParam.0.inputCol`="a"', r'either inputCol="..." \(one column\) or `fitParam.N.inputCol`'),
    ('method="bucketizer"', r'needs inputCol="..." \(one column\) or one `fitParam.N.inputCol`'),
    ('inputCol="a" and handleInvalid="bad"', r"handleInvalid is one of keep, error, skip, not 'bad'"),
    ('inputCol="a" and splitArray="1,0,2"', r"splitArray needs at least 3 strictly increasing edges"),
    ('inputCol="a" and bucketSplits="0,1,x"', r"bucketSplits must be numbers"),
    ('inputCol="nope"', r"inputCol must name a column of data"),
])
def test_discretizer_single_column_mistakes(session, options, message):
    session.execute(VALUES)
    with pytest.raises(MLSQLError, match=message):
        session.execute(f"train data as Discretizer.`db.bad` where {options} as out;")


def test_discretizer_with_splits_registers_a_function_over_arrays_as_byzers_current_example(session):
    """Byzer's current SQLDiscretizer (its codeExample): inputCol and Spark's Bucketizer's ``splits``
    at the top; the registered convert maps arrays, as DiscretizerMeta's Seq[Double] => Seq[Double]."""
    session.execute("""set jsonStr='''
{"features":[5.1,3.5,1.4,0.2],"label":0.0}
{"features":[-4.4,2.9,1.4,0.2],"label":0.0}
{"features":[0.5,3.2,1.3,0.2],"label":1.0}
''';
load jsonStr.`jsonStr` as data;
select features[0] as a ,features[1] as b from data
as data1;
train data1 as Discretizer.`/tmp/model`
where method="bucketizer"
and `inputCol`="a"
and `splits`="-inf,0.0,1.0,inf" as out;
register Discretizer.`/tmp/model` as convert;
select convert(array(double(7))) as features as output;""".replace("/tmp/model", "db.splits"))
    assert rows(session, "output") == [{"features": [2.0]}]
    assert [r["a"] for r in rows(session, "out")] == [2.0, 0.0, 1.0]
    session.execute("select convert(array(-1.5D)) as x, convert(array(0.0D)) as y as o;")
    assert rows(session, "o") == [{"x": [0.0], "y": [1.0]}]
    with pytest.raises(MLSQLError, match=r"takes 1 values per row \(one per column it learnt: a\), not 2"):
        session.execute("select convert(array(1.0D, 2.0D)) as x as o2;")
    session.execute('train data1 as Discretizer.`db.s2` where inputCol="b" and splits="0,3,inf" as out2;')
    assert [r["b"] for r in rows(session, "out2")] == [1.0, 0.0, 1.0]
    with pytest.raises(MLSQLError, match=r"splits needs at least 3 strictly increasing edges"):
        session.execute('train data1 as Discretizer.`db.s3` where inputCol="b" and splits="3,0,inf" as out3;')


def test_discretizer_groups_keep_nan_in_a_bucket_of_their_own(session):
    """Byzer's group form applies binarySearchForBuckets with handleInvalid "keep" by default."""
    session.execute(VALUES + 'train data as Discretizer.`db.g` where `fitParam.0.inputCol`="a" '
                             'and `fitParam.0.splitArray`="-inf,0,inf" as out;')
    assert [r["a"] for r in rows(session, "out")] == [1.0, 0.0, 1.0, None, 2.0, 1.0]
    session.execute("register Discretizer.`db.g` as g;\nselect g(array(cast('NaN' as double))) as x as o;")
    assert rows(session, "o") == [{"x": [2.0]}]


# -- AutoML's algIndex --------------------------------------------------------------------------------


def test_automl_alg_index_is_byzers_alg_dot_n_and_predict_takes_both_forms(session):
    """SQLAutoML writes algIndex as ALG.N (each algorithm is a train of its own: auto_ml.md's result
    shows LogisticRegression.0), and its predict/register take ALG.N, the N-th group of ALG."""
    session.execute("""
        select vec_dense(array(id % 7, id % 5)) as features, cast(2 * (id % 7) - (id % 5) as double) as label
        from range(60) as reg;
        train reg as AutoML.`db.auto` where algos="LinearRegression" and evaluateTable="reg" as res;""")
    assert [r["value"] for r in rows(session, "res") if r["name"] == "algIndex"] == ["LinearRegression.0"]
    for index in ("LinearRegression.0", "linearregression.0", "0"):
        [scored] = session.execute(f'predict reg as AutoML.`db.auto` where algIndex="{index}" as scored;')
        assert "algIndex 0" in scored.message
    with pytest.raises(MLSQLError, match=r"has no algIndex 'LinearRegression.1' \(it has 0 \(LinearRegression.0\)\)"):
        session.execute('predict reg as AutoML.`db.auto` where algIndex="LinearRegression.1" as scored;')
    with pytest.raises(MLSQLError, match=r"has no algIndex 'GBTRegressor.0'"):
        session.execute('predict reg as AutoML.`db.auto` where algIndex="GBTRegressor.0" as scored;')


# -- DataSummary and DataTranspose ------------------------------------------------------------------


def test_data_summary_prints_no_negative_zero(session):
    """SQLDataSummaryV2's dataFormat rounds through BigDecimal, which has no -0.0 (a skewness of
    -1e-17 prints 0.0); a column of nulls is Spark 3's void (SQLDataSummaryV2Test)."""
    session.execute(PEOPLE_DATA + "select label, null as nothing from table1 as t;\n"
                    'run t as DataSummary.`` where metrics="dataType,skewness,mean" as st;')
    assert rows(session, "st") == [
        {"columnName": "label", "ordinalPosition": "1", "dataType": "long", "mean": "0.5", "skewness": "0.0"},
        {"columnName": "nothing", "ordinalPosition": "2", "dataType": "void", "mean": "", "skewness": ""}]


def test_data_transpose_pivot_sums_in_sparks_types(session):
    """Spark's Sum: decimal(p, s) → decimal(p + 10, s), float → double; a non-numeric aggCol is
    refused (Spark: "is not a numeric column")."""
    session.execute("select * from values ('a', 'x', cast(1.5 as decimal(10,2)), 1.5f, 'q'), "
                    "('a', 'y', cast(2.5 as decimal(10,2)), 2.5f, 'r') as t(k, c, d, f, s) as data;\n"
                    "run data as DataTranspose.`` where method='pivot' and indexCols='k' and inputCol='c' and aggCol='d' as p1;\n"
                    "run data as DataTranspose.`` where method='pivot' and indexCols='k' and inputCol='c' and aggCol='f' as p2;")
    assert session.table("p1").schema.field("x").type == pa.decimal128(20, 2)
    assert session.table("p2").schema.field("x").type == pa.float64()
    assert [math.isclose(r["x"], 1.5) for r in rows(session, "p2")] == [True]
    with pytest.raises(MLSQLError, match="aggCol 's' is not a numeric column"):
        session.execute("run data as DataTranspose.`` where method='pivot' and indexCols='k' and inputCol='c' "
                        "and aggCol='s' as p3;")


# -- Excel's header -------------------------------------------------------------------------------------


def _sheet(path, rows: dict[int, list]) -> str:
    """A workbook of one sheet, ``rows``: row number → the row's cells (None: no cell)."""
    import xlsxwriter

    book = xlsxwriter.Workbook(str(path))
    sheet = book.add_worksheet("s")
    for r, cells in rows.items():
        for c, value in enumerate(cells):
            if value is not None:
                sheet.write(r, c, value)
    book.close()
    return str(path)


def test_excel_header_names_columns_as_spark_excel_does(session, tmp_path):
    """Byzer's ExcelRelation.headerColumns: one column per cell of the first row (a column whose
    header cell is empty is not read, nor is a data cell right of the last header cell), a
    repeated name gets its cell's place appended; a blank row is no row (POI skips it)."""
    book = _sheet(tmp_path / "b.xlsx", {0: ["a", "a", None, "d"], 1: ["x", "y", "z", "w", "extra"],
                                        3: [1, 2.5, 3, None]})
    session.execute(f'load excel.`{book}` where header="true" as t;')
    assert rows(session, "t") == [{"a0": "x", "a1": "y", "d": "w"}, {"a0": "1", "a1": "2.5", "d": None}]
    session.execute(f'load excel.`{book}` where header="false" and dataAddress="A2" as raw;')
    assert rows(session, "raw") == [{"_c0": "x", "_c1": "y", "_c2": "z", "_c3": "w", "_c4": "extra"},
                                    {"_c0": "1", "_c1": "2.5", "_c2": "3", "_c3": None, "_c4": None}]
    session.execute(f'load excel.`{book}` where header="TRUE" and inferSchema="true" and dataAddress="A2" as typed;')
    assert rows(session, "typed") == [{"x": 1.0, "y": 2.5, "z": 3.0, "w": None, "extra": None}]


def test_excel_header_is_required_and_boolean_as_byzers_source_reads_it(session, tmp_path):
    """spark-excel's checkParameter(parameters, "header"), then Scala's toBoolean; saving too."""
    book = _sheet(tmp_path / "b.xlsx", {0: ["a"], 1: ["x"]})
    with pytest.raises(MLSQLError, match=r'load excel needs header="true" or header="false"'):
        session.execute(f"load excel.`{book}` as t;")
    with pytest.raises(MLSQLError, match=r"load excel: header must be \"true\" or \"false\", not 'yes'"):
        session.execute(f'load excel.`{book}` where header="yes" as t;')
    session.execute("select 1 as a as one;")
    with pytest.raises(MLSQLError, match=r'save \.\.\. as excel needs header="true" or header="false"'):
        session.execute(f"save overwrite one as excel.`{tmp_path / 'out.xlsx'}`;")
    assert not (tmp_path / "out.xlsx").exists()


# -- vectors in a string context ------------------------------------------------------------------------

SCORED = """
select vec_dense(features) as features, label
from (select array(id % 7, id % 5) as features, cast(id % 2 as double) as label from range(40)) as data1;
train data1 as LogisticRegression.`db.lr` as trained;
predict data1 as LogisticRegression.`db.lr` as preds;
"""


def _java(values) -> str:
    from mlsql_ray.spark.java_numbers import java_double

    return ",".join(java_double(v) for v in values)


def test_a_predicted_probability_cast_to_string_prints_as_sparks_dense_vector(session):
    """Spark casts a vector to a string with DenseVector.toString ("[0.75,0.25]", Java's doubles),
    an array<double> as "[0.5, 1.0E-5]": split(cast(probability as string), ",") takes it apart."""
    session.execute(SCORED + """
        select probability, split(cast(probability as string), ",") as parts, string(probability) as text,
               cast(features as string) as f from preds as out;
        select * from preds as copied;
        select cast(c.probability as string) as text from copied c as out2;""")
    for row in rows(session, "out"):
        assert row["text"] == f"[{_java(row['probability'])}]"
        assert row["parts"] == [f"[{_java(row['probability'][:1])}", f"{_java(row['probability'][1:])}]"]
        assert row["f"].startswith("[") and ", " not in row["f"]
    assert [r["text"] for r in rows(session, "out2")] == [r["text"] for r in rows(session, "out")]
    [described] = session.execute("!desc copied;")
    assert {r["col_name"]: r["data_type"] for r in described.table.to_pylist()} == {
        "features": "vector", "label": "double", "prediction": "double", "probability": "vector"}


def test_vec_functions_print_as_sparks_vectors_and_arrays_stay_arrays(session):
    """vec_dense, vec_sparse (SparseVector.toString: (size,[indices],[values]), zeros of the map kept)
    and vec_mk_string print Java's doubles; a plain array keeps Spark's array form."""
    session.execute("""select cast(vec_dense(array(1.0, 2.0, 0.00001)) as string) as dense,
        cast(vec_sparse(4, map(3, 4.5, 1, 0.0)) as string) as sparse,
        vec_mk_string("*", vec_dense(array(1.0, 2.0, 12345678.9))) as joined,
        cast(vec_inplace_add(vec_dense(array(2.5, 2.0)), 4.4) as string) as added,
        cast(vec_array(vec_dense(array(1.0, 2.0))) as string) as arr as out;
        select vec_sparse(3, map(1, 2.0)) as v, vec_dense(array(1e10, -0.5)) as d as made;
        select cast(v as string) as v, cast(d as string) as d from made as out2;""")
    assert rows(session, "out") == [{"dense": "[1.0,2.0,1.0E-5]", "sparse": "(4,[1,3],[0.0,4.5])",
                                     "joined": "1.0*2.0*1.23456789E7", "added": "[6.9,6.4]", "arr": "[1.0, 2.0]"}]
    # a sparse vector kept in a table is a list here: its explicit zeros are not known any more
    assert rows(session, "out2") == [{"v": "(3,[1],[2.0])", "d": "[1.0E10,-0.5]"}]


def test_vector_numbers_are_javas_doubles(session):
    """Every double prints as Java's Double.toString (plain from 1e-3 to 1e7, else d.dddE±n,
    shortest digits), checked on the doubles of random bit patterns and of every magnitude."""
    import random
    import struct

    chosen = random.Random(23)
    values = [0.0, -0.0, 1.0, 1e7, 9999999.999, 1e-3, 0.00099, 5e-324, 1.7976931348623157e308, 0.1 + 0.2, -2.5e-7]
    values += [struct.unpack("d", struct.pack("Q", chosen.getrandbits(64)))[0] for _ in range(500)]
    values += [chosen.random() * 10 ** chosen.randint(-12, 12) for _ in range(500)]
    values = [v for v in values if math.isfinite(v)]
    session.catalog.add_arrow("nums", pa.table({"v": [values]}), "test")
    session.execute("select cast(vec_dense(v) as string) as text from nums as out;")
    assert rows(session, "out") == [{"text": f"[{_java(values)}]"}]


@pytest.mark.slow  # register starts Ray actors
def test_a_registered_models_probabilities_print_as_a_vector(ray_session):
    session = ray_session
    session.execute(SCORED + """
        register LogisticRegression.`db.lr` as lr where output="probability";
        select lr(features) as p, cast(lr(features) as string) as text from data1 as out;
        select cast(p as string) as text from out as again;""")
    out = rows(session, "out")
    assert [r["text"] for r in out] == [f"[{_java(r['p'])}]" for r in out]
    assert [r["text"] for r in rows(session, "again")] == [r["text"] for r in out]


# -- unknown options: a warning, as Byzer ignores them (issue 43) ---------------------------------------

IGNORED = '; ignored (set strictOptions="true" to make this an error)'


def test_unique_identifier_given_a_misspelt_soure_runs_and_warns_once(session):
    """Byzer's ETs read the options they know and ignore the rest: ``soure`` is no option, so the
    default source ("new") holds and the column is added; the warning names the known options and
    the one most likely meant."""
    session.execute(PEOPLE_DATA)
    [*_, result] = session.execute('run table1 as UniqueIdentifier.`` where soure="replace" '
                                   'and columnName="uid" as out;')
    assert result.warnings == ["UniqueIdentifier has no option 'soure' (did you mean 'source'?); it knows: source, "
                               "columnName, mode, inputSchema" + IGNORED]
    assert session.table("out").column_names[0] == "uid"
    assert [row["uid"] for row in rows(session, "out")] == list(range(1, session.table("table1").num_rows + 1))


def test_excel_add_color_columns_is_read_with_a_warning(session, tmp_path):
    """``addColorColumns`` is in Byzer's table of Excel options; mlsql-ray adds no colour columns, so
    it says so and reads the sheet."""
    book = _sheet(tmp_path / "b.xlsx", {0: ["a"], 1: ["x"]})
    [result] = session.execute(f'load excel.`{book}` where header="true" and addColorColumns="false" as t;')
    assert len(result.warnings) == 1
    assert result.warnings[0].startswith("excel has no option 'addColorColumns'; it knows: header, inferSchema, ")
    assert result.warnings[0].endswith(IGNORED)
    assert rows(session, "t") == [{"a": "x"}]


def test_strict_options_turns_the_warning_into_an_error_at_the_statement(session):
    session.execute(PEOPLE_DATA)
    with pytest.raises(MLSQLError) as info:
        session.execute('set strictOptions="TRUE";\nrun table1 as UniqueIdentifier.`` where soure="replace" as out;')
    assert str(info.value) == ("2:1: UniqueIdentifier has no option 'soure' (did you mean 'source'?); it knows: "
                               "source, columnName, mode, inputSchema")
    assert "out" not in session.catalog.names()
    # a request's variable: the next request warns again
    [result] = session.execute('run table1 as UniqueIdentifier.`` where soure="replace" as out;')
    assert len(result.warnings) == 1


def test_an_unknown_parameter_of_every_group_warns_once_and_the_training_goes_on(session):
    """A train's parameter groups share the options outside ``fitParam.N``: a misspelt one is one
    warning, not one per group, and each group trains with the parameters it knows."""
    session.execute("select array(cast(id as double), cast(id % 3 as double)) as features, cast(id % 2 as double) as label "
                    "from range(40) as data;")
    [*_, result] = session.execute('train data as NaiveBayes.`db.nb` where smothing="1.0" '
                                   'and `fitParam.0.smoothing`="0.5" and `fitParam.1.smoothing`="2.0";')
    [warning] = result.warnings
    assert warning.startswith("NaiveBayes has no option 'smothing' (did you mean 'smoothing'?); it knows: ")
    assert warning.endswith(IGNORED)
    report = result.table.to_pylist()
    assert [r["value"] for r in report if r["name"] == "algIndex"] == ["0", "1"]
    assert [r["value"] for r in report if r["name"] == "status"] == ["success", "success"]


@pytest.mark.parametrize("true", ["true", "TRUE", "True", " true "])
def test_booleans_are_read_in_any_case(session, tmp_path, true):
    """Scala's toBoolean, as Byzer reads every flag: a csv's header, an ET's flag, an include's
    allowOutside."""
    session.execute(f"set data='''a,b\n1,2''';\nload csvStr.`data` where header=\"{true}\" as t;")
    assert session.table("t").column_names == ["a", "b"]
    session.execute(PEOPLE_DATA)
    session.execute(f'run table1 as TableRepartition.`` where partitionNum="2" and shuffle="{true.upper()}" as r;')
    assert session.table("r").num_rows == session.table("table1").num_rows
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "lib.mlsql").write_text("select 7 as seven as lib;")
    project = tmp_path / "project"
    project.mkdir()
    (project / "main.mlsql").write_text(f'include local.`{outside / "lib.mlsql"}` where allowOutside="{true}";')
    session.execute((project / "main.mlsql").read_text(), source=project / "main.mlsql")
    assert rows(session, "lib") == [{"seven": 7}]

"""The conformance harness's printer against Spark's documented output (the cases rely on it)."""

import datetime as dt
from decimal import Decimal

import pyarrow as pa
import pytest

from .harness import Case, java_float, read_cases, spark_string


@pytest.mark.parametrize("value, single, printed", [
    (1.0, False, "1.0"), (0.1, False, "0.1"), (1e7, False, "1.0E7"), (123456789.0, False, "1.23456789E8"),
    (0.001, False, "0.001"), (0.0001, False, "1.0E-4"), (-2.5, False, "-2.5"), (3.14159, False, "3.14159"),
    (1.1, True, "1.1"), (float("nan"), False, "NaN"), (float("-inf"), False, "-Infinity"), (-0.0, False, "-0.0"),
    (9999999.0, False, "9999999.0"), (1.5e-7, False, "1.5E-7"),
])
def test_java_float(value, single, printed):
    assert java_float(value, single) == printed


def test_nested_values_print_as_spark_sql_does():
    t = pa.struct([("a", pa.int32()), ("b", pa.list_(pa.string())), ("c", pa.map_(pa.string(), pa.float64()))])
    value = {"a": 1, "b": ["x", None], "c": [("k", 1.0)]}
    assert spark_string(value, t) == '{"a":1,"b":["x",null],"c":{"k":1.0}}'
    assert spark_string(None, pa.int32()) == "NULL"
    assert spark_string(Decimal("1.50"), pa.decimal128(3, 2)) == "1.50"
    assert spark_string(b"Spark SQL", pa.binary()) == "Spark SQL"
    assert spark_string(dt.datetime(2016, 4, 8, 1, 2, 3, 450000), pa.timestamp("us")) == "2016-04-08 01:02:03.45"


def test_case_files_parse(tmp_path):
    path = tmp_path / "x.txt"
    path.write_text("# c\n@ set a = 'b';\n> SELECT 1,\n  2;\n1\t2\n:: int\n> SELECT x;\n!! cannot\n> SELECT '';\n(empty)\n")
    cases = read_cases(path)
    assert [(c.sql, c.rows, c.type, c.error, c.setup) for c in cases] == [
        ("SELECT 1,\n  2", ["1\t2"], "int", None, ["set a = 'b';"]),
        ("SELECT x", [], None, "cannot", ["set a = 'b';"]),
        ("SELECT ''", [""], None, None, ["set a = 'b';"]),
    ]


def test_map_entries_print_sorted_as_hive_result_does():
    """Spark 3.3's ``HiveResult.toHiveString`` sorts a map's entries by their printed text:
    ``select map(2, 'b', 1, 'a', 10, 'c')`` prints ``{10:"c",1:"a",2:"b"}``."""
    t = pa.map_(pa.int32(), pa.string())
    assert spark_string([(2, "b"), (1, "a"), (10, "c")], t) == '{10:"c",1:"a",2:"b"}'
    assert spark_string([[(2, "b"), (1, "a")]], pa.list_(t)) == '[{1:"a",2:"b"}]'


def test_only_the_results_order_by_makes_a_case_ordered():
    assert Case("SELECT a FROM t ORDER BY a", 1).ordered
    assert Case("SELECT a, rank() OVER (PARTITION BY b ORDER BY a) FROM t", 1).ordered is False
    assert Case("SELECT * FROM (SELECT a FROM t ORDER BY a) LIMIT 2", 1).ordered is False
    assert Case("SELECT a, lag(a) OVER (ORDER BY (a + 1)) FROM t ORDER BY a DESC", 1).ordered

"""The SQL the engine writes itself (an ET's queries, a view, a save, a probe) is built as sqlglot
trees (``spark.sql_build``): a table or column whose name holds a quote, a backtick, a space or a
keyword goes through every statement that names it."""

from __future__ import annotations

import json
import threading

import duckdb
import pytest

from mlsql_ray import MLSQLError, Session
from mlsql_ray.engine.sql import duckdb_message

Q = "'''"
TABLE = 'a"b c'  # a double quote and a space
ODD = ["select", "my col", 'a"b']  # a keyword, a space, a double quote


@pytest.fixture(scope="module")
def odd(tmp_path_factory):
    """One session for the module, with the table `a"b c`: columns `select` (int), `my col`
    (string), `a"b` (JSON text)."""
    with Session(warehouse=tmp_path_factory.mktemp("warehouse")) as session:
        session.execute(f"""select 1 as `select`, 'x1' as `my col`, '{{"select": "s", "my key": 1}}' as `a"b`
            union all select 2, 'Yz', '{{"select": "t"}}'
            union all select 2, 'Yz', null as `{TABLE}`;""")
        yield session


def test_profiler_explain_of_a_table_named_with_a_backtick():
    with Session() as session:
        session.execute("select 1 as x as `a``b`;")
        [plan] = session.execute("!profiler explain `a``b`;")
    assert plan.table.num_rows == 1 and "a`b" in session.catalog


def test_data_summary_of_odd_names(odd):
    [result] = odd.execute(f"run `{TABLE}` as DataSummary.`` as summary;")
    rows = {r["columnName"]: r for r in result.table.to_pylist()}
    assert list(rows) == ODD
    assert rows["select"]["max"] == "2.0" and rows["select"]["nonNullCount"] == "3"
    assert rows["my col"]["dataLength"] == "2" and rows["my col"]["mode"] == "Yz"
    assert rows['a"b']["nullValueRatio"] == "0.3333"


def test_descriptive_metrics_and_patterns_of_odd_names(odd):
    [counts] = odd.execute(f"run `{TABLE}` as DescriptiveMetrics.`` as d;")
    assert dict(zip(*counts.table.to_pydict().values())) == {
        "select": '[{"1":1},{"2":2}]', "my col": '[{"Yz":2},{"x1":1}]',
        'a"b': '[{"":1},{"{\\"select\\": \\"s\\", \\"my key\\": 1}":1},{"{\\"select\\": \\"t\\"}":1}]'}
    [patterns] = odd.execute(f"run `{TABLE}` as PatternDistribution.`` as p;")
    by_column = {name: json.loads(text) for name, text in zip(*patterns.table.to_pydict().values())}
    assert set(by_column) == {"my col", 'a"b'}
    assert [p["pattern"] for p in json.loads(by_column["my col"]["colPatternDistribution"])] == ["Aa", "a9"]


def test_transpose_of_odd_names(odd):
    [pivot] = odd.execute(f"run `{TABLE}` as DataTranspose.`` where method='pivot' and indexCols='my col' "
                          "and inputCol='select' and aggCol='select' as pivoted;")
    assert pivot.table.column_names == ["my col", "1", "2"]
    assert pivot.table.to_pylist() == [{"my col": "Yz", "1": None, "2": 4}, {"my col": "x1", "1": 1, "2": None}]
    [unpivot] = odd.execute("run pivoted as DataTranspose.`` where method='unpivot' and indexCols='my col' "
                            "and unPivotCols='1,2' and mergedCol='from' and aggCol='group' as back;")
    assert unpivot.table.to_pylist() == [{"my col": "Yz", "from": "1", "group": None}, {"my col": "Yz", "from": "2", "group": 4},
                                         {"my col": "x1", "from": "1", "group": 1}, {"my col": "x1", "from": "2", "group": None}]


def test_json_expand_of_an_odd_column_with_odd_keys(odd):
    [expanded] = odd.execute(f"run `{TABLE}` as JsonExpandExt.`` where inputCol='a\"b' as expanded;")
    assert expanded.table.column_names == ["my col", "my key", "select"]  # the key `select` replaces the column
    assert expanded.table.column("my key").to_pylist() == ["1", None, None]
    assert expanded.table.column("select").to_pylist() == ["s", "t", None]


def test_tree_and_rate_sampler_over_odd_columns(odd):
    odd.execute("select 1 as `my col`, 0 as `select` union all select 2, 1 as `t t`;")
    [tree] = odd.execute("run `t t` as TreeBuildExt.`` where idCol='my col' and parentIdCol='select' "
                         "and treeType='nodeTreePerRow' as trees;")
    assert {r["id"]: r["children"] for r in tree.table.to_pylist()} == {"1": ["2"], "2": []}
    [sampled] = odd.execute("run `t t` as RateSampler.`` where labelCol='select' and sampleRate='1.0,0.0' as s;")
    assert sampled.table.column_names == ["my col", "select", "__split__"]
    assert sampled.table.column("__split__").to_pylist() == [0, 0]


def test_a_table_with_an_odd_name_is_read_redefined_and_read_again(odd):
    """The catalog's view of a table (``SELECT *``, ``DROP VIEW``) by its quoted name."""
    odd.execute("select 1 as `from` as `x\"y z`; select `from` + 1 as `my col` from `x\"y z` as `select`;")
    assert odd.table("select").to_pylist() == [{"my col": 2}]
    odd.execute("select 'again' as `my col` as `x\"y z`;")  # redefined: DuckDB's old view of it is dropped
    assert odd.execute("select * from `x\"y z` as seen;")[0].table.to_pylist() == [{"my col": "again"}]
    [ids] = odd.execute(f"!profiler sql '''select spark_partition_id() as p, count(*) as n from `{TABLE}` group by 1''';")
    assert ids.table.to_pylist() == [{"p": 0, "n": 3}]


def test_saves_and_reads_through_odd_names_and_paths(odd, tmp_path):
    """A CSV save of a table with an odd name, partitioned by an odd column; text and CSV (with
    inferSchema, which asks DuckDB's sniffer) read from a folder whose path holds a quote."""
    folder = tmp_path / "it's here"
    odd.execute(f"save overwrite `{TABLE}` as csv.`{folder / 'parts'}` where header=\"true\" partitionBy `my col`;")
    assert sorted(p.name for p in (folder / "parts").iterdir()) == ["my%20col=Yz", "my%20col=x1"]  # DuckDB escapes the space
    (folder / "lines.txt").write_text("one\r\ntwo\n")
    odd.execute(f"load text.`{folder / 'lines.txt'}` as lines;")
    assert odd.table("lines").column("value").to_pylist() == ["one", "two"]
    (folder / "typed.csv").write_text("select,my col\n1,2024-01-03\n")
    odd.execute(f"load csv.`{folder / 'typed.csv'}` where header=\"true\" and inferSchema=\"true\" as typed;")
    assert [str(f.type) for f in odd.catalog.schema("typed")] == ["int64", "date32[day]"]


# -- errors by type -----------------------------------------------------------------------------

LONG = "select count(*) from range(1000000000000) a, range(10) b"  # never ends before it is stopped


def test_duckdb_tells_an_interrupt_by_its_class():
    """``con.interrupt()`` (from another thread, as ``!kill`` and the front ends' interrupt watcher
    call it) ends the query with ``duckdb.InterruptException``, a ``duckdb.Error``: the engine reports
    it as an error, which ``!kill`` and the driver tell from others by their own flags. (A SIGINT
    arriving during a query ends it with a bare ``RuntimeError("Query interrupted")`` instead, matched
    by its text in Session._run_statement; tests/test_driver.py checks it is an interrupt at its line.)"""
    con = duckdb.connect()
    done = threading.Event()

    def interrupt_until_done():  # an interrupt() that comes before the query starts does nothing
        while not done.wait(0.2):
            con.interrupt()

    interrupter = threading.Thread(target=interrupt_until_done)
    interrupter.start()
    try:
        with pytest.raises(duckdb.InterruptException):
            con.sql(LONG).fetchall()
    finally:
        done.set()
        interrupter.join()


def test_a_missing_table_is_told_by_duckdbs_catalog_error(odd):
    with pytest.raises(MLSQLError) as raised:
        odd.execute("select * from nowhere as t;")
    assert raised.value.message.startswith("table nowhere is not defined (load it or select ... as it first; defined: ")


def test_a_message_of_another_class_is_not_taken_for_what_it_reads_like():
    """An error whose text reads like DuckDB's catalog or binder error, raised as another class
    (e.g. by a Python function a query calls), is shown as it is."""
    assert duckdb_message(duckdb.InvalidInputException("Invalid Input Error: Table with name x does not exist!"),
                          []) == "Table with name x does not exist!"
    assert duckdb_message(duckdb.CatalogException("Catalog Error: Table with name x does not exist!"),
                          ["t"]).startswith("table x is not defined")
    unnest = "Binder Error: UNNEST() can only be applied to lists, structs and NULL, not MAP(INTEGER, INTEGER)"
    assert duckdb_message(duckdb.BinderException(unnest), []).startswith("explode/posexplode of this map is not supported")
    assert duckdb_message(duckdb.ConversionException(unnest), []) == unnest.removeprefix("Binder Error: ")

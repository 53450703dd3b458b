"""``--%python`` cells on a real local Ray (the session-wide ``ray_runtime``, 2 CPUs).

Expected values come from the parquet file itself (pyarrow, numpy), never from what the cell
code under test computed; cells hand back what they saw through ``build_result``.
"""

from __future__ import annotations

import json
import os
import sys
import textwrap
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from mlsql_ray import MLSQLError, Session
from mlsql_ray.arrays import column_to_numpy
from mlsql_ray.cells.context import RayContext
from mlsql_ray.cells.schema import parse_schema
from mlsql_ray.storage import streaming_tar

TEST_PARQUET = Path(__file__).resolve().parent.parent / "sample_data" / "mnist" / "test.parquet"
LOAD = f"load parquet.`{TEST_PARQUET}` as mnist;"


def cell(code: str, **annotations: str) -> str:
    """A notebook-style cell: ``--%python``, the annotations, then the code."""
    head = ["--%python", *(f"--%{k}={v}" for k, v in annotations.items())]
    return "\n".join(head) + "\n" + textwrap.dedent(code).strip("\n") + "\n"


def matrix(column: pa.ChunkedArray) -> np.ndarray:
    """A list column as a 2-D array, the plain pyarrow way (independent of the code under test)."""
    array = column.combine_chunks()
    return array.flatten().to_numpy(zero_copy_only=False).reshape(len(array), -1)


@pytest.fixture(scope="module")
def source() -> pa.Table:
    return pq.read_table(TEST_PARQUET)


@pytest.fixture
def mnist(ray_session: Session) -> Session:
    ray_session.execute(LOAD)
    return ray_session


def run_cell(session: Session, code: str, **annotations: str):
    return session.execute(cell(code, **annotations))[-1]


# -- data servers ------------------------------------------------------------------------------

SERVER_INFO = """
    import pickle
    from pyjava.api.mlsql import RayContext
    rc = RayContext.connect(globals(), None)
    servers = rc.data_servers()
    rc.build_result([{"index": s.index, "num_rows": s.num_rows, "pickled": len(pickle.dumps(s))} for s in servers])
"""


def test_server_count_defaults_to_cluster_cpus(mnist: Session, ray_runtime, source):
    result = run_cell(mnist, SERVER_INFO, input="mnist", output="info")
    info = mnist.table("info").to_pylist()
    cpus = int(ray_runtime.cluster_resources()["CPU"])
    assert len(info) == cpus
    assert [r["index"] for r in info] == list(range(cpus))
    assert sum(r["num_rows"] for r in info) == source.num_rows
    assert all(r["pickled"] < 1024 for r in info)  # handles, not data
    assert result.name == "info" and result.num_rows == cpus


def test_server_count_is_capped_by_rows(mnist: Session):
    mnist.execute("select * from mnist limit 1 as one;")
    run_cell(mnist, SERVER_INFO, input="one", output="info")
    assert [r["num_rows"] for r in mnist.table("info").to_pylist()] == [1]


def test_server_count_follows_num_partitions(mnist: Session, source):
    run_cell(mnist, SERVER_INFO, input="mnist", output="info", num_partitions="3")
    assert len(mnist.table("info")) == 3
    mnist.execute('!python conf "num_partitions=5";')
    run_cell(mnist, SERVER_INFO, input="mnist", output="info5")
    counts = [r["num_rows"] for r in mnist.table("info5").to_pylist()]
    assert len(counts) == 5 and sum(counts) == source.num_rows and min(counts) == 400
    with pytest.raises(MLSQLError, match="num_partitions must be a positive whole number"):
        run_cell(mnist, SERVER_INFO, input="mnist", output="bad", num_partitions="0")


def test_a_computed_input_is_in_the_object_store_once(mnist: Session, source):
    """A table computed in the driver (here: sorted) goes into the object store as batches,
    each once and at about its own size, and partitions are spans of them (not each the whole
    table: Arrow slices would drag their parent's buffers along when pickled)."""
    mnist.execute("select * from mnist order by label as sorted;")
    run_cell(mnist, """
        import ray
        from pyjava.api.mlsql import RayContext
        rc = RayContext.connect(globals(), None)
        servers = rc.data_servers()
        refs = list({ref: None for s in servers for ref in s.plan.refs})
        sizes = ray.experimental.get_object_locations(refs)
        rc.build_result([{"objects": len(refs), "bytes": sum(sizes[r]["object_size"] for r in refs),
                          "rows": sum(s.read().num_rows for s in servers), "servers": len(servers)}])
    """, input="sorted", output="sizes", num_partitions="4")
    whole = mnist.table("sorted")
    [row] = mnist.table("sizes").to_pylist()
    assert row["servers"] == 4 and row["rows"] == whole.num_rows
    assert 0.9 * source.nbytes < row["bytes"] < 1.3 * source.nbytes, (row, source.nbytes)  # not 4 x the table


def test_a_parquet_loaded_by_a_relative_path_is_read_by_workers_in_other_folders(ray_session: Session, source,
                                                                                 tmp_path, monkeypatch):
    """The driver's working folder is not a Ray worker's: a relative load path reaches the
    workers resolved (the MNIST notebook loads ../sample_data/mnist)."""
    (tmp_path / "data").mkdir()
    pq.write_table(source, tmp_path / "data" / "digits.parquet")
    monkeypatch.chdir(tmp_path)
    ray_session.execute("load parquet.`data/digits.parquet` as rel;")
    run_cell(ray_session, """
        import os
        import ray
        from pyjava.api.mlsql import RayContext
        rc = RayContext.connect(globals(), None)

        @ray.remote
        def rows(server):
            return {"cwd": os.getcwd(), "rows": server.read().num_rows}

        rc.build_result(ray.get([rows.remote(s) for s in rc.data_servers()]))
    """, input="rel", output="read", num_partitions="2")
    seen = ray_session.table("read").to_pylist()
    assert all(r["cwd"] != str(tmp_path) for r in seen)  # the workers really are elsewhere
    assert sum(r["rows"] for r in seen) == source.num_rows


@pytest.mark.slow  # two actors, each a worker process Ray starts for it: seconds; the fast tier's
# workers reading their partitions are the tasks of the test above and of test_foreach_runs_next_to_each_partition
def test_an_actor_reads_its_partition_itself_twice(mnist: Session, source):
    """Each actor gets only the small handle and reads the partition from the object store."""
    run_cell(mnist, """
        import os
        import ray
        from pyjava.api.mlsql import RayContext
        rc = RayContext.connect(globals(), None)
        servers = rc.data_servers()

        @ray.remote
        class Reader:
            def read_twice(self, server):
                first, second = server.read(), server.read()
                return {"pid": os.getpid(), "same": first.equals(second), "rows": first.num_rows,
                        "labels": first.column("label").to_pylist(),
                        "pixel_sums": [sum(image) for image in second.column("image").to_pylist()]}

        readers = [Reader.remote() for _ in servers]
        seen = ray.get([reader.read_twice.remote(server) for reader, server in zip(readers, servers)])
        rc.build_result(seen)
    """, input="mnist", output="seen", num_partitions="2")
    seen = mnist.table("seen").to_pylist()
    assert len(seen) == 2
    assert all(r["same"] for r in seen)
    assert all(r["pid"] != os.getpid() for r in seen)
    assert sum((r["labels"] for r in seen), []) == source.column("label").to_pylist()
    assert sum((r["pixel_sums"] for r in seen), []) == matrix(source.column("image")).sum(axis=1, dtype=np.int64).tolist()


@pytest.mark.parametrize("read", [
    "RayContext.to_arrow(servers)",
    "list(RayContext.collect_from(servers))",
    "rc.to_pandas()",
    "rc.collect()",
])
def test_every_read_path_agrees_with_the_source(mnist: Session, source, read: str):
    run_cell(mnist, f"""
        from pyjava.api.mlsql import RayContext
        rc = RayContext.connect(globals(), None)
        servers = rc.data_servers()
        rc.build_result({read})
    """, input="mnist", output="copy")
    copy = mnist.table("copy")
    assert copy.num_rows == source.num_rows
    assert copy.column("label").to_pylist() == source.column("label").to_pylist()
    assert np.array_equal(matrix(copy.column("image")), matrix(source.column("image")))


def test_to_numpy_gives_the_training_matrix(mnist: Session, source):
    run_cell(mnist, """
        from pyjava.api.mlsql import RayContext
        rc = RayContext.connect(globals(), None)
        servers = rc.data_servers()
        images = RayContext.to_numpy(servers, "image", "float32")
        labels = RayContext.to_numpy(servers, "label")
        rc.build_result([{"shape": list(images.shape), "dtype": str(images.dtype), "total": float(images.sum(dtype="float64")),
                          "labels": labels.tolist()}])
    """, input="mnist", output="m")
    row = mnist.table("m").to_pylist()[0]
    expected = matrix(source.column("image"))
    assert row["shape"] == [source.num_rows, 784] and row["dtype"] == "float32"
    assert row["total"] == float(expected.sum(dtype=np.int64))
    assert row["labels"] == source.column("label").to_pylist()


def test_column_to_numpy_handles_slices_chunks_and_ragged_rows():
    lists = pa.array([[i, i + 1, i + 2] for i in range(10)], pa.list_(pa.int16()))
    chunked = pa.chunked_array([lists.slice(2, 3), lists.slice(7, 2)])
    got = column_to_numpy(chunked, "float64")
    assert got.dtype == np.float64
    assert got.tolist() == [[i, i + 1, i + 2] for i in (2, 3, 4, 7, 8)]
    view = column_to_numpy(lists.slice(4, 2))
    assert view.tolist() == [[4, 5, 6], [5, 6, 7]] and view.dtype == np.int16
    with pytest.raises(MLSQLError, match="different lengths"):
        column_to_numpy(pa.array([[1, 2], [3]]))
    with pytest.raises(MLSQLError, match="null rows"):
        column_to_numpy(pa.array([[1, 2], None]))


def test_connect_outside_a_cell_is_refused():
    with pytest.raises(MLSQLError, match="only works inside a --%python cell"):
        RayContext.connect(globals(), None)


def test_data_servers_without_input_is_a_clear_error(ray_session: Session):
    with pytest.raises(MLSQLError, match="no input table"):
        run_cell(ray_session, """
            from pyjava.api.mlsql import RayContext
            RayContext.connect(globals(), None).data_servers()
        """)


# -- where the cell runs, and per-partition functions -------------------------------------------

@pytest.mark.slow
def test_executor_mode_runs_the_cell_in_a_ray_task(mnist: Session, source):
    run_cell(mnist, """
        import os
        from pyjava.api.mlsql import RayContext
        rc = RayContext.connect(globals(), None)
        servers = rc.data_servers()
        table = RayContext.to_arrow(servers)
        rc.build_result([{"pid": os.getpid(), "rows": table.num_rows, "labels": sum(table.column("label").to_pylist())}])
    """, input="mnist", output="where", runIn="executor")
    row = mnist.table("where").to_pylist()[0]
    assert row["pid"] != os.getpid()
    assert row["rows"] == source.num_rows
    assert row["labels"] == sum(source.column("label").to_pylist())


def test_driver_mode_runs_in_the_session_process(ray_session: Session):
    run_cell(ray_session, """
        import os
        from pyjava.api.mlsql import RayContext
        RayContext.connect(globals(), None).build_result([{"pid": os.getpid()}])
    """, output="where")
    assert ray_session.table("where").column("pid").to_pylist() == [os.getpid()]


def test_foreach_runs_next_to_each_partition(mnist: Session, source):
    result = run_cell(mnist, """
        import os
        from pyjava.api.mlsql import RayContext
        rc = RayContext.connect(globals(), None)
        rc.foreach(lambda row: None if row["label"] == 3 else
                   {"label": row["label"], "pixels": sum(row["image"]), "pid": os.getpid()})
    """, input="mnist", output="sums", dataMode="data", num_partitions="3")
    out = mnist.table("sums")
    labels = np.array(source.column("label").to_pylist())
    keep = labels != 3
    assert result.num_rows == int(keep.sum())
    assert out.column("label").to_pylist() == labels[keep].tolist()
    assert out.column("pixels").to_pylist() == matrix(source.column("image")).sum(axis=1)[keep].tolist()
    assert os.getpid() not in set(out.column("pid").to_pylist())


def test_map_iter_gets_each_partition_as_an_iterator(mnist: Session, source):
    run_cell(mnist, """
        import os
        from pyjava.api.mlsql import RayContext
        rc = RayContext.connect(globals(), None)

        def per_partition(rows):
            labels = [row["label"] for row in rows]
            yield {"n": len(labels), "label_sum": sum(labels), "first": labels[0], "pid": os.getpid()}

        rc.map_iter(per_partition)
    """, input="mnist", output="parts", dataMode="data", num_partitions="4")
    parts = mnist.table("parts").to_pylist()
    labels = source.column("label").to_pylist()
    assert len(parts) == 4
    assert sum(p["n"] for p in parts) == len(labels)
    assert sum(p["label_sum"] for p in parts) == sum(labels)
    starts = np.cumsum([0] + [p["n"] for p in parts[:-1]])
    assert [p["first"] for p in parts] == [labels[s] for s in starts]
    assert os.getpid() not in {p["pid"] for p in parts}


def test_foreach_dropping_every_row_gives_an_empty_table_of_the_schema(mnist: Session):
    run_cell(mnist, """
        from pyjava.api.mlsql import RayContext
        RayContext.connect(globals(), None).foreach(lambda row: None)
    """, input="mnist", output="nothing", dataMode="data", schema="st(field(label,long),field(score,double))")
    empty = mnist.table("nothing")
    assert empty.num_rows == 0
    assert empty.schema.names == ["label", "score"]
    assert mnist.execute("select count(*) as n from nothing as c;")[-1].table.column("n").to_pylist() == [0]


def test_run_command_as_ray_statement(mnist: Session, source):
    results = mnist.execute("""
run command as Ray.`` where inputTable="mnist" and outputTable="O" and code='''
from pyjava.api.mlsql import RayContext
rc = RayContext.connect(globals(), None)
table = RayContext.to_arrow(rc.data_servers())
rc.build_result([{"label": l, "n": table.column("label").to_pylist().count(l)} for l in range(10)])
''';
select sum(n) as total from O as t;
""")
    counts = {r["label"]: r["n"] for r in mnist.table("O").to_pylist()}
    labels = source.column("label").to_pylist()
    assert counts == {l: labels.count(l) for l in range(10)}
    assert results[-1].table.column("total").to_pylist() == [source.num_rows]


def test_run_command_as_ray_error_lines_are_script_lines(mnist: Session):
    script = "\n".join([
        "select 1 as x as one;",
        "run command as Ray.`` where outputTable=\"O2\" and code='''",
        "a = 1",
        "b = a + missing_name",
        "''';",
    ])
    with pytest.raises(MLSQLError) as info:
        mnist.execute(script)
    assert info.value.line == 4
    assert "line 4" in info.value.message and "NameError" in info.value.message
    assert "O2" not in mnist.catalog


# -- !python env ---------------------------------------------------------------------------------

REPORT_ENV = """
    import os
    from pyjava.api.mlsql import RayContext
    RayContext.connect(globals(), None).build_result([{"pid": os.getpid(), "a": os.environ.get("MLSQL_I12_A"),
                                                       "b": os.environ.get("MLSQL_I12_B")}])
"""


def test_python_env_is_the_driver_cells_environment_while_it_runs(session: Session, monkeypatch):
    monkeypatch.setenv("MLSQL_I12_B", "before")
    monkeypatch.delenv("MLSQL_I12_A", raising=False)
    session.execute('!python env "MLSQL_I12_A=it\'s = 1"; !python env "MLSQL_I12_B=during";')
    sees = "import os\nassert (os.getpid(), os.environ.get('MLSQL_I12_A'), os.environ.get('MLSQL_I12_B')) == {!r}"
    run_cell(session, sees.format((os.getpid(), "it's = 1", "during")))  # no Ray: the session's process
    assert "MLSQL_I12_A" not in os.environ and os.environ["MLSQL_I12_B"] == "before"  # as it was
    with pytest.raises(MLSQLError, match="(?s)the Python cell failed.*AssertionError"):
        run_cell(session, sees.format((os.getpid(), None, "before")))
    assert "MLSQL_I12_A" not in os.environ and os.environ["MLSQL_I12_B"] == "before"  # after a failure too
    with pytest.raises(MLSQLError, match="letters, digits and _") as info:
        session.execute('select 1 as x as one;\n!python env "MY-VAR=1";')
    assert info.value.line == 2


@pytest.mark.slow  # a runtime env: Ray starts fresh worker processes for it
def test_python_env_reaches_ray_tasks_of_the_cell(mnist: Session):
    mnist.execute('!python env "MLSQL_I12_A=on ray";')
    run_cell(mnist, REPORT_ENV + """
    import ray
    @ray.remote(num_cpus=0)
    class Nested:  # like train.fit's workers
        def read(self):
            return os.environ.get("MLSQL_I12_A")
    assert ray.get(Nested.remote().read.remote()) == "on ray", "an actor the executor cell starts inherits it"
    """, output="remote", runIn="executor")
    row = mnist.table("remote").to_pylist()[0]
    assert row["pid"] != os.getpid() and row["a"] == "on ray"
    run_cell(mnist, """
        import os
        from pyjava.api.mlsql import RayContext
        RayContext.connect(globals(), None).foreach(lambda row: {"a": os.environ.get("MLSQL_I12_A"), "pid": os.getpid()})
    """, input="mnist", output="per_row", dataMode="data")
    per_row = mnist.table("per_row")
    assert set(per_row.column("a").to_pylist()) == {"on ray"}
    assert os.getpid() not in per_row.column("pid").to_pylist()
    assert "MLSQL_I12_A" not in os.environ


# -- results -------------------------------------------------------------------------------------

@pytest.mark.parametrize("make", [
    '[{"k": 1, "v": "a"}, {"k": 2, "v": "b"}, {"k": 3, "v": "c"}]',
    'pd.DataFrame({"k": [1, 2, 3], "v": ["a", "b", "c"]})',
    'pa.table({"k": [1, 2, 3], "v": ["a", "b", "c"]})',
])
def test_build_result_kinds_become_a_table_readable_many_times(ray_session: Session, make: str):
    run_cell(ray_session, f"""
        import pandas as pd
        import pyarrow as pa
        from pyjava.api.mlsql import RayContext
        RayContext.connect(globals(), None).build_result({make})
    """, output="kv", cache="true")
    for _ in range(3):
        total = ray_session.execute("select sum(k) as s, max(v) as m from kv as agg;")[-1].table
        assert total.to_pylist() == [{"s": 6, "m": "c"}]
    assert ray_session.table("kv").to_pylist() == ray_session.table("kv").to_pylist() == [
        {"k": 1, "v": "a"}, {"k": 2, "v": "b"}, {"k": 3, "v": "c"}]


def test_build_result_refuses_one_dict(ray_session: Session):
    with pytest.raises(MLSQLError, match="not one dict"):
        run_cell(ray_session, """
            from pyjava.api.mlsql import RayContext
            RayContext.connect(globals(), None).build_result({"k": 1})
        """, output="x")


def test_os_exit_is_guarded_only_while_a_driver_cell_runs(session: Session):
    """The guard against a driver cell's os._exit (tests/reliability/test_cell_death.py) is in
    place while the cell runs, and Python's own os._exit is back afterwards, also after a failure."""
    real_exit = os._exit
    run_cell(session, """
        import os, posix
        context.build_result([{"guarded": os._exit is not posix._exit}])
    """, output="guard")
    assert session.table("guard").to_pylist() == [{"guarded": True}]
    assert os._exit is real_exit
    with pytest.raises(MLSQLError, match="ValueError"):  # (os._exit itself: in a subprocess, there)
        run_cell(session, "raise ValueError('failed')")
    assert os._exit is real_exit


def test_build_result_rows_with_different_keys_keep_every_column(session: Session):
    """As a DataFrame of the rows would: every key a column, None where a row lacks it (issue 24,
    item 3: column c was dropped without a word)."""
    result = run_cell(session, """
        context.build_result([{"a": 1, "b": 1}, {"a": 2.5, "c": "new"}])
    """, output="union")
    assert result.message == "union: 2 rows"
    table = session.table("union")
    assert table.column_names == ["a", "b", "c"]
    assert table.to_pylist() == [{"a": 1.0, "b": 1, "c": None}, {"a": 2.5, "b": None, "c": "new"}]


def test_build_result_rows_whose_values_fit_no_one_type_are_a_clear_error(session: Session):
    with pytest.raises(MLSQLError) as info:
        run_cell(session, """
            rows = [{"a": 1}, {"a": "x"}]
            context.build_result(rows)
        """, output="mixed")
    assert "column 'a' has values of different types: 1 (int), 'x' (str)" in info.value.message
    assert info.value.line == 4  # the build_result line (1: --%python, 2: --%output)
    assert "mixed" not in session.catalog


SPARK_JSON = json.dumps({"type": "struct", "fields": [
    {"name": "k", "type": "long", "nullable": True, "metadata": {}},
    {"name": "score", "type": "float", "nullable": True, "metadata": {}},
    {"name": "tags", "type": {"type": "array", "elementType": "string", "containsNull": True},
     "nullable": True, "metadata": {}}]})


@pytest.mark.parametrize("schema", [
    "st(field(k,long),field(score,float),field(tags,array(string)))",
    "k BIGINT, score FLOAT, tags ARRAY<STRING>",
    SPARK_JSON,
])
def test_schema_is_applied(ray_session: Session, schema: str):
    run_cell(ray_session, """
        from pyjava.api.mlsql import RayContext
        RayContext.connect(globals(), None).build_result(
            [{"tags": ["x"], "score": 1, "k": 7}, {"tags": [], "score": 2.5, "k": 8}])
    """, output="typed", schema=schema)
    typed = ray_session.table("typed")
    assert typed.schema == pa.schema([("k", pa.int64()), ("score", pa.float32()), ("tags", pa.list_(pa.string()))])
    assert typed.to_pylist() == [{"k": 7, "score": 1.0, "tags": ["x"]}, {"k": 8, "score": 2.5, "tags": []}]


def test_schema_from_python_conf_and_annotation_override(ray_session: Session):
    ray_session.execute('!python conf "schema=st(field(k,int))";')
    code = 'from pyjava.api.mlsql import RayContext\nRayContext.connect(globals(), None).build_result([{"k": 1}])'
    run_cell(ray_session, code, output="by_conf")
    run_cell(ray_session, code, output="by_annotation", schema="k string")
    assert ray_session.table("by_conf").schema.field("k").type == pa.int32()
    assert ray_session.table("by_annotation").column("k").to_pylist() == ["1"]


def test_schema_file_rows_from_a_directory_round_trip(ray_session: Session, tmp_path: Path):
    model = tmp_path / "model_dir"
    (model / "variables").mkdir(parents=True)
    (model / "saved_model.pb").write_bytes(os.urandom(150_000))
    (model / "variables" / "v.index").write_bytes(b"index")
    run_cell(ray_session, f"""
        from pyjava.api.mlsql import RayContext
        RayContext.connect(globals(), None).build_result_from_dir({str(model)!r})
    """, output="model_rows", schema="file")
    rows = ray_session.table("model_rows")
    assert rows.schema.names == ["start", "offset", "value"]
    assert rows.column("offset").to_pylist()[0] == streaming_tar.CHUNK_SIZE
    out = streaming_tar.save_rows_as_file(rows.to_pylist(), tmp_path / "back")
    assert (out / "saved_model.pb").read_bytes() == (model / "saved_model.pb").read_bytes()
    assert (out / "variables" / "v.index").read_bytes() == b"index"


@pytest.mark.parametrize("rows, schema, column, what", [
    ('[{"a": 1}]', "st(field(a,long),field(b,string))", "b", "has no column"),
    ('[{"a": 1, "extra": 2}]', "st(field(a,long))", "extra", "does not declare"),
    ('[{"a": "not a number"}]', "st(field(a,long))", "a", "cannot become int64"),
    ('[{"a": 1.5}]', "a BIGINT", "a", "cannot become int64"),
])
def test_schema_mismatch_names_the_column(ray_session: Session, rows: str, schema: str, column: str, what: str):
    with pytest.raises(MLSQLError) as info:
        run_cell(ray_session, f"""
            from pyjava.api.mlsql import RayContext
            RayContext.connect(globals(), None).build_result({rows})
        """, output="mismatch", schema=schema)
    assert f"'{column}'" in info.value.message and what in info.value.message
    assert "mismatch" not in ray_session.catalog


def test_spark_ddl_schema_reads_what_spark_accepts():
    """Spark DDL goes through sqlglot's Spark dialect: nested structs with or without ':',
    TIMESTAMP_NTZ, constraints and comments, back-quoted names."""
    schema = parse_schema("`a b`: long, m map<string, array<int>> NOT NULL, d decimal(12, 3), "
                          "s struct<x: int, y string>, t timestamp_ntz COMMENT 'when'")
    assert schema == pa.schema([("a b", pa.int64()), ("m", pa.map_(pa.string(), pa.list_(pa.int32()))),
                                ("d", pa.decimal128(12, 3)), ("s", pa.struct([("x", pa.int32()), ("y", pa.string())])),
                                ("t", pa.timestamp("us"))])


@pytest.mark.parametrize("text, message", [
    ("abc bigint bcd", "stuck at 'bcd' at character 12"),
    ("a int, b interval", "column 'b' has the type INTERVAL, which has no Arrow counterpart here"),
    ("a ARRAY<STRING", "it ends too early"),
    ("st(field(a,long)", "expected ) at the end"),
])
def test_bad_schema_text_says_where(text: str, message: str):
    with pytest.raises(MLSQLError) as info:
        parse_schema(text)
    assert message in info.value.message and repr(text) in info.value.message


def test_bad_schema_text_is_a_clear_error(ray_session: Session):
    with pytest.raises(MLSQLError, match="unknown type 'lng'"):
        run_cell(ray_session, "x = 1", output="o", schema="st(field(a,lng))")


# -- bad input -----------------------------------------------------------------------------------

def test_failing_notebook_cell_reports_its_own_line_numbers(ray_session: Session):
    text = "--%python\n--%output=broken\nx = 1\n\ny = x / 0\n"
    with pytest.raises(MLSQLError) as info:
        ray_session.execute(text)
    error = info.value
    assert error.line == 5
    assert "line 5" in error.message and "y = x / 0" in error.message
    assert "ZeroDivisionError" in error.message
    assert "broken" not in ray_session.catalog


def test_failing_cell_in_a_script_reports_script_lines_through_nested_calls(ray_session: Session, tmp_path):
    script = "\n".join([
        "select 1 as a as one;",          # 1
        "-- %%",                          # 2
        "--%python",                      # 3
        "--%output=never",                # 4
        "def inner(v):",                  # 5
        "    return {'a': 1}[v]",         # 6
        "def outer():",                   # 7
        "    return inner('b')",          # 8
        "outer()",                        # 9
    ])
    path = tmp_path / "job.mlsql"
    path.write_text(script)
    with pytest.raises(MLSQLError) as info:
        ray_session.execute(script, source=path)
    error = info.value
    assert error.line == 6
    for line in ("line 9, in <module>", "line 8, in outer", "line 6, in inner", "KeyError: 'b'"):
        assert line in error.message
    assert "never" not in ray_session.catalog


@pytest.mark.slow
def test_each_cell_run_shows_its_own_source(ray_session: Session):
    """Two cells, the same line numbers: an actor the first cell started, failing when the second
    calls it, is shown with the first cell's line, and the second cell's line with its own text."""
    import ray

    ray_session.execute(cell("""
        import ray
        @ray.remote(num_cpus=0)
        class Checker:
            def check(self, v):
                assert v > 0, "from the first cell"
                return v
        Checker.options(name="i12_checker", lifetime="detached").remote()  # outlives the cell
    """))
    try:
        with pytest.raises(MLSQLError) as info:
            ray_session.execute(cell("""
                import ray
                checker = ray.get_actor("i12_checker")
                total = 0
                total = total + 1
                total += ray.get(checker.check.remote(-1))
                print("never", total)
            """))
    finally:
        ray.kill(ray.get_actor("i12_checker"))
    message = info.value.message
    assert info.value.line == 6
    assert "cell, line 6, in <module>\n    total += ray.get(checker.check.remote(-1))" in message
    assert 'an earlier cell, line 6, in check\n    assert v > 0, "from the first cell"' in message
    assert "total = total + 1" not in message and "never" not in message


def test_failing_executor_cell_reports_the_same_lines(ray_session: Session):
    text = "--%python\n--%runIn=executor\n--%output=remote_broken\nimport json\njson.loads('{bad')\n"
    with pytest.raises(MLSQLError) as info:
        ray_session.execute(text)
    assert info.value.line == 5
    assert "line 5" in info.value.message and "JSONDecodeError" in info.value.message
    assert "remote_broken" not in ray_session.catalog


def test_error_in_a_foreach_function_reports_the_function_line(mnist: Session):
    text = cell("""
        from pyjava.api.mlsql import RayContext
        rc = RayContext.connect(globals(), None)
        def per_row(row):
            return {"x": 1 / (row["label"] - 4)}
        rc.foreach(per_row)
    """, input="mnist", output="inverse", dataMode="data")
    with pytest.raises(MLSQLError) as info:
        mnist.execute(text)
    message = info.value.message
    assert info.value.line == 8  # 4 annotation lines, then the code
    assert "cell, line 9, in <module>" in message and "rc.foreach(per_row)" in message
    assert "in a Ray worker:" in message
    assert "cell, line 8, in per_row" in message and 'return {"x": 1 / (row["label"] - 4)}' in message
    assert message.rstrip().endswith("ZeroDivisionError: division by zero")
    assert "\x1b[" not in message and "_private" not in message  # no colour codes, no Ray internals
    assert "inverse" not in mnist.catalog


@pytest.mark.slow
def test_error_in_an_actor_created_by_the_cell_reports_the_actor_line(ray_session: Session):
    text = "\n".join([
        "--%python",                           # 1
        "import ray",                          # 2
        "@ray.remote",                         # 3
        "class Network:",                      # 4
        "    def __init__(self):",             # 5
        "        self.images = [][0]",         # 6
        "    def train(self):",                # 7
        "        return 1",                    # 8
        "worker = Network.remote()",           # 9
        "ray.get(worker.train.remote())",      # 10
    ])
    with pytest.raises(MLSQLError) as info:
        ray_session.execute(text)
    message = info.value.message
    assert info.value.line == 6
    assert "cell, line 10, in <module>" in message and "cell, line 6, in __init__" in message
    assert message.rstrip().endswith("IndexError: list index out of range")


def test_python_syntax_error_has_the_cell_line(ray_session: Session):
    with pytest.raises(MLSQLError) as info:
        ray_session.execute("--%python\nx = 1\nif x\n    pass\n")
    assert info.value.line == 3 and "syntax error" in info.value.message


def test_session_goes_on_after_a_failing_cell(mnist: Session):
    with pytest.raises(MLSQLError, match=r"RuntimeError: boom"):
        mnist.execute(cell("raise RuntimeError('boom')", input="mnist", output="mnist2"))
    assert "mnist2" not in mnist.catalog
    run_cell(mnist, """
        from pyjava.api.mlsql import RayContext
        rc = RayContext.connect(globals(), None)
        rc.build_result([{"n": sum(s.num_rows for s in rc.data_servers())}])
    """, input="mnist", output="after")
    assert mnist.table("after").to_pylist() == [{"n": 2000}]
    assert mnist.execute("select count(*) as c from mnist as c;")[-1].table.to_pylist() == [{"c": 2000}]


def test_output_without_build_result_is_a_clear_error(ray_session: Session):
    with pytest.raises(MLSQLError, match=r"--%output=forgotten but never called ray_context.build_result"):
        run_cell(ray_session, "x = 1", output="forgotten")
    assert "forgotten" not in ray_session.catalog


def test_cell_without_output_just_runs(ray_session: Session):
    result = run_cell(ray_session, "x = 1")
    assert result.message == "python cell done" and result.warnings == []


def test_unknown_annotation_and_conf_keys_are_warnings_naming_them(ray_session: Session):
    result = run_cell(ray_session, "x = 1", colour="blue")
    assert len(result.warnings) == 1 and "'colour'" in result.warnings[0]
    ray_session.execute('!python conf "numPartitions=3";')
    result = run_cell(ray_session, "x = 1")
    assert len(result.warnings) == 1 and "'numPartitions'" in result.warnings[0]


def test_bad_run_in_value_is_refused(ray_session: Session):
    with pytest.raises(MLSQLError, match="runIn must be driver or executor, not 'cluster'"):
        run_cell(ray_session, "x = 1", runIn="cluster")


def test_unknown_input_table_names_it(ray_session: Session):
    with pytest.raises(MLSQLError, match="--%input=nosuch: no table of that name"):
        run_cell(ray_session, "x = 1", input="nosuch")


# -- the pyjava alias ----------------------------------------------------------------------------

ALIAS_CHECK = """
    import pyjava
    from pyjava.api.mlsql import RayContext
    from pyjava.storage import streaming_tar
    from pyjava.api import mlsql
    rc = RayContext.connect(globals(), None)
    rc.build_result([{"ours": RayContext.__module__, "tar": streaming_tar.__name__,
                      "marker": getattr(pyjava, "MARKER", "")}])
"""


def test_pyjava_imports_work_in_cells_and_do_not_leak(ray_session: Session):
    run_cell(ray_session, ALIAS_CHECK, output="alias")
    assert ray_session.table("alias").to_pylist() == [
        {"ours": "mlsql_ray.cells.context", "tar": "mlsql_ray.storage.streaming_tar", "marker": ""}]
    assert not any(name == "pyjava" or name.startswith("pyjava.") for name in sys.modules)
    with pytest.raises(ModuleNotFoundError):
        import pyjava  # noqa: F401
    with pytest.raises(ModuleNotFoundError):
        from pyjava.api.mlsql import RayContext  # noqa: F401


def test_pyjava_alias_also_works_in_executor_cells(ray_session: Session):
    run_cell(ray_session, ALIAS_CHECK, output="alias_remote", runIn="executor")
    assert ray_session.table("alias_remote").column("ours").to_pylist() == ["mlsql_ray.cells.context"]


@pytest.fixture
def real_pyjava(tmp_path: Path):
    """A stand-in for an installed pyjava package on sys.path."""
    root = tmp_path / "site"
    (root / "pyjava" / "api").mkdir(parents=True)
    (root / "pyjava" / "__init__.py").write_text('MARKER = "installed"\n')
    (root / "pyjava" / "api" / "__init__.py").write_text("")
    (root / "pyjava" / "api" / "mlsql.py").write_text("class RayContext:\n    INSTALLED = True\n")
    before = {p: p.read_bytes() for p in root.rglob("*.py")}
    sys.path.insert(0, str(root))
    try:
        yield root, before
    finally:
        sys.path.remove(str(root))
        for name in [n for n in sys.modules if n == "pyjava" or n.startswith("pyjava.")]:
            del sys.modules[name]


def test_an_installed_pyjava_is_shadowed_in_cells_and_untouched_outside(ray_session: Session, real_pyjava):
    root, before = real_pyjava
    import pyjava
    from pyjava.api.mlsql import RayContext as installed

    run_cell(ray_session, ALIAS_CHECK, output="alias")
    assert ray_session.table("alias").to_pylist()[0]["ours"] == "mlsql_ray.cells.context"
    assert ray_session.table("alias").to_pylist()[0]["marker"] == ""
    assert sys.modules["pyjava"] is pyjava and pyjava.MARKER == "installed"
    assert sys.modules["pyjava.api.mlsql"].RayContext is installed and installed.INSTALLED
    assert not hasattr(pyjava, "storage")
    assert {p: p.read_bytes() for p in root.rglob("*.py")} == before


def test_an_installed_pyjava_imported_only_after_a_cell_is_the_installed_one(ray_session: Session, real_pyjava):
    run_cell(ray_session, ALIAS_CHECK, output="alias")
    import pyjava
    from pyjava.api.mlsql import RayContext as installed

    assert pyjava.MARKER == "installed" and installed.INSTALLED

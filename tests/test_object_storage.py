"""Object storage wherever a path goes (issue 26): the warehouse, load/save and ``!fs`` on
``s3://`` against a real S3 server (moto's server mode, tests/s3_server.py), read back through
a second client (boto3) where what was written matters."""

from __future__ import annotations

import pytest

from mlsql_ray import Session
from mlsql_ray.errors import MLSQLError

import s3_server as s3

BUCKET = s3.BUCKET


@pytest.fixture
def s3_session(s3_env, request):
    """A session whose warehouse is a fresh prefix of the test bucket."""
    prefix = f"wh-{request.node.name}"
    with Session(warehouse=f"s3://{BUCKET}/{prefix}") as session:
        session.prefix = prefix
        yield session


def rows(session, sql):
    return session.execute(sql)[-1].table.to_pylist()


def test_warehouse_on_s3_saves_and_loads_delta_tables(s3_session, s3_server):
    s3_session.execute("select 1 as id, 'a' as name union all select 2, 'b' as t; save overwrite t as delta.`db.people`;"
                       "select 3 as id, 'c' as name as u; save append u as delta.`db.people`;")
    keys = s3_server.keys(f"{s3_session.prefix}/db/people/_delta_log/")
    assert [k.rsplit("/", 1)[-1] for k in keys if k.endswith(".json")] == ["00000000000000000000.json",
                                                                         "00000000000000000001.json"]
    assert rows(s3_session, "load delta.`db.people` as p; select * from p order by id as out;") == [
        {"id": 1, "name": "a"}, {"id": 2, "name": "b"}, {"id": 3, "name": "c"}]
    assert rows(s3_session, "load delta.`db.people` where version=\"0\" as p0; select count(*) as n from p0 as out;") == [{"n": 2}]
    listing = s3_session.execute("!delta show tables;")[-1].table.to_pylist()
    assert [(r["db"], r["table"], r["version"]) for r in listing] == [("db", "people", 1)]


@pytest.mark.slow  # four CLI processes: ~30 s on two busy cores
def test_concurrent_appends_to_one_s3_table_all_commit(s3_session, s3_server, tmp_path):
    """4 processes x 5 ``save append`` at once to one S3 Delta table: deltalake commits with a
    put-if-absent of the next log entry (the server honours ``If-None-Match``), so each of the 20
    appends gets its own version and no row is lost."""
    import os
    import subprocess
    import sys

    s3_session.execute("select 0 as writer, 0 as i as t0; save overwrite t0 as delta.`db.shared`;")
    script = tmp_path / "append.mlsql"
    script.write_text("".join(f"select cast(${{writer}} as int) as writer, {i} as i as t{i};\n"
                              f"save append t{i} as delta.`db.shared`;\n" for i in range(1, 6)))
    warehouse = f"s3://{BUCKET}/{s3_session.prefix}"
    writers = [subprocess.Popen([sys.executable, "-m", "mlsql_ray", "run", str(script), "--warehouse", warehouse,
                                 "--set", f"writer={w}"], env=os.environ.copy(), cwd=tmp_path,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for w in range(1, 5)]
    outputs = [(w.communicate(timeout=240)[0], w.returncode) for w in writers]
    assert [code for _, code in outputs] == [0] * 4, outputs
    got = rows(s3_session, "load delta.`db.shared` as s; "
                           "select writer, sort_array(collect_list(i)) as i from s group by writer order by writer as out;")
    assert got == [{"writer": 0, "i": [0]}] + [{"writer": w, "i": [1, 2, 3, 4, 5]} for w in range(1, 5)]
    history = s3_session.execute("!delta history db.shared;")[-1].table.to_pylist()
    assert sorted(h["version"] for h in history) == list(range(1, 21))  # the newest 20 (a result shows 20 rows)
    logs = [k for k in s3_server.keys(f"{s3_session.prefix}/db/shared/_delta_log/") if k.endswith(".json")]
    assert len(logs) == 21


@pytest.mark.parametrize("fmt", ["parquet", "csv", "json"])
def test_files_save_and_load_on_s3(s3_session, s3_server, fmt):
    options = ' where header="true"' if fmt == "csv" else ""
    uri = f"s3://{BUCKET}/{s3_session.prefix}/out.{fmt}"
    s3_session.execute(f"select 1 as id, 'a' as name union all select 2, 'b' as t; save overwrite t as {fmt}.`{uri}`{options};")
    first = s3_server.keys(f"{s3_session.prefix}/out.{fmt}/")
    assert len(first) == 1 and first[0].endswith(f".{fmt}")
    s3_session.execute(f"select 3 as id, 'c' as name as u; save append u as {fmt}.`{uri}`{options};")
    assert len(s3_server.keys(f"{s3_session.prefix}/out.{fmt}/")) == 2
    got = rows(s3_session, f"load {fmt}.`{uri}`{options} as back; select cast(id as int) as id, name from back order by id as out;")
    assert got == [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}, {"id": 3, "name": "c"}]
    s3_session.execute(f"select 9 as id, 'z' as name as v; save overwrite v as {fmt}.`{uri}`{options};")
    assert len(s3_server.keys(f"{s3_session.prefix}/out.{fmt}/")) == 1
    assert rows(s3_session, f"load {fmt}.`{uri}`{options} as again; select cast(id as int) as id from again as out;") == [{"id": 9}]
    with pytest.raises(MLSQLError, match="already exists"):
        s3_session.execute(f"save errorifexists v as {fmt}.`{uri}`;")


def test_partitioned_parquet_and_text_on_s3(s3_session, s3_server):
    uri = f"s3://{BUCKET}/{s3_session.prefix}/parts"
    s3_session.execute(f"select 1 as id, 'x' as k union all select 2, 'y' as t; save overwrite t as parquet.`{uri}` partitionBy k;")
    assert any("/k=x/" in key for key in s3_server.keys(f"{s3_session.prefix}/parts/"))
    assert rows(s3_session, f"load parquet.`{uri}` as p; select id, k from p order by id as out;") == [
        {"id": 1, "k": "x"}, {"id": 2, "k": "y"}]
    s3_server.client().put_object(Bucket=BUCKET, Key=f"{s3_session.prefix}/notes.txt", Body=b"one\ntwo\n")
    got = rows(s3_session, f"load text.`s3://{BUCKET}/{s3_session.prefix}/notes.txt` as t; select value from t as out;")
    assert got == [{"value": "one"}, {"value": "two"}]


def test_missing_object_is_a_clear_error(s3_session):
    with pytest.raises(MLSQLError, match=r"no such file.*s3://mlsql-test/nowhere"):
        s3_session.execute(f"load parquet.`s3://{BUCKET}/nowhere` as t;")
    with pytest.raises(MLSQLError, match="Delta table db.none does not exist"):
        s3_session.execute("load delta.`db.none` as t;")


def test_fs_commands_on_s3(s3_session, s3_server, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "hello.txt").write_text("hello s3\n")
    base = f"s3://{BUCKET}/{s3_session.prefix}"
    s3_session.execute(f"!fs -mkdir -p {base}/docs;")
    s3_session.execute(f"!fs -put hello.txt {base}/docs;")
    assert s3_server.keys(f"{s3_session.prefix}/docs/") == [f"{s3_session.prefix}/docs/hello.txt"]
    listing = s3_session.execute(f"!fs -ls -F {base}/docs;")[-1].table.to_pylist()
    assert [(r["name"], r["length"], r["path"]) for r in listing] == [("hello.txt", "9", f"{base}/docs/hello.txt")]
    assert s3_session.execute(f"!fs -cat {base}/docs/hello.txt;")[-1].table.column("fileSystem").to_pylist() == ["hello s3\n"]
    s3_session.execute(f"!fs -get {base}/docs/hello.txt back.txt;")
    assert (tmp_path / "back.txt").read_text() == "hello s3\n"
    with pytest.raises(MLSQLError, match="File exists"):
        s3_session.execute(f"!fs -get {base}/docs/hello.txt back.txt;")
    with pytest.raises(MLSQLError, match="Is a directory"):
        s3_session.execute(f"!fs -rm {base}/docs;")
    s3_session.execute(f"!fs -rmr {base}/docs;")
    assert s3_server.keys(f"{s3_session.prefix}/docs") == []
    with pytest.raises(MLSQLError, match="No such file or directory"):
        s3_session.execute(f"!fs -cat {base}/docs/hello.txt;")
    with pytest.raises(MLSQLError, match="outside the folders"):  # the local side is still confined
        s3_session.execute(f"!fs -get {base}/x /etc/passwd-copy;")


def test_hadoop_s3a_settings_give_the_credentials(s3_server, monkeypatch, tmp_path):
    """No AWS keys nor endpoint in the environment: Byzer's ``set "fs.s3a.*" where type="conf"``
    give them (the endpoint as Hadoop writes it, a bare host:port), for the warehouse and for
    paths alike; the secret is never shown."""
    for key in ("AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_ALLOW_HTTP"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("AWS_REGION", s3.REGION)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    host = s3_server.endpoint.removeprefix("http://")
    settings = (f'set `fs.s3a.endpoint`="{host}" where type="conf";'
                'set `fs.s3a.connection.ssl.enabled`="false" where type="conf";'
                'set `fs.s3a.path.style.access`="true" where type="conf";'
                f'set `fs.s3a.access.key`="{s3.ACCESS_KEY}" where type="conf";')
    with Session(warehouse=f"s3://{BUCKET}/wh-conf") as session:
        session.execute(settings + f'set `fs.s3a.secret.key`="{s3.SECRET_KEY}" where type="conf";')
        session.execute("select 7 as n as t; save overwrite t as delta.`db.conf_made`;"
                        f"save overwrite t as parquet.`s3://{BUCKET}/conf-made/t`;")
        assert rows(session, "load delta.`db.conf_made` as d; select n from d as out;") == [{"n": 7}]
        assert rows(session, f"load parquet.`s3://{BUCKET}/conf-made/t` as p; select n from p as out;") == [{"n": 7}]
        shown = session.execute("!show conf list;")[-1].table.to_pylist()
        values = {r["name"]: r["value"] for r in shown}
        assert values["fs.s3a.secret.key"] == "***" and values["fs.s3a.endpoint"] == host
        assert s3.SECRET_KEY not in repr(session.warehouse) + str(session.warehouse)
        # moto takes any key: that the settings, not the environment, gave them shows here
        assert {k: v for k, v in session.warehouse.storage_options().items() if k.startswith("AWS_")} == {
            "AWS_ACCESS_KEY_ID": s3.ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": s3.SECRET_KEY, "AWS_REGION": s3.REGION,
            "AWS_ENDPOINT_URL": s3_server.endpoint, "AWS_ALLOW_HTTP": "true", "AWS_VIRTUAL_HOSTED_STYLE_REQUEST": "false"}
    assert s3_server.keys("wh-conf/db/conf_made/_delta_log/")


def test_a_secret_in_a_quoted_hadoop_name_is_masked():
    from mlsql_ray.masking import mask

    assert mask('set `fs.s3a.secret.key`="abc" where type="conf";') == 'set `fs.s3a.secret.key`="***" where type="conf";'
    assert mask('set fs.s3a.secret.key="abc" where type="conf";') == 'set fs.s3a.secret.key="***" where type="conf";'
    assert mask("load parquet.`s3a://b/p` where `fs.s3a.access.key`='AK' as t;") == \
        "load parquet.`s3a://b/p` where `fs.s3a.access.key`='***' as t;"


def test_include_a_script_stored_on_s3(s3_session, s3_server):
    key = f"{s3_session.prefix}/scripts/make.mlsql"
    s3_server.client().put_object(Bucket=BUCKET, Key=key, Body=b"select 41 + 1 as answer as made;\n")
    assert rows(s3_session, f"include local.`s3://{BUCKET}/{key}`; select answer from made as out;") == [{"answer": 42}]
    with pytest.raises(MLSQLError, match="no such file"):
        s3_session.execute(f"include local.`s3://{BUCKET}/{s3_session.prefix}/scripts/none.mlsql`;")
    broken = f"{s3_session.prefix}/scripts/broken.mlsql"
    s3_server.client().put_object(Bucket=BUCKET, Key=broken, Body=b"select 1 as one as fine;\nselect nope from fine as bad;\n")
    with pytest.raises(MLSQLError) as error:
        s3_session.execute(f"include local.`s3://{BUCKET}/{broken}`;")
    assert error.value.source == f"s3://{BUCKET}/{broken}" and error.value.line == 2


def test_warehouse_uri_from_the_environment():
    """``$MLSQL_WAREHOUSE`` may be a URI (Hadoop's s3a:// is S3); its options come from the AWS
    variables and are never shown."""
    from mlsql_ray.config import resolve

    config = resolve(environ={"MLSQL_WAREHOUSE": "s3a://bucket/wh/", "AWS_ACCESS_KEY_ID": "AK",
                              "AWS_SECRET_ACCESS_KEY": "SK-hidden", "AWS_ENDPOINT_URL": "http://h:9"})
    assert str(config.warehouse) == "s3://bucket/wh"
    assert config.warehouse.storage_options() == {"AWS_ACCESS_KEY_ID": "AK", "AWS_SECRET_ACCESS_KEY": "SK-hidden",
                                                  "AWS_ENDPOINT_URL": "http://h:9", "AWS_ALLOW_HTTP": "true"}
    assert "SK-hidden" not in repr(config.warehouse)
    assert str(config.warehouse / "db" / "t") == "s3://bucket/wh/db/t"


def test_a_source_that_reads_local_files_only_says_so(s3_session):
    with pytest.raises(MLSQLError, match="on object storage, which this statement cannot read"):
        s3_session.execute(f'load image.`s3://{BUCKET}/pictures` as t;')


def test_excel_workbooks_save_and_load_on_s3(s3_session):
    book = f"s3://{BUCKET}/{s3_session.prefix}/books/sales.xlsx"
    s3_session.execute(f"""select 1 as id, 'a' as name union all select 2, 'b' as sales;
        save overwrite sales as excel.`{book}` where header="true";""")
    assert rows(s3_session, f'load excel.`{book}` where header="true" and inferSchema="true" as back; select * from back as out;') \
        == [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}]
    with pytest.raises(MLSQLError, match="already exists"):
        s3_session.execute(f'save sales as excel.`{book}` where header="true";')
    with pytest.raises(MLSQLError, match="no such file"):
        s3_session.execute(f'load excel.`{book}x` where header="true" as t;')


def test_model_tables_on_s3_write_read_and_keep_versions(s3_session):
    """A train's model table in an S3 warehouse (written and read as ``train``/``register`` do,
    without training: the training itself is Ray's and tested elsewhere): both versions kept
    with keepVersion, only the newest without."""
    from mlsql_ray.ml import store
    from mlsql_ray.storage import delta

    path = delta.table_path(s3_session.warehouse, "ai.model", {})
    group = store.StoredGroup(0, "RandomForest", "success", {"metrics": {"f1": 0.9}}, data=b"model-bytes" * 100)
    assert store.write(path, "ai.model", [group], keep_version=True) == 0
    assert store.write(path, "ai.model", [group], keep_version=True) == 1
    assert store.kept_versions(path, "ai.model") == [0, 1]
    assert store.write(path, "ai.model", [group], keep_version=False) == 2
    assert store.kept_versions(path, "ai.model") == [2]
    version, groups = store.read(path, "ai.model")  # the vacuum committed versions 3 and 4
    assert version == 4 and [(g.alg, g.data) for g in groups] == [("RandomForest", b"model-bytes" * 100)]


def test_delta_at_an_s3_path_and_the_path_travels_to_a_worker(s3_session, s3_server):
    """``where mode="path"`` with a URI; the path a worker would get (pickled) opens there too."""
    import pickle

    from mlsql_ray.storage import delta

    uri = f"s3://{BUCKET}/{s3_session.prefix}/by-path"
    s3_session.execute(f'select 5 as v as t; save overwrite t as delta.`{uri}` where mode="path";')
    assert rows(s3_session, f'load delta.`{uri}` where mode="path" as d; select v from d as out;') == [{"v": 5}]
    path = pickle.loads(pickle.dumps(delta.table_path(s3_session.warehouse, uri, {"mode": "path"})))
    assert delta.arrow_dataset(delta.open_table(path, uri), path).to_table().to_pylist() == [{"v": 5}]


def test_paths_with_the_same_options_share_one_filesystem(s3_env):
    from mlsql_ray.objectstore import resolve

    table, other_key = resolve(f"s3://{s3.BUCKET}/a/b"), resolve(f"s3://{s3.BUCKET}/c")
    assert table.filesystem() is other_key.filesystem()
    assert resolve(f"s3://{s3.BUCKET}/a", {"fs.s3a.access.key": "other"}).filesystem() is not table.filesystem()


def test_a_parquet_file_replaced_on_s3_is_read_anew_not_from_a_workers_cache(s3_session, s3_server, ray_runtime):
    """A parquet file on S3 that another tool overwrites under the same name with as many rows:
    the next run's plan differs (the file's size and Last-Modified are in it), so a process that
    read the old plan (a warm worker's read cache) reads the new rows; a plan made before the
    file changed is refused rather than read half old, half new."""
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq

    from mlsql_ray.cells.partitions import plan

    key = f"{s3_session.prefix}/replaced.parquet"

    def run(values: list[str]) -> list:
        body = io.BytesIO()
        pq.write_table(pa.table({"v": values}), body)
        s3_server.client().put_object(Bucket=BUCKET, Key=key, Body=body.getvalue())
        s3_session.execute(f"load parquet.`s3://{BUCKET}/{key}` as p;")
        return plan(s3_session, "p", 1)

    [(first, _)] = run(["a", "b", "c"])
    assert first.read().column("v").to_pylist() == ["a", "b", "c"]
    [(second, _)] = run(["a new a", "a new b", "a new c"])  # as many rows, the same schema
    assert second != first
    assert second.read().column("v").to_pylist() == ["a new a", "a new b", "a new c"]
    with pytest.raises(MLSQLError, match=r"the input file .*/replaced\.parquet changed while the cell read it"):
        first.count()  # read past the cache


def test_tables_on_s3_reach_workers_as_files_to_read(s3_session, ray_runtime):
    """Issue 26 item 2: a parquet load and a Delta table on S3 become, for a cell's or a train's
    workers, descriptions of what to read (``FileRows`` of the store's files, the rows a filter
    keeps counted without reading them here), not rows shipped through Ray's object store. A Ray
    worker of this run, started without this process's AWS variables, reads its partition from
    the store itself with the options the description carries."""
    from mlsql_ray.cells.partitions import FileRows, FragmentRows, plan

    uri = f"s3://{BUCKET}/{s3_session.prefix}/points"
    s3_session.execute(f"select id, id * 2 as v from (select explode(sequence(0, 99)) as id) s as t;"
                       f"save overwrite t as parquet.`{uri}`; save overwrite t as delta.`db.points`;"
                       f"load parquet.`{uri}` as p; select id, v + 1 as w from p where id % 3 = 0 as kept;"
                       "load delta.`db.points` as d;")

    @ray_runtime.remote
    def read(partition):
        import os

        return partition.read().to_pylist(), os.environ.get("AWS_ENDPOINT_URL")

    for name, expected in [("kept", [{"id": i, "w": 2 * i + 1} for i in range(0, 100, 3)]),
                           ("d", [{"id": i, "v": 2 * i} for i in range(100)])]:
        plans = plan(s3_session, name, 2)
        assert [type(p) for p, _ in plans] == [FileRows, FileRows]
        pieces = [piece for p, _ in plans for piece in p.pieces]
        assert all(isinstance(piece, FragmentRows) for piece in pieces)
        assert {getattr(piece.filesystem, "base_fs", piece.filesystem).type_name for piece in pieces} == {"s3"}
        read_back = ray_runtime.get([read.remote(p) for p, _ in plans])
        assert [env for _, env in read_back] == [None, None]  # the worker has no AWS variables of its own
        assert [len(part) for part, _ in read_back] == [n for _, n in plans]
        assert sorted((row for part, _ in read_back for row in part), key=lambda r: r["id"]) == expected

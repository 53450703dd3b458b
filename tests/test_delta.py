"""The Delta warehouse: names → paths, save modes, time travel, upserts and the !delta commands.

Every table is checked with plain ``deltalake.DeltaTable`` too, the way any other Delta reader
would see it.
"""

from __future__ import annotations

import os
import shutil
import time
from collections import Counter
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable

from mlsql_ray import MLSQLError, Session

TEST = Path(__file__).resolve().parent.parent / "sample_data" / "mnist" / "test.parquet"

ITEMS = pa.table({
    "id": pa.array([1, 2, 3, 4, 5], pa.int64()),
    "name": ["a", "b", "c", "d", "e"],
    "qty": pa.array([10, 20, 30, 40, 50], pa.int64()),
})


def run(session: Session, text: str):
    return session.execute(text)


def rows(table: pa.Table, key: str = "id") -> list[dict]:
    return sorted(table.to_pylist(), key=lambda r: r[key])


def on_disk(path: Path) -> list[dict]:
    """The table as any Delta reader sees it."""
    return rows(DeltaTable(str(path)).to_pyarrow_table())


def tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*")) if root.exists() else []


@pytest.fixture
def items(session: Session, tmp_path: Path) -> Path:
    """ITEMS loaded as `items`, plus `first2` (ids 1-2) and `rest` (ids 3-5)."""
    path = tmp_path / "items.parquet"
    pq.write_table(ITEMS, path)
    run(session, f"""
        load parquet.`{path}` as items;
        select * from items where id <= 2 as first2;
        select * from items where id > 2 as rest;
    """)
    return path


# -- names ----------------------------------------------------------------------------------------


def test_db_dot_table_lives_in_the_warehouse(session, warehouse, items):
    [result] = run(session, "save items as delta.`shop.items`;")
    path = warehouse / "shop" / "items"
    assert (path / "_delta_log").is_dir()
    assert on_disk(path) == rows(ITEMS)
    assert result.version == 0 and result.num_rows == ITEMS.num_rows
    run(session, "load delta.`shop.items` as back;")
    assert rows(session.table("back")) == rows(ITEMS)


def test_bare_name_is_in_default(session, warehouse, items):
    run(session, "save items as delta.`loose`; load delta.`loose` as back;")
    assert on_disk(warehouse / "default" / "loose") == rows(ITEMS)
    assert rows(session.table("back")) == rows(ITEMS)


def test_unquoted_dotted_name(session, warehouse, items):
    run(session, "save items as delta.shop.plain; load delta.shop.plain as back;")
    assert on_disk(warehouse / "shop" / "plain") == rows(ITEMS)


@pytest.mark.parametrize("name", [
    "../x", "../../etc/x", "a/b", "/abs/path", "a.b.c", "\u0430bc", "db.t\u0430ble", "", ".x", "x.", "a b", "a..b",
    "db.${x}",
])
def test_bad_names_are_refused_and_nothing_is_written(session, warehouse, tmp_path, items, name):
    session.variables["x"] = "../../escape"
    before = tree(tmp_path)
    with pytest.raises(MLSQLError, match="Delta table name"):
        run(session, f"save items as delta.`{name}`;")
    with pytest.raises(MLSQLError, match="Delta table name"):
        run(session, f"load delta.`{name}` as t;")
    with pytest.raises(MLSQLError, match="Delta table name|usage"):  # "a b" is two arguments
        run(session, f"!delta history {name or '``'};")
    assert tree(tmp_path) == before
    assert not warehouse.exists()
    assert "t" not in session.catalog


def test_mode_path_takes_an_explicit_path(session, warehouse, tmp_path, items):
    target = tmp_path / "elsewhere" / "tbl"
    run(session, f'save items as delta.`{target}` where mode="path"; load delta.`{target}` where mode="path" as back;')
    assert on_disk(target) == rows(ITEMS)
    assert rows(session.table("back")) == rows(ITEMS)
    assert not warehouse.exists()


def test_variables_in_delta_names(session, warehouse, items):
    run(session, 'set db = "sales"; set tbl = "orders"; save items as delta.`${db}.${tbl}`; load delta.`${db}.${tbl}` as back;')
    assert on_disk(warehouse / "sales" / "orders") == rows(ITEMS)
    assert rows(session.table("back")) == rows(ITEMS)


def test_load_of_missing_table(session, warehouse):
    with pytest.raises(MLSQLError, match="nope.never.*does not exist"):
        run(session, "load delta.`nope.never` as t;")
    assert not (warehouse / "nope").exists()


# -- save modes -------------------------------------------------------------------------------------


def test_save_modes(session, warehouse, items):
    path = warehouse / "db" / "t"
    run(session, "save first2 as delta.`db.t`;")
    assert on_disk(path) == rows(ITEMS.slice(0, 2))

    results = run(session, "save ignore rest as delta.`db.t`;")
    assert "nothing written" in results[-1].message
    assert DeltaTable(str(path)).version() == 0

    run(session, "save append rest as delta.`db.t`;")
    assert on_disk(path) == rows(ITEMS)
    assert DeltaTable(str(path)).version() == 1

    run(session, "save overwrite rest as delta.`db.t`;")
    assert on_disk(path) == rows(ITEMS.slice(2))
    assert DeltaTable(str(path)).version() == 2


@pytest.mark.parametrize("mode", ["", "errorIfExists "])
def test_error_if_exists_keeps_the_table(session, warehouse, items, mode):
    path = warehouse / "db" / "t"
    run(session, "save first2 as delta.`db.t`;")
    with pytest.raises(MLSQLError, match="already exists") as info:
        run(session, f"select 1 as a as fine;\n save {mode}rest as delta.`db.t`;")
    assert (info.value.line, info.value.column) == (2, 2)
    table = DeltaTable(str(path))
    assert table.version() == 0
    assert rows(table.to_pyarrow_table()) == rows(ITEMS.slice(0, 2))
    run(session, "load delta.`db.t` as back;")  # still readable by the engine, too
    assert rows(session.table("back")) == rows(ITEMS.slice(0, 2))


def test_schema_mismatch_on_append_changes_nothing(session, warehouse, items):
    path = warehouse / "db" / "t"
    run(session, "save items as delta.`db.t`; select id, cast(qty as string) as qty, 'extra' as other from items as odd;")
    with pytest.raises(MLSQLError, match="schema") as info:
        run(session, "save append odd as delta.`db.t`;")
    assert "\n" not in info.value.message
    assert DeltaTable(str(path)).version() == 0
    assert on_disk(path) == rows(ITEMS)
    run(session, "select count(*) as n from items as alive;")  # the session goes on
    assert session.table("alive").to_pylist() == [{"n": ITEMS.num_rows}]


@pytest.mark.parametrize("written", ["true", "TRUE", " True "])
def test_merge_schema_on_append_adds_the_column_however_true_is_written(session, warehouse, items, written):
    """mergeSchema is a boolean as every option is (Scala's toBoolean: any case, around blanks);
    it was read as the exact text "true" only."""
    run(session, "save items as delta.`db.t`; select id, name, qty, 'x' as other from items as wider;")
    run(session, f'save append wider as delta.`db.t` where mergeSchema="{written}";')
    table = DeltaTable(str(warehouse / "db" / "t"))
    assert [f.name for f in table.schema().fields] == ["id", "name", "qty", "other"]
    assert table.to_pyarrow_table().num_rows == 2 * ITEMS.num_rows


def test_overwrite_a_table_from_its_own_lazy_load(session, warehouse, items):
    path = warehouse / "db" / "t"
    run(session, "save items as delta.`db.t`; load delta.`db.t` as t; save append t as delta.`db.t`;")
    assert on_disk(path) == rows(pa.concat_tables([ITEMS, ITEMS]))
    run(session, "load delta.`db.t` as t; save overwrite t as delta.`db.t`;")
    assert on_disk(path) == rows(pa.concat_tables([ITEMS, ITEMS]))
    assert DeltaTable(str(path)).version() == 2


def test_overwrite_a_table_from_a_lazy_select_over_it(session, warehouse, items):
    """Spark refuses "overwrite a path that is also being read from"; here it is safe: the select
    streams the loaded version's files, which an overwrite only marks removed, so each row is
    transformed exactly once and the old version stays readable."""
    path = warehouse / "db" / "t"
    run(session, "save items as delta.`db.t`; load delta.`db.t` as t; "
                 "select id, name, id * 10 as tenfold from t as u; save overwrite u as delta.`db.t`;")
    expected = rows(ITEMS.select(["id", "name"]).append_column("tenfold", pa.array([i * 10 for i in ITEMS["id"].to_pylist()])))
    assert on_disk(path) == expected
    assert rows(session.table("u")) == expected  # still the select over version 0
    assert rows(DeltaTable(str(path), version=0).to_pyarrow_table()) == rows(ITEMS)


def test_overwrite_can_change_the_schema(session, warehouse, items):
    run(session, "save items as delta.`db.t`; select id, name from items as narrow; save overwrite narrow as delta.`db.t`;")
    table = DeltaTable(str(warehouse / "db" / "t"))
    assert [f.name for f in table.schema().fields] == ["id", "name"]
    assert rows(table.to_pyarrow_table()) == rows(ITEMS.select(["id", "name"]))


def test_save_of_unknown_table_writes_nothing(session, warehouse):
    with pytest.raises(MLSQLError, match="ghost"):
        run(session, "save ghost as delta.`db.t`;")
    assert not warehouse.exists()


# -- partitions and types --------------------------------------------------------------------------------


def test_partition_by(session, warehouse):
    labels = pq.read_table(TEST, columns=["label"]).column("label").to_pylist()
    run(session, f"load parquet.`{TEST}` as m; save m as delta.`mnist.by_label` partitionBy label; load delta.`mnist.by_label` as back;")
    table = DeltaTable(str(warehouse / "mnist" / "by_label"))
    assert table.metadata().partition_columns == ["label"]
    assert sorted(p.name for p in (warehouse / "mnist" / "by_label").iterdir() if p.name != "_delta_log") == \
        sorted(f"label={v}" for v in set(labels))
    assert Counter(session.table("back").column("label").to_pylist()) == Counter(labels)
    run(session, "select count(*) as n from back where label = 3 as threes;")
    assert session.table("threes").to_pylist() == [{"n": labels.count(3)}]


def test_partition_by_unknown_column(session, warehouse, items):
    with pytest.raises(MLSQLError, match="nosuch"):
        run(session, "save items as delta.`db.t` partitionBy nosuch;")
    assert not (warehouse / "db" / "t" / "_delta_log").exists()


def test_uint8_values_survive(session, warehouse, tmp_path):
    path = tmp_path / "bytes.parquet"
    values = pa.array([0, 1, 127, 128, 254, 255], pa.uint8())
    pq.write_table(pa.table({
        "b": values,
        "img": pa.FixedSizeListArray.from_arrays(pa.array([255, 0] * 6, pa.uint8()), 2),
    }), path)
    run(session, f"load parquet.`{path}` as bytes; save bytes as delta.`db.bytes`; load delta.`db.bytes` as back;")
    expected_b = values.to_pylist()
    assert session.table("back").column("b").to_pylist() == expected_b
    assert session.table("back").column("img").to_pylist() == [[255, 0]] * 6
    plain = DeltaTable(str(warehouse / "db" / "bytes")).to_pyarrow_table()
    assert plain.column("b").to_pylist() == expected_b


def test_mnist_round_trip(session, warehouse):
    source = pq.read_table(TEST)
    run(session, f"load parquet.`{TEST}` as m; save m as delta.`mnist.test`; load delta.`mnist.test` as back;")
    back = session.table("back")
    assert back.num_rows == source.num_rows
    assert back.column("image").to_pylist() == source.column("image").to_pylist()
    assert back.column("label").to_pylist() == source.column("label").to_pylist()


# -- lazy loads -------------------------------------------------------------------------------------------


def test_delta_load_is_lazy(session, warehouse, items):
    run(session, "save items as delta.`db.t`; load delta.`db.t` as t;")
    listing = {r["name"]: r for r in run(session, "!show tables;")[0].table.to_pylist()}
    assert listing["t"]["kind"] == "lazy"
    for part in (warehouse / "db" / "t").glob("*.parquet"):
        part.unlink()  # an eager load would still have every row in memory
    run(session, "select sum(qty) as s from t as total;")  # lazy too: nothing is read yet
    with pytest.raises(MLSQLError, match=r"reading the stream registered as 't' failed: .*No such file or directory"):
        session.table("total")
    run(session, "select 1 as one as ok;")
    assert session.table("ok").to_pylist() == [{"one": 1}]


def test_loaded_version_is_a_snapshot(session, warehouse, items):
    run(session, "save first2 as delta.`db.t`; load delta.`db.t` as t; save append rest as delta.`db.t`;")
    run(session, "select count(*) as n from t as c;")
    assert session.table("c").to_pylist() == [{"n": 2}]


# -- time travel --------------------------------------------------------------------------------------------


@pytest.fixture
def three_versions(session, warehouse, items) -> Path:
    """db.t at version 0: ids 1-2; 1: ids 1-5 (append); 2: ids 3-5 (overwrite)."""
    for statement in ("save first2 as delta.`db.t`;", "save append rest as delta.`db.t`;",
                      "save overwrite rest as delta.`db.t`;"):
        run(session, statement)
        time.sleep(0.02)  # distinct commit timestamps (they are in milliseconds)
    return warehouse / "db" / "t"


@pytest.mark.parametrize("version, expected", [("0", ITEMS.slice(0, 2)), ("1", ITEMS), ("2", ITEMS.slice(2))])
def test_version(session, three_versions, version, expected):
    run(session, f'load delta.`db.t` where version="{version}" as v;')
    assert rows(session.table("v")) == rows(expected)


def test_latest_version_by_default(session, three_versions):
    run(session, "load delta.`db.t` as v;")
    assert rows(session.table("v")) == rows(ITEMS.slice(2))


def test_missing_version(session, three_versions):
    with pytest.raises(MLSQLError, match="no version 7.*latest is 2"):
        run(session, 'load delta.`db.t` where version="7" as v;')
    with pytest.raises(MLSQLError, match="whole number"):
        run(session, 'load delta.`db.t` where version="one" as v;')


def _commit_time(path: Path, version: int) -> datetime:
    [entry] = [h for h in DeltaTable(str(path)).history() if h["version"] == version]
    return datetime.fromtimestamp(entry["timestamp"] / 1000, tz=timezone.utc)


def test_timestamp_as_of(session, three_versions):
    at_v1 = _commit_time(three_versions, 1)
    run(session, f'load delta.`db.t` where timestampAsOf="{at_v1.isoformat()}" as v;')
    assert rows(session.table("v")) == rows(ITEMS)
    between = at_v1 + (_commit_time(three_versions, 2) - at_v1) / 2
    run(session, f'load delta.`db.t` where timestampAsOf="{between.isoformat()}" as w;')
    assert rows(session.table("w")) == rows(ITEMS)


def test_timestamp_as_of_survives_a_copy_of_the_warehouse(session, three_versions, tmp_path):
    """A copy gives the log files new modification times; the commit times inside them stay."""
    copy = tmp_path / "copied_wh"
    time.sleep(0.05)
    shutil.copytree(session.warehouse, copy, copy_function=shutil.copyfile)
    at_v1 = _commit_time(three_versions, 1)
    with Session(warehouse=copy) as other:
        run(other, f'load delta.`db.t` where timestampAsOf="{at_v1.isoformat()}" as v;')
        assert rows(other.table("v")) == rows(ITEMS)


def test_timestamp_as_of_naive_means_local_time(session, three_versions):
    at_v0 = _commit_time(three_versions, 0).astimezone().replace(tzinfo=None)
    run(session, f'load delta.`db.t` where timestampAsOf="{at_v0.isoformat(sep=" ")}" as v;')
    assert rows(session.table("v")) == rows(ITEMS.slice(0, 2))


def test_timestamp_before_the_table(session, three_versions):
    before = _commit_time(three_versions, 0) - timedelta(days=1)
    with pytest.raises(MLSQLError, match="no version at or before"):
        run(session, f'load delta.`db.t` where timestampAsOf="{before.isoformat()}" as v;')
    with pytest.raises(MLSQLError, match="timestampAsOf"):
        run(session, 'load delta.`db.t` where timestampAsOf="last tuesday" as v;')


# -- upserts --------------------------------------------------------------------------------------------------


def test_id_cols_upsert(session, warehouse, items):
    path = warehouse / "db" / "t"
    run(session, """
        save items as delta.`db.t`;
        select id, concat(name, '2') as name, qty + 1 as qty from items where id in (2, 4) as changed;
        select id + 10 as id, name, qty from items where id <= 3 as new_rows;
        select * from changed union all select * from new_rows as updates;
    """)
    [result] = run(session, 'save append updates as delta.`db.t` where idCols="id";')
    expected = {r["id"]: r for r in ITEMS.to_pylist()}
    for r in ITEMS.to_pylist():
        if r["id"] in (2, 4):
            expected[r["id"]] = {"id": r["id"], "name": r["name"] + "2", "qty": r["qty"] + 1}
        if r["id"] <= 3:
            expected[r["id"] + 10] = {**r, "id": r["id"] + 10}
    assert on_disk(path) == sorted(expected.values(), key=lambda r: r["id"])
    assert result.num_rows == 2 + 3  # updated + inserted
    assert result.version == 1
    assert DeltaTable(str(path)).history(1)[0]["operation"] == "MERGE"


def test_id_cols_on_two_columns_and_on_a_new_table(session, warehouse, items):
    path = warehouse / "db" / "pairs"
    run(session, """
        select id % 2 as k1, name as k2, qty from items as base;
        save base as delta.`db.pairs` where idCols="k1,k2";
        select 1 as k1, 'a' as k2, 999 as qty union all select 0 as k1, 'a' as k2, 7 as qty as up;
    """)
    assert DeltaTable(str(path)).version() == 0  # a new table is simply written
    run(session, 'save append up as delta.`db.pairs` where idCols="k1, k2";')
    got = {(r["k1"], r["k2"]): r["qty"] for r in DeltaTable(str(path)).to_pyarrow_table().to_pylist()}
    expected = {(r["id"] % 2, r["name"]): r["qty"] for r in ITEMS.to_pylist()}
    expected[(1, "a")] = 999
    expected[(0, "a")] = 7
    assert got == expected


def test_id_cols_unknown_column(session, warehouse, items):
    run(session, "save items as delta.`db.t`;")
    with pytest.raises(MLSQLError, match="idCols.*nosuch"):
        run(session, 'save append items as delta.`db.t` where idCols="nosuch";')
    assert DeltaTable(str(warehouse / "db" / "t")).version() == 0


# -- !delta commands ---------------------------------------------------------------------------------------------


def test_delta_history(session, three_versions, items):
    run(session, 'save append first2 as delta.`db.t` where idCols="id";')  # version 3: a merge inserting 2 rows
    [result] = run(session, "!delta history db.t;")
    history = result.table.to_pylist()
    assert [h["version"] for h in history] == [3, 2, 1, 0]
    assert [h["operation"] for h in history] == ["MERGE", "WRITE", "WRITE", "WRITE"]
    assert [h["rows"] for h in history] == [2, 3, 3, 2]
    plain = {h["version"]: h for h in DeltaTable(str(three_versions)).history()}
    for h in history:
        assert h["timestamp"] == datetime.fromtimestamp(plain[h["version"]]["timestamp"] / 1000, tz=timezone.utc)


def test_delta_history_of_merge_counts_changed_rows(session, warehouse, items):
    run(session, """
        save items as delta.`db.t`;
        select id, name, qty * 2 as qty from items where id = 1 as one;
        save append one as delta.`db.t` where idCols="id";
    """)
    [result] = run(session, "!delta history db.t;")
    merge = result.table.to_pylist()[0]
    assert merge["operation"] == "MERGE"
    assert merge["rows"] == 1  # one row updated, not the whole rewritten file


def test_delta_info(session, warehouse):
    labels = pq.read_table(TEST, columns=["label"]).column("label")
    run(session, f"load parquet.`{TEST}` as m; save m as delta.`mnist.t` partitionBy label; save append m as delta.`mnist.t` partitionBy label;")
    [result] = run(session, "!delta info mnist.t;")
    facts = dict(zip(result.table.column("key").to_pylist(), result.table.column("value").to_pylist()))
    path = warehouse / "mnist" / "t"
    table = DeltaTable(str(path))
    assert facts["path"] == str(path)
    assert facts["version"] == "1"
    assert facts["rows"] == str(2 * len(labels))
    assert facts["partition_columns"] == "label"
    assert facts["files"] == str(len(table.file_uris()))
    assert "image" in facts["schema"] and "label" in facts["schema"]


def test_delta_show_tables(session, warehouse, items):
    run(session, "save items as delta.`a.one`; save items as delta.`two`; save append items as delta.`two`;")
    [result] = run(session, "!delta show tables;")
    assert sorted((r["db"], r["table"], r["version"]) for r in result.table.to_pylist()) == [
        ("a", "one", 0), ("default", "two", 1)]


def test_delta_show_tables_on_empty_warehouse(session, warehouse):
    [result] = run(session, "!delta show tables;")
    assert result.table.num_rows == 0
    assert not warehouse.exists()


def test_delta_command_errors(session, warehouse):
    with pytest.raises(MLSQLError, match="does not exist"):
        run(session, "!delta history db.none;")
    with pytest.raises(MLSQLError, match="usage"):
        run(session, "!delta vacuum db.t soon;")
    with pytest.raises(MLSQLError, match="does not exist"):
        run(session, "!delta vacuum db.none;")
    run(session, "select 1 as x as alive;")
    assert "alive" in session.catalog


# -- files an interrupted or killed save left ------------------------------------------------------

def last_written(file: Path, hours_ago: float) -> None:
    moment = time.time() - hours_ago * 3600
    os.utime(file, (moment, moment))


def leave_a_data_file(path: Path, hours_old: float) -> str:
    """What a save that died before its commit leaves: a data file no version refers to (here a
    copy of a real one, under a new writer's name), last written ``hours_old`` ago."""
    import uuid

    source = Path(DeltaTable(str(path)).file_uris()[0].removeprefix("file://"))
    name = f"part-00001-{uuid.uuid4()}-c000.snappy.parquet"
    shutil.copy(source, path / name)
    last_written(path / name, hours_old)
    return name


def test_the_next_save_deletes_the_files_an_interrupted_save_left(session, warehouse, items):
    run(session, "save overwrite first2 as delta.`db.t`; save overwrite rest as delta.`db.t`;")
    path = warehouse / "db" / "t"
    replaced = {Path(u).name for u in DeltaTable(str(path), version=0).file_uris()}
    for name in replaced:  # version 0's files are as old as the leftover: time travel still needs them
        last_written(path / name, 2)
    old = leave_a_data_file(path, hours_old=2)
    fresh = leave_a_data_file(path, hours_old=0)  # may be another writer's, not committed yet
    ancient = leave_a_data_file(path, hours_old=24 * 8)  # past the retention: !delta vacuum's business
    [result] = run(session, "save append first2 as delta.`db.t`;")
    assert result.message == ("saved 2 rows of first2 to delta.`db.t` (version 2, mode append; "
                              "deleted 1 data files an interrupted save had left)")
    assert not (path / old).exists()
    assert (path / fresh).exists() and (path / ancient).exists()
    assert all((path / name).exists() for name in replaced)
    assert rows(DeltaTable(str(path), version=0).to_pyarrow_table()) == rows(ITEMS.slice(0, 2))
    assert on_disk(path) == rows(pa.concat_tables([ITEMS.slice(2), ITEMS.slice(0, 2)]))
    [again] = run(session, "save append first2 as delta.`db.t`;")
    assert "deleted" not in again.message


def test_delta_vacuum_deletes_what_the_current_version_does_not_use(session, warehouse, items):
    run(session, "save overwrite first2 as delta.`db.t`; save overwrite rest as delta.`db.t`;")
    path = warehouse / "db" / "t"
    version0 = {Path(u).name for u in DeltaTable(str(path), version=0).file_uris()}
    left = leave_a_data_file(path, hours_old=0)
    [kept] = run(session, "!delta vacuum db.t;")  # Delta's default retention, 7 days: nothing is that old
    assert kept.table.num_rows == 0 and (path / left).exists()
    [result] = run(session, "!delta vacuum db.t 0;")
    assert sorted(result.table.column("file").to_pylist()) == sorted(version0 | {left})
    assert result.message == f"vacuumed db.t: {len(version0) + 1} files deleted"
    assert not (path / left).exists() and not any((path / name).exists() for name in version0)
    assert on_disk(path) == rows(ITEMS.slice(2))


@pytest.mark.parametrize("query", ["select 'x' as id, 'n' as name, 1L as qty",  # a value the column cannot hold
                                   "select 9L as id, 'n' as name, 1L as qty, 2 as extra"])  # a column the table lacks
def test_an_append_whose_schema_differs_says_so_and_keeps_the_version(session, warehouse, items, query):
    run(session, "save overwrite items as delta.`db.mismatch`;")
    version = DeltaTable(str(warehouse / "db" / "mismatch")).version()
    with pytest.raises(MLSQLError, match=r"Delta table db\.mismatch: the data's schema does not match the table's"):
        run(session, f"{query} as odd; save append odd as delta.`db.mismatch`;")
    assert DeltaTable(str(warehouse / "db" / "mismatch")).version() == version


def test_a_commit_another_writer_won_is_reported_as_a_concurrent_write():
    from deltalake.exceptions import CommitFailedError

    from mlsql_ray.storage.delta import _delta_message

    message = _delta_message("db.t", CommitFailedError("Failed to commit transaction: Commit failed: a concurrent transactions added new data."))
    assert message.startswith("Delta table db.t was changed by another writer at the same time")
    assert _delta_message("db.t", Exception("Commit failed: a concurrent thing")).startswith("cannot write to Delta table db.t: Commit")


@pytest.mark.parametrize("size", [0, 1, 64 * 1024, 7 * 64 * 1024 + 5])
def test_bytes_as_rows_survive_a_delta_table_across_several_arrow_arrays(warehouse, monkeypatch, size):
    """A model or a file is stored as rows of at most CHUNK_SIZE bytes; its bytes are cut into
    several Arrow arrays when they pass what one array addresses (2 GiB; three rows here)."""
    from mlsql_ray.storage import delta, rows as file_rows

    monkeypatch.setattr(file_rows, "_CHUNKS_PER_ARRAY", 3)
    data = os.urandom(size)
    table = file_rows.bytes_to_rows(data)
    assert table.column("value").num_chunks == -(-table.num_rows // 3)
    assert table.column("offset").to_pylist() == [len(v) for v in table.column("value").to_pylist()]
    delta.write(warehouse / "blob", "blob", table.to_reader(), "overwrite", (), {})
    assert file_rows.rows_to_bytes(DeltaTable(str(warehouse / "blob")).to_pyarrow_dataset().to_table()) == data

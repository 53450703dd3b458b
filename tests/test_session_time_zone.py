"""Issue 23, item 2: the session time zone (``set spark.sql.session.timeZone = "..." where
type="conf";``) governs every timestamp conversion, on the session's DuckDB and on a worker's
connection (``Session.connection_setup``), and timestamps reach Delta and parquet as UTC instants,
as Spark writes them."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import duckdb
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable

from mlsql_ray import MLSQLError, Session
from mlsql_ray.engine.timezone import duckdb_zone

LA = 'set spark.sql.session.timeZone = "America/Los_Angeles" where type="conf";'


@pytest.fixture
def session(tmp_path: Path):
    with Session(warehouse=tmp_path / "warehouse") as s:
        yield s


def _one(session: Session, sql: str):
    session.execute(f"select {sql} as v as one_value;")
    return session.table("one_value").column("v").to_pylist()[0]


def test_the_zone_decides_wall_times_both_ways(session):
    session.execute(LA)
    assert _one(session, "hour(timestamp'2020-01-01 00:00:00Z')") == 16
    assert _one(session, "unix_timestamp('2020-01-01 00:00:00')") == 1577865600  # 08:00 UTC
    session.execute('set spark.sql.session.timeZone = "Asia/Shanghai" where type="conf";')
    assert _one(session, "hour(timestamp'2020-01-01 00:00:00Z')") == 8
    assert _one(session, "unix_timestamp('2020-01-01 00:00:00')") == 1577808000  # 16:00 UTC the day before
    assert _one(session, "current_timezone()") == "Asia/Shanghai"


def test_offsets_and_aliases_name_zones_arrow_and_duckdb_know():
    assert duckdb_zone("+08:00") == "Etc/GMT-8"
    assert duckdb_zone("-5") == "Etc/GMT+5"
    assert duckdb_zone("UTC+8") == "Etc/GMT-8"
    assert duckdb_zone("Z") == duckdb_zone("+00:00") == "UTC"
    assert duckdb_zone("Europe/Paris") == "Europe/Paris"


def test_an_offset_sets_the_zone(session):
    session.execute('set spark.sql.session.timeZone = "+08:00" where type="conf";')
    assert _one(session, "hour(timestamp'2020-01-01 00:00:00Z')") == 8


def test_an_unknown_zone_is_the_users_error_with_its_line(session):
    with pytest.raises(MLSQLError, match="'Mars/Olympus' is not a time zone") as raised:
        session.execute('select 1 as a as t;\nset spark.sql.session.timeZone = "Mars/Olympus" where type="conf";')
    assert raised.value.line == 2
    with pytest.raises(MLSQLError, match="region id"):
        session.execute('set spark.sql.session.timeZone = "+05:30" where type="conf";')


def test_a_workers_connection_gets_the_session_zone(session):
    """cells.partitions runs a worker's query on a new connection set up with connection_setup."""
    session.execute(LA)
    worker = duckdb.connect()
    for statement in session.connection_setup:
        worker.execute(statement)
    assert worker.execute("select current_setting('TimeZone'), hour(TIMESTAMPTZ '2020-01-01 00:00:00+00')").fetchall() == [
        ("America/Los_Angeles", 16)]
    worker.close()


def test_timestamps_are_saved_as_utc_instants(session, tmp_path):
    session.execute(LA + """
select timestamp'2020-01-01 10:00:00' as ts as t;
save overwrite t as delta.`db.t`;
save overwrite t as parquet.`""" + str(tmp_path / "p") + "`;")
    delta = DeltaTable(str(next((tmp_path / "warehouse").rglob("_delta_log")).parent)).to_pyarrow_table()
    assert delta.schema.field("ts").type.tz == "UTC"
    instant = dt.datetime(2020, 1, 1, 18, tzinfo=dt.timezone.utc)
    assert delta.column("ts").to_pylist() == [instant]
    parquet = pq.read_table(tmp_path / "p")
    assert parquet.column("ts").to_pylist() == [instant]
    with Session(warehouse=tmp_path / "warehouse") as other:  # another zone reads the same instant
        other.execute('set spark.sql.session.timeZone = "UTC" where type="conf"; load delta.`db.t` as back;')
        other.execute("select cast(ts as string) as text from back as shown;")
        assert other.table("shown").column("text").to_pylist() == ["2020-01-01 18:00:00"]

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

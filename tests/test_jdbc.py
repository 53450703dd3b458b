"""connect / load jdbc / save jdbc against a real PostgreSQL server (tests/pg_server.py) and a
real SQLite file, through ADBC. Expected values come from psycopg (another client) reading the
same server, never from what the engine printed."""

from __future__ import annotations

import datetime as dt
import decimal

import psycopg
import pytest

import pg_server
from mlsql_ray import MLSQLError, Session


def pg(server, sql: str, params=None, fetch: bool = True):
    with psycopg.connect(host=server.host, port=server.port, user=pg_server.USER, password=pg_server.PASSWORD,
                         dbname=pg_server.DATABASE, autocommit=True) as con:
        cur = con.execute(sql, params)
        return cur.fetchall() if fetch and cur.description else None


def connect_text(server, alias: str = "pg") -> str:
    """The password comes from the ${pgpw} variable (as from --set), never written in the script."""
    return (f'connect jdbc where url="{server.jdbc_url}" and driver="org.postgresql.Driver" '
            f'and user="{pg_server.USER}" and password="${{pgpw}}" as {alias};\n')


@pytest.fixture
def db_session(postgres, warehouse):
    with Session(warehouse=warehouse, variables={"pgpw": pg_server.PASSWORD}) as s:
        s.execute(connect_text(postgres))
        yield s


@pytest.fixture
def typed_table(postgres):
    pg(postgres, "DROP TABLE IF EXISTS typed", fetch=False)
    pg(postgres, """CREATE TABLE typed (
        id integer, small smallint, big bigint, price numeric(10, 2), ratio double precision, name text,
        code varchar(8), at timestamp, at_tz timestamptz, day date, flag boolean, blob bytea,
        ints integer[], words text[])""", fetch=False)
    pg(postgres, """INSERT INTO typed VALUES
        (1, 2, 9000000000, 12.34, 0.5, 'ada', 'x1', '2024-01-02 03:04:05', '2024-01-02 03:04:05+02', '2024-01-02',
         true, '\\x00ff10', ARRAY[1, 2, 3], ARRAY['a', 'b']),
        (2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
        (3, -5, -1, -0.01, 1e10, 'Zoë ''quoted'' ;', 'y', '1999-12-31 23:59:59', '1999-12-31 23:59:59+00',
         '1999-12-31', false, '', ARRAY[]::integer[], ARRAY['c'])""", fetch=False)
    return "typed"


def _normalise(value):
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, (bytes, memoryview)):
        return bytes(value)
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        return value.astimezone(dt.timezone.utc)
    return value


def test_load_reads_every_common_type_as_postgres_has_it(db_session, postgres, typed_table):
    db_session.execute("load jdbc.`pg.typed` as t;")
    got = db_session.table("t").sort_by("id").to_pylist()
    expected = pg(postgres, "SELECT * FROM typed ORDER BY id")
    names = [c for c in db_session.table("t").column_names]
    assert names == ["id", "small", "big", "price", "ratio", "name", "code", "at", "at_tz", "day", "flag", "blob",
                     "ints", "words"]
    assert str(db_session.table("t").schema.field("price").type) == "decimal128(10, 2)"  # numeric(10, 2), as Spark reads it
    for row, want in zip(got, expected):
        assert [_normalise(row[n]) for n in names] == [_normalise(v) for v in want]


def test_save_round_trips_every_common_type(db_session, postgres, typed_table):
    db_session.execute("load jdbc.`pg.typed` as t; save overwrite t as jdbc.`pg.public.typed_copy`;")
    original = pg(postgres, "SELECT * FROM typed ORDER BY id")
    copied = pg(postgres, "SELECT * FROM public.typed_copy ORDER BY id")
    assert [[_normalise(v) for v in r] for r in copied] == [[_normalise(v) for v in r] for r in original]


def test_direct_query_runs_in_the_database(db_session, postgres, typed_table):
    db_session.execute("load jdbc.`pg.typed` where directQuery='''select id, upper(name) as shout from typed "
                       "where name is not null''' as q;")
    assert sorted(db_session.table("q").to_pylist(), key=lambda r: r["id"]) == [
        {"id": r[0], "shout": r[1]} for r in pg(postgres, "SELECT id, upper(name) FROM typed WHERE name IS NOT NULL ORDER BY id")]


@pytest.fixture
def numbers(postgres):
    pg(postgres, "DROP TABLE IF EXISTS numbers", fetch=False)
    pg(postgres, "CREATE TABLE numbers AS SELECT g AS id, g * 2 AS twice FROM generate_series(1, 1000) g", fetch=False)
    pg(postgres, "INSERT INTO numbers VALUES (NULL, -1)", fetch=False)
    return "numbers"


def test_partitioned_read_returns_every_row_once(db_session, postgres, numbers):
    db_session.execute('load jdbc.`pg.numbers` where partitionColumn="id" and lowerBound="150" and upperBound="500" '
                       'and numPartitions="4" as parts;')
    table = db_session.table("parts")
    ids = table.column("id").to_pylist()
    assert len(ids) == 1001 and sorted(i for i in ids if i is not None) == list(range(1, 1001)) and ids.count(None) == 1
    assert sum(table.column("twice").to_pylist()) == pg(postgres, "SELECT sum(twice) FROM numbers")[0][0]


def test_stride_split_follows_spark():
    from mlsql_ray.engine.datasources.jdbc import partition_predicates

    got = partition_predicates({"partitionColumn": "id", "lowerBound": "0", "upperBound": "100",
                                "numPartitions": "4"}, "postgres")
    assert got == ['"id" < 25 OR "id" IS NULL', '"id" >= 25 AND "id" < 50', '"id" >= 50 AND "id" < 75', '"id" >= 75']
    with pytest.raises(MLSQLError, match="missing upperBound, numPartitions"):
        partition_predicates({"partitionColumn": "id", "lowerBound": "0"}, "postgres")


def test_pre_partition_array_reads_each_predicate(db_session, numbers):
    db_session.execute('load jdbc.`pg.numbers` where prePtnArray="id <= 10 | id > 990" and prePtnDelimiter="\\|" as ends;')
    assert sorted(db_session.table("ends").column("id").to_pylist()) == list(range(1, 11)) + list(range(991, 1001))


def test_upsert_on_id_col_replaces_matching_rows_and_adds_the_rest(db_session, postgres):
    pg(postgres, "DROP TABLE IF EXISTS people", fetch=False)
    pg(postgres, "CREATE TABLE people (id bigint, name text)", fetch=False)
    pg(postgres, "INSERT INTO people VALUES (1, 'old one'), (2, 'two')", fetch=False)
    db_session.execute("select 1L as id, 'new one' as name union all select 3L, 'three' as changes;"
                       'save append changes as jdbc.`pg.people` where idCol="id";')
    assert pg(postgres, "SELECT id, name FROM people ORDER BY id") == [(1, "new one"), (2, "two"), (3, "three")]


def test_save_modes(db_session, postgres):
    pg(postgres, "DROP TABLE IF EXISTS modes", fetch=False)
    db_session.execute("select 1 as x as one; save one as jdbc.`pg.modes`;")
    with pytest.raises(MLSQLError, match="already exists") as info:
        db_session.execute("save one as jdbc.`pg.modes`;")
    assert info.value.line == 1
    results = db_session.execute("save ignore one as jdbc.`pg.modes`; save append one as jdbc.`pg.modes`;")
    assert "nothing written" in results[0].message
    assert pg(postgres, "SELECT count(*) FROM modes")[0][0] == 2
    db_session.execute('save overwrite one as jdbc.`pg.modes` where truncate="true";')
    assert pg(postgres, "SELECT count(*) FROM modes")[0][0] == 1


def test_a_failed_save_leaves_the_table_as_it_was(db_session, postgres):
    pg(postgres, "DROP TABLE IF EXISTS strict", fetch=False)
    pg(postgres, "CREATE TABLE strict (id integer NOT NULL, name text)", fetch=False)
    pg(postgres, "INSERT INTO strict VALUES (1, 'kept'), (2, 'kept too')", fetch=False)
    with pytest.raises(MLSQLError, match="nothing was written") as info:
        db_session.execute("select cast(null as int) as id, 'bad' as name as bad;\n"
                           'save overwrite bad as jdbc.`pg.strict` where truncate="true";')
    assert info.value.line == 2
    assert pg(postgres, "SELECT id, name FROM strict ORDER BY id") == [(1, "kept"), (2, "kept too")]


def test_create_table_column_types(db_session, postgres):
    pg(postgres, "DROP TABLE IF EXISTS typed_out", fetch=False)
    db_session.execute("select 'ab' as code, 1.5 as amount as t;"
                       'save t as jdbc.`pg.typed_out` where createTableColumnTypes="code CHAR(4), amount NUMERIC(8, 3)";')
    types = pg(postgres, "SELECT column_name, data_type, character_maximum_length, numeric_precision, numeric_scale "
                         "FROM information_schema.columns WHERE table_name = 'typed_out' ORDER BY ordinal_position")
    assert types == [("code", "character", 4, None, None), ("amount", "numeric", None, 8, 3)]
    assert pg(postgres, "SELECT code, amount FROM typed_out") == [("ab  ", decimal.Decimal("1.500"))]


@pytest.mark.parametrize("case", ["wrong password", "unreachable", "missing table"])
def test_connection_problems_are_clear_errors_with_the_position(postgres, warehouse, case):
    url, password, table = postgres.jdbc_url, pg_server.PASSWORD, "numbers_absent"
    if case == "wrong password":
        password = "not-the-password-xyz"
    elif case == "unreachable":
        import socket

        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            url = f"jdbc:postgresql://127.0.0.1:{probe.getsockname()[1]}/{pg_server.DATABASE}"
    script = (f'connect jdbc where url="{url}" and user="{pg_server.USER}" and password="${{pw}}" as db;\n'
              f"\n  load jdbc.`db.{table}` as t;")
    with Session(warehouse=warehouse, variables={"pw": password}) as s, pytest.raises(MLSQLError) as info:
        s.execute(script)
    assert (info.value.line, info.value.column) == (3, 3)
    assert password not in str(info.value)
    expected = {"wrong password": "password authentication failed", "unreachable": "cannot connect",
                "missing table": "numbers_absent"}[case]
    assert expected in str(info.value)


def test_a_silent_server_cannot_hang_the_connect():
    """libpq waits for a host that never answers as long as it is told: every connection is told
    (bench/bench_fail_fast.py times the refusals above), unless the URL says its own."""
    from urllib.parse import parse_qs, urlsplit

    from mlsql_ray.engine.datasources.jdbc import CONNECT_TIMEOUT_S, Database, _libpq_uri

    def timeout_of(url: str) -> list[str]:
        return parse_qs(urlsplit(_libpq_uri(Database(url, user="u", password="p"))).query)["connect_timeout"]

    assert timeout_of("jdbc:postgresql://10.0.0.1:5432/db?sslmode=disable") == [str(CONNECT_TIMEOUT_S)]
    assert timeout_of("jdbc:postgresql://10.0.0.1:5432/db?connect_timeout=30") == ["30"]


def test_password_never_shows(postgres, tmp_path, run_cli, numbers):
    script = tmp_path / "job.mlsql"
    script.write_text(f'connect jdbc where url="{postgres.jdbc_url}" and user="{pg_server.USER}" '
                      f'and password="${{pgpw}}" as pg;\n'
                      "load jdbc.`pg.numbers` as n;\n"
                      "select count(*) as c from n as counted;\n"
                      "save overwrite n as delta.`db.numbers`;\n"
                      "!show tables;\n"
                      "load jdbc.`pg.no_such_table` as fails;\n")
    done = run_cli("run", str(script), "--set", f"pgpw={pg_server.PASSWORD}", "--warehouse", str(tmp_path / "wh"),
                   "--verbose")
    assert done.returncode == 1, done.stderr
    assert "job.mlsql:6:1" in done.stderr
    assert "1001" in done.stdout
    for text in (done.stdout, done.stderr):
        assert pg_server.PASSWORD not in text
    log = "".join(p.read_text() for p in (tmp_path / "wh" / "db" / "numbers" / "_delta_log").glob("*.json"))
    assert log and pg_server.PASSWORD not in log
    with Session(warehouse=tmp_path / "wh", variables={"pgpw": pg_server.PASSWORD}) as s:
        s.execute(connect_text(postgres))
        assert pg_server.PASSWORD not in repr(s.connections["pg"])


def test_sqlite_round_trip(tmp_path, warehouse):
    path = tmp_path / "local.db"
    with Session(warehouse=warehouse) as s:
        s.execute(f'connect jdbc where url="jdbc:sqlite:{path}" as lite;'
                  "select 1 as id, 'a' as name union all select 2, 'b' as t;"
                  "save t as jdbc.`lite.main.items`;"
                  "load jdbc.`lite.main.items` as back;")
        assert sorted(s.table("back").to_pylist(), key=lambda r: r["id"]) == [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}]
    import sqlite3

    with sqlite3.connect(path) as con:
        assert con.execute("select id, name from items order by id").fetchall() == [(1, "a"), (2, "b")]


def test_mysql_is_refused_clearly(warehouse):
    with Session(warehouse=warehouse) as s, pytest.raises(MLSQLError, match="jdbc:mysql is not supported yet"):
        s.execute('connect jdbc where url="jdbc:mysql://127.0.0.1:3306/db" as my; load jdbc.`my.t` as t;')


def test_show_tables_from_an_alias_and_completion_of_aliases_and_tables(db_session, numbers):
    from mlsql_ray.kernel import assist

    results = db_session.execute("!show tables from pg;")
    listed = results[0].table.to_pylist()
    assert {"schema": "public", "table": "numbers"} in listed
    code = "load jdbc.`p"
    start, matches = assist.complete(code, len(code), db_session)
    assert (start, matches) == (len("load jdbc.`"), ["pg."])
    code = "load jdbc.`pg.num"
    start, matches = assist.complete(code, len(code), db_session)
    assert start == len("load jdbc.`") and matches == ["pg.numbers"]
    code = "save append t as jdbc.`pg.public.num"
    assert assist.complete(code, len(code), db_session)[1] == ["pg.public.numbers"]


@pytest.mark.slow  # a CLI run whose Python cell trains (scikit-learn)
def test_a_script_trains_from_postgres_and_writes_predictions_back(postgres, tmp_path, run_cli, ray_address):
    """Features from a PostgreSQL table → a model in a Python cell (scikit-learn) → predictions
    saved back to PostgreSQL; checked against the server with psycopg."""
    pg(postgres, "DROP TABLE IF EXISTS points", fetch=False)
    pg(postgres, "DROP TABLE IF EXISTS scored", fetch=False)
    pg(postgres, "CREATE TABLE points AS SELECT g AS id, (g % 7)::float8 AS x, CASE WHEN g % 7 > 3 THEN 1 ELSE 0 END AS y "
                 "FROM generate_series(1, 200) g", fetch=False)
    script = tmp_path / "train_from_pg.mlsql"
    script.write_text(
        f'connect jdbc where url="{postgres.jdbc_url}" and user="{pg_server.USER}" and password="${{pgpw}}" as pg;\n'
        "load jdbc.`pg.points` as points;\n"
        "-- %%\n"
        "--%python\n"
        "--%input=points\n"
        "--%output=scored\n"
        "from sklearn.tree import DecisionTreeClassifier\n"
        "ray_context = RayContext.connect(globals(), None)\n"
        "rows = ray_context.to_pandas()\n"
        "model = DecisionTreeClassifier(random_state=0).fit(rows[['x']], rows['y'])\n"
        "rows['prediction'] = model.predict(rows[['x']])\n"
        "ray_context.build_result(rows[['id', 'prediction']])\n"
        "-- %%\n"
        "save overwrite scored as jdbc.`pg.public.scored`;\n")
    done = run_cli("run", str(script), "--set", f"pgpw={pg_server.PASSWORD}", "--warehouse", str(tmp_path / "wh"),
                   ray_address=ray_address)
    assert done.returncode == 0, done.stderr
    wrong = pg(postgres, "SELECT count(*) FROM scored s JOIN points p USING (id) WHERE s.prediction <> p.y")[0][0]
    assert pg(postgres, "SELECT count(*) FROM scored")[0][0] == 200 and wrong == 0


def test_a_partitioned_read_feeds_one_data_server_per_partition(ray_runtime, postgres, numbers, warehouse):
    """numPartitions="4": a Python cell's data servers are the four reads, as the database split them."""
    with Session(warehouse=warehouse, variables={"pgpw": pg_server.PASSWORD}) as s:
        s.execute(connect_text(postgres))
        s.execute('load jdbc.`pg.numbers` where partitionColumn="id" and lowerBound="150" and upperBound="500" '
                  'and numPartitions="4" as parts;')
        s.execute("--%python\n--%input=parts\n--%output=sizes\n"
                  "ray_context = RayContext.connect(globals(), None)\n"
                  "servers = ray_context.data_servers()\n"
                  "ray_context.build_result([{'part': i, 'rows': RayContext.to_arrow([s]).num_rows,\n"
                  "                           'low': min((r for r in RayContext.to_arrow([s]).column('id').to_pylist()"
                  " if r is not None), default=None)} for i, s in enumerate(servers)])\n")
        sizes = s.table("sizes").to_pylist()
    # Spark's stride: 500/4 - 150/4 = 88 (integer division), so < 238, [238, 326), [326, 414), >= 414
    expected = [pg(postgres, "SELECT count(*) FROM numbers WHERE id < 238 OR id IS NULL")[0][0],
                pg(postgres, "SELECT count(*) FROM numbers WHERE id >= 238 AND id < 326")[0][0],
                pg(postgres, "SELECT count(*) FROM numbers WHERE id >= 326 AND id < 414")[0][0],
                pg(postgres, "SELECT count(*) FROM numbers WHERE id >= 414")[0][0]]
    assert [r["rows"] for r in sizes] == expected == [238, 88, 88, 587]
    assert [r["low"] for r in sizes] == [1, 238, 326, 414]

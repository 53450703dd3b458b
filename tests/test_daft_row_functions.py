"""Issue 41, part 2: what Daft has no exact equivalent for but needs only its row runs per batch by
DuckDB (``engine/daft/rows.py``), registered model functions and ScriptUDFs among it, with the DuckDB
session's answers; what needs more than one row stays refused."""

from __future__ import annotations

import json
import os

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from mlsql_ray import MLSQLError, Session
from mlsql_ray.engine.daft import rows
from mlsql_ray.engine.daft.translate import BATCH, REFUSAL_HINT

ROWS = pa.table({"k": pa.array([1, 2, 3, 4], pa.int32()), "name": ["ada", "bob", None, "cy"],
                 "x": [1.5, 2.25, None, -4.0], "f1": [5.1, 4.4, 6.7, 5.9], "f2": [3.5, 2.9, 3.1, 3.0]})

TRAIN = """
select array(f1, f2) as features, cast(k % 2 as double) as label from t as raw;
select vec_dense(features) as features, label from raw as data;
train data as RandomForest.`{model}` where keepVersion="true"
  and `fitParam.0.featuresCol`="features" and `fitParam.0.labelCol`="label" and `fitParam.0.maxDepth`="3";
"""

UDF = """register ScriptUDF.`` as shout where lang="python" and dataType="string" and code='''
def apply(self, s):
    return None if s is None else s.upper() + "!"
''';
"""


def _sorted(table: pa.Table) -> list:
    return sorted(table.to_pylist(), key=lambda r: json.dumps(r, sort_keys=True, default=str))


@pytest.fixture()
def sessions(ray_runtime, tmp_path):
    """A DuckDB session and a Daft session over the same table ``t``."""
    os.environ.setdefault("DAFT_PROGRESS_BAR", "0")
    with Session(warehouse=tmp_path / "duck") as duck, Session(warehouse=tmp_path / "daft", sql_engine="daft") as on_daft:
        for s in (duck, on_daft):
            s.catalog.add_arrow("t", ROWS, "test")
        yield duck, on_daft


def _both(sessions, sql: str) -> tuple[list, list]:
    expected, got = (_sorted(_run(s, sql)) for s in sessions)
    return expected, got


def _run(session: Session, sql: str) -> pa.Table:
    session.execute(f"{sql} as out;")
    return session.table("out")


@pytest.mark.parametrize("sql", [
    "select k, substr(name, 2) as tail, k || name as joined, x * 1.5 as scaled, round(x, 1) as r from t",
    "select k from t where length(name) = 3 and x > 0",
    "select k, upper(name) as u from t where concat(name, '?') like 'a%' order by k",
    "select a.k, b.name from t a join t b on a.k = b.k where instr(b.name, 'b') > 0",
    "select k, count(*) as n from t where regexp_replace(name, '[aeiou]', '') <> '' group by k",
    "select date_add('2024-02-28', k) as d, 2.5 as dec from t",
])
def test_per_row_functions_give_duckdbs_rows(sessions, sql):
    expected, got = _both(sessions, sql)
    assert got == expected


@pytest.mark.parametrize("sql, what", [
    ("select length(name) as l, count(*) as n from t group by length(name)", "the function length"),
    ("select k, collect_list(name) over (partition by k) as names from t", "array_agg"),  # sqlglot's name of it
    ("select k, rand() as r from t", "rand"),
    # Daft's planner on Ray raises a bare RuntimeError: still a refusal, recognised by where it was raised
    ("select k, (select max(x) from t b where b.k < a.k) as m from t a", "outer reference"),
])
def test_what_needs_more_than_its_row_is_refused(sessions, sql, what):
    _, on_daft = sessions
    with pytest.raises(MLSQLError, match=REFUSAL_HINT.split(" (")[0]) as refused:
        _run(on_daft, sql)
    assert what.lower() in str(refused.value).lower()


def test_registered_model_function_and_script_udf_inside_a_daft_select(sessions, tmp_path):
    """A RandomForest trained once, registered in both sessions: ``f(vec_dense(...))`` in a Daft
    select (scored by the function's actors, called from where Daft computes the batch) gives the
    DuckDB session's rows; so does a ScriptUDF in a projection and a filter."""
    duck, on_daft = sessions
    model = tmp_path / "model"
    duck.execute(TRAIN.format(model=model))
    for s in (duck, on_daft):
        s.execute(f"register RandomForest.`{model}` as rf_predict;\n{UDF}")
    expected, got = _both(sessions, "select k, rf_predict(vec_dense(array(f1, f2))) as p, shout(name) as loud "
                                    "from t where shout(name) <> 'BOB!'")
    assert got == expected
    assert [r["k"] for r in got] == [1, 4] and {r["p"] for r in got} <= {0.0, 1.0}


@pytest.mark.slow
def test_per_row_functions_run_on_the_ray_workers(run_cli, ray_address, tmp_path):
    """Through the CLI on the test run's Ray: a ScriptUDF in a Daft select runs inside a Ray task or
    actor (where Daft computes the batch), not in the driver; the result saved by Daft."""
    pq.write_table(ROWS, tmp_path / "t.parquet")
    script = tmp_path / "job.mlsql"
    script.write_text("""load parquet.`t.parquet` as t;
register ScriptUDF.`` as where_run where lang="python" and dataType="string" and code='''
def apply(self, k):
    import ray
    context = ray.get_runtime_context()
    return "worker" if (context.get_task_id() or context.get_actor_id()) else "driver"
''';
select k, where_run(k) as ran, upper(name) || '!' as loud from t as out;
save overwrite out as parquet.`{out}`;
""".replace("{out}", str(tmp_path / "out")))
    done = run_cli("run", str(script), "--sql-engine", "daft", "--warehouse", str(tmp_path / "wh"),
                   ray_address=ray_address, timeout=600)
    assert done.returncode == 0, done.stderr
    saved = pq.read_table(tmp_path / "out").to_pylist()
    assert sorted((r["k"], r["ran"], r["loud"]) for r in saved) == [
        (1, "worker", "ADA!"), (2, "worker", "BOB!"), (3, "worker", None), (4, "worker", "CY!")]


def test_a_batch_connection_is_kept_between_uses_clean_and_a_failed_use_drops_it():
    """The DuckDB a worker computes batches in is kept for the next batch of the same setup, without
    the last batch; one whose use failed is closed, never handed out again."""
    setup = ("SET TimeZone = 'Etc/UTC'", "SET threads = 1")  # a setup no session has: a pool of its own
    with rows.connection(setup, ()) as first:
        first.register(BATCH, pa.table({"a": [1, 2]}))
        assert first.sql(f"select sum(a) from {BATCH}").fetchall() == [(3,)]
    with rows.connection(setup, ()) as second:
        assert second is first
        with pytest.raises(duckdb.CatalogException):
            second.sql(f"select * from {BATCH}")
    with pytest.raises(duckdb.CatalogException):
        with rows.connection(setup, ()) as failed:
            failed.sql("select * from no_such_table")
    with rows.connection(setup, ()) as fresh:
        assert fresh is not first and fresh.sql("select 1").fetchall() == [(1,)]

"""Issue 26 item 2: ``train … as KerasClassifier`` feeds its workers as cells are fed: each Ray
worker gets a description of its partition (the files and row range to read, or where the
batches of a computed table are in Ray's object store) and reads it itself; the driver never
holds the training rows. Shown from what the warm workers hold after the statement: the key of
the partition they read (what they were given) and its rows. Several groups of a scikit-learn
algorithm are fitted on GroupHosts, which likewise read the table themselves on a cluster of
several machines; on this one-machine Ray the driver reads it once for them, and the first such
train fits here and starts them (issue 27).

Tiny generated data (two separable classes labelled 2 and 5), a tiny network, the module's warm
workers (``warm_workers``) shared by the statements."""

from __future__ import annotations

import re

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from mlsql_ray import Session
from mlsql_ray.cells.partitions import FileRows
from mlsql_ray.errors import MLSQLError
from mlsql_ray.ml.algs.keras_classifier import LabelledRows

ROWS = 160
TRAIN = ('train {table} as KerasClassifier.`db.k` where featuresCol="features" and layers="8" and epochs="12" '
         'and batchSize="16" and learningRate="0.2" and workers="2" as res;')


@pytest.fixture(scope="module")
def points(tmp_path_factory):
    """A parquet file of ROWS points in [0, 1]²: label 5 above the diagonal, 2 below."""
    rng = np.random.default_rng(3)
    xy = rng.random((ROWS, 2))
    label = np.where(xy[:, 1] > xy[:, 0], 5.0, 2.0)
    path = tmp_path_factory.mktemp("feed") / "points.parquet"
    pq.write_table(pa.table({"features": pa.array(list(xy), pa.list_(pa.float64())), "label": label,
                             "id": np.arange(ROWS)}), path)
    return path


@pytest.fixture
def session(warm_workers, warehouse, points):
    with Session(warehouse=warehouse, workers=warm_workers) as s:
        s.execute(f"load parquet.`{points}` as raw;")
        yield s


def fed(pool) -> list[tuple]:
    """(partition key, prepare, rows) of each idle training worker of the pool: what it was fed."""
    import ray

    def held(worker):
        key = getattr(worker, "source_key", None)
        return None if key is None else (key[0], key[1], len(worker.x))

    return [h for h in ray.get([a.__ray_call__.remote(held) for a in pool.idle_actors()]) if h is not None]


def accuracy(session) -> float:
    session.execute("predict raw as KerasClassifier.`db.k` as scored;")
    scored = session.table("scored")
    return float(np.mean(np.asarray(scored.column("prediction").to_pylist()) == np.asarray(scored.column("label").to_pylist())))


def test_workers_read_their_file_ranges_themselves(session, warm_workers):
    """A select over a parquet load: each worker is given the file and a row range (FileRows)."""
    session.execute("select features, label from raw where id % 8 != 7 as kept;")
    session.execute(TRAIN.format(table="kept"))
    result = {r["name"]: r["value"] for r in session.table("res").to_pylist()}
    assert result["status"] == "success", result["message"]
    feeds = fed(warm_workers)
    assert len(feeds) == 2
    for key, prepare, _ in feeds:
        assert [type(piece) for piece in key] == [FileRows]
        assert prepare == LabelledRows("features", "label", (2.0, 5.0), "kept")
    assert sum(rows for _, _, rows in feeds) == ROWS - ROWS // 8  # the filter ran on the workers
    assert accuracy(session) > 0.9


def test_a_computed_table_reaches_workers_through_the_object_store(session, warm_workers):
    """A table that is not a row-wise select of files (here ordered) is streamed into Ray's object
    store a batch at a time, as for a cell, and each worker is told which batches are its own."""
    session.execute("select features, label from raw order by id desc as ordered;")
    session.execute(TRAIN.format(table="ordered"))
    feeds = fed(warm_workers)
    assert len(feeds) == 2
    for (spans,), _, _ in feeds:  # one data server each: (object id, offset, length) spans
        assert spans and all(isinstance(ref, str) and length for ref, _, length in spans)
    assert sum(rows for _, _, rows in feeds) == ROWS
    assert accuracy(session) > 0.9


@pytest.mark.parametrize("statement, message", [
    ("select features, case when id = 100 then null else label end as label from raw as nolabel;",
     "label column 'label' of t has nulls"),
    ("select features, 5.0 as label from raw as nolabel;", "label column 'label' of t has one class (5.0)"),
    ("select features, label from raw where id < 0 as nolabel;", "t has no rows to train on"),
])
def test_bad_tables_are_errors_before_any_worker_starts(session, statement, message):
    session.execute(statement.replace("nolabel", "t"))
    with pytest.raises(MLSQLError, match=message.replace("(", r"\(").replace(")", r"\)")):
        session.execute(TRAIN.format(table="t"))


RANDOM_FOREST = ('train kept as RandomForest.`db.rf` where featuresCol="features" and numTrees="5" '
                 'and evaluateTable="held" {groups} as rf;')
GROUPS = 'and `fitParam.0.maxDepth`="2" and `fitParam.1.maxDepth`="4"'


def host_reads(pool) -> list[tuple]:
    """(plan, rows) of each partition plan the pool's idle GroupHosts read in their own process."""
    import ray

    def held(actor):
        from mlsql_ray.cells import partitions
        from mlsql_ray.ml.runner import GroupHost

        return [(plan, table.num_rows) for plan, table in partitions._read_cache.items()] if isinstance(actor, GroupHost) else []

    return [read for reads in ray.get([a.__ray_call__.remote(held) for a in pool.idle_actors()]) for read in reads]


def host_cpu_seconds(pool) -> dict[str, float]:
    """The CPU seconds each of the pool's idle GroupHosts' processes has used, by actor id."""
    import ray

    from mlsql_ray.cluster import ray_internals

    def used(actor):
        import time

        from mlsql_ray.ml.runner import GroupHost

        return time.process_time() if isinstance(actor, GroupHost) else None

    idle = pool.idle_actors()
    return {ray_internals.actor_id(a): seconds for a, seconds in zip(idle, ray.get([a.__ray_call__.remote(used) for a in idle]))
            if seconds is not None}


def metrics(session) -> list[str]:
    return [r["value"] for r in session.table("rf").to_pylist() if r["name"] == "metrics"]


def test_groups_fitted_here_first_then_on_the_hosts_started_for_the_next_train(session, warm_workers, points):
    """On this one-machine Ray, the first train of several groups of an algorithm fitted from arrays
    (RandomForest) fits them here, no warm GroupHost being ready, and starts two hosts for the next
    train. That train runs on them, each host fitting a group; the driver read the rows once and the
    hosts took the arrays from Ray's object store: no host read the table's file. Each group fitted
    alone in this process gives the same metrics."""
    warm_workers.release()  # the Keras workers idle here hold the CPUs the hosts started ahead need
    session.execute("select features, label from raw where id % 8 != 7 as kept;")
    session.execute("select features, label from raw where id % 8 = 7 as held;")
    forest = RANDOM_FOREST.replace('numTrees="5"', 'numTrees="200"')  # a fit of tenths of a CPU second
    session.execute(forest.format(groups=GROUPS))
    fitted_here = metrics(session)
    warm_workers.settle()
    before = host_cpu_seconds(warm_workers)
    assert len(before) == 2  # started after the fits
    session.execute(forest.format(groups=GROUPS))
    rows = {r["name"]: r["value"] for r in session.table("rf").to_pylist()}
    assert rows["status"] == "success", rows["message"]
    on_hosts = metrics(session)
    after = host_cpu_seconds(warm_workers)
    assert after.keys() == before.keys() and on_hosts == fitted_here
    # each host fitted a group (200 trees: tenths of a second), where an idle host spends next to none
    assert all(after[host] - before[host] > 0.05 for host in before), (before, after)
    assert not [plan for plan, _ in host_reads(warm_workers)
                if isinstance(plan, FileRows) and any(str(points) in getattr(piece, "files", ()) for piece in plan.pieces)]
    alone = []
    for depth in (2, 4):
        session.execute(forest.format(groups=f'and maxDepth="{depth}"'))
        alone += metrics(session)
    assert on_hosts == alone and len(set(on_hosts)) == 2


ALS_GROUPS = ('train kept as ALSInPlace.`db.als` where userCol="u" and itemCol="i" and ratingCol="label" '
              'and evaluateTable="held" and `fitParam.0.rank`="2" and `fitParam.1.rank`="3" as als;')


@pytest.mark.parametrize("statement, train, message", [
    ("select features, case when id = 100 then null else label end as label from raw as kept;", RANDOM_FOREST,
     "label column 'label' of kept has nulls"),
    ("select id % 5 as u, case when id = 150 then 1.5 else id % 7 end as i, label from raw as kept;", ALS_GROUPS,
     "id column 'i' (itemCol) of kept must hold whole numbers"),
    ("select case when id = 100 then [0.5] else features end as features, label from raw as kept;", RANDOM_FOREST,
     "the list rows have different lengths"),  # found by the host that reads the rows
])
def test_bad_rows_stop_a_statement_whose_groups_run_on_hosts(session, statement, train, message, monkeypatch):
    """The driver finds a null label or a bad ALS id past the first row by SQL, before any host
    starts; what only reading every row finds stops the statement from the host (groups on hosts
    as on a cluster of several machines, warm hosts or not)."""
    from mlsql_ray.ml import runner

    monkeypatch.setattr(runner, "FIT_HERE_ON_ONE_MACHINE", False)
    session.execute(statement)
    session.execute("select * from kept as held;")
    with pytest.raises(MLSQLError, match=re.escape(message)):
        session.execute(train.format(groups=GROUPS))

"""Model tables for their consumers: register/predict as SQL, versions with their metrics,
and readers that know nothing of mlsql-ray."""

from __future__ import annotations

import io
import json
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from conftest import MNIST_ROUNDS, SAMPLE_MNIST
from mlsql_ray import MLSQLError, train
from mlsql_ray.cluster import ray_internals
from training_helpers import alive_actors, eventually, mnist_model

TEST_PARQUET = SAMPLE_MNIST / "test.parquet"


@pytest.fixture(scope="module")
def trained(mnist_servers, mnist_trained):
    """Two runs: a weak one (1 round, on one worker: half the data, and one fresh worker importing
    TensorFlow instead of two) and a good one (the suite's shared seeded run, MNIST_ROUNDS)."""
    weak = train.fit(mnist_model, mnist_servers[:1], rounds=1, batch_size=128, scale=1 / 255, one_hot=10)
    return weak, mnist_trained


@pytest.fixture
def model_session(ray_runtime, module_pool, warehouse, trained):
    """A session whose warehouse holds ai_model.mnist_model version 0 (weak) and 1 (good). Its
    Predictor actors come from, and go back to, the module's warm pool: each fresh one imports
    TensorFlow (seconds), and what these tests check is what the functions do, not how actors
    start (test_unregister_... checks that too, and that the pool stops them)."""
    from mlsql_ray import Session

    weak, good = trained
    with Session(warehouse=warehouse, workers=module_pool) as session:
        for result in (weak, good):
            session.catalog.add_arrow("model_rows", result.model_table(), "test")
            session.execute("save overwrite model_rows as delta.`ai_model.mnist_model`;")
        session.execute(f"load parquet.`{TEST_PARQUET}` as mnist_test;")
        yield session


def _ids(actors: list) -> set[str]:
    return {ray_internals.actor_id(a) for a in actors}


def _alive_predictors() -> set[str]:
    return {a["ActorID"] for a in alive_actors("Predictor")}


def test_registered_function_scores_mnist_like_the_model(model_session, trained, mnist_test):
    _, good = trained
    x, y = mnist_test
    model_session.execute('register tf.`ai_model.mnist_model` as mnist_predict where scale="1/255" and output="argmax";')
    model_session.execute("select mnist_predict(image) as prediction, label from mnist_test as scored;")
    scored = model_session.table("scored")
    predictions = np.array(scored.column("prediction").to_pylist())
    assert scored.num_rows == 2000
    np.testing.assert_array_equal(predictions, good.model.predict(x, verbose=0).argmax(axis=1))
    assert float((predictions == y).mean()) >= 0.85


def test_probabilities_output_and_the_predict_statement(model_session, trained, mnist_test):
    _, good = trained
    x, _ = mnist_test
    model_session.execute('register tf.`ai_model.mnist_model` as mnist_proba where scale="1/255" and batchSize="300" and workers="1";')
    model_session.execute("select mnist_proba(image) as p from mnist_test as probs;")
    probs = np.array(model_session.table("probs").column("p").to_pylist())
    assert probs.shape == (2000, 10)
    np.testing.assert_allclose(probs, good.model.predict(x, verbose=0), rtol=1e-4, atol=1e-5)
    model_session.execute('predict mnist_test as tf.`ai_model.mnist_model` where scale="1/255" and output="argmax" as scored2;')
    scored = model_session.table("scored2")
    assert scored.column_names == ["image", "label", "prediction"]
    np.testing.assert_array_equal(scored.column("prediction").to_pylist(), probs.argmax(axis=1))


def test_each_version_gives_its_own_predictions(model_session, trained, mnist_test):
    weak, good = trained
    x, _ = mnist_test
    for version, result in (("0", weak), ("1", good)):
        model_session.execute(f'register tf.`ai_model.mnist_model` as v{version} where version="{version}" and scale="1/255" and workers="1";')
        model_session.execute(f"select v{version}(image) as p from mnist_test as p{version};")
        got = np.array(model_session.table(f"p{version}").column("p").to_pylist())
        np.testing.assert_allclose(got, result.model.predict(x, verbose=0), rtol=1e-4, atol=1e-5)
    assert not np.allclose(np.array(model_session.table("p0").column("p").to_pylist()),
                           np.array(model_session.table("p1").column("p").to_pylist()), atol=1e-3)
    model_session.execute('load delta.`ai_model.mnist_model` where version="0" as first;')
    assert model_session.table("first").num_rows == len(weak.model_rows())


def test_history_lists_versions_with_rows_and_training_metrics(model_session, trained):
    weak, good = trained
    history = model_session.execute("!delta history ai_model.mnist_model;")[0].table.to_pylist()
    assert [h["version"] for h in history] == [1, 0]
    assert [h["rows"] for h in history] == [len(good.model_rows()), len(weak.model_rows())]
    assert all(h["timestamp"] is not None and h["operation"] == "WRITE" for h in history)
    metrics = [json.loads(json.loads(h["metadata"])["mlsql.train"]) for h in history]
    assert [m["rounds"] for m in metrics] == [str(MNIST_ROUNDS), "1"]
    assert float(metrics[0]["loss"]) == pytest.approx(good.history[-1]["loss"], rel=1e-3)


# -- bad input: one clear error, nothing half-registered --------------------------------------

def _no_function(session, name: str, pooled_before: set[str]) -> None:
    """No function, and no Predictor left running but the pool's idle ones, none of them new: a
    failed register stops every actor it started or took."""
    with pytest.raises(MLSQLError, match=rf"Scalar Function with name {name} does not exist"):  # DuckDB's words
        session.execute(f"select {name}(image) as p from mnist_test as x;")
    pooled = _ids(session.workers.idle_actors())
    assert pooled <= pooled_before
    assert eventually(lambda: _alive_predictors() == pooled)


def test_registering_a_table_that_is_not_a_model(model_session):
    model_session.execute("select 1 as a as plain; save overwrite plain as delta.`ai_model.not_a_model`;")
    pooled = _ids(model_session.workers.idle_actors())
    with pytest.raises(MLSQLError, match=r"ai_model.not_a_model is not a model table.*'start'"):
        model_session.execute("register tf.`ai_model.not_a_model` as nope;")
    _no_function(model_session, "nope", pooled)


def test_registering_a_version_that_does_not_exist(model_session):
    pooled = _ids(model_session.workers.idle_actors())
    with pytest.raises(MLSQLError, match=r"ai_model.mnist_model has no version 7 \(latest is 1\)"):
        model_session.execute('register tf.`ai_model.mnist_model` as nope where version="7";')
    _no_function(model_session, "nope", pooled)


def test_registering_a_model_file_that_does_not_load(model_session):
    from mlsql_ray.storage.rows import FILE_SCHEMA
    from mlsql_ray.storage import streaming_tar

    with tempfile.TemporaryDirectory() as tmp:
        fake = Path(tmp) / "model.keras"
        fake.write_bytes(b"this is not a zip archive")
        rows = list(streaming_tar.build_rows_from_file(fake))
    model_session.catalog.add_arrow("junk", pa.Table.from_pylist(rows, schema=FILE_SCHEMA), "test")
    model_session.execute("save overwrite junk as delta.`ai_model.junk`;")
    pooled = _ids(model_session.workers.idle_actors())
    with pytest.raises(MLSQLError, match=r"cannot load the model in ai_model.junk version 0"):
        model_session.execute('register tf.`ai_model.junk` as nope where workers="1";')
    _no_function(model_session, "nope", pooled)


def test_an_input_column_of_the_wrong_shape_names_the_column(model_session):
    model_session.execute('register tf.`ai_model.mnist_model` as mnist_predict where output="argmax" and workers="1";')
    model_session.execute("select slice(image, 1, 100) as small_image from mnist_test as small;")
    with pytest.raises(MLSQLError, match=r"mnist_predict\(small_image\): the model takes rows of 784 values, got rows of 100"):
        model_session.execute("select mnist_predict(small_image) as p from small as bad;")
    with pytest.raises(MLSQLError, match=r"mnist_predict\(label\): the model takes a list"):
        model_session.execute("select mnist_predict(label) as p from mnist_test as bad;")
    model_session.execute("select count(*) as n from mnist_test as still_usable;")
    assert model_session.table("still_usable").column("n").to_pylist() == [2000]


def test_unregister_removes_the_function_and_its_actors(model_session):
    """Its actors wait in the warm pool (model dropped) for the next register, which loads its own
    model into them; closing the session leaves them to the pool's owner, whose release stops them."""
    pool = model_session.workers
    model_session.execute('register tf.`ai_model.mnist_model` as gone where scale="1/255" and workers="1";')
    actors = _alive_predictors() - _ids(pool.idle_actors())
    assert len(actors) == 1
    model_session.execute("unregister tf.`gone`;")
    with pytest.raises(MLSQLError, match="gone"):
        model_session.execute("select gone(image) as p from mnist_test as x;")
    assert actors <= _ids(pool.idle_actors())
    model_session.execute('register tf.`ai_model.mnist_model` as again where scale="1/255" and workers="1" '
                          'and output="argmax";')
    assert _alive_predictors() - _ids(pool.idle_actors()) == actors
    model_session.execute("select again(image) as p from mnist_test as again_scored;")
    assert model_session.table("again_scored").column("p").type == pa.int64()
    model_session.close()
    assert actors <= _ids(pool.idle_actors()) and _alive_predictors() == _ids(pool.idle_actors())
    pool.release()
    assert eventually(lambda: _alive_predictors() == set())


# -- readers that know nothing of mlsql-ray ----------------------------------------------------

def test_polars_rebuilds_the_keras_file(model_session, trained, mnist_test, warehouse):
    """docs/models.md's snippet: polars + sort on start + untar + keras.models.load_model (and
    tests/test_clean_exits.py runs it as a process of its own)."""
    import tarfile

    import keras
    import polars as pl

    _, good = trained
    rows = pl.read_delta(str(warehouse / "ai_model" / "mnist_model")).sort("start")
    archive = b"".join(rows["value"])
    with tempfile.TemporaryDirectory() as tmp, tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(tmp, filter="data")
        model = keras.models.load_model(next(Path(tmp).rglob("*.keras")))
    x, _ = mnist_test
    np.testing.assert_allclose(model.predict(x[:300], verbose=0), good.model.predict(x[:300], verbose=0), rtol=1e-5, atol=1e-6)


def test_polars_reads_an_ordinary_table_the_engine_saved(session, warehouse):
    import polars as pl

    session.execute(f"load parquet.`{TEST_PARQUET}` as mnist_test;")
    session.execute("select label, count(*) as n from mnist_test group by label as counts;")
    session.execute("save overwrite counts as delta.`demo.counts`;")
    frame = pl.read_delta(str(warehouse / "demo" / "counts")).sort("label")
    labels = pq.read_table(TEST_PARQUET).column("label").to_numpy()
    assert frame["label"].to_list() == sorted(set(labels.tolist()))
    assert frame["n"].to_list() == [int((labels == k).sum()) for k in sorted(set(labels.tolist()))]

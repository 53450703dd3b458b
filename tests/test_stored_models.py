"""Issue 40, part 1: stored models of every kind are one family, Delta tables that record their kind,
opened by one reader (``storage.stored.read``); tables written before the kind was recorded (or by
anyone else) are told by their columns and still load."""

from __future__ import annotations

import pytest

from mlsql_ray.errors import MLSQLError
from mlsql_ray.storage import delta, stored
from mlsql_ray.train.result import TrainResult

DATA = """select array(1.0, 2.0) as features, 0.0 as label, 1.0 as a union all select array(2.0, 1.0), 1.0, 3.0
union all select array(3.0, 1.0), 1.0, 5.0 union all select array(0.0, 2.0), 0.0, 9.0 as t;"""


def _recorded(path) -> str | None:
    """The kind the table's latest version records in its commit metadata."""
    return delta.commits(path, str(path))[0].get(stored.KIND_KEY)


def test_every_kind_records_its_kind_and_the_one_reader_tells_it(session):
    session.execute(DATA + """
train t as RandomForest.`db.rf` where `fitParam.0.maxDepth`="2";
train t as ScalerInPlace.`db.s` where inputCols="a" and scaleMethod="min-max";""")
    keras_rows = TrainResult(history=[], weights=[], model_file=b"a model file", workers=1, elapsed=0.0).model_table()
    session.catalog.add_arrow("keras_rows", keras_rows, "test")
    session.execute("save overwrite keras_rows as delta.`db.k`;")
    for name, kind in (("rf", stored.ALGORITHM), ("s", stored.FEATURE_ET), ("k", stored.KERAS)):
        model = stored.read(session.warehouse / "db" / name, f"db.{name}")
        assert (model.kind, model.version, _recorded(model.path)) == (kind, 0, kind)
    assert stored.read(session.warehouse / "db" / "s", "db.s").path == session.warehouse / "db" / "s" / stored.ET_TABLE


def test_models_written_before_the_kind_was_recorded_still_load(session, tmp_path):
    """Copies made with a plain load and save have the old layouts and no recorded kind: the reader
    tells them by their columns, and predict, modelExplain and register read them as before."""
    session.execute(DATA + f"""
train t as RandomForest.`{tmp_path}/rf` where `fitParam.0.maxDepth`="2";
load delta.`{tmp_path}/rf` where mode="path" as old_rf;
save overwrite old_rf as delta.`{tmp_path}/old_rf` where mode="path";
train t as ScalerInPlace.`{tmp_path}/s` where inputCols="a" and scaleMethod="min-max";
load delta.`{tmp_path}/s/model` where mode="path" as old_state;
save overwrite old_state as delta.`{tmp_path}/old_s/model` where mode="path";""")
    for name, kind in (("old_rf", stored.ALGORITHM), ("old_s", stored.FEATURE_ET)):
        model = stored.read(tmp_path / name, name)
        assert model.kind == kind and _recorded(model.path) is None
    scored = [session.execute(f"predict t as RandomForest.`{tmp_path}/{name}` as p_{name};")[-1].table
              for name in ("rf", "old_rf")]
    assert scored[0].column("prediction").to_pylist() == scored[1].column("prediction").to_pylist()
    for name in ("rf", "old_rf"):
        session.execute(f'load modelExplain.`{tmp_path}/{name}` where alg="RandomForest" as x_{name};')
    assert session.table("x_old_rf").num_rows > 0 and session.table("x_rf").equals(session.table("x_old_rf"))
    session.execute(f"""register ScalerInPlace.`{tmp_path}/s` as scaled;
register ScalerInPlace.`{tmp_path}/old_s` as old_scaled;""")
    rows = session.execute("select scaled(array(a)) as new, old_scaled(array(a)) as old from t as both;")[-1].table
    assert rows.column("new").to_pylist() == rows.column("old").to_pylist() == [[0.0], [0.25], [0.5], [1.0]]


@pytest.mark.parametrize(("statement", "message"), [
    ("register tf.`db.rf` as f;", "db.rf holds a model trained by `train` as a built-in algorithm, not a Keras model"),
    ("predict t as RandomForest.`db.s`;", "db.s holds a feature ET's state, not a model trained by `train`"),
    ("predict t as ScalerInPlace.`db.rf`;", "db.rf holds no ScalerInPlace state"),
])
def test_a_model_read_as_another_kind_is_the_users_mistake(session, ray_runtime, statement, message):
    session.execute(DATA + """
train t as RandomForest.`db.rf` where `fitParam.0.maxDepth`="2";
train t as ScalerInPlace.`db.s` where inputCols="a" and scaleMethod="min-max";""")
    with pytest.raises(MLSQLError, match=message.replace("`", ".").replace("(", r"\(")):
        session.execute(statement)


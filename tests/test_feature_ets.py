"""Feature ETs that learn at ``train`` and apply at ``register`` (``ml/feature/scale.md``,
``normalize.md``): the docs' own examples give the expected numbers, and scikit-learn / numpy
compute the same statistics independently on other data."""

from __future__ import annotations

import json

import numpy as np
import pytest
from sklearn.preprocessing import MinMaxScaler

from mlsql_ray.errors import MLSQLError

DOC_DATA = """set jsonStr='''
{"a":1,    "b":100, "label":0.0},
{"a":100,  "b":100, "label":1.0}
{"a":1000, "b":100, "label":0.0}
{"a":10,   "b":100, "label":0.0}
{"a":1,    "b":100, "label":1.0}
''';
load jsonStr.`jsonStr` as data;
"""


def test_scaler_in_place_as_the_doc_shows(session, tmp_path):
    session.execute(DOC_DATA + f"""
        train data as ScalerInPlace.`{tmp_path}/scaler` where inputCols="a,b" and scaleMethod="min-max"
          and removeOutlierValue="false";
        load parquet.`{tmp_path}/scaler/data` as featurize_table;
        register ScalerInPlace.`{tmp_path}/scaler` as scale_convert;
        select scale_convert(array(cast(7.0 as double), cast(8.0 as double))) as features as output;""")
    assert session.table("output").to_pylist() == [{"features": [0.006006006006006006, 0.5]}]
    want = MinMaxScaler().fit_transform(np.array([[1, 100], [100, 100], [1000, 100], [10, 100], [1, 100]], float))
    want[:, 1] = 0.5  # Spark's MinMaxScaler puts a constant column in the middle; scikit-learn at 0
    got = session.table("featurize_table")
    assert np.allclose(np.column_stack([got.column("a").to_numpy(), got.column("b").to_numpy()]), want)
    assert got.column("label").to_pylist() == [0.0, 1.0, 0.0, 0.0, 1.0]


def test_normalize_in_place_as_the_doc_shows(session, tmp_path):
    session.execute(DOC_DATA + f"""
        train data as NormalizeInPlace.`{tmp_path}/model` where inputCols="a,b" and scaleMethod="standard"
          and removeOutlierValue="false";
        load parquet.`{tmp_path}/model/data` as normalized;
        register NormalizeInPlace.`{tmp_path}/model` as norm_convert;
        select norm_convert(array(cast(7.0 as double), cast(8.0 as double))) as features as output;""")
    assert session.table("output").to_pylist() == [{"features": [-0.4932558994483363, 0.0]}]
    a = np.array([1, 100, 1000, 10, 1], float)
    assert np.allclose(session.table("normalized").column("a").to_numpy(), (a - a.mean()) / a.std(ddof=1))
    assert session.table("normalized").column("b").to_pylist() == [0.0] * 5


def test_a_list_column_is_scaled_per_position_and_the_function_agrees(session):
    session.execute("""
        select vec_dense(array(id * 3, 10 - id, id % 4)) as features from range(12) as pts;
        train pts as NormalizeInPlace.`db.norm` where inputCols="features" as scaled;
        register NormalizeInPlace.`db.norm` as standardize;
        select standardize(features) as again from pts as applied;""")
    x = np.arange(12, dtype=float)
    raw = np.column_stack([x * 3, 10 - x, x % 4])
    want = (raw - raw.mean(axis=0)) / raw.std(axis=0, ddof=1)
    assert np.allclose(np.stack(session.table("scaled").column("features").to_pylist()), want)
    assert np.allclose(np.stack(session.table("applied").column("again").to_pylist()), want)
    # the state is JSON in a Delta table, nothing to unpickle
    from deltalake import DeltaTable

    [row] = DeltaTable(str(session.warehouse / "db" / "norm" / "model")).to_pyarrow_table().to_pylist()
    assert row["et"] == "NormalizeInPlace" and json.loads(row["state"])["inputCols"] == ["features"]


@pytest.mark.parametrize("statement, message", [
    ('train data as ScalerInPlace.`db.s` where inputCols="a,nope";', "'nope', which data does not have"),
    ('train data as ScalerInPlace.`db.s` where inputCols="a" and scaleMethod="log3";', "scaleMethod 'log3'"),
    ('register ScalerInPlace.`db.never` as f;', "db.never holds no ScalerInPlace state"),
])
def test_mistakes_are_the_users(session, statement, message):
    session.execute(DOC_DATA)
    with pytest.raises(MLSQLError, match=message):
        session.execute(statement)


def test_registering_with_another_ets_state_is_refused(session):
    session.execute(DOC_DATA + 'train data as ScalerInPlace.`db.s` where inputCols="a";')
    with pytest.raises(MLSQLError, match="trained by ScalerInPlace, not NormalizeInPlace"):
        session.execute("register NormalizeInPlace.`db.s` as f;")

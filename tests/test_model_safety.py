"""Loading a model table runs none of its code unless asked: a model whose file carries Python
(a ``Lambda`` layer's lambda) is refused by ``register``, ``predict`` and ``load_model`` with an
error saying how to override, and loads with ``unsafe="true"`` / ``unsafe=True``.

The lambda in these models touches a marker file when it runs (Keras calls it while rebuilding the
model), so each test sees whether the code ran, not just whether an error came out."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from mlsql_ray import MLSQLError
from mlsql_ray.storage.rows import FILE_SCHEMA
from mlsql_ray.models import load_model, python_code_in, rows_from_model_file
from training_helpers import alive_actors, eventually

REFUSAL = r'Python code in it \(Lambda layer .*\).*unsafe="true".*unsafe=True'
INPUT = np.array([[1, 2, 3, 4], [0.5, 0, -1, 2]], dtype="float32")


def _lambda_model(marker: Path):
    """A small model whose Lambda layer touches ``marker`` whenever it runs."""
    import keras

    touch = eval(f"lambda x: (__import__('pathlib').Path({str(marker)!r}).touch(), x * 2)[1]")  # noqa: S307
    keras.utils.set_random_seed(1)
    return keras.Sequential([keras.Input((4,)), keras.layers.Lambda(touch, name="touch_marker"),
                             keras.layers.Dense(3, activation="softmax")])


def _plain_model():
    import keras

    keras.utils.set_random_seed(2)
    return keras.Sequential([keras.Input((4,)), keras.layers.Dense(3, activation="softmax")])


def _save(session, model, table: str, suffix: str = ".keras") -> None:
    """``model`` as streaming_tar rows in the Delta table ``table`` of the session's warehouse."""
    with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Keras warns that a lambda is being saved: that is the point
        path = Path(tmp) / f"model{suffix}"
        model.save(path)
        rows = rows_from_model_file(path.read_bytes(), path.name)
    session.catalog.add_arrow("model_rows", pa.Table.from_pylist(rows, schema=FILE_SCHEMA), "test")
    session.execute(f"save overwrite model_rows as delta.`{table}`;")


@pytest.fixture
def marker(tmp_path) -> Path:
    return tmp_path / "lambda-ran"


@pytest.fixture
def lambda_model(marker):
    model = _lambda_model(marker)
    expected = model.predict(INPUT, verbose=0)
    marker.unlink()  # building and predicting ran it here; from now on it must run only when asked
    return model, expected


@pytest.mark.slow
@pytest.mark.parametrize("suffix", [".keras", ".h5"])
def test_load_model_refuses_python_code_unless_unsafe(session, warehouse, lambda_model, marker, suffix):
    model, expected = lambda_model
    _save(session, model, "ai_model.with_code", suffix)
    with pytest.raises(MLSQLError, match=REFUSAL) as refused:
        load_model("ai_model.with_code", warehouse=warehouse)
    assert "'touch_marker'" in str(refused.value)
    assert not marker.exists()
    loaded = load_model("ai_model.with_code", warehouse=warehouse, unsafe=True)
    assert marker.exists()
    np.testing.assert_allclose(loaded.predict(INPUT, verbose=0), expected, rtol=1e-5)


@pytest.mark.slow  # the fast tier's only TensorFlow import in the test process (seconds); it keeps
# test_the_tf_keras_2_spelling_of_a_lambda_is_found for models.py
def test_a_plain_model_still_loads(session, warehouse):
    model = _plain_model()
    _save(session, model, "ai_model.plain")
    loaded = load_model("ai_model.plain", warehouse=warehouse)
    np.testing.assert_allclose(loaded.predict(INPUT, verbose=0), model.predict(INPUT, verbose=0), rtol=1e-5)


@pytest.mark.slow
def test_keras_unsafe_switch_in_the_process_does_not_open_the_door(session, warehouse, lambda_model, marker):
    """``keras.config.enable_unsafe_deserialization()`` (one line in any Python cell) overrides
    Keras's ``safe_mode=True``; the model is refused all the same."""
    _save(session, lambda_model[0], "ai_model.with_code")
    script = ("import keras\nkeras.config.enable_unsafe_deserialization()\n"
              "from mlsql_ray import MLSQLError\nfrom mlsql_ray.models import load_model\n"
              f"try:\n    load_model('ai_model.with_code', warehouse={str(warehouse)!r})\n"
              "except MLSQLError as exc:\n    print('refused:', exc)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
    assert done.returncode == 0, done.stderr
    assert "refused:" in done.stdout and "unsafe" in done.stdout
    assert not marker.exists()


def test_the_tf_keras_2_spelling_of_a_lambda_is_found():
    """tf.keras 2 wrote a Lambda's code as ``"function": [code, defaults, closure]`` with
    ``"function_type": "lambda"`` in an .h5 file's ``model_config``."""
    legacy = {"class_name": "Sequential", "config": {"name": "seq", "layers": [
        {"class_name": "InputLayer", "config": {"name": "in", "batch_input_shape": [None, 4]}},
        {"class_name": "Lambda", "config": {"name": "old_lambda", "function": ["4wEAAAAA", None, None],
                                            "function_type": "lambda", "module": "__main__"}},
        {"class_name": "Dense", "config": {"name": "dense", "units": 3}}]}}
    assert python_code_in(legacy) == ["Lambda layer 'old_lambda'"]
    assert python_code_in(json.loads(json.dumps(legacy).replace('"lambda", "module"', '"raw", "module"'))) == []


@pytest.fixture
def scoring_session(ray_session):
    ray_session.catalog.add_arrow("points", pa.table({"x": pa.array(INPUT.tolist(), pa.list_(pa.float32()))}), "test")
    return ray_session


@pytest.mark.slow
def test_register_refuses_python_code_unless_unsafe(scoring_session, lambda_model, marker):
    model, expected = lambda_model
    _save(scoring_session, model, "ai_model.with_code")
    with pytest.raises(MLSQLError, match=REFUSAL):
        scoring_session.execute('register tf.`ai_model.with_code` as scored_by_code where workers="1";')
    assert not marker.exists()
    assert alive_actors("Predictor") == []
    with pytest.raises(MLSQLError, match="scored_by_code"):
        scoring_session.execute("select scored_by_code(x) as p from points as nothing;")
    with pytest.raises(MLSQLError, match='unsafe must be "true" or "false"'):
        scoring_session.execute('register tf.`ai_model.with_code` as scored_by_code where unsafe="yes";')

    scoring_session.execute('register tf.`ai_model.with_code` as scored_by_code where workers="1" and unsafe="true";')
    assert eventually(marker.exists)  # the actor ran the lambda while loading the model
    scoring_session.execute("select scored_by_code(x) as p from points as scored;")
    got = np.array(scoring_session.table("scored").column("p").to_pylist())
    np.testing.assert_allclose(got, expected, rtol=1e-5)
    scoring_session.execute("unregister tf.`scored_by_code`;")


@pytest.mark.slow
def test_predict_refuses_python_code_unless_unsafe(scoring_session, lambda_model, marker):
    model, expected = lambda_model
    _save(scoring_session, model, "ai_model.with_code")
    with pytest.raises(MLSQLError, match=REFUSAL):
        scoring_session.execute('predict points as tf.`ai_model.with_code` where workers="1" as refused;')
    assert not marker.exists()
    with pytest.raises(MLSQLError):
        scoring_session.table("refused")

    scoring_session.execute('predict points as tf.`ai_model.with_code` where workers="1" and unsafe="true" as scored;')
    assert marker.exists()
    got = np.array(scoring_session.table("scored").column("prediction").to_pylist())
    np.testing.assert_allclose(got, expected, rtol=1e-5)
    assert eventually(lambda: alive_actors("Predictor") == [])

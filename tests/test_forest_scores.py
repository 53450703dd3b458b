"""Issue 42: a served RandomForest's class probabilities are asked of its trees directly on one thread
(``algs.random_forest._scores``), without the forest's joblib dispatch, and are the forest's own
numbers, bit for bit; anything the forest's checks would look at goes the forest's way."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.ensemble import RandomForestClassifier

from mlsql_ray.ml import registry


@pytest.fixture(scope="module")
def forest():
    rng = np.random.default_rng(7)
    x = rng.random((400, 6))
    y = (x[:, 0] + x[:, 1] * x[:, 2] > 0.8).astype(int) + (x[:, 3] > 0.7)
    return RandomForestClassifier(n_estimators=15, max_depth=6, random_state=0, n_jobs=1).fit(x, y), rng


def scores(estimator, x):
    return registry.get("RandomForest").scores(estimator, x)


def test_one_thread_asks_the_trees_and_gives_the_forests_numbers(forest, monkeypatch):
    model, rng = forest
    for rows in (1, 3, 64):
        x = rng.random((rows, 6)) * 1.2 - 0.1
        expected = model.predict_proba(x)
        with monkeypatch.context() as patched:  # the forest's own path is not taken
            patched.setattr(RandomForestClassifier, "predict_proba", lambda *a, **k: pytest.fail("the forest's way"))
            got = scores(model, x)
        assert got.dtype == expected.dtype and np.array_equal(got, expected)


@pytest.mark.filterwarnings("ignore:overflow encountered in cast")  # scikit-learn's own, on its way
def test_what_the_forests_checks_look_at_goes_its_way(forest):
    model, rng = forest
    x = rng.random((2, 6))
    x[1, 2] = np.nan  # the trees' learned direction for a missing value, as the forest routes it
    assert np.array_equal(scores(model, x), model.predict_proba(x))
    x[1, 2] = np.inf
    with pytest.raises(ValueError, match="infinity"):
        scores(model, x)
    x[1, 2] = 1e300  # no float32 holds it
    with pytest.raises(ValueError, match="too large"):
        scores(model, x)


def test_several_threads_go_the_forests_way(forest, monkeypatch):
    model, rng = forest
    model.set_params(n_jobs=2)
    try:
        calls = []
        original = RandomForestClassifier.predict_proba
        monkeypatch.setattr(RandomForestClassifier, "predict_proba", lambda self, x: calls.append(1) or original(self, x))
        x = rng.random((5, 6))
        got = scores(model, x)
        assert calls == [1] and np.allclose(got, original(model, x), rtol=0, atol=1e-12)  # threads add in any order
    finally:
        model.set_params(n_jobs=1)

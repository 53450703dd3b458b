"""Issue 15: training from SQL — train/predict/register with built-in algorithms, parameter
groups on Ray, Byzer's result table, model tables in Delta, and the errors of bad input.

Metrics are checked against scikit-learn's own metric functions on the predictions that
``predict`` returns, so the Spark-style evaluator is tested against an independent definition.
Data: a few hundred rows of the sample MNIST, or small generated tables."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn import metrics as skm

from conftest import SAMPLE_MNIST
from mlsql_ray.errors import MLSQLError

MNIST = f"""
load parquet.`{SAMPLE_MNIST}/train.parquet` as raw_train;
load parquet.`{SAMPLE_MNIST}/test.parquet` as raw_test;
select image, label from raw_train limit 300 as train;
select image, label from raw_test limit 200 as test;
"""


def groups(result) -> list[dict]:
    """Byzer's name/value rows → one dict per group (a group starts at modelPath)."""
    out = []
    for row in result.to_pylist():
        if row["name"] == "modelPath":
            out.append({})
        out[-1][row["name"]] = row["value"]
    return out


def parse_metrics(text: str) -> dict[str, float]:
    parts = text.replace(":", "").split()
    return {parts[i]: float(parts[i + 1]) for i in range(0, len(parts), 2)}


def classification_metrics(truth, predicted) -> dict[str, float]:
    """Spark's MulticlassClassificationEvaluator, computed with scikit-learn."""
    return {"f1": skm.f1_score(truth, predicted, average="weighted", zero_division=0),
            "weightedPrecision": skm.precision_score(truth, predicted, average="weighted", zero_division=0),
            "weightedRecall": skm.recall_score(truth, predicted, average="weighted", zero_division=0),
            "accuracy": skm.accuracy_score(truth, predicted)}


def assert_close(got: dict, want: dict) -> None:
    assert set(got) == set(want)
    for name in want:
        assert math.isclose(got[name], want[name], rel_tol=1e-9, abs_tol=1e-12), (name, got[name], want[name])


@pytest.fixture
def ray_session(ray_runtime, module_pool, warehouse):
    """A session on the test run's Ray whose actors come from, and go back to, the module's warm
    pool: the Predictors behind ``register`` (a fresh one is a Ray worker importing scikit-learn:
    seconds) serve the next test's ``register``, and GroupHosts started ahead after a train of
    several groups serve the next such train. The first train of several groups in the module
    (test_random_forest_groups_...) still fits them here, with no host ready; test_sql_train_feed
    and test_warm_workers test the hosts and the pool themselves."""
    from mlsql_ray import Session

    with Session(warehouse=warehouse, workers=module_pool) as s:
        yield s


def columns(session, table: str, *names: str):
    data = session.table(table)
    return [np.asarray(data.column(n).to_pylist()) for n in names]


@pytest.mark.slow
def test_random_forest_groups_in_parallel_with_byzer_result_and_metrics(ray_session):
    s = ray_session
    s.execute(MNIST)
    [result] = s.execute("""train train as RandomForest.`db.rf` where featuresCol="image" and evaluateTable="test"
        and numTrees="5" and `fitParam.0.maxDepth`="3" and `fitParam.1.maxDepth`="-1" and `fitParam.2.maxDepth`="8" as res;""")
    assert result.version == 0
    blocks = groups(s.table("res"))
    assert [list(b) for b in blocks] == [["modelPath", "algIndex", "alg", "metrics", "status", "message", "startTime",
                                          "endTime", "trainParams"]] * 3
    assert [b["status"] for b in blocks] == ["success", "fail", "success"]
    assert "max_depth" in blocks[1]["message"] and blocks[1]["metrics"] == ""
    assert blocks[0]["alg"] == "sklearn.ensemble.RandomForestClassifier"
    assert blocks[2]["trainParams"] == "Map(maxDepth -> 8, featuresCol -> image, labelCol -> label)"
    assert blocks[2]["modelPath"] == "db.rf/_model_0/model/2"
    # scripts read the result the Byzer way
    s.execute('select value from res where name="status" as st;')
    assert s.table("st").column("value").to_pylist() == ["success", "fail", "success"]

    for block in (blocks[0], blocks[2]):
        s.execute(f'predict test as RandomForest.`db.rf` where algIndex="{block["algIndex"]}" as scored;')
        truth, predicted, probability = columns(s, "scored", "label", "prediction", "probability")
        assert_close(parse_metrics(block["metrics"]), classification_metrics(truth, predicted))
        assert np.allclose(probability.sum(axis=1), 1) and (probability.argmax(axis=1) == predicted).all()

    best = max((b for b in blocks if b["status"] == "success"), key=lambda b: parse_metrics(b["metrics"])["f1"])
    s.execute(f"""predict test as RandomForest.`db.rf` where algIndex="{best['algIndex']}" as scored;
        register RandomForest.`db.rf` as rf_predict where autoSelectByMetric="f1";
        select rf_predict(image) as p from test as via_function;""")
    [by_function] = columns(s, "via_function", "p")
    [by_predict] = columns(s, "scored", "prediction")
    assert (by_function == by_predict).all()


@pytest.mark.slow
def test_register_probability_output_and_algindex(ray_session):
    s = ray_session
    s.execute(MNIST + """train train as LogisticRegression.`db.lr` where featuresCol="image" and maxIter="20"
        and regParam="0.1";""")
    s.execute("""register LogisticRegression.`db.lr` as lr_p where algIndex="0" and output="probability";
        predict test as LogisticRegression.`db.lr` as scored;
        select lr_p(image) as p from test as probs;""")
    assert np.allclose(np.stack(columns(s, "probs", "p")[0]), np.stack(columns(s, "scored", "probability")[0]))


@pytest.mark.parametrize("alg, params", [
    pytest.param("GBTClassifier", 'maxIter="5" and maxDepth="3"', marks=pytest.mark.slow),  # XGBoost: seconds
    ("LogisticRegression", 'maxIter="30" and regParam="0.01" and elasticNetParam="0.5"'),
    ("NaiveBayes", 'smoothing="0.5"'),
])
def test_classifiers_metrics_match_sklearn(session, alg, params):
    session.execute(MNIST + f"""train train as {alg}.`db.m` where featuresCol="image" and evaluateTable="test"
        and {params} as res;
        predict test as {alg}.`db.m` as scored;""")
    [block] = groups(session.table("res"))
    assert block["status"] == "success", block["message"]
    truth, predicted = columns(session, "scored", "label", "prediction")
    assert_close(parse_metrics(block["metrics"]), classification_metrics(truth, predicted))
    assert parse_metrics(block["metrics"])["accuracy"] > 0.5  # learnt something on 300 digits


REGRESSION = """
select vec_dense(array(id % 7, id % 5)) as features, cast(2 * (id % 7) - (id % 5) + (id % 3) * 0.25 as double) as label
from range(240) as reg;
"""


@pytest.mark.parametrize("alg", ["LinearRegression", "GBTRegressor"])
def test_regressors_metrics_match_sklearn(session, alg):
    session.execute(REGRESSION + f"""train reg as {alg}.`db.reg` where evaluateTable="reg" as res;
        predict reg as {alg}.`db.reg` as scored;""")
    [block] = groups(session.table("res"))
    truth, predicted = columns(session, "scored", "label", "prediction")
    mse = skm.mean_squared_error(truth, predicted)
    assert_close(parse_metrics(block["metrics"]), {"rmse": mse ** 0.5, "mse": mse, "r2": skm.r2_score(truth, predicted),
                                                   "mae": skm.mean_absolute_error(truth, predicted)})
    assert "probability" not in session.table("scored").column_names


SMALL = """
select vec_dense(array(id % 7, id % 5, id % 3)) as features, cast((id % 7 + id % 5) % 2 as double) as label
from range(120) as small;
"""


@pytest.mark.parametrize("alg, params, implementation", [
    ("NaiveBayes", 'modelType="gaussian"', "sklearn.naive_bayes.GaussianNB"),
    ("NaiveBayes", 'modelType="bernoulli"', "sklearn.naive_bayes.BernoulliNB"),
    ("NaiveBayes", 'smoothing="1.0"', "sklearn.naive_bayes.MultinomialNB"),
    ("LinearRegression", 'regParam="0.0"', "sklearn.linear_model.LinearRegression"),
    ("LinearRegression", 'regParam="0.1"', "sklearn.linear_model.Ridge"),
    ("LinearRegression", 'regParam="0.1" and elasticNetParam="0.5"', "sklearn.linear_model.ElasticNet"),
    ("LogisticRegression", 'maxIter="20"', "sklearn.linear_model.LogisticRegression"),
    ("RandomForest", 'numTrees="2"', "sklearn.ensemble.RandomForestClassifier"),
    ("GBTClassifier", 'maxIter="2"', "xgboost.XGBClassifier"),
    ("GBTRegressor", 'maxIter="2"', "xgboost.XGBRegressor"),
    ("KMeans", 'k="2"', "sklearn.cluster.KMeans"),
    ("LDA", 'k="2" and maxIter="2"', "sklearn.decomposition.LatentDirichletAllocation"),
])
def test_each_algorithm_reports_the_class_that_ran(session, alg, params, implementation):
    """``alg`` in the result and ``implementation`` in the model's metadata name the estimator the
    parameters picked (NaiveBayes's modelType="gaussian" is GaussianNB, not MultinomialNB)."""
    from mlsql_ray.ml import store

    session.execute(SMALL + f"train small as {alg}.`db.m` where {params} as res;")
    [block] = groups(session.table("res"))
    assert block["status"] == "success", block["message"]
    assert block["alg"] == implementation
    _, [group] = store.read(session.warehouse / "db" / "m", "db.m")
    assert group.metadata["implementation"] == implementation


@pytest.mark.slow
def test_kmeans_and_lda(session):
    session.execute("""
        select vec_dense(array(id % 2 * 10 + (id % 5) * 0.1, id % 2 * 10)) as features from range(60) as pts;
        train pts as KMeans.`db.km` where k="2" and seed="1";
        predict pts as KMeans.`db.km` as clustered;
        select vec_dense(array(id % 3, 3 - id % 3, id % 2, 1)) as features from range(50) as docs;
        train docs as LDA.`db.lda` where k="3" and docConcentration="3.0" and topicConcentration="3.0" and maxIter="10"
          and seed="10" and optimizer="online" and checkpointInterval="10";
        predict docs as LDA.`db.lda` as topics;""")
    features, clusters = columns(session, "clustered", "features", "prediction")
    high = np.stack(features)[:, 1] > 5
    assert len(set(clusters[high])) == 1 and len(set(clusters[~high])) == 1 and clusters[high][0] != clusters[~high][0]
    [distribution] = columns(session, "topics", "topicDistribution")
    assert np.stack(distribution).shape == (50, 3) and np.allclose(np.stack(distribution).sum(axis=1), 1)


@pytest.mark.slow  # trains LDA in Ray tasks: seconds each
def test_register_lda_gives_byzers_three_functions(ray_session):
    """ml/algs/lda.md: ``register LDA ... as lda`` defines lda(term), lda_doc(features) and
    lda_topic(topic, n), checked against the stored scikit-learn model (components_ is Spark's
    topicsMatrix transposed) and against predict's topicDistribution."""
    from mlsql_ray.ml import store
    from mlsql_ray.ml.predictor import FittedModel

    s = ray_session
    [*_, registered, _] = s.execute("""
        select id, vec_dense(array(id % 3, 3 - id % 3, id % 2, 1)) as features from range(50) as docs;
        train docs as LDA.`db.lda` where k="3" and maxIter="10" and seed="10";
        predict docs as LDA.`db.lda` as topics;
        register LDA.`db.lda` as lda;
        select id, lda(id % 5) as term, lda_doc(features) as doc, lda_topic(cast(id % 4 as double), 2) as topic
        from docs as served;""")
    assert "also lda_doc, lda_topic" in registered.message
    _, [group] = store.read(s.warehouse / "db" / "lda", "db.lda")
    topics = FittedModel(group, "db.lda").estimator.components_  # topics × terms
    weights = topics / topics.sum(axis=1, keepdims=True)
    predicted = s.table("topics").column("topicDistribution").to_pylist()
    for row in s.table("served").to_pylist():
        term, topic = row["id"] % 5, row["id"] % 4
        assert row["term"] == (topics[:, term].tolist() if term < 4 else None)  # 4 terms: lda(4) is null
        assert row["doc"] == predicted[row["id"]]
        if topic < 3:
            heaviest = np.argsort(-weights[topic])[:2]
            assert row["topic"]["termIndices"] == heaviest.tolist()
            assert np.allclose(row["topic"]["termWeights"], weights[topic][heaviest], rtol=1e-12)
        else:
            assert row["topic"] is None  # k="3": no topic 3


@pytest.mark.slow  # trains every algorithm in Ray tasks: seconds each
def test_automl_ranks_algorithms_and_predicts_with_the_best(ray_session):
    s = ray_session
    s.execute(MNIST + """train train as AutoML.`db.auto` where featuresCol="image" and algos="LogisticRegression,NaiveBayes"
        and evaluateTable="test" and sortedBy="f1" and maxIter="20" as res;
        predict test as AutoML.`db.auto` as scored;""")
    blocks = groups(s.table("res"))
    assert [b["alg"] for b in blocks] == ["sklearn.linear_model.LogisticRegression", "sklearn.naive_bayes.MultinomialNB"]
    best = max(blocks, key=lambda b: parse_metrics(b["metrics"])["f1"])
    truth, predicted = columns(s, "scored", "label", "prediction")
    assert_close(parse_metrics(best["metrics"]), classification_metrics(truth, predicted))


def test_automl_of_regressors_ranks_by_a_regression_metric(session):
    """AutoML compares regressors too, by rmse, r2, ...: without algos it trains the doc's default
    regressor, LinearRegression, and predict takes the best by the kind's default metric."""
    session.execute(REGRESSION + """train reg as AutoML.`db.auto_reg` where sortedBy="rmse" and evaluateTable="reg" as res;
        predict reg as AutoML.`db.auto_reg` as scored;""")
    [block] = groups(session.table("res"))
    assert block["alg"] == "sklearn.linear_model.LinearRegression" and block["status"] == "success"
    truth, predicted = columns(session, "scored", "label", "prediction")
    assert math.isclose(parse_metrics(block["metrics"])["rmse"], skm.root_mean_squared_error(truth, predicted), rel_tol=1e-9)


@pytest.mark.slow
def test_doc_example_random_forest(ray_session, tmp_path):
    session = ray_session
    """ml/algs/random_forest.md, with its jsonStr rows written as a select."""
    rows = [([5.1, 3.5, 1.4, 0.2], 0.0), ([5.1, 3.5, 1.4, 0.2], 1.0), ([5.1, 3.5, 1.4, 0.2], 0.0), ([4.4, 2.9, 1.4, 0.2], 0.0),
            ([5.1, 3.5, 1.4, 0.2], 1.0), ([5.1, 3.5, 1.4, 0.2], 0.0), ([5.1, 3.5, 1.4, 0.2], 0.0), ([4.7, 3.2, 1.3, 0.2], 1.0),
            ([5.1, 3.5, 1.4, 0.2], 0.0), ([5.1, 3.5, 1.4, 0.2], 0.0)]
    data = " union all ".join(f"select array({', '.join(map(str, f))}) as features, {l} as label" for f, l in rows)
    model = tmp_path / "model"
    session.execute(f"""select * from ({data}) as data;
        select vec_dense(features) as features ,label as label from data as data1;
        train data1 as RandomForest.`{model}` where keepVersion="true" and evaluateTable="data1"
        and `fitParam.0.featuresCol`="features" and `fitParam.0.labelCol`="label" and `fitParam.0.maxDepth`="2"
        and `fitParam.1.featuresCol`="features" and `fitParam.1.labelCol`="label" and `fitParam.1.maxDepth`="10";
        predict data1 as RandomForest.`{model}`;
        register RandomForest.`{model}` as rf_predict where algIndex="0";
        register RandomForest.`{model}` as rf_predict where autoSelectByMetric="f1";
        select rf_predict(features) as predict_label, label from data1 as output;""")
    assert session.table("output").num_rows == 10
    assert (model / "_delta_log").is_dir()
    assert {"features", "label", "prediction", "probability"} <= set(session.table("data1_predictions").column_names)


def test_keep_version(session):
    train = REGRESSION + 'train reg as LinearRegression.`db.kv` where regParam="{r}" and keepVersion="{keep}";'
    session.execute(train.format(r="0.1", keep="true"))
    session.execute(train.format(r="0.5", keep="true"))
    [first] = session.execute('predict reg as LinearRegression.`db.kv` where version="0" as v0;')
    assert "version 0" in first.message
    session.execute(train.format(r="0.5", keep="false"))
    with pytest.raises(MLSQLError, match=r"reading the stream registered as 'old' failed: .*No such file or directory"):  # older versions' files are gone: Byzer keeps one model without keepVersion
        session.execute('load delta.`db.kv` where version="0" as old; select count(*) from old as n;')
        session.table("n")  # a batch select reads the files when its rows are read


def test_model_sources(session):
    session.execute(MNIST + """train train as RandomForest.`db.rf` where featuresCol="image" and numTrees="3";
        load modelList.`` as algs;
        load modelParams.`RandomForest` as params;
        load modelExplain.`db.rf` where alg="RandomForest" as explained;""")
    assert {"RandomForest", "GBTClassifier", "GBTRegressor", "LogisticRegression", "LinearRegression", "NaiveBayes",
            "KMeans", "LDA", "AutoML"} <= set(session.table("algs").column("name").to_pylist())
    params = {r["param"]: r for r in session.table("params").to_pylist()}
    assert params["numTrees"]["defaultValue"] == "20" and params["maxDepth"]["implementationParam"] == "max_depth"
    explained = session.table("explained").to_pylist()
    assert len(explained) == 784 and {r["name"] for r in explained} == {"featureImportance"}
    assert math.isclose(sum(r["value"] for r in explained), 1.0, rel_tol=1e-9)


def test_model_explain_index_picks_the_train_of_model_n(session):
    """Byzer's ``index="N"`` (ModelSelfExplain.md): the models of the train whose modelPath was
    TARGET/_model_N/..., also written as the path TARGET/_model_N; a bad index names the kept ones."""
    def explained(target: str, where: str = "") -> list[tuple]:
        session.execute(f"load modelExplain.`{target}` {where} as x;")
        return [(r["algIndex"], r["name"], r["feature"], r["value"]) for r in session.table("x").to_pylist()]

    train = REGRESSION + 'train reg as LinearRegression.`db.kv` where regParam="{r}" and keepVersion="{keep}" as res;'
    session.execute(train.format(r="0.0", keep="true"))
    first = explained("db.kv")
    session.execute(train.format(r="50.0", keep="true"))
    assert [r["value"] for r in session.table("res").to_pylist() if r["name"] == "modelPath"] == ["db.kv/_model_1/model/0"]
    second = explained("db.kv")
    assert first != second and {name for _, name, _, _ in first} == {"coefficient", "intercept"}
    assert explained("db.kv", 'where index="0" and alg="LinearRegression"') == first
    assert explained("db.kv/_model_0") == first
    assert explained("db.kv", 'where index="1"') == second
    with pytest.raises(MLSQLError, match=r"db.kv has no model index '2' .*it has 0, 1\)"):
        explained("db.kv", 'where index="2"')
    session.execute(train.format(r="0.0", keep="false"))  # vacuums versions 0 and 1
    with pytest.raises(MLSQLError, match=r"no model index '0' .*it has 2\)"):
        explained("db.kv", 'where index="0"')
    assert explained("db.kv", 'where index="2"') == first


BAD = [
    ('train train as RandomTrees.`db.bad` where featuresCol="image";', "unknown algorithm 'RandomTrees': known are RandomForest"),
    # an unknown parameter is a warning (issue 43: Byzer ignores it), an error when strictOptions is set
    ('set strictOptions="true";\ntrain train as RandomForest.`db.bad` where featuresCol="image" and `fitParam.0.depth`="3";',
     "RandomForest has no option 'depth' (did you mean 'maxDepth'?); it knows: numTrees, maxDepth"),
    ('train train as RandomForest.`db.bad` where featuresCol="image" and numTrees="many";', "numTrees='many'"),
    ('train train as KerasClassifier.`db.bad` where featuresCol="image" and layers="wide";', "layers='wide'"),
    ('select cast(label as string) as s, label from train as words;\ntrain words as RandomForest.`db.bad` where featuresCol="s";',
     "features column 's' of words must hold numbers"),
    ('select image, 1 as label from train as one;\ntrain one as RandomForest.`db.bad` where featuresCol="image";',
     "label column 'label' of one has one class (1.0)"),
    ('select image as pixels, label from test as other;\ntrain train as RandomForest.`db.bad` where featuresCol="image" and evaluateTable="other";',
     "evaluateTable other has no features column 'image'"),
    ('register RandomForest.`db.plain` as f;', "db.plain holds no model trained by `train`"),
    ('register NaiveBayes.`db.good` as f;', "db.good holds RandomForest models, not NaiveBayes"),
    # AutoML ranks algorithms of one kind by one metric (ml/algs/auto_ml.md: classifiers by accuracy, f1, ...)
    ('train train as AutoML.`db.bad` where featuresCol="image" and algos="GBTs,ALSInPlace";',
     "AutoML compares algorithms of one kind, here classifiers (GBTs is one): ALSInPlace is a recommender model; "
     "algos lists classifiers (RandomForest, GBTClassifier, GBTs, LogisticRegression, NaiveBayes, KerasClassifier)"),
    ('train train as AutoML.`db.bad` where featuresCol="image" and algos="RandomForest,KMeans";',
     "KMeans is a clusterer model"),
    ('train train as AutoML.`db.bad` where featuresCol="image" and algos="LDA,NaiveBayes";', "LDA is a topics model"),
    ('train train as AutoML.`db.bad` where featuresCol="image" and algos="NaiveBayes,LinearRegression";',
     "LinearRegression is a regressor model; algos lists classifiers"),
    ('train train as AutoML.`db.bad` where featuresCol="image" and algos="LinearRegression,NaiveBayes";',
     "here regressors (LinearRegression is one): NaiveBayes is a classifier model"),
    ('train train as AutoML.`db.bad` where featuresCol="image" and algos="GBTs" and sortedBy="rmse";',
     "here regressors (sortedBy='rmse' ranks them): GBTs is a classifier model; algos lists classifiers ("),
    ('train train as AutoML.`db.bad` where featuresCol="image" and sortedBy="speed";',
     "AutoML cannot rank by sortedBy='speed': algos lists classifiers"),
]


@pytest.mark.parametrize("statement, message", BAD)
def test_bad_input_is_an_error_at_the_statement(session, statement, message):
    from mlsql_ray.storage import delta

    session.execute(MNIST + """train train as RandomForest.`db.good` where featuresCol="image" and numTrees="2";
        save overwrite test as delta.`db.plain`;""")
    path = delta.table_path(session.warehouse, "db.good", {})
    before = delta.open_table(path, "db.good").version()
    with pytest.raises(MLSQLError) as caught:
        session.execute("\n\n" + statement)
    assert message in caught.value.message
    assert caught.value.line == 2 + statement.count("\n") + 1
    assert delta.open_table(path, "db.good").version() == before


def test_untrusted_model_is_refused(session):
    """A model table whose skops file holds a type we do not trust (here os.system inside a
    FunctionTransformer) is not loaded."""
    import json
    import os

    import skops.io
    from sklearn.preprocessing import FunctionTransformer

    from mlsql_ray.ml import store
    from mlsql_ray.storage import delta

    evil = store.StoredGroup(0, "RandomForest", "success", {"numFeatures": 1, "featuresCol": "features", "kind": "classifier",
                                                             "classes": [0, 1]}, skops.io.dumps(FunctionTransformer(func=os.system)))
    table = store.to_table([evil])
    delta.write(delta.table_path(session.warehouse, "db.evil", {}), "db.evil", table.to_reader(), "overwrite", (), {})
    session.execute("select vec_dense(array(1.0)) as features from range(2) as pts;")
    with pytest.raises(MLSQLError, match="not trusted, so it is not loaded: posix.system"):
        session.execute("predict pts as RandomForest.`db.evil`;")
    assert json.loads(table.column("metadata")[0].as_py())["classes"] == [0, 1]


def test_vec_functions(session):
    cases = {
        "vec_argmax(vec_dense(array(1.0,2.0,7.0)))": 2,
        "vec_sparse(3, map(1,2,2,4))": [0.0, 2.0, 4.0],
        "vec_concat(array(vec_dense(array(1.0,2.0)),vec_dense(array(3.0,4.0))))": [1.0, 2.0, 3.0, 4.0],
        "vec_slice(vec_dense(array(1.0,2.0,3.0,4.0)),array(0,1,2))": [1.0, 2.0, 3.0],
        "vec_array(vec_dense(array(1.0,2.0)))": [1.0, 2.0],
        "vec_wise_mod(vec_dense(array(11,7,3)), vec_dense(array(2,3,4)))": [1.0, 1.0, 3.0],
        "vec_inplace_ew_mul(vec_dense(array(2.5, 2.0, 1.0)), 2)": [5.0, 4.0, 2.0],
        "vec_floor(vec_dense(array(2.5, 2.4, 1.6)))": [2.0, 2.0, 1.0],
        "vec_mean(vec_dense(array(1.0,2.0,7.0,2.0)))": 3.0,
        "vec_stddev(vec_dense(array(3.0, 4.0, 5.0)))": 1.0,
    }
    for expression, want in cases.items():
        session.execute(f"select {expression} as v as out;")
        assert session.table("out").column("v").to_pylist() == [want], expression


@pytest.mark.slow
def test_keras_classifier_trains_on_ray_actors(ray_session):
    """The seed's network in one statement: train.fit on 2 actors, scale baked into the model."""
    s = ray_session
    s.execute(MNIST + """train train as KerasClassifier.`db.keras` where featuresCol="image" and evaluateTable="test"
        and layers="32" and epochs="3" and batchSize="32" and learningRate="0.1" and scale="1/255" and workers="2" as res;
        predict test as KerasClassifier.`db.keras` as scored;""")
    [block] = groups(s.table("res"))
    assert block["status"] == "success", block["message"]
    truth, predicted = columns(s, "scored", "label", "prediction")
    assert_close(parse_metrics(block["metrics"]), classification_metrics(truth, predicted))
    assert parse_metrics(block["metrics"])["accuracy"] > 0.3  # chance is 0.1; 300 digits, 3 epochs
    # a server's /model/predict never loads a Keras group in its own process (TensorFlow's import)
    from mlsql_ray.ml import store
    from mlsql_ray.ml.predictor import Predictor
    from mlsql_ray.storage import delta

    _, [group] = store.read(delta.table_path(s.warehouse, "db.keras", {}), "db.keras")
    assert Predictor.here(store.to_table([group]).to_pylist()) is None


# a rank-2 rating matrix, (1 + u%3)(1 + i%4) + (u%5)(i%2), for 30 users and 20 items, 4 in 5 of it rated
RATINGS = """
select u, i, cast((1 + u % 3) * (1 + i % 4) + (u % 5) * (i % 2) as double) as rating
from (select id as u from range(30)) as us cross join (select id as i from range(20)) as its
where (u * 7 + i * 3) % 5 != 0 as ratings;
"""
ALS = ('train ratings as ALSInPlace.`{target}` where userCol="u" and itemCol="i" and rank="4" and regParam="0.001" '
       'and evaluateTable="ratings" and seed="7" {extra}')


@pytest.mark.slow  # fits ALS in Ray tasks: seconds each
def test_als_fits_a_low_rank_matrix_and_writes_top_n(ray_session, tmp_path):
    """More iterations, lower rmse, near 0 in the end; userRec/itemRec hold the top N by predicted
    rating, best first; the same seed gives the same model."""
    s = ray_session
    iterations = ["1", "2", "5", "20"]
    groups_ = " ".join(f'and `fitParam.{n}.maxIter`="{m}"' for n, m in enumerate(iterations))
    target = tmp_path / "als"
    s.execute(RATINGS + ALS.format(target=target, extra=groups_ + ' and userRec="5" and itemRec="3" as res;'))
    blocks = groups(s.table("res"))
    assert [b["status"] for b in blocks] == ["success"] * 4, [b["message"] for b in blocks]
    rmse = [parse_metrics(b["metrics"])["rmse"] for b in blocks]
    assert rmse == sorted(rmse, reverse=True) and len(set(rmse)) == 4 and rmse[-1] < 0.05, rmse
    s.execute(f"load parquet.`{target}/data/userRec` as user_rec; load parquet.`{target}/data/itemRec` as item_rec;")
    users = s.table("user_rec").to_pylist()
    assert sorted(row["u"] for row in users) == list(range(30))
    for row in users:
        ratings = [r["rating"] for r in row["recommendations"]]
        assert len(ratings) == 5 and ratings == sorted(ratings, reverse=True)
        assert len({r["i"] for r in row["recommendations"]}) == 5
    # the best group fits the matrix: user 2's top item is one of the largest of its row, (3)(4) + 2 = 14
    [user2] = [row for row in users if row["u"] == 2]
    assert user2["recommendations"][0]["i"] in (3, 7, 11, 15, 19) and abs(user2["recommendations"][0]["rating"] - 14) < 0.5
    items = s.table("item_rec").to_pylist()
    assert sorted(row["i"] for row in items) == list(range(20)) and all(len(row["recommendations"]) == 3 for row in items)
    s.execute(RATINGS + ALS.format(target=tmp_path / "again", extra=groups_ + " as res2;"))
    assert [b["metrics"] for b in groups(s.table("res2"))] == [b["metrics"] for b in blocks]
    assert not (tmp_path / "again" / "data").exists()  # no userRec/itemRec asked, none written


def test_als_cold_start_strategy(session, tmp_path):
    """A user the model never saw: its rows make rmse NaN (Spark's default "nan") or are left out ("drop")."""
    session.execute(RATINGS + "select * from ratings union all select 99 as u, 1 as i, 3.0 as rating as with_new;")
    rmse = {}
    for strategy in ("nan", "drop"):
        session.execute(ALS.format(target=tmp_path / strategy, extra=f'and coldStartStrategy="{strategy}" as r_{strategy};')
                        .replace('evaluateTable="ratings"', 'evaluateTable="with_new"'))
        [block] = groups(session.table(f"r_{strategy}"))
        rmse[strategy] = parse_metrics(block["metrics"])["rmse"]
    assert math.isnan(rmse["nan"]) and rmse["drop"] < 0.05, rmse


BAD_ALS = [
    (ALS.format(target="db.bad", extra='and `fitParam.0.userCol`="user_id";'),
     "ratings has no id column 'user_id' (userCol; columns: u, i, rating)"),
    (ALS.format(target="db.bad", extra='and ratingCol="stars";'), "ratings has no label column 'stars' (ratingCol;"),
    ('select u, i + 0.5 as i, rating from ratings as halves;\n' + ALS.format(target="db.bad", extra=";")
     .replace("train ratings", "train halves"), "id column 'i' (itemCol) of halves must hold whole numbers"),
    (ALS.format(target="db.bad", extra='and userRec="many";'), "ALSInPlace option userRec='many'"),
    ('predict ratings as ALSInPlace.`db.good`;', "ALSInPlace does not support batch predict or API predict (register)"),
    ('register ALSInPlace.`db.good` as recommend;', "ALSInPlace does not support batch predict or API predict (register)"),
]


@pytest.mark.parametrize("statement, message", BAD_ALS)
def test_als_bad_input_and_inference_are_errors_at_the_statement(session, statement, message):
    from mlsql_ray.storage import delta

    session.execute(RATINGS + ALS.format(target="db.good", extra='and maxIter="2";'))
    path = delta.table_path(session.warehouse, "db.good", {})
    with pytest.raises(MLSQLError) as caught:
        session.execute("\n\n" + statement)
    assert message in caught.value.message
    assert caught.value.line == 2 + statement.count("\n") + 1
    assert delta.open_table(path, "db.good").version() == 0
    assert not delta.table_path(session.warehouse, "db.bad", {}).exists()


def test_als_model_explain_gives_its_parameters_and_shapes(session, tmp_path):
    """ALS learns no per-feature numbers: modelExplain shows its parameters by Spark's
    name (booleans as 1/0) and the shapes of its factors, in the rows the other algorithms use."""
    session.execute(RATINGS + ALS.format(target=tmp_path / "als", extra='and implicitPrefs="true" and alpha="2.5" and maxIter="3";'))
    session.execute(f'load modelExplain.`{tmp_path / "als"}` where alg="ALSInPlace" as explained;')
    table = session.table("explained")
    assert table.column_names == ["algIndex", "alg", "name", "row", "feature", "value"]
    rows = table.to_pylist()
    assert {(r["alg"], r["row"], r["feature"]) for r in rows} == {("ALSInPlace", None, 0)}
    assert {r["name"]: r["value"] for r in rows} == {"rank": 4, "maxIter": 3, "regParam": 0.001, "implicitPrefs": 1,
                                                     "alpha": 2.5, "nonnegative": 0, "seed": 7, "numUsers": 30,
                                                     "numItems": 20}


def test_als_model_with_pickled_arrays_is_refused(session, tmp_path):
    """ALS factors are read with numpy's allow_pickle=False: an .npz whose array is a pickled object
    (one that would create a marker file when unpickled) is refused and nothing in it runs."""
    import io

    from mlsql_ray.ml import store
    from mlsql_ray.storage import delta

    marker = tmp_path / "unpickled"

    class Opens:
        def __reduce__(self):
            return open, (str(marker), "w")

    data = io.BytesIO()
    np.savez(data, user_ids=np.array([Opens()], dtype=object), item_ids=np.arange(2), user_factors=np.ones((1, 2)),
             item_factors=np.ones((2, 2)), params=np.frombuffer(b"{}", np.uint8))
    evil = store.StoredGroup(0, "ALSInPlace", "success", {"kind": "recommender"}, data.getvalue())
    delta.write(delta.table_path(session.warehouse, "db.evil", {}), "db.evil", store.to_table([evil]).to_reader(),
                "overwrite", (), {})
    with pytest.raises(MLSQLError, match="does not hold ALS factors as .npz.*allow_pickle=False"):
        session.execute('load modelExplain.`db.evil` where alg="ALSInPlace" as explained;')
    assert not marker.exists()


@pytest.mark.parametrize("implicit", [False, True])
def test_als_half_step_is_sparks_least_squares(implicit):
    """After a fit the user factors solve, one user at a time, Spark's problem for the final item
    factors Y: explicit (YᵤᵀYᵤ + λ·nᵤ·I)x = Yᵤᵀr; implicit (YᵀY + Yᵤᵀ(α|r|)Yᵤ + λ·n⁺ᵤ·I)x = Yᵤᵀ(1 + α|r|)[r > 0],
    nᵤ counting the user's ratings (a repeated rating twice), n⁺ᵤ its positive ones."""
    from mlsql_ray.ml.algs.als import SparkALS

    rng = np.random.default_rng(3)
    x = np.column_stack([rng.integers(0, 12, 150), rng.integers(0, 9, 150)]).astype(float)
    y = rng.integers(-1, 6, 150).astype(float)
    model = SparkALS(rank=3, max_iter=2, reg_param=0.3, implicit_prefs=implicit, alpha=0.7, random_state=5).fit(x, y)
    items = model.item_factors[np.searchsorted(model.item_ids, x[:, 1])]
    for u, user in enumerate(model.user_ids):
        rows = x[:, 0] == user
        f, r = items[rows], y[rows]
        if implicit:
            c = 0.7 * np.abs(r)
            a = model.item_factors.T @ model.item_factors + f.T @ (f * c[:, None]) + 0.3 * np.sum(r > 0) * np.eye(3)
            b = f.T @ np.where(r > 0, 1 + c, 0)
        else:
            a, b = f.T @ f + 0.3 * rows.sum() * np.eye(3), f.T @ r
        assert np.allclose(model.user_factors[u], np.linalg.solve(a, b))


def test_forests_get_their_features_as_float32_and_grow_the_same_trees():
    """RandomForest's features are handed over in the float32 scikit-learn's forests compute in
    (``Algorithm.features_dtype``): no second copy of the matrix, and the trees a float64 matrix
    would give; other algorithms keep float64."""
    import pyarrow as pa
    from sklearn.ensemble import RandomForestClassifier

    from mlsql_ray.ml import registry, runner

    rng = np.random.default_rng(0)
    features = rng.normal(size=(300, 6)) * 1e3  # values float32 rounds: its rounding is the forest's own
    table = pa.table({"f": pa.array(list(features), pa.list_(pa.float64())), "label": (features[:, 0] > 0).astype(float)})
    columns = {"featuresCol": "f", "labelCol": "label"}
    forest = runner.dataset(registry.get("RandomForest"), columns, table, "t")
    assert forest.x.dtype == np.float32
    assert runner.dataset(registry.get("LogisticRegression"), columns, table, "t").x.dtype == np.float64
    fitted = [RandomForestClassifier(n_estimators=5, random_state=0).fit(x, forest.y) for x in (forest.x, features)]
    assert all((a.tree_.threshold == b.tree_.threshold).all() and (a.tree_.feature == b.tree_.feature).all()
               for a, b in zip(fitted[0].estimators_, fitted[1].estimators_))

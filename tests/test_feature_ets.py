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


def test_a_function_registered_as_convert_is_called_as_any_other(session):
    """ml/feature/normalize.md registers its model ``as convert``: Spark has no convert/try_convert
    function of its own, so ``convert(x)`` is the registered one, in any case and in a where clause."""
    session.execute(DOC_DATA + """
        train data as ScalerInPlace.`db.s` where inputCols="a,b" and scaleMethod="min-max";
        register ScalerInPlace.`db.s` as convert;
        register ScalerInPlace.`db.s` as try_convert;
        select Convert(array(cast(a as double), cast(b as double))) as features,
               try_convert(array(cast(a as double), 100.0))[0] as again
        from data where convert(array(cast(a as double), 1.0))[0] > 0.005 as output;""")
    assert session.table("output").to_pylist() == [
        {"features": [0.0990990990990991, 0.5], "again": 0.0990990990990991},
        {"features": [1.0, 0.5], "again": 1.0},
        {"features": [0.009009009009009009, 0.5], "again": 0.009009009009009009}]


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


DISCRETIZER_DATA = """set jsonStr='''
{"features":[5.1,3.5,1.4,0.2],"label":0.0},
{"features":[5.1,3.5,1.4,0.2],"label":1.0}
{"features":[5.1,3.5,1.4,0.2],"label":0.0}
{"features":[4.4,2.9,1.4,0.2],"label":0.0}
{"features":[5.1,3.5,1.4,0.2],"label":1.0}
{"features":[5.1,3.5,1.4,0.2],"label":0.0}
{"features":[5.1,3.5,1.4,0.2],"label":0.0}
{"features":[4.7,3.2,1.3,0.2],"label":1.0}
{"features":[5.1,3.5,1.4,0.2],"label":0.0}
{"features":[5.1,3.5,1.4,0.2],"label":0.0}
''';
load jsonStr.`jsonStr` as data;
select features[0] AS a ,features[1] as b from data as data1;
"""


def test_discretizer_bucketizer_and_quantile_as_the_docs_show(session, tmp_path):
    session.execute(DISCRETIZER_DATA + f"""
        TRAIN data1 AS Discretizer.`{tmp_path}/b` WHERE method="bucketizer"
        and `fitParam.0.inputCol`="a" and `fitParam.0.splitArray`="-inf,0.0,1.0,inf"
        and `fitParam.1.inputCol`="b" and `fitParam.1.splitArray`="-inf,0.0,1.0,inf";
        REGISTER Discretizer.`{tmp_path}/b` as bucket_of;
        SELECT bucket_of(array(7,8)) as features as output;""")
    assert session.table("output").to_pylist() == [{"features": [2.0, 2.0]}]
    session.execute(f"""
        TRAIN data1 AS Discretizer.`{tmp_path}/q` WHERE method="quantile"
        and `fitParam.0.inputCol`="a" and `fitParam.0.outputCol`="a_v" and `fitParam.0.numBuckets`="3"
        and `fitParam.1.inputCol`="b" and `fitParam.1.outputCol`="b_v" and `fitParam.1.numBuckets`="3" as quantiles;
        REGISTER Discretizer.`{tmp_path}/q` AS quantile_of;
        SELECT quantile_of(array(7,8)) AS features AS output;""")
    assert session.table("output").to_pylist() == [{"features": [1.0, 1.0]}]
    assert session.table("quantiles").column("a_v").to_pylist() == [1, 1, 1, 0, 1, 1, 1, 0, 1, 1]


def test_discretizer_quantiles_match_numpy_and_warns_of_nothing(session):
    [*_, trained] = session.execute("""
        select cast((id * 37) % 101 as double) as x from range(200) as pts;
        train pts as Discretizer.`db.q` where method="quantile" and `fitParam.0.inputCol`="x"
          and `fitParam.0.outputCol`="bucket" and `fitParam.0.numBuckets`="4" as out;""")
    assert trained.warnings == []
    x = np.array([(i * 37) % 101 for i in range(200)], float)
    edges = np.quantile(x, [0.25, 0.5, 0.75], method="inverted_cdf")  # the element at rank ceil(q·n)
    assert session.table("out").column("bucket").to_pylist() == np.digitize(x, edges).astype(float).tolist()


def test_discretizer_mistakes_are_the_users(session):
    session.execute(DISCRETIZER_DATA)
    with pytest.raises(MLSQLError, match="strictly increasing"):
        session.execute('train data1 as Discretizer.`db.d` where `fitParam.0.inputCol`="a" '
                        'and `fitParam.0.splitArray`="1,0,2";')
    with pytest.raises(MLSQLError, match="outside the bucket edges"):
        session.execute('train data1 as Discretizer.`db.d` where `fitParam.0.inputCol`="a" '
                        'and `fitParam.0.splitArray`="0,1,2";')


def test_string_index_orders_by_frequency_and_register_maps_new_values(session):
    session.execute("""
        select word from values ('pear'), ('apple'), ('fig'), ('apple'), ('pear'), ('apple'), ('kiwi'), ('fig')
          as t(word) as words;
        train words as StringIndex.`db.si` where inputCol="word" as indexed;
        register StringIndex.`db.si` as word_index;
        select word, word_index(word) as i from values ('fig'), ('kiwi'), ('mango'), ('apple') as t(word) as scored;""")
    # Spark's frequencyDesc: apple ×3, then fig and pear ×2 in alphabetical order, then kiwi
    order = {"apple": 0.0, "fig": 1.0, "pear": 2.0, "kiwi": 3.0}
    words = session.table("indexed").column("word").to_pylist()
    assert session.table("indexed").column("word_index").to_pylist() == [order[w] for w in words]
    assert session.table("scored").to_pylist() == [{"word": "fig", "i": 1.0}, {"word": "kiwi", "i": 3.0},
                                                   {"word": "mango", "i": -1.0}, {"word": "apple", "i": 0.0}]


def test_a_registered_function_given_the_wrong_shape_is_the_users_error(session):
    session.execute(DOC_DATA + 'train data as ScalerInPlace.`db.s` where inputCols="a,b"; register ScalerInPlace.`db.s` as sc;')
    with pytest.raises(MLSQLError, match="sc: the function was trained on 2 values per row, not 1"):
        session.execute("select sc(array(1.0)) as x as y;")


def test_confusion_matrix_as_the_doc_shows_and_as_scikit_learn_counts(session, tmp_path):
    from sklearn.metrics import confusion_matrix, f1_score, precision_score, recall_score

    session.execute(f"""set rawData='''
{{"label":"cat","predict":"rabbit"}}
{{"label":"cat","predict":"dog"}}
{{"label":"cat","predict":"cat"}}
{{"label":"dog","predict":"dog"}}
{{"label":"cat","predict":"dog"}}
''';
        load jsonStr.`rawData` as data;
        train data as ConfusionMatrix.`{tmp_path}/model` where actualCol="label" and predictCol="predict";
        load parquet.`{tmp_path}/model/data` as output;
        load parquet.`{tmp_path}/model/detail` as detail;""")
    actual, predicted = ["cat", "cat", "cat", "dog", "cat"], ["rabbit", "dog", "cat", "dog", "dog"]
    labels = ["cat", "dog", "rabbit"]
    matrix = session.table("output")
    assert matrix.column_names == ["act\\prt", *labels] and matrix.column("act\\prt").to_pylist() == labels
    assert np.array_equal(np.column_stack([matrix.column(l).to_numpy() for l in labels]),
                          confusion_matrix(actual, predicted, labels=labels))
    detail = {(r["lable"], r["name"]): r["value"] for r in session.table("detail").to_pylist()}
    assert len(detail) == 36  # the doc's "Total 36": 12 figures per label
    assert [detail[("dog", n)] for n in ("TN", "FP", "FN", "TPR", "SPC")] == ["2", "2", "0", "1.0", "0.5"]  # the doc's
    for label, scorer, name in [(l, s, n) for l in labels for s, n in ((precision_score, "PPV"), (recall_score, "TPR"),
                                                                        (f1_score, "F1"))]:
        want = scorer(actual, predicted, labels=[label], average=None, zero_division=0)[0]
        assert float(detail[(label, name)]) == pytest.approx(want), (label, name)


def test_vec_map_in_place_as_the_doc_shows(session, tmp_path):
    session.execute(f"""set jsonStr='''
{{"features":{{"a":1.6,"b":1.2}},"label":0.0}}
{{"features":{{"a":1.5,"b":0.2}},"label":0.0}}
{{"features":{{"a":1.6,"b":1.2}},"label":0.0}}
{{"features":{{"a":1.6,"b":7.2}},"label":0.0}}
''';
        load jsonStr.`jsonStr` as data;
        select map("a", features.a, "b", features.b) as f from data as newdata;
        train newdata as VecMapInPlace.`{tmp_path}/model` where inputCol="f";
        load parquet.`{tmp_path}/model/data` as output;
        register VecMapInPlace.`{tmp_path}/model` as to_vec;
        select to_vec(map("a", 1, "b", 0)) as features, to_vec(map("b", 2.5, "zzz", 9)) as partial as applied;""")
    assert session.table("output").column("f").to_pylist() == [[1.6, 1.2], [1.5, 0.2], [1.6, 1.2], [1.6, 7.2]]
    assert session.table("applied").to_pylist() == [{"features": [1.0, 0.0], "partial": [0.0, 2.5]}]
    with pytest.raises(MLSQLError, match="must be a map of names to numbers"):
        session.execute(f'train data as VecMapInPlace.`{tmp_path}/m2` where inputCol="label";')


def test_an_et_taking_one_column_refuses_two(session):
    session.execute(DOC_DATA)
    with pytest.raises(MLSQLError, match="inputCol names one column, not 2"):
        session.execute('train data as StringIndex.`db.si` where inputCol="a,b";')


def test_predict_applies_each_fitted_feature_et_to_a_new_table(session):
    """``predict T as ET.`TARGET``` transforms T with the state train saved, as train did its own
    table; the expected values come from the training statistics, computed here with numpy."""
    session.execute(DOC_DATA + """
        select * from values (7, 8, 1.0), (1000, 100, 0.0) as t(a, b, label) as fresh;
        train data as ScalerInPlace.`db.s` where inputCols="a,b";
        predict fresh as ScalerInPlace.`db.s` as scaled;
        train data as NormalizeInPlace.`db.n` where inputCols="a";
        predict fresh as NormalizeInPlace.`db.n`;
        select cast(a as string) as word from data as words;
        train words as StringIndex.`db.si` where inputCol="word" and outputCol="i";
        select * from values ('1'), ('10'), ('7') as t(word) as new_words;
        predict new_words as StringIndex.`db.si` as indexed;
        train data as Discretizer.`db.d` where `fitParam.0.inputCol`="a" and `fitParam.0.splitArray`="-inf,10,inf"
          and `fitParam.0.outputCol`="a_bucket";
        predict fresh as Discretizer.`db.d` as bucketed;""")
    a = np.array([1, 100, 1000, 10, 1], float)
    scaled = session.table("scaled")
    assert scaled.column_names == ["a", "b", "label"]
    assert np.allclose(scaled.column("a").to_numpy(), (np.array([7, 1000]) - a.min()) / (a.max() - a.min()))
    assert scaled.column("b").to_pylist() == [0.5, 0.5]  # b was constant at train: Spark's middle
    assert scaled.column("label").to_pylist() == [1.0, 0.0]
    assert np.allclose(session.table("fresh_predictions").column("a").to_numpy(),
                       (np.array([7, 1000]) - a.mean()) / a.std(ddof=1))
    # at train: "1" twice (index 0), then "10", "100", "1000" once each in alphabetical order; "7" unseen
    assert session.table("indexed").to_pylist() == [{"word": "1", "i": 0.0}, {"word": "10", "i": 1.0},
                                                    {"word": "7", "i": -1.0}]
    assert session.table("bucketed").column("a_bucket").to_pylist() == [0.0, 1.0]


def test_predict_with_vec_map_in_place(session):
    session.execute("""
        select map('x', 1.0, 'y', 2.0) as f union all select map('z', 3.0) as f as maps;
        train maps as VecMapInPlace.`db.vm` where inputCol="f";
        select map('y', 5.0, 'unseen', 9.0) as f, 1 as id as later;
        predict later as VecMapInPlace.`db.vm` as vectors;""")
    assert session.table("vectors").to_pylist() == [{"f": [0.0, 5.0, 0.0], "id": 1}]


@pytest.mark.parametrize("statement, message", [
    ("predict data as ScalerInPlace.`db.never`;", "db.never holds no ScalerInPlace state"),
    ("predict data as RateSampler.`db.s`;", "RateSampler learns nothing to predict; ETs that do: .*ScalerInPlace"),
    ("predict other as ScalerInPlace.`db.s`;", "ScalerInPlace was trained on a column 'a', which other does not have"),
    ("predict data as NormalizeInPlace.`db.s`;", "trained by ScalerInPlace, not NormalizeInPlace"),
])
def test_predict_mistakes_are_the_users_at_the_statement(session, statement, message):
    session.execute(DOC_DATA + """train data as ScalerInPlace.`db.s` where inputCols="a,b";
        select 1 as b as other;""")
    with pytest.raises(MLSQLError, match=message) as info:
        session.execute("select 1 as x as one;\n  " + statement)
    assert (info.value.line, info.value.column) == (2, 3)


TEXTS = """select * from values ('MLSQL是好的语言', 0.0), ('Spark是好的语言', 1.0), ('MLSQL语言', 0.0),
    ('fast Spark fast', 1.0) as t(content, label) as corpus;
"""
# the words of TEXTS by text.py's rule (letter runs, one word per ideograph), the stop word 的 left out
CORPUS_WORDS = [["MLSQL", "是", "好", "语", "言"], ["Spark", "是", "好", "语", "言"], ["MLSQL", "语", "言"],
                ["fast", "Spark", "fast"]]


def _with_bigrams(words: list[str]) -> list[str]:
    return words + [f"{a} {b}" for a, b in zip(words, words[1:])]


def _spark_tfidf(docs: list[list[str]], priority: dict[str, float]) -> tuple[list[str], np.ndarray]:
    """Spark's TF-IDF with binary TF, by its definition: idf = ln((n + 1) / (df + 1))."""
    vocabulary = sorted({t for d in docs for t in d})
    df = np.array([sum(t in d for d in docs) for t in vocabulary])
    idf = np.log((len(docs) + 1) / (df + 1)) * np.array([priority.get(t, 1.0) for t in vocabulary])
    return vocabulary, idf


def test_tfidf_in_place_train_register_and_predict(session, tmp_path):
    (tmp_path / "stop.txt").write_text("的\n", encoding="utf-8")
    (tmp_path / "priority.txt").write_text("MLSQL\n", encoding="utf-8")
    session.execute(TEXTS + f"""
        train corpus as TfIdfInPlace.`{tmp_path}/tfidf` where inputCol="content" and ignoreNature="true"
          and nGrams="2" and stopWordPath="{tmp_path}/stop.txt" and priorityDicPath="{tmp_path}/priority.txt"
          and priority="5.0" as tfTable;
        load parquet.`{tmp_path}/tfidf/data` as saved;
        register TfIdfInPlace.`{tmp_path}/tfidf` as tfidf_convert;
        select tfidf_convert('MLSQL好 unseen') as features as output;
        select 'Spark是好的语言' as content as later;
        predict later as TfIdfInPlace.`{tmp_path}/tfidf` as scored;""")
    vocabulary, idf = _spark_tfidf([_with_bigrams(w) for w in CORPUS_WORDS], {"MLSQL": 5.0})

    def expected(terms: list[str]) -> list[float]:
        return [idf[i] if t in terms else 0.0 for i, t in enumerate(vocabulary)]

    for table in ("tfTable", "saved"):
        got = session.table(table)
        assert got.column_names == ["content", "label"] and got.column("label").to_pylist() == [0.0, 1.0, 0.0, 1.0]
        for row, words in zip(got.column("content").to_pylist(), CORPUS_WORDS):
            assert row == pytest.approx(expected(_with_bigrams(words)), rel=1e-12, abs=0)
    [features] = session.table("output").column("features").to_pylist()
    assert features == pytest.approx(expected(["MLSQL", "好", "MLSQL 好"]), rel=1e-12, abs=0)
    assert features[vocabulary.index("MLSQL")] == pytest.approx(5 * np.log(5 / 3), rel=1e-12)
    [scored] = session.table("scored").column("content").to_pylist()
    assert scored == session.table("tfTable").column("content").to_pylist()[1]


def test_tfidf_split_option_cuts_at_the_given_string(session):
    session.execute("""select * from values ('a|b|b'), ('b|c'), ('') as t(content) as pieces;
        train pieces as TfIdfInPlace.`db.tf` where inputCol="content" and split="|" as cut;""")
    vocabulary, idf = _spark_tfidf([["a", "b"], ["b", "c"], []], {})
    assert vocabulary == ["a", "b", "c"]
    np.testing.assert_allclose(np.array(session.table("cut").column("content").to_pylist()),
                               [[idf[0], idf[1], 0.0], [0.0, idf[1], idf[2]], [0.0, 0.0, 0.0]], rtol=1e-12, atol=0)


def _gensim_like_ours(sentences, **given):
    from gensim.models import Word2Vec

    return Word2Vec(sentences, workers=1, sg=1, hs=1, negative=0, sample=0, **given)


W2V_TEXTS = """select * from values ('the cat sat on the mat'), ('the dog sat on the log'), ('a cat and a dog'),
    ('the end') as t(content) as sentences;
"""
W2V_WORDS = [t.split(" ") for t in ("the cat sat on the mat", "the dog sat on the log", "a cat and a dog", "the end")]


def test_word2vec_in_place_vectors_are_gensims_and_deterministic(session, tmp_path):
    options = ('inputCol="content" and split=" " and vectorSize="8" and minCount="2" and windowSize="3" '
               'and maxIter="5" and seed="7"')
    session.execute(W2V_TEXTS + f"""
        train sentences as Word2VecInPlace.`{tmp_path}/w2v` where {options} as each;
        train sentences as Word2VecInPlace.`{tmp_path}/again` where {options};
        train sentences as Word2VecInPlace.`{tmp_path}/merged` where {options} and resultFeature="merge" as merged;
        train sentences as Word2VecInPlace.`{tmp_path}/flat` where {options} and resultFeature="flat" as flat;
        train sentences as Word2VecInPlace.`{tmp_path}/index` where {options} and resultFeature="index" as indexed;
        register Word2VecInPlace.`{tmp_path}/merged` as w2v_merge;
        register Word2VecInPlace.`{tmp_path}/w2v` as w2v_each;
        register Word2VecInPlace.`{tmp_path}/index` as w2v_index;
        select w2v_merge('a cat and a bird') as m, w2v_each('dog sat') as e, w2v_merge('bird') as none,
          w2v_index('the cat') as i as applied;
        select 'the dog sat' as content as later;
        predict later as Word2VecInPlace.`{tmp_path}/flat` as scored;""")
    model = _gensim_like_ours(W2V_WORDS, vector_size=8, min_count=2, window=3, epochs=5, alpha=0.025, seed=7)
    known = [[w for w in words if w in model.wv.key_to_index] for words in W2V_WORDS]  # mat, log, and, end: once
    vector = {w: model.wv[w].astype(np.float64) for w in model.wv.index_to_key}
    assert session.table("each").column("content").to_pylist() == [[vector[w].tolist() for w in k] for k in known]
    assert session.table("merged").column("content").to_pylist() == [
        np.stack([vector[w] for w in k]).sum(axis=0).tolist() for k in known]
    assert session.table("flat").column("content").to_pylist() == [
        np.concatenate([vector[w] for w in k]).tolist() for k in known]
    assert session.table("indexed").column("content").to_pylist() == [
        [model.wv.key_to_index[w] for w in k] for k in known]
    [applied] = session.table("applied").to_pylist()
    assert applied == {"m": np.stack([vector[w] for w in ("a", "cat", "a")]).sum(axis=0).tolist(),  # "and": once
                       "e": [vector["dog"].tolist(), vector["sat"].tolist()], "none": [],
                       "i": [model.wv.key_to_index["the"], model.wv.key_to_index["cat"]]}
    assert session.table("scored").column("content").to_pylist() == [
        np.concatenate([vector[w] for w in ("the", "dog", "sat")]).tolist()]

    # the vectors are Delta rows (float32, as gensim holds them) that two runs with one seed agree on
    from deltalake import DeltaTable

    stored = DeltaTable(str(tmp_path / "w2v" / "model_vectors")).to_pyarrow_table()
    assert stored.column("word").to_pylist() == model.wv.index_to_key
    assert np.array_equal(np.stack(stored.column("vector").to_numpy(zero_copy_only=False)), model.wv.vectors)
    again = DeltaTable(str(tmp_path / "again" / "model_vectors")).to_pyarrow_table()
    assert again.equals(stored)
    files = [p for p in (tmp_path / "w2v").rglob("*") if p.is_file()]
    assert files and all(p.suffix in (".parquet", ".json", ".crc") or p.parent.name == "_delta_log" for p in files)


@pytest.mark.parametrize("statement, message", [
    ('train corpus as TfIdfInPlace.`db.t` where inputCol="nope";', "'nope', which corpus does not have"),
    ('train corpus as TfIdfInPlace.`db.t` where inputCol="label";', "inputCol 'label' must hold text"),
    ('train blank as TfIdfInPlace.`db.t` where inputCol="content";', "hold no words to learn from"),
    ('train blank as Word2VecInPlace.`db.w` where inputCol="content";', "hold no words to learn from"),
    ('train corpus as Word2VecInPlace.`db.w` where inputCol="content" and minCount="9";',
     "no word of 'content' appears minCount=9 times"),
    ('train corpus as Word2VecInPlace.`db.w` where inputCol="content" and resultFeature="sum";',
     "resultFeature 'sum' is not one of"),
    ('train corpus as TfIdfInPlace.`db.t` where inputCol="content" and nGrams="1,x";', "nGrams must be whole"),
    ('train corpus as Word2VecInPlace.`db.w` where inputCol="content" and wordvecPaths="/tmp/vectors.txt";',
     r"wordvecPaths \(vectors trained elsewhere\) is not supported yet"),
    ('register TfIdfInPlace.`db.never` as f;', "db.never holds no TfIdfInPlace state"),
    ('predict corpus as Word2VecInPlace.`db.never`;', "db.never holds no Word2VecInPlace state"),
])
def test_text_et_mistakes_are_the_users_at_the_statement(session, statement, message):
    session.execute(TEXTS + "select * from values (''), (' ') as t(content) as blank;")
    with pytest.raises(MLSQLError, match=message) as info:
        session.execute("select 1 as x as one;\n  " + statement)
    assert (info.value.line, info.value.column) == (2, 3)


def test_a_text_et_refuses_another_ets_state(session):
    session.execute(TEXTS + 'train corpus as TfIdfInPlace.`db.t` where inputCol="content";')
    with pytest.raises(MLSQLError, match="trained by TfIdfInPlace, not Word2VecInPlace"):
        session.execute("register Word2VecInPlace.`db.t` as f;")


def test_a_dictionary_for_a_segmenter_we_lack_is_accepted_and_an_unknown_option_refused(session):
    [*_, trained] = session.execute(TEXTS + 'train corpus as TfIdfInPlace.`db.t` where inputCol="content" '
                                            'and dicPaths="/tmp/dic.txt" and ignoreNature="true";')
    assert trained.warnings == [] and trained.num_rows > 0
    with pytest.raises(MLSQLError) as info:  # an error with strictOptions, else a warning (issue 43)
        session.execute('set strictOptions="true";\n'
                        'train corpus as TfIdfInPlace.`db.t2` where inputCol="content" and dicPath="/tmp/dic.txt";')
    assert info.value.message == ("TfIdfInPlace has no option 'dicPath' (did you mean 'dicPaths'?); it knows: inputCol, "
                                  "split, stopWordPath, ignoreNature, dicPaths, nGrams, nGram, priorityDicPath, priority")


def test_feature_extract_in_place_registers_a_function_per_feature(session, tmp_path):
    """ml/feature/extract_example.md: train appends the features, register gives f (phone) and f_SUFFIX
    for each feature; HTML, e-mails and image links leave cleanedDoc, entities are decoded."""
    session.execute(f"""
        select '<b>Call</b> 电话: 400-123-4567 &amp; see http://a.io/x, img.dxycdn.com' as doc
        union all select cast(null as string) as doc as texts;
        train texts as FeatureExtractInPlace.`{tmp_path}/fe`;
        register FeatureExtractInPlace.`{tmp_path}/fe` as fe;
        select fe(doc) as phone, fe_url(doc) as url, fe_pic(doc) as pic, fe_cleanHtml(fe_cleanEmotionAndSpec(doc)) as clean,
               fe_length(fe_cleanHtml(doc)) as n, fe_english('ab1 ') as english, fe_number('ab1 ') as number,
               fe_blank('ab1 ') as blank, fe_punctuation('a,.') as punctuation, fe_mostchar('abca') as mostchar,
               fe_email('x@y.cn') as email, fe_qqwechat('微信 abcde1') as wechat
        from texts as applied;""")
    [features, empty] = session.table("applied").to_pylist()
    assert features == {"phone": True, "url": 1, "pic": 1, "clean": "Call 电话: 400-123-4567 & see , ", "n": 34,
                        "english": 50, "number": 25, "blank": 25, "punctuation": 66, "mostchar": 2, "email": True,
                        "wechat": True}
    assert [empty[k] for k in ("phone", "url", "pic", "clean", "n")] == [None] * 5
    session.execute(f"load FeatureExtractInPlace.`{tmp_path}/fe/data` as extracted;")
    assert session.table("extracted").column("phone").to_pylist() == [True, None]
    with pytest.raises(MLSQLError, match="must be text"):
        session.execute(f"select 1 as doc as numbers; train numbers as FeatureExtractInPlace.`{tmp_path}/fe2`;")

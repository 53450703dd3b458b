"""``Word2VecInPlace`` (``ml/feature/word2vec.md``): a text column to word vectors, in place.

The words (text.py) of the training texts train gensim's Word2Vec the way Spark's trains:
skip-gram with hierarchical softmax and no down-sampling of frequent words; Spark's parameter
names and defaults (``vectorSize`` 100, ``windowSize`` 5, ``maxIter`` 1, ``stepSize`` 0.025) and
``minCount`` 1 as Byzer passes it. One worker thread and ``seed`` make the vectors the same on
every run. A text then becomes, by ``resultFeature``: the list of its words' vectors (the
default; words below minCount left out), ``merge`` their sum, ``flat`` them joined end to end,
``index`` the words' positions in the vocabulary (most frequent first).

The vectors are saved as rows of a Delta table (word, vector: float32, as gensim holds them),
never as a gensim pickle; ``register``/``predict`` look words up in those rows.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pyarrow as pa

from ...errors import MLSQLError
from ...options import Param
from . import fitted, text
from .base import ET, Call

NAME = "Word2VecInPlace"


def _sequences(state: dict, found: list[list[str]]) -> pa.Array:
    vectors = state["vectors"].column("vector").combine_chunks()
    matrix = vectors.flatten().to_numpy().reshape(len(vectors), -1).astype(np.float64)
    position = {word: i for i, word in enumerate(state["vectors"].column("word").to_pylist())}
    known = [[position[w] for w in words if w in position] for words in found]
    return RESULTS[state["resultFeature"]][0](known, matrix)


def _each(known: list[list[int]], matrix: np.ndarray) -> pa.Array:
    return pa.array([[matrix[i] for i in row] for row in known], pa.list_(pa.list_(pa.float64())))


def _merge(known: list[list[int]], matrix: np.ndarray) -> pa.Array:
    """The sum of the words' vectors; a text without known words is [] (as Byzer)."""
    return pa.array([matrix[row].sum(axis=0) if row else [] for row in known], pa.list_(pa.float64()))


def _flat(known: list[list[int]], matrix: np.ndarray) -> pa.Array:
    return pa.array([matrix[row].reshape(-1) for row in known], pa.list_(pa.float64()))


def _index(known: list[list[int]], matrix: np.ndarray) -> pa.Array:
    return pa.array(known, pa.list_(pa.int32()))


#: resultFeature → (f(each text's known words as vocabulary positions, the vectors) → the column; its DuckDB type)
RESULTS = {"": (_each, "DOUBLE[][]"), "merge": (_merge, "DOUBLE[]"), "flat": (_flat, "DOUBLE[]"),
           "index": (_index, "INTEGER[]")}

#: Spark's name → (gensim's keyword, converter, default)
_TRAINING = {"vectorSize": ("vector_size", int, 100), "minCount": ("min_count", int, 1),
             "windowSize": ("window", int, 5), "maxIter": ("epochs", int, 1), "stepSize": ("alpha", float, 0.025),
             "seed": ("seed", int, 1)}


def _training(call: Call) -> dict:
    out = {}
    for name, (keyword, convert, default) in _TRAINING.items():
        given = call.option(name)
        try:
            value = default if given is None else convert(given.strip())
        except ValueError:
            raise MLSQLError(f"{NAME}: {name} must be a {'whole number' if convert is int else 'number'}, "
                             f"not {given!r}") from None
        if value <= 0 and name != "seed":
            raise MLSQLError(f"{NAME}: {name} must be positive, not {given!r}")
        out[keyword] = value
    return out


def _fit(table: pa.Table, call: Call) -> dict:
    from gensim.models import Word2Vec  # heavy: gensim

    if call.option("wordvecPaths", "").strip():
        raise MLSQLError(f"{NAME}: wordvecPaths (vectors trained elsewhere) is not supported yet; "
                         f"leave it out to train the vectors here")
    column = call.column("inputCol", table.column_names, NAME)
    result = call.option("resultFeature", "").strip()
    if result not in RESULTS:
        raise MLSQLError(f"{NAME}: resultFeature {result!r} is not one of merge, flat, index (or none)")
    settings, training = text.settings(call, NAME), _training(call)
    found = [text.words(settings, content) for content in text.column_texts(table, column, call.table, NAME)]
    counts = Counter(w for words in found for w in words)
    if not any(n >= training["min_count"] for n in counts.values()):
        raise text.no_words(NAME, column, call.table) if not counts else MLSQLError(
            f"{NAME}: no word of {column!r} appears minCount={training['min_count']} times")
    model = Word2Vec(found, workers=1, sg=1, hs=1, negative=0, sample=0, **training)
    vectors = pa.table({"word": pa.array(model.wv.index_to_key, pa.string()),
                        "vector": pa.array(list(model.wv.vectors), pa.list_(pa.float32()))})
    return {"inputCol": column, "words": settings, "resultFeature": result, "vectorSize": training["vector_size"],
            "vectors": vectors}


def _transform(state: dict, table: pa.Table, table_name: str) -> pa.Table:
    column = state["inputCol"]
    found = [text.words(state["words"], c) for c in text.column_texts(table, column, table_name, NAME)]
    return table.set_column(table.schema.get_field_index(column), column, _sequences(state, found))


def _apply(state: dict, values: pa.Array) -> pa.Array:
    return _sequences(state, [text.words(state["words"], c) for c in text.argument_texts(values)])


LEARNER = fitted.Learner(NAME, _fit, _transform,
                         fitted.Applier(_apply, lambda state: RESULTS[state["resultFeature"]][1]))

ETS = (
    ET(NAME, "a text column to word vectors in place (gensim's Word2Vec, as Spark's); register and predict "
       "apply the learnt vectors", LEARNER.train,
       (*text.PARAMS,
        Param("resultFeature", "", "merge (sum of the word vectors), flat (joined), index (word positions); "
                                   "none: the list of vectors"),
        Param("vectorSize", "100", "length of a word vector"),
        Param("minCount", "1", "words seen fewer times get no vector"),
        Param("windowSize", "5", "words on each side that count as context"),
        Param("maxIter", "1", "passes over the texts"),
        Param("stepSize", "0.025", "initial learning rate"),
        Param("seed", "1", "random seed (training runs on one thread, so a seed gives the same vectors)"),
        Param("wordvecPaths", "", "vectors trained elsewhere: not supported yet (an error; leave it out)")),
       kind="feature engineer", learner=LEARNER, example="""select 'spark sql on ray' as content union all select 'ray trains models' as content as corpus;
train corpus as Word2VecInPlace.`db.w2v` where inputCol="content" and vectorSize="4" and resultFeature="merge" as vectors;
register Word2VecInPlace.`db.w2v` as w2v_convert;
select w2v_convert('ray sql') as features as output;
"""),
)

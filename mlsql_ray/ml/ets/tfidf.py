"""``TfIdfInPlace`` (``ml/feature/tfidf.md``): a text column to TF-IDF vectors, in place.

As Byzer's: a text's terms are its words (text.py) plus, for each n of ``nGrams="2,3"``, its
n-grams (words joined by a space, as Spark's NGram); the vocabulary is every distinct term of the
training texts, position i the i-th in sorted order (Byzer hashes each term's index into as many
positions, so its order differs and two terms may share one); a term's value is binary TF ×
Spark's IDF, ln((n + 1) / (df + 1)) for n texts of which df hold the term, computed by
scikit-learn's TfidfVectorizer (whose smoothed IDF is that plus 1); terms listed in the file
``priorityDicPath`` are multiplied by ``priority``. Vectors are dense DOUBLE[] lists.
``register TfIdfInPlace.`TARGET` as f`` gives ``f(text)``; a term never seen at train counts for
nothing.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from ...errors import MLSQLError
from ...options import Param, number
from . import fitted, text
from .base import ET, Call

NAME = "TfIdfInPlace"


def _terms(state: dict, content: str) -> list[str]:
    words = text.words(state["words"], content)
    return words + [" ".join(words[i:i + n]) for n in state["nGrams"] for i in range(len(words) - n + 1)]


def _n_grams(call: Call) -> list[int]:
    given = call.option("nGrams") or call.option("nGram") or ""  # Byzer's pages spell it both ways
    try:
        sizes = [int(v) for v in given.split(",") if v.strip()]
    except ValueError:
        raise MLSQLError(f"{NAME}: nGrams must be whole numbers, e.g. \"2,3\", not {given!r}") from None
    if any(n < 2 for n in sizes):
        raise MLSQLError(f"{NAME}: each of nGrams must be at least 2 (single words are always terms), not {given!r}")
    return sizes


def _fit(table: pa.Table, call: Call) -> dict:
    from sklearn.feature_extraction.text import TfidfVectorizer  # heavy: scikit-learn

    column = call.column("inputCol", table.column_names, NAME)
    texts = text.column_texts(table, column, call.table, NAME)
    priority = number(call.options, "priority", 1.0, NAME)
    state = {"inputCol": column, "words": text.settings(call, NAME), "nGrams": _n_grams(call)}
    vectorizer = TfidfVectorizer(analyzer=lambda content: _terms(state, content), binary=True, norm=None,
                                 smooth_idf=True)
    try:
        vectorizer.fit(texts)
    except ValueError:  # scikit-learn's "empty vocabulary"
        raise text.no_words(NAME, column, call.table) from None
    vocabulary = vectorizer.get_feature_names_out().tolist()
    favoured = set(call.lines("priorityDicPath", NAME))
    boost = np.array([priority if term in favoured else 1.0 for term in vocabulary])
    return {**state, "vocabulary": vocabulary, "weights": ((vectorizer.idf_ - 1) * boost).tolist()}


def _vectors(state: dict, texts: list[str]) -> np.ndarray:
    from sklearn.feature_extraction.text import CountVectorizer  # heavy: scikit-learn

    counts = CountVectorizer(analyzer=lambda content: _terms(state, content), vocabulary=state["vocabulary"],
                             binary=True).transform(texts)
    return counts.multiply(np.asarray(state["weights"])).toarray()


def _transform(state: dict, table: pa.Table, table_name: str) -> pa.Table:
    column = state["inputCol"]
    vectors = text.vectors_array(_vectors(state, text.column_texts(table, column, table_name, NAME)))
    return table.set_column(table.schema.get_field_index(column), column, vectors)


LEARNER = fitted.Learner(NAME, _fit, _transform,
                         fitted.Applier(lambda state, values: text.vectors_array(_vectors(state, text.argument_texts(values)))))

ETS = (
    ET(NAME, "a text column to TF-IDF vectors in place (binary TF × Spark's IDF); register and predict apply "
       "the learnt vocabulary", LEARNER.train,
       (*text.PARAMS,
        Param("nGrams", "", "also count the n-grams of these sizes, e.g. 2,3"),
        Param("nGram", "", "another spelling of nGrams (Byzer's pages use both)"),
        Param("priorityDicPath", "", "a file of words (one a line) whose values are multiplied by priority"),
        Param("priority", "1", "the factor for the words of priorityDicPath")),
       kind="feature engineer", learner=LEARNER, example="""select 'spark sql on ray' as content union all select 'ray trains models' as content as corpus;
train corpus as TfIdfInPlace.`db.tfidf` where inputCol="content" as vectors;
register TfIdfInPlace.`db.tfidf` as tfidf_convert;
select tfidf_convert('ray sql') as features as output;
"""),
)

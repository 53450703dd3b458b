"""Which of the session's tables' columns and functions are vectors, so that casting one to a
string prints Spark's form of it (``spark.vectors``): ``predict``'s ``probability`` and
``topicDistribution`` (Spark's vectors) are marked in their Arrow field metadata, a select passes
the marks on to its result, and a registered model's probabilities are a vector too."""

from __future__ import annotations

import pyarrow as pa

from ..ml import predictor as ml_predictor
from ..spark import vector_marks as ml_vectors, vectors as spark_vectors
from ..lang.script_sql import rendered, translate

#: the columns of ``predict``'s output that Spark's models write as vectors
PREDICTED_VECTORS = {"probability": spark_vectors.DENSE, "topicdistribution": spark_vectors.DENSE}


def _columns(session, tables) -> dict[str, dict[str, str]]:
    return {t.lower(): found for t in tables if (found := session.catalog.vectors(t))}


def _functions(session) -> frozenset[str]:
    """The registered functions that answer a vector: a model's probabilities (``output="probability"``,
    LDA's ``f_doc``) and LDA's ``f(term)``, a row of its topics matrix."""
    registered = session.model_functions.functions if session.model_functions is not None else {}
    return frozenset(name for name, f in registered.items()
                     if getattr(f, "output", None) == "probability" or isinstance(f, ml_predictor.TermTopics))


def printed(session, spark_sql: str, line: int, col: int) -> str:
    """``spark_sql`` with its casts of vectors to strings printing Spark's form (cheap when the
    SQL casts nothing that could be a vector: a look at its text)."""
    columns = _columns(session, translate(spark_sql, line, col)[1])
    functions = _functions(session)
    if not spark_vectors.may_print_vectors(spark_sql, columns, functions):
        return spark_sql
    return spark_vectors.cast_vectors(rendered(spark_sql), columns, functions) or spark_sql


def of_select(session, spark_sql: str, tables) -> dict[str, str]:
    """The vector columns of a select's result (none unless it reads or makes vectors)."""
    columns, functions = _columns(session, tables), _functions(session)
    lowered = spark_sql.lower()
    if not columns and not functions and "vec_" not in lowered:
        return {}
    return spark_vectors.vector_outputs(rendered(spark_sql), columns, functions)


def mark_predicted(session, table: pa.Table, scored: str) -> pa.Table:
    """``predict``'s output: the vectors of the table it scored, and its own."""
    predicted = {c.lower(): PREDICTED_VECTORS[c.lower()] for c in table.column_names if c.lower() in PREDICTED_VECTORS}
    return ml_vectors.marked(table, {**session.catalog.vectors(scored), **predicted})

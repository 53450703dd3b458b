"""Byzer's vectors: the ``vec_*`` SQL functions (transform/udf/built_in_udf/udf_funcs.md) as DuckDB
macros, and vectors in a string context as Spark prints them.

A vector is a ``DOUBLE[]`` list: ``vec_dense`` is a cast, ``vec_sparse`` builds the dense list
too (DuckDB has no sparse vectors), and the element-wise functions are list lambdas, so
everything runs inside DuckDB, vectorised, with no Python call per row. Indices are 0-based as
in Byzer. A vector prints as Spark prints it (``vec_mk_string``, and the ``byzer_*_string`` macros
that ``cast_vectors`` puts where a vector is cast to a string), its numbers as Java's
``Double.toString`` writes them (``byzer_java_double``: Spark's cast of a double to a string).

In a string context: ``cast(probability as string)`` is
``[0.75,0.25]`` (``DenseVector.toString``), a sparse vector ``(3,[1,2],[2.0,4.0])``
(``SparseVector.toString``), the numbers as Java prints doubles. Byzer scripts take vectors apart
that way (``split(cast(probability as string), ",")``).

A vector is a ``DOUBLE[]`` list, which a Spark ``array<double>`` is too,
and Spark casts an array to ``[0.75, 0.25]``. So the cast of a list prints a vector's form only
where the expression is known to be a vector: a call of a ``vec_*`` function that returns one, a
call of a function the caller names (a registered model's probabilities), or a column the caller
knows to be a vector (``vector_columns``: the engine's tables remember which of their columns are).
``cast_vectors`` rewrites those casts into the calls of the macros below, in the Spark SQL that is
then translated as usual; ``vector_outputs`` tells which columns of a select's result are vectors.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping

import pyarrow as pa
from sqlglot import exp

from . import functions as spark_functions
from .family import Family

DENSE, SPARSE = "dense", "sparse"
#: Byzer's vec_* functions that return a dense vector (vec_array returns an array)
DENSE_FUNCTIONS = frozenset({"vec_dense", "vec_concat", "vec_slice", "vec_wise_mul", "vec_wise_add", "vec_wise_dif",
                             "vec_wise_mod", "vec_inplace_add", "vec_inplace_ew_mul", "vec_ceil", "vec_floor"})
SPARSE_FUNCTION = "vec_sparse"
#: the macros (``MACROS``) that print a dense vector, a vector known to be sparse (its non-zero
#: entries), and ``vec_sparse(size, map)`` itself (its map's entries, zeros included, as Spark keeps them)
DENSE_STRING, SPARSE_STRING, SPARSE_CALL_STRING = "byzer_vector_string", "byzer_sparse_vector_string", "byzer_vec_sparse_string"

#: a vector as Arrow holds it: DuckDB's ``DOUBLE[]``, the type the macros below cast to
ARROW_TYPE = pa.list_(pa.float64())

VectorColumns = Mapping[str, Mapping[str, str]]
"""table name (lower case) → {column name (lower case): DENSE or SPARSE} for its vector columns."""

_STRING_TYPES = {exp.DataType.Type.TEXT, exp.DataType.Type.VARCHAR, exp.DataType.Type.CHAR,
                 exp.DataType.Type.NVARCHAR, exp.DataType.Type.NCHAR}
_CAST_WORD = re.compile(r"\b(cast|string)\s*\(", re.IGNORECASE)


def may_print_vectors(spark_sql: str, vector_columns: VectorColumns, functions: frozenset[str]) -> bool:
    """A cheap test on the text: whether ``cast_vectors`` could change this SQL at all."""
    if not _CAST_WORD.search(spark_sql):
        return False
    lowered = spark_sql.lower()
    names = {*DENSE_FUNCTIONS, SPARSE_FUNCTION, *functions, *(c for columns in vector_columns.values() for c in columns)}
    return any(name in lowered for name in names)


def _aliases(tree: exp.Expression) -> dict[str, str]:
    """The name or alias a column may be qualified with → the table it reads (lower case)."""
    return {table.alias_or_name.lower(): table.name.lower() for table in tree.find_all(exp.Table)}


def vector_kind(node: exp.Expression, tree: exp.Expression, vector_columns: VectorColumns,
                functions: frozenset[str]) -> str | None:
    """DENSE or SPARSE when ``node`` is known to be a vector, else None."""
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.Anonymous):
        name = node.name.lower()
        return DENSE if name in DENSE_FUNCTIONS or name in functions else SPARSE if name == SPARSE_FUNCTION else None
    if isinstance(node, exp.Column) and node.name:
        column = node.name.lower()
        if node.table:
            table = _aliases(tree).get(node.table.lower())
            return vector_columns.get(table, {}).get(column) if table else None
        read = {t.name.lower() for t in tree.find_all(exp.Table)}
        return next((vector_columns[t][column] for t in sorted(read) if column in vector_columns.get(t, {})), None)
    return None


def _printed(node: exp.Expression, kind: str) -> exp.Expression:
    if kind == SPARSE and isinstance(node, exp.Anonymous) and node.name.lower() == SPARSE_FUNCTION \
            and len(node.expressions) == 2:
        return exp.Anonymous(this=SPARSE_CALL_STRING, expressions=[e.copy() for e in node.expressions])
    return exp.Anonymous(this=SPARSE_STRING if kind == SPARSE else DENSE_STRING, expressions=[node.copy()])


def _one_query(spark_sql: str) -> exp.Expression | None:
    """The query's tree as ``translate`` reads it (its templates rendered by the caller), or None
    when it is not one query sqlglot reads: translating it then says why, with the position."""
    try:
        trees = [t for t in spark_functions.parse(spark_sql) if t is not None]
    except Exception:  # noqa: BLE001 - any failure here is reported by translate
        return None
    return trees[0] if len(trees) == 1 else None


def cast_vectors(spark_sql: str, vector_columns: VectorColumns, functions: frozenset[str] = frozenset()) -> str | None:
    """``spark_sql`` with each cast of a vector to a string printing Spark's form of it, or None
    when it has no such cast (or is not one query sqlglot reads: translating it says why)."""
    tree, changed = _one_query(spark_sql), False
    if tree is None:
        return None
    for cast in list(tree.find_all(exp.Cast)):
        to = cast.args.get("to")
        if to is None or to.this not in _STRING_TYPES:
            continue
        kind = vector_kind(cast.this, tree, vector_columns, functions)
        if kind is not None:
            cast.replace(_printed(cast.this, kind))
            changed = True
    return tree.sql(dialect="spark") if changed else None


def vector_outputs(spark_sql: str, vector_columns: VectorColumns, functions: frozenset[str] = frozenset()) -> dict[str, str]:
    """The result columns of a select that are vectors: the vector columns it passes on (by name
    or ``*``) and the vectors it makes; {column (lower case): DENSE or SPARSE}. Remembered by
    its arguments: ``/model/predict`` asks it of the same select at every request, and parsing
    it took 7 % of the server's time under load."""
    held = tuple(sorted((table, tuple(sorted(columns.items()))) for table, columns in vector_columns.items()))
    return dict(_vector_outputs(spark_sql, held, functions))


@functools.lru_cache(maxsize=512)
def _vector_outputs(spark_sql: str, held: tuple, functions: frozenset[str]) -> tuple[tuple[str, str], ...]:
    vector_columns = {table: dict(columns) for table, columns in held}
    tree, found = _one_query(spark_sql), {}
    if not isinstance(tree, exp.Select):
        return ()
    for projection in tree.expressions:
        if isinstance(projection, exp.Star) or (isinstance(projection, exp.Column) and isinstance(projection.this, exp.Star)):
            qualifier = projection.table.lower() if isinstance(projection, exp.Column) and projection.table else None
            tables = [_aliases(tree).get(qualifier)] if qualifier else [t.name.lower() for t in tree.find_all(exp.Table)]
            for table in tables:
                found.update(vector_columns.get(table, {}))
            continue
        kind = vector_kind(projection.unalias(), tree, vector_columns, functions)
        if kind is not None and projection.alias_or_name:
            found[projection.alias_or_name.lower()] = kind
    return tuple(found.items())


#: vectors as text, defined first: the vec_* macros below call them
STRING_MACROS = {
    # Java's Double.toString: Spark's cast of a double to a string (casts.py's spark_real_to_string)
    "byzer_java_double": "(d) AS spark_real_to_string(CAST(d AS DOUBLE), CAST(CAST(d AS DOUBLE) AS VARCHAR))",
    # DenseVector.toString: [v0,v1,...]
    DENSE_STRING: "(v) AS '[' || array_to_string(list_transform(v, lambda e: byzer_java_double(e)), ',') || ']'",
    # SparseVector.toString: (size,[indices],[values]), of a dense list's non-zero entries
    SPARSE_STRING: "(v) AS '(' || CAST(len(v) AS VARCHAR) || ',[' || array_to_string(list_filter(range(len(v)), "
                         "lambda i: v[i + 1] <> 0), ',') || '],[' || array_to_string(list_transform(list_filter(v, "
                         "lambda e: e <> 0), lambda e: byzer_java_double(e)), ',') || '])'",
    # … and of vec_sparse(size, map) itself: every entry of the map, by index (Vectors.sparse sorts them)
    SPARSE_CALL_STRING: "(size, m) AS '(' || CAST(size AS VARCHAR) || ',[' || array_to_string(list_sort(map_keys(m)), ',') "
                                    "|| '],[' || array_to_string(list_transform(list_sort(map_keys(m)), "
                                    "lambda k: byzer_java_double(m[k])), ',') || '])'",
}

MACROS = {
    **STRING_MACROS,
    "vec_dense": "(a) AS CAST(a AS DOUBLE[])",
    "vec_array": "(v) AS CAST(v AS DOUBLE[])",
    "vec_sparse": "(size, m) AS CAST(list_transform(range(size), lambda i: coalesce(m[i], 0)) AS DOUBLE[])",
    "vec_argmax": "(v) AS list_position(v, list_max(v)) - 1",
    "vec_concat": "(vs) AS CAST(flatten(vs) AS DOUBLE[])",
    "vec_cosine": "(a, b) AS list_cosine_similarity(CAST(a AS DOUBLE[]), CAST(b AS DOUBLE[]))",
    "vec_slice": "(v, idx) AS CAST(list_transform(idx, lambda i: v[i + 1]) AS DOUBLE[])",
    "vec_mk_string": "(sep, v) AS array_to_string(list_transform(v, lambda e: byzer_java_double(e)), sep)",
    "vec_wise_mul": "(a, b) AS CAST(list_transform(range(len(a)), lambda i: a[i + 1] * b[i + 1]) AS DOUBLE[])",
    "vec_wise_add": "(a, b) AS CAST(list_transform(range(len(a)), lambda i: a[i + 1] + b[i + 1]) AS DOUBLE[])",
    "vec_wise_dif": "(a, b) AS CAST(list_transform(range(len(a)), lambda i: a[i + 1] - b[i + 1]) AS DOUBLE[])",
    "vec_wise_mod": "(a, b) AS CAST(list_transform(range(len(a)), lambda i: fmod(a[i + 1], b[i + 1])) AS DOUBLE[])",
    "vec_inplace_add": "(v, x) AS CAST(list_transform(v, lambda e: e + x) AS DOUBLE[])",
    "vec_inplace_ew_mul": "(v, x) AS CAST(list_transform(v, lambda e: e * x) AS DOUBLE[])",
    "vec_ceil": "(v) AS CAST(list_transform(v, lambda e: ceil(e)) AS DOUBLE[])",
    "vec_floor": "(v) AS CAST(list_transform(v, lambda e: floor(e)) AS DOUBLE[])",
    "vec_mean": "(v) AS list_avg(CAST(v AS DOUBLE[]))",
    "vec_stddev": "(v) AS list_stddev_samp(CAST(v AS DOUBLE[]))",
}

FAMILY = Family("vectors", macros=MACROS)


def dense_column(column: pa.Array) -> pa.Array:
    """``vec_dense`` of an Arrow column, as its macro's ``CAST(a AS DOUBLE[])`` makes it, for a
    caller that calls it without DuckDB (the service's fast path); a column of that type already is
    its own answer (a cast to it costs 5 µs a call)."""
    return column if column.type == ARROW_TYPE else column.cast(ARROW_TYPE)

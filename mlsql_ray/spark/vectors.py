"""Byzer's ``vec_*`` SQL functions (transform/udf/built_in_udf/udf_funcs.md) as DuckDB macros.

A vector is a ``DOUBLE[]`` list: ``vec_dense`` is a cast, ``vec_sparse`` builds the dense list
too (DuckDB has no sparse vectors), and the element-wise functions are list lambdas, so
everything runs inside DuckDB, vectorised, with no Python call per row. Indices are 0-based as
in Byzer. A vector prints as Spark prints it (``vec_mk_string``, and the ``byzer_*_string`` macros
that ``lang.spark_vectors`` puts where a vector is cast to a string), its numbers as Java's
``Double.toString`` writes them (``byzer_java_double``: Spark's cast of a double to a string).

Tables remember which of their columns are vectors in the Arrow field metadata ``VECTOR_KEY``
(``dense`` or ``sparse``; engine/vectors.py)."""

from __future__ import annotations

import pyarrow as pa

from .vector_casts import DENSE_STRING, SPARSE_CALL_STRING, SPARSE_STRING

VECTOR_KEY = b"mlsql.vector"

#: vectors as text, defined first: the vec_* macros below call them
STRING_MACROS = {
    # Java's Double.toString: Spark's cast of a double to a string (lang.spark_casts' spark_real_to_string)
    "byzer_java_double": ("d", "spark_real_to_string(CAST(d AS DOUBLE), CAST(CAST(d AS DOUBLE) AS VARCHAR))"),
    # DenseVector.toString: [v0,v1,...]
    DENSE_STRING: ("v", "'[' || array_to_string(list_transform(v, lambda e: byzer_java_double(e)), ',') || ']'"),
    # SparseVector.toString: (size,[indices],[values]), of a dense list's non-zero entries
    SPARSE_STRING: ("v", "'(' || CAST(len(v) AS VARCHAR) || ',[' || array_to_string(list_filter(range(len(v)), "
                         "lambda i: v[i + 1] <> 0), ',') || '],[' || array_to_string(list_transform(list_filter(v, "
                         "lambda e: e <> 0), lambda e: byzer_java_double(e)), ',') || '])'"),
    # … and of vec_sparse(size, map) itself: every entry of the map, by index (Vectors.sparse sorts them)
    SPARSE_CALL_STRING: ("size, m", "'(' || CAST(size AS VARCHAR) || ',[' || array_to_string(list_sort(map_keys(m)), ',') "
                                    "|| '],[' || array_to_string(list_transform(list_sort(map_keys(m)), "
                                    "lambda k: byzer_java_double(m[k])), ',') || '])'"),
}

MACROS = {
    **STRING_MACROS,
    "vec_dense": ("a", "CAST(a AS DOUBLE[])"),
    "vec_array": ("v", "CAST(v AS DOUBLE[])"),
    "vec_sparse": ("size, m", "CAST(list_transform(range(size), lambda i: coalesce(m[i], 0)) AS DOUBLE[])"),
    "vec_argmax": ("v", "list_position(v, list_max(v)) - 1"),
    "vec_concat": ("vs", "CAST(flatten(vs) AS DOUBLE[])"),
    "vec_cosine": ("a, b", "list_cosine_similarity(CAST(a AS DOUBLE[]), CAST(b AS DOUBLE[]))"),
    "vec_slice": ("v, idx", "CAST(list_transform(idx, lambda i: v[i + 1]) AS DOUBLE[])"),
    "vec_mk_string": ("sep, v", "array_to_string(list_transform(v, lambda e: byzer_java_double(e)), sep)"),
    "vec_wise_mul": ("a, b", "CAST(list_transform(range(len(a)), lambda i: a[i + 1] * b[i + 1]) AS DOUBLE[])"),
    "vec_wise_add": ("a, b", "CAST(list_transform(range(len(a)), lambda i: a[i + 1] + b[i + 1]) AS DOUBLE[])"),
    "vec_wise_dif": ("a, b", "CAST(list_transform(range(len(a)), lambda i: a[i + 1] - b[i + 1]) AS DOUBLE[])"),
    "vec_wise_mod": ("a, b", "CAST(list_transform(range(len(a)), lambda i: fmod(a[i + 1], b[i + 1])) AS DOUBLE[])"),
    "vec_inplace_add": ("v, x", "CAST(list_transform(v, lambda e: e + x) AS DOUBLE[])"),
    "vec_inplace_ew_mul": ("v, x", "CAST(list_transform(v, lambda e: e * x) AS DOUBLE[])"),
    "vec_ceil": ("v", "CAST(list_transform(v, lambda e: ceil(e)) AS DOUBLE[])"),
    "vec_floor": ("v", "CAST(list_transform(v, lambda e: floor(e)) AS DOUBLE[])"),
    "vec_mean": ("v", "list_avg(CAST(v AS DOUBLE[]))"),
    "vec_stddev": ("v", "list_stddev_samp(CAST(v AS DOUBLE[]))"),
}


def marked(table: pa.Table, vectors: dict[str, str]) -> pa.Table:
    """``table`` with its columns named in ``vectors`` (lower-case name → dense or sparse) marked
    as vectors in their field metadata."""
    if not vectors:
        return table
    fields = [f.with_metadata({**(f.metadata or {}), VECTOR_KEY: vectors[f.name.lower()].encode()})
              if f.name.lower() in vectors else f for f in table.schema]
    return table.cast(pa.schema(fields, metadata=table.schema.metadata))


def vector_fields(schema: pa.Schema) -> dict[str, str]:
    """The columns ``marked`` marked: lower-case name → dense or sparse."""
    return {f.name.lower(): f.metadata[VECTOR_KEY].decode() for f in schema if f.metadata and VECTOR_KEY in f.metadata}

"""Byzer's ``vec_*`` SQL functions (transform/udf/built_in_udf/udf_funcs.md) as DuckDB macros.

A vector is a ``DOUBLE[]`` list: ``vec_dense`` is a cast, ``vec_sparse`` builds the dense list
too (DuckDB has no sparse vectors), and the element-wise functions are list lambdas, so
everything runs inside DuckDB, vectorised, with no Python call per row. Indices are 0-based as
in Byzer."""

from __future__ import annotations

MACROS = {
    "vec_dense": ("a", "CAST(a AS DOUBLE[])"),
    "vec_array": ("v", "CAST(v AS DOUBLE[])"),
    "vec_sparse": ("size, m", "CAST(list_transform(range(size), lambda i: coalesce(m[i], 0)) AS DOUBLE[])"),
    "vec_argmax": ("v", "list_position(v, list_max(v)) - 1"),
    "vec_concat": ("vs", "CAST(flatten(vs) AS DOUBLE[])"),
    "vec_cosine": ("a, b", "list_cosine_similarity(CAST(a AS DOUBLE[]), CAST(b AS DOUBLE[]))"),
    "vec_slice": ("v, idx", "CAST(list_transform(idx, lambda i: v[i + 1]) AS DOUBLE[])"),
    "vec_mk_string": ("sep, v", "array_to_string(v, sep)"),
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

"""Byzer's built-in UDFs (byzer-doc transform/udf/built_in_udf/udf_funcs.md; their definitions are
Byzer's ``streaming.udf.Functions``) as DuckDB macros named ``byzer_*``, and the rewrite that calls
them (``byzer_udfs``)."""

from __future__ import annotations

from sqlglot import exp

from .calls import call
from .family import Family

BYZER_UDFS = ("array_index", "array_number_concat", "array_number_to_string", "array_string_to_double",
              "array_string_to_float", "array_string_to_int", "ngram")
"""Byzer built-ins sqlglot reads as unknown functions: called as the ``byzer_`` macro of that name."""


def byzer_udfs(tree: exp.Expression) -> None:
    """Byzer's built-in UDFs (udf_funcs.md) as the ``byzer_`` macros. Three of them sqlglot mistakes
    for Spark or DuckDB functions with other meanings: ``array_slice(a, from, to)`` (0-based, ``to``
    exclusive; sqlglot writes DuckDB's 1-based inclusive ARRAY_SLICE), ``array_concat(arrays)``
    (flatten; sqlglot writes LIST_CONCAT of one list), and ``array_intersect`` (ordered; DuckDB's is
    not); ``uuid()`` is Byzer's, without dashes."""
    for node in list(tree.find_all(exp.Anonymous, exp.ArraySlice, exp.ArrayConcat, exp.ArrayIntersect, exp.Uuid)):
        if isinstance(node, exp.Anonymous) and node.name.lower() in BYZER_UDFS:
            node.replace(call(f"byzer_{node.name.lower()}", *node.expressions))
        elif isinstance(node, exp.ArraySlice) and not node.args.get("is_length") and node.args.get("end") is not None:
            node.replace(call("byzer_array_slice", node.this, node.args["start"], node.args["end"]))
        elif isinstance(node, exp.ArrayConcat) and not node.expressions:
            node.replace(call("byzer_array_concat", node.this))
        elif isinstance(node, exp.ArrayIntersect) and len(node.expressions) == 2:
            node.replace(call("byzer_array_intersect", *node.expressions))
        elif isinstance(node, exp.Uuid):
            node.replace(call("byzer_uuid"))


MACROS: dict[str, str] = {
    # Byzer (Functions.scala): vec1.intersect(vec2), which for distinct elements is Spark's
    # array_intersect: the elements of the first array found in the second, in the first's order,
    # without duplicates. DuckDB's list_intersect has no defined order.
    "byzer_array_intersect": "(a, b) AS list_filter(a, lambda x, i: list_position(b, x) IS NOT NULL AND list_position(a, x) = i)",
    # vec1.indexOf(word): 0-based, -1 when absent
    "byzer_array_index": "(a, e) AS CAST(coalesce(list_position(a, e), 0) - 1 AS INTEGER)",
    # vec1.slice(from, if (to == -1) length else to): 0-based, `to` exclusive, bounds clamped
    "byzer_array_slice": """(a, f, t) AS CASE WHEN t = -1 THEN list_slice(a, greatest(f, 0) + 1, len(a))
                                              ELSE list_slice(a, greatest(f, 0) + 1, greatest(t, 0)) END""",
    # a.flatMap(f => f)
    "byzer_array_concat": "(a) AS flatten(a)",
    # a.flatMap(f => f).map(_.doubleValue())
    "byzer_array_number_concat": "(a) AS list_transform(flatten(a), lambda x: CAST(x AS DOUBLE))",
    # a.map(_.toString)
    "byzer_array_number_to_string": "(a) AS list_transform(a, lambda x: CAST(x AS VARCHAR))",
    "byzer_array_string_to_double": "(a) AS list_transform(a, lambda x: CAST(x AS DOUBLE))",
    "byzer_array_string_to_float": "(a) AS list_transform(a, lambda x: CAST(x AS FLOAT))",
    "byzer_array_string_to_int": "(a) AS list_transform(a, lambda x: CAST(x AS INTEGER))",
    # words.iterator.sliding(n).withPartial(false).map(_.mkString(" ")): no window shorter than n
    "byzer_ngram": "(w, n) AS list_transform(range(1, len(w) - n + 2), lambda i: array_to_string(list_slice(w, i, i + n - 1), ' '))",
    # Byzer's uuid(): a random UUID without its dashes (udf_funcs.md)
    "byzer_uuid": "() AS replace(CAST(uuid() AS VARCHAR), '-', '')",
}


FAMILY = Family("byzer", transforms=(byzer_udfs,), macros=MACROS)

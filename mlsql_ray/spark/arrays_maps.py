"""Spark's higher-order, array and map functions on DuckDB (issue 23, item 4): tree rewrites
(``TRANSFORMS``) and the DuckDB macros they call (``MACROS``).

DuckDB's lambdas count an element's index from 1, Spark's from 0; DuckDB has no ``zip_with``,
``map_filter``, ``transform_keys``/``transform_values``, ``map_zip_with``, ``array_sort`` with a
comparator or ``aggregate``'s finish function: each is rewritten into DuckDB's list functions,
with the lambda's body copied and its parameters replaced by the list expressions they stand for.
Spark's NULL rules (``exists`` is three-valued, ``array_contains(array(1, null), 2)`` is NULL,
``size(NULL)`` is -1 in non-ANSI mode, set operations keep the first array's order and one NULL)
are kept by the macros.

What the argument's type decides (``reverse``/``explode`` of an array or of a map, the element
type of ``sequence``, ``element_at(array, 0)``) is read from its form (a literal, a function's
result) or from Spark's type of it (``sql_types.spark_type``: a table's column).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

from sqlglot import exp

from ..errors import MLSQLError
from .sql_types import kind, spark_type, wider_integral
from .family import Family

MACROS: dict[str, str] = {
    # Spark's three-valued exists/forall: true/false when decided, NULL when a NULL left it open
    "spark_exists": """(l) AS CASE WHEN list_bool_or(l) THEN true
        WHEN list_count(l) < len(l) THEN NULL WHEN l IS NOT NULL THEN false END""",
    "spark_forall": """(l) AS CASE WHEN NOT list_bool_and(l) THEN false
        WHEN list_count(l) < len(l) THEN NULL WHEN l IS NOT NULL THEN true END""",
    # first occurrences in order, one NULL kept (DuckDB's list_distinct drops NULL and reorders)
    "spark_array_distinct": "(a) AS list_filter(a, lambda x, i: list_position(a, x) = i)",
    "spark_array_union": """(a, b) AS CASE WHEN a IS NOT NULL AND b IS NOT NULL
        THEN spark_array_distinct(list_concat(a, b)) END""",
    "spark_array_except": """(a, b) AS CASE WHEN b IS NOT NULL
        THEN list_filter(a, lambda x, i: list_position(b, x) IS NULL AND list_position(a, x) = i) END""",
    "spark_array_remove": "(a, e) AS CASE WHEN e IS NOT NULL THEN list_filter(a, lambda x: x IS NULL OR x <> e) END",
    "spark_array_contains": """(a, e) AS CASE WHEN e IS NULL THEN NULL WHEN list_contains(a, e) THEN true
        WHEN list_position(a, NULL) IS NOT NULL THEN NULL ELSE list_contains(a, e) END""",
    "spark_array_position": """(a, e) AS CASE WHEN a IS NOT NULL AND e IS NOT NULL
        THEN CAST(coalesce(list_position(a, e), 0) AS BIGINT) END""",
    "spark_arrays_overlap": """(a, b) AS CASE WHEN a IS NULL OR b IS NULL THEN NULL
        WHEN len(list_filter(a, lambda x: x IS NOT NULL AND list_contains(b, x))) > 0 THEN true
        WHEN len(a) > 0 AND len(b) > 0 AND (list_position(a, NULL) IS NOT NULL OR list_position(b, NULL) IS NOT NULL) THEN NULL
        ELSE false END""",
    "spark_array_repeat": "(e, n) AS CASE WHEN n IS NOT NULL THEN list_transform(range(greatest(n, 0)), lambda k: e) END",
    "spark_flatten": "(a) AS CASE WHEN list_position(a, NULL) IS NULL THEN flatten(a) END",
    # non-ANSI (legacy) size: -1 for NULL; arrays and maps alike
    "spark_size": "(x) AS CAST(coalesce(cardinality(x), -1) AS INTEGER)",
    # sequence(start, stop): the step is -1 when start > stop
    "spark_sequence": "(a, b) AS CASE WHEN a <= b THEN generate_series(a, b) ELSE generate_series(a, b, -1) END",
    "spark_sequence_dates": """(a, b) AS CASE WHEN a <= b THEN generate_series(a, b, INTERVAL 1 DAY)
        ELSE generate_series(a, b, -INTERVAL 1 DAY) END""",
    # a CSV line's fields (Spark's from_csv): quoted fields unquoted, "" inside them a quote; an
    # empty unquoted field is NULL
    "spark_csv_fields": """(s, sep) AS list_transform(
        regexp_extract_all(s || sep, '("(?:[^"]|"")*"|[^"' || regexp_escape(sep) || ']*)' || regexp_escape(sep), 1),
        lambda f: CASE WHEN f = '' THEN NULL WHEN f[1] = '"' THEN replace(f[2:-2], '""', '"') ELSE f END)""",
    "spark_shuffle": "(a) AS list_transform(list_sort(list_transform(a, lambda x: {'r': random(), 'x': x})), lambda p: p.x)",
    # explode_outer & co: an empty or NULL array gives one row of NULLs
    "spark_outer": "(a) AS CASE WHEN len(a) > 0 THEN a ELSE [NULL] END",
    "spark_pos_entries": "(a) AS list_transform(a, lambda x, i: {'pos': CAST(i - 1 AS INTEGER), 'col': x})",
    "spark_pos_map_entries": """(m) AS list_transform(map_entries(m),
        lambda e, i: {'pos': CAST(i - 1 AS INTEGER), 'key': e.key, 'value': e.value})""",
    # str_to_map(text, pairDelim, keyValueDelim): both delimiters are regexes; the value is what
    # follows the first key-value delimiter (NULL when there is none)
    "spark_str_to_map": """(s, pd, kd) AS map_from_entries(list_transform(regexp_split_to_array(s, pd), lambda p: {
        'key': CASE WHEN regexp_matches(p, kd) THEN regexp_extract(p, '^(.*?)(?:' || kd || ')', 1) ELSE p END,
        'value': CASE WHEN regexp_matches(p, kd) THEN regexp_extract(p, '^.*?(?:' || kd || ')(.*)$', 1) END}))""",
}

_FRESH = "__mlsql_"


def _call(name: str, *args: exp.Expression) -> exp.Anonymous:
    return exp.Anonymous(this=name, expressions=list(args))


def _fresh(counter: itertools.count) -> str:
    return f"{_FRESH}{next(counter)}"


def gated(*transforms: tuple[Callable[[exp.Expression], None], tuple[type, ...], frozenset[str]]) -> Callable[[exp.Expression], None]:
    """One transform for a family: it walks the tree once, noting the kinds of node and the names
    of the unknown functions it holds, and runs each of ``transforms`` only when one of its node
    classes or function names is there (translation stays one pass for SQL that uses none)."""
    def run(tree: exp.Expression) -> None:
        kinds: set[type] = set()
        names: set[str] = set()
        for node in tree.walk():
            kinds.add(type(node))
            if isinstance(node, exp.Anonymous):
                names.add(node.name.lower())
        for transform, classes, called in transforms:
            if not names.isdisjoint(called) or any(issubclass(kind, classes) for kind in kinds):
                transform(tree)
    return run


# -- lambdas ---------------------------------------------------------------------------------------

def _references(body: exp.Expression, name: str):
    """The nodes of ``body`` that read the lambda variable ``name`` (sqlglot writes them as bare
    identifiers), not those under a nested lambda that binds the same name again."""
    stack = [body]
    while stack:
        node = stack.pop()
        if isinstance(node, exp.Lambda) and node is not body and any(p.name == name for p in node.expressions):
            continue
        if isinstance(node, exp.Identifier) and node.name == name and _is_value(node):
            yield node
        stack.extend(node.iter_expressions())


def _is_value(node: exp.Identifier) -> bool:
    parent = node.parent
    if parent is None or isinstance(parent, (exp.Lambda, exp.Alias, exp.Column, exp.Table, exp.TableAlias)):
        return False
    field_name = {exp.Dot: "expression", exp.PropertyEQ: "this"}.get(type(parent))
    return node.arg_key != field_name


def _body(lam: exp.Expression, values: list[exp.Expression]) -> exp.Expression:
    """A copy of the lambda's body with its parameters replaced by ``values``; a function argument
    that is no lambda (Spark accepts ``transform(xs, 0)``) is its own body."""
    if not isinstance(lam, exp.Lambda):
        return lam.copy()
    body = exp.Paren(this=lam.this.copy())
    for param, value in zip(lam.expressions, values):
        for ref in list(_references(body, param.name)):
            ref.replace(value.copy())
    return body.this


def _lambda(params: list[str], body: exp.Expression) -> exp.Lambda:
    return exp.Lambda(this=body, expressions=[exp.to_identifier(p) for p in params])


def _struct_tuples(body: exp.Expression, names: list[str] | None = None) -> exp.Expression:
    """Spark reads ``(a, b)`` in a lambda as ``struct(a, b)``: fields named after the columns or
    lambda variables they are, else ``col1``, ``col2``… (``names`` when the struct must match an
    accumulator's fields)."""
    if not isinstance(body, exp.Tuple):
        return body
    fields = []
    for i, item in enumerate(body.expressions):
        if isinstance(item, exp.Alias):
            name, value = item.alias, item.this
        else:
            name = names[i] if names and i < len(names) else (
                item.name if isinstance(item, (exp.Identifier, exp.Column)) else f"col{i + 1}")
            value = item
        fields.append(exp.PropertyEQ(this=exp.to_identifier(name), expression=value))
    return exp.Struct(expressions=fields)


def _field_names(node: exp.Expression) -> list[str] | None:
    if isinstance(node, exp.Struct):
        return [f.this.name if isinstance(f, exp.PropertyEQ) else f.alias for f in node.expressions]
    return None


# -- the transforms -------------------------------------------------------------------------------------

def indexes_from_zero(tree: exp.Expression) -> None:
    """``transform(xs, (x, i) -> …)`` and ``filter(xs, (x, i) -> …)``: Spark's ``i`` counts from 0
    and is an INT; DuckDB's ``lambda x, i`` counts from 1 (BIGINT). The index becomes
    ``CAST(i - 1 AS INT)`` in the body. A second argument that is no lambda (``transform(xs, 0)``)
    becomes one."""
    for node in list(tree.find_all(exp.Transform, exp.ArrayFilter)):
        lam = node.expression
        if not isinstance(lam, exp.Lambda):
            node.set("expression", _lambda([f"{_FRESH}x"], lam.copy()))
            continue
        lam.set("this", _struct_tuples(lam.this))
        if len(lam.expressions) == 2:
            index = lam.expressions[1].name
            for ref in list(_references(lam.this, index)):
                ref.replace(exp.Cast(this=exp.Paren(this=exp.Sub(this=exp.to_identifier(index), expression=exp.Literal.number(1))),
                                     to=exp.DataType.build("INT")))


def aggregate_with_finish(tree: exp.Expression) -> None:
    """Spark's ``aggregate(xs, start, merge[, finish])`` (also ``reduce``): DuckDB's
    ``list_reduce(xs, merge, start)`` has no finish; the finish is applied to the reduced value
    bound once as ``list_transform([reduced], lambda acc: finish)[1]``. A struct start written
    ``(0 as sum, 0 as n)`` is a struct, and the merge's ``(acc.sum + x, acc.n + 1)`` takes its
    field names."""
    nodes = [n for n in tree.find_all(exp.Reduce, exp.Anonymous)
             if isinstance(n, exp.Reduce) or (n.name.lower() == "reduce" and len(n.expressions) in (3, 4))]
    for node in nodes:
        if isinstance(node, exp.Reduce):
            array, start, merge, finish = node.this, node.args["initial"], node.args["merge"], node.args.get("finish")
        else:
            array, start, merge, *rest = node.expressions
            finish = rest[0] if rest else None
        start = _struct_tuples(start.copy())
        merge = merge.copy()
        if isinstance(merge, exp.Lambda):
            merge.set("this", _struct_tuples(merge.this, _field_names(start)))
        else:
            merge = _lambda([f"{_FRESH}acc", f"{_FRESH}x"], merge)
        reduced = _call("list_reduce", array.copy(), merge, start)
        if finish is not None:
            params = [p.name for p in finish.expressions] if isinstance(finish, exp.Lambda) else [f"{_FRESH}acc"]
            body = finish.this.copy() if isinstance(finish, exp.Lambda) else finish.copy()
            bound = _call("list_transform", exp.Array(expressions=[reduced]), _lambda(params[:1], body))
            reduced = exp.Bracket(this=bound, expressions=[exp.Literal.number(1)], offset=1)
        node.replace(reduced)


def zip_with(tree: exp.Expression) -> None:
    """Spark's ``zip_with(a, b, (x, y) -> f)``: the shorter array padded with NULLs, NULL when
    either is NULL. DuckDB: ``f`` over the positions of the longer one."""
    counter = itertools.count()
    for node in [n for n in tree.find_all(exp.Anonymous) if n.name.lower() == "zip_with" and len(n.expressions) == 3]:
        a, b, lam = node.expressions
        if isinstance(lam, exp.Lambda):
            lam.set("this", _struct_tuples(lam.this))
        k = _fresh(counter)
        at = lambda arr: exp.Bracket(this=arr.copy(), expressions=[exp.Add(this=exp.to_identifier(k), expression=exp.Literal.number(1))],  # noqa: E731
                                     offset=1)
        body = _body(lam, [at(a), at(b)])
        longest = exp.Greatest(this=exp.Length(this=a.copy()), expressions=[exp.Length(this=b.copy())])
        zipped = _call("list_transform", _call("range", longest), _lambda([k], body))
        node.replace(_unless_null([a, b], zipped))


def _unless_null(args: list[exp.Expression], value: exp.Expression) -> exp.Case:
    any_null = exp.or_(*(exp.Is(this=a.copy(), expression=exp.Null()) for a in args))
    return exp.Case(ifs=[exp.If(this=exp.Not(this=exp.Paren(this=any_null)), true=value)])


def map_functions(tree: exp.Expression) -> None:
    """Spark's ``map_filter``, ``transform_values``, ``transform_keys`` (lambdas of key and
    value) and ``map_zip_with`` (of key and both values; the keys of the first map, then the new
    ones of the second, as Spark orders them) over DuckDB's ``map_entries``/``map_from_entries``;
    ``map_contains_key`` is ``map_contains`` (sqlglot swaps its arguments)."""
    counter = itertools.count()
    for node in list(tree.find_all(exp.Anonymous, exp.MapContainsKey)):
        name = node.name.lower() if isinstance(node, exp.Anonymous) else "map_contains_key"
        if name == "map_contains_key":
            m, key = (node.expressions if isinstance(node, exp.Anonymous) else (node.this, node.args["key"]))
            node.replace(_call("map_contains", m.copy(), key.copy()))
            continue
        if name not in ("map_filter", "transform_values", "transform_keys", "map_zip_with"):
            continue
        e = _fresh(counter)
        key, value = exp.Dot(this=exp.to_identifier(e), expression=exp.to_identifier("key")), \
            exp.Dot(this=exp.to_identifier(e), expression=exp.to_identifier("value"))
        if name == "map_zip_with" and len(node.expressions) == 3:
            m1, m2, lam = node.expressions
            k = exp.to_identifier(e)
            keys1, keys2 = _call("map_keys", m1.copy()), _call("map_keys", m2.copy())
            new_keys = _call("list_filter", keys2, _lambda([e], exp.Not(this=_call("list_contains", keys1.copy(), k.copy()))))
            look = lambda mp: exp.Bracket(this=mp.copy(), expressions=[k.copy()], offset=1, safe=True)  # noqa: E731
            entry = _entry(k.copy(), _body(lam, [k, look(m1), look(m2)]))
            zipped = _call("map_from_entries", _call("list_transform", _call("list_concat", keys1, new_keys), _lambda([e], entry)))
            node.replace(_unless_null([m1, m2], zipped))
            continue
        if len(node.expressions) != 2:
            continue
        m, lam = node.expressions
        body = _body(lam, [key, value])
        entries = _call("map_entries", m.copy())
        if name == "map_filter":
            kept = _call("list_filter", entries, _lambda([e], body))
        else:
            entry = _entry(key.copy(), body) if name == "transform_values" else _entry(body, value.copy())
            kept = _call("list_transform", entries, _lambda([e], entry))
        node.replace(_call("map_from_entries", kept))


def _entry(key: exp.Expression, value: exp.Expression) -> exp.Struct:
    return exp.Struct(expressions=[exp.PropertyEQ(this=exp.to_identifier("key"), expression=key),
                                   exp.PropertyEQ(this=exp.to_identifier("value"), expression=value)])


def array_sort_with_comparator(tree: exp.Expression) -> None:
    """Spark's ``array_sort(xs, (left, right) -> c)``: a stable sort by the comparator. DuckDB's
    ``list_sort`` takes none, so each element is ranked by how many elements sort before it (the
    comparator says less, or equal and earlier), and the elements are read back in rank order:
    n² comparator calls for an array of n elements."""
    counter = itertools.count()
    for node in list(tree.find_all(exp.ArraySort)):
        lam = node.expression
        if not isinstance(lam, exp.Lambda):
            continue
        xs = node.this
        i, j, p = _fresh(counter), _fresh(counter), _fresh(counter)
        elem = lambda name: exp.Bracket(this=xs.copy(), expressions=[exp.to_identifier(name)], offset=1)  # noqa: E731
        compare = exp.Paren(this=_body(lam, [elem(j), elem(i)]))
        before = exp.or_(exp.LT(this=compare.copy(), expression=exp.Literal.number(0)),
                         exp.and_(exp.EQ(this=compare.copy(), expression=exp.Literal.number(0)),
                                  exp.LT(this=exp.to_identifier(j), expression=exp.to_identifier(i))))
        positions = _call("range", exp.Literal.number(1), exp.Add(this=exp.Length(this=xs.copy()), expression=exp.Literal.number(1)))
        rank = exp.Length(this=_call("list_filter", positions.copy(), _lambda([j], before)))
        ranked = _call("list_transform", positions, _lambda([i], exp.Struct(expressions=[
            exp.PropertyEQ(this=exp.to_identifier("r"), expression=rank),
            exp.PropertyEQ(this=exp.to_identifier("i"), expression=exp.to_identifier(i))])))
        index = exp.Dot(this=exp.to_identifier(p), expression=exp.to_identifier("i"))
        node.replace(_call("list_transform", _call("list_sort", ranked),
                           _lambda([p], exp.Bracket(this=xs.copy(), expressions=[index], offset=1))))


SIMPLE_ARRAY_MACROS = {"array_distinct": ("spark_array_distinct", 1), "array_union": ("spark_array_union", 2),
                       "array_except": ("spark_array_except", 2), "array_remove": ("spark_array_remove", 2),
                       "arrays_overlap": ("spark_arrays_overlap", 2), "array_repeat": ("spark_array_repeat", 2),
                       "shuffle": ("spark_shuffle", 1), "cardinality": ("spark_size", 1)}
ARRAY_CLASSES = {exp.ArrayDistinct: "array_distinct", exp.ArrayContains: "array_contains", exp.ArraySize: "size",
                 exp.Flatten: "flatten", exp.ArrayPosition: "array_position", exp.Reverse: "reverse",
                 exp.ArrayExcept: "array_except", exp.ArrayRemove: "array_remove", exp.GenerateSeries: "sequence",
                 exp.ArraysZip: "arrays_zip"}


def array_functions(tree: exp.Expression) -> None:
    """Spark's array functions where DuckDB's namesakes differ: order and NULLs of
    ``array_distinct``/``array_union``/``array_except``/``array_remove``, NULL-aware
    ``array_contains``/``arrays_overlap``, ``array_position`` (BIGINT, 0 when absent),
    ``flatten`` (NULL when an inner array is), ``size``/``cardinality`` (INT, -1 for NULL),
    ``sequence`` (counting down; dates), ``array_repeat``, ``shuffle``, and ``reverse`` of an
    array (``list_reverse``) where the argument is one; ``element_at(array, 0)`` is Spark's error
    (for an array written as one: a column could be a map, whose key 0 is fine)."""
    simple, by_class = SIMPLE_ARRAY_MACROS, ARRAY_CLASSES
    for node in list(tree.find_all(exp.Anonymous, exp.Shuffle, *by_class)):
        name = node.name.lower() if isinstance(node, exp.Anonymous) else by_class.get(type(node), "shuffle")
        args = node.expressions if isinstance(node, exp.Anonymous) else _args(node)
        if name in simple and len(args) == simple[name][1]:
            node.replace(_call(simple[name][0], *(a.copy() for a in args)))
        elif name == "array_contains" and len(args) == 2:
            node.replace(_call("spark_array_contains", *(a.copy() for a in args)))
        elif name == "array_position" and len(args) == 2:
            node.replace(_call("spark_array_position", *(a.copy() for a in args)))
        elif name == "size" and len(args) == 1:
            node.replace(_call("spark_size", args[0].copy()))
        elif name == "flatten" and len(args) == 1:
            node.replace(_call("spark_flatten", args[0].copy()))
        elif name == "reverse" and len(args) == 1 and _is_array(args[0]):
            node.replace(_call("list_reverse", args[0].copy()))
        elif name == "sequence":
            _sequence(node, args)
        elif name == "arrays_zip" and args:
            node.replace(_arrays_zip(args))
    for node in list(tree.find_all(exp.Bracket)):  # element_at(array, 0)
        index = node.expressions[0] if len(node.expressions) == 1 else None
        if node.args.get("offset") != 1 or index is None or not _is_array(node.this):
            continue
        if isinstance(index, exp.Literal):
            if index.this == "0":
                raise MLSQLError("element_at: SQL array indices start at 1")
        elif not isinstance(index, exp.Neg):  # an index known only per row: 0 fails the query, as in Spark
            failed = exp.Anonymous(this="error", expressions=[exp.Literal.string("element_at: SQL array indices start at 1")])
            node.replace(exp.Case().when(exp.EQ(this=index.copy(), expression=exp.Literal.number(0)), failed).else_(node.copy()))


def _args(node: exp.Expression) -> list[exp.Expression]:
    if isinstance(node, exp.GenerateSeries):
        return [a for a in (node.args.get("start"), node.args.get("end"), node.args.get("step")) if a is not None]
    return [a for a in (node.this, node.args.get("expression")) if a is not None] + list(node.expressions)


ARRAY_RESULTS = (exp.Array, exp.ArrayConcat, exp.Split, exp.RegexpSplit, exp.ArrayFilter, exp.Transform,
                 exp.ArraySort, exp.ArrayDistinct, exp.Flatten, exp.ArrayAgg, exp.ArraySlice, exp.MapKeys,
                 exp.ArrayExcept, exp.ArrayRemove, exp.GenerateSeries)


def _is_array(node: exp.Expression) -> bool:
    """Whether ``node`` is an array: by its form (a literal, a function that returns one) or its type."""
    if _typed(node, exp.DataType.Type.ARRAY):
        return True
    if isinstance(node, exp.Cast):
        return node.to.is_type(exp.DataType.Type.ARRAY)
    if isinstance(node, exp.Anonymous):
        return node.name.lower() in ("array_repeat", "shuffle", "map_keys", "map_values", "array_union",
                                     "array_except", "sequence", "slice", "array_remove") or node.name.lower().startswith("spark_array")
    return isinstance(node, ARRAY_RESULTS)


def _typed(node: exp.Expression, t: exp.DataType.Type) -> bool:
    """Whether Spark's type of ``node`` is known to be of the kind ``t`` (ARRAY, MAP)."""
    known = spark_type(node)
    return known is not None and known.this == t


def _sequence(node: exp.Expression, args: list[exp.Expression]) -> None:
    """Spark's ``sequence``: counts down when start > stop; the bounds' integral type for the
    elements (INT for integer literals; DuckDB's is BIGINT), DATE elements for dates (a date
    literal, ``to_date``, a cast, a date column)."""
    dates = any(_is_date(a) for a in args[:2])
    if len(args) == 2:
        call = _call("spark_sequence_dates" if dates else "spark_sequence", args[0].copy(), args[1].copy())
    elif len(args) == 3:
        call = _call("generate_series", *(a.copy() for a in args))
    else:
        return
    if dates:
        node.replace(exp.Cast(this=call, to=exp.DataType.build("DATE[]", dialect="duckdb")))
    elif all(_int_literal(a) for a in args):
        node.replace(exp.Cast(this=call, to=exp.DataType.build("INT[]", dialect="duckdb")))
    elif all(kind(spark_type(a)) == "integral" for a in args):
        element = spark_type(args[0])
        for a in args[1:]:
            element = wider_integral(element, spark_type(a))
        node.replace(exp.Cast(this=call, to=exp.DataType(this=exp.DataType.Type.ARRAY, nested=True,
                                                          expressions=[element.copy()])))
    else:
        node.replace(call)


def _int_literal(node: exp.Expression) -> bool:
    inner = node.this if isinstance(node, exp.Neg) else node
    return isinstance(inner, exp.Literal) and not inner.is_string and inner.this.isdigit() and int(inner.this) < 2**31


def _is_date(node: exp.Expression) -> bool:
    if kind(spark_type(node)) == "date":
        return True
    if isinstance(node, (exp.Cast, exp.TryCast)):
        return node.to.is_type(exp.DataType.Type.DATE)
    return isinstance(node, (exp.TsOrDsToDate, exp.StrToDate, exp.DateFromParts, exp.CurrentDate)) or (
        isinstance(node, exp.Anonymous) and node.name.lower() in ("to_date", "date"))


def _arrays_zip(args: list[exp.Expression]) -> exp.Expression:
    """Spark's ``arrays_zip``: structs named after the arrays when they are columns, else ``0``,
    ``1``…; the shorter arrays padded with NULLs; NULL when any array is NULL."""
    k = f"{_FRESH}k"
    fields = [exp.PropertyEQ(this=exp.to_identifier(a.name if isinstance(a, exp.Column) else str(i), quoted=True),
                             expression=exp.Bracket(this=a.copy(), expressions=[
                                 exp.Add(this=exp.to_identifier(k), expression=exp.Literal.number(1))], offset=1))
              for i, a in enumerate(args)]
    lengths = [exp.Length(this=a.copy()) for a in args]
    longest = exp.Greatest(this=lengths[0], expressions=lengths[1:]) if len(lengths) > 1 else lengths[0]
    zipped = _call("list_transform", _call("range", longest), _lambda([k], exp.Struct(expressions=fields)))
    return _unless_null(args, zipped)


def generators(tree: exp.Expression) -> None:
    """Spark's generators: ``explode`` (column ``col``; ``key``/``value`` for a map),
    ``explode_outer`` (a NULL or empty array gives a row of NULLs), ``posexplode[_outer]``
    (``pos``, ``col``), ``inline[_outer]`` (one column per struct field), in a select list or in
    ``LATERAL VIEW [OUTER] … t AS c1, c2`` (a join with ``LATERAL (SELECT UNNEST(…))``). A map is
    recognised when it is written as one (``map(...)``, ``str_to_map``…) or when a lateral view of
    ``explode`` names two columns."""
    for node in list(tree.find_all(exp.Explode, exp.Posexplode, exp.Inline, exp.Anonymous)):
        name = _generator_name(node)
        if name is None:
            continue
        arg = node.expressions[0] if isinstance(node, exp.Anonymous) else node.this
        lateral = node.parent if isinstance(node.parent, exp.Lateral) else None
        names = len(lateral.args["alias"].columns) if lateral is not None and lateral.args.get("alias") else 0
        is_map = _is_map(arg) or (names == 2 and name.startswith("explode"))
        outer = name.endswith("_outer") or bool(lateral is not None and lateral.args.get("outer"))
        if name.startswith("posexplode"):
            items = _call("spark_pos_map_entries" if is_map else "spark_pos_entries", arg.copy())
        else:
            items = _call("map_entries", arg.copy()) if is_map else arg.copy()
        if outer:
            items = _call("spark_outer", items)
        recursive = name.startswith(("posexplode", "inline")) or is_map
        unnest = _call("unnest", items, *([exp.PropertyEQ(this=exp.var("recursive"), expression=exp.true())] if recursive else []))
        if lateral is not None:
            lateral.set("this", exp.Subquery(this=exp.select(unnest)))
            lateral.set("view", None)
            lateral.set("outer", None)
        elif not recursive and isinstance(node.parent, exp.Select):
            node.replace(exp.alias_(unnest, "col"))
        else:
            node.replace(unnest)
    for select in list(tree.find_all(exp.Select)):
        laterals = select.args.get("laterals") or []
        if any(isinstance(lat.this, exp.Subquery) for lat in laterals):
            select.set("laterals", None)
            for lat in laterals:
                select.append("joins", exp.Join(this=lat, kind="CROSS"))


GENERATORS = ("explode", "explode_outer", "posexplode", "posexplode_outer", "inline", "inline_outer")


def _generator_name(node: exp.Expression) -> str | None:
    """Spark's generator a node calls (sqlglot has classes for some, e.g. ``_ExplodeOuter``)."""
    name = node.name.lower() if isinstance(node, exp.Anonymous) else type(node).__name__.lstrip("_").lower()
    name = {"explodeouter": "explode_outer", "posexplodeouter": "posexplode_outer"}.get(name, name)
    if isinstance(node, exp.Anonymous) and not node.expressions:
        return None
    return name if name in GENERATORS else None


MAP_RESULTS = (exp.Map, exp.VarMap, exp.MapFromEntries, exp.StrToMap, exp.ToMap)


def _is_map(node: exp.Expression) -> bool:
    if _typed(node, exp.DataType.Type.MAP):
        return True
    if isinstance(node, (exp.Cast, exp.TryCast)):
        return node.to.is_type(exp.DataType.Type.MAP)
    if isinstance(node, exp.Anonymous):
        return node.name.lower() in ("map_concat", "map_from_arrays", "map_from_entries", "str_to_map", "map_filter",
                                     "transform_keys", "transform_values", "map_zip_with", "spark_str_to_map")
    return isinstance(node, MAP_RESULTS)


def str_to_map(tree: exp.Expression) -> None:
    """Spark's ``str_to_map(text[, pairDelim[, keyValueDelim]])`` (delimiters are regexes,
    defaults ``,`` and ``:``), ``map_concat`` (NULL when a map is NULL)."""
    for node in list(tree.find_all(exp.Anonymous, *MAP_RESULTS)):
        if isinstance(node, exp.StrToMap) or (isinstance(node, exp.Anonymous) and node.name.lower() == "str_to_map"):
            args = [node.this, node.args.get("pair_delim"), node.args.get("key_value_delim")] \
                if not isinstance(node, exp.Anonymous) else list(node.expressions)
            args = [a for a in args if a is not None]
            defaults = [exp.Literal.string(","), exp.Literal.string(":")]
            args += defaults[len(args) - 1:]
            node.replace(_call("spark_str_to_map", *(a.copy() for a in args[:3])))
        elif isinstance(node, exp.Anonymous) and node.name.lower() == "map_concat" and len(node.expressions) > 1:
            node.replace(_unless_null(node.expressions, _call("map_concat", *(a.copy() for a in node.expressions))))


MAP_CALLS = frozenset({"map_contains_key", "map_filter", "transform_values", "transform_keys", "map_zip_with"})

TRANSFORMS: tuple[Callable[[exp.Expression], None], ...] = (gated(
    (indexes_from_zero, (exp.Transform, exp.ArrayFilter), frozenset()),
    (aggregate_with_finish, (exp.Reduce,), frozenset({"reduce"})),
    (zip_with, (), frozenset({"zip_with"})),
    (map_functions, (exp.MapContainsKey,), MAP_CALLS),
    (array_sort_with_comparator, (exp.ArraySort,), frozenset()),
    (array_functions, (exp.Shuffle, exp.Bracket, *ARRAY_CLASSES),
     frozenset(SIMPLE_ARRAY_MACROS) | frozenset(ARRAY_CLASSES.values())),
    (generators, (exp.Explode, exp.Posexplode, exp.Inline, exp.Lateral), frozenset(GENERATORS)),
    (str_to_map, (exp.StrToMap,), frozenset({"str_to_map", "map_concat"})),
),)

FAMILY = Family("arrays and maps", transforms=TRANSFORMS, macros=MACROS)

"""Issue 23, item 4: the pieces behind the conformance cases of regexp.txt, strings.txt, math.txt
and misc.txt that the cases cannot show one by one: the Java → RE2 regex translation (what it
rewrites, what it refuses), the macros' lambda hygiene, and the hash macros against the published
test vectors of the standard algorithms (Spark's Murmur3 equals MurmurHash3_x86_32 on whole
4-byte words, its XXH64 equals XXH64), which reach paths Spark's documented examples do not (a
string of 32 bytes or more)."""

from __future__ import annotations

import duckdb
import pytest

from mlsql_ray import MLSQLError, Session
from mlsql_ray.cells.partitions import row_wise_source
from mlsql_ray.engine.connection import ON_DEMAND_SQL, new_connection
from mlsql_ray.spark import java_regex
from mlsql_ray.spark.calls import hygienic


def connection_with_every_macro():
    con = new_connection()
    for statement in ON_DEMAND_SQL.values():
        con.execute(statement)
    return con


# (Java pattern, RE2 pattern DuckDB gets, capturing groups)
TRANSLATED = [
    (r"(\d+)-(\d+)", r"(\d+)-(\d+)", 2),
    (r"(?<year>\d{4})", r"(?P<year>\d{4})", 1),
    (r"a.b", r"a[^\n\r\x{85}\x{2028}\x{2029}]b", 0),  # Java's '.' stops at every line terminator
    (r"(?s)a.b", r"(?s)a(?s:.)b", 0),
    (r"(?d)a.b", r"a[^\n]b", 0),  # UNIX_LINES: only \n ends a line
    (r"\s", r"[\t\n\x0B\f\r ]", 0),  # Java's \s includes \x0B
    (r"[\s,]", r"[\t\n\x0B\f\r ,]", 0),
    (r"\p{Alpha}+\P{Digit}", r"[a-zA-Z]+[^0-9]", 0),
    (r"\p{IsLatin}\p{L}", r"\p{Latin}\p{L}", 0),
    (r"\Qa.b(\E", r"a\.b\(", 0),
    (r"\u00e9\x41\0101\e", r"\x{E9}\x{41}\x{41}\x{1B}", 0),
    (r"(?x) a  b # comment", r"ab", 0),
    (r"[]a]", r"[\]a]", 0),
    (r"(?i:a)b|c", r"(?i:a)b|c", 0),
    (r"a{2,3}?b*?", r"a{2,3}?b*?", 0),
]

REFUSED_JAVA_ONLY = [r"(?=a)", r"(?<!a)b", r"(a)\1", r"\k<x>", r"a*+", r"(?>a)", r"\G", r"\Z", r"[a-z&&[^b]]",
                     r"[a[b]]", r"(?U)\w", r"\p{InGreek}", r"\p{javaLowerCase}", r"x{1001}"]
REFUSED_SYNTAX = [r"(?l)", r"a{", r"\y", r"(a", r"a)", r"*a", r"[a"]


@pytest.mark.parametrize("pattern, re2, groups", TRANSLATED)
def test_java_patterns_are_spelled_for_re2(pattern: str, re2: str, groups: int):
    translated = java_regex.translate(pattern)
    assert (translated.re2, translated.groups) == (re2, groups)
    new_connection().execute("SELECT regexp_matches('x', ?)", [translated.re2]).fetchall()  # RE2 compiles it


@pytest.mark.parametrize("pattern", REFUSED_JAVA_ONLY)
def test_java_only_features_are_refused(pattern: str):
    with pytest.raises(java_regex.JavaOnlyFeature):
        java_regex.translate(pattern)


@pytest.mark.parametrize("pattern", REFUSED_SYNTAX)
def test_what_java_refuses_is_refused(pattern: str):
    with pytest.raises(java_regex.JavaSyntaxError):
        java_regex.translate(pattern)


def test_nullable_patterns_are_known():
    assert [java_regex.translate(p).nullable for p in ("", "a*", "a|", "^", r"\b", "(a|b)?", "a", "a+", "[ab]{1,2}")] == \
        [True, True, True, True, True, True, False, False, False]


@pytest.mark.parametrize("replacement, rewrite", [
    ("$2-$1", r"\2-\1"), (r"\$1", "$1"), ("a\\\\b", "a\\\\b"), ("${y}", r"\1"), ("$12", r"\12"), ("x", "x"),
])
def test_java_replacements_become_re2_rewrites(replacement: str, rewrite: str):
    assert java_regex.replacement(replacement, java_regex.translate(r"(?<y>\d)(\d)")) == rewrite


@pytest.mark.parametrize("replacement", ["$", "$3", "${z}", "x\\"])
def test_bad_java_replacements_are_refused(replacement: str):
    with pytest.raises(java_regex.JavaRegexError):
        java_regex.replacement(replacement, java_regex.translate(r"(\d)(\d)"))


def test_a_connection_defines_the_macros_a_query_calls_when_it_first_prepares_one(tmp_path):
    """A session's connection opens without the function families' macros (some are costly to
    define); a query defines what it calls, and what that calls, and a worker's setup gets them."""
    with Session(warehouse=tmp_path) as session:
        defined = {name for (name,) in session.con.sql("SELECT function_name FROM duckdb_functions() WHERE function_type = 'macro'").fetchall()}
        assert "spark_soundex" not in defined and "spark_typeof" not in defined
        session.execute("select soundex('Miller') as s as t;")
        defined = {name for (name,) in session.con.sql("SELECT function_name FROM duckdb_functions() WHERE function_type = 'macro'").fetchall()}
        assert {"spark_soundex", "spark_soundex_code"} <= defined and "spark_typeof" not in defined
        assert session.table("t").column("s").to_pylist() == ["M460"]
        session.execute('set spark.sql.session.timeZone = "UTC" where type="conf";')
        worker = duckdb.connect()  # as cells.partitions sets up a worker's connection
        for statement in session.connection_setup:
            worker.execute(statement)
        assert worker.sql("SELECT spark_soundex('Robert'), current_setting('TimeZone')").fetchall() == [("R163", "UTC")]


def test_a_pattern_from_a_column_is_formatted_on_the_sessions_connection(tmp_path):
    """A worker's fresh connection has the macros but not the Python functions: a query that cuts a
    column's datetime patterns into pieces names that function itself, so it is not read row-wise
    on a worker; with a constant pattern it is (its macros are all it needs)."""
    with Session(warehouse=tmp_path) as session:
        session.execute("select * from values (0, 'yyyy QQQ') t(a, p) as src;")
        setup = tuple(session.connection_setup)
        by_column = session.prepare("select from_unixtime(a, p) as r from src", 1, 1)[0]
        constant = session.prepare("select from_unixtime(a, 'yyyy QQQ') as r from src", 1, 1)[0]
        assert row_wise_source(by_column, setup) is None
        assert row_wise_source(constant, setup) == "src"


def test_a_java_only_pattern_names_the_function_and_the_line(tmp_path):
    with Session(warehouse=tmp_path) as session, pytest.raises(MLSQLError) as raised:
        session.execute("select 1 as a as one;\nselect regexp_replace('ab', '(?<=a)b', 'x') as r from one as out;")
    assert raised.value.line == 2
    assert "regexp_replace" in str(raised.value) and "lookahead/lookbehind" in str(raised.value)


def test_macro_lambdas_cannot_capture_a_column():
    """A macro's lambda parameter is renamed within the lambda only; what the lambda's body refers to
    outside it (a macro parameter of the same name) is left alone."""
    macros = hygienic({"m": "(x, i) AS list_transform(x, lambda i, j: i + j) || [i] || list_transform([x], lambda v: v[1])"})
    assert macros["m"] == ("(x, i) AS list_transform(x, lambda __m_i, __m_j: __m_i + __m_j) || [i] "
                           "|| list_transform([x], lambda __m_v: __m_v[1])")
    con = connection_with_every_macro()
    rows = con.sql("SELECT spark_substring_index(i, '.', -1), spark_soundex(acc) FROM (VALUES ('a.b', 'Miller')) t(i, acc)").fetchall()
    assert rows == [("b", "M460")]


# published test vectors of the standard algorithms, seed 0 (python-xxhash's README, SMHasher)
XXH64 = [("", "ef46db3751d8e999"), ("abc", "44bc2cf5ad770999"),
         ("Nobody inspects the spammish repetition", "fbcea83c8a378bf1")]
MURMUR3 = [("", 0, "0"), ("", 1, "514e28b7"), ("test", 0, "ba6bd213")]


@pytest.mark.parametrize("text, digest", XXH64)
def test_xxhash64_macro_is_xxh64(text: str, digest: str):
    got = connection_with_every_macro().execute("SELECT printf('%x', spark_xx_bytes(hex(?::VARCHAR), 0::UHUGEINT))", [text]).fetchone()[0]
    assert got == digest


@pytest.mark.parametrize("text, seed, digest", MURMUR3)
def test_hash_macro_is_murmur3_on_whole_words(text: str, seed: int, digest: str):
    got = connection_with_every_macro().execute("SELECT printf('%x', spark_m3_bytes(hex(?::VARCHAR), ?::HUGEINT))", [text, seed]).fetchone()[0]
    assert got == digest


def test_no_two_families_define_a_macro_of_the_same_name():
    """The families' macros share one namespace on a connection: a name defined twice would be
    whichever was created last (a hash helper once replaced the decimal division's)."""
    from mlsql_ray.spark import arrays_maps as spark_collections, byzer as spark_functions, casts as spark_casts
    from mlsql_ray.spark import datetimes as spark_datetime, formats as spark_format, hashes as spark_hashes
    from mlsql_ray.spark import maths as spark_math, regexes as spark_regex, strings as spark_strings

    families = [spark_casts, spark_collections, spark_datetime, spark_format, spark_hashes, spark_math, spark_regex,
                spark_strings]
    seen: dict[str, str] = {}
    for family in families:
        for name in family.MACROS:
            assert name not in seen, f"{name} is defined by {seen.get(name)} and {family.__name__}"
            seen[name] = family.__name__
    own = set(spark_functions.MACROS) - set().union(*(f.MACROS for f in families))
    assert not own & seen.keys()


def test_a_column_outside_every_grouping_set_keeps_its_name_and_sorts(session):
    """``GROUP BY a, b GROUPING SETS ((a))``: ``b`` is NULL in every row (Spark), still named ``b``,
    and ``ORDER BY b`` sorts by it (it was DuckDB's text of the rewrite, and a syntax error)."""
    [result] = session.execute("select a, b, count(*) as n from values (1, 2), (1, 3), (2, 4) as t(a, b) "
                               "group by a, b grouping sets ((a)) order by b, a as grouped;")
    table = result.table
    assert table.column_names == ["a", "b", "n"]
    assert table.to_pylist() == [{"a": 1, "b": None, "n": 2}, {"a": 2, "b": None, "n": 1}]

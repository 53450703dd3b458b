"""Parser and engine fuzz (issue 7, item 1): over 10 000 generated inputs in all.

The parser gets random text, MLSQL fragments, mutated real statements (every paragraph of
``tests/fixtures/statements.mlsql``), stray and unterminated quotes, deep nesting and huge
inputs: it must return statements or raise ``MLSQLSyntaxError`` with a position, nothing else.
The engine (a ``Session`` without Ray) runs generated selects, sets, loads and ``!`` commands
over small tables and a folder of good, broken and odd files: anything but an ``MLSQLError`` is
a failure. Every input is bounded twice: hypothesis' per-example deadline, and a hard timeout
(SIGALRM for Python code, DuckDB's ``interrupt()`` for a query) that fails the test as a hang.

Each test asserts it ran at least its ``max_examples`` inputs (hypothesis stops early only
when a strategy runs out of distinct inputs, which would make the 10 000 a lie). The 10 000 are
the "ci" Hypothesis profile's (CI=true or HYPOTHESIS_PROFILE=ci); a local run's "dev" profile
tries a tenth of every budget (tests/conftest.py).
"""

from __future__ import annotations

import contextlib
import signal
import string
import threading
from collections import Counter
from datetime import timedelta
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import examples

from mlsql_ray import MLSQLError, MLSQLSyntaxError, Session, parse
from mlsql_ray.lang.ast import Statement

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
COUNTS: Counter = Counter()
PARSE_TIMEOUT_S = 20  # hard limit per input (60 for the huge ones); hypothesis' deadline is the tighter bound
ENGINE_TIMEOUT_S = 30
TOTAL_TARGET = 10_000

# max_examples per test under the "ci" Hypothesis profile; their sum is what the suite promises
# (checked in test_total_at_least_10000). Other profiles scale them (tests/conftest.py's examples).
FULL_BUDGET = {
    "random_text": 2800, "fragments": 1800, "mutated": 1800, "stray_quotes": 1400, "deep_nesting": 400,
    "huge": 40, "engine_select": 1000, "engine_set": 400, "engine_load": 250, "engine_command": 150,
}
assert sum(FULL_BUDGET.values()) >= TOTAL_TARGET
BUDGET = {name: examples(full) for name, full in FULL_BUDGET.items()}


def fuzz(name: str, deadline_s: float = 3.0):
    return settings(max_examples=BUDGET[name], deadline=timedelta(seconds=deadline_s), database=None,
                    suppress_health_check=list(HealthCheck))


class Hang(BaseException):
    """An input ran past its hard timeout (a BaseException so no ``except Exception`` eats it)."""


@contextlib.contextmanager
def hard_timeout(seconds: float, interrupt=None):
    """Fail the input if it runs longer than ``seconds``: SIGALRM stops Python code; for C code
    that does not look at signals (a DuckDB query) ``interrupt`` is called from a timer thread
    and the input is marked hung even though the query then ends in an ordinary error."""
    hung = threading.Event()

    def on_alarm(signum, frame):
        hung.set()
        raise Hang(f"input still running after {seconds}s")

    def on_timer():
        hung.set()
        if interrupt is not None:
            interrupt()

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    timer = threading.Timer(seconds, on_timer)
    timer.daemon = True
    timer.start()
    try:
        yield hung
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        timer.cancel()
    if hung.is_set():
        raise Hang(f"input ran past the hard timeout of {seconds}s")


# -- the parser ------------------------------------------------------------------------------------

def check_parse(text: str, timeout: float = PARSE_TIMEOUT_S) -> None:
    COUNTS["parser"] += 1
    with hard_timeout(timeout):
        try:
            statements = parse(text)
        except MLSQLSyntaxError as error:
            assert isinstance(error.line, int) and 1 <= error.line <= text.count("\n") + 1, (error.line, error)
            assert isinstance(error.column, int) and error.column >= 1, error
            assert error.message
            return
    assert isinstance(statements, list)
    assert all(isinstance(s, Statement) for s in statements)


def _paragraphs(text: str) -> list[str]:
    """The fixture's statements: paragraphs holding something besides comments."""
    return [p for p in text.split("\n\n") if any(l.strip() and not l.lstrip().startswith("--") for l in p.split("\n"))]


STATEMENTS = _paragraphs((FIXTURES / "statements.mlsql").read_text())
PIECES = ["'", '"', "'''", "`", "``", ";", "--", "-- %%\n", "\n--%python\n", "--%input=x\n", "/*", "*/", "${", "}",
          "$", "\n", "\r\n", "\r", "\t", " as ", " where ", " and ", " options ", "=", ".", ",", "!", "\\", "(", ")",
          "select ", "load ", "save ", "set ", "include ", "train ", "run ", "register ", "connect ", "insert ",
          "delta.", "parquet.", "表", "\x00", "\u2028", "\ufeff", "é", "\U0001f642", "\u202e", "\u0430", "'''\n"]
WORDS = ["a", "b", "t", "x", "1", " ", "as", "where", "overwrite", "append", "python", "%"]


def test_statements_fixture_is_there():
    assert len(STATEMENTS) == 43  # what test_parser says the fixture holds: the mutations start from real statements


@fuzz("random_text")
@given(st.text(max_size=400))
def test_random_text(text: str):
    check_parse(text)


@fuzz("fragments")
@given(st.lists(st.sampled_from(PIECES) | st.sampled_from(WORDS) | st.sampled_from(STATEMENTS), max_size=40).map("".join))
def test_mlsql_fragments(text: str):
    check_parse(text)


@st.composite
def mutated_scripts(draw: st.DrawFn) -> str:
    text = "\n".join(draw(st.lists(st.sampled_from(STATEMENTS), min_size=1, max_size=5)))
    for _ in range(draw(st.integers(1, 6))):
        at = draw(st.integers(0, len(text)))
        action = draw(st.sampled_from(["insert", "delete", "splice", "duplicate", "case", "replace", "truncate"]))
        if action == "insert":
            text = text[:at] + draw(st.sampled_from(PIECES) | st.text(max_size=4)) + text[at:]
        elif action == "delete":
            text = text[:at] + text[at + draw(st.integers(1, 20)):]
        elif action == "splice":
            other = draw(st.sampled_from(STATEMENTS))
            start = draw(st.integers(0, len(other)))
            text = text[:at] + other[start:draw(st.integers(start, len(other)))] + text[at:]
        elif action == "duplicate":
            end = draw(st.integers(at, min(len(text), at + 40)))
            text = text[:end] + text[at:end] * draw(st.integers(1, 5)) + text[end:]
        elif action == "case":
            end = draw(st.integers(at, min(len(text), at + 30)))
            text = text[:at] + text[at:end].swapcase() + text[end:]
        elif action == "replace":
            text = text[:at] + draw(st.characters()) + text[at + 1:]
        else:
            text = text[:at]
    return text


@fuzz("mutated")
@given(mutated_scripts())
def test_mutated_fixture_statements(text: str):
    check_parse(text)


@st.composite
def stray_quotes(draw: st.DrawFn) -> str:
    """Real statements with quotes, backquotes, comment and variable openers dropped in."""
    text = "\n".join(draw(st.lists(st.sampled_from(STATEMENTS), min_size=1, max_size=3)))
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, len(text)))
        text = text[:at] + draw(st.sampled_from(["'''", "`", "'", '"', "/*", "${", "``", "'''\n", "\\"])) + text[at:]
    return text


@fuzz("stray_quotes")
@given(stray_quotes())
def test_unterminated_and_stray_quotes(text: str):
    check_parse(text)


@st.composite
def deep_nesting(draw: st.DrawFn) -> str:
    depth = draw(st.integers(1, 5000))
    closing = draw(st.sampled_from([depth, depth - 1, 0, depth + 1]))
    kind = draw(st.sampled_from(["parens", "comments", "line_comments", "backquotes", "quotes", "block_quotes",
                                 "variables", "brackets", "mixed"]))
    prefix = draw(st.sampled_from(["select ", "load parquet.`x` where a=", "set a = ", "", "save t as delta.`",
                                   "!show ", "run t as Ray.`` where code=", "-- %%\n"]))
    body = {
        "parens": "(" * depth + "1" + ")" * closing,
        "comments": "/* " * depth + "x" + " */" * closing,
        "line_comments": "-- ;'`\n" * depth + "select 1 as t",
        "backquotes": "`" * depth + "x" + "`" * closing,
        "quotes": "'" * depth + "x" + "'" * closing,
        "block_quotes": "'''" * depth + "x" + "'''" * closing,
        "variables": "${" * depth + "x" + "}" * closing,
        "brackets": "[" * depth + "]" * closing,
        "mixed": "".join(draw(st.lists(st.sampled_from(["(", "/*", "`", "'", "${", "[", "'''"]), min_size=1, max_size=8))) * depth,
    }[kind]
    return prefix + body + draw(st.sampled_from([" as t;", ";", "", "\n"]))


@fuzz("deep_nesting", deadline_s=5)
@given(deep_nesting())
def test_deep_nesting(text: str):
    check_parse(text)


@st.composite
def huge_inputs(draw: st.DrawFn) -> str:
    size = draw(st.sampled_from([10_000, 10_000, 100_000, 100_000, 1_000_000])) + draw(st.integers(0, 10_000))
    fill = draw(st.characters(exclude_characters="'`*/\\$"))
    kind = draw(st.sampled_from(["block_string", "unterminated_block", "backquoted_path", "comment",
                                 "unterminated_comment", "statements", "word", "sql", "lines", "string"]))
    if kind == "block_string":
        return f"set a = '''{fill * size}''';"
    if kind == "unterminated_block":
        return f"set a = '''{fill * size};"
    if kind == "backquoted_path":
        return f"load parquet.`{fill * size}` as t;"
    if kind == "comment":
        return f"/* {fill * size} */ select 1 as t;"
    if kind == "unterminated_comment":
        return f"select 1 as t; /* {fill * size}"
    if kind == "statements":
        return "select 1 as t;\n" * (size // 15)
    if kind == "word":
        return "x" * size + ";"
    if kind == "sql":
        return "select " + " + ".join(["a"] * (size // 4)) + " as t;"
    if kind == "lines":
        return "\n" * size + "select ;"
    return "set a = '" + fill * size + "';"


@fuzz("huge", deadline_s=30)  # a million characters of dense statements take ~4 s on an idle core
@given(huge_inputs())
def test_huge_inputs(text: str):
    check_parse(text, timeout=60)


# -- the engine ------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def files(tmp_path_factory) -> Path:
    """Good, broken and odd files for loads to chew on."""
    root = tmp_path_factory.mktemp("fuzz-files")
    rng = np.random.default_rng(7)
    table = pa.table({"a": list(range(20)), "b": [f"r{i}" for i in range(20)], "c": rng.random(20)})
    pq.write_table(table, root / "good.parquet")
    (root / "good.csv").write_text("a,b\n1,x\n2,y\n3,\"z,z\"\n")
    (root / "good.json").write_text('{"a": 1, "b": "x"}\n{"a": 2, "b": null}\n{"a": "three"}\n')
    (root / "text.txt").write_text("line one\nline two ü\n")
    (root / "corrupt.parquet").write_bytes(rng.integers(0, 256, 4096, dtype=np.uint8).tobytes())
    (root / "empty.csv").write_bytes(b"")
    (root / "binary.json").write_bytes(rng.integers(0, 256, 2048, dtype=np.uint8).tobytes())
    (root / "utf16.csv").write_text("a,b\n1,ä\n", encoding="utf-16")
    (root / "ragged.csv").write_text("a,b\n1\n1,2,3\n\n\"unclosed\n")
    (root / "PAR1.csv").write_bytes(b"PAR1" + b"\x00" * 100 + b"PAR1")
    mixed = root / "mixed"
    (mixed / "k=1").mkdir(parents=True)
    pq.write_table(table, mixed / "k=1" / "part.parquet")
    (mixed / "notes.csv").write_text("x\n1\n")
    (mixed / "_SUCCESS").write_text("")
    (root / "loop").mkdir()
    (root / "loop" / "self").symlink_to(root / "loop")
    (root / "emptydir").mkdir()
    return root


@pytest.fixture(scope="module")
def fuzz_session(files, tmp_path_factory):
    warehouse = tmp_path_factory.mktemp("fuzz-warehouse")
    with Session(warehouse=warehouse) as session:
        rng = np.random.default_rng(3)
        t1 = pa.table({
            "a": pa.array(rng.integers(-5, 5, 50)), "b": pa.array([None if i % 7 == 0 else f"s{i}é" for i in range(50)]),
            "c": pa.array(rng.normal(size=50)), "d": pa.array([[int(x) for x in rng.integers(0, 9, i % 4)] for i in range(50)]),
            "e": pa.array([i % 3 == 0 for i in range(50)]),
        })
        session.catalog.add_arrow("t1", t1, "fuzz")
        session.catalog.add_arrow("t0", t1.slice(0, 0), "fuzz")  # t1 without rows
        session.catalog.add_arrow("t2", pa.table({"a": list(range(20)), "s": ["ß", "表", "'", '"', "`", ";", "", "a b"] * 2 + ["x"] * 4}), "fuzz")
        session.execute("select a, b from t1 as v0; save overwrite v0 as delta.`fz.tbl`; save append v0 as delta.`fz.tbl`;")
        session.execute("select 1 as a as v1; save overwrite v1 as delta.`fz.tbl`;")
        yield session


def run_engine(session: Session, text: str, kind: str) -> None:
    """Run ``text``; only an MLSQLError may come out, within the hard timeout."""
    COUNTS["engine"] += 1
    COUNTS[f"engine_{kind}"] += 1
    session.variables.clear()  # each input starts from the same variables (no runaway ${a}${a} growth)
    session.conf.clear()
    with hard_timeout(ENGINE_TIMEOUT_S, interrupt=session.con.interrupt):
        try:
            session.execute(text)
            COUNTS["engine_ok"] += 1
        except MLSQLError as error:
            assert isinstance(error.message, str) and error.message
            assert error.line is None or (isinstance(error.line, int) and error.line >= 1)
            COUNTS["engine_mlsql_error"] += 1


IDENT = st.text(alphabet=string.ascii_letters + "_", min_size=1, max_size=6)
COLUMNS = ["a", "b", "c", "d", "e", "s", "t1.a", "x.a", "y.s", "`a`", "`weird col`", "nope", "*"]
FUNCTIONS = ["abs", "upper", "lower", "length", "concat", "substr", "coalesce", "round", "floor", "ceil", "sqrt",
             "ln", "size", "array_contains", "split", "trim", "reverse", "md5", "nvl", "if", "greatest", "least",
             "year", "element_at", "sort_array", "collect_list", "count", "sum", "avg", "min", "max", "first",
             "explode", "cast_me", "no_such_function", "date_add", "datediff", "concat_ws", "instr", "regexp_extract",
             "regexp_replace", "split_part", "array", "map", "struct", "named_struct", "to_json", "from_json", "hash"]
TYPES = ["int", "bigint", "string", "double", "boolean", "date", "timestamp", "decimal(10,2)", "array<int>", "binary", "nonsense"]
OPERATORS = ["+", "-", "*", "/", "%", "=", "!=", "<>", "<", "<=", ">", ">=", "and", "or", "||", "<=>", "div", "like", "rlike"]


def sql_literals():
    texts = st.text(max_size=12).map(lambda t: "'" + t.replace("\\", "\\\\").replace("'", "\\'") + "'")
    return st.one_of(
        st.integers(-10**6, 10**6).map(str), st.integers(-10**30, 10**30).map(str),
        st.floats(allow_nan=False, allow_infinity=False).map(repr), texts,
        st.sampled_from(["null", "true", "false", "date '2024-02-30'", "date '2024-01-31'", "timestamp '2024-01-01 00:00:00'",
                         "x'41'", "1e308", "-0.0", "'NaN'", "array()", "interval 1 day"]),
    )


def sql_expressions():
    def extend(inner):
        return st.one_of(
            st.tuples(st.sampled_from(FUNCTIONS), st.lists(inner, max_size=3)).map(lambda f: f"{f[0]}({', '.join(f[1])})"),
            st.tuples(inner, st.sampled_from(OPERATORS), inner).map(lambda t: f"{t[0]} {t[1]} {t[2]}"),
            inner.map(lambda e: f"({e})"),
            inner.map(lambda e: f"- {e}"),  # "-{e}" could make "--", a comment
            inner.map(lambda e: f"not {e}"),
            st.tuples(inner, st.sampled_from(TYPES)).map(lambda t: f"cast({t[0]} as {t[1]})"),
            st.tuples(inner, inner, inner).map(lambda t: f"case when {t[0]} then {t[1]} else {t[2]} end"),
            st.tuples(inner, st.lists(inner, min_size=1, max_size=3)).map(lambda t: f"{t[0]} in ({', '.join(t[1])})"),
            inner.map(lambda e: f"{e} is null"),
            st.tuples(inner, st.integers(-2, 5)).map(lambda t: f"{t[0]}[{t[1]}]"),
        )

    return st.recursive(st.one_of(sql_literals(), st.sampled_from(COLUMNS)), extend, max_leaves=12)


def typed_expressions():
    """Numeric expressions over t1's a and c that mostly make sense, so that many queries get
    past the translator and DuckDB's binder and really run."""
    def extend(inner):
        return st.one_of(
            st.tuples(st.sampled_from(["abs", "round", "floor", "ceil", "sqrt", "sign", "ln", "exp"]), inner).map(lambda f: f"{f[0]}({f[1]})"),
            st.tuples(st.sampled_from(["greatest", "least", "coalesce", "nvl", "pow", "mod"]), inner, inner).map(lambda f: f"{f[0]}({f[1]}, {f[2]})"),
            st.tuples(inner, st.sampled_from(["+", "-", "*", "/", "%"]), inner).map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
            st.tuples(inner, st.sampled_from(["<", "<=", "=", "!=", ">"]), inner, inner, inner).map(
                lambda t: f"case when {t[0]} {t[1]} {t[2]} then {t[3]} else {t[4]} end"),
            st.tuples(inner, st.sampled_from(["int", "bigint", "double", "decimal(20,4)", "string"])).map(lambda t: f"cast({t[0]} as {t[1]})"),
        )

    leaves = st.one_of(st.sampled_from(["a", "c", "size(d)", "length(b)"]), st.integers(-1000, 1000).map(str),
                       st.floats(-1e6, 1e6, allow_nan=False).map(repr), st.just("null"))
    return st.recursive(leaves, extend, max_leaves=10)


# built once: building a strategy per example costs more than running the query
EXPRESSIONS = sql_expressions()
TYPED = typed_expressions()


@st.composite
def selects(draw: st.DrawFn) -> str:
    if draw(st.booleans()):
        items = draw(st.lists(st.tuples(TYPED, IDENT), min_size=1, max_size=4, unique_by=lambda i: i[1].lower()))
        query = "select " + ", ".join(f"{e} as {alias}" for e, alias in items)
        query += f" from {draw(st.sampled_from(['t1', '(select * from t1 where a > 0) s', 't0']))}"
        if draw(st.booleans()):
            query += f" where {draw(TYPED)} {draw(st.sampled_from(['<', '>', '=', '<>']))} {draw(TYPED)}"
        if draw(st.booleans()):
            query += f" order by {draw(TYPED)} {draw(st.sampled_from(['asc', 'desc']))}"
        if draw(st.booleans()):
            query += f" limit {draw(st.integers(0, 60))}"
        return f"{query} as out;"
    expr = EXPRESSIONS
    items = draw(st.lists(st.tuples(expr, st.none() | IDENT), min_size=1, max_size=4))
    select_list = ", ".join(e if alias is None else f"{e} as {alias}" for e, alias in items)
    source = draw(st.sampled_from(["t1", "t2", "t0", "t1 x join t2 y on x.a = y.a", "t1 x, t2 y", "missing_table",
                                   "(select * from t1 where a > 0) s", "t1 lateral view explode(d) q as v", "v0"]))
    query = f"select {draw(st.sampled_from(['', 'distinct ']))}{select_list} from {source}"
    if draw(st.booleans()):
        query += f" where {draw(expr)}"
    if draw(st.integers(0, 3)) == 0:
        query += f" group by {draw(st.sampled_from(COLUMNS))}"
    if draw(st.integers(0, 3)) == 0:
        query += f" order by {draw(expr)} {draw(st.sampled_from(['', 'asc', 'desc', 'nulls first']))}"
    if draw(st.booleans()):
        query += f" limit {draw(st.integers(-1, 100))}"
    if draw(st.integers(0, 7)) == 0:  # a garbage token
        at = draw(st.integers(0, len(query)))
        query = query[:at] + draw(st.sampled_from(PIECES + [" union ", " from ", " select ", "'", "\""])) + query[at:]
    name = draw(st.sampled_from(["out", "`odd name`", "表", "out2"]))  # never t0, t1, t2, v0: later inputs need them
    return f"{query} as {name};"


@fuzz("engine_select", deadline_s=10)
@given(selects())
def test_engine_selects(fuzz_session, text: str):
    run_engine(fuzz_session, text, "select")


@st.composite
def sets(draw: st.DrawFn) -> str:
    statements = []
    keys = ["a", "b", "data", "`odd key`", "spark.x"]
    for _ in range(draw(st.integers(1, 4))):
        key = draw(st.sampled_from(keys))
        kind = draw(st.sampled_from([None, "text", "sql", "conf", "defaultParam", "nonsense", "SQL"]))
        if kind in ("sql", "SQL"):
            value = "'''" + draw(selects())[:-1].rsplit(" as ", 1)[0].replace("'''", "") + "'''"
        else:
            raw = draw(st.text(max_size=20) | st.sampled_from(["${a}", "${a}${b}", "${nope}", "${", "$a", "${data}/x"]))
            value = draw(st.sampled_from(['"{}"', "'''{}'''", "`{}`", "{}"])).format(raw.replace('"', "").replace("'", "").replace("`", ""))
        where = ""
        if kind is not None:
            where = f' where type="{kind}"'
            if draw(st.booleans()):
                where += f' and scope="{draw(st.sampled_from(["session", "request", "nonsense"]))}"'
        statements.append(f"set {key} = {value}{where};")
        if draw(st.booleans()):
            statements.append(f"select '${{{key.strip('`')}}}' as v as seen;")
    return "\n".join(statements)


@fuzz("engine_set", deadline_s=10)
@given(sets())
def test_engine_sets(fuzz_session, text: str):
    run_engine(fuzz_session, text, "set")


NAMES = ["good.parquet", "good.csv", "good.json", "text.txt", "corrupt.parquet", "empty.csv", "binary.json",
         "utf16.csv", "ragged.csv", "PAR1.csv", "mixed", "mixed/k=1", "loop", "emptydir", "missing.parquet", ""]
DELTA_NAMES = ["fz.tbl", "tbl", "fz.nope", "../fz", "fz/tbl", "/etc/passwd", "fz.tbl.x", "\u0444z.tbl", "fz.${a}", ""]
OPTIONS = {"header": ["true", "false", "yes", ""], "inferSchema": ["true", "false", "1"], "delimiter": [",", ";", "\t", "", "ab", "\x00"],
           "version": ["0", "1", "2", "99", "-1", "x", "99999999999999999999"], "timestampAsOf": ["2024-01-01", "3000-01-01 00:00:00", "yesterday", ""],
           "mode": ["path", "overwrite", ""], "whatever": ["1"]}


@st.composite
def loads(draw: st.DrawFn) -> str:
    fmt = draw(st.sampled_from(["parquet", "csv", "json", "text", "delta", "Delta", "PARQUET", "orc", "jdbc", "es"]))
    if fmt.lower() == "delta" and draw(st.booleans()):
        path = draw(st.sampled_from(DELTA_NAMES))
    elif draw(st.integers(0, 4)) == 0:  # a name made up on the spot, inside the files folder
        junk = draw(st.text(max_size=15).filter(lambda t: "/" not in t and "`" not in t and t not in (".", "..")))
        path = "{files}/" + junk  # {files}: the test puts the real folder in
    else:
        path = "{files}/" + draw(st.sampled_from(NAMES))
    chosen = draw(st.lists(st.sampled_from(sorted(OPTIONS)), max_size=3, unique=True))
    options = " and ".join(f'{k}="{draw(st.sampled_from(OPTIONS[k]))}"' for k in chosen)
    where = f" where {options}" if options else ""
    name = draw(st.sampled_from(["loaded", "`x y`"]))
    follow = draw(st.sampled_from(["", f" select * from {name} limit 5 as peek;", f" select count(*) as n from {name} as peek;"]))
    return f"load {fmt}.`{path}`{where} as {name};{follow}"


@fuzz("engine_load", deadline_s=10)
@given(loads())
def test_engine_loads(fuzz_session, files, text: str):
    run_engine(fuzz_session, text.replace("{files}", str(files)), "load")


@fuzz("engine_command", deadline_s=10)
@given(st.sampled_from([
    "!show tables;", "!show;", "!desc {t};", "!desc;", "!delta history {d};", "!delta info {d};", "!delta show tables;",
    "!delta;", "!delta history;", '!python conf "{k}={v}";', '!python env "{k}={v}";', '!python conf "{k}";',
    "!python;", "!unknown {t};", "!{k};",
]), st.sampled_from(["t1", "v0", "nope", "`a b`", "表", "${a}"]), st.sampled_from(DELTA_NAMES[:-1] + ["``"]),
    st.text(alphabet=string.printable.replace('"', "").replace("`", ""), max_size=8), st.text(max_size=8).map(lambda t: t.replace('"', "")))
def test_engine_commands(fuzz_session, template: str, t: str, d: str, k: str, v: str):
    run_engine(fuzz_session, template.format(t=t, d=d, k=k, v=v), "command")


# -- the total ----------------------------------------------------------------------------------------

def test_total_at_least_10000(figures):
    """Runs after the fuzz tests above (pytest keeps file order): the promised 10 000 inputs
    really were tried, each test at least its budget."""
    per_test = {
        "parser": sum(BUDGET[k] for k in BUDGET if not k.startswith("engine")),
        "engine": sum(BUDGET[k] for k in BUDGET if k.startswith("engine")),
    }
    figures["fuzz: parser inputs tried"] = COUNTS["parser"]
    figures["fuzz: engine inputs tried"] = COUNTS["engine"]
    figures["fuzz: engine inputs that ran without error / ended in an MLSQLError"] = f"{COUNTS['engine_ok']} / {COUNTS['engine_mlsql_error']}"
    figures["fuzz: inputs tried in all"] = COUNTS["parser"] + COUNTS["engine"]
    assert COUNTS["parser"] >= per_test["parser"], COUNTS
    assert COUNTS["engine"] >= per_test["engine"], COUNTS
    for kind in ("select", "set", "load", "command"):
        assert COUNTS[f"engine_{kind}"] >= BUDGET[f"engine_{kind}"], (kind, COUNTS)
    assert COUNTS["parser"] + COUNTS["engine"] >= examples(TOTAL_TARGET)  # TOTAL_TARGET itself under "ci"
    assert COUNTS["engine_ok"] > 0 and COUNTS["engine_mlsql_error"] > 0, "the engine inputs must exercise both outcomes"

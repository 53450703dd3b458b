"""Issue 23's conformance suite: every case of ``cases/*.txt`` (Spark's documented examples and
Spark's own test expectations, per family of functions) run through a real ``Session`` on DuckDB
and compared with what Spark prints (``harness.py``)."""

from __future__ import annotations

import pytest

from mlsql_ray import MLSQLError, Session

from .harness import CASES, Case, read_cases, run

FILES = sorted(CASES.glob("*.txt"))
ALL = [(path, case) for path in FILES for case in read_cases(path)]


@pytest.fixture(scope="module")
def sessions(tmp_path_factory):
    """One session per case file, with the statements run that its cases so far asked for."""
    opened: dict = {}
    yield lambda path, case: _session_for(opened, tmp_path_factory, path, case)
    for session, _ in opened.values():
        session.close()


def _session_for(opened, tmp_path_factory, path, case: Case) -> Session:
    session, done = opened.get(path) or (Session(warehouse=tmp_path_factory.mktemp(path.stem)), 0)
    for statement in case.setup[done:]:
        session.execute(statement)
    opened[path] = (session, len(case.setup))
    return session


@pytest.mark.parametrize("path, case", ALL, ids=[f"{p.stem}:{c.line}:{c.sql[:50]}" for p, c in ALL])
def test_spark_prints_the_same(sessions, path, case: Case):
    session = sessions(path, case)
    if case.error is not None:
        with pytest.raises(MLSQLError, match=None) as raised:
            run(session, case.sql)
        assert case.error.lower() in str(raised.value).lower()
        return
    rows, types = run(session, case.sql)
    expected = case.rows
    if not case.ordered:
        rows, expected = sorted(rows), sorted(expected)
    assert rows == expected, f"{path.name}:{case.line}"
    if case.type is not None:
        assert len(types) == 1 and types[0] == case.type, f"{path.name}:{case.line}: type {types}"

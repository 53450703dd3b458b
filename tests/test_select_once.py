"""Issue 27, item 1: a select's work is done once. A batch run (``Session.execute``) computes no
preview; a preview, when shown, and the reads after it share one execution for a small result;
a big one stays a view. A Python function on the session's DuckDB connection counts the rows the
query computed (DuckDB calls it once per row it evaluates)."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from mlsql_ray import Session
from mlsql_ray.engine.catalog import KEPT_ROWS
from mlsql_ray.engine.result import PREVIEW_ROWS
from mlsql_ray.errors import MLSQLError

BIG_ROWS = 10 * KEPT_ROWS


@pytest.fixture(scope="module")
def session(tmp_path_factory):
    with Session(warehouse=tmp_path_factory.mktemp("warehouse")) as s:
        yield s


@pytest.fixture
def calls(session):
    """The values ``counted(x)`` was called with since the test began."""
    seen: list[int] = []

    def counted(x: int) -> int:
        seen.append(x)
        return x

    session.con.create_function("counted", counted, ["BIGINT"], "BIGINT", side_effects=True)
    yield seen
    session.con.remove_function("counted")


@pytest.fixture(scope="module")
def big_file(tmp_path_factory):
    """A parquet file too big to be kept whole after a preview (reading it is not counting it)."""
    path = tmp_path_factory.mktemp("data") / "big.parquet"
    pq.write_table(pa.table({"id": pa.array(range(BIG_ROWS), pa.int64())}), path)
    return path


def kinds(session) -> dict[str, str]:
    return {r["name"]: r["kind"] for r in session.execute("!show tables;")[0].table.to_pylist()}


def test_a_batch_select_computes_nothing_until_read(session, calls):
    session.execute("select counted(id) as v from range(5) as r(id) as lazy_t;")
    assert calls == []
    assert session.table("lazy_t").column("v").to_pylist() == [0, 1, 2, 3, 4]
    assert len(calls) == 5


def test_a_shown_small_result_is_computed_once_for_the_preview_and_every_read(session, calls):
    [shown] = session.execute("select counted(id) as v from range(5) as r(id) as small_t;", previews=True)
    assert shown.num_rows == 5 and shown.table.column("v").to_pylist() == [0, 1, 2, 3, 4]
    assert len(calls) == 5
    assert session.table("small_t").num_rows == 5
    session.execute("select v * 2 as w from small_t as doubled;")
    assert session.table("doubled").column("w").to_pylist() == [0, 2, 4, 6, 8]
    assert len(calls) == 5  # the table is kept: nothing ran the query again
    assert kinds(session)["small_t"] == "arrow"


def test_a_preview_read_late_is_computed_once_and_kept(session, calls):
    [result] = session.execute("select counted(id) as v from range(7) as r(id) as late_t;")
    assert calls == []
    assert result.num_rows == 7 and result.message == "late_t: 7 rows"
    assert session.table("late_t").num_rows == 7
    assert len(calls) == 7


def test_a_big_result_is_previewed_in_part_and_stays_a_view(session, calls, big_file):
    session.execute(f"load parquet.`{big_file}` as big_source;")
    [shown] = session.execute("select counted(id) as v from big_source as big_t;", previews=True)
    assert shown.more and shown.num_rows is None and shown.table.num_rows == PREVIEW_ROWS
    assert len(calls) < BIG_ROWS  # the preview stopped reading
    assert kinds(session)["big_t"] == "lazy"
    before = len(calls)
    assert session.table("big_t").num_rows == BIG_ROWS  # streams from the view, whole
    assert len(calls) - before == BIG_ROWS


def test_a_batch_select_run_time_error_shows_at_the_select_when_read(session):
    script = "select 1 as a as fine_t;\nselect assert_true(id < 2) as ok from range(5) as r(id) as checked_t;"
    results = session.execute(script)  # binds fine: the failure is in the rows
    assert "checked_t" in session.catalog
    with pytest.raises(MLSQLError, match="(?i)assert") as from_table:
        session.table("checked_t")
    with pytest.raises(MLSQLError, match="(?i)assert") as from_preview:
        results[1].table
    assert (from_table.value.line, from_table.value.column) == (from_preview.value.line, from_preview.value.column) == (2, 1)
    with pytest.raises(MLSQLError, match="(?i)assert") as shown:
        session.execute(script.replace("_t", "_shown"), previews=True)
    assert shown.value.line == 2 and "checked_shown" not in session.catalog


def test_a_held_result_keeps_its_rows_when_names_are_redefined(session, calls):
    """A result's view still reads what it read when a later statement redefines its name and
    the name it reads (engine.catalog: held views); it is computed only when asked."""
    results = session.execute("select id from range(3) as r(id) as base_t;\n"
                              "select counted(id) * 10 as v from base_t as redefined_t;\n"
                              "select 9 as v as redefined_t;\nselect 5 as id as base_t;")
    assert calls == []
    assert results[1].table.column("v").to_pylist() == [0, 10, 20]
    assert len(calls) == 3
    assert session.table("redefined_t").column("v").to_pylist() == [9]


def test_a_dropped_result_is_never_computed(session, calls):
    session.execute("select counted(id) as v from range(3) as r(id) as dropped_t;")
    session.execute("select 9 as v as dropped_t;")  # a later run: the first result is not held
    assert calls == []

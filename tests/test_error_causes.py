"""Issue 24, item 5: an error says its root cause in one line, whatever the size of the data.

* A query that fails part way through a save streamed into Delta (``assert_true`` failing at the
  last rows of a million) says what the same script says over a hundred rows: "Assertion failed",
  not deltalake's "Generic DeltaTable error: Arrow error: C Data interface error: ... Traceback";
  the table keeps its version.
* A CSV file DuckDB cannot read says which file, which line and why ("not utf-8 encoded",
  "Maximum line size ... exceeded"), in one line, wherever the read happens.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from deltalake import DeltaTable

from mlsql_ray import MLSQLError, Session

# a million rows stream into deltalake batch by batch: the failure comes long after the save began
STREAMED_ROWS = 1_000_000


def failing_save(rows: int) -> str:
    return (f"select id, assert_true(id < {rows - 5}) as ok from range({rows}) as t;\n"
            "save overwrite t as delta.`db.half`;")


def test_a_query_failing_late_in_a_streamed_save_says_what_a_small_one_says(session: Session, warehouse: Path):
    session.execute("select 1 as id as first; save overwrite first as delta.`db.half`;")
    with pytest.raises(MLSQLError) as small:
        session.execute(failing_save(100))
    with pytest.raises(MLSQLError) as big:
        session.execute(failing_save(STREAMED_ROWS))
    assert small.value.message == "Assertion failed"
    assert big.value.message == small.value.message, big.value.message
    assert (big.value.line, big.value.column) == (2, 1)  # the save
    assert DeltaTable(str(warehouse / "db" / "half")).version() == 0  # nothing was committed


def test_a_streamed_save_into_a_new_table_that_fails_leaves_no_table(session: Session, warehouse: Path):
    with pytest.raises(MLSQLError, match="^2:1: Assertion failed$"):
        session.execute(failing_save(STREAMED_ROWS))
    with pytest.raises(MLSQLError, match="does not exist"):
        session.execute("load delta.`db.half` as gone;")


@pytest.fixture
def latin1_csv(tmp_path: Path) -> Path:
    path = tmp_path / "latin1.csv"
    path.write_bytes("name,city\nann,Zürich\n".encode("latin-1"))
    return path


def test_a_csv_that_is_not_utf8_says_so_with_file_and_line(session: Session, latin1_csv: Path):
    with pytest.raises(MLSQLError) as info:
        session.execute(f'load csv.`{latin1_csv}` where header="true" as t; select * from t as u;')
    message = info.value.message
    assert message.startswith(f"CSV error in {latin1_csv} on line 2: ")
    assert "not utf-8 encoded" in message and "\n" not in message


def test_a_csv_line_longer_than_the_reader_takes_says_so(session: Session, tmp_path: Path):
    path = tmp_path / "long.csv"
    path.write_text("a,b\n1,2\n" + "x" * 2_100_000 + ",3\n")
    with pytest.raises(MLSQLError) as info:
        session.execute(f'load csv.`{path}` where header="true" as t; select count(*) as n from t as u;')
    message = info.value.message
    assert message.startswith(f"CSV error in {path} on line 3: Maximum line size of ")
    assert "exceeded" in message and "\n" not in message and "xxx" not in message


def test_a_csv_error_inside_a_file_save_is_one_line_too(session: Session, latin1_csv: Path, tmp_path: Path):
    with pytest.raises(MLSQLError) as info:
        session.execute(f'load csv.`{latin1_csv}` where header="true" as t; '
                        f'save overwrite t as parquet.`{tmp_path / "out"}`;')
    assert "\n" not in info.value.message
    assert f"CSV error in {latin1_csv} on line 2: " in info.value.message
    assert not (tmp_path / "out").exists()

"""Ragged CSV (issue 24, item 6), generated: every mode reads what Spark's reads.

Hypothesis writes files whose records have random field counts (fewer, as many, more than the
first record), empty fields, quoted fields holding the separator and doubled quotes, blank lines
(before the first record too).
Each is loaded in PERMISSIVE, DROPMALFORMED and FAILFAST mode and with a corrupt-record column,
with and without a header, and compared with Spark's rules applied here record by record
(``UnivocityParser``: the first record sets the columns; a record of another length is malformed;
an empty field is NULL; blank lines are skipped). FAILFAST must stop at the first malformed
record's line, and nothing but an ``MLSQLError`` may come out.

Two leniencies of DuckDB's reader, which the three modes read through, are part of the expected
results (docs/reliability.md names them): extra fields that are all empty
(``1,2,3,``) do not make a record malformed there, and in a file of one column a record whose
first field is empty reads as a blank line does, so it is skipped. The corrupt-record column, read by
Python's csv module, follows Spark in both.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import examples
from mlsql_ray import MLSQLError, Session

COUNTS = {"files": 0, "records": 0, "malformed": 0}
MODES = ("PERMISSIVE", "DROPMALFORMED", "FAILFAST")

fields = st.one_of(
    st.text(alphabet="abcxyz019 ", max_size=6),
    st.sampled_from(["", '"q,uoted"', '"say ""hi"""', '"  padded  "', "ü€", "12", "-3.5"]),
)


@st.composite
def ragged_files(draw: st.DrawFn) -> str:
    width = draw(st.integers(1, 5))
    lines = [""] * draw(st.sampled_from([0, 0, 0, 1, 2])) + [",".join(f"h{i}" for i in range(width))]
    for _ in range(draw(st.integers(0, 12))):
        if draw(st.integers(0, 9)) == 0:
            lines.append("")  # a blank line: skipped
            continue
        count = draw(st.sampled_from([width, width, width, max(1, width - 1), width + 1, width + 3, 1]))
        record = ",".join(draw(fields) for _ in range(count))
        lines.append(record if record.strip() else "x" + record)  # a record of blanks would be a blank line
    return "\n".join(lines) + "\n"


def spark(text: str, header: bool) -> tuple[list[str], list[tuple[int, list, str | None, list]]]:
    """Column names, and per record (its line, values, raw text if malformed, the fields as split)."""
    records = [(number, line, next(csv.reader(io.StringIO(line))))
               for number, line in enumerate(text.splitlines(), 1) if line.strip()]
    first = records[0][2]
    names = list(first) if header else [f"_c{i}" for i in range(len(first))]
    rows = []
    for number, raw, fields in records[1:] if header else records:
        padded = (fields + [None] * len(names))[:len(names)]
        rows.append((number, [v if v else None for v in padded], raw if len(fields) != len(names) else None, fields))
    return names, rows


def read_by_duckdb(fields: list[str], width: int) -> bool:
    """Whether DuckDB's reader yields the record at all (see the module's docstring)."""
    return width > 1 or fields[0] != ""


def malformed_to_duckdb(fields: list[str], width: int) -> bool:
    return len(fields) < width or any(fields[width:])


@pytest.fixture(scope="module")
def csv_session(tmp_path_factory):
    with Session(warehouse=tmp_path_factory.mktemp("ragged-warehouse")) as session:
        yield session


@settings(max_examples=examples(100), deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(text=ragged_files(), header=st.booleans())
def test_generated_ragged_files_read_as_spark_reads_them(csv_session: Session, tmp_path_factory, text: str, header: bool):
    path = tmp_path_factory.mktemp("ragged") / "data.csv"
    path.write_text(text, encoding="utf-8")
    names, records = spark(text, header)
    width = len(names)
    COUNTS["files"] += 1
    COUNTS["records"] += len(records)
    COUNTS["malformed"] += sum(raw is not None for _, _, raw, _ in records)
    read = [(number, values, fields) for number, values, _, fields in records if read_by_duckdb(fields, width)]
    wanted = {"PERMISSIVE": [values for _, values, _ in read],
              "DROPMALFORMED": [values for _, values, fields in read if not malformed_to_duckdb(fields, width)]}
    failing = [number for number, _, _, fields in records if malformed_to_duckdb(fields, width)]
    where = f'header="{str(header).lower()}"'
    for mode in MODES:
        statement = f'load csv.`{path}` where {where} and mode="{mode}" as t; select * from t as out;'
        if mode == "FAILFAST" and failing:
            with pytest.raises(MLSQLError) as info:
                csv_session.execute(statement)
                csv_session.table("out")  # a batch select reads the file when its rows are read
            assert f"CSV error in {path} on line {failing[0]}: malformed record (mode FAILFAST): " in info.value.message
            continue
        csv_session.execute(statement)
        table = csv_session.table("out")
        assert table.column_names == names
        assert [list(row.values()) for row in table.to_pylist()] == wanted.get(mode, wanted["DROPMALFORMED"]), mode
    csv_session.execute(f'load csv.`{path}` where {where} and columnNameOfCorruptRecord="_corrupt" as t; '
                        'select * from t as out;')
    table = csv_session.table("out")
    assert table.column_names == [*names, "_corrupt"]
    assert [list(row.values()) for row in table.to_pylist()] == [[*values, raw] for _, values, raw, _ in records]


def test_ragged_csv_counts(figures):
    """Runs after the generated files: malformed records were among them, and how many."""
    figures["ragged CSV files / records / malformed records (4 modes each)"] = (
        f"{COUNTS['files']} / {COUNTS['records']} / {COUNTS['malformed']}")
    assert COUNTS["files"] >= examples(100) and COUNTS["malformed"] > 0, COUNTS

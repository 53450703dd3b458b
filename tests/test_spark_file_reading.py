"""Issue 24, item 6: CSV and JSON files read as Spark reads them.

CSV (Spark 3's ``UnivocityParser``): the columns come from the first record; a record with fewer
or more fields is malformed, and ``mode`` says what becomes of it: ``PERMISSIVE`` (the default)
fills the missing fields with NULL and drops the extra ones, ``DROPMALFORMED`` drops the record,
``FAILFAST`` stops at it naming the line; ``columnNameOfCorruptRecord`` adds a column with the raw
text of each malformed record. Records end at line ends unless ``multiLine="true"``.

JSON: a field whose values differ in type across records is a string column holding each value
as text, so the string ``"str"`` reads as ``str``, without its quotes.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from mlsql_ray import MLSQLError, Session

RAGGED = "a,b,c\n1,2,3\n4,5\n6,7,8,9\n"


@pytest.fixture
def ragged(tmp_path: Path) -> Path:
    path = tmp_path / "ragged.csv"
    path.write_text(RAGGED)
    return path


def load(session: Session, path: Path, options: str) -> pa.Table:
    session.execute(f"load csv.`{path}` where {options} as t; select * from t as out;")
    return session.table("out")


def test_a_ragged_csv_reads_permissively_by_default(session: Session, ragged: Path):
    table = load(session, ragged, 'header="true"')
    assert table.column_names == ["a", "b", "c"]
    assert table.to_pylist() == [{"a": "1", "b": "2", "c": "3"}, {"a": "4", "b": "5", "c": None},
                                 {"a": "6", "b": "7", "c": "8"}]


def test_the_first_record_sets_the_columns_without_a_header_too(session: Session, ragged: Path):
    table = load(session, ragged, 'header="false" and inferSchema="true"')
    assert table.column_names == ["_c0", "_c1", "_c2"]
    assert table.to_pylist()[2:] == [{"_c0": "4", "_c1": "5", "_c2": None}, {"_c0": "6", "_c1": "7", "_c2": "8"}]


def test_infer_schema_types_the_columns_of_a_ragged_file(session: Session, ragged: Path):
    table = load(session, ragged, 'header="true" and inferSchema="true"')
    assert table.schema == pa.schema([("a", pa.int64()), ("b", pa.int64()), ("c", pa.int64())])
    assert table.column("c").to_pylist() == [3, None, 8]


def test_dropmalformed_drops_the_records_whose_field_count_differs(session: Session, ragged: Path):
    table = load(session, ragged, 'header="true" and mode="DROPMALFORMED"')
    assert table.to_pylist() == [{"a": "1", "b": "2", "c": "3"}]


def test_failfast_stops_at_the_first_malformed_record_naming_its_line(session: Session, ragged: Path):
    with pytest.raises(MLSQLError) as info:
        load(session, ragged, 'header="true" and mode="failfast"')  # Spark's modes are case-insensitive
    assert info.value.message == (f"CSV error in {ragged} on line 3: malformed record (mode FAILFAST): "
                                  "2 fields where the first record has 3")


def test_an_unknown_mode_is_refused(session: Session, ragged: Path):
    with pytest.raises(MLSQLError, match="mode must be one of PERMISSIVE, DROPMALFORMED, FAILFAST, not 'lenient'"):
        load(session, ragged, 'mode="lenient"')


def test_column_name_of_corrupt_record_keeps_the_raw_text_of_malformed_records(session: Session, ragged: Path):
    table = load(session, ragged, 'header="true" and columnNameOfCorruptRecord="_corrupt_record"')
    assert table.column_names == ["a", "b", "c", "_corrupt_record"]
    assert table.to_pylist() == [
        {"a": "1", "b": "2", "c": "3", "_corrupt_record": None},
        {"a": "4", "b": "5", "c": None, "_corrupt_record": "4,5"},
        {"a": "6", "b": "7", "c": "8", "_corrupt_record": "6,7,8,9"},
    ]


@pytest.fixture
def late_misfit(tmp_path: Path) -> Path:
    """A column of numbers but for one word after the first 30 000 rows. DuckDB's sniffer types a
    column from a sample of the first rows (Spark's from all of them: Spark would make it a
    string), so inferSchema makes it a number column that one value does not fit."""
    path = tmp_path / "typed.csv"
    path.write_text('n,s\n1,"x, y"\n2\n' + "".join(f"{i},v\n" for i in range(3, 30_000)) + "seven,z\n")
    return path


def test_a_value_that_does_not_fit_its_type_is_null_dropped_or_an_error_by_mode(session: Session, late_misfit: Path):
    permissive = load(session, late_misfit, 'header="true" and inferSchema="true"')
    assert permissive.schema.field("n").type == pa.int64()
    assert permissive.num_rows == 30_000 and permissive.slice(29_999).to_pylist() == [{"n": None, "s": "z"}]
    dropped = load(session, late_misfit, 'header="true" and inferSchema="true" and mode="DROPMALFORMED"')
    assert dropped.num_rows == 29_998 and dropped.column("n").null_count == 0  # the misfit and the short record
    with pytest.raises(MLSQLError, match=f"CSV error in {late_misfit} on line 3: .*: 1 field where the first record has 2$"):
        session.execute(f'load csv.`{late_misfit}` where header="true" and inferSchema="true" and mode="FAILFAST" as f; '
                        f'select count(*) as n from f as c;', previews=True)  # the count runs as the select is shown


def test_corrupt_records_with_infer_schema_include_values_of_the_wrong_type(session: Session, late_misfit: Path):
    """Spark's PERMISSIVE: a value that does not parse as its column's type is NULL, and its record
    is corrupt."""
    table = load(session, late_misfit, 'header="true" and inferSchema="true" and columnNameOfCorruptRecord="bad"')
    assert table.schema.field("n").type == pa.int64()
    rows = table.to_pylist()
    assert len(rows) == 30_000
    assert rows[:2] == [{"n": 1, "s": "x, y", "bad": None}, {"n": 2, "s": None, "bad": "2"}]
    assert rows[-1] == {"n": None, "s": "z", "bad": "seven,z"}
    assert sum(row["bad"] is not None for row in rows) == 2


def test_a_quoted_value_across_lines_needs_multiline(session: Session, tmp_path: Path):
    path = tmp_path / "multiline.csv"
    path.write_text('a,b\n1,"two\nlines"\n3\n')
    with pytest.raises(MLSQLError) as info:
        load(session, path, 'header="true"')
    assert info.value.message == (f'CSV error in {path} on line 2: a quoted value spans lines: '
                                  f'add where multiLine="true" to read records that do')
    expected = [{"a": "1", "b": "two\nlines"}, {"a": "3", "b": None}]
    assert load(session, path, 'header="true" and multiLine="true"').to_pylist() == expected
    corrupt = load(session, path, 'header="true" and multiLine="true" and columnNameOfCorruptRecord="bad"')
    assert corrupt.to_pylist() == [{**expected[0], "bad": None}, {**expected[1], "bad": "3"}]


def test_header_names_are_made_safe_as_spark_makes_them(session: Session, tmp_path: Path):
    """Spark's makeSafeHeader: an empty name is _c<index>, a repeated one (in any case) gets its index."""
    path = tmp_path / "names.csv"
    path.write_text("id,,Name,name,x,\n1,2,3,4,5,6\n")
    assert load(session, path, 'header="true"').column_names == ["id", "_c1", "Name2", "name3", "x", "_c5"]


def test_ragged_csv_str_reads_as_a_ragged_file_does(session: Session):
    session.execute("set data = '''" + RAGGED + "''';\nload csvStr.`data` where header=\"true\" as t;")
    assert session.table("t").column("c").to_pylist() == ["3", None, "8"]


def test_json_values_of_mixed_types_read_as_spark_text(session: Session, tmp_path: Path):
    path = tmp_path / "mixed.json"
    path.write_text('{"a": 1, "s": {"k": 1}, "l": [1, "x"]}\n'
                    '{"a": "str", "s": {"k": "v"}, "l": null}\n'
                    '{"a": {"x": [1, 2]}, "s": null, "l": ["y"]}\n'
                    '{"a": null}\n')
    session.execute(f"load json.`{path}` as t;")
    table = session.table("t")
    assert table.schema.field("a").type == pa.string()
    assert table.to_pylist() == [
        {"a": "1", "s": {"k": "1"}, "l": ["1", "x"]},
        {"a": "str", "s": {"k": "v"}, "l": None},
        {"a": '{"x":[1,2]}', "s": None, "l": ["y"]},
        {"a": None, "s": None, "l": None},
    ]


def test_json_str_mixed_values_lose_their_quotes_too(session: Session):
    session.execute("""set data = '''{"v": 1}
{"v": "str"}''';
load jsonStr.`data` as t;""")
    assert session.table("t").column("v").to_pylist() == ["1", "str"]


def test_a_csv_str_error_names_the_variable(session: Session):
    with pytest.raises(MLSQLError) as info:
        session.execute("set data = '''" + RAGGED + "''';\nload csvStr.`data` where header=\"true\" and mode=\"FAILFAST\" as t;")
    assert info.value.message == ("CSV error in the variable data on line 3: malformed record (mode FAILFAST): "
                                  "2 fields where the first record has 3")


def test_the_header_is_the_first_line_that_is_not_blank(session: Session, tmp_path: Path):
    path = tmp_path / "blank_first.csv"
    path.write_text("\n\n" + RAGGED)
    assert load(session, path, 'header="true"').column("a").to_pylist() == ["1", "4", "6"]
    table = load(session, path, 'header="true" and inferSchema="true"')
    assert table.column_names == ["a", "b", "c"] and table.column("a").to_pylist() == [1, 4, 6]


def test_a_corrupt_record_column_named_as_a_data_column_is_refused(session: Session, ragged: Path):
    with pytest.raises(MLSQLError, match="columnNameOfCorruptRecord 'c' is a column of the file already"):
        load(session, ragged, 'header="true" and columnNameOfCorruptRecord="c"')

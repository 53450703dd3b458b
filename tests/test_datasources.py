"""Issue 14, item 1: the data source registry and Byzer's in-script sources (jsonStr, csvStr,
script), excel and image, with the examples of byzer-doc's grammar/load.md and datasource/file/."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from mlsql_ray import Session
from mlsql_ray.errors import MLSQLError

# byzer-doc datasource/file/file.md's mock CSV
RAW_CSV = """set rawData='''
id,name,age
100,'John',30
200,'Mary',
300,'Mike',80
400,'Dan',50
''';
"""


def test_json_str_example_of_load_md(session: Session):
    """grammar/load.md: the result table has columns dataType, x, y, z (Spark sorts JSON fields)."""
    [*_, result] = session.execute("""
set abc='''
{ "x": 100, "y": 200, "z": 200 ,"dataType":"A group"}
{ "x": 120, "y": 100, "z": 260 ,"dataType":"B group"}
''';
load jsonStr.`abc` as table1;
select * from table1 as output;
""")
    assert result.table.column_names == ["dataType", "x", "y", "z"]
    assert result.table.schema.field("x").type == pa.int64()  # Spark infers bigint
    assert result.table.to_pylist() == [
        {"dataType": "A group", "x": 100, "y": 200, "z": 200},
        {"dataType": "B group", "x": 120, "y": 100, "z": 260},
    ]


def test_json_str_skips_blank_lines_and_reads_nested_objects(session: Session):
    session.execute("""set rawData='''
{"jack":1,"jack2":2}

{"jack":2,"jack2":3,"inner":{"a":"x"}}
''';
LOAD jsonStr.`rawData` AS table1;""")
    table = session.table("table1")
    assert table.column_names == ["inner", "jack", "jack2"]
    assert table.to_pylist() == [{"inner": None, "jack": 1, "jack2": 2}, {"inner": {"a": "x"}, "jack": 2, "jack2": 3}]


def test_csv_str_with_header_keeps_single_quotes_and_reads_empty_as_null(session: Session):
    """datasource/file/file.md: Spark's quote is ", so 'John' keeps its quotes; the empty age is null."""
    session.execute(RAW_CSV + 'LOAD csvStr.`rawData` where header="true" AS table1;')
    table = session.table("table1")
    assert table.schema == pa.schema([("id", pa.string()), ("name", pa.string()), ("age", pa.string())])
    assert table.to_pylist() == [
        {"id": "100", "name": "'John'", "age": "30"},
        {"id": "200", "name": "'Mary'", "age": None},
        {"id": "300", "name": "'Mike'", "age": "80"},
        {"id": "400", "name": "'Dan'", "age": "50"},
    ]


def test_csv_str_options_as_for_csv(session: Session):
    session.execute("""set data='''a;b
1;x
2;y''';
load csvStr.`data` where sep=";" and inferSchema="true" as noheader;
load csvStr.`data` where delimiter=";" and header="true" and inferSchema="true" as typed;""")
    assert session.table("noheader").to_pylist() == [
        {"_c0": "a", "_c1": "b"}, {"_c0": "1", "_c1": "x"}, {"_c0": "2", "_c1": "y"}]
    typed = session.table("typed")
    assert typed.schema.field("a").type == pa.int64()
    assert typed.to_pylist() == [{"a": 1, "b": "x"}, {"a": 2, "b": "y"}]


def test_an_unknown_option_of_a_load_or_save_warns_naming_the_known_ones(session: Session, tmp_path: Path):
    """As for ETs and algorithms (mlsql_ray.options.check_known): a warning and the load goes on
    (Byzer ignores the option), an error with ``strictOptions``; a dotted key configures the
    storage, and Byzer's fileNum is accepted on every save."""
    data = "set data='''a\n1''';\n"
    strict = 'set strictOptions="true";\n'
    with pytest.raises(MLSQLError) as info:
        session.execute(strict + data + 'load csvStr.`data` where headers="true" as t;')
    known = "csvStr has no option 'headers' (did you mean 'header'?); it knows: header, inferSchema, sep, "
    assert info.value.message.startswith(known)
    assert "t" not in session.catalog.names()
    [*_, loaded] = session.execute(data + 'load csvStr.`data` where headers="true" as t;')
    assert len(loaded.warnings) == 1 and loaded.warnings[0].startswith(known)
    assert session.table("t").column_names == ["_c0"]  # header not read: the option meant was not given
    session.execute(data + 'load csvStr.`data` where header="true" and `fs.s3a.endpoint`="localhost" as t;')
    with pytest.raises(MLSQLError) as info:
        session.execute(strict + f'save overwrite t as json.`{tmp_path / "j"}` where fileNumber="2";')
    assert info.value.message == "json has no option 'fileNumber' (did you mean 'fileNum'?); it knows: fileNum"
    session.execute(f'save overwrite t as json.`{tmp_path / "j"}` where fileNum="2";')
    session.execute(f'load json.`{tmp_path / "j"}` as back;')
    assert session.table("back").to_pylist() == [{"a": "1"}]


def test_csv_str_save_json_then_load_json_and_text(session: Session, tmp_path: Path):
    """file.md's round trip: csvStr → save json → load json / load text."""
    session.execute(RAW_CSV + f"""
LOAD csvStr.`rawData` where header="true" AS table1;
SET savePath="{tmp_path / 'jack'}";
SAVE overwrite table1 AS json.`${{savePath}}`;
Load json.`${{savePath}}` as table2;
Load text.`${{savePath}}` as table3;""")
    # the values were strings in the CSV, so they are strings in the JSON (as on Spark)
    assert sorted(session.table("table2").to_pylist(), key=lambda r: r["id"])[0] == {"id": "100", "name": "'John'", "age": "30"}
    # text: one row per line of the part files (file.md's table), each line one of the JSON objects
    lines = session.table("table3").to_pylist()
    assert sorted(json.loads(row["value"])["id"] for row in lines) == ["100", "200", "300", "400"]
    assert '{"id":"300","name":"\'Mike\'","age":"80"}' in [row["value"] for row in lines]
    assert all(row["file"].startswith(str(tmp_path / "jack")) for row in lines)


def test_text_is_one_row_per_line_as_spark_reads_lines(session: Session, tmp_path: Path):
    """Spark's text source: lines end at \\n, \\r\\n or \\r; a blank line inside is an empty row, the
    last line's end is not; an empty file has no rows."""
    folder = tmp_path / "lines"
    folder.mkdir()
    (folder / "a.txt").write_bytes(b"first\r\nsecond\n\nfourth\rfifth\n")
    (folder / "b.txt").write_bytes(b"")
    (folder / "c.txt").write_bytes(b"no newline at the end")
    session.execute(f"load text.`{folder}` as lines;")
    assert session.table("lines").to_pylist() == [
        {"file": str(folder / "a.txt"), "value": v} for v in ("first", "second", "", "fourth", "fifth")
    ] + [{"file": str(folder / "c.txt"), "value": "no newline at the end"}]


def test_script_is_one_row_with_the_variable_text_in_content(session: Session):
    """grammar/register.md's `load script.`plusFun` as scriptTable;`: Byzer's column is content."""
    code = "def apply(a,b):\n    return a + b"
    session.execute(f"set plusFun='''\n{code}\n''';\nload script.`plusFun` as scriptTable;")
    assert session.table("scriptTable").to_pylist() == [{"content": code}]


def test_a_variable_that_is_not_set_is_a_clear_error(session: Session):
    with pytest.raises(MLSQLError, match=r"jsonStr.`nothere` reads the variable nothere, which is not set") as err:
        session.execute("select 1 as a as t;\nload jsonStr.`nothere` as t2;")
    assert err.value.line == 2


def _workbook(path: Path) -> Path:
    import xlsxwriter

    book = xlsxwriter.Workbook(str(path))
    roles = book.add_worksheet("roles")
    roles.write_row(0, 0, ["name", "age"])
    roles.write_row(1, 0, ["jack", 30])
    roles.write_row(2, 0, ["mary", 2.5])
    part = book.add_worksheet("comment2")
    part.write(0, 0, "not part of the table")
    part.write_row(5, 1, ["k", "v"])
    part.write_row(6, 1, ["a", 1])
    part.write_row(7, 1, ["b", 2])
    docs = book.add_worksheet("技术文档")
    docs.write_row(0, 0, ["title"])
    docs.write_row(1, 0, ["intro"])
    book.close()
    return path


def test_excel_header_infer_schema_sheet_name_and_data_address(session: Session, tmp_path: Path):
    """datasource/file/excel_load.md: header, sheetName, dataAddress as a sheet or 'sheet'!B6:C7."""
    book = _workbook(tmp_path / "hello_world.xlsx")
    session.execute(f"""
load excel.`{book}` where header="true" and dataAddress="roles" as strings;
load excel.`{book}` where header="true" and inferSchema="true" as typed;
load excel.`{book}` where header="true" and sheetName="技术文档" as it_table;
load excel.`{book}` where header="true" and dataAddress="'comment2'!B6:C7" as part;
load excel.`{book}` where header="false" and dataAddress="'comment2'!B6:C8" as raw;
""")
    assert session.table("strings").to_pylist() == [{"name": "jack", "age": "30"}, {"name": "mary", "age": "2.5"}]
    typed = session.table("typed")
    assert typed.schema.field("age").type == pa.float64()
    assert typed.column("age").to_pylist() == [30.0, 2.5]
    assert session.table("it_table").to_pylist() == [{"title": "intro"}]
    assert session.table("part").to_pylist() == [{"k": "a", "v": "1"}]
    assert session.table("raw").to_pylist() == [{"_c0": "k", "_c1": "v"}, {"_c0": "a", "_c1": "1"}, {"_c0": "b", "_c1": "2"}]


def test_excel_unknown_sheet_and_non_workbook_are_errors(session: Session, tmp_path: Path):
    book = _workbook(tmp_path / "b.xlsx")
    with pytest.raises(MLSQLError, match=r"has no sheet 'nope' \(sheets: roles, comment2, 技术文档\)"):
        session.execute(f'load excel.`{book}` where header="true" and sheetName="nope" as t;')
    (tmp_path / "fake.xlsx").write_text("not a workbook")
    with pytest.raises(MLSQLError, match="cannot read .*fake.xlsx as an Excel workbook"):
        session.execute(f"load excel.`{tmp_path / 'fake.xlsx'}` where header=\"true\" as t;")
    with pytest.raises(MLSQLError, match="image can only be loaded, not saved"):
        session.execute(f"load excel.`{book}` where header=\"true\" as t; save overwrite t as image.`{tmp_path / 'out'}`;")


def test_excel_save_then_load_round_trip(session: Session, tmp_path: Path):
    """excel_load.md: `save overwrite hello_world as excel.`/tmp/hellow.xlsx` where header="true";`"""
    out = tmp_path / "hellow.xlsx"
    session.execute(f"""select 1 as a, "x" as b, 2.5 as f, cast("2024-01-02 03:04:05" as timestamp) as ts as hello_world;
save overwrite hello_world as excel.`{out}` where header="true" and sheetName="data";
load excel.`{out}` where header="true" and inferSchema="true" and sheetName="data" as back;
save overwrite hello_world as excel.`{tmp_path / 'plain.xlsx'}` where header="false";
load excel.`{tmp_path / 'plain.xlsx'}` where header="false" as plain;""")
    import datetime
    assert session.table("back").to_pylist() == [{"a": 1.0, "b": "x", "f": 2.5, "ts": datetime.datetime(2024, 1, 2, 3, 4, 5)}]
    assert session.table("plain").to_pylist() == [{"_c0": "1", "_c1": "x", "_c2": "2.5", "_c3": "2024-01-02 03:04:05"}]
    with pytest.raises(MLSQLError, match="already exists; an Excel file can only be written whole"):
        session.execute(f"save append hello_world as excel.`{out}`;")


def test_image_rows_hold_decoded_pixels_in_bgr(session: Session, tmp_path: Path):
    from PIL import Image

    folder = tmp_path / "images"
    folder.mkdir()
    Image.fromarray(np.array([[[255, 0, 0], [0, 0, 255]]], dtype=np.uint8)).save(folder / "a.png")
    Image.fromarray(np.array([[7], [9]], dtype=np.uint8)).save(folder / "b.png")
    (folder / "c.png").write_text("not an image")
    session.execute(f"""load image.`{folder}` as images;
load image.`{folder}` where dropInvalid="true" as valid;
select image.width as width, image.height as height, image.nChannels as channels, image.mode as mode,
       image.data as data from images as sizes;""")
    assert session.table("sizes").to_pylist() == [
        {"width": 2, "height": 1, "channels": 3, "mode": 16, "data": bytes([0, 0, 255, 255, 0, 0])},
        {"width": 1, "height": 2, "channels": 1, "mode": 0, "data": bytes([7, 9])},
        {"width": -1, "height": -1, "channels": -1, "mode": -1, "data": b""},
    ]
    assert session.table("valid").num_rows == 2
    assert session.table("images").column("image")[0]["origin"].as_py() == (folder / "a.png").as_uri()


def test_show_datasources_lists_the_registry_and_the_load_md_filter_works(session: Session):
    """grammar/load.md: `!show datasources; !lastCommand named datasources;` then filter by name."""
    [listing, *_, result] = session.execute("""!show datasources;
!lastCommand named datasources;
select * from datasources where name like "%csv%" as output;""")
    names = listing.table.column("name").to_pylist()
    for name in ("parquet", "csv", "json", "text", "delta", "jsonStr", "csvStr", "script", "excel", "image"):
        assert name in names
    assert sorted(result.table.column("name").to_pylist()) == ["csv", "csvStr"]


def test_show_datasource_params(session: Session):
    [result] = session.execute('!show "datasources/params/csv";')
    params = {r["param"]: r for r in result.table.to_pylist()}
    assert result.table.column_names == ["param", "description", "default"]
    assert params["header"]["default"] == "false"
    assert params["sep"]["default"] == ","
    [excel] = session.execute("!show datasources/params/excel;")
    assert {r["param"]: r["default"] for r in excel.table.to_pylist()}["header"] == ""  # required, as Byzer's
    [empty] = session.execute('!show "datasources/params/jsonStr";')
    assert empty.table.num_rows == 0 and empty.table.column_names == ["param", "description", "default"]
    with pytest.raises(MLSQLError, match="unknown format 'avro'"):
        session.execute('!show "datasources/params/avro";')


def test_format_names_match_whatever_the_case(session: Session):
    session.execute("set d='''{\"a\":1}''';\nload JSONSTR.`d` as t;")
    assert session.table("t").to_pylist() == [{"a": 1}]


def test_a_feature_ets_name_loads_the_table_its_train_saved(session: Session, tmp_path: Path):
    """ml/feature/vecmap.md: ``load VecMapInPlace.`TARGET/data``` reads what ``train`` saved there, as
    ``parquet.`TARGET/data``` does; a warehouse TARGET too; every feature ET that learns is a source."""
    session.execute(f"""
        select map("a", 1.0, "b", 2.0) as f union all select map("b", 5.0) as f as maps;
        train maps as VecMapInPlace.`{tmp_path}/vm` where inputCol="f";
        train maps as VecMapInPlace.`db.vm` where inputCol="f";
        load VecMapInPlace.`{tmp_path}/vm/data` as by_et;
        load parquet.`{tmp_path}/vm/data` as by_parquet;
        load vecmapinplace.`db.vm/data` as from_warehouse;""")
    assert session.table("by_et").to_pylist() == [{"f": [1.0, 2.0]}, {"f": [0.0, 5.0]}]
    assert session.table("by_et") == session.table("by_parquet") == session.table("from_warehouse")
    session.execute("!show datasources;\n!lastCommand named datasources;")
    names = {name.lower() for name in session.table("datasources").column("name").to_pylist()}
    assert {"vecmapinplace", "scalerinplace", "normalizeinplace", "stringindex", "discretizer", "tfidfinplace",
            "word2vecinplace"} <= names
    with pytest.raises(MLSQLError, match="trained by VecMapInPlace, not ScalerInPlace"):
        session.execute(f"load ScalerInPlace.`{tmp_path}/vm/data` as t;")
    with pytest.raises(MLSQLError, match=r"VecMapInPlace.`TARGET/data`"):
        session.execute(f"load VecMapInPlace.`{tmp_path}/vm` as t;")

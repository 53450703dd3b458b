"""Issue 41: ``load csv.`` and ``load json.`` on a Daft session are lazy Daft scans where Daft gives
the DuckDB engine's answer (Spark's, as tests/test_spark_file_reading.py, test_engine.py and
test_datasources.py check it), and the DuckDB engine's readers otherwise.

Each case is one of those files with its options, loaded by a DuckDB session and by a Daft session:
the same rows in the same order and the same schema (Daft's large strings and lists counted as
strings and lists), and the Daft session's table is Daft's plan exactly where the case says Daft
can read it. Daft computes in this process (``daft_in_process``)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from mlsql_ray import MLSQLError, Session
from mlsql_ray.engine.catalog import Deferred
from mlsql_ray.engine.daft.frames import is_daft_table

import s3_server as s3
from test_daft_object_storage import s3_settings  # noqa: F401 - the fixture
from test_datasources import RAW_CSV
from test_engine import PEOPLE
from test_spark_file_reading import RAGGED


def _people_csv(header: bool) -> str:
    rows = [tuple(r.values()) for r in PEOPLE.to_pylist()]
    with_header = [PEOPLE.column_names, *rows] if header else rows
    return "".join(",".join(map(str, row)) + "\n" for row in with_header)


_LATE_MISFIT = 'n,s\n1,"x, y"\n2\n' + "".join(f"{i},v\n" for i in range(3, 30_000)) + "seven,z\n"
_FILE_MD = RAW_CSV.split("'''")[1].lstrip("\n")
_JSON_MIXED = ('{"a": 1, "s": {"k": 1}, "l": [1, "x"]}\n{"a": "str", "s": {"k": "v"}, "l": null}\n'
               '{"a": {"x": [1, 2]}, "s": null, "l": ["y"]}\n{"a": null}\n')
_JSON_RECORDS = "".join(json.dumps({"id": i, "tag": f"t{i}", "vals": [i, i * 2]}) + "\n" for i in range(4))

# (files under the case's folder, the load's options, whether Daft reads it); the load reads the
# folder when there are several files, else the file
CSV_CASES = {
    "ragged, header": ({"r.csv": RAGGED}, 'header="true"', True),
    "ragged, no header, inferSchema": ({"r.csv": RAGGED}, 'header="false" and inferSchema="true"', True),
    "ragged, header, inferSchema": ({"r.csv": RAGGED}, 'header="true" and inferSchema="true"', True),
    "a late misfit, inferSchema": ({"t.csv": _LATE_MISFIT}, 'header="true" and inferSchema="true"', True),
    "multiLine": ({"m.csv": 'a,b\n1,"two\nlines"\n3\n'}, 'header="true" and multiLine="true"', True),
    "safe header names": ({"n.csv": "id,,Name,name,x,\n1,2,3,4,5,6\n"}, 'header="true"', True),
    "blank lines first": ({"b.csv": "\n\n" + RAGGED}, 'header="true"', True),
    "blank lines first, inferSchema": ({"b.csv": "\n\n" + RAGGED}, 'header="true" and inferSchema="true"', True),
    "file.md's mock data": ({"f.csv": _FILE_MD}, 'header="true"', True),
    "sep ;, inferSchema": ({"s.csv": "a;b\n1;x\n2;y"}, 'sep=";" and inferSchema="true"', True),
    "delimiter ;, header, inferSchema": ({"s.csv": "a;b\n1;x\n2;y"}, 'delimiter=";" and header="true" and inferSchema="true"', True),
    "Spark's defaults": ({"p.csv": _people_csv(False)}, "", True),
    "people, header, inferSchema": ({"p.csv": _people_csv(True)}, 'header="true" and inferSchema="true"', True),
    "delimiter |": ({"pipes.csv": "a|b\nx,1|2\ny|3\n"}, 'header="true" and delimiter="|"', True),
    "a wide record ending empty": ({"w.csv": ",".join(f"c{i}" for i in range(40)) + "\n" + ",".join(map(str, range(39))) + ",\n"},
                                   'header="true"', True),
    "one column, blank lines": ({"one.csv": 'a\n1\n\n""\n2\n'}, 'header="true"', True),
    "quote and escape": ({"q.csv": "a;b\n'1;2';3\n'x\\'y';4\n"}, 'header="true" and sep=";" and quote="\'" and escape="\\\\"', True),
    "part files": ({"part-0.csv": "a,b\n1,2\n", "part-1.csv": "a,b\n3,\n", "_SUCCESS": ""}, 'header="true"', True),
    "DROPMALFORMED": ({"r.csv": RAGGED}, 'header="true" and mode="DROPMALFORMED"', False),
    "a corrupt record column": ({"r.csv": RAGGED}, 'header="true" and columnNameOfCorruptRecord="bad"', False),
    "no quote": ({"r.csv": RAGGED}, 'header="true" and quote=""', False),
    "no record": ({"e.csv": "\n"}, "", False),
}

JSON_CASES = {
    "records with lists": ({"in.json": _JSON_RECORDS}, "", True),
    "nulls, a late field": ({"b.json": '{"b": 1, "a": "x", "f": 1.5, "t": true}\n{"a": "y", "b": null, "f": 2, "t": false, "e": 3}\n'},
                            "", True),
    "structs": ({"s.json": '{"s": {"k": 1, "j": "v"}, "l": [1,2]}\n{"s": null, "l": []}\n'}, "", True),
    "blank lines": ({"bl.json": '{"a": 1}\n\n{"a": 2}\n'}, "", True),
    "part files": ({"part-0.json": '{"a": 1}\n', "part-1.json": '{"a": 2, "b": "x"}\n'}, "", True),
    "mixed types": ({"mixed.json": _JSON_MIXED}, "", False),
    "dates in strings": ({"d.json": '{"d": "2024-01-03", "ts": "2024-01-03 10:00:00"}\n'}, "", False),
}


def _plain(kind: pa.DataType):
    """A type with Daft's large strings and lists as DuckDB's (and lists' field names dropped)."""
    if pa.types.is_large_string(kind) or pa.types.is_string(kind):
        return "string"
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        return ("list", _plain(kind.value_type))
    if pa.types.is_struct(kind):
        return ("struct", tuple((f.name, _plain(f.type)) for f in kind))
    return str(kind)


def _written(folder: Path, layout: dict[str, str]) -> Path:
    """The case's files under ``folder``; the path its load reads: the folder, or its one file."""
    for name, text in layout.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    return folder if len(layout) > 1 else folder / next(iter(layout))


def _same(duck: Session, on_daft: Session, load: str) -> bool:
    """Loads ``t`` on both sessions; asserts the same schema and rows; whether Daft's is a Daft plan."""
    duck.execute(load)
    on_daft.execute(load)
    planned = is_daft_table(on_daft, "t")
    expected, got = duck.table("t"), on_daft.table("t")
    assert [(f.name, _plain(f.type)) for f in got.schema] == [(f.name, _plain(f.type)) for f in expected.schema]
    assert got.to_pylist() == expected.to_pylist()
    return planned


@pytest.fixture(scope="module")
def sessions(tmp_path_factory):
    home = tmp_path_factory.mktemp("text_loads")
    with Session(warehouse=home / "wh") as duck, Session(warehouse=home / "wh", sql_engine="daft") as on_daft:
        yield home, duck, on_daft


@pytest.mark.parametrize("fmt, case", [*(("csv", c) for c in CSV_CASES), *(("json", c) for c in JSON_CASES)])
def test_text_loads_on_daft_give_the_duckdb_engines_rows_and_schema(daft_in_process, sessions, fmt, case):
    home, duck, on_daft = sessions
    layout, options, on_daft_expected = (CSV_CASES if fmt == "csv" else JSON_CASES)[case]
    path = _written(home / f"{fmt}-{case.replace(' ', '_').replace(',', '')}", layout)
    assert _same(duck, on_daft, f"load {fmt}.`{path}` {'where ' + options if options else ''} as t;") == on_daft_expected


S3_CASES = [("csv", "blank lines first, inferSchema"), ("csv", "part files"), ("csv", "a late misfit, inferSchema"),
            ("json", "part files"), ("json", "mixed types")]


def test_text_loads_from_s3_on_daft_give_the_duckdb_engines_rows_and_schema(daft_in_process, s3_settings, s3_server,
                                                                             tmp_path):
    """The same from the S3 server, its settings only the script's ``fs.s3a.*``: Daft reads the
    files there, DuckDB only what fixes the columns; the DuckDB engine fetches them all."""
    store = s3_server.client()
    with Session(warehouse=tmp_path / "wh") as duck, Session(warehouse=tmp_path / "wh", sql_engine="daft") as on_daft:
        for fmt, case in S3_CASES:
            layout, options, on_daft_expected = (CSV_CASES if fmt == "csv" else JSON_CASES)[case]
            prefix = f"text-loads/{fmt}-{case.replace(' ', '_').replace(',', '')}"
            for name, text in layout.items():
                store.put_object(Bucket=s3.BUCKET, Key=f"{prefix}/{name}", Body=text.encode())
            path = f"s3://{s3.BUCKET}/{prefix}" + ("" if len(layout) > 1 else f"/{next(iter(layout))}")
            load = s3_settings + f"load {fmt}.`{path}` {'where ' + options if options else ''} as t;"
            assert _same(duck, on_daft, load) == on_daft_expected, case


def test_a_value_across_lines_without_multiline_is_refused_on_daft_too(daft_in_process, tmp_path):
    path = tmp_path / "multiline.csv"
    path.write_text('a,b\n1,"two\nlines"\n3\n')
    with Session(warehouse=tmp_path / "wh", sql_engine="daft") as on_daft:
        on_daft.execute(f'load csv.`{path}` where header="true" as t;')
        assert is_daft_table(on_daft, "t")
        with pytest.raises(MLSQLError, match=f'CSV error in {path}: a quoted value spans lines: add where multiLine="true"'):
            on_daft.execute("select count(*) as n from t as c;", previews=True)


def test_a_value_that_is_not_utf8_stops_the_read_on_both_engines(daft_in_process, tmp_path):
    """Far past what fixes the columns: Daft's reader alone would make it NULL."""
    path = tmp_path / "latin1.csv"
    path.write_bytes(b"a,b\n" + b"".join(b"%d,x\n" % i for i in range(50_000)) + b"1,caf\xe9\n")
    for engine in ("duckdb", "daft"):
        with Session(warehouse=tmp_path / "wh", sql_engine=engine) as session:
            session.execute(f'load csv.`{path}` where header="true" as t;')
            with pytest.raises(MLSQLError, match=f"CSV error in {path}.*(UTF-8|utf-8) encoded"):
                session.table("t")


def test_a_csv_load_on_daft_is_a_plan_read_when_a_select_runs(daft_in_process, tmp_path):
    """The load names Daft's plan (the catalog holds no rows, its preview computed apart): rows
    added to the file after the load are in a Daft select run after them, and the select is Daft's
    plan too."""
    path = tmp_path / "people.csv"
    with path.open("w", newline="") as f:
        csv.writer(f).writerows([PEOPLE.column_names, *(tuple(r.values()) for r in PEOPLE.to_pylist())])
    with Session(warehouse=tmp_path / "wh", sql_engine="daft") as on_daft:
        on_daft.execute(f'load csv.`{path}` where header="true" and inferSchema="true" as people;')
        assert on_daft.catalog.head("people", 3).num_rows == 3  # a preview: Daft's first rows, the plan kept
        entry = on_daft.catalog.entry("people")
        assert isinstance(entry.data, Deferred) and entry.source.endswith("(Daft)")
        with path.open("a") as f:
            f.write("6,fay,oslo,6.5\n")
        on_daft.execute("select city, sum(score) as total from people group by city as totals;")
        assert is_daft_table(on_daft, "totals")
        assert sorted(on_daft.table("totals").to_pylist(), key=lambda r: r["city"]) == [
            {"city": "lima", "total": 4.0}, {"city": "oslo", "total": 14.0}, {"city": "rome", "total": 4.75}]


@pytest.mark.slow
def test_csv_loads_on_daft_on_ray(run_cli, ray_address, tmp_path):
    """Through the CLI on the test run's Ray: a CSV typed by ``inferSchema`` (DuckDB's casts, per
    batch on Ray's workers) is grouped and saved by Daft; a value across lines without
    ``multiLine`` stops the script with the load's own error, not Daft's."""
    (tmp_path / "people.csv").write_text(_people_csv(True) + "6,fay,oslo,\n")
    (tmp_path / "multiline.csv").write_text('a,b\n1,"two\nlines"\n')
    script = tmp_path / "job.mlsql"
    script.write_text(f"""load csv.`people.csv` where header="true" and inferSchema="true" as people;
select city, sum(score) as total, count(score) as scored from people group by city as totals;
save overwrite totals as parquet.`{tmp_path / "out"}`;
load csv.`multiline.csv` where header="true" as m;
select * from m as shown;
""")
    done = run_cli("run", str(script), "--sql-engine", "daft", "--warehouse", str(tmp_path / "wh"),
                   ray_address=ray_address, timeout=600)
    assert done.returncode != 0, done.stdout
    assert f'CSV error in multiline.csv: a quoted value spans lines: add where multiLine="true"' in done.stderr, done.stderr
    assert "Daft failed" not in done.stderr
    saved = sorted(pq.read_table(tmp_path / "out").to_pylist(), key=lambda r: r["city"])
    assert saved == [{"city": "lima", "total": 4.0, "scored": 1}, {"city": "oslo", "total": 7.5, "scored": 2},
                     {"city": "rome", "total": 4.75, "scored": 2}]

"""The engine end to end: real files, real DuckDB, one real Session per test.

Expected values are computed independently (pyarrow, numpy, the csv/json modules) from the same
input the engine reads, never copied from what the engine printed.
"""

from __future__ import annotations

import csv
import json
import socket
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from mlsql_ray import MLSQLError, MLSQLSyntaxError, Session
from mlsql_ray.engine.result import PREVIEW_ROWS

SAMPLE_MNIST = Path(__file__).resolve().parent.parent / "sample_data" / "mnist"
TRAIN = SAMPLE_MNIST / "train.parquet"
TEST = SAMPLE_MNIST / "test.parquet"

PEOPLE = pa.table({
    "id": pa.array([1, 2, 3, 4, 5], pa.int64()),
    "name": ["ann", "bob", "cy", "dee", "eve"],
    "city": ["rome", "oslo", "rome", "lima", "oslo"],
    "score": [1.5, 2.0, 3.25, 4.0, 5.5],
})


def run(session: Session, text: str, **kw):
    return session.execute(text, **kw)


def rows(table: pa.Table, *keys: str) -> list[dict]:
    """Rows as dicts, sorted so that tables can be compared whatever the file order."""
    keys = keys or tuple(table.column_names)
    return sorted(table.to_pylist(), key=lambda r: tuple(r[k] for k in keys))


def mnist(path: Path = TEST) -> tuple[np.ndarray, np.ndarray]:
    """(images as an N×784 uint8 array, labels), read with pyarrow alone."""
    table = pq.read_table(path)
    images = table.column("image").combine_chunks()
    pixels = images.flatten().to_numpy(zero_copy_only=False).reshape(len(table), -1)
    return pixels, table.column("label").to_numpy()


@pytest.fixture
def people(session: Session, tmp_path: Path) -> Path:
    """PEOPLE as a parquet file, loaded as `people`."""
    path = tmp_path / "people.parquet"
    pq.write_table(PEOPLE, path)
    run(session, f"load parquet.`{path}` as people;")
    return path


def test_session_table_is_arrow(session, people):
    table = session.table("people")
    assert isinstance(table, pa.Table)
    assert rows(table, "id") == rows(PEOPLE, "id")


def test_text_is_parsed_before_anything_runs(session, people, tmp_path):
    out = tmp_path / "out"
    with pytest.raises(MLSQLSyntaxError):
        run(session, f"save people as parquet.`{out}`;\nload parquet.`x` people;")
    assert not out.exists()


# -- parquet ---------------------------------------------------------------------------------


def test_parquet_round_trip_keeps_values_and_types(session, tmp_path):
    out = tmp_path / "copy"
    run(session, f"load parquet.`{TEST}` as m; save m as parquet.`{out}`; load parquet.`{out}` as back;")
    back = session.table("back")
    source = pq.read_table(TEST)
    assert back.num_rows == source.num_rows
    assert back.schema.field("image").type.value_type == pa.uint8()
    assert back.column("image").to_pylist() == source.column("image").to_pylist()
    assert back.column("label").to_pylist() == source.column("label").to_pylist()


def test_parquet_partition_by_writes_hive_folders_and_reads_them_back(session, tmp_path):
    out = tmp_path / "by_label"
    run(session, f"load parquet.`{TEST}` as m; save m as parquet.`{out}` partitionBy label; load parquet.`{out}` as back;")
    _, labels = mnist(TEST)
    assert sorted(p.name for p in out.iterdir()) == sorted(f"label={v}" for v in set(labels.tolist()))
    back = session.table("back")
    assert back.num_rows == len(labels)
    assert Counter(back.column("label").to_pylist()) == Counter(labels.tolist())


def test_json_partition_by_two_columns(session, people, tmp_path):
    out = tmp_path / "nested"
    run(session, f"save people as json.`{out}` partitionBy city, name; load json.`{out}` as back;")
    assert (out / "city=rome" / "name=cy").is_dir()
    assert rows(session.table("back").select(PEOPLE.column_names), "id") == rows(PEOPLE, "id")


# -- csv ---------------------------------------------------------------------------------------


@pytest.fixture
def csv_file(tmp_path: Path) -> Path:
    path = tmp_path / "people.csv"
    with path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(PEOPLE.column_names)
        writer.writerows(tuple(r.values()) for r in PEOPLE.to_pylist())
    return path


def test_csv_spark_defaults_no_header_all_strings(session, csv_file):
    run(session, f"load csv.`{csv_file}` as raw;")
    raw = session.table("raw")
    assert raw.column_names == [f"_c{i}" for i in range(len(PEOPLE.column_names))]
    assert all(pa.types.is_string(t) for t in raw.schema.types)
    assert raw.num_rows == PEOPLE.num_rows + 1  # the header line is a row of data
    assert list(raw.slice(0, 1).to_pylist()[0].values()) == PEOPLE.column_names


def test_csv_header_without_infer_schema_keeps_strings(session, csv_file):
    run(session, f'load csv.`{csv_file}` where header="true" as t;')
    table = session.table("t")
    assert table.column_names == PEOPLE.column_names
    assert all(pa.types.is_string(t) for t in table.schema.types)
    assert table.column("id").to_pylist() == [str(i) for i in PEOPLE.column("id").to_pylist()]


def test_csv_header_and_infer_schema(session, csv_file):
    run(session, f'load csv.`{csv_file}` options header="true" and inferSchema="true" as t;')
    table = session.table("t")
    assert pa.types.is_integer(table.schema.field("id").type)
    assert pa.types.is_floating(table.schema.field("score").type)
    assert rows(table, "id") == rows(PEOPLE, "id")


@pytest.mark.parametrize("width", [15, 16, 17, 256, 300])
def test_csv_columns_come_from_the_whole_first_record_however_wide(session, tmp_path, width):
    """The first record is read 16 fields at a time, then 16 times more while every field is
    filled: the widths either side of each step give every column, the last one empty or not."""
    header = ",".join(f"h{i}" for i in range(width))
    (tmp_path / "wide.csv").write_text(f"{header}\n" + ",".join(map(str, range(width - 1))) + ",\n")
    session.execute(f'load csv.`{tmp_path / "wide.csv"}` where header="true" as t; select * from t as out;')
    table = session.table("out")
    assert table.column_names == [f"h{i}" for i in range(width)]
    assert table.to_pylist()[0][f"h{width - 2}"] == str(width - 2) and table.to_pylist()[0][f"h{width - 1}"] is None
    (tmp_path / "bare.csv").write_text(",".join("x" * width) + "\n")
    session.execute(f'load csv.`{tmp_path / "bare.csv"}` as t; select * from t as out;')
    assert session.table("out").column_names == [f"_c{i}" for i in range(width)]


def test_csv_hive_folders_read_their_records_and_partition_column(session, tmp_path):
    """A folder of ``k=v`` folders: the first record is read without the partition column (which,
    never null, once made the search for the record's width go on forever)."""
    for k, line in ((1, "1,x"), (2, "2,y")):
        (tmp_path / "data" / f"k={k}").mkdir(parents=True)
        (tmp_path / "data" / f"k={k}" / "part.csv").write_text(f"a,b\n{line}\n")
    run(session, f"load csv.`{tmp_path / 'data'}` where header=\"true\" as t;")
    assert sorted(session.table("t").to_pylist(), key=lambda r: r["k"]) == [
        {"a": "1", "b": "x", "k": 1}, {"a": "2", "b": "y", "k": 2}]


def test_csv_delimiter(session, tmp_path):
    path = tmp_path / "pipes.csv"
    path.write_text("a|b\nx,1|2\ny|3\n")
    run(session, f'load csv.`{path}` where header="true" and delimiter="|" as t;')
    assert session.table("t").to_pylist() == [{"a": "x,1", "b": "2"}, {"a": "y", "b": "3"}]


def test_csv_save_with_header_and_delimiter_round_trips(session, people, tmp_path):
    out = tmp_path / "out_csv"
    run(session, f'save people as csv.`{out}` where header="true" and delimiter=";";')
    [part] = [p for p in out.iterdir() if p.suffix == ".csv"]
    with part.open(newline="") as f:
        written = list(csv.reader(f, delimiter=";"))
    assert written[0] == PEOPLE.column_names
    assert sorted(written[1:]) == sorted([str(v) for v in r.values()] for r in PEOPLE.to_pylist())
    run(session, f'load csv.`{out}` where header="true" and delimiter=";" and inferSchema="true" as back;')
    assert rows(session.table("back"), "id") == rows(PEOPLE, "id")


def test_csv_save_default_has_no_header(session, people, tmp_path):
    out = tmp_path / "plain"
    run(session, f"save people as csv.`{out}`;")
    [part] = list(out.glob("*.csv"))
    assert len(part.read_text().splitlines()) == PEOPLE.num_rows


def test_csv_bad_boolean_option(session, csv_file):
    with pytest.raises(MLSQLError, match="true.*false"):
        run(session, f'load csv.`{csv_file}` where header="yes" as t;')


# -- json lines and text -------------------------------------------------------------------------


def test_json_lines_load_and_save(session, tmp_path):
    source = tmp_path / "in.json"
    records = [{"id": i, "tag": f"t{i}", "vals": [i, i * 2]} for i in range(4)]
    source.write_text("".join(json.dumps(r) + "\n" for r in records))
    out = tmp_path / "out_json"
    run(session, f"load json.`{source}` as j; save j as json.`{out}`;")
    assert rows(session.table("j"), "id") == records
    written = [json.loads(line) for p in out.glob("*.json") for line in p.read_text().splitlines()]
    assert sorted(written, key=lambda r: r["id"]) == records
    run(session, f"load json.`{out}` as back;")
    assert rows(session.table("back"), "id") == records


def test_text_load_gives_file_and_value(session, tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.txt").write_text("first\nline two\n")
    (folder / "b.txt").write_text("second")
    (folder / "_SUCCESS").write_text("")  # Spark's marker files are not data
    run(session, f"load text.`{folder}` as t;")
    table = session.table("t")
    assert table.column_names == ["file", "value"]
    assert table.to_pylist() == [  # one row per line, as Spark's text source
        {"file": str(folder / "a.txt"), "value": "first"},
        {"file": str(folder / "a.txt"), "value": "line two"},
        {"file": str(folder / "b.txt"), "value": "second"},
    ]


def test_text_that_is_not_utf8_is_an_error_naming_the_file(session, tmp_path):
    """DuckDB's read_text refuses it: no replacement characters standing in for the bytes."""
    latin1 = tmp_path / "latin1.txt"
    latin1.write_bytes("café".encode("latin-1"))
    run(session, f"load text.`{latin1}` as t;")  # lazy: nothing is read yet
    with pytest.raises(MLSQLError, match="latin1.txt"):
        run(session, "select value from t as seen;", previews=True)
    assert "seen" not in session.catalog


def test_text_save_is_an_error_and_writes_nothing(session, people, tmp_path):
    out = tmp_path / "as_text"
    with pytest.raises(MLSQLError, match="text"):
        run(session, f"save people as text.`{out}`;")
    assert not out.exists()
    assert [p for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no staging left over


# -- file save modes ---------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["parquet", "csv", "json"])
def test_file_save_modes(session, people, tmp_path, fmt):
    out = tmp_path / f"modes_{fmt}"
    read_opts = {"parquet": "", "csv": ' where header="true" and inferSchema="true"', "json": ""}[fmt]
    write_opts = ' where header="true"' if fmt == "csv" else ""
    run(session, "select * from people where id <= 2 as two; select * from people where id > 2 as three;")

    def saved() -> list[dict]:
        run(session, f"load {fmt}.`{out}`{read_opts} as back;")
        return rows(session.table("back").select(PEOPLE.column_names), "id")

    run(session, f"save two as {fmt}.`{out}`{write_opts};")  # default errorIfExists: fine when absent
    assert saved() == rows(PEOPLE.slice(0, 2), "id")

    with pytest.raises(MLSQLError, match="already exists"):
        run(session, f"save three as {fmt}.`{out}`{write_opts};")
    with pytest.raises(MLSQLError, match="already exists"):
        run(session, f"save errorIfExists three as {fmt}.`{out}`{write_opts};")
    assert saved() == rows(PEOPLE.slice(0, 2), "id")

    results = run(session, f"save ignore three as {fmt}.`{out}`{write_opts};")
    assert "nothing written" in results[-1].message
    assert saved() == rows(PEOPLE.slice(0, 2), "id")

    run(session, f"save append three as {fmt}.`{out}`{write_opts};")
    assert saved() == rows(PEOPLE, "id")

    run(session, f"save overwrite three as {fmt}.`{out}`{write_opts};")
    assert saved() == rows(PEOPLE.slice(2), "id")
    assert [p for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # staging folders cleaned up


def test_append_to_a_single_file_loses_nothing(session, people, tmp_path):
    single = tmp_path / "one.parquet"
    pq.write_table(PEOPLE.set_column(0, "id", pa.array([101, 102, 103, 104, 105])), single)
    with pytest.raises(MLSQLError, match="single file"):  # swapping in a folder would drop its rows
        run(session, f"save append people as parquet.`{single}`;")
    run(session, f"load parquet.`{single}` as back;")
    assert {r["id"] for r in session.table("back").to_pylist()} >= {101, 102, 103, 104, 105}


def test_partitioned_append_adds_files(session, people, tmp_path):
    out = tmp_path / "parts"
    run(session, f"save people as parquet.`{out}` partitionBy city; save append people as parquet.`{out}` partitionBy city;")
    run(session, f"load parquet.`{out}` as back;")
    assert Counter(session.table("back").column("city").to_pylist()) == Counter(PEOPLE.column("city").to_pylist() * 2)


# -- select ---------------------------------------------------------------------------------------


def test_spark_array_index_is_zero_based(session):
    pixels, labels = mnist(TEST)
    run(session, f"load parquet.`{TEST}` as m; select image[0] as first, image[406] as mid, image[783] as last, label from m as px;")
    px = session.table("px")
    assert px.column("first").to_pylist() == pixels[:, 0].tolist()
    assert px.column("mid").to_pylist() == pixels[:, 406].tolist()
    assert px.column("last").to_pylist() == pixels[:, 783].tolist()
    assert px.column("label").to_pylist() == labels.tolist()
    assert pixels[:, 406].any()  # the middle pixel is not trivially zero everywhere


def test_spark_range_table_has_an_id_column(session):
    run(session, "select id, id * 2 as twice from range(1, 7, 2) as r as odd;")
    assert session.table("odd").to_pylist() == [{"id": 1, "twice": 2}, {"id": 3, "twice": 6}, {"id": 5, "twice": 10}]
    run(session, "select count(*) as n, sum(a.id) as total from range(4) a join range(10, 12) b on true as pairs;")
    assert session.table("pairs").to_pylist() == [{"n": 8, "total": 12}]


def test_mnist_filter_and_group_by_counts(session):
    pixels, labels = mnist(TRAIN)
    run(session, f"""
        load parquet.`{TRAIN}` as mnist;
        select label, count(*) as n, max(image[378]) as top
        from mnist where image[378] > 100 and label <> 1
        group by label order by label as counts;
    """)
    keep = (pixels[:, 378] > 100) & (labels != 1)
    expected = [{"label": int(v), "n": int((labels[keep] == v).sum()), "top": int(pixels[keep & (labels == v), 378].max())}
                for v in np.unique(labels[keep])]
    assert session.table("counts").to_pylist() == expected
    assert sum(r["n"] for r in expected) > 100  # the filter keeps a real share of the data


def test_select_result_can_be_selected_again(session, people):
    run(session, """
        select city, count(*) as n, sum(score) as total from people group by city as by_city;
        select city from by_city where n = 2 order by city as pairs;
    """)
    counts = Counter(PEOPLE.column("city").to_pylist())
    assert session.table("pairs").column("city").to_pylist() == sorted(c for c, n in counts.items() if n == 2)
    totals = {r["city"]: r["total"] for r in session.table("by_city").to_pylist()}
    for city in counts:
        assert totals[city] == sum(r["score"] for r in PEOPLE.to_pylist() if r["city"] == city)


def test_select_can_redefine_its_own_input(session, people):
    run(session, "select * from people where score > 2 as people; select count(*) as n from people as c;")
    assert session.table("c").to_pylist() == [{"n": sum(s > 2 for s in PEOPLE.column("score").to_pylist())}]


def test_table_names_are_case_insensitive(session, people):
    run(session, "select count(*) as n from PEOPLE as Counted; select n from COUNTED as again;")
    assert session.table("counted").to_pylist() == [{"n": PEOPLE.num_rows}]
    assert session.table("Again").to_pylist() == [{"n": PEOPLE.num_rows}]


def test_a_name_can_change_kind(session, people, tmp_path):
    other = tmp_path / "other.parquet"
    pq.write_table(pa.table({"z": [7, 8]}), other)
    run(session, "select id from people as t;")
    run(session, f"load parquet.`{other}` as t; select sum(z) as s from t as from_file;")
    assert session.table("from_file").to_pylist() == [{"s": 15}]
    assert session.table("t").column_names == ["z"]
    run(session, "select name from people as t; select count(*) as n from t as from_select;")
    assert session.table("from_select").to_pylist() == [{"n": PEOPLE.num_rows}]
    assert session.table("t").column_names == ["name"]


def test_collect_list(session, people):
    run(session, "select city, sort_array(collect_list(name)) as names from people group by city as g;")
    expected = {}
    for r in PEOPLE.to_pylist():
        expected.setdefault(r["city"], []).append(r["name"])
    assert {r["city"]: r["names"] for r in session.table("g").to_pylist()} == {k: sorted(v) for k, v in expected.items()}


def test_backquoted_identifiers(session, people):
    run(session, """
        select name as `full name`, id as `select` from people as `odd-table`;
        select `full name`, `select` + 1 as nxt from `odd-table` as back;
    """)
    back = session.table("back")
    assert back.column_names == ["full name", "nxt"]
    assert rows(back, "nxt") == [{"full name": r["name"], "nxt": r["id"] + 1} for r in PEOPLE.to_pylist()]


def test_string_functions_follow_spark(session, people):
    run(session, """
        select name,
               concat(name, '-', city) as c, upper(name) as u, length(city) as l,
               substr(city, 2, 2) as s, instr(city, 'o') as i, split(concat(name, ',', city), ',')[1] as second,
               concat_ws('|', city, name) as cw, lpad(cast(id as string), 3, '0') as padded,
               regexp_replace(city, '[aeiou]', '') as consonants
        from people as strs;
    """)
    got = {r["name"]: r for r in session.table("strs").to_pylist()}
    for p in PEOPLE.to_pylist():
        r = got[p["name"]]
        city = p["city"]
        assert r["c"] == f"{p['name']}-{city}"
        assert r["u"] == p["name"].upper()
        assert r["l"] == len(city)
        assert r["s"] == city[1:3]  # Spark's substr is 1-based
        assert r["i"] == city.find("o") + 1  # 1-based, 0 when absent
        assert r["second"] == city  # split(...)[1] is the second piece
        assert r["cw"] == f"{city}|{p['name']}"
        assert r["padded"] == str(p["id"]).zfill(3)
        assert r["consonants"] == "".join(ch for ch in city if ch not in "aeiou")


def test_select_result_preview_and_count(session):
    """A big select over files shows its first rows and does not count the rest (that would read
    them all); a small one is read whole, counted, and kept; over in-memory tables the count is
    cheap, and given."""
    results = run(session, f"load parquet.`{TRAIN}` as m; select label from m union all select label from m as labels;")
    assert results[-1].num_rows is None and results[-1].more
    assert results[-1].table.num_rows == PREVIEW_ROWS  # only a preview is kept on the result
    assert session.table("labels").num_rows == 2 * pq.ParquetFile(TRAIN).metadata.num_rows
    small = run(session, "select label from m where label = 0 as zeros;")[0]
    assert small.num_rows == len([v for v in pq.read_table(TRAIN, columns=["label"]).column(0).to_pylist() if v == 0])
    assert not small.more and small.table.num_rows == PREVIEW_ROWS
    assert {r["name"]: r["kind"] for r in run(session, "!show tables;")[0].table.to_pylist()}["zeros"] == "arrow"
    assert run(session, "select * from labels as in_memory;")[0].num_rows is None
    counted = run(session, "!cache labels session; select * from labels as again;")
    assert counted[-1].num_rows == 2 * pq.ParquetFile(TRAIN).metadata.num_rows and not counted[-1].more


def test_a_select_keeps_its_meaning_when_a_name_it_reads_is_redefined(session):
    """Selects are views computed when read, yet mean what they meant when they ran: a later
    redefinition of a table they read (or of their own name) does not change their rows."""
    run(session, """select 1 as x union all select 2 as x as a;
        select x * 10 as y from a as b;
        select 5 as x as a;
        select * from b as c;
        select x + 1 as x from a as a;
        select a.x, b.y from a, b as pairs;
        select * from (with a as (select 99 as x) select * from a) as shadowed;
        select 7 as x as a;
        select 0 as y as b;""")
    assert sorted(session.table("c").column("y").to_pylist()) == [10, 20]
    assert session.table("a").to_pylist() == [{"x": 7}]
    assert sorted(r["y"] for r in session.table("pairs").to_pylist()) == [10, 20]
    assert {r["x"] for r in session.table("pairs").to_pylist()} == {6}
    assert session.table("shadowed").to_pylist() == [{"x": 99}]
    listing = {r["name"]: r["kind"] for r in run(session, "!show tables;")[0].table.to_pylist()}
    assert listing["c"] == "lazy" and not any(name.startswith("__") for name in listing)


def test_a_select_is_not_computed_until_read(session, tmp_path):
    """Naming a select over a file reads only its preview: the file changing afterwards shows."""
    path = tmp_path / "n.parquet"
    pq.write_table(pa.table({"n": list(range(100))}), path)
    run(session, f"load parquet.`{path}` as n; select n * 2 as m from n as doubled;")
    pq.write_table(pa.table({"n": [1000]}), path)
    assert session.table("doubled").to_pylist() == [{"m": 2000}]


# -- lazy loads ----------------------------------------------------------------------------------------


def test_parquet_load_is_lazy(session, tmp_path):
    copy = tmp_path / "m.parquet"
    copy.write_bytes(TEST.read_bytes())
    run(session, f"load parquet.`{copy}` as m;")
    listing = {r["name"]: r for r in run(session, "!show tables;")[0].table.to_pylist()}
    assert listing["m"]["kind"] == "lazy"
    copy.unlink()  # an eager load would still have every row in memory
    with pytest.raises(MLSQLError, match=r'No files found that match the pattern ".*/m\.parquet"'):
        run(session, "select count(*) as n from m as c;")
    run(session, "select 1 as one as ok;")  # the session is still fine
    assert session.table("ok").to_pylist() == [{"one": 1}]


def test_load_sees_file_contents_at_query_time(session, tmp_path):
    path = tmp_path / "v.parquet"
    pq.write_table(pa.table({"x": [1, 2, 3]}), path)
    run(session, f"load parquet.`{path}` as v;")
    pq.write_table(pa.table({"x": [10, 20, 30, 40]}), path)
    run(session, "select sum(x) as s from v as total;")
    assert session.table("total").to_pylist() == [{"s": 100}]


# -- set and ${} ---------------------------------------------------------------------------------------


def test_set_text_in_sql_paths_options_and_table_names(session, csv_file):
    run(session, f"""
        set dir = "{csv_file.parent}" where scope="session";
        set file = "{csv_file.name}";
        set header = "true";
        set name = "loaded";
        set city = 'rome';
        load csv.`${{dir}}/${{file}}` where header="${{header}}" and inferSchema="true" as ${{name}};
        select name from ${{name}} where city = '${{city}}' order by name as in_${{city}};
    """)
    assert session.variables["dir"] == str(csv_file.parent)
    expected = sorted(r["name"] for r in PEOPLE.to_pylist() if r["city"] == "rome")
    assert session.table("in_rome").column("name").to_pylist() == expected


def test_set_sql_takes_the_first_value(session, people):
    run(session, """
        set n = "select count(*) from people" where type="sql" and scope="session";
        set top = "select name from people order by score desc" where type="sql";
        select '${n}' as n, '${top}' as top as v;
    """)
    best = max(PEOPLE.to_pylist(), key=lambda r: r["score"])["name"]
    assert session.variables["n"] == str(PEOPLE.num_rows)
    assert session.table("v").to_pylist() == [{"n": str(PEOPLE.num_rows), "top": best}]


def test_set_sql_over_a_select_result(session, people):
    run(session, """
        select * from people where score > 3 as good;
        set n_good = "select count(*) from good" where type="sql" and scope="session";
        set nothing = "select name from good where id < 0" where type="sql" and scope="session";
    """)
    assert session.variables["n_good"] == str(sum(s > 3 for s in PEOPLE.column("score").to_pylist()))
    assert session.variables["nothing"] == ""


def test_set_shell(session, tmp_path):
    run(session, f"set who = \"printf '%s-%s' abc {tmp_path.name}\" where type=\"shell\" and scope=\"session\";")
    assert session.variables["who"] == f"abc-{tmp_path.name}"
    with pytest.raises(MLSQLError, match="exit code 3: went wrong$"):
        run(session, 'set bad = "echo ignored; echo went wrong >&2; exit 3" where type="shell";')
    assert "bad" not in session.variables


HOSTILE_VALUES = ["x'; touch {file}; echo '", "$(touch {file})", "`touch {file}`", '"; touch {file}; echo "',
                  "x\ntouch {file}", "${{IFS}}; touch {file} #"]


@pytest.mark.parametrize("hostile", HOSTILE_VALUES)
def test_set_shell_takes_variables_from_table_data_as_data(session, tmp_path, hostile):
    """A value read from a table reaches the shell as an environment variable, never as shell
    text: quotes, ; and $(...) in it do nothing, the command sees it byte for byte."""
    owned = tmp_path / "owned"
    value = hostile.format(file=owned)
    session.catalog.add_arrow("t", pa.table({"v": [value]}), "test")
    run(session, """
        set a = "select v from t" where type="sql" and scope="session";
        set quoted = '''printf '%s' "${a}"''' where type="shell" and scope="session";
        set bare = "echo ${a}" where type="shell" and scope="session";
    """)
    assert session.variables["a"] == value
    assert session.variables["quoted"] == value
    assert session.variables["bare"] == " ".join(value.split())  # unquoted: split into words by the shell, not run
    assert not owned.exists()


def test_set_shell_variable_names_and_environment(session, monkeypatch):
    monkeypatch.setenv("MLSQL_TEST_FROM_ENV", "from the environment")
    run(session, """
        set n = "3";
        set got = '''echo "${n}|${MLSQL_TEST_FROM_ENV}|${unset_here:-fallback}|${#n}"''' where type="shell" and scope="session";
    """)
    assert session.variables["got"] == "3|from the environment|fallback|1"
    with pytest.raises(MLSQLError, match=r"undefined variable \$\{nope\}") as raised:
        run(session, 'set x = "ok";\nset y = "echo ${nope}" where type="shell";')
    assert raised.value.line == 2
    with pytest.raises(MLSQLError, match="'spark.x' cannot reach the shell command for y: shell variable names are letters"):
        run(session, 'set spark.x = "1"; set y = "echo ${spark.x}" where type="shell";')
    assert "y" not in session.variables
    session.catalog.add_arrow("nul", pa.table({"v": ["a\0b"]}), "test")
    with pytest.raises(MLSQLError, match="variable z holds a NUL character"):
        run(session, 'set z = "select v from nul" where type="sql"; set y = "echo ${z}" where type="shell";')


def test_set_shell_timeout(session, tmp_path):
    marker = tmp_path / "late"
    with pytest.raises(MLSQLError, match=r"did not finish within 0\.5 s and was stopped") as raised:
        run(session, f'set slow = "sleep 3 & sleep 3; touch {marker}" where type="shell" and timeout="0.5";')
    assert (raised.value.line, raised.value.column) == (1, 1)
    assert "slow" not in session.variables
    run(session, 'set quick = "echo done" where type="shell" and timeout="5" and scope="session";')
    assert session.variables["quick"] == "done"
    for bad in ("0", "-1", "soon", "inf"):
        with pytest.raises(MLSQLError, match=f"timeout must be a positive number of seconds, not '{bad}'"):
            run(session, f'set q = "echo" where type="shell" and timeout="{bad}";')


def test_set_conf_goes_to_session_conf(session):
    run(session, 'set spark.sql.shuffle.partitions = "8" where type="conf";')
    assert session.conf == {"spark.sql.shuffle.partitions": "8"}
    assert "spark.sql.shuffle.partitions" not in session.variables


def test_default_param_does_not_override(warehouse):
    with Session(warehouse=warehouse, variables={"day": "from-cli"}) as s:
        run(s, 'set day = "2020-01-01" where type="defaultParam"; set fresh = "dflt" where type="defaultParam" and scope="session";')
        assert s.variables["day"] == "from-cli"
        assert s.variables["fresh"] == "dflt"
        run(s, 'set day = "explicit" where scope="session";')  # a plain set does replace it
        assert s.variables["day"] == "explicit"


def test_request_scope_is_forgotten_after_execute(session):
    """Byzer's grammar/set.md: a variable lasts for the request (one execute, one notebook cell)
    unless set with scope="session"."""
    run(session, """
        set keep = "k" where scope="session";
        set tmp = "t";
        select '${tmp}' as v, '${keep}' as k as inside;
    """)
    assert session.table("inside").to_pylist() == [{"v": "t", "k": "k"}]
    assert "tmp" not in session.variables
    assert session.variables["keep"] == "k"
    with pytest.raises(MLSQLError, match=r"\$\{tmp\}"):
        run(session, "select '${tmp}' as v as after;")


def test_request_scope_is_forgotten_even_after_an_error(session):
    with pytest.raises(MLSQLError, match="table nowhere is not defined"):
        run(session, 'set tmp = "t" where scope="request"; select * from nowhere as x;')
    assert "tmp" not in session.variables


def test_set_value_can_use_earlier_variables(session):
    run(session, 'set a = "x"; set b = "${a}-y" where scope="session";')
    assert session.variables["b"] == "x-y"


def test_undefined_variable_is_an_error(session, tmp_path):
    with pytest.raises(MLSQLError, match=r"\$\{nope\}") as info:
        run(session, f"select 1 as a as ok;\n\nload parquet.`{tmp_path}/${{nope}}` as t;")
    assert info.value.line == 3
    assert "ok" in session.catalog  # statements before it did run
    assert "t" not in session.catalog


# -- include --------------------------------------------------------------------------------------------


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_include_is_relative_to_the_including_file(session, tmp_path, monkeypatch):
    project = tmp_path / "project"
    write(project / "lib" / "data.csv", "a,b\n1,2\n3,4\n")
    write(project / "lib" / "loader.mlsql", 'set from_lib = "yes" where scope="session";\nload csv.`data.csv` where header="true" as lib_data;\ninclude local.`deeper/more.mlsql`;\n')
    write(project / "lib" / "deeper" / "more.mlsql", "select count(*) as n from lib_data as nested;\n")
    main = write(project / "main.mlsql", "include local.`lib/loader.mlsql`;\nselect a, b from lib_data as main_view;\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # relative paths must not depend on the working directory
    run(session, main.read_text(), source=main)
    assert session.variables["from_lib"] == "yes"
    assert session.table("main_view").to_pylist() == [{"a": "1", "b": "2"}, {"a": "3", "b": "4"}]
    assert session.table("nested").to_pylist() == [{"n": 2}]


def test_include_without_source_is_relative_to_cwd(session, tmp_path, monkeypatch):
    write(tmp_path / "inc.mlsql", 'set where_from = "cwd" where scope="session";')
    monkeypatch.chdir(tmp_path)
    run(session, "include local.`inc.mlsql`;")
    assert session.variables["where_from"] == "cwd"


def test_self_include_is_refused(session, tmp_path):
    loop = write(tmp_path / "loop.mlsql", 'set n = "1";\ninclude local.`loop.mlsql`;\n')
    with pytest.raises(MLSQLError, match="includes itself") as info:
        run(session, loop.read_text(), source=loop)
    assert info.value.line == 2


def test_include_cycle_is_refused(session, tmp_path):
    write(tmp_path / "a.mlsql", "include local.`b.mlsql`;")
    write(tmp_path / "b.mlsql", "include local.`a.mlsql`;")
    with pytest.raises(MLSQLError, match="includes itself"):
        run(session, "include local.`a.mlsql`;", source=tmp_path / "main.mlsql")


def test_error_in_included_file_names_that_file_and_line(session, tmp_path):
    inner = write(tmp_path / "sub" / "inner.mlsql", "select 1 as a as fine;\n\n  select * from missing_table as broken;\n")
    main = write(tmp_path / "main.mlsql", "set x = 'y';\ninclude local.`sub/inner.mlsql`;\n")
    with pytest.raises(MLSQLError, match="missing_table") as info:
        run(session, main.read_text(), source=main)
    assert Path(info.value.source) == inner.resolve()
    assert (info.value.line, info.value.column) == (3, 3)
    assert "fine" in session.catalog


def test_syntax_error_in_included_file_names_that_file(session, tmp_path):
    inner = write(tmp_path / "bad.mlsql", "set a = 'x';\nload parquet.`p` t;\n")
    with pytest.raises(MLSQLSyntaxError) as info:
        run(session, "include local.`bad.mlsql`;", source=tmp_path / "main.mlsql")
    assert Path(info.value.source) == inner.resolve()
    assert info.value.line == 2
    assert "a" not in session.variables  # nothing of the broken file ran


def test_include_of_missing_file(session, tmp_path):
    with pytest.raises(MLSQLError, match="nothere.mlsql"):
        run(session, "include local.`nothere.mlsql`;", source=tmp_path / "main.mlsql")


# -- bad input: one clear error, nothing lost, the session goes on ------------------------------------------


def assert_still_usable(session: Session) -> None:
    run(session, "select 41 + 1 as answer as alive;")
    assert session.table("alive").to_pylist() == [{"answer": 42}]


def test_unknown_format(session, people, tmp_path):
    with pytest.raises(MLSQLError, match="unknown format 'avro'"):
        run(session, f"load avro.`{tmp_path}` as t;")
    out = tmp_path / "out"
    with pytest.raises(MLSQLError, match="unknown format 'avro'"):
        run(session, f"save people as avro.`{out}`;")
    assert not out.exists()
    assert_still_usable(session)


def test_missing_path(session, tmp_path):
    missing = tmp_path / "no" / "such.parquet"
    with pytest.raises(MLSQLError, match="no such file") as info:
        run(session, f"\n  load parquet.`{missing}` as t;")
    assert str(missing) in str(info.value)
    assert (info.value.line, info.value.column) == (2, 3)
    assert "t" not in session.catalog
    assert_still_usable(session)


def test_empty_folder(session, tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(MLSQLError, match="no data files"):
        run(session, f"load parquet.`{tmp_path / 'empty'}` as t;")


def test_select_of_unknown_table_names_it(session, people):
    with pytest.raises(MLSQLError, match="ghost_table") as info:
        run(session, "select * from people as ok;\nselect * from people join ghost_table on true as x;")
    assert "people" in str(info.value)  # and says which tables do exist
    assert info.value.line == 2
    assert "x" not in session.catalog
    assert_still_usable(session)


def test_sql_syntax_error_points_into_the_script(session, people):
    script = "set a = 'b';\n\nselect id,\n       name\n  from people where id = = 3 as bad;\n"
    with pytest.raises(MLSQLError, match="(?i)syntax") as info:
        run(session, script)
    line = script.split("\n")[4]
    assert info.value.line == 5  # the line in the script, not line 3 of the query
    assert "<class" not in info.value.message  # no Python internals in what users read
    assert line.index("= = 3") < info.value.column <= line.index("3") + 1
    assert "bad" not in session.catalog
    assert_still_usable(session)


def test_sql_syntax_error_on_the_first_line_of_an_indented_select(session, people):
    script = "\n\n    select id from people where (id > as bad;"
    with pytest.raises(MLSQLError, match="SQL syntax error near '>'") as info:
        run(session, script)
    line = script.split("\n")[2]
    assert info.value.line == 3
    assert line.index(">") < info.value.column <= line.index(" as bad") + 1  # offset by the indent


def test_duckdb_runtime_error(session, people):
    """Shown as it runs (the kernel, the CLI), a select's run-time error fails it and it names nothing."""
    with pytest.raises(MLSQLError, match="(?i)assert") as info:
        run(session, "select 1 as a as fine;\nselect assert_true(score < 5) as ok from people as checked;",
            previews=True)
    assert info.value.line == 2
    assert "\n" not in info.value.message  # one line, not DuckDB's whole report
    assert "checked" not in session.catalog
    assert_still_usable(session)


def test_unsupported_statement_is_a_clear_error(session):
    with pytest.raises(MLSQLError, match="not supported"):
        run(session, "create table t (a int);")
    assert_still_usable(session)


def test_save_of_unknown_table(session, tmp_path):
    out = tmp_path / "never"
    with pytest.raises(MLSQLError, match="nobody"):
        run(session, f"save nobody as parquet.`{out}`;")
    assert not out.exists()


# -- commands -------------------------------------------------------------------------------------------


def test_show_tables(session, people):
    run(session, "select id from people as ids;")
    [result] = run(session, "!show tables;")
    listing = {r["name"]: r for r in result.table.to_pylist()}
    assert set(listing) == {"people", "ids"}
    assert listing["people"]["source"].startswith("parquet.")
    assert listing["ids"]["kind"] == "lazy"  # a select is a view, computed when read


def test_desc(session, people):
    """Spark's DESCRIBE: col_name, data_type (Spark's type names), comment."""
    [result] = run(session, "!desc people;")
    assert result.table.to_pylist() == [{"col_name": "id", "data_type": "bigint", "comment": None},
                                        {"col_name": "name", "data_type": "string", "comment": None},
                                        {"col_name": "city", "data_type": "string", "comment": None},
                                        {"col_name": "score", "data_type": "double", "comment": None}]
    with pytest.raises(MLSQLError, match="ghost"):
        run(session, "!desc ghost;")


def test_unknown_command(session):
    with pytest.raises(MLSQLError, match="unknown command !frobnicate"):
        run(session, "!frobnicate now;")
    assert_still_usable(session)


def test_python_env_and_conf(session):
    run(session, '!python env "PYTHON_HOME=/opt/py"; !python conf "runIn=driver";')
    assert session.python_env == {"PYTHON_HOME": "/opt/py"}
    assert session.python_conf == {"runIn": "driver"}
    with pytest.raises(MLSQLError, match="key=value"):
        run(session, '!python conf "nothing";')


# -- the warehouse ----------------------------------------------------------------------------------------


def test_warehouse_from_environment(tmp_path, monkeypatch, people):
    target = tmp_path / "env_wh"
    monkeypatch.setenv("MLSQL_WAREHOUSE", str(target))
    with Session() as s:
        assert s.warehouse == target.resolve()
        run(s, f"load parquet.`{people}` as p; save p as delta.`t`;")
    assert (target / "default" / "t" / "_delta_log").is_dir()


def test_warehouse_defaults_to_cwd(tmp_path, monkeypatch, people):
    monkeypatch.delenv("MLSQL_WAREHOUSE", raising=False)
    monkeypatch.chdir(tmp_path)
    with Session() as s:
        assert s.warehouse == (tmp_path / "warehouse").resolve()
        run(s, f"load parquet.`{people}` as p; save p as delta.`db.t`;")
    assert (tmp_path / "warehouse" / "db" / "t" / "_delta_log").is_dir()


def test_explicit_warehouse_wins_over_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("MLSQL_WAREHOUSE", str(tmp_path / "env_wh"))
    with Session(warehouse=tmp_path / "mine") as s:
        assert s.warehouse == (tmp_path / "mine").resolve()


@pytest.mark.slow
def test_ray_address_from_environment_reaches_session_and_cli(tmp_path, monkeypatch, run_cli):
    """MLSQL_RAY_ADDRESS is read in one place (mlsql_ray.config) for every entry point: a Python
    cell run by the CLI tries the address from the environment, not an embedded Ray."""
    with socket.socket() as probe:  # a loopback port where nothing listens
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv("MLSQL_RAY_ADDRESS", f"127.0.0.1:{port}")
    with Session(warehouse=tmp_path / "wh") as s:
        assert s.ray_address == f"127.0.0.1:{port}"
    with Session(warehouse=tmp_path / "wh", ray_address="auto") as s:
        assert s.ray_address == "auto"
    script = tmp_path / "job.mlsql"
    script.write_text("--%python\nray_context = RayContext.connect(globals(), None)\n")
    done = run_cli("run", str(script), "--warehouse", str(tmp_path / "wh"))
    assert done.returncode == 1
    assert f"cannot reach Ray at 127.0.0.1:{port}" in done.stderr


def test_include_outside_the_scripts_folder_needs_allow_outside(session, tmp_path):
    outside = tmp_path / "elsewhere" / "other.mlsql"
    outside.parent.mkdir()
    outside.write_text("select 7 as x as from_outside;")
    script = tmp_path / "project" / "main.mlsql"
    script.parent.mkdir()
    script.write_text("include local.`../elsewhere/other.mlsql`;")
    with pytest.raises(MLSQLError, match=r"outside .*project.*allowOutside"):
        session.execute(script.read_text(), source=script)
    assert "from_outside" not in session.catalog
    script.write_text('include local.`../elsewhere/other.mlsql` where allowOutside="true";')
    session.execute(script.read_text(), source=script)
    assert session.table("from_outside").column("x").to_pylist() == [7]

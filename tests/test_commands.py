"""Issue 14, item 5: Byzer's built-in commands (byzer-doc grammar/commands.md), with their tables."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mlsql_ray import Session
from mlsql_ray.engine import commands
from mlsql_ray.errors import MLSQLError


@pytest.fixture
def files(tmp_path: Path) -> Path:
    """A folder the file commands may touch, with two CSV files that share a header."""
    root = tmp_path / "files"
    root.mkdir()
    (root / "a.csv").write_text("id,name\n1,x\n")
    (root / "b.csv").write_text("id,name\n2,y\n3,z\n")
    return root


@pytest.fixture
def fs_session(warehouse: Path, files: Path):
    with Session(warehouse=warehouse, allowed_paths=[files]) as s:
        yield s


def one_text(session: Session, text: str) -> str:
    [result] = session.execute(text)
    assert result.table.column_names == ["fileSystem"]
    [value] = result.table.column("fileSystem").to_pylist()
    return value


# -- !show ------------------------------------------------------------------------------------------

def test_show_commands_lists_every_show_subcommand_and_each_runs(session: Session):
    [result] = session.execute("!show commands;")
    spelled = result.table.column("command").to_pylist()
    assert '!show "datasources/params/NAME"' in spelled and "!show tables from NAME" in spelled
    for command in spelled:
        if "NAME" not in command:
            [shown] = session.execute(command + ";")
            assert shown.table is not None, command


def test_show_version_tables_and_tables_from_db(session: Session):
    [version] = session.execute("!show version;")
    assert version.table.to_pylist()[0] == {"name": "mlsql-ray", "version": "0.1.0"}
    session.execute("select 1 as a as t1; save overwrite t1 as delta.`db1.x`; save overwrite t1 as delta.`db2.y`;")
    [tables] = session.execute("!show tables;")
    assert tables.table.column("name").to_pylist() == ["t1"]
    [from_db] = session.execute("!show tables from db2;")
    assert from_db.table.select(["db", "table", "version"]).to_pylist() == [{"db": "db2", "table": "y", "version": 0}]


def test_show_et_is_the_et_registry(session: Session):
    [listing] = session.execute("!show et;")
    assert listing.table.column_names == ["name", "algType", "doc"]
    assert "RateSampler" in listing.table.column("name").to_pylist()
    with pytest.raises(MLSQLError, match="unknown ET 'NoSuchExt'"):
        session.execute('!show "et/params/NoSuchExt";')


def test_show_functions_and_one_function(session: Session):
    session.execute("!show functions;\n!lastCommand named functions;")
    assert {"split_part", "concat_ws", "abs"} <= set(session.table("functions").column("name").to_pylist())
    [one] = session.execute('!show "function/concat_ws";')
    assert set(one.table.column("name").to_pylist()) == {"concat_ws"}
    with pytest.raises(MLSQLError, match="no function named nosuchfn"):
        session.execute('!show "function/nosuchfn";')


def test_show_jobs_resource_and_conf_list(session: Session):
    [jobs] = session.execute("!show jobs;")
    assert jobs.table.column_names == ["owner", "jobType", "jobName", "jobContent", "groupId", "startTime", "state",
                                       "endTime"]
    assert [(r["groupId"], r["jobContent"], r["state"]) for r in jobs.table.to_pylist()] == [("1", "!show jobs", "running")]
    [resource] = session.execute("!show resource;")
    assert resource.table.to_pylist()[0]["totalCores"] == os.cpu_count()
    session.execute('!python conf "runIn=driver"; set spark.x="1" where type="conf";')
    [conf] = session.execute('!show "conf/list";')
    values = {r["name"]: r["value"] for r in conf.table.to_pylist()}
    assert values["python.runIn"] == "driver" and values["spark.x"] == "1"


def test_show_unknown_subcommand_is_an_error_with_the_position(session: Session):
    with pytest.raises(MLSQLError, match=r"!show nonsense: unknown; !show commands lists") as err:
        session.execute("select 1 as a as t;\n  !show nonsense;")
    assert (err.value.line, err.value.column) == (2, 3)


# -- tables -----------------------------------------------------------------------------------------

def test_last_command_names_the_previous_commands_table(session: Session):
    """grammar/load.md: `!show datasources; !lastCommand named datasources;` then a select on it."""
    [_, named, found] = session.execute("""!show datasources;
!lastCommand named datasources;
select name from datasources where name = "jsonStr" as output;""")
    assert named.name == "datasources"
    assert found.table.to_pylist() == [{"name": "jsonStr"}]
    with Session(warehouse=session.warehouse) as fresh:
        with pytest.raises(MLSQLError, match="no command before !lastCommand returned a table"):
            fresh.execute("!lastCommand named t;")


def test_last_table_name_as_commands_md_shows(session: Session):
    """commands.md: `select 1 as a as table1; !lastTableName;` then ${__last_table_name__} is table1."""
    [*_, result] = session.execute("""select 1 as a as table1;
!lastTableName;
select "${__last_table_name__}" as tableName as output;""")
    assert result.table.to_pylist() == [{"tableName": "table1"}]
    # redefining an older table makes it the last one again
    session.execute("select 2 as b as other; select 3 as a as table1; !lastTableName;")
    assert session.variables["__last_table_name__"] == "table1"


def test_table_repartition_and_empty_table(session: Session):
    [*_, repartitioned, empty] = session.execute("""select id from range(10) as t;
!tableRepartition _ -i t -num 3 -o out;
!emptyTable;""")
    assert repartitioned.name == "out"
    assert session.table("out").column("id").to_pylist() == list(range(10))
    assert empty.table.num_rows == 0 and empty.table.num_columns == 0
    with pytest.raises(MLSQLError, match="-num must be a positive whole number, not 'x'"):
        session.execute("!tableRepartition _ -i t -num x -o out;")
    with pytest.raises(MLSQLError, match=r"usage: !tableRepartition _ -i TABLE -num N -o OUTPUT"):
        session.execute("!tableRepartition t 3;")


def test_cache_holds_a_file_table_in_memory_until_uncache(session: Session, tmp_path: Path):
    data = tmp_path / "data.csv"
    data.write_text("a\n1\n")
    session.execute(f'load csv.`{data}` where header="true" as t; !cache t session;')
    data.write_text("a\n2\n")  # the cached rows are the ones read at !cache
    assert session.execute("select a from t as o;")[0].table.to_pylist() == [{"a": "1"}]
    session.execute("!unCache t;")  # back to the file
    assert session.execute("select a from t as o;")[0].table.to_pylist() == [{"a": "2"}]


def test_cache_script_lifecycle_ends_with_the_run(session: Session, tmp_path: Path):
    data = tmp_path / "data.csv"
    data.write_text("a\n1\n")
    for during in session.execute_iter(f'load csv.`{data}` where header="true" as t; !cache t script; select a from t as o;'):
        if during.name == "o":
            data.write_text("a\n2\n")
            shown = during.table  # read during the run, while the cache holds
    assert shown.to_pylist() == [{"a": "1"}]
    assert session.execute("select a from t as o;")[0].table.to_pylist() == [{"a": "2"}]
    with pytest.raises(MLSQLError, match=r"usage: !cache TABLE \[script\|session\]"):
        session.execute("!cache t forever;")


def test_save_file_writes_a_binary_cell(fs_session: Session, files: Path):
    fs_session.execute(f"""select unhex("89504E47") as content as bin;
!saveFile _ -i bin -o {files / "out" / "x.png"};""")
    assert (files / "out" / "x.png").read_bytes() == bytes.fromhex("89504E47")
    fs_session.execute("select 1 as a, 2 as b as two;")
    with pytest.raises(MLSQLError, match="needs a table with one binary cell"):
        fs_session.execute(f"!saveFile _ -i two -o {files / 'y'};")


# -- scripts ----------------------------------------------------------------------------------------

def test_println_and_run_script(session: Session):
    [printed] = session.execute("set who='''world''';\n!println '''hello ${who}''';")[1:]
    assert printed.message == "hello world"
    [result] = session.execute("!runScript ''' select 1 as a as b; ''' named output;")
    assert result.name == "output" and session.table("output").to_pylist() == [{"a": 1}]
    with pytest.raises(MLSQLError, match="!runScript failed at line 2, column 1 of the text: table nothere") as err:
        session.execute("select 1 as a as t;\n\n  !runScript '''select 1 as a as b;\nselect x from nothere as c;''' named o;")
    assert (err.value.line, err.value.column) == (3, 3)


def test_profiler_sql_explain_conf(session: Session):
    [sql] = session.execute("!profiler sql '''select 1 as a''';")
    assert sql.table.to_pylist() == [{"a": 1}]
    session.execute("select 1 as a as t;")
    [plan] = session.execute("!profiler explain t;")
    assert plan.table.column_names == ["plan"] and "SCAN" in plan.table.column("plan")[0].as_py().upper()
    [conf, _] = session.execute("!profiler conf;\n!lastCommand named settings;")
    assert conf.table.num_rows == 20 < conf.num_rows  # a preview; !lastCommand names all the rows
    assert "threads" in session.table("settings").column("name").to_pylist()


def test_show_jobs_lists_recent_statements_without_secrets(session: Session):
    """jobContent is the statement as written: variables unresolved, secret options and set values as ***."""
    session.execute('set pwd = "hunter2" where scope="session";')
    with pytest.raises(MLSQLError, match=r"cannot connect to jdbc:postgresql://127\.0\.0\.1:1/x: .*Connection refused"):  # nothing listens there: the statement fails, the job is listed as failed
        session.execute('connect jdbc where url="jdbc:postgresql://127.0.0.1:1/x" and user="u" and password="${pwd}" as db;\n'
                        'load jdbc.`db.t` where password="hunter2" as t;')
    session.execute('select 1 as a as one;\n!python env "API_TOKEN=hunter2";')
    [jobs] = session.execute("!show jobs;")
    assert [(r["groupId"], r["state"], r["jobContent"]) for r in jobs.table.to_pylist()] == [
        ("6", "running", "!show jobs"),  # running first, then the recent ones, newest first
        ("5", "done", "!python env API_TOKEN=***"),
        ("4", "done", "select 1 as a as one"),
        ("3", "failed", 'load jdbc.`db.t` where password="***" as t'),
        ("2", "done", 'connect jdbc where url="jdbc:postgresql://127.0.0.1:1/x" and user="u" and password="***" as db'),
        ("1", "done", 'set pwd = *** where scope="session"')]
    assert "hunter2" not in str(jobs.table.to_pylist())


def execute_in_a_thread(session: Session, script: str):
    """Start ``session.execute(script)`` in another thread, as the kernel runs it (a select reads
    its first rows as it runs); the thread, and a dict that gets the MLSQLError it ends with under "error"."""
    import threading

    outcome = {}

    def run():
        try:
            session.execute(script, previews=True)
        except MLSQLError as exc:
            outcome["error"] = exc

    worker = threading.Thread(target=run)
    worker.start()
    return worker, outcome


def test_kill_stops_a_query_another_thread_runs_and_the_session_goes_on(session: Session):
    """The job's DuckDB query is interrupted; the statement fails as killed, at its position; the
    tables are as they were; a job id that is unknown, finished or the script itself is a clear error."""
    import time

    session.execute("select 1 as a as kept;")
    worker, outcome = execute_in_a_thread(
        session, "select 2 as b as t2;\nselect count(*) as n from range(100000000000) as r(x) as kept;")
    while not any("range(" in job.text for job in session.jobs.running()):
        assert worker.is_alive(), outcome
        time.sleep(0.02)
    [running] = [r for r in session.execute("!show jobs;")[0].table.to_pylist() if r["state"] == "running"
                 and "range(" in r["jobContent"]]
    with pytest.raises(MLSQLError, match=f"running job {running['groupId']} .*only run !show jobs and !kill"):
        session.execute("select 3 as c as meanwhile;")
    session.execute(f"!kill {running['groupId']};")
    worker.join(60)
    assert not worker.is_alive()
    error = outcome["error"]
    assert error.message == f"job {running['groupId']} was killed (!kill {running['groupId']})" and error.line == 2
    states = {r["groupId"]: r["state"] for r in session.execute("!show jobs;")[0].table.to_pylist()}
    assert states[running["groupId"]] == "killed"
    assert session.table("kept").to_pylist() == [{"a": 1}]  # the killed select named nothing
    assert "meanwhile" not in session.catalog
    with pytest.raises(MLSQLError, match="no job nosuch in this session"):
        session.execute("!kill nosuch;")
    with pytest.raises(MLSQLError, match=f"job {running['groupId']} is not running: it ended \\(killed\\)"):
        session.execute(f"!kill {running['groupId']};")
    [mine] = [r["groupId"] for r in session.execute("!show jobs;")[0].table.to_pylist() if r["state"] == "running"]
    with pytest.raises(MLSQLError, match="is this script itself"):
        session.execute(f"!kill {int(mine) + 1};")


def test_kill_stops_a_python_cell_on_the_driver(session: Session):
    """Python code stops at once (as with Ctrl-C); this cell uses no Ray, so none starts."""
    import time

    worker, outcome = execute_in_a_thread(session, "--%python\nimport time\nwhile True:\n    time.sleep(0.02)\n")
    while not session.jobs.running():
        time.sleep(0.02)
    job = session.jobs.running()[0]
    session.execute(f"!kill {job.id};")
    worker.join(60)
    assert not worker.is_alive() and outcome["error"].message == f"job {job.id} was killed (!kill {job.id})"
    assert session.execute("select 1 as a as after;")[0].table.to_pylist() == [{"a": 1}]


def test_delta_help_and_compact(session: Session):
    [help_] = session.execute("!delta help;")
    assert any("compact" in line for line in help_.table.column("usage").to_pylist())
    for i in range(3):
        session.execute(f"select {i} as a as t; save append t as delta.`demo.table1`;")
    [compacted] = session.execute("!delta compact demo.table1 100 1 background;")
    row = compacted.table.to_pylist()[0]
    assert (row["numFilesAdded"], row["numFilesRemoved"], row["version"]) == (1, 3, 3)
    assert sorted(session.execute("load delta.`demo.table1` as d; select a from d as o;")[-1].table.column("a").to_pylist()) == [0, 1, 2]


def test_unknown_command_goes_through_the_single_fallback(session: Session):
    assert commands.unknown_command.__doc__  # the one hook other meanings (macros) extend
    with pytest.raises(MLSQLError, match="unknown command !frobnicate: known are .*!lastCommand"):
        session.execute("!frobnicate;")


def test_command_names_match_whatever_the_case(session: Session):
    session.execute("select 1 as a as t; !LASTTABLENAME;")
    assert session.variables["__last_table_name__"] == "t"


# -- !hdfs / !fs ------------------------------------------------------------------------------------

def test_fs_ls_lists_like_hadoop_and_as_json_rows(fs_session: Session, files: Path):
    text = one_text(fs_session, f"!hdfs -ls {files};")
    lines = text.splitlines()
    assert lines[0] == "Found 2 items"
    assert [line.split()[-1] for line in lines[1:]] == [str(files / "a.csv"), str(files / "b.csv")]
    assert [line.split()[4] for line in lines[1:]] == ["12", "16"]
    assert lines[1].startswith("-rw")
    [rows] = fs_session.execute(f"!fs -ls -F {files};")
    assert rows.table.column_names == ["permission", "replication", "owner", "group", "length",
                                       "modification_time", "path", "name"]
    assert rows.table.select(["name", "length"]).to_pylist() == [{"name": "a.csv", "length": "12"},
                                                                {"name": "b.csv", "length": "16"}]


def test_fs_mkdir_cp_mv_count_cat_rm(fs_session: Session, files: Path):
    fs_session.execute(f"""!fs -mkdir -p {files}/sub/deep;
!fs -cp {files}/a.csv {files}/sub;
!fs -mv {files}/b.csv {files}/sub/deep/c.csv;""")
    assert sorted(str(p.relative_to(files)) for p in files.rglob("*")) == [
        "a.csv", "sub", "sub/a.csv", "sub/deep", "sub/deep/c.csv"]
    # Hadoop's -count: folders (itself included), files, bytes, path
    assert one_text(fs_session, f"!hdfs -count {files}/sub;").split() == ["2", "2", "28", str(files / "sub")]
    assert one_text(fs_session, f"!fs -cat {files}/sub/deep/c.csv;") == "id,name\n2,y\n3,z\n"
    assert one_text(fs_session, f"!fs -rmr {files}/sub;") == f"Deleted {files / 'sub'}\n"
    assert not (files / "sub").exists()
    with pytest.raises(MLSQLError, match="Is a directory"):
        fs_session.execute(f"!fs -mkdir {files}/d; !fs -rm {files}/d;")
    with pytest.raises(MLSQLError, match="No such file or directory"):
        fs_session.execute(f"!fs -cat {files}/nothere.csv;")
    with pytest.raises(MLSQLError, match="will not delete .*: it is one of the folders file commands may touch"):
        fs_session.execute(f'set dir=""; !fs -rmr {files}/${{dir}};')
    assert (files / "a.csv").exists()


def test_fs_put_get_and_getmerge(fs_session: Session, files: Path):
    fs_session.execute(f"!fs -put {files}/a.csv {files}/put.csv; !fs -get {files}/put.csv {files}/got.csv;")
    assert (files / "got.csv").read_text() == "id,name\n1,x\n"
    fs_session.execute(f"!fs -getmerge {files}/a.csv {files}/b.csv {files}/merged.csv;")
    assert (files / "merged.csv").read_text() == "id,name\n1,x\nid,name\n2,y\n3,z\n"


def test_fs_utils_getmerge_skips_repeated_headers(fs_session: Session, files: Path):
    """commands.md: `!fs utils getmerge "/tmp/*.csv" "/tmp/a.csv" 1;` and the named form."""
    [result] = fs_session.execute(f'!hdfs utils getmerge "{files}/*.csv" "{files}/all/merged.csv" 1;')
    assert result.table.column_names == ["message"]
    assert (files / "all" / "merged.csv").read_text() == "id,name\n1,x\n2,y\n3,z\n"
    fs_session.execute(f'!fs utils utils getmerge _ -source "{files}/*.csv" -target "{files}/m2.csv" -skipNLines 1;')
    assert (files / "m2.csv").read_text() == "id,name\n1,x\n2,y\n3,z\n"


def test_fs_utils_rename_moves_and_renames_by_pattern(fs_session: Session, files: Path):
    """commands.md: `!hdfs utils rename "/tmp/*.csv" "/tmp/sub" "(\\\\.csv)$" ".txt";`"""
    (files / "keep.dat").write_text("k")
    fs_session.execute(f'!hdfs utils rename "{files}/*.csv"   "{files}/sub"  "(\\\\.csv)$"  ".txt";')
    assert sorted(p.name for p in (files / "sub").iterdir()) == ["a.txt", "b.txt"]
    fs_session.execute(f'!fs utils rename _ -source "{files}/sub/a*" -target "{files}/sub2" '
                       f'-pattern "^(a)" -replace "renamed_$1";')
    assert [p.name for p in (files / "sub2").iterdir()] == ["renamed_a.txt"]
    assert (files / "keep.dat").exists()


def test_fs_paths_outside_the_allowed_folders_are_refused(fs_session: Session, files: Path, tmp_path: Path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("s")
    for command in (f"!fs -cat {outside}/secret.txt;", f"!fs -rmr {outside};", f"!fs -ls {outside};",
                    f"!fs -cp {files}/a.csv {outside}/a.csv;", f"!fs -mkdir {files}/../outside/new;",
                    f"!saveFile _ -i t -o {outside}/x.bin;"):
        with pytest.raises(MLSQLError, match="is outside the folders file commands may touch"):
            fs_session.execute("select unhex('00') as b as t;\n" + command)
    assert (outside / "secret.txt").exists() and not (outside / "a.csv").exists() and not (outside / "new").exists()
    # a symlink inside an allowed folder does not lead out of it
    (files / "link").symlink_to(outside)
    with pytest.raises(MLSQLError, match="is outside the folders"):
        fs_session.execute(f"!fs -cat {files}/link/secret.txt;")


def test_fs_working_directory_and_warehouse_are_allowed_without_options(session: Session, tmp_path: Path,
                                                                        monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "here.txt").write_text("here")
    assert one_text(session, "!fs -cat here.txt;") == "here"
    session.execute("select 1 as a as t; save overwrite t as delta.`db.t`;")
    assert "_delta_log" in one_text(session, f"!fs -ls {session.warehouse}/db/t;")


def test_fs_help_and_unknown_subcommand(fs_session: Session):
    assert "-ls [-d] [-h] [-R] [-F]" in one_text(fs_session, "!fs -help;")
    with pytest.raises(MLSQLError, match="!fs: expected one of -ls"):
        fs_session.execute("!fs -frob x;")


def test_cli_allow_path_option(run_cli, tmp_path: Path, files: Path):
    script = tmp_path / "work" / "s.mlsql"
    script.parent.mkdir()
    script.write_text(f"!fs -cat {files}/a.csv;\n")
    refused = run_cli("run", str(script), "--warehouse", str(tmp_path / "wh"), cwd=script.parent)
    assert refused.returncode != 0 and "is outside the folders file commands may touch" in refused.stderr
    allowed = run_cli("run", str(script), "--warehouse", str(tmp_path / "wh"), "--allow-path", str(files),
                      cwd=script.parent)
    assert allowed.returncode == 0, allowed.stderr
    assert "1,x" in allowed.stdout


def test_kill_lands_even_when_the_first_one_is_lost_in_a_gc_callback(session: Session, tmp_path):
    """An exception raised into a thread inside a garbage-collector callback is printed as
    "ignored" and dropped by Python; the killed cell must stop all the same (it ran on, in CI)."""
    import time

    marker, sent = tmp_path / "in-callback", tmp_path / "kill-sent"
    code = f"""--%python
import gc, pathlib, time

def slow_once(phase, info):
    if phase == "start" and not pathlib.Path({str(marker)!r}).exists():
        pathlib.Path({str(marker)!r}).touch()
        deadline = time.monotonic() + 120
        while not pathlib.Path({str(sent)!r}).exists() and time.monotonic() < deadline:
            time.sleep(0.01)  # the kill arrives here: !kill raised it before {sent.name} was written

gc.callbacks.append(slow_once)
try:
    gc.collect()
    while True:
        time.sleep(0.02)
finally:
    gc.callbacks.remove(slow_once)
"""
    worker, outcome = execute_in_a_thread(session, code)
    while not marker.exists():
        assert worker.is_alive(), outcome
        time.sleep(0.02)
    job = session.jobs.running()[0]
    session.execute(f"!kill {job.id};")
    sent.touch()
    worker.join(60)
    assert not worker.is_alive() and outcome["error"].message == f"job {job.id} was killed (!kill {job.id})"

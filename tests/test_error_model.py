"""The error model (issue 12, items 1, 4 and 5), through every front end that shows it.

- Nothing runs until the whole script has parsed, its SQL included: a SQL syntax error is a
  ``FILE:LINE:COL`` error before any statement runs (``parse()``, ``Session``, the CLI, the kernel).
- A result with two columns of the same name shows both, in the CLI's text and the kernel's HTML.
- The user's mistakes are ``MLSQLError``s with a position; our bugs are ``InternalError``s with
  the statement's position and the original exception (and its traceback) as their cause.
"""

from __future__ import annotations

import re
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from mlsql_ray import InternalError, MLSQLError, MLSQLSyntaxError, parse
from mlsql_ray.frontend.display import render_html, render_text
from mlsql_ray.engine import commands

from kernel_helpers import Kernel, checkout_kernelspec

# the scenario: a save that writes, then a SQL typo on line 3
SCRIPT = "load parquet.`{data}` as t;\nsave overwrite t as delta.`x.t`;\nselect * frm t as u;\n"
TYPO_COLUMN = SCRIPT.split("\n")[2].index(" t as u") + 2  # sqlglot stops at the `t` after `frm`


@pytest.fixture
def data(tmp_path: Path) -> Path:
    path = tmp_path / "people.parquet"
    pq.write_table(pa.table({"id": [1, 2, 3], "name": ["ann", "bob", "cy"]}), path)
    return path


# -- 1. SQL is parsed with the script -----------------------------------------------------------------

def test_parse_reports_a_sql_syntax_error_with_its_position(data):
    script = SCRIPT.format(data=data)
    with pytest.raises(MLSQLSyntaxError) as info:
        parse(script)
    assert (info.value.line, info.value.column) == (3, TYPO_COLUMN)
    assert "SQL syntax error" in info.value.message
    assert info.value.source_line == "select * frm t as u;"  # the caret line is the script's line


def test_parse_checks_the_sql_of_set_type_sql_where_it_is_written():
    script = 'set a = "1";\nset n = \'\'\'select count(*) frm t x\'\'\' where type="sql";'
    with pytest.raises(MLSQLSyntaxError) as info:
        parse(script)
    line = script.split("\n")[1]
    assert info.value.line == 2
    assert line.index("frm") < info.value.column <= len(line)  # inside the quoted SQL, not at `set`


def test_session_runs_nothing_when_a_later_select_is_bad(session, data, warehouse):
    with pytest.raises(MLSQLSyntaxError) as info:
        session.execute(SCRIPT.format(data=data))
    assert (info.value.line, info.value.column) == (3, TYPO_COLUMN)
    assert "t" not in session.catalog  # not even the load ran
    assert not (warehouse / "x" / "t").exists()


def test_cli_writes_nothing_and_points_at_the_typo(run_cli, tmp_path, data):
    script = tmp_path / "job.mlsql"
    script.write_text(SCRIPT.format(data=data))
    warehouse = tmp_path / "warehouse"
    done = run_cli("run", str(script), "--warehouse", str(warehouse))
    assert done.returncode == 1
    assert done.stderr.startswith(f"{script}:3:{TYPO_COLUMN}: SQL syntax error"), done.stderr
    assert done.stdout == ""  # no statement reported a result
    assert not (warehouse / "x" / "t").exists()


def test_sql_with_variables_is_checked_when_it_runs(session, data, warehouse):
    """``${}`` may stand for any fragment of SQL, so such a select is checked after substitution,
    when it runs: the statements before it have run, and the error still has its position."""
    script = (f"load parquet.`{data}` as t;\nset op = \"frm\";\nselect * from t as ok;\n"
              "select * ${op} t as u;")
    with pytest.raises(MLSQLError) as info:
        session.execute(script)
    assert (info.value.line, "SQL syntax error" in info.value.message) == (4, True)
    assert "ok" in session.catalog and "u" not in session.catalog


# -- 4. duplicate column names ------------------------------------------------------------------------

DUPLICATES = pa.Table.from_arrays([pa.array([1, 3]), pa.array(["x", "y"])], names=["a", "a"])


def test_text_table_shows_both_columns_of_one_name():
    lines = render_text(DUPLICATES).split("\n")
    assert lines[0].split() == ["a", "a"] and lines[1].split() == ["int64", "string"]
    assert [line.split() for line in lines[3:5]] == [["1", "x"], ["3", "y"]]


def test_html_table_has_both_columns_and_aligned_values():
    page = render_html(DUPLICATES)
    header = re.findall(r"<th\b[^>]*>(.*?)<br>", page)
    rows = [re.findall(r"<td[^>]*>(.*?)</td>", row) for row in re.findall(r"<tr>(.*?)</tr>", page)[1:]]
    assert header == ["a", "a"]
    assert rows == [["1", "x"], ["3", "y"]]


def test_cli_prints_both_columns_like_spark(run_cli, tmp_path):
    script = tmp_path / "dup.mlsql"
    script.write_text("select 1 as a, 2 as a as t;\n")
    done = run_cli("run", str(script), "--warehouse", str(tmp_path / "warehouse"))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.split("\n")
    assert lines[0].split() == ["a", "a"]
    assert lines[3].split() == ["1", "2"]


# -- 5. the user's mistakes and our bugs ---------------------------------------------------------------

def test_json_schema_field_without_name_is_a_positioned_error(session):
    schema = '{"type": "struct", "fields": [{"type": "long", "nullable": true}]}'
    cell = f"select 1 as a as before;\n-- %%\n--%python\n--%schema={schema}\nx = 1\n"
    with pytest.raises(MLSQLError) as info:
        session.execute(cell)
    assert not isinstance(info.value, InternalError)
    assert 'has no "name"' in info.value.message and "--%schema" in info.value.message
    assert info.value.line == 3  # the cell's first annotation line


def test_a_file_system_refusal_is_the_users_error(session, data, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    with pytest.raises(MLSQLError) as info:
        session.execute(f"load parquet.`{data}` as t;\nsave overwrite t as csv.`{blocker}/sub/out`;")
    assert info.value.line == 2 and "cannot save as csv" in info.value.message


@pytest.fixture
def broken_command():
    """A ``!`` command with a bug in it, registered as commands are (COMMANDS is the registry)."""
    commands.COMMANDS["broken"] = lambda session, s: len(None)
    yield "broken"
    del commands.COMMANDS["broken"]


def test_a_bug_is_an_internal_error_with_the_statement_and_its_cause(session, broken_command):
    with pytest.raises(InternalError) as info:
        session.execute("select 1 as a as t;\n  !broken now;")
    error = info.value
    assert not isinstance(error, MLSQLError)  # never dressed up as the user's mistake
    assert (error.line, error.column) == (2, 3)
    assert isinstance(error.__cause__, TypeError) and error.__cause__.__traceback__ is not None
    assert "a bug in mlsql-ray" in str(error) and "TypeError" in str(error)


def test_a_bug_in_an_included_script_keeps_the_included_position(session, broken_command, tmp_path):
    (tmp_path / "inner.mlsql").write_text("select 1 as a as t;\n\n!broken;\n")
    outer = tmp_path / "outer.mlsql"
    outer.write_text("include local.`inner.mlsql`;\n")
    with pytest.raises(InternalError) as info:
        session.execute(outer.read_text(), source=outer)
    assert (info.value.source, info.value.line) == (str((tmp_path / "inner.mlsql").resolve()), 3)


# A script's own Python cell (runIn=driver: the session's process) registers a ! command with a bug
# in it, through the registry every command is in: no patching of mlsql-ray's own functions.
REGISTER_BROKEN = ("--%python\nfrom mlsql_ray.engine import commands\n"
                   "commands.COMMANDS['broken'] = lambda session, s: len(None)\n")


@pytest.mark.parametrize("verbose", [False, True])
def test_cli_shows_a_bug_as_a_bug(run_cli, tmp_path, verbose):
    script = tmp_path / "job.mlsql"
    script.write_text(f"{REGISTER_BROKEN}-- %%\nselect 1 as a as t;\n!broken;\n")
    done = run_cli("run", str(script), "--warehouse", str(tmp_path / "warehouse"), *(["--verbose"] if verbose else []))
    assert done.returncode == 3
    first = done.stderr.split("\n")[0]
    assert first.startswith(f"{script}:6:1: internal error (a bug in mlsql-ray): TypeError"), done.stderr
    if verbose:
        assert "Traceback (most recent call last)" in done.stderr
        assert "TypeError: object of type 'NoneType' has no len()" in done.stderr  # the cause, with its own traceback
        assert "direct cause of the following exception" in done.stderr
    else:
        assert "Traceback" not in done.stderr
        lines = done.stderr.rstrip("\n").split("\n")
        assert lines[1:3] == ["    !broken;", "    ^"]  # the statement that hit the bug
        assert "bug in mlsql-ray" in lines[-1] and "--verbose" in lines[-1]


def test_cli_user_error_is_not_reported_as_a_bug(run_cli, tmp_path):
    script = tmp_path / "job.mlsql"
    script.write_text("select * from nowhere as t;\n")
    done = run_cli("run", str(script), "--warehouse", str(tmp_path / "warehouse"))
    assert done.returncode == 1 and "nowhere" in done.stderr and "bug" not in done.stderr


# -- the kernel: one cell is parsed whole; duplicate columns in its HTML ----------------------------------

@pytest.fixture(scope="module")
def kernel(tmp_path_factory):
    with checkout_kernelspec(tmp_path_factory.mktemp("jupyter")):
        work = tmp_path_factory.mktemp("kernel-cwd")
        k = Kernel(cwd=work, warehouse=work / "warehouse")
        try:
            yield k, work / "warehouse"
        finally:
            k.close()


def test_kernel_cell_with_a_sql_typo_runs_nothing(kernel):
    k, warehouse = kernel
    reply, messages = k.execute("select 1 as id as t;\nsave overwrite t as delta.`kx.t`;\nselect * frm t as u;")
    assert reply["status"] == "error" and reply["ename"] == "MLSQLSyntaxError"
    assert reply["evalue"].startswith("line 3, column 14: SQL syntax error")
    assert not any(m["msg_type"] in ("display_data", "stream") for m in messages)  # nothing ran
    assert not (warehouse / "kx" / "t").exists()


def test_kernel_html_shows_both_columns_aligned(kernel):
    k, _ = kernel
    reply, messages = k.execute("select 1 as a, 'two' as a, 3.5 as b as t;")
    assert reply["status"] == "ok"
    (data,) = [m["content"]["data"] for m in messages if m["msg_type"] == "display_data"]
    page = data["text/html"]
    header = re.findall(r"<th\b[^>]*>(.*?)<br>", page)
    cells = re.findall(r"<td[^>]*>(.*?)</td>", page)
    assert header == ["a", "a", "b"] and cells == ["1", "two", "3.5"]
    assert data["text/plain"].split("\n")[0].split() == ["a", "a", "b"]


def test_kernel_replies_to_a_bug_with_its_traceback(kernel):
    k, _ = kernel
    k.ok(REGISTER_BROKEN)
    try:
        reply, _ = k.execute("select 1 as a as t;\n!broken;")
    finally:
        k.ok("--%python\nfrom mlsql_ray.engine import commands\ncommands.COMMANDS.pop('broken')\n")
    assert reply["status"] == "error" and reply["ename"] == "InternalError"
    assert reply["evalue"].startswith("internal error (a bug in mlsql-ray): TypeError")
    traceback = "\n".join(reply["traceback"])
    assert "Traceback (most recent call last)" in traceback and "direct cause of the following exception" in traceback
    assert "object of type 'NoneType' has no len()" in traceback

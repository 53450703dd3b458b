"""The Jupyter tools users run notebooks with: papermill (parameters), the %%mlsql magic in the
Python kernel, nbconvert/jupyter execute, and jupyter console. Real kernels, real processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pyarrow.parquet as pq
import pytest
from conftest import ROOT, SAMPLE_MNIST
from kernel_helpers import Kernel, checkout_kernelspec, notebooks

from mlsql_ray import lang
from mlsql_ray.lang import ast

QUICKSTART = ROOT / "notebooks" / "quickstart.ipynb"


@pytest.fixture(scope="module", autouse=True)
def kernelspec(tmp_path_factory):
    with checkout_kernelspec(tmp_path_factory.mktemp("jupyter")) as spec:
        yield spec


@pytest.fixture(scope="module")
def small_data(tmp_path_factory) -> Path:
    """A data folder like sample_data/mnist with only 12 images of digits 0 and 1."""
    folder = tmp_path_factory.mktemp("small-mnist")
    table = pq.read_table(SAMPLE_MNIST / "train.parquet")
    labels = table.column("label").to_pylist()
    rows = [i for i, label in enumerate(labels) if label in (0, 1)][:12]
    pq.write_table(table.take(rows), folder / "train.parquet")
    return folder


def tool_env(tmp_path: Path) -> dict:
    return {**os.environ, "MLSQL_WAREHOUSE": str(tmp_path / "warehouse")}


def select_text(notebook) -> str:
    """The text of the quickstart's select (the cell after the load)."""
    cell = next(c for c in notebook.cells if c.cell_type == "code" and c.source.startswith("select label"))
    return next(o["data"]["text/plain"] for o in cell.outputs if "data" in o)


# -- papermill -----------------------------------------------------------------------------------------

TRICKY = ["it's", 'say "hi"', "a;b", "${data}", "back\\slash", "two\nlines", "''' and \"\"\"", "`tick`", ""]


def test_papermill_finds_the_translator_through_its_engine_entry_point():
    from papermill.engines import NBClientEngine, papermill_engines
    from papermill.translators import papermill_translators

    assert papermill_engines.get_engine("mlsql") is NBClientEngine, \
        "no papermill.engine entry point 'mlsql': reinstall the package (pip install -e .)"
    assert papermill_translators.find_translator("mlsql", "mlsql").__module__ == "mlsql_ray.kernel.parameters"


@pytest.mark.parametrize("value", TRICKY + [3, 2.5, True, None, [1, "a'b"], {"k": "v;"}])
def test_a_parameter_round_trips_through_the_parser(value):
    from mlsql_ray.kernel.parameters import set_statement

    [statement] = lang.parse(set_statement("p", value))
    assert isinstance(statement, ast.Set) and statement.key == "p" and statement.scope == "session"
    assert statement.value == (value if isinstance(value, str) else json.dumps(value))


@pytest.mark.slow
def test_papermill_injects_set_statements_after_the_parameters_cell(small_data, tmp_path, run_cli, monkeypatch):
    import papermill

    monkeypatch.setenv("MLSQL_WAREHOUSE", str(tmp_path / "warehouse"))
    out = tmp_path / "out.ipynb"
    papermill.execute_notebook(str(QUICKSTART), str(out), parameters={"data": str(small_data)}, cwd=str(tmp_path),
                               progress_bar=False)
    notebook = nbformat.read(out, as_version=4)
    tags = [c.metadata.get("tags", []) for c in notebook.cells]
    injected = tags.index(["injected-parameters"])
    assert "parameters" in tags[injected - 1]
    assert notebook.cells[injected].source == f'-- Parameters\nset data = "{small_data}" where scope="session";\n'
    shown = select_text(notebook)
    assert "(2 rows)" in shown  # digits 0 and 1 only: the parameter changed the data loaded

    # the CLI's --set gives the same result (the parameters cell is a defaultParam)
    done = run_cli("run", str(QUICKSTART), "--set", f"data={small_data}", "--warehouse", str(tmp_path / "wh2"),
                   cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert shown in done.stdout


@pytest.mark.slow
def test_papermill_cli_with_awkward_values(small_data, tmp_path):
    out = tmp_path / "out.ipynb"
    note = "it's \"quoted\"; ${data} stays"
    done = subprocess.run([sys.executable, "-m", "papermill", str(QUICKSTART), str(out), "-p", "data", str(small_data),
                           "-p", "note", note, "-p", "rounds", "3", "--cwd", str(tmp_path)],
                          env=tool_env(tmp_path), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    notebook = nbformat.read(out, as_version=4)
    cell = next(c for c in notebook.cells if "injected-parameters" in c.metadata.get("tags", []))
    values = {s.key: s.value for s in lang.parse(cell.source)}
    assert values == {"data": str(small_data), "note": note, "rounds": "3"}
    assert "(2 rows)" in select_text(notebook)


# -- nbconvert, jupyter execute, jupyter console ---------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("path", notebooks(ROOT))
def test_nbconvert_executes_every_notebook(path, executed_notebook):
    """(The run is shared with tests/test_kernel.py's notebook test: conftest's ``executed_notebook``.)"""
    done, notebook = executed_notebook(path)
    assert done.returncode == 0, done.stderr  # nbconvert fails on a cell's error
    assert not [o for c in notebook.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    if path == QUICKSTART:
        assert "mean_pixel" in select_text(notebook) and "(10 rows)" in select_text(notebook)


@pytest.mark.slow
def test_jupyter_execute_runs_the_quickstart(tmp_path):
    copy = tmp_path / "quickstart.ipynb"
    notebook = nbformat.read(QUICKSTART, as_version=4)
    notebook.cells[1].source = f'set data = "{SAMPLE_MNIST}" where type="defaultParam" and scope="session";'  # the copy is elsewhere
    nbformat.write(notebook, copy)
    done = subprocess.run([sys.executable, "-m", "jupyter", "execute", "--inplace", str(copy)], cwd=tmp_path,
                          env=tool_env(tmp_path), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert "(10 rows)" in select_text(nbformat.read(copy, as_version=4))
    assert (tmp_path / "warehouse" / "demo" / "digit_stats" / "_delta_log").is_dir()


@pytest.mark.slow
def test_jupyter_console_shows_tables_as_text(tmp_path):
    import pexpect

    console = pexpect.spawn(sys.executable, ["-m", "jupyter", "console", "--kernel", "mlsql", "--simple-prompt"],
                            cwd=str(tmp_path), env=tool_env(tmp_path), encoding="utf-8", timeout=120)
    try:
        console.expect(r"In \[1\]: ")
        console.sendline("select 41 + 1 as answer as t;")
        console.expect(r"In \[2\]: ")
        shown = console.before
        assert "answer" in shown and "42" in shown and "(1 row)" in shown
        assert "<table" not in shown  # the text rendering, not the HTML
        console.sendline("select nope from t as u;")
        console.expect(r"In \[3\]: ")
        assert "line 1, column 1" in console.before and "nope" in console.before
        console.sendeof()  # Ctrl-D leaves the console (and shuts the kernel down)
        console.expect(r"exit \(\[y\]/n\)\? ")
        console.sendline("y")
        console.expect(pexpect.EOF)
    finally:
        console.close(force=True)


# -- the %%mlsql magic in a Python kernel ----------------------------------------------------------------------

@pytest.fixture(scope="module")
def python_kernel(tmp_path_factory):
    work = tmp_path_factory.mktemp("magic-cwd")
    kernel = Kernel(cwd=work, warehouse=work / "warehouse", timeout=60, kernel_name="python3")
    try:
        reply, _ = kernel.execute("%load_ext mlsql_ray")
        assert reply["status"] == "ok", reply
        yield kernel
    finally:
        kernel.close()


def displayed(messages: list[dict]) -> list[dict]:
    return [m["content"]["data"] for m in messages if m["msg_type"] in ("display_data", "update_display_data")]


def test_magic_shows_html_tables_and_keeps_the_last_result(python_kernel):
    reply, messages = python_kernel.execute("%%mlsql -o t\nselect 1 as a, 'x' as b as first;\n"
                                            "select 2 as a as second;")
    assert reply["status"] == "ok", reply
    tables = displayed(messages)
    assert len(tables) == 2 and all("<table" in t["text/html"] for t in tables)
    assert "x" in tables[0]["text/plain"]
    out = python_kernel.ok("print(type(t).__module__, type(t).__name__, t.to_pylist())")
    assert out.strip() == "pyarrow.lib Table [{'a': 2}]"


def test_magic_line_form_pandas_and_vars(python_kernel):
    python_kernel.ok("limit = 3\nlabel = 'ann'")
    reply, _ = python_kernel.execute("%mlsql --vars --pandas -o df select id, '${label}' as label from range(${limit}) as r;")
    assert reply["status"] == "ok", reply
    assert python_kernel.ok("print(type(df).__name__, list(df['id']), df['label'][0])").strip() == \
        "DataFrame [0, 1, 2] ann"
    for line in ("%mlsql select '${label}' as label as nope;", "%mlsql select '$label {label}' as label as nope;"):
        reply, messages = python_kernel.execute(line)  # no --vars: neither MLSQL nor IPython reads Python's,
        # and the earlier --vars lent its variables to that run only
        assert "ann" not in json.dumps(displayed(messages)) + json.dumps(reply)


def test_magic_errors_point_into_the_cell(python_kernel):
    reply, messages = python_kernel.execute("%%mlsql\nselect 1 as a as ok_table;\nselect nope from ok_table as broken;")
    assert reply["status"] == "error" and reply["ename"] == "MLSQLError"
    error = next(m["content"] for m in messages if m["msg_type"] == "error")
    assert error["traceback"][0].startswith("MLSQLError: line 2, column 1: ")
    assert error["traceback"][-2:] == ["    select nope from ok_table as broken;", "    ^"]
    reply, messages = python_kernel.execute("%%mlsql\nselect 1 as a as t;\nselect * frm t as u;")
    error = next(m["content"] for m in messages if m["msg_type"] == "error")
    assert reply["ename"] == "MLSQLSyntaxError" and error["traceback"][0].startswith("MLSQLSyntaxError: line 2, column 14: ")


def test_interrupt_stops_the_running_statement(python_kernel):
    code = ("%%mlsql\nselect 'started' as state as before;\n"
            "select count(*) as n from range(100000) a, range(100000) b, range(10000) c as huge;")
    msg_id = python_kernel.kc.execute(code)
    deadline = time.monotonic() + 60
    while True:  # interrupt once the first statement has shown its table: the huge one is running
        msg = python_kernel.kc.get_iopub_msg(timeout=max(1, deadline - time.monotonic()))
        if msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] == "display_data":
            break
    python_kernel.km.interrupt_kernel()
    reply = python_kernel.reply(msg_id, timeout=30)["content"]
    assert reply["status"] == "error" and reply["ename"] == "KeyboardInterrupt"
    python_kernel.iopub(msg_id)
    reply, messages = python_kernel.execute("%mlsql select 'still here' as state as after;")
    assert reply["status"] == "ok" and "still here" in displayed(messages)[0]["text/plain"]


def test_magic_updates_one_progress_display_in_place(python_kernel):
    """The events training reports (mlsql_ray.progress), sent from a driver-side Python cell."""
    code = ("%%mlsql\n--%python\nfrom mlsql_ray import progress\n"
            "progress.report('train_start', total_rounds=2, workers=1)\n"
            "progress.report('train_round', round=1, total_rounds=2, loss=0.5, accuracy=0.8, elapsed=0.1)\n"
            "progress.report('train_end', history=[{'round': 1, 'loss': 0.5, 'accuracy': 0.8}], elapsed=0.2)\n")
    reply, messages = python_kernel.execute(code)
    assert reply["status"] == "ok", reply
    shown = [m for m in messages if m["msg_type"] in ("display_data", "update_display_data")]
    assert [m["msg_type"] for m in shown] == ["display_data", "update_display_data", "update_display_data"]
    assert len({m["content"]["transient"]["display_id"] for m in shown}) == 1
    assert "round 1/2" in shown[1]["content"]["data"]["text/plain"]
    assert "image/png" in shown[-1]["content"]["data"]


def test_magic_warehouse_from_config(python_kernel, tmp_path):
    """``%config MLSQLMagic.warehouse`` chooses where the next session saves (a new session)."""
    warehouse = tmp_path / "configured"
    python_kernel.ok(f"%config MLSQLMagic.warehouse = {str(warehouse)!r}")
    reply, _ = python_kernel.execute("%%mlsql\nselect 1 as a as t;\nsave overwrite t as delta.`demo.configured`;")
    assert reply["status"] == "ok", reply
    assert (warehouse / "demo" / "configured" / "_delta_log").is_dir()


def test_magic_sql_engine_from_config(python_kernel):
    """``%config MLSQLMagic.sql_engine`` and ``--sql-engine`` switch the running session's engine,
    as ``set sql_engine=... where type="conf"`` does; an unknown name is the one error listing them, and changes nothing."""
    python_kernel.ok("%mlsql select 1 as a as before_switch;")
    engine = "print(get_ipython().magics_manager.registry['MLSQLMagic']._session.sql_engine)"
    python_kernel.ok('%config MLSQLMagic.sql_engine = "Daft"')
    assert python_kernel.ok(engine).strip() == "daft"
    _, messages = python_kernel.execute('%config MLSQLMagic.sql_engine = "spark"')  # %config prints errors
    assert "unknown SQL engine 'spark': expected one of duckdb, daft" in json.dumps([m["content"] for m in messages])
    assert python_kernel.ok(engine).strip() == "daft"
    python_kernel.ok("%mlsql --sql-engine duckdb select 2 as a as after_switch;")
    assert python_kernel.ok(engine).strip() == "duckdb"

"""The front-end driver the CLI, the kernel and the %%mlsql magic share (mlsql_ray.frontend.driver):
a request of several cells is parsed whole before any of it runs, and an interrupt says which line
was running, one that came while a load's first rows were computed for the screen too; and Ctrl-C
after ``mlsql-ray run``'s run, while the interpreter shuts down, is no exit 0. (The shells' own
tests check what each renders: test_kernel.py, test_notebook_tools.py, test_present.py,
test_error_model.py.)"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from mlsql_ray.frontend.driver import Request


def test_an_error_in_the_second_cell_runs_nothing(session, warehouse):
    opened = []

    def open_session():
        opened.append(True)
        return contextlib.nullcontext(session)

    cells = ["select 1 as a as first;\nsave overwrite first as delta.`demo.first`;",
             "select 2 as b as second;\nselect * frm second as third;"]
    shown = []
    outcome = Request(cells, "nb.ipynb").run(open_session, show=shown.append)
    assert not outcome.ok and outcome.interruption is None
    assert outcome.cell == 2 and outcome.error.name == "MLSQLSyntaxError"
    assert outcome.error.line == 2 and outcome.error.excerpt[0] == "select * frm second as third;"  # the cell's line
    assert opened == [] and shown == []  # the session was not even opened
    assert not (warehouse / "demo").exists()


def test_an_interrupt_during_a_query_names_the_running_line(session):
    """Ctrl-C (a real SIGINT to this process) while the cell's second statement runs a DuckDB query."""
    session.con.create_function("ctrl_c", lambda x: os.kill(os.getpid(), signal.SIGINT) or x,
                                ["BIGINT"], "BIGINT", side_effects=True)
    shown = []
    outcome = Request(["select 1 as a as before;\nselect ctrl_c(id) as v from range(1) as r(id) as during;\n"
                       "select 3 as c as after;"]).run(lambda: contextlib.nullcontext(session), previews=True,
                                                       show=shown.append, interruptible=True)
    assert outcome.error is None and outcome.interruption is not None, outcome
    assert outcome.interruption.text() == "interrupted at line 2"
    assert len(shown) == 1 and outcome.last.statement.line == 1  # the first statement ran and was shown
    assert "after" not in session.catalog


class _InterruptedQuery:
    """A relation whose query DuckDB ends as it ends one Ctrl-C stopped."""

    def __init__(self, answer: Exception):
        self.answer = answer

    def limit(self, rows: int) -> "_InterruptedQuery":
        return self

    def to_arrow_table(self):
        raise self.answer


@pytest.mark.parametrize("answer", [
    RuntimeError("Query interrupted"),  # a SIGINT during the query (the CLI: Python's own handler)
    duckdb.InterruptException("INTERRUPT Error: Interrupted!"),  # con.interrupt() (the kernel's watcher)
], ids=["sigint", "interrupt"])
def test_an_interrupt_while_a_loads_first_rows_are_computed_stops_the_run(session, tmp_path, monkeypatch, answer):
    """The first rows a load shows are a query of their own, run while the result is shown. Ctrl-C
    then ends that query with DuckDB's answer to an interrupt (tests/test_sql_trees.py), which the
    preview took for a failed preview: a warning "cannot preview t: Query interrupted", and the run
    went on with the next statements, to exit 0."""
    pq.write_table(pa.table({"id": [1, 2, 3]}), tmp_path / "t.parquet")
    relation = session.catalog.relation
    monkeypatch.setattr(session.catalog, "relation",
                        lambda name: _InterruptedQuery(answer) if name == "t" else relation(name))
    shown = []
    outcome = Request([f"select 0 as z as before;\nload parquet.`{tmp_path / 't.parquet'}` as t;\n"
                       "select 1 as a as after;"]).run(lambda: contextlib.nullcontext(session), show=shown.append)
    assert outcome.error is None and outcome.interruption is not None, outcome
    assert outcome.interruption.text() == "interrupted at line 2"
    assert outcome.interruption.reason == "interrupted at line 2"  # what mlsql-ray run prints
    assert len(shown) == 1 and "after" not in session.catalog


# Ctrl-C once mlsql-ray run's run is over, while the interpreter shuts down: the shutdown waits for
# a thread that is not a daemon (as it waits for a save's writer thread), and the SIGINT comes then.
# SIGINT gets Python's handler first, as in a terminal, whatever this test run's own disposition is.
INTERRUPT_IN_THE_SHUTDOWN = """
import os, signal, sys, threading, time
signal.signal(signal.SIGINT, signal.default_int_handler)
from mlsql_ray.frontend.cli import main

code = main(sys.argv[1:])

def ctrl_c_in_the_shutdown():
    time.sleep(0.5)
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(30)

threading.Thread(target=ctrl_c_in_the_shutdown).start()
sys.exit(code)
"""


def test_ctrl_c_while_the_interpreter_shuts_down_after_a_run_is_not_success(tmp_path):
    """Left to Python, the KeyboardInterrupt in the shutdown's wait was printed as "Exception ignored"
    and the process exited 0, as if nobody had pressed Ctrl-C: the run ends the process at once
    instead, killed by SIGINT as a program without a handler for it is (a shell says 130)."""
    script = tmp_path / "one.mlsql"
    script.write_text("select 1 as a as one;\n")
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", INTERRUPT_IN_THE_SHUTDOWN, "run", str(script),
                           "--warehouse", str(tmp_path / "warehouse")],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == -signal.SIGINT, (done.returncode, done.stdout, done.stderr)
    assert "Exception ignored" not in done.stderr and done.stdout.startswith("a")
    assert time.monotonic() - started < 30  # killed then, not after the thread's 30 s

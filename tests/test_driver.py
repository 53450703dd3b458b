"""The front-end driver the CLI, the kernel and the %%mlsql magic share (mlsql_ray.frontend.driver):
a request of several cells is parsed whole before any of it runs, and an interrupt says which line
was running. (The shells' own tests check what each renders: test_kernel.py, test_notebook_tools.py,
test_present.py, test_error_model.py.)"""

from __future__ import annotations

import contextlib
import os
import signal

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

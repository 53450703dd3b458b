"""DuckDB's progress bar is drawn only for a person at a terminal (issue 27, item 4): a batch run
writing to a file or a pipe, and a notebook, get none."""

from __future__ import annotations

import os
import pty
import subprocess
import sys

SETTING = ("from mlsql_ray import Session; import tempfile\n"
           "with Session(warehouse=tempfile.mkdtemp()) as s:\n"
           "    print(s.con.sql(\"select current_setting('enable_progress_bar')\").fetchall()[0][0])\n")


def run(stdout) -> None:
    subprocess.run([sys.executable, "-c", SETTING], stdout=stdout, check=True, timeout=120)


def test_no_progress_bar_into_a_pipe(tmp_path):
    out = tmp_path / "out.txt"
    with open(out, "w") as file:
        run(file)
    assert out.read_text().strip() == "False"


def test_a_progress_bar_on_a_terminal():
    leader, follower = pty.openpty()
    try:
        run(follower)
        os.close(follower)
        follower = None
        printed = b""
        while True:
            try:
                chunk = os.read(leader, 1024)
            except OSError:  # the terminal closed once everything was read
                break
            if not chunk:
                break
            printed += chunk
    finally:
        os.close(leader)
        if follower is not None:
            os.close(follower)
    assert printed.decode().strip() == "True"

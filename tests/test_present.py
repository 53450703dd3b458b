"""One presentation layer: the CLI shows what the kernel shows (a load's first rows, a caret
under a runtime error), because both render ``mlsql_ray.frontend.present``'s views."""

from __future__ import annotations

import re

from mlsql_ray.errors import MLSQLError
from mlsql_ray.frontend.present import ProgressPresenter, present_error, present_result

CSV = "id,name\n1,ann\n2,bob\n3,cy\n"


def test_cli_previews_a_load_and_puts_a_caret_under_a_runtime_error(run_cli, tmp_path):
    (tmp_path / "people.csv").write_text(CSV)
    script = tmp_path / "job.mlsql"
    script.write_text("load csv.`people.csv` where header=\"true\" as people;\n"
                      "select nope from people as broken;\n")
    done = run_cli("run", str(script), "--warehouse", str(tmp_path / "wh"))
    assert done.returncode == 1
    out = done.stdout.split("\n")
    assert out[0] == "loaded csv.`people.csv` as people"  # the load's heading, then its rows
    assert ["1", "ann"] in [line.split() for line in out] and ["3", "cy"] in [line.split() for line in out]
    error = done.stderr.rstrip("\n").split("\n")
    assert error[0].startswith(f"{script}:2:1: ")
    assert error[-2:] == ["    select nope from people as broken;", "    ^"]


def test_a_load_and_a_select_present_the_same_rows(session, tmp_path):
    (tmp_path / "people.csv").write_text(CSV)
    load, select = session.execute(f"load csv.`{tmp_path}/people.csv` where header=\"true\" as people;\n"
                                   "select * from people as copy;")
    loaded, selected = present_result(load, session.catalog), present_result(select, session.catalog)
    assert loaded.table.heading == load.message and selected.table.heading is None
    assert loaded.table.table.to_pylist() == selected.table.table.to_pylist()
    assert "<table" in loaded.table.bundle()["text/html"] and "ann" in loaded.table.bundle()["text/plain"]


def test_timestamps_and_intervals_are_shown_as_spark_shows_them(session):
    """No offset after a timestamp, no trailing zeros in its fraction; an interval as Spark's
    calendar interval writes itself, not Arrow's ``MonthDayNano(...)``."""
    [result] = session.execute("set spark.sql.session.timeZone = 'America/Los_Angeles';\n"
                               "select timestamp '1996-09-09 10:11:12.4' as t, interval 13.123456789 seconds as i, "
                               "interval '1-2' year to month as m, interval 3 days 4 hours as d as shown;")[-1:]
    text = present_result(result, session.catalog).table.text()
    assert re.split(r"\s{2,}", text.split("\n")[3]) == ["1996-09-09 10:11:12.4", "13.123456 seconds", "1 years 2 months",
                                               "3 days 4 hours"], text


def test_a_runtime_error_points_into_the_cell():
    error = MLSQLError("no column nope", 2, 8)
    view = present_error(error, "select 1 as a as t;\nselect\tnope from t as u;")
    assert view.summary() == "line 2, column 8: no column nope"
    assert view.excerpt == ["select\tnope from t as u;", "      \t^"] and not view.internal


def test_a_bug_is_presented_as_one_with_its_traceback():
    try:
        len(None)
    except TypeError as exc:
        view = present_error(exc, "select 1;")
    assert view.internal and view.hint and "bug in mlsql-ray" in view.message
    assert view.traceback[0] == "Traceback (most recent call last):"


def test_progress_views_of_a_training_run():
    present = ProgressPresenter()
    assert present("train_start", {"total_rounds": 2, "workers": 3}).stage == "start"
    round_view = present("train_round", {"round": 1, "total_rounds": 2, "loss": 0.5, "accuracy": 0.8,
                                         "elapsed": 1.0, "retries": 1})
    assert round_view.text.startswith("training: round 1/2, loss 0.5000") and "3 workers" in round_view.text
    assert "retried 1x" in round_view.text
    end = present("train_end", {"history": [{"round": 1, "loss": 0.5, "accuracy": 0.8}], "elapsed": 2.0})
    assert end.bundle()["image/png"]  # the plot, as a base64 PNG
    assert present("something_else", {}) is None


def test_cli_points_into_the_included_script(run_cli, tmp_path):
    (tmp_path / "inner.mlsql").write_text("select 1 as a as t;\n\n  select nope from t as u;\n")
    outer = tmp_path / "outer.mlsql"
    outer.write_text("select 2 as b as x;\ninclude local.`inner.mlsql`;\n")
    done = run_cli("run", str(outer), "--warehouse", str(tmp_path / "wh"))
    error = done.stderr.rstrip("\n").split("\n")
    assert error[0].startswith(f"{(tmp_path / 'inner.mlsql').resolve()}:3:3: ")
    assert error[1:] == ["      select nope from t as u;", "      ^"]

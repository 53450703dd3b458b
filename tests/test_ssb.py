"""Byzer's 13 Star Schema Benchmark scripts (tests/fixtures/ssb) run as Byzer runs them: three
``!assert`` Byzer's own results, and every script's final table equals what DuckDB computes from
the same parquet files by itself."""

from __future__ import annotations

import sys
from pathlib import Path

import duckdb
import pytest

from mlsql_ray import Session

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
from bench_ssb import SSB, duckdb_views, script  # noqa: E402 - the benchmark's reading of a script, checked here

SCRIPTS = sorted((SSB / "scripts").glob("*.byzer"))


def by_duckdb(text: str) -> tuple[str, list[tuple]]:
    """The script's last table, computed by DuckDB alone from the same files and SQL."""
    views, last = duckdb_views(text)
    con = duckdb.connect()
    for statement in views:
        con.execute(statement)
    return last, con.sql(f"SELECT * FROM {last}").fetchall()


def test_there_are_13_scripts_three_with_byzers_results():
    assert len(SCRIPTS) == 13
    assert sum("!assert" in p.read_text() for p in SCRIPTS) == 3


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: p.stem)
def test_an_ssb_script_gives_byzers_and_duckdbs_answer(path: Path, tmp_path: Path):
    text = script(path)
    table, expected = by_duckdb(text)
    with Session(warehouse=tmp_path) as session:
        session.execute(text, str(path))  # an !assert that fails raises
        got = session.table(table)
    rows = [tuple(r.values()) for r in got.to_pylist()]
    assert got.num_rows > 0
    assert sorted(rows, key=repr) == sorted(expected, key=repr)

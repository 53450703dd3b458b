"""Byzer's 13 Star Schema Benchmark scripts (tests/fixtures/ssb): a whole script through a fresh
``Session`` against DuckDB running the same final query directly over the same files, and the
final select alone in both. Prints the medians of RUNS runs after a warm-up, and checks that both
give the same rows.

    python bench/bench_ssb.py [RUNS] [--sql-engine duckdb|daft]

``--sql-engine daft`` (issue 41's overhead on one machine, informational): the sessions run the
scripts on Daft over a local Ray of this machine's CPUs, started once before the clock (the
sessions find it running), against the same DuckDB figures.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

import duckdb

from mlsql_ray import Session, parse
from mlsql_ray.lang import ast

SSB = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "ssb"


def script(path: Path) -> str:
    return path.read_text().replace("`/ssb/", f"`{SSB / 'data'}/")


def duckdb_views(text: str) -> tuple[list[str], str]:
    """The script as DuckDB statements: views over the files and the selects; and its last select."""
    statements, last = [], None
    for statement in parse(text):
        if isinstance(statement, ast.Load):
            statements.append(f"CREATE VIEW {statement.table} AS SELECT * FROM read_parquet('{statement.path}')")
        elif isinstance(statement, ast.Select):
            statements.append(f"CREATE VIEW {statement.table} AS {statement.sql}")
            last = statement.table
    return statements, last


def timed(work) -> float:
    start = time.perf_counter()
    work()
    return time.perf_counter() - start


def main(runs: int, engine: str) -> None:
    if engine == "daft":
        from mlsql_ray.cluster.link import local_cpus, start_local_ray

        os.environ["DAFT_PROGRESS_BAR"] = "0"  # as a Daft session sets it, before the workers inherit it
        start_local_ray(num_cpus=local_cpus())
    warehouse = tempfile.mkdtemp(prefix="bench-ssb-")
    totals = {"script": 0.0, "duckdb script": 0.0, "final select": 0.0, "duckdb final select": 0.0}
    print(f"{'script':<12} {'mlsql-ray':>10} {'DuckDB':>8} {'ratio':>6}   {'final select':>12} {'DuckDB':>8} {'ratio':>6}")
    for path in sorted((SSB / "scripts").glob("*.byzer")):
        text = script(path)
        views, last = duckdb_views(text)
        statements = parse(text)
        final = next(i for i, s in enumerate(statements) if isinstance(s, ast.Select) and s.table == last)

        def whole_script():
            with Session(warehouse=warehouse, sql_engine=engine) as session:
                session.execute(text, str(path))
                return session.table(last)

        def duckdb_script():
            con = duckdb.connect()
            for statement in views:
                con.execute(statement)
            return con.sql(f"SELECT * FROM {last}").to_arrow_table()

        session = Session(warehouse=warehouse, sql_engine=engine)
        list(session.run(statements[:final], str(path)))
        con = duckdb.connect()
        for statement in views[:-1]:
            con.execute(statement)
        final_sql = views[-1].split(" AS ", 1)[1]

        def final_select():
            list(session.run([statements[final]], str(path)))
            return session.table(last)

        def duckdb_final():
            return con.sql(final_sql).to_arrow_table()

        ours, theirs = whole_script(), duckdb_script()  # warm-up
        check = duckdb.connect()
        for statement in views:
            check.execute(statement)
        expected = check.sql(f"SELECT * FROM {last}").fetchall()
        assert sorted((tuple(r.values()) for r in ours.to_pylist()), key=repr) == sorted(expected, key=repr), path.name
        figures = {name: statistics.median(timed(work) for _ in range(runs)) for name, work in (
            ("script", whole_script), ("duckdb script", duckdb_script),
            ("final select", final_select), ("duckdb final select", duckdb_final))}
        session.close()
        for name in totals:
            totals[name] += figures[name]
        print(f"{path.stem:<12} {figures['script'] * 1000:>8.1f}ms {figures['duckdb script'] * 1000:>6.1f}ms "
              f"{figures['script'] / figures['duckdb script']:>5.1f}x   {figures['final select'] * 1000:>10.1f}ms "
              f"{figures['duckdb final select'] * 1000:>6.1f}ms {figures['final select'] / figures['duckdb final select']:>5.1f}x")
    print(f"{'all 13':<12} {totals['script'] * 1000:>8.1f}ms {totals['duckdb script'] * 1000:>6.1f}ms "
          f"{totals['script'] / totals['duckdb script']:>5.1f}x   {totals['final select'] * 1000:>10.1f}ms "
          f"{totals['duckdb final select'] * 1000:>6.1f}ms {totals['final select'] / totals['duckdb final select']:>5.1f}x")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("runs", nargs="?", type=int, default=5)
    parser.add_argument("--sql-engine", choices=("duckdb", "daft"), default="duckdb")
    arguments = parser.parse_args()
    main(arguments.runs, arguments.sql_engine)

"""Issue 17's benchmark: PostgreSQL ↔ Arrow through ``load jdbc`` / ``save append … as jdbc``.

    .venv/bin/python bench/bench_jdbc.py [--rows N] [--runs R]

Starts its own PostgreSQL server (tests/pg_server.py: Debian's binaries, a temporary data
directory, 127.0.0.1 only), fills a table of N rows × 6 columns, then times (median of R):
(a) ``load jdbc.`pg.bench` as t`` through a Session, (b) the ADBC driver called directly
(``fetch_arrow_table``), (c) psycopg fetching row by row (iterating the cursor) into Python tuples,
(c') psycopg's ``fetchall()`` (the whole result as tuples in one call, in C), (d) ``save append``
of the loaded rows, (e) ADBC's bulk ingest of the same Arrow table.
Targets: (a) ≥ 0.8× (b)'s throughput and ≥ 5× (c)'s; (d) ≥ 0.8× (e)'s.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import pg_server  # noqa: E402


def timed(work, runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()

    import adbc_driver_postgresql.dbapi as adbc
    import psycopg

    from mlsql_ray import Session

    server = pg_server.start()
    try:
        with psycopg.connect(server.uri, autocommit=True) as con:
            con.execute("""CREATE TABLE bench AS SELECT g AS id, (g * 0.5)::float8 AS score, 'name ' || g AS name,
                           now() - g * interval '1 second' AS at, g %% 2 = 0 AS even, (g %% 100)::int AS bucket
                           FROM generate_series(1, %s) g""", (args.rows,))
        rows = args.rows

        def direct_read():
            with adbc.connect(server.uri) as con, con.cursor() as cur:
                cur.execute("SELECT * FROM bench")
                return cur.fetch_arrow_table()

        def all_rows():
            with psycopg.connect(server.uri) as con:
                return con.execute("SELECT * FROM bench").fetchall()

        def row_by_row():
            with psycopg.connect(server.uri) as con:
                return [row for row in con.execute("SELECT * FROM bench")]

        with tempfile.TemporaryDirectory() as tmp, \
                Session(warehouse=tmp, variables={"pw": pg_server.PASSWORD}) as session:
            session.execute(f'connect jdbc where url="{server.jdbc_url}" and user="{pg_server.USER}" '
                            f'and password="${{pw}}" as pg;')
            ours = timed(lambda: session.execute("load jdbc.`pg.bench` as t;"), args.runs)
            direct = timed(direct_read, args.runs)
            slow = timed(row_by_row, 1)
            bulk_tuples = timed(all_rows, 1)
            table = session.table("t")

            def truncate():
                with psycopg.connect(server.uri, autocommit=True) as con:
                    con.execute("DROP TABLE IF EXISTS bench_out")
                    con.execute("CREATE TABLE bench_out (LIKE bench)")

            def our_save():
                truncate()
                start = time.perf_counter()
                session.execute("save append t as jdbc.`pg.bench_out`;")
                return time.perf_counter() - start

            def direct_ingest():
                truncate()
                start = time.perf_counter()
                with adbc.connect(server.uri) as con, con.cursor() as cur:
                    cur.adbc_ingest("bench_out", table, mode="append")
                    con.commit()
                return time.perf_counter() - start

            save_ours = statistics.median(our_save() for _ in range(args.runs))
            save_direct = statistics.median(direct_ingest() for _ in range(args.runs))
    finally:
        server.stop()

    def rate(seconds: float) -> str:
        return f"{seconds:6.2f} s  {rows / seconds:>12,.0f} rows/s"

    print(f"{rows:,} rows × 6 columns, PostgreSQL {server.port} on 127.0.0.1, medians of {args.runs}")
    print(f"(a) load jdbc (ours)          {rate(ours)}")
    print(f"(b) ADBC fetch_arrow_table    {rate(direct)}   (a)/(b) throughput {direct / ours:.2f} (target ≥ 0.8)")
    print(f"(c) psycopg row by row (1x)   {rate(slow)}   (a)/(c) throughput {slow / ours:.1f} (target ≥ 5)")
    print(f"(c') psycopg fetchall (1x)    {rate(bulk_tuples)}   (a)/(c') throughput {bulk_tuples / ours:.1f}")
    print(f"(d) save append (ours)        {rate(save_ours)}")
    print(f"(e) ADBC adbc_ingest          {rate(save_direct)}   (d)/(e) throughput {save_direct / save_ours:.2f} (target ≥ 0.8)")


if __name__ == "__main__":
    main()

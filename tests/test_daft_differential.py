"""Issue 41: a session whose sql_engine is daft gives the DuckDB engine's answers or refuses.

The conformance corpus (``tests/conformance/cases``) runs through both engines: every query Daft
runs gives the DuckDB path's rows (compared as the conformance suite compares them, printed as
Spark prints them), every query it does not run fails with the one refusal pointing to
``--sql-engine duckdb``. The share it runs is printed. To stay within minutes on a busy 2-core
machine, this comparison runs Daft's native (in-process) runner: the translation and Daft's
answers are the same on Ray; ``test_daft_on_ray`` runs a script's loads, selects and saves on the
test run's Ray through the CLI.
"""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from mlsql_ray import MLSQLError, Session
from mlsql_ray.lang import ast, parse
from mlsql_ray.engine.daft.translate import REFUSAL_HINT

from conformance.harness import CASES, read_cases, run

FILES = sorted(CASES.glob("*.txt"))


def _setup(duck: Session, on_daft: Session, statement: str) -> None:
    """A case file's ``@`` statement in both sessions; one Daft refuses gets the DuckDB session's tables."""
    duck.execute(statement)
    try:
        on_daft.execute(statement)
    except MLSQLError as exc:
        assert REFUSAL_HINT in str(exc), f"{statement}: {exc}"
        for parsed in parse(statement):
            if isinstance(parsed, ast.Select):
                on_daft.catalog.add_arrow(parsed.table, duck.table(parsed.table), "select")


def test_conformance_corpus_on_daft_gives_duckdbs_rows_or_refuses(ray_runtime, daft_in_process, tmp_path):
    ran = refused = 0
    differ, unclear = [], []
    for path in FILES:
        with Session(warehouse=tmp_path / path.stem) as duck, \
                Session(warehouse=tmp_path / f"{path.stem}-daft", sql_engine="daft") as on_daft:
            done = 0
            for case in read_cases(path):
                for statement in case.setup[done:]:
                    _setup(duck, on_daft, statement)
                done = len(case.setup)
                try:
                    expected, _ = run(duck, case.sql)
                except MLSQLError:
                    expected = None  # DuckDB's path refuses it (an error case): Daft must not answer either
                try:
                    rows, _ = run(on_daft, case.sql)
                except MLSQLError as exc:
                    refused += 1
                    if REFUSAL_HINT not in str(exc) and expected is not None:
                        unclear.append(f"{path.name}:{case.line}: {exc}")
                    continue
                ran += 1
                if expected is None or (rows if case.ordered else sorted(rows)) != (
                        expected if case.ordered else sorted(expected)):
                    differ.append(f"{path.name}:{case.line}: {case.sql[:80]!r}: Daft {rows[:3]} DuckDB {expected and expected[:3]}")
    total = ran + refused
    print(f"\nDaft runs {ran} of {total} conformance queries ({100 * ran / total:.0f}%); refuses {refused}")
    assert not differ, "\n".join(differ)
    assert not unclear, "\n".join(unclear)
    assert ran > 0


@pytest.mark.slow
def test_daft_on_ray(run_cli, ray_address, tmp_path):
    """A script on Daft over the test run's Ray: a parquet load, a join and an aggregation, a Delta
    save read back by deltalake; a refused select fails the script with the refusal."""
    pq.write_table(pa.table({"k": [1, 2, 2, 3], "v": [10, 20, 30, None]}), tmp_path / "facts.parquet")
    pq.write_table(pa.table({"k": [1, 2], "name": ["one", "two"]}), tmp_path / "names.parquet")
    script = tmp_path / "job.mlsql"
    script.write_text("""
load parquet.`facts.parquet` as facts;
load parquet.`names.parquet` as names;
select nm.name, sum(f.v) as total, count(*) as n from facts f join names nm on f.k = nm.k
  group by nm.name order by nm.name as totals;
save overwrite totals as delta.`db.totals`;
load delta.`db.totals` as back;
select * from back order by name as shown;
""")
    done = run_cli("run", str(script), "--sql-engine", "daft", "--warehouse", str(tmp_path / "wh"),
                   ray_address=ray_address, timeout=600)
    assert done.returncode == 0, done.stderr
    from deltalake import DeltaTable

    table = DeltaTable(str(tmp_path / "wh" / "db" / "totals"))
    assert table.version() == 0
    assert sorted(table.to_pyarrow_table().to_pylist(), key=json.dumps) == [
        {"name": "one", "total": 10, "n": 1}, {"name": "two", "total": 50, "n": 2}]
    script.write_text("load parquet.`facts.parquet` as facts;\nselect k, collect_list(v) as vs from facts group by k as bad;\n")
    refused = run_cli("run", str(script), "--sql-engine", "daft", ray_address=ray_address, timeout=600)
    assert refused.returncode == 1
    assert "--sql-engine duckdb" in refused.stderr and "job.mlsql:2:" in refused.stderr


def test_the_engine_is_chosen_per_session(tmp_path, monkeypatch):
    """duckdb by default; Session(sql_engine=), $MLSQL_SQL_ENGINE and set ... where type="conf" choose;
    an unknown name is one clear error."""
    monkeypatch.delenv("MLSQL_SQL_ENGINE", raising=False)
    with Session(warehouse=tmp_path) as default:
        assert default.sql_engine == "duckdb"
    with pytest.raises(MLSQLError, match="unknown SQL engine 'spark': expected one of duckdb, daft"):
        Session(warehouse=tmp_path, sql_engine="spark")
    monkeypatch.setenv("MLSQL_SQL_ENGINE", "Daft")
    with Session(warehouse=tmp_path) as chosen:
        assert chosen.sql_engine == "daft"
        chosen.execute('set sql_engine="duckdb" where type="conf";')
        assert chosen.sql_engine == "duckdb"
        with pytest.raises(MLSQLError, match="1:1: unknown SQL engine 'presto'"):
            chosen.execute('set sql_engine="presto" where type="conf";')
        assert chosen.sql_engine == "duckdb"

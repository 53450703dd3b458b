"""Issue 41, part 3: Byzer's 13 SSB scripts and the SQL of Byzer's doc examples through a DuckDB
session and a Daft session.

A script runs in the DuckDB session; each statement it runs is repeated on the Daft session
(``Mirror``): its parquet and Delta loads (Daft's lazy reads) and its selects. A select Daft runs
must give the DuckDB session's rows (printed as Spark prints them, compared as the conformance
suite and ``tests/test_daft_differential.py`` compare them); one it does not run must fail with the
one refusal pointing to ``--sql-engine duckdb``. A select reads on Daft what Daft made of its
inputs where it made them (its loads and selects), and the DuckDB session's table, read whole,
where it did not (an ET's output, a select Daft refused, a table the test gave). The shares are
printed. Daft computes in this process (``daft_in_process``: the same plans and kernels as on Ray).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from sqlglot import exp
from sqlglot.errors import SqlglotError

from mlsql_ray import MLSQLError, Session, parse
from mlsql_ray.engine.daft import frames as daft_frames
from mlsql_ray.engine.daft.translate import REFUSAL_HINT
from mlsql_ray.lang import ast
from mlsql_ray.spark import functions as spark_functions

from conformance.harness import Case, session_zone, spark_string
from test_byzer_docs import (AFTER, BLOCKS, EXPECT_ERROR, FILES, GIVEN, NEEDS_RAY, ONE_REQUEST, SKIP, THEN, UNSUPPORTED,
                             _local, _uses_workers, shared_workers)
from test_ssb import SCRIPTS, script


@dataclass
class Tally:
    """What Daft did with the selects of one corpus."""

    ran: int = 0
    refused: int = 0
    reasons: Counter = field(default_factory=Counter)  # what the refusals named
    differ: list[str] = field(default_factory=list)  # Daft answered, not with DuckDB's rows
    unclear: list[str] = field(default_factory=list)  # Daft failed without the refusal where DuckDB answered

    def share(self, what: str) -> str:
        total = self.ran + self.refused
        return f"{what}: Daft runs {self.ran} of {total} selects ({100 * self.ran / max(total, 1):.0f}%); refuses {self.refused}"


class Mirror:
    """Repeats on ``on_daft`` the loads and selects ``duck`` runs (see the module's docstring)."""

    def __init__(self, duck: Session, on_daft: Session, tally: Tally, where: str):
        self.duck, self.on_daft, self.tally, self.where = duck, on_daft, tally, where
        self._daft_made: dict[str, object] = {}  # table -> the DuckDB session's entry when Daft made its own
        self.answered: set[str] = set()  # the selects' tables Daft gave DuckDB's rows for

    def run(self, text: str) -> None:
        """``text`` as one request of the DuckDB session, each of its loads and selects repeated on Daft."""
        for result in self.duck.execute_iter(text):
            statement = result.statement
            if isinstance(statement, ast.Load) and daft_frames.runs(self.on_daft, statement.format):
                self._load(statement)
            elif isinstance(statement, ast.Select):
                self._select(statement)

    def _load(self, s: ast.Load) -> None:
        try:
            list(self.on_daft.run([s]))
        except MLSQLError as exc:
            if REFUSAL_HINT not in str(exc):
                self.tally.unclear.append(f"{self.where}:{s.line}: load on Daft: {exc}")
            return
        self._daft_made[s.table.lower()] = self.duck.catalog.entry(s.table)

    def _select(self, s: ast.Select) -> None:
        zone = session_zone(self.duck)
        try:
            expected = _printed(self.duck.table(s.table), zone)
        except MLSQLError:
            expected = None  # the DuckDB path fails it (at run time): Daft must not answer either
        for name in _reads(s.sql):
            entry = self.duck.catalog.entry(name)
            if entry is not None and self._daft_made.get(name.lower()) is not entry:
                try:
                    self.on_daft.catalog.add_arrow(name, self.duck.table(name), "the DuckDB session's")
                except MLSQLError:
                    pass  # Daft then fails for want of it, as DuckDB did
        try:
            list(self.on_daft.run([s]))
            rows = _printed(self.on_daft.table(s.table), zone)
        except MLSQLError as exc:
            self.tally.refused += 1
            self.tally.reasons[str(exc).split(" has no exact equivalent")[0].split(": ", 1)[-1][:90]] += 1
            if REFUSAL_HINT not in str(exc) and expected is not None:
                self.tally.unclear.append(f"{self.where}:{s.line}: {exc}")
            return
        self.tally.ran += 1
        self._daft_made[s.table.lower()] = self.duck.catalog.entry(s.table)
        ordered = Case(s.sql, s.line).ordered
        if expected is None or (rows if ordered else sorted(rows)) != (expected if ordered else sorted(expected)):
            self.tally.differ.append(f"{self.where}:{s.line}: {s.sql[:80]!r}: Daft {rows[:3]} DuckDB {expected and expected[:3]}")
        else:
            self.answered.add(s.table.lower())


def _printed(table, zone) -> list[str]:
    """The rows as Spark prints them (the conformance harness's printer)."""
    return ["\t".join(spark_string(v, f.type, zone) for v, f in zip(row, table.schema))
            for row in zip(*(c.to_pylist() for c in table.columns))] if table.num_columns else []


def _reads(sql: str) -> set[str]:
    """The tables a select reads (not its CTEs); none if Spark's parser cannot read it."""
    try:
        trees = [t for t in spark_functions.parse(sql) if t is not None]
    except SqlglotError:
        return set()
    ctes = {cte.alias_or_name.lower() for tree in trees for cte in tree.find_all(exp.CTE)}
    return {t.name for tree in trees for t in tree.find_all(exp.Table) if t.name and t.name.lower() not in ctes}


def _assert_same_or_refused(tally: Tally, what: str) -> None:
    print("\n" + tally.share(what))
    for reason, count in tally.reasons.most_common(12):
        print(f"  {count:>3} refused: {reason}")
    assert not tally.differ, "\n".join(tally.differ)
    assert not tally.unclear, "\n".join(tally.unclear)
    assert tally.ran > 0


# -- SSB --------------------------------------------------------------------------------------------

def test_ssb_scripts_on_daft_give_duckdbs_rows_or_refuse(daft_in_process, tmp_path):
    """Byzer's 13 SSB scripts (tests/fixtures/ssb, as tests/test_ssb.py runs them), each final select
    counted: the share of the 13 Daft runs; every select of them (the loads' ``select *``) compared."""
    every, answered = Tally(), 0
    for path in SCRIPTS:
        with Session(warehouse=tmp_path / "wh") as duck, Session(warehouse=tmp_path / "wh", sql_engine="daft") as on_daft:
            mirror = Mirror(duck, on_daft, every, path.name)
            mirror.run(script(path))
            final = [s for s in parse(script(path)) if isinstance(s, ast.Select)][-1]
            answered += final.table.lower() in mirror.answered
    print(f"\nSSB: Daft runs {answered} of {len(SCRIPTS)} queries with DuckDB's answers")
    _assert_same_or_refused(every, "SSB (every select of the scripts)")


# -- the doc examples -------------------------------------------------------------------------------

#: the doc blocks whose selects are compared: all that run (not a fragment, not something mlsql-ray
#: lacks); those that train or register models in a slow test of their own
DOC_KEYS = [key for key in BLOCKS if key not in SKIP and key not in UNSUPPORTED]


def _run_doc_block(mirror: Mirror, key: str, tmp_path: Path) -> None:
    """As tests/test_byzer_docs.py runs the block (what it is given and builds on in the DuckDB
    session alone), the block's own statements mirrored on Daft."""
    page = key.split("#")[0]
    if key in FILES:
        FILES[key](tmp_path)
    if key in GIVEN:
        mirror.duck.execute(_local(GIVEN[key], tmp_path))
    earlier = [_local(BLOCKS[page + block], tmp_path) for block in AFTER.get(key, [])]
    if key in ONE_REQUEST:
        mirror.run("\n".join([*earlier, _local(BLOCKS[key], tmp_path)]))
        return
    for text in earlier:
        mirror.duck.execute(text)
    mirror.run(_local(BLOCKS[key], tmp_path))
    for block in THEN.get(key, []):
        mirror.duck.execute(_local(BLOCKS[page + block], tmp_path))


def _doc_blocks(keys, tmp_path: Path, monkeypatch, workers=None) -> Tally:
    tally = Tally()
    for i, key in enumerate(keys):
        folder = tmp_path / str(i)
        folder.mkdir()
        monkeypatch.chdir(folder)
        with Session(warehouse=folder / "warehouse", workers=workers) as duck, \
                Session(warehouse=folder / "warehouse", sql_engine="daft") as on_daft:
            try:
                _run_doc_block(Mirror(duck, on_daft, tally, key), key, folder)
            except MLSQLError:
                if key not in EXPECT_ERROR:
                    raise
                # the block's failure tests/test_byzer_docs.py expects: its selects before it count
    return tally


def _on_ray(key: str) -> bool:
    """The block trains, registers or predicts (Ray actors do that), or runs a Python cell on Ray."""
    return _uses_workers(key) or key in NEEDS_RAY


def test_doc_example_selects_on_daft_give_duckdbs_rows_or_refuse(daft_in_process, tmp_path, monkeypatch):
    tally = _doc_blocks([key for key in DOC_KEYS if not _on_ray(key)], tmp_path, monkeypatch)
    _assert_same_or_refused(tally, "doc examples (but those on Ray)")


@pytest.mark.slow  # most train models for seconds each (tests/test_byzer_docs.py's slow tier)
def test_doc_example_selects_of_blocks_on_ray_on_daft(daft_in_process, shared_workers, tmp_path, monkeypatch):
    """The blocks that train, register, predict or run a Python cell: their selects (data made
    ready, predictions read) on both engines; the models and cells run by the DuckDB session only."""
    tally = _doc_blocks([key for key in DOC_KEYS if _on_ray(key)], tmp_path, monkeypatch, shared_workers)
    _assert_same_or_refused(tally, "doc examples on Ray (models, Python cells)")

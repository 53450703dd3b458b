"""``select ... as T;``: names the query's result, computed when something reads it."""

from __future__ import annotations

from typing import Callable

import duckdb
import pyarrow as pa

from ...errors import MLSQLError
from ...lang import ast
from ...spark import vector_marks as ml_vectors
from .. import partition_ids, vectors
from ..daft import frames as daft_frames
from ..catalog import first_rows
from ..result import PREVIEW_ROWS, PreviewedResult, Result
from ..sql import duckdb_message


def run(session, s: ast.Select) -> Result:
    """Name the query's result without computing it (see ``Catalog.add_view``). Its first rows
    are read when the front end shows them (``run(previews=True)``: now, before the name is
    defined, so a run-time error changes no table) or else when the result's ``table`` is
    first read (``PreviewedResult``); a batch run computes none. A result that turns out
    small is kept (``catalog.first_rows``), so showing it and reading it later run the query once.
    A session whose ``sql_engine`` is daft plans it on Daft instead (``engine.daft``)."""
    if session.sql_engine == "daft":
        return daft_frames.select(session, s)
    sql, tables, calls, relation = session.prepare(s.sql, s.line, s.col)
    vector_columns = vectors.of_select(session, s.sql, tables)
    # a view would rename duplicate column names (a, a_1); Spark keeps both: hold those rows
    if (calls_session_functions(session, calls) or partition_ids.called(s.sql)
            or len(set(relation.columns)) != len(relation.columns)):
        table = ml_vectors.marked(relation.to_arrow_table(), vector_columns)
        session.catalog.add_arrow(s.table, table, "select")
        return _select_result(s, table.slice(0, PREVIEW_ROWS), table.num_rows)
    if not session.shows_previews:
        entry = session.catalog.add_view(s.table, sql, tables, "select", relation, origin=(session.current_file(), s.line, s.col))
        session.catalog.mark_vectors(s.table, vector_columns)
        result = PreviewedResult(s, s.table, late_preview(session, s, entry))
        session.catalog.hold(entry, result)
        return result
    rows, whole = first_rows(relation)
    if whole:
        session.catalog.add_arrow(s.table, ml_vectors.marked(rows, vector_columns), "select")
        return _select_result(s, rows.slice(0, PREVIEW_ROWS), rows.num_rows)
    session.catalog.add_view(s.table, sql, tables, "select", relation, origin=(session.current_file(), s.line, s.col))
    session.catalog.mark_vectors(s.table, vector_columns)
    return _select_result(s, rows.slice(0, PREVIEW_ROWS), cheap_count(session, session.catalog.entry(s.table), relation))


def late_preview(session, s: ast.Select, entry) -> Callable[[PreviewedResult], None]:
    """The preview of a select that ran without one, computed when its result is first read:
    from the table it named, if that name still means it (kept if small, as in ``run``);
    a run-time error is the select's, at its position."""
    source = session.current_file()

    def located(exc: MLSQLError) -> MLSQLError:
        exc.source = source
        return exc.at(s.line, s.col)

    def preview(result: PreviewedResult) -> None:
        try:
            rows, whole = first_rows(session.catalog.rows_of(entry))
            if whole and session.catalog.entry(s.table) is entry:
                session.catalog.keep(s.table, rows)
            num_rows = rows.num_rows if whole else cheap_count(session, entry, session.catalog.rows_of(entry))
        except duckdb.Error as exc:
            raise located(MLSQLError(duckdb_message(exc, session.catalog.names()))) from exc
        shown = _select_result(s, rows.slice(0, PREVIEW_ROWS), num_rows)
        result.message, result.table, result.num_rows, result.more = (
            shown.message, shown.table, shown.num_rows, shown.more)

    return preview


def cheap_count(session, entry, relation: duckdb.DuckDBPyRelation) -> int | None:
    """The row count of a select's catalog ``entry`` when counting touches no file, else None."""
    if all(session.catalog.in_memory(table) for table in entry.reads):
        return relation.count("*").fetchall()[0][0]
    return None


def calls_session_functions(session, calls: tuple[tuple[str, str], ...]) -> bool:
    """Whether a query calls a function this session registered (a model function or a Python
    ScriptUDF). Such a
    select runs at once, as before selects were lazy: the function runs once, its errors
    show at the select, and registering another function of that name later cannot change
    the select's rows."""
    registered = session.model_functions.functions if session.model_functions is not None else {}
    return any(name.lower() in registered for name, _ in calls)


def _select_result(s: ast.Select, head: pa.Table, num_rows: int | None) -> Result:
    """A select's result showing its first rows ``head`` and its row count, if known."""
    message = (f"{s.table}: {num_rows} rows" if num_rows is not None
               else f"{s.table}: more than {PREVIEW_ROWS} rows (not counted: that would read them all)")
    return Result(s, message, table=head, num_rows=num_rows, name=s.table, more=num_rows is None)

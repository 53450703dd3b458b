"""A ``--%python`` cell: its code runs on Ray over its input table (``cells.runner``)."""

from __future__ import annotations

from ...lang import ast
from ...storage import rows as file_rows
from ..result import PREVIEW_ROWS, Result
from ...cells.runner import run_cell


def run(session, s: ast.PythonCell) -> Result:
    table, output, notes = run_cell(session, s)
    if table is None:
        return Result(s, "python cell done", warnings=notes)
    if output is not None:
        session.catalog.add_arrow(output, table, "python")
    label = output or "result"
    if file_rows.is_file_rows(table.schema):  # a file as rows: its bytes are no sight to show
        size = sum(table.column("offset").to_pylist())
        return Result(s, f"{label}: a file of {size} bytes in {table.num_rows} rows", num_rows=table.num_rows,
                      name=output, warnings=notes)
    return Result(s, f"{label}: {table.num_rows} rows", table=table.slice(0, PREVIEW_ROWS),
                  num_rows=table.num_rows, name=output, warnings=notes)

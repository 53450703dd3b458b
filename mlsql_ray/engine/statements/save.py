"""``save [mode] T as FORMAT.`path` [where ...];``: the data source of that format writes ``T``."""

from __future__ import annotations

from ...errors import MLSQLError
from ...lang import ast
from .. import datasources
from ..daft import frames as daft_frames
from ..result import Result


def run(session, s: ast.Save) -> Result:
    source = datasources.find(s.format)
    if source.save is None:
        raise MLSQLError(f"{source.name} can only be loaded, not saved")
    source.check_options(s.options)
    if daft_frames.saves(session, s.format) and daft_frames.is_daft_table(session, s.table):
        return daft_frames.save(session, s)
    session.catalog.relation(s.table)  # fails first if the table is unknown
    return source.save(session, s)

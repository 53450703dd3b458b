"""``load FORMAT.`path` [where ...] as T;``: the data source of that format defines ``T``."""

from __future__ import annotations

from ...lang import ast
from .. import datasources
from ..daft import frames as daft_frames
from ..result import Result


def run(session, s: ast.Load) -> Result:
    source = datasources.find(s.format)
    source.check_options(s.options)
    if not daft_frames.load(session, s):
        source.load(session, s)
    return Result(s, f"loaded {s.format}.`{s.path}` as {s.table}", name=s.table)

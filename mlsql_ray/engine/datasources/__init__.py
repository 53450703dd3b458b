"""The data sources ``load`` and ``save`` know, by name (case-insensitive, as Byzer matches them).

Adding one is one small module defining a ``DataSource`` (see ``base``) and one line below.
``!show datasources`` and ``!show "datasources/params/NAME"`` list what is here.
"""

from __future__ import annotations

import pyarrow as pa

from ...errors import MLSQLError
from . import delta_lake, excel, file_formats, image, jdbc, model_sources, strings
from .base import DataSource, Param, params_table

SOURCES: dict[str, DataSource] = {
    source.name.lower(): source
    for source in (*file_formats.SOURCES, delta_lake.SOURCE, *strings.SOURCES, excel.SOURCE, image.SOURCE, jdbc.SOURCE,
                   *model_sources.SOURCES)
}


def find(name: str) -> DataSource:
    source = SOURCES.get(name.lower())
    if source is None:
        raise MLSQLError(f"unknown format {name!r}: expected one of {', '.join(s.name for s in SOURCES.values())}")
    return source


def listing() -> pa.Table:
    """``!show datasources``: Byzer's one column ``name``, and what each is."""
    return pa.table({"name": [s.name for s in SOURCES.values()],
                     "description": [s.description for s in SOURCES.values()]})


def params(name: str) -> pa.Table:
    """``!show "datasources/params/NAME"``."""
    return params_table(find(name).params)


__all__ = ["DataSource", "Param", "SOURCES", "find", "listing", "params"]

"""The data sources ``load`` and ``save`` know, by name (case-insensitive, as Byzer matches them).

Adding one is one small module defining a ``DataSource`` (see ``base``) and one line below.
``!show datasources`` and ``!show "datasources/params/NAME"`` list what is here.
"""

from __future__ import annotations

import pyarrow as pa

from ...errors import MLSQLError
from . import delta_lake, excel, feature_data, file_formats, image, jdbc, model_sources, strings
from ...options import Param, params_table
from .base import DataSource

_FORMATS: dict[str, DataSource] = {
    source.name.lower(): source
    for source in (*file_formats.SOURCES, delta_lake.SOURCE, *strings.SOURCES, excel.SOURCE, image.SOURCE, jdbc.SOURCE,
                   *model_sources.SOURCES, *feature_data.SOURCES)
}


def sources() -> dict[str, DataSource]:
    """Every source by its name in lower case: the formats, then one per feature ET (``feature_data``)."""
    return _FORMATS


def find(name: str) -> DataSource:
    source = sources().get(name.lower())
    if source is None:
        raise MLSQLError(f"unknown format {name!r}: expected one of {', '.join(s.name for s in sources().values())}")
    return source


def listing() -> pa.Table:
    """``!show datasources``: Byzer's one column ``name``, and what each is."""
    return pa.table({"name": [s.name for s in sources().values()],
                     "description": [s.description for s in sources().values()]})


def params(name: str) -> pa.Table:
    """``!show "datasources/params/NAME"``."""
    return params_table(find(name).params)


__all__ = ["DataSource", "Param", "find", "listing", "params", "sources"]

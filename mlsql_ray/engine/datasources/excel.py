"""``excel``: a sheet of an ``.xlsx`` workbook, read by fastexcel (Rust's calamine).

Spark-excel's defaults: the first row holds the column names (``header="true"``), every value is
a string unless ``inferSchema="true"``. ``sheetName`` picks the sheet; ``dataAddress`` is a sheet
name, a range (``B6:C7``) or both (``'comment2'!B6:C7``).
"""

from __future__ import annotations

import re

import pyarrow as pa

from ...errors import MLSQLError
from ..files import truthy
from .base import DataSource, Param

_ADDRESS = re.compile(r"^(?:'?(?P<sheet>[^'!]+)'?!)?(?P<c1>[A-Z]+)(?P<r1>\d+)(?::(?P<c2>[A-Z]+)(?P<r2>\d+))?$")


def _address(text: str) -> tuple[str | None, dict]:
    """(sheet, fastexcel range arguments) for a ``dataAddress``: a bare word is a sheet name."""
    match = _ADDRESS.match(text.strip())
    if match is None:
        return text.strip().strip("'"), {}
    first_row = int(match["r1"]) - 1
    limits: dict = {"skip_rows": first_row}
    if match["c2"]:
        limits["use_columns"] = f"{match['c1']}:{match['c2']}"
        limits["rows"] = int(match["r2"]) - first_row
    else:
        limits["use_columns"] = f"{match['c1']}:"
    return match["sheet"], limits


def _load(session, s) -> None:
    import fastexcel  # a Rust extension: loaded on first use

    path = session._path(s.path)
    if not path.is_file():
        raise MLSQLError(f"cannot load excel: no such file: {path}")
    header = truthy(s.options.get("header"), True)
    infer = truthy(s.options.get("inferSchema"), False)
    sheet, limits = _address(s.options.get("dataAddress", "A1"))
    sheet = s.options.get("sheetName") or sheet
    try:
        reader = fastexcel.read_excel(str(path))
    except Exception as exc:  # fastexcel's errors have no common public base class
        raise MLSQLError(f"cannot read {path} as an Excel workbook: {exc}") from exc
    if sheet is not None and sheet not in reader.sheet_names:
        raise MLSQLError(f"{path} has no sheet {sheet!r} (sheets: {', '.join(reader.sheet_names)})")
    rows = limits.get("rows")
    skip = limits.get("skip_rows", 0)
    data = reader.load_sheet(
        sheet if sheet is not None else 0,
        header_row=skip if header else None,
        skip_rows=None if header else (skip or None),
        n_rows=(rows - 1 if header else rows) if rows is not None else None,
        use_columns=limits.get("use_columns"),
        dtypes=None if infer else "string",
    ).to_arrow()
    table = pa.Table.from_batches([data])
    if not header:  # spark-excel names header-less columns _c0, _c1, ...
        table = table.rename_columns([f"_c{i}" for i in range(table.num_columns)])
    session.catalog.add_arrow(s.table, table, f"excel.`{s.path}`")


SOURCE = DataSource(
    "excel", "a sheet of an .xlsx workbook (load only)", _load,
    params=(
        Param("header", "true", "the first row holds the column names"),
        Param("inferSchema", "false", "guess column types; otherwise every value is a string"),
        Param("sheetName", "", "the sheet to read (default: the first)"),
        Param("dataAddress", "A1", "where the table starts: a sheet name, a cell range (B6:C7), or 'sheet'!B6:C7"),
    ),
)

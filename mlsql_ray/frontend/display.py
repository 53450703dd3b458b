"""Tables as text for terminals and as HTML for notebooks: a preview, never the whole table;
and the plot that ends a training run.

Both renderings show the first rows, each column's type under its name, and a row-count footer.
``num_rows`` is the full count when known; ``more=True`` says there are more rows than shown
but nobody counted them (a lazy ``load``).
"""

from __future__ import annotations

import datetime as dt
import html
from decimal import Decimal

import pyarrow as pa

MAX_CELL = 40


def cell_text(value, limit: int = MAX_CELL) -> str:
    """One value, short: long strings and lists are cut with an ellipsis; timestamps and intervals
    as Spark shows them (``timestamp_text``, ``interval_text``)."""
    if value is None:
        text = "null"
    elif isinstance(value, (bytes, bytearray)):
        text = f"<{len(value)} bytes>"
    elif isinstance(value, dt.datetime):
        text = timestamp_text(value)
    elif isinstance(value, pa.MonthDayNano):
        text = interval_text(value.months, value.days, value.nanoseconds)
    elif isinstance(value, list):
        items = ", ".join(cell_text(v, 8) for v in value[:6])
        text = f"[{items}{', …' if len(value) > 6 else ''}] ({len(value)})" if len(value) > 6 else f"[{items}]"
    elif isinstance(value, float):
        text = f"{value:.6g}"
    else:
        text = str(value)
    text = text.replace("\n", "\\n")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def timestamp_text(value: dt.datetime) -> str:
    """``yyyy-MM-dd HH:mm:ss`` and the fraction without its trailing zeros, in the column's time zone
    (the session's), without an offset: as Spark shows a timestamp."""
    text = value.strftime("%Y-%m-%d %H:%M:%S")
    return f"{text}.{value.microsecond:06d}".rstrip("0") if value.microsecond else text


def interval_text(months: int, days: int, nanoseconds: int) -> str:
    """An interval as Spark's ``CalendarInterval`` writes itself (``1 years 2 months 3 days 4 hours
    0.5 seconds``; Arrow's ``MonthDayNano`` repr otherwise): DuckDB keeps one interval type, so
    which of Spark's interval types it was is not known here."""
    parts = [f"{n} {unit}" for n, unit in ((int(months / 12), "years"), (months - int(months / 12) * 12, "months"),
                                           (days, "days")) if n]
    micros = int(nanoseconds / 1000)  # Spark keeps microseconds
    if micros:
        sign, micros = ("-" if micros < 0 else ""), abs(micros)
        hours, rest = divmod(micros, 3_600_000_000)
        minutes, rest = divmod(rest, 60_000_000)
        parts += [f"{sign}{n} {unit}" for n, unit in ((hours, "hours"), (minutes, "minutes")) if n]
        if rest:
            parts.append(f"{sign}{format((Decimal(rest) / 1_000_000).normalize(), 'f')} seconds")
    return " ".join(parts) or "0 seconds"


def render_text(table: pa.Table, num_rows: int | None = None, max_rows: int = 20, *, more: bool = False) -> str:
    """A boxed-free, aligned text table with a ``(N rows)`` footer."""
    shown = table.slice(0, max_rows)
    headers = [f"{f.name}" for f in shown.schema]
    types = [_short_type(f.type) for f in shown.schema]
    rows = [[cell_text(v) for v in row] for row in _rows(shown)]
    widths = [max([len(h), len(t)] + [len(r[i]) for r in rows]) for i, (h, t) in enumerate(zip(headers, types))]

    def line(cells):
        return "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()

    out = [line(headers), line(types), line(["-" * w for w in widths])]
    out += [line(r) for r in rows]
    out.append(f"({footer(table, shown, num_rows, more)})")
    return "\n".join(out)


def render_html(table: pa.Table, num_rows: int | None = None, max_rows: int = 20, *, more: bool = False) -> str:
    """The same preview as an HTML table: names and types in the header, values escaped,
    numbers right-aligned, the row count below."""
    shown = table.slice(0, max_rows)
    numeric = [pa.types.is_integer(f.type) or pa.types.is_floating(f.type) or pa.types.is_decimal(f.type)
               for f in shown.schema]
    head = "".join(
        f'<th style="text-align:{"right" if num else "left"}">{html.escape(f.name)}<br>'
        f'<span style="font-weight:normal;opacity:0.6">{html.escape(_short_type(f.type))}</span></th>'
        for f, num in zip(shown.schema, numeric)
    )
    body = []
    for row in _rows(shown):
        cells = "".join(
            f'<td style="text-align:{"right" if num else "left"}">{html.escape(cell_text(v))}</td>'
            for v, num in zip(row, numeric)
        )
        body.append(f"<tr>{cells}</tr>")
    return (
        '<div class="mlsql-table">'
        f'<table class="dataframe"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'
        f'<p style="opacity:0.7;margin-top:0.3em">{html.escape(footer(table, shown, num_rows, more))}</p>'
        "</div>"
    )


def _rows(table: pa.Table) -> list[tuple]:
    """The rows as tuples in column order. Not ``to_pylist()``: its dicts keep one of two columns
    with the same name (``select 1 as a, 2 as a``, which Spark returns as two columns ``a``)."""
    return list(zip(*(column.to_pylist() for column in table.columns)))


def footer(table: pa.Table, shown: pa.Table, num_rows: int | None, more: bool = False) -> str:
    """``12 rows``, ``60000 rows, first 20 shown``, or ``first 20 rows shown, more not counted``."""
    if more:
        return f"first {shown.num_rows} rows shown, more not counted"
    total = table.num_rows if num_rows is None else num_rows
    extra = f", first {shown.num_rows} shown" if total > shown.num_rows else ""
    return f"{total} row{'s' if total != 1 else ''}{extra}"

def _short_type(t: pa.DataType) -> str:
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return f"list<{_short_type(t.value_type)}>"
    return str(t)

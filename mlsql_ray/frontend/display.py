"""Tables as text for terminals and as HTML for notebooks: a preview, never the whole table;
and the plot that ends a training run.

Both renderings show the first rows, each column's type under its name, and a row-count footer.
``num_rows`` is the full count when known; ``more=True`` says there are more rows than shown
but nobody counted them (a lazy ``load``).
"""

from __future__ import annotations

import html

import pyarrow as pa

MAX_CELL = 40


def cell_text(value, limit: int = MAX_CELL) -> str:
    """One value, short: long strings and lists are cut with an ellipsis."""
    if value is None:
        text = "null"
    elif isinstance(value, (bytes, bytearray)):
        text = f"<{len(value)} bytes>"
    elif isinstance(value, list):
        items = ", ".join(cell_text(v, 8) for v in value[:6])
        text = f"[{items}{', …' if len(value) > 6 else ''}] ({len(value)})" if len(value) > 6 else f"[{items}]"
    elif isinstance(value, float):
        text = f"{value:.6g}"
    else:
        text = str(value)
    text = text.replace("\n", "\\n")
    return text if len(text) <= limit else text[: limit - 1] + "…"


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

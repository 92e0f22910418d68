"""Small HTML pieces for the notebook views of result objects (``_repr_html_``).

Every value is escaped; a table shows at most ``max_rows`` rows and says how many it left out.

>>> html_table([{"kind": "paper", "min": 1.0}], ["kind", "min"])
'<table><tr><th>kind</th><th>min</th></tr><tr><td>paper</td><td>1.000</td></tr></table>'
"""

from __future__ import annotations

import html
from typing import Any

__all__ = ["html_table", "html_view"]


def _cell(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.3f}"
    return html.escape(str(v))


def html_table(rows: list[dict[str, Any]], cols: list[str], max_rows: int = 20) -> str:
    """Rows of dicts as an HTML table of the columns ``cols`` (missing cells empty)."""
    head = "".join(f"<th>{html.escape(c)}</th>" for c in cols)
    body = "".join("<tr>" + "".join(f"<td>{_cell(r.get(c, ''))}</td>" for c in cols) + "</tr>"
                   for r in rows[:max_rows])
    more = (f"<tr><td colspan={len(cols)}>... {len(rows) - max_rows} more rows</td></tr>"
            if len(rows) > max_rows else "")
    return f"<table><tr>{head}</tr>{body}{more}</table>"


def html_view(headline: str, *parts: str, colour: str | None = None) -> str:
    """A block: the headline (bold, optionally coloured) over already-built HTML parts."""
    style = f" style='color:{colour}'" if colour else ""
    return f"<div><p><b{style}>{html.escape(headline)}</b></p>{''.join(parts)}</div>"

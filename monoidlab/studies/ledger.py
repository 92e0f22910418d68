"""A study's ledger: one JSON line per finished run, keyed by the run's ``id``.

The ledger lives in the repository (``docs/data/*.jsonl``), not in the run folders, so a study
survives its runs and continues in a later session: a run whose id is in the ledger is never
trained again. Two layouts are in use and both are kept as they are: *sorted* (the whole file
rewritten, rows sorted by id, keys sorted; the threshold study, the random-language benchmark)
and *appended* (one line added per run, the last line of an id wins; the 21-task tables).

>>> import tempfile; from pathlib import Path
>>> p = Path(tempfile.mkdtemp()) / "l.jsonl"
>>> add_row(p, {"id": "b", "x": 1}); add_row(p, {"id": "a", "x": 2})
>>> list(read_ledger(p)), p.read_text().splitlines()[0]
(['a', 'b'], '{"id": "a", "x": 2}')
>>> add_row(p, {"id": "a", "x": 3}, layout="appended"); read_ledger(p)["a"]["x"]
3
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from monoidlab._util import atomic_write_text
from monoidlab.errors import ConfigError

__all__ = ["read_ledger", "write_ledger", "add_row", "LAYOUTS"]

LAYOUTS = ("sorted", "appended")


def read_ledger(path: str | os.PathLike) -> dict[str, dict[str, Any]]:
    """``{run id: row}`` of a ledger (the last line of an id wins); ``{}`` when there is none.
    A last line without its newline was cut by a crash and is left out; any other line that is
    not a JSON table with an ``id`` is an error naming the file and line."""
    path = Path(path)
    if not path.is_file():
        return {}
    text = path.read_text(encoding="utf-8")
    lines = text.split("\n")
    if not text.endswith("\n"):
        lines.pop()  # a line cut by a crash while it was appended: that run is not recorded
    rows: dict[str, dict[str, Any]] = {}
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{path}, line {n}: not a JSON line ({exc.msg}); a ledger holds "
                              "one JSON table per finished run") from None
        if not isinstance(row, dict) or not isinstance(row.get("id"), str):
            raise ConfigError(f"{path}, line {n}: a ledger row needs a string 'id'")
        rows[row["id"]] = row
    return rows


def write_ledger(path: str | os.PathLike, rows: dict[str, dict[str, Any]]) -> None:
    """Rewrite a *sorted* ledger atomically: rows sorted by id, each with sorted keys (ASCII
    JSON, as every ledger has been written since its first row: a rewrite changes no byte of
    the rows it keeps)."""
    atomic_write_text(path, "".join(json.dumps(r, sort_keys=True, ensure_ascii=True) + "\n"
                                    for r in sorted(rows.values(), key=lambda r: r["id"])))


def add_row(path: str | os.PathLike, row: dict[str, Any], layout: str = "sorted") -> None:
    """Record one finished run: the whole *sorted* ledger rewritten atomically, or one line
    appended to an *appended* one (a line cut by a crash is left out by :func:`read_ledger`)."""
    if layout not in LAYOUTS:
        raise ConfigError(f"ledger layout: one of {', '.join(LAYOUTS)}, got {layout!r}")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if layout == "sorted":
        rows = read_ledger(path)
        rows[row["id"]] = row
        write_ledger(path, rows)
    else:
        with path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(row, ensure_ascii=True) + "\n")

"""The config's key table: ``monoidlab train --help`` and docs/training.md's table, generated
from :class:`~monoidlab.training.config.RunConfig`'s fields (their defaults, meanings and
sections), so that neither can drift from the schema.

>>> config_table_markdown().splitlines()[0]
'| key | section | type | default | meaning |'
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from monoidlab.geometry import Offsets
from monoidlab.training.config import _FIELDS

__all__ = ["config_keys", "config_table_markdown"]

_TYPE_NAMES = {"str": "text", "int": "integer", "float": "number", "bool": "true/false",
               "Mapping": "table", "Lengths": "lengths", "None": "none", "Any": "value",
               "Offsets": "none or random"}


def _value_text(value: Any) -> str:
    """A default as it is written in a TOML config or an override."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{k} = {_value_text(v)}" for k, v in value.items()) + "}"
    if isinstance(value, Offsets):
        return value.mode
    return str(value)


def config_keys() -> list[dict[str, str]]:
    """Every key of a config file, in order: ``{"key", "section", "type", "default",
    "meaning"}`` (text). The one source of ``monoidlab train --help`` and of docs/training.md's
    table. ``offset_buffer`` is written beside ``offsets`` (both are the one ``offsets`` value).

    >>> row = next(r for r in config_keys() if r["key"] == "steps")
    >>> row["section"], row["type"], row["default"], row["meaning"].split(" (")[0]
    ('optimisation', 'integer', '1000', 'optimiser steps')
    """
    from monoidlab.models import REGISTRY  # names only: no model module is imported

    types = {"within": "text or list", "eval_kinds": "text or list",
             "model_options": "table or none"}
    rows = []
    for f in _FIELDS.values():
        names = [_TYPE_NAMES.get(t.strip(), t.strip()) for t in str(f.type).split("|")]
        rows.append({"key": f.name, "section": f.metadata["section"],
                     "type": types.get(f.name, " or ".join(names)),
                     "default": _value_text(f.default),
                     "meaning": _filled(f.metadata["meaning"], REGISTRY)})
        if f.name == "offsets":
            rows.append({"key": "offset_buffer", "section": "data", "type": "integer or none",
                         "default": "none",
                         "meaning": "random offsets: buffer length B, offset uniform in 0..B-L "
                                    "(none: the next power of two >= 2L)"})
    return rows


def _filled(meaning: str, models: Any) -> str:
    """A key's meaning with the registries' names: ``{models}``, ``{samplers}``, ``{kinds}``."""
    from monoidlab.evaluation.kinds import KINDS
    from monoidlab.strings.samplers import REGISTRY as SAMPLERS

    return (meaning.replace("{models}", ", ".join(models))
            .replace("{samplers}", ", ".join(f"`{n}`" for n in SAMPLERS))
            .replace("{kinds}", ", ".join(f"`{k}`" for k in KINDS)))


def config_table_markdown() -> str:
    """docs/training.md's table of config keys, generated from :func:`config_keys`."""
    lines = ["| key | section | type | default | meaning |", "|---|---|---|---|---|"]
    for r in config_keys():
        lines.append(f"| `{r['key']}` | {r['section']} | {r['type']} | `{r['default']}` | "
                     f"{r['meaning'].replace('|', '/')} |")
    return "\n".join(lines)

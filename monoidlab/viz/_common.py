"""Shared pieces of the figures: the pyplot handle and axis labels by representative words."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from monoidlab.monoid import SyntacticMonoid

__all__ = ["LABEL_LIMIT", "pyplot", "ec_ticks", "trim"]

LABEL_LIMIT = 40  # label axes by representative words up to this many ECs


def pyplot() -> Any:
    """``matplotlib.pyplot``, on the Agg backend outside notebooks (no display needed)."""
    import matplotlib

    if matplotlib.get_backend().lower() not in ("agg", "module://matplotlib_inline.backend_inline"):
        try:
            import IPython  # noqa: F401  (in a notebook keep the inline backend)
        except ImportError:
            matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def ec_ticks(monoid: SyntacticMonoid, used: np.ndarray) -> list[str] | bool:
    labels = monoid.labels()
    return [labels[i] for i in used] if len(used) <= LABEL_LIMIT else False


def trim(support: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows/columns that hold at least one composition (keeps big monoids readable)."""
    rows = np.flatnonzero(support.any(axis=1))
    cols = np.flatnonzero(support.any(axis=0))
    return rows, cols

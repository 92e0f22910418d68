"""Shared pieces of the figures: the pyplot handle, EC tick labels by representative words,
categorical EC colours, and :func:`literal`, the one way user text enters a figure.

Every string a user provides (language, class, state and symbol names, EC words, titles,
run and kind names) goes through :func:`literal` (or :func:`legend_label` for legend
entries), so matplotlib shows it as written: a ``$`` never starts mathtext, a leading ``_``
never hides a legend entry.

EC axes are labelled by representative words (``"3: 01"``: index and shortest word). Up to
``LABEL_LIMIT`` ECs every EC is labelled; past it every k-th, with k the smallest step that keeps
at most ``LABEL_LIMIT`` labels, and the figure's title says so (:func:`label_note`).

>>> label_step(30), label_step(56), label_step(141)
(1, 2, 4)
>>> print(literal("$x$ costs $5"))
\\$x\\$ costs \\$5
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

if TYPE_CHECKING:
    from monoidlab.monoid import SyntacticMonoid

__all__ = ["LABEL_LIMIT", "COLOUR_LIMIT", "pyplot", "ec_ticks", "ec_names", "label_step",
           "label_note", "set_ec_ticks", "trim", "zero_element", "literal", "legend_label",
           "literals"]

LABEL_LIMIT = 40  # label every EC up to this many, else every k-th
COLOUR_LIMIT = 10  # distinct colours (tab10) for at most this many ECs; the rest grey as "other"


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


def literal(text: Any) -> str:
    """``text`` as a string matplotlib draws as written (non-usetex mode, where only ``$``
    is special: every ``$`` is escaped, so no mathtext is parsed and ``\\$`` shows ``$``).

    >>> literal("a_b^c"), literal(3)
    ('a_b^c', '3')
    """
    return str(text).replace("$", r"\$")


def literals(texts: Any) -> list[str]:
    """:func:`literal` of every item."""
    return [literal(t) for t in texts]


def legend_label(text: Any) -> str:
    """A legend entry shown as written: :func:`literal`, and a leading ``_`` (which makes
    matplotlib leave the entry out of the legend) kept visible behind a zero-width space.

    >>> legend_label("_hidden")
    '\u200b_hidden'
    """
    out = literal(text)
    return "\u200b" + out if out.startswith("_") else out


def ec_names(monoid: SyntacticMonoid | None, ecs: ArrayLike, index: bool = True) -> list[str]:
    """``"index: word"`` (or the word alone) for each EC; the index alone without a monoid.
    The words are :func:`literal` (ready for a figure).

    >>> ec_names(None, [0, 3])
    ['0', '3']
    """
    arr = np.asarray(ecs).ravel()
    if monoid is None:
        return [str(int(e)) for e in arr]
    words = literals(monoid.labels())
    return [f"{int(e)}: {words[int(e)]}" if index else words[int(e)] for e in arr]


def label_step(n: int, limit: int = LABEL_LIMIT) -> int:
    """Label every k-th of ``n`` ticks so that at most ``limit`` labels remain."""
    return max(1, -(-int(n) // max(1, limit)))


def label_note(step: int) -> str:
    """The title's note on a subset of labels ("" when every tick is labelled)."""
    return "" if step <= 1 else f"; every {_ordinal(step)} EC labelled"


def _ordinal(k: int) -> str:
    return {2: "2nd", 3: "3rd"}.get(k, f"{k}th")


def set_ec_ticks(ax: Any, monoid: SyntacticMonoid | None, ecs: ArrayLike, axis: str = "x",
                 limit: int = LABEL_LIMIT, index: bool = True) -> int:
    """Label a heatmap axis (one cell per EC in ``ecs``) by representative words, every k-th
    past ``limit``; returns the step k (1: all labelled). Font shrinks with the label count."""
    ecs = np.asarray(ecs)
    step = label_step(len(ecs), limit)
    pos = np.arange(0, len(ecs), step)
    names = ec_names(monoid, ecs[pos], index)
    size = 8 if len(pos) <= 16 else 7 if len(pos) <= 28 else 6
    if axis == "x":
        ax.set_xticks(pos + 0.5)
        ax.set_xticklabels(names, rotation=90, fontsize=size)
    else:
        ax.set_yticks(pos + 0.5)
        ax.set_yticklabels(names, rotation=0, fontsize=size)
    return step


def ec_ticks(monoid: SyntacticMonoid, used: np.ndarray) -> list[str] | bool:
    """Representative words of ``used`` when at most ``LABEL_LIMIT``, else False (seaborn's
    "no labels"); prefer :func:`set_ec_ticks`, which labels every k-th past the limit."""
    labels = literals(monoid.labels())
    return [labels[i] for i in used] if len(used) <= LABEL_LIMIT else False


def trim(support: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows/columns that hold at least one composition (keeps big monoids readable)."""
    rows = np.flatnonzero(support.any(axis=1))
    cols = np.flatnonzero(support.any(axis=0))
    return rows, cols


def zero_element(monoid: SyntacticMonoid) -> int | None:
    """The monoid's zero z (z·x = x·z = z for all x; e.g. the sink of a Dyck language), if any.

    >>> import monoidlab as ml
    >>> zero_element(ml.load_language("dyck-2").monoid()) is not None
    True
    """
    t = np.asarray(monoid.table)
    idx = np.arange(len(t))
    z = np.flatnonzero((t == idx[:, None]).all(axis=1) & (t == idx[None, :]).all(axis=0))
    return int(z[0]) if len(z) else None

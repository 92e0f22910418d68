"""Shared pieces of the figures: the pyplot handle, EC tick labels by representative words,
categorical EC colours, and :func:`literal`, the one way user text enters a figure.

Every string a user provides (language, class, state and symbol names, EC words, titles,
run and kind names) goes through :func:`literal` (or :func:`legend_label` for legend
entries), so matplotlib shows it as written: a ``$`` never starts mathtext, a leading ``_``
never hides a legend entry.

EC axes are labelled by representative words (``"3: 01"``: index and shortest word), always at
``TICK_FONT`` points. Up to ``LABEL_LIMIT`` ECs every EC is labelled when the axis has room for
them; past it (or when the axis is short) every k-th, with k the smallest step that keeps at most
``LABEL_LIMIT`` labels and leaves each label 1.5 times its font size of axis, and the figure's
title says so (:func:`label_note`). :func:`texts_outside` finds titles that a figure cuts.

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
    from monoidlab.algebra.monoid import SyntacticMonoid

__all__ = ["LABEL_LIMIT", "COLOUR_LIMIT", "TICK_FONT", "pyplot", "ec_ticks", "ec_names",
           "label_step", "label_note", "set_ec_ticks", "trim", "zero_element", "literal",
           "legend_label", "literals", "texts_outside", "wrap", "set_square_ticks"]

LABEL_LIMIT = 40  # label every EC up to this many, else every k-th
TICK_FONT = 8  # points: the size of every EC tick label (smaller is unreadable in the report)
TICK_PITCH = 1.5  # each label gets this many times its font size of axis, so none overlap
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
                 limit: int = LABEL_LIMIT, index: bool = True, min_step: int = 1) -> int:
    """Label a heatmap axis (one cell per EC in ``ecs``) by representative words at
    ``TICK_FONT`` points, every k-th past ``limit`` or past what the axis' length holds without
    overlap (and at least every ``min_step``-th); returns the step k (1: all labelled)."""
    ecs = np.asarray(ecs)
    box = ax.get_position()  # in figure fractions: the axis' length in points
    side = box.width * ax.figure.get_figwidth() if axis == "x" else \
        box.height * ax.figure.get_figheight()
    room = max(1, int(side * 72 / (TICK_PITCH * TICK_FONT)))
    step = max(label_step(len(ecs), limit), label_step(len(ecs), room), min_step)
    pos = np.arange(0, len(ecs), step)
    names = ec_names(monoid, ecs[pos], index)
    if axis == "x":
        ax.set_xticks(pos + 0.5)
        ax.set_xticklabels(names, rotation=90, fontsize=TICK_FONT)
    else:
        ax.set_yticks(pos + 0.5)
        ax.set_yticklabels(names, rotation=0, fontsize=TICK_FONT)
    return step


def set_square_ticks(ax: Any, monoid: SyntacticMonoid | None, rows: ArrayLike,
                     cols: ArrayLike, limit: int = LABEL_LIMIT, index: bool = True) -> int:
    """:func:`set_ec_ticks` on both axes with one step (the larger either axis needs), so that
    rows and columns are labelled alike; returns the step."""
    step = max(set_ec_ticks(ax, monoid, cols, "x", limit, index),
               set_ec_ticks(ax, monoid, rows, "y", limit, index))
    set_ec_ticks(ax, monoid, cols, "x", limit, index, step)
    set_ec_ticks(ax, monoid, rows, "y", limit, index, step)
    return step


def ec_ticks(monoid: SyntacticMonoid, used: np.ndarray) -> list[str] | bool:
    """Representative words of ``used`` when at most ``LABEL_LIMIT``, else False (seaborn's
    "no labels"); prefer :func:`set_ec_ticks`, which labels every k-th past the limit."""
    labels = literals(monoid.labels())
    return [labels[i] for i in used] if len(used) <= LABEL_LIMIT else False


def trim(support: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The ECs that hold a composition as a left or as a right child, the same list for rows
    and columns: a square heatmap whose cell (x, y) mirrors (y, x), like the multiplication
    table, and no EC that occurs on neither side (it carries no information).

    >>> s = np.zeros((4, 4), bool); s[1, 2] = s[2, 3] = True
    >>> [a.tolist() for a in trim(s)]
    [[1, 2, 3], [1, 2, 3]]
    """
    used = np.flatnonzero(support.any(axis=1) | support.any(axis=0))
    return used, used.copy()


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


def texts_outside(fig: Any) -> list[str]:
    """The titles (figure and axes titles, axis labels) that reach past the figure's edges, as
    drawn by the figure's own renderer: text a saved figure would cut or push out of its frame.

    >>> plt = pyplot()
    >>> fig, ax = plt.subplots(figsize=(2, 2))
    >>> _ = ax.set_title("a title far too long for a figure two inches wide")
    >>> texts_outside(fig)
    ['a title far too long for a figure two inches wide']
    >>> plt.close(fig)
    """
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    edge = fig.bbox
    texts = [fig._suptitle] if fig._suptitle is not None else []
    for ax in fig.axes:
        texts += [ax.title, ax._left_title, ax._right_title, ax.xaxis.label, ax.yaxis.label]
    out = []
    for t in texts:
        if not t.get_text() or not t.get_visible():
            continue
        b = t.get_window_extent(renderer)
        if b.x0 < edge.x0 - 0.5 or b.x1 > edge.x1 + 0.5 or b.y0 < edge.y0 - 0.5 \
                or b.y1 > edge.y1 + 0.5:
            out.append(t.get_text())
    return out


def wrap(text: str, fig: Any, fontsize: float = 10, share: float = 0.95) -> str:
    """``text`` broken into lines that fit ``share`` of the figure's width at ``fontsize``
    (an average glyph taken as 0.55 of the font size): a long title wraps instead of running
    off the figure.

    >>> plt = pyplot()
    >>> fig = plt.figure(figsize=(2, 1))
    >>> wrap("one two three four five six seven", fig, 10).count("\\n") > 0
    True
    >>> plt.close(fig)
    """
    import textwrap

    width = max(10, int(share * fig.get_figwidth() * 72 / (0.55 * fontsize)))
    return "\n".join(textwrap.wrap(text, width, break_long_words=False)) or text

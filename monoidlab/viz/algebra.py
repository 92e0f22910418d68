"""Algebra figures: the minimal automaton, the multiplication table, egg-box diagrams.

Example
-------
>>> import monoidlab as ml
>>> type(multiplication_heatmap(ml.load_language("tomita-5").monoid())).__name__
'Figure'
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from monoidlab._checks import scalar_args
from monoidlab.viz._common import (
    LABEL_LIMIT,
    label_note,
    literal,
    literals,
    set_square_ticks,
    wrap,
    zero_element,
)
from monoidlab.viz._common import pyplot as _plt

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from monoidlab.algebra.automaton import Automaton
    from monoidlab.algebra.monoid import SyntacticMonoid

__all__ = ["automaton_figure", "multiplication_heatmap", "egg_box_figure"]


def automaton_figure(lang: Automaton, max_states: int = 40) -> Figure:
    """The minimal automaton drawn with networkx (start marked, classes as colours)."""
    import networkx as nx

    from monoidlab._checks import check_count

    max_states = check_count(max_states, "max_states")
    plt = _plt()

    g = nx.MultiDiGraph()
    n = min(lang.n_states, max_states)
    for q in range(n):
        g.add_node(q)
    labels: dict[tuple[int, int], list[str]] = {}
    for q in range(n):
        for a, sym in enumerate(lang.alphabet):
            t = int(lang.delta[q, a])
            if t < n:
                labels.setdefault((q, t), []).append(sym)
    for (q, t) in labels:
        g.add_edge(q, t)
    fig, ax = plt.subplots(figsize=(7, 5))
    pos = nx.kamada_kawai_layout(nx.Graph(g)) if n > 1 else {0: (0, 0)}
    cmap = plt.get_cmap("tab20")
    colors = [cmap(int(lang.output[q]) % 20) for q in range(n)]
    nx.draw_networkx_nodes(g, pos, node_color=colors, ax=ax, node_size=500,
                           edgecolors=["black" if q == lang.start else "none" for q in range(n)],
                           linewidths=2.5)
    nx.draw_networkx_labels(g, pos, {q: literal(lang.state_names[q][:6]) for q in range(n)},
                            ax=ax, font_size=8)
    nx.draw_networkx_edges(g, pos, ax=ax, arrows=True, connectionstyle="arc3,rad=0.15",
                           node_size=500)
    nx.draw_networkx_edge_labels(g, pos, {k: literal(",".join(v)[:12]) for k, v in labels.items()},
                                 ax=ax, font_size=7, connectionstyle="arc3,rad=0.15")
    ax.set_title(f"{literal(lang.name)}: minimal automaton ({lang.n_states} states; start has a black rim;"
                 f" colour = class)" + (" — truncated" if lang.n_states > max_states else ""),
                 fontsize=9)
    ax.axis("off")
    return fig


@scalar_args
def multiplication_heatmap(monoid: SyntacticMonoid, limit: int = LABEL_LIMIT) -> Figure:
    """The multiplication table as a heatmap: row x (the left factor) times column y (the right
    factor), labelled by representative words (every k-th past ``limit`` ECs; the title says
    so). The axes are named "left factor" / "right factor", never by a letter, which could be
    a symbol of the language's alphabet.

    Up to 20 ECs each product has its own colour and (up to 20) its word in the cell. Past 20,
    the colour is the length of the product's shortest word (sequential), and the monoid's zero
    (e.g. the sink of a Dyck language), when it has one, is grey.
    """
    import seaborn as sns

    plt = _plt()
    n = monoid.size
    t = np.asarray(monoid.table)
    side = min(13.0, max(5.0, 0.16 * min(n, 80) + 3))
    fig, ax = plt.subplots(figsize=(side + 1, side))
    words = literals(monoid.labels())
    notes = []
    if n <= 20:
        sns.heatmap(t, ax=ax, cmap="tab20", vmin=0, vmax=19, cbar=False, linewidths=0.3,
                    linecolor="white", xticklabels=False, yticklabels=False)
        size = 9 if n <= 10 else 7  # points: at least 9 px at 100 dpi, the report's size
        for i in range(n):
            for j in range(n):
                ax.text(j + 0.5, i + 0.5, words[t[i, j]], ha="center", va="center", fontsize=size)
        notes.append("cell: the word of the product")
    else:
        data = np.asarray(monoid.word_lengths)[t].astype(float)
        z = zero_element(monoid)
        mask = t == z if z is not None else np.zeros_like(t, bool)
        ax.set_facecolor("0.85")  # masked cells (the zero) show the axes' grey
        sns.heatmap(np.where(mask, np.nan, data), mask=mask, ax=ax, cmap="viridis",
                    xticklabels=False, yticklabels=False,
                    cbar_kws={"label": "length of the shortest word of the product",
                              "shrink": 0.6})
        notes.append("colour: shortest word length of the product")
        if z is not None:
            notes.append(f"grey: the zero {literal(repr(monoid.labels()[z]))}")
    step = set_square_ticks(ax, monoid, np.arange(n), np.arange(n), limit, index=n > 20)
    ax.set_xlabel("right factor (column)")
    ax.set_ylabel("left factor (row)")
    ax.set_title(wrap(f"{literal(monoid.automaton.name)}: row · column, {n} ECs "
                      f"({'; '.join(notes)}{label_note(step)})", fig, 9), fontsize=9)
    fig.tight_layout()
    return fig


@scalar_args
def egg_box_figure(monoid: SyntacticMonoid, max_classes: int = 12) -> Figure:
    """Egg-box diagrams of the J-classes (rows R-classes, columns L-classes; * = idempotent)."""
    plt = _plt()
    boxes = monoid.green.egg_boxes()[:max_classes]
    labels = literals(monoid.labels())
    rows = [len(b.r_classes) + 1 for b in boxes]  # each diagram as tall as its R-classes
    fig, axes = plt.subplots(len(boxes), 1, figsize=(7, 0.3 * sum(rows) + 0.3), squeeze=False,
                             gridspec_kw={"height_ratios": rows})
    for ax, box in zip(axes[:, 0], boxes):
        ax.axis("off")
        cells = [[", ".join(labels[m] + ("*" if idem and m in set(monoid.idempotents.tolist()) else "")
                            for m in cell[:4]) + (" …" if len(cell) > 4 else "")
                  for cell, idem in zip(row, irow)]
                 for row, irow in zip(box.cells, box.idempotent_cells)]
        tab = ax.table(cellText=cells, loc="center", cellLoc="center")
        tab.auto_set_font_size(False)
        tab.set_fontsize(7)
        ax.set_title(f"J-class {box.j_class} ({'regular' if box.is_regular else 'not regular'})",
                     fontsize=8)
    fig.tight_layout()
    return fig

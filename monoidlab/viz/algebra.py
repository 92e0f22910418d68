"""Algebra figures: the minimal automaton, the multiplication table, egg-box diagrams.

Example
-------
>>> import monoidlab as ml
>>> type(multiplication_heatmap(ml.load_language("tomita-5").monoid())).__name__
'Figure'
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from monoidlab.viz._common import LABEL_LIMIT
from monoidlab.viz._common import pyplot as _plt

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from monoidlab.automaton import Automaton
    from monoidlab.monoid import SyntacticMonoid

__all__ = ["automaton_figure", "multiplication_heatmap", "egg_box_figure"]


def automaton_figure(lang: Automaton, max_states: int = 40) -> Figure:
    """The minimal automaton drawn with networkx (start marked, classes as colours)."""
    import networkx as nx

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
    nx.draw_networkx_labels(g, pos, {q: lang.state_names[q][:6] for q in range(n)}, ax=ax,
                            font_size=8)
    nx.draw_networkx_edges(g, pos, ax=ax, arrows=True, connectionstyle="arc3,rad=0.15",
                           node_size=500)
    nx.draw_networkx_edge_labels(g, pos, {k: ",".join(v)[:12] for k, v in labels.items()},
                                 ax=ax, font_size=7, connectionstyle="arc3,rad=0.15")
    ax.set_title(f"{lang.name}: minimal automaton ({lang.n_states} states; start has a black rim;"
                 f" colour = class)" + (" — truncated" if lang.n_states > max_states else ""),
                 fontsize=9)
    ax.axis("off")
    return fig


def multiplication_heatmap(monoid: SyntacticMonoid) -> Figure:
    """The multiplication table as a heatmap (small monoids)."""
    import seaborn as sns

    plt = _plt()
    fig, ax = plt.subplots(figsize=(6, 5))
    t = monoid.table
    labels = monoid.labels() if monoid.size <= LABEL_LIMIT else False
    sns.heatmap(t, ax=ax, cmap="tab20" if monoid.size <= 20 else "viridis",
                xticklabels=labels, yticklabels=labels, cbar=monoid.size > 20)
    if monoid.size <= 16:
        for i in range(monoid.size):
            for j in range(monoid.size):
                ax.text(j + 0.5, i + 0.5, monoid.labels()[t[i, j]], ha="center", va="center",
                        fontsize=7)
    ax.set_xlabel("b")
    ax.set_ylabel("a")
    ax.set_title(f"{monoid.automaton.name}: a·b")
    return fig


def egg_box_figure(monoid: SyntacticMonoid, max_classes: int = 12) -> Figure:
    """Egg-box diagrams of the J-classes (rows R-classes, columns L-classes; * = idempotent)."""
    plt = _plt()
    boxes = monoid.green.egg_boxes()[:max_classes]
    labels = monoid.labels()
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

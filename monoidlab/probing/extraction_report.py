"""The extractions as a section of the HTML report: text, tables and one figure.

:func:`extraction_section` turns the results of
:func:`~monoidlab.probing.extract_automaton.extract_automaton` and
:func:`~monoidlab.probing.extract_monoid.extract_monoid` into HTML fragments (escaped, no page
around them) and the figures to embed with their captions; :func:`table_figure` draws the
extracted operator table beside the table the syntactic monoid predicts for the same
elements, the differing products outlined.

Example
-------
>>> import monoidlab as ml
>>> from monoidlab.probing.extract_monoid import _MonoidModel, extract_monoid
>>> lang = ml.load_language("parity")
>>> parts, figures = extraction_section(None, extract_monoid(_MonoidModel(lang), lang,
...                                                          n_strings=100))
>>> parts[0], len(figures)
('<h3>What the model computes: extracted automaton and monoid</h3>', 1)
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from monoidlab.probing.extract_automaton import ExtractedAutomaton
    from monoidlab.probing.extract_monoid import ExtractedMonoid

__all__ = ["extraction_section", "table_figure"]


def _table(rows: list[dict[str, Any]]) -> str:
    cols = list(rows[0])
    head = "".join(f"<th>{html.escape(c)}</th>" for c in cols)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(r[c]))}</td>" for c in cols)
                   + "</tr>" for r in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def extraction_section(automaton: ExtractedAutomaton | None, monoid: ExtractedMonoid | None
                       ) -> tuple[list[str], list[tuple[Figure, str]]]:
    """HTML fragments and ``(figure, caption)`` pairs for either or both extractions."""
    parts = ["<h3>What the model computes: extracted automaton and monoid</h3>"]
    figures: list[tuple[Figure, str]] = []
    if automaton is not None:
        a, ca = automaton, automaton.comparison
        ag = a.agreement.get("all", {})
        parts.append(_table([{
            "states (extracted / true)": f"{a.automaton.n_states} / {ca.true_states}",
            "isomorphic": "yes" if ca.isomorphic else "no",
            "shortest distinguishing string": "" if ca.isomorphic else repr(ca.string),
            "its class (extracted / true)": "" if ca.classes is None else
            " / ".join(ca.classes),
            "status": a.status, "membership queries": a.queries,
            "oracle strings": a.oracle_strings,
            "extracted = model": f"{ag.get('extracted_model', 0):.4f}",
            "model = language": f"{ag.get('model_language', 0):.4f}"}]))
        parts.append("<p class=note>L* (AALpy) with the model as membership oracle; the "
                     "equivalence oracle tests every short string and the test kinds at "
                     "lengths up to 500. A test, not a proof: the model may differ from the "
                     "extracted automaton on strings no oracle drew.</p>")
    if monoid is not None:
        m, c = monoid, monoid.comparison
        parts.append(_table([{
            "k (chosen from the model)": m.k, "true |M|": m.true_size,
            "ECs among the states": m.ecs_seen, "closed": "yes" if m.closed else "no",
            "non-associative triples": f"{m.associativity['failing']} of "
                                       f"{m.associativity['triples']}",
            "identity": ", ".join(m.names[e] for e in m.identity) or "none",
            "isomorphic": "yes" if c.isomorphic else "no",
            "differing products": c.n_differences}]))
        if c.differences:
            parts.append(_table([{"left EC": d["left"], "right EC": d["right"],
                                  "true product": d["true"], "extracted": d["extracted"]}
                                 for d in c.differences]))
        figures.append((table_figure(m), "extracted operator table (left) and the syntactic "
                        "monoid's products of the same elements (right); differing cells "
                        "outlined"))
    return parts, figures


def table_figure(result: ExtractedMonoid) -> Figure:
    """Two heatmaps over the k elements: the extracted table, and the syntactic monoid's
    products of the ECs the elements stand for (``comparison.predicted``; blank where an
    element stands for no EC or for several). Cells where they differ are outlined in red."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    k = result.k
    got = np.asarray(result.table, float)
    want = np.asarray(result.comparison.predicted, float).reshape(k, k)
    want[want < 0] = np.nan
    diff = np.argwhere(~np.isnan(want) & (want != got))
    # at most 11 inches wide (the report shows it unscaled at 100 dpi: labels >= 9 px): side
    # by side while both fit, else one above the other; every step-th element labelled
    side = 1.2 + 0.35 * k
    stacked = 2 * side + 1 > 11
    side = min(side, 10.0)
    fig, axes = plt.subplots(2 if stacked else 1, 1 if stacked else 2,
                             figsize=(side + 1, 2 * side) if stacked else (2 * side + 1, side),
                             squeeze=False)
    step = max(1, int(np.ceil(k / max(1, side * 72 / (1.5 * 7)))))
    ticks = list(range(0, k, step))
    for ax, data, title in ((axes.flat[0], got, "extracted a·b"),
                            (axes.flat[1], want, "syntactic monoid's a·b")):
        ax.imshow(data, cmap="tab20", vmin=0, vmax=max(k - 1, 1), interpolation="nearest")
        ax.set_title(title + (f" (every {step}th element labelled)" if step > 1 else ""))
        ax.set_xticks(ticks, [result.names[i] for i in ticks], rotation=90, fontsize=7)
        ax.set_yticks(ticks, [result.names[i] for i in ticks], fontsize=7)
        ax.set_xlabel("right (b)")
        ax.set_ylabel("left (a)")
        for a, b in diff:
            ax.add_patch(Rectangle((b - 0.5, a - 0.5), 1, 1, fill=False, ec="red", lw=2))
    fig.tight_layout()
    return fig

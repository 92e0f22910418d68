"""Training figures: accuracy against test length, exact match by operand length.

Example
-------
>>> type(accuracy_by_length({"run": {41: 1.0, 42: 0.5}})).__name__
'Figure'
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from monoidlab._checks import scalar_args
from monoidlab.viz._common import legend_label, literal, wrap
from monoidlab.viz._common import pyplot as _plt

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from monoidlab.evaluation import Evaluation

__all__ = ["accuracy_by_length", "exact_match_figure", "kind_accuracy_figure"]


@scalar_args
def accuracy_by_length(results: Mapping[Any, Mapping[Any, float]], ax: Any = None,
                       title: str = "accuracy by length") -> Figure:
    """Accuracy against test length, one line per run (``{label: {length: accuracy}}``)."""
    plt = _plt()
    fig = None
    if ax is None:
        fig, ax = plt.subplots(figsize=(7, 4))
    for label, acc in results.items():
        xs = sorted(int(k) for k in acc)
        ax.plot(xs, [acc[k] if k in acc else acc[str(k)] for k in xs], label=legend_label(label),
                lw=1.2)
    ax.set_xlabel("length")
    ax.set_ylabel("accuracy")
    ax.set_ylim(0, 1.02)
    ax.set_title(literal(title))
    ax.legend(fontsize=7)
    return fig or ax.figure


@scalar_args
def exact_match_figure(runs: Mapping[Any, Mapping[Any, Mapping[Any, float]]],
                       train_length: int | None = None, title: str | None = None) -> Figure:
    """Exact match against operand length: one panel per seed, one line per variant.

    ``runs`` is ``{variant: {seed: {length: exact match}}}`` (e.g. the bench's results);
    ``train_length`` draws a dashed line at the longest training operand. Returns the figure.

    >>> fig = exact_match_figure({"recipe": {0: {1: 1.0, 2: 0.5}}}, train_length=1)
    >>> len(fig.axes)
    1
    """
    plt = _plt()
    seeds = sorted({s for per_seed in runs.values() for s in per_seed}, key=str)
    fig, axes = plt.subplots(1, len(seeds), figsize=(4.2 * len(seeds), 3.4), squeeze=False,
                             sharey=True)
    for ax, seed in zip(axes[0], seeds):
        curves = {v: per_seed[seed] for v, per_seed in runs.items() if seed in per_seed}
        accuracy_by_length(curves, ax=ax, title=f"seed {seed}")  # literal there
        if train_length:
            ax.axvline(train_length, color="grey", ls="--", lw=0.8)
        ax.set_xlabel("operand digits")
        ax.set_ylabel("exact match")
    if title:
        fig.suptitle(literal(title), fontsize=10)
    fig.tight_layout()
    return fig


@scalar_args
def kind_accuracy_figure(evaluation: Evaluation, ax: Any = None,
                         title: str | None = None) -> Figure:
    """Accuracy by length, one panel per test kind: the model (solid, in the kind's colour)
    beside every baseline the evaluation holds on the same strings (majority-class dashed
    grey, count-only dash-dotted black, ...), single-class lengths (never scored) as hollow
    markers, the solved threshold dotted. Each panel's title gives the kind's min and mean
    beside the baselines' means; the figure's title names the problem and whether it is solved
    (wrapped to the figure's width, never cut). With ``ax`` every kind is drawn in that one
    axes instead.

    >>> from monoidlab.evaluation import Evaluation
    >>> ev = Evaluation("p", ("paper",), 0.99, 8, accuracy={"paper": {3: 1.0, 4: 0.5}},
    ...                 baselines={"majority": {"paper": {3: 0.5, 4: 0.5}}})
    >>> len(kind_accuracy_figure(ev).axes)
    1
    """
    plt = _plt()
    kinds = list(evaluation.kinds)
    fig = None
    if ax is None:
        fig, axes = plt.subplots(len(kinds), 1, figsize=(9, 0.6 + 2.3 * len(kinds)),
                                 sharex=True, squeeze=False)
        panels = list(axes[:, 0])
    else:
        panels = [ax] * len(kinds)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    styles = [("--", "0.45"), ("-.", "black"), (":", "0.3")]
    for i, (kind, pax) in enumerate(zip(kinds, panels)):
        c = colors[i % len(colors)]
        acc = evaluation.accuracy.get(kind, {})
        xs = sorted(acc)
        pax.plot(xs, [acc[x] for x in xs], color=c, lw=1.3, marker="." if len(xs) < 60 else None,
                 label=legend_label(f"{kind} (min {min(acc.values()):.3f})" if acc else kind))
        means = []
        for j, (name, per) in enumerate(evaluation.baselines.items()):
            base = per.get(kind, {})
            bx = sorted(x for x in base if x in acc)
            if bx:
                ls, bc = styles[j % len(styles)]
                pax.plot(bx, [base[x] for x in bx], color=bc if ax is None else c, lw=1.0,
                         ls=ls, alpha=0.85, label=legend_label(f"{kind}: {name} baseline"))
                means.append(f"{name} {sum(base[x] for x in bx) / len(bx):.3f}")
        one = evaluation.single_class.get(kind, {})
        if one:
            ox = sorted(one)
            pax.scatter(ox, [one[x] for x in ox], s=10, facecolors="none", edgecolors=c, lw=0.6)
        if ax is None:
            head = (f"{kind}: min {min(acc.values()):.3f}, mean "
                    f"{sum(acc.values()) / len(acc):.3f}" if acc else f"{kind}: no scored length")
            if means:
                head += "; baselines (mean): " + ", ".join(means)
            pax.set_title(wrap(literal(head), pax.figure, 9), fontsize=9)
            pax.legend(fontsize=8, loc="lower left", ncol=min(3, 1 + len(means)))
        pax.axhline(evaluation.threshold, color="grey", ls=":", lw=0.8)
        pax.set_ylabel("accuracy")
        pax.set_ylim(0, 1.02)
    panels[-1].set_xlabel("test length")
    state = "solved" if evaluation.solved else "not solved"
    head = title or f"{evaluation.problem}: accuracy by test length, {state} at threshold " \
                    f"{evaluation.threshold:g}"
    if fig is not None:
        fig.suptitle(wrap(literal(head), fig, 10), fontsize=10)
        fig.tight_layout()
    else:
        ax.set_title(wrap(literal(head), ax.figure, 9), fontsize=9)
        ax.legend(fontsize=7, loc="lower left")
    return fig or panels[0].figure

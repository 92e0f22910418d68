"""Training figures: accuracy against test length, exact match by operand length.

Example
-------
>>> type(accuracy_by_length({"run": {41: 1.0, 42: 0.5}})).__name__
'Figure'
"""

from __future__ import annotations

from monoidlab.viz._common import pyplot as _plt

__all__ = ["accuracy_by_length", "exact_match_figure"]


def accuracy_by_length(results: dict, ax=None, title: str = "accuracy by length"):
    """Accuracy against test length, one line per run (``{label: {length: accuracy}}``)."""
    plt = _plt()
    fig = None
    if ax is None:
        fig, ax = plt.subplots(figsize=(7, 4))
    for label, acc in results.items():
        xs = sorted(int(k) for k in acc)
        ax.plot(xs, [acc[k] if k in acc else acc[str(k)] for k in xs], label=str(label), lw=1.2)
    ax.set_xlabel("length")
    ax.set_ylabel("accuracy")
    ax.set_ylim(0, 1.02)
    ax.set_title(title)
    ax.legend(fontsize=7)
    return fig or ax.figure


def exact_match_figure(runs: dict, train_length: int | None = None, title: str | None = None):
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
        accuracy_by_length(curves, ax=ax, title=f"seed {seed}")
        if train_length:
            ax.axvline(train_length, color="grey", ls="--", lw=0.8)
        ax.set_xlabel("operand digits")
        ax.set_ylabel("exact match")
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig

"""Figures (seaborn/matplotlib). Every function returns the figure; saving is the caller's choice.

Example
-------
>>> import monoidlab as ml
>>> from monoidlab.coverage import exact_coverage
>>> fig = coverage_heatmap(exact_coverage(ml.load_language("dyck-2"), range(1, 9)))
>>> type(fig).__name__
'Figure'
"""

from __future__ import annotations

import numpy as np

__all__ = ["coverage_heatmap", "ratio_heatmap", "gap_heatmaps", "shift_bars", "missing_table",
           "multiplication_heatmap", "egg_box_figure", "accuracy_by_length"]

LABEL_LIMIT = 40  # label axes by representative words up to this many ECs


def _plt():
    import matplotlib

    if matplotlib.get_backend().lower() not in ("agg", "module://matplotlib_inline.backend_inline"):
        try:
            import IPython  # noqa: F401  (in a notebook keep the inline backend)
        except ImportError:
            matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _ticks(monoid, used: np.ndarray):
    labels = monoid.labels()
    return [labels[i] for i in used] if len(used) <= LABEL_LIMIT else False


def _trim(support: np.ndarray):
    """Rows/columns that hold at least one composition (keeps big monoids readable)."""
    rows = np.flatnonzero(support.any(axis=1))
    cols = np.flatnonzero(support.any(axis=0))
    return rows, cols


def coverage_heatmap(cov, ax=None, title: str | None = None, rows=None, cols=None,
                     vmin=None, vmax=None, cmap: str = "viridis"):
    """The paper's heatmap: log10 of normalised composition frequency, zero cells masked.

    Axes are left EC × right EC, labelled by representative words for small monoids.
    """
    import seaborn as sns

    plt = _plt()
    p = cov.probabilities
    if rows is None or cols is None:
        rows, cols = _trim(cov.support)
    with np.errstate(divide="ignore"):
        data = np.log10(p[np.ix_(rows, cols)])
    mask = ~np.isfinite(data)  # zero (or underflowed) cells
    fig = None
    if ax is None:
        fig, ax = plt.subplots(figsize=(6.4, 5.2))
    sns.heatmap(np.where(mask, np.nan, data), mask=mask, ax=ax, cmap=cmap, vmin=vmin, vmax=vmax,
                xticklabels=_ticks(cov.monoid, cols), yticklabels=_ticks(cov.monoid, rows),
                cbar_kws={"label": "log10 frequency"})
    ax.set_xlabel("right EC")
    ax.set_ylabel("left EC")
    lengths = cov.lengths
    ax.set_title(title or f"{cov.monoid.automaton.name}: {cov.schedule}, lengths "
                 f"{lengths.min()}–{lengths.max()} ({'exact' if cov.exact else 'sampled'})")
    return fig or ax.figure


def ratio_heatmap(gap, ax=None, rows=None, cols=None):
    """log10(test / train) frequency; cells needed at test but missing in training in red."""
    import seaborn as sns

    plt = _plt()
    if rows is None or cols is None:
        rows, cols = _trim(gap.test.support | gap.train.support)
    with np.errstate(divide="ignore", invalid="ignore"):
        data = np.log10(gap.ratio[np.ix_(rows, cols)])
    fig = None
    if ax is None:
        fig, ax = plt.subplots(figsize=(6.4, 5.2))
    lim = np.nanmax(np.abs(data)) if np.isfinite(data).any() else 1.0
    sns.heatmap(data, mask=~np.isfinite(data), ax=ax, cmap="coolwarm", center=0, vmin=-lim,
                vmax=lim, xticklabels=_ticks(gap.test.monoid, cols),
                yticklabels=_ticks(gap.test.monoid, rows), cbar_kws={"label": "log10 test/train"})
    miss = gap.missing[np.ix_(rows, cols)]
    ys, xs = np.nonzero(miss)
    ax.scatter(xs + 0.5, ys + 0.5, marker="s", s=12, color="red", label="missing in training")
    if len(xs):
        ax.legend(loc="upper right", fontsize=7)
    ax.set_xlabel("right EC")
    ax.set_ylabel("left EC")
    ax.set_title("test / train")
    return fig or ax.figure


def gap_heatmaps(gap):
    """Train heatmap, test heatmap and ratio side by side on shared axes."""
    plt = _plt()
    rows, cols = _trim(gap.test.support | gap.train.support)
    fig, axes = plt.subplots(1, 3, figsize=(19, 5.4))
    lo = min(_finite_min(gap.train), _finite_min(gap.test))
    coverage_heatmap(gap.train, ax=axes[0], rows=rows, cols=cols, vmin=lo, vmax=0,
                     title=f"train {_lens(gap.train)}")
    coverage_heatmap(gap.test, ax=axes[1], rows=rows, cols=cols, vmin=lo, vmax=0,
                     title=f"test {_lens(gap.test)}")
    ratio_heatmap(gap, ax=axes[2], rows=rows, cols=cols)
    fig.suptitle(f"{gap.test.monoid.automaton.name}: EC compositions ({gap.test.schedule}); "
                 f"{int(gap.missing.sum())} needed at test, never in training")
    fig.tight_layout()
    return fig


def _finite_min(cov) -> float:
    p = cov.probabilities
    p = p[p > 0]
    return float(np.log10(p.min())) if len(p) else -1.0


def _lens(cov) -> str:
    return f"lengths {cov.lengths.min()}–{cov.lengths.max()}"


def shift_bars(gap, top: int = 30):
    """Per-EC distribution shift: node-EC probability at train and at test (largest changes)."""
    import pandas as pd
    import seaborn as sns

    plt = _plt()
    s = gap.ec_shift
    order = np.argsort(-np.abs(s["shift"]))[:top]
    labels = gap.test.monoid.labels()
    df = pd.DataFrame({"EC": [labels[i] for i in order for _ in (0, 1)],
                       "probability": [v for i in order for v in (s["train"][i], s["test"][i])],
                       "split": ["train", "test"] * len(order)})
    fig, ax = plt.subplots(figsize=(max(6, 0.35 * len(order)), 4))
    sns.barplot(df, x="EC", y="probability", hue="split", ax=ax)
    ax.tick_params(axis="x", rotation=90)
    ax.set_title("node-EC distribution, largest train→test shifts")
    fig.tight_layout()
    return fig


def missing_table(gap, limit: int = 30):
    """The missing compositions as a table figure (most probable at test first)."""
    plt = _plt()
    rows = gap.missing_list()[:limit]
    fig, ax = plt.subplots(figsize=(7, 0.3 * (len(rows) + 2)))
    ax.axis("off")
    if rows:
        cells = [[r["left_word"], r["right_word"], f"{r['test_probability']:.2e}"] for r in rows]
        ax.table(cellText=cells, colLabels=["left EC", "right EC", "P(test)"], loc="center")
    else:
        ax.text(0.5, 0.5, "no missing compositions", ha="center", va="center")
    ax.set_title(f"{len(gap.missing_list())} compositions needed at test, absent in training")
    return fig


def multiplication_heatmap(monoid):
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


def egg_box_figure(monoid, max_classes: int = 12):
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

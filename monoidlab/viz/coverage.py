"""Coverage figures: the paper's composition heatmaps (train, test, test/train), the missing
compositions and the node-EC shift.

Example
-------
>>> import monoidlab as ml
>>> from monoidlab.coverage.exact import exact_coverage
>>> fig = coverage_heatmap(exact_coverage(ml.load_language("dyck-2"), range(1, 9)))
>>> type(fig).__name__
'Figure'
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from monoidlab._checks import scalar_args
from monoidlab.viz._common import LABEL_LIMIT, label_note, literal, literals, set_square_ticks
from monoidlab.viz._common import pyplot as _plt
from monoidlab.viz._common import trim as _trim

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from monoidlab.coverage.exact import Coverage, CoverageGap

__all__ = ["coverage_heatmap", "ratio_heatmap", "gap_heatmaps", "shift_bars", "missing_table",
           "level_grid"]


@scalar_args
def coverage_heatmap(cov: Coverage, ax: Any = None, title: str | None = None,
                     rows: np.ndarray | None = None, cols: np.ndarray | None = None,
                     vmin: float | None = None, vmax: float | None = None,
                     cmap: str = "viridis", limit: int = LABEL_LIMIT) -> Figure:
    """The paper's heatmap: log10 of normalised composition frequency, zero cells masked.

    Axes are left EC × right EC (only those holding a composition), labelled by index and
    representative word; past ``limit`` ECs every k-th is labelled and the title says so.
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
                xticklabels=False, yticklabels=False, cbar_kws={"label": "log10 frequency"})
    step = set_square_ticks(ax, cov.monoid, rows, cols, limit)
    ax.set_xlabel("right EC")
    ax.set_ylabel("left EC")
    lengths = cov.lengths
    ax.set_title(literal(title or f"{cov.monoid.automaton.name}: {cov.schedule}, lengths "
                         f"{lengths.min()}–{lengths.max()} "
                         f"({'exact' if cov.exact else 'sampled'})") + label_note(step),
                 fontsize=9)
    return fig or ax.figure


@scalar_args
def ratio_heatmap(gap: CoverageGap, ax: Any = None, rows: np.ndarray | None = None,
                  cols: np.ndarray | None = None, limit: int = LABEL_LIMIT) -> Figure:
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
                vmax=lim, xticklabels=False, yticklabels=False,
                cbar_kws={"label": "log10 test/train"})
    step = set_square_ticks(ax, gap.test.monoid, rows, cols, limit)
    miss = gap.missing[np.ix_(rows, cols)]
    ys, xs = np.nonzero(miss)
    ax.scatter(xs + 0.5, ys + 0.5, marker="s", s=12, color="red", label="missing in training")
    if len(xs):
        ax.legend(loc="upper right", fontsize=7)
    ax.set_xlabel("right EC")
    ax.set_ylabel("left EC")
    ax.set_title("test / train" + label_note(step), fontsize=9)
    return fig or ax.figure


def gap_heatmaps(gap: CoverageGap) -> Figure:
    """Train heatmap and test heatmap side by side, their ratio below, on shared axes: 11
    inches wide, so that at 100 dpi the report shows it unscaled (every label at least 9 px)."""
    plt = _plt()
    rows, cols = _trim(gap.test.support | gap.train.support)
    fig, grid = plt.subplots(2, 2, figsize=(11, 9.6))
    axes = [grid[0, 0], grid[0, 1], grid[1, 0]]
    note = grid[1, 1]
    note.axis("off")
    s = gap.summary(first=0)
    note.text(0.05, 0.5, f"compositions needed at test: {s['needed']}\n"
                         f"shown in training: {s['covered']}\n"
                         f"missing (red in the ratio map): {s['missing']}",
              va="center", fontsize=10, transform=note.transAxes)
    lo = min(_finite_min(gap.train), _finite_min(gap.test))
    coverage_heatmap(gap.train, ax=axes[0], rows=rows, cols=cols, vmin=lo, vmax=0,
                     title=f"train {_lens(gap.train)}")
    coverage_heatmap(gap.test, ax=axes[1], rows=rows, cols=cols, vmin=lo, vmax=0,
                     title=f"test {_lens(gap.test)}")
    ratio_heatmap(gap, ax=axes[2], rows=rows, cols=cols)
    fig.suptitle(f"{literal(gap.test.monoid.automaton.name)}: EC compositions ({gap.test.schedule}); "
                 f"{int(gap.missing.sum())} needed at test, never in training")
    fig.tight_layout()
    return fig


def _finite_min(cov: Coverage) -> float:
    p = cov.probabilities
    p = p[p > 0]
    return float(np.log10(p.min())) if len(p) else -1.0


def _lens(cov: Coverage) -> str:
    return f"lengths {cov.lengths.min()}–{cov.lengths.max()}"


@scalar_args
def shift_bars(gap: CoverageGap, top: int = 30) -> Figure:
    """Per-EC distribution shift: node-EC probability at train and at test (largest changes)."""
    import pandas as pd
    import seaborn as sns

    plt = _plt()
    s = gap.ec_shift
    order = np.argsort(-np.abs(s["shift"]))[:top]
    labels = literals(gap.test.monoid.labels())
    df = pd.DataFrame({"EC": [labels[i] for i in order for _ in (0, 1)],
                       "probability": [v for i in order for v in (s["train"][i], s["test"][i])],
                       "split": ["train", "test"] * len(order)})
    fig, ax = plt.subplots(figsize=(max(6, 0.35 * len(order)), 4))
    sns.barplot(df, x="EC", y="probability", hue="split", ax=ax)
    ax.tick_params(axis="x", rotation=90)
    ax.set_title("node-EC distribution, largest train→test shifts")
    fig.tight_layout()
    return fig


@scalar_args
def missing_table(gap: CoverageGap, limit: int = 30) -> Figure:
    """The missing compositions as a table figure (most probable at test first)."""
    plt = _plt()
    rows = gap.missing_list()[:limit]
    fig, ax = plt.subplots(figsize=(7, 0.3 * (len(rows) + 2) + 0.6))  # room for the title
    ax.axis("off")
    if rows:
        cells = [[literal(r["left_word"]), literal(r["right_word"]),
                  f"{r['test_probability']:.2e}"] for r in rows]
        ax.table(cellText=cells, colLabels=["left EC", "right EC", "P(test)"], loc="center")
    else:
        ax.text(0.5, 0.5, "no missing compositions", ha="center", va="center")
    ax.set_title(f"{len(gap.missing_list())} compositions needed at test, absent in training",
                 fontsize=10)
    fig.tight_layout()
    return fig


def level_grid(lc: Any, max_levels: int = 9) -> Figure:
    """Coverage by tree level (a :class:`~monoidlab.coverage.levels.LevelCoverage`): one panel
    per level, left EC × right EC, each needed composition coloured by whether the training
    layout shows it *at that level* (green), only at other levels (orange) or nowhere (red);
    grey: shown in training, not needed at this level. Axes: the ECs that occur at all."""
    plt = _plt()
    from matplotlib.colors import ListedColormap

    levels = [r["level"] for r in lc.table()][:max_levels]
    need_any, shown_any = lc.needed.any(0), lc.shown.any(0)
    rows, cols = _trim(need_any | shown_any)
    ncol = min(3, len(levels)) or 1
    nrow = (len(levels) + ncol - 1) // ncol or 1
    fig, axes = plt.subplots(nrow, ncol, figsize=(4.2 * ncol, 3.8 * nrow), squeeze=False)
    cmap = ListedColormap(["white", "#bbbbbb", "#2ca02c", "#ff7f0e", "#d62728"])
    for ax, lev in zip(axes.ravel(), levels):
        need = lc.needed[lev] if lev < len(lc.needed) else np.zeros_like(need_any)
        shown = lc.shown[lev] if lev < len(lc.shown) else np.zeros_like(shown_any)
        code = np.zeros(need.shape, int)
        code[shown & ~need] = 1
        code[need & shown] = 2
        code[need & ~shown & shown_any] = 3
        code[need & ~shown_any] = 4
        ax.imshow(code[np.ix_(rows, cols)], cmap=cmap, vmin=0, vmax=4, interpolation="nearest")
        ax.set_title(f"level {lev}: {int(need.sum())} needed, {int((need & shown).sum())} "
                     "shown there", fontsize=8)
        ax.set_xticks([])
        ax.set_yticks([])
        ax.set_xlabel("right EC", fontsize=7)
        ax.set_ylabel("left EC", fontsize=7)
    for ax in axes.ravel()[len(levels):]:
        ax.axis("off")
    fig.suptitle(f"{literal(lc.language)}: needed at test lengths vs shown in training, by tree level "
                 "(green: shown at that level, orange: only at another level, red: nowhere, "
                 "grey: shown, not needed there)", fontsize=8)
    fig.tight_layout()
    return fig

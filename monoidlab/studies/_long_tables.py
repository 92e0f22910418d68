"""The long runs' tables and figure (monoidlab.studies.long): the prediction table, the
curves' text and figure, the docs section; pure functions of the study's rows.

>>> wrong_text({"paper": 3, "near_miss": 4})
'7'
"""

from __future__ import annotations

from pathlib import Path

from monoidlab.studies._long_runs import FINISHED_LEDGER, FRESH_SEEDS, PAIR_STEP


def wrong_text(per_kind: dict) -> str:
    """A baseline's wrong strings over all kinds ("-" where it does not apply).

    >>> wrong_text({"paper": 3, "near_miss": 4}), wrong_text({"paper": None})
    ('7', '-')
    """
    vals = list(per_kind.values())
    return "-" if not vals or any(v is None for v in vals) else str(sum(vals))


# ------------------------------------------------------------------------------ the tables
def prediction_table(rows: list[dict]) -> str:
    """The prediction table as markdown (one row per condition)."""
    head = ("| condition | padding | training | support length | covered? | recipe continued | "
            "steps | own test set (wrong) | majority / count-only (wrong) | fresh sets (wrong) | "
            "strictly solved | wall h | CPU h | prediction |\n|" + "---|" * 14 + "\n")
    body = []
    for r in rows:
        solved = "-" if r["solved"] is None else "**yes**" if r["solved"] else "no"
        base = ("-" if not r.get("baselines") else
                f"{wrong_text(r['baselines']['majority'])} / "
                f"{wrong_text(r['baselines']['count_only'])}")
        body.append(f"| {r['condition']} | {r['padding']} | {r['train']} | {r['support']} | "
                    f"{'yes' if r['covered'] else '**no**'} | {r['recipe']} | {r['steps']} | "
                    f"{r['own']} | {base} | {r['fresh']} | {solved} | {r['wall_h']} | "
                    f"{r['cpu_h']} | {r['prediction']} |")
    return head + "\n".join(body) + "\n"


def curve_text(rows: list[dict]) -> str:
    """The learning curves' points as text: per condition and step, wrong strings per kind and
    per tree level."""
    lines = []
    for r in rows:
        for c in r["curve"]:
            kinds = ", ".join(f"{k} {w}" for k, w in c["wrong"].items())
            levels = ", ".join(f"{d}: {w}" for d, w in c["wrong_by_level"].items() if w)
            tested = " (tested)" if c.get("tested") else ""
            lines.append(f"{r['condition']:<30} step {c['step']:>6}{tested}: {kinds}; "
                         f"by tree level {levels or 'none'}")
    return "\n".join(lines)


def draw_curves(rows: list[dict], path: Path) -> None:
    """Per condition: wrong test strings against steps, one line per kind (top, the majority
    class baseline of each kind dashed in its colour) and one per tree level of the string
    (bottom); symlog y (0 is drawn); every panel spans the same steps."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shown = [r for r in rows if r["curve"]]
    fig, axes = plt.subplots(2, max(1, len(shown)), figsize=(3.2 * max(1, len(shown)), 5.6),
                             squeeze=False)
    last = max((c["step"] for r in shown for c in r["curve"]), default=1)
    for j, r in enumerate(shown):
        steps = [c["step"] for c in r["curve"]]
        top, bottom = axes[0][j], axes[1][j]
        majority = (r.get("baselines") or {}).get("majority", {})
        for kind in r["curve"][-1]["wrong"]:
            line, = top.plot(steps, [c["wrong"].get(kind, 0) for c in r["curve"]], marker="o",
                             label=kind)
            if majority.get(kind) is not None:
                top.axhline(majority[kind], color=line.get_color(), linestyle="--",
                            linewidth=0.8, label=f"{kind}: majority class")
        levels = sorted({d for c in r["curve"] for d in c["wrong_by_level"]}, key=int)
        for d in levels:
            bottom.plot(steps, [c["wrong_by_level"].get(d, 0) for c in r["curve"]], marker=".",
                        label=f"level {d}")
        cover = "covered" if r["covered"] else "uncovered"
        top.set_title(f"{r['condition']}\n({r['recipe']}, {cover})", fontsize=8)
        for ax in (top, bottom):
            ax.set_xlim(0, last * 1.03)
            ax.set_yscale("symlog", linthresh=1)
            ax.set_ylim(bottom=0)  # counts: symlog's autoscale would open a negative decade
            ax.set_xlabel("step", fontsize=7)
            ax.tick_params(labelsize=7)
            ax.legend(fontsize=5)
        top.set_ylabel("wrong test strings, per kind", fontsize=7)
        bottom.set_ylabel("wrong, per tree level", fontsize=7)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)


def section_text(rows: list[dict], config_name: str, pair_step: int = PAIR_STEP) -> str:
    """The section ``long runs`` of docs/results.md: the prediction table, the curves' points
    and the diagnoses of the covered runs that fail."""
    table = prediction_table(rows)
    points = curve_text(rows)
    diagnoses = "\n".join(f"- **{r['condition']}** ({r['recipe']}): "
                          + r["diagnosis"]["text"].replace("\n", " ")
                          for r in rows if r["diagnosis"])
    curves = any(r["curve"] for r in rows)
    solved = sum(1 for r in rows if r["solved"])
    finished = sum(1 for r in rows if r["solved"] is not None)
    return (f"## The five unsolved tasks at 100,000 steps: the prediction table\n\n"
            f"`monoidlab study long --write-docs` (configs/{config_name}; "
            f"the recipe each condition continues is the better of its pair at step "
            f"{pair_step}, by the config's rule). A condition is covered when the tool's "
            f"support length at its padding is at most its longest training length; the "
            f"prediction: covered conditions can be solved, uncovered ones cannot. "
            f"Strictly solved means every kind at every test length, on the own test set "
            f"and on two fresh ones (seeds {FRESH_SEEDS[0]}, {FRESH_SEEDS[1]}). "
            f"{finished} of {len(rows)} conditions finished, {solved} strictly solved "
            f"(a finished row whose run folder is gone comes from "
            f"{FINISHED_LEDGER}). Wall and CPU hours count every part "
            f"trained, across sessions (`>= x`: a part trained before the trainer logged "
            f"its CPU time). Beside the own test set, the trivial baselines on the same "
            f"strings: always the majority class, and the best model that sees only the "
            f"symbol counts (an upper bound computed on the test strings themselves: where "
            f"every string has counts of its own, as in modular-arithmetic (64 distinct "
            f"count vectors among the 64 strings of each kind at lengths 41, 101 and 301), "
            f"it is vacuous).\n\n"
            + table
            + ("\n![learning curves](figures/long-curves.png)\n\n"
               "The learning curves (strict test errors of each validation-step snapshot on "
               "the run's own test set; the tested weights last):\n\n```text\n" + points
               + "\n```\n" if curves else "\nNo run has reached a validation step yet.\n")
            + (f"\nWhat the errors of the covered runs that fail have in common "
               f"(`diagnose` on the tested weights):\n\n{diagnoses}\n" if diagnoses else ""))

"""One self-contained HTML report for a language (figures embedded as PNG, opens offline).

Sections: the language (summary and a drawing of the minimal automaton), its monoid (size,
Green's structure, egg-box diagram and multiplication table when small), coverage (train vs
test heatmaps, missing compositions, per-EC shift), minimum-training-length estimates, and, with
a checkpoint, accuracy by length, probing and associativity.

Example
-------
>>> import tempfile, pathlib
>>> out = pathlib.Path(tempfile.mkdtemp())
>>> path = build_report("parity", out, train_lengths=range(1, 9), test_lengths=range(30, 33))
>>> path.name, path.read_text().count("<img") >= 4
('parity.html', True)
"""

from __future__ import annotations

import base64
import html
import io
import json
import os
import time
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from monoidlab._paths import check_entry, check_output_dir, confine, ensure_dir, slugify
from monoidlab._util import atomic_write_text
from monoidlab.automaton import Automaton
from monoidlab.errors import InputError
from monoidlab.geometry import LengthsLike, length_array

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from monoidlab.evaluation import Evaluation

__all__ = ["build_report"]

SMALL = 64  # egg-box and multiplication table only for monoids up to this size


def _png(fig: Figure) -> str:
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def _img(fig: Figure, alt: str) -> str:
    return f'<figure><img src="{_png(fig)}" alt="{html.escape(alt)}"><figcaption>' \
           f'{html.escape(alt)}</figcaption></figure>'


def _table(rows: list[dict[str, Any]], cols: list[str]) -> str:
    head = "".join(f"<th>{html.escape(c)}</th>" for c in cols)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(_fmt(r.get(c, '')))}</td>" for c in cols)
                   + "</tr>" for r in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    if isinstance(v, bool):
        return "yes" if v else "no"
    return str(v)


CSS = """body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;
color:#222}h1{font-size:1.6em}h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:2em}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:2px 8px;
font-size:.9em}figure{margin:1em 0}img{max-width:100%}figcaption{font-size:.85em;color:#555}
.note{color:#555;font-size:.9em}"""


def build_report(language: str | Automaton | None, out_dir: str | os.PathLike, *,
                 checkpoint: str | os.PathLike | None = None,
                 train_lengths: LengthsLike = range(1, 41),
                 test_lengths: LengthsLike = range(41, 501), schedule: str = "balanced",
                 probe: bool = True, umap: bool = True, n_probe: int = 200,
                 progress: bool = False, other_language: bool = False) -> Path:
    """Write ``OUT/<language>.html`` and return its path.

    Beside it, ``OUT/<language>.json`` holds the key figures (monoid size, support lengths,
    and with a checkpoint the strict verdict, accuracy per kind beside the baselines, probing
    and associativity, trained vs initialisation): what ``monoidlab demo`` prints.

    The file names are a slug of the language's name (a spec's ``name`` may hold any text),
    and ``out_dir`` is checked before any work (:func:`monoidlab._paths.check_output_dir`).

    A ``checkpoint`` must have been trained on ``language`` (the same minimal automaton; its
    name may differ): a page about one language must not show the model of another. With
    ``other_language=True`` it is shown anyway, and the title names both languages.
    ``language=None`` reports the checkpoint's own language (the spec its run carries).
    """
    import monoidlab as ml
    from monoidlab import viz
    from monoidlab.coverage import compare, exact_coverage
    from monoidlab.min_length import min_training_length
    from monoidlab.sublanguage import resolve_within

    t0 = time.time()
    check_output_dir(out_dir, "report folder")  # before minutes of work, not after
    train_lengths = length_array(train_lengths, "train_lengths")
    test_lengths = length_array(test_lengths, "test_lengths")
    loaded = None
    if language is None:  # the run's own language, from the spec its checkpoint carries
        if not checkpoint:
            raise InputError("language: give a language, or a checkpoint whose own language "
                             "is reported")
        loaded = _load_matching(checkpoint, None, False)
        language = loaded[2].language
    lang = ml.load_language(language) if isinstance(language, str) else language
    if not isinstance(lang, Automaton):
        raise InputError(f"language: a language name, a spec path or an Automaton, got "
                         f"{type(language).__name__}")
    for suffix in (".html", ".json"):  # a link there would send the page elsewhere
        check_entry(Path(out_dir) / f"{slugify(lang.name, 'language')}{suffix}", "report file")
    if checkpoint and loaded is None:
        loaded = _load_matching(checkpoint, lang, other_language)
    monoid = lang.monoid()
    within = resolve_within(lang, "auto")
    key: dict[str, Any] = {"language": lang.name, "monoid_size": monoid.size}
    title = lang.name
    if loaded is not None and loaded[2].language != lang:
        title = f"{lang.name} (model trained on {loaded[2].name})"
        key["model_language"] = loaded[2].name
    parts = [f"<h1>monoidlab report: {html.escape(title)}</h1>",
             f"<p>{html.escape(lang.description)}</p>"]
    steps = ["language", "monoid", "coverage", "min-length"] + (["model"] if checkpoint else [])
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(steps), desc="report")

    def tick() -> None:
        if bar:
            bar.update(1)

    # --- language
    parts.append("<h2>Language</h2>")
    parts.append(_table([{"states (minimal)": lang.n_states, "alphabet": " ".join(lang.alphabet),
                          "classes": ", ".join(lang.classes)}],
                        ["states (minimal)", "alphabet", "classes"]))
    parts.append(_img(viz.automaton_figure(lang), "minimal automaton"))
    tick()
    # --- monoid
    s = monoid.summary()
    parts.append("<h2>Syntactic monoid</h2>")
    cols = ["size", "idempotents", "r_classes", "l_classes", "h_classes", "j_classes", "group",
            "aperiodic", "commutative", "j_trivial", "r_trivial", "l_trivial"]
    parts.append(_table([s], cols))
    if monoid.size <= SMALL:
        parts.append(_img(viz.egg_box_figure(monoid), "Green's structure: egg-box diagrams of "
                          "the J-classes (rows R-classes, columns L-classes, * idempotent)"))
        parts.append(_img(viz.multiplication_heatmap(monoid), "multiplication table a·b"))
    else:
        parts.append(f"<p class=note>{monoid.size} elements: egg-box diagram and multiplication "
                     f"table are drawn for monoids up to {SMALL} elements.</p>")
    tick()
    # --- coverage
    parts.append(f"<h2>EC-composition coverage ({schedule} schedule, exact)</h2>")
    tr = exact_coverage(lang, train_lengths, schedule=schedule, within=within)
    te = exact_coverage(lang, test_lengths, schedule=schedule, within=within)
    gap = compare(tr, te)
    summ = gap.summary()
    parts.append(_table([summ], ["train_lengths", "test_lengths", "needed", "covered", "missing"]))
    parts.append(_img(viz.gap_heatmaps(gap), "log10 frequency of EC compositions at training "
                      "and at test lengths, and their ratio (red: needed, never in training)"))
    parts.append(_img(viz.missing_table(gap), "compositions needed at test, absent in training"))
    parts.append(_img(viz.shift_bars(gap), "node-EC distribution shift"))
    tick()
    # --- minimum training length
    parts.append("<h2>Minimum training length</h2>")
    rows = []
    for off in (None, "random"):
        r = min_training_length(lang, test_lengths, schedule=schedule, within=within,
                                offsets=off, delta=0.01,
                                sample_ranges=[train_lengths])
        n = next(iter(r.samples_needed.values()))
        key.setdefault("support_length", {})[off or "none"] = r.support_length
        rows.append({"training offsets": off or "0", "needed": r.needed,
                     "support length": r.support_length or "never (search limit)",
                     f"samples for P(all seen) ≥ 0.99 at {_rng(train_lengths)}":
                         "unreachable" if n == float("inf") else n})
    parts.append(_table(rows, list(rows[0])))
    parts.append("<p class=note>Support length: smallest L such that training lengths "
                 f"{min(train_lengths)}..L show every composition test lengths need. Sample size: "
                 "Poisson approximation on exact expected counts (see docs/coverage.md).</p>")
    tick()
    # --- model
    if checkpoint and loaded is not None:
        parts += _model_section(checkpoint, loaded, test_lengths, probe, umap, n_probe, key)
        tick()
    if bar:
        bar.close()
    parts.append(f"<p class=note>Generated by monoidlab {ml.__version__} in "
                 f"{time.time() - t0:.1f} s.</p>")
    page = (f"<!doctype html><html><head><meta charset=utf-8><title>monoidlab: "
            f"{html.escape(title)}</title><style>{CSS}</style></head><body>"
            + "\n".join(parts) + "</body></html>")
    out = ensure_dir(out_dir, "report folder")
    path = confine(out / f"{slugify(lang.name, 'language')}.html", out, "report file")
    atomic_write_text(path, page)
    key["seconds"] = round(time.time() - t0, 1)
    atomic_write_text(path.with_suffix(".json"), json.dumps(key, indent=2, default=float))
    return path


def _rng(r: Iterable[int]) -> str:
    r = list(r)
    return f"{r[0]}..{r[-1]}"


def _run_evaluation(checkpoint: str | os.PathLike, test_lengths: np.ndarray
                    ) -> Evaluation | None:
    """The strict evaluation a run folder's ``results.json`` holds, when it covers exactly
    ``test_lengths`` (its weights are the ones ``load_checkpoint`` loads from the folder)."""
    from monoidlab.evaluation import Evaluation

    res = Path(checkpoint) / "results.json"
    if not res.is_file():
        return None
    try:
        ev = Evaluation.from_dict(json.loads(res.read_text())["evaluation"])
    except (ValueError, KeyError, TypeError, AttributeError):
        return None  # an older or partial results.json: evaluate afresh
    seen = {L for per in (ev.accuracy, ev.single_class) for k in per for L in per[k]}
    seen |= {L for v in ev.unavailable.values() for L in v}
    return ev if seen == set(test_lengths.tolist()) else None


def _load_matching(checkpoint: str | os.PathLike, lang: Automaton | None, other_language: bool
                   ) -> tuple[Any, Any, Any, dict]:
    """``load_checkpoint(checkpoint)``, refused (before any work) unless its model was trained
    on ``lang`` (None: any) or ``other_language`` allows another language."""
    from monoidlab.training import load_checkpoint

    loaded = load_checkpoint(checkpoint)
    problem = loaded[2]
    if problem.language is None:
        raise InputError(f"checkpoint {checkpoint}: a model of the task {problem.name!r}, not of "
                         "a language; a report shows a language's model")
    if lang is not None and problem.language != lang and not other_language:
        what = (f"trained on another version of the spec {lang.name!r} (the checkpoint carries "
                "the spec it was trained on; the one given now differs)"
                if problem.name == lang.name else
                f"trained on {problem.name!r}, not on {lang.name!r}")
        raise InputError(f"checkpoint {checkpoint}: {what}; report on the run's own language (give no language), "
                         "or show it anyway with other_language=True (labelled with both "
                         "names)")
    return loaded


def _model_section(checkpoint: str | os.PathLike, loaded: tuple[Any, Any, Any, dict],
                   test_lengths: np.ndarray, probe: bool, umap: bool, n_probe: int,
                   key: dict[str, Any]) -> list[str]:
    from monoidlab import viz
    from monoidlab.evaluation import BASELINES
    from monoidlab.min_length import min_training_length
    from monoidlab.sublanguage import resolve_within
    from monoidlab.training import evaluate_kinds

    model, cfg, problem, ckpt = loaded
    padding = cfg.padding
    lang = problem.language  # the report's, unless other_language allowed another
    support = min_training_length(lang, test_lengths, within=resolve_within(lang, "auto"),
                                  padding=padding, offsets=cfg.offsets).support_length
    max_train = cfg.train_lengths.last
    key["model"] = {"model": cfg.model, "steps": ckpt["step"], "padding": padding.value,
                    "offsets": cfg.offsets.mode, "max_train_length": max_train,
                    "support_length": support}
    parts = [f"<h2>Trained model: {html.escape(cfg.model)}</h2>",
             _table([{"checkpoint": str(checkpoint), "steps": ckpt["step"],
                      "train lengths": str(cfg.train_lengths), "sampler": cfg.sampler,
                      "model_options": json.dumps(cfg.model_options.as_dict()),
                      "support length (this model's padding and offsets)":
                          support or "never (search limit)"}],
                    ["checkpoint", "steps", "train lengths", "sampler", "model_options",
                     "support length (this model's padding and offsets)"])]
    ev = _run_evaluation(checkpoint, test_lengths)
    if ev is None:
        lengths = list(test_lengths)
        if len(lengths) > 60:  # a readable curve at report speed: both parities, evenly spread
            lengths = sorted(set(np.linspace(lengths[0], lengths[-1], 48).astype(int).tolist()))
        ev = evaluate_kinds(model, problem, lengths, min(cfg.test_samples, 64), cfg.seed,
                            cfg.eval_kinds, cfg.solved_threshold)
        source = f"evaluated now on {len(lengths)} of the test lengths"
    else:
        source = "the run's own final evaluation (results.json), every test length"
    verdict = ev.verdict()
    key["model"].update(solved=ev.solved, verdict=verdict, paper_score=ev.paper_score,
                        kinds=ev.summary_rows(), evaluation_source=source)
    parts.append(f"<p><b>{html.escape(verdict)}</b></p>")
    parts.append(f"<p class=note>Source: {html.escape(source)}, {ev.n_per_length} strings per "
                 "length and kind.</p>")
    parts.append("<p class=note>Strict evaluation: per test length, three kinds of strings "
                 "drawn exactly from the automaton (paper = the papers' protocol, near_miss = "
                 "one edit away from another class, ec_stratified = every reachable equivalence "
                 "class equally), each beside what a trivial model gets on the same strings. "
                 "Lengths with a single class are shown but never scored. "
                 f"The papers' score (mean over lengths of the {ev.kinds[0]} kind): "
                 f"{ev.paper_score:.3f}.</p>")
    parts.append(_table(ev.summary_rows(), ["kind", "scored_lengths", "single_class_lengths",
                                            "min", "mean", *[b.name for b in BASELINES]]))
    parts.append(_img(viz.kind_accuracy_figure(ev), "accuracy by length and test kind "
                      "(dashed: majority-class baseline, dash-dotted: count-only; hollow: "
                      "single-class lengths, not scored; dotted: the solved threshold)"))
    if probe and problem.language is not None:
        parts += _probe_section(checkpoint, umap, n_probe, key)
    return parts


def _probe_section(checkpoint: str | os.PathLike, umap: bool, n_probe: int,
                   key: dict[str, Any]) -> list[str]:
    """Cluster agreement, linear probe, UMAP and associativity, trained vs initialisation."""
    from monoidlab.probing import probe_checkpoint, summary_tables
    from monoidlab.viz import probing as viz_probing

    res = probe_checkpoint(checkpoint, n_strings=n_probe, n_triples=min(150, n_probe))
    m = res["metrics"]
    parts = ["<h3>Probing the tree-node embeddings</h3>",
             f"<p class=note>Held-out strings: {html.escape(str(m['heldout']['description']))}"
             "</p>"]
    tables = summary_tables(m)
    key["probing"] = {"agreement": tables["agreement"], "probe": tables["probe"],
                      "associativity": tables["associativity"]}
    parts.append(_table(tables["agreement"], ["model", "clustering", "ARI", "NMI", "V",
                                              "purity", "nodes"]))
    parts.append("<p class=note>Linear probe: the EC predicted from a node's embedding (fit on "
                 "half the held-out strings' nodes, scored on the others); chance = the most "
                 "frequent EC.</p>")
    parts.append(_table(tables["probe"], ["model", "accuracy", "train accuracy", "chance"]))
    trained = res["trained"]
    best = next(iter(trained["agreement"].fitted.values()), None)
    if best is not None:
        parts.append(_img(viz_probing.contingency_heatmap(best, res["language"].monoid()),
                          "true EC × cluster (KMeans), trained model"))
    if umap:
        parts.append(_img(viz_probing.umap_figure(trained["embeddings"], max_points=1500),
                          "UMAP of node embeddings, coloured by true EC (the 10 most "
                          "frequent; the rest grey), by class and by level"))
    assoc = m["trained"].get("associativity") or {}
    if "overall" in assoc:
        parts.append("<h3>Associativity on held-out triples</h3>")
        parts.append(f"<p class=note>{html.escape(str(m['triples']['description']))}</p>")
        rows = tables["associativity"]
        parts.append(_table(rows, list(rows[0])))
        parts.append("<p class=note>head_true: the head decodes (x⊙y)⊙z and x⊙(y⊙z) both to "
                     "the class of xyz; head_direct: the model's own prediction on xyz; "
                     "head_same: both bracketings alike (a constant head scores 1); cos/rel_l2: "
                     "distance between the two bracketings, read against roots of unrelated "
                     "triples (cos unrelated); id_rel_l2: x⊙pad against x.</p>")
        init_df = res["init"]["associativity"] if res.get("init") else None
        parts.append(_img(viz_probing.associativity_histograms(trained["associativity"], init_df),
                          "distance between the two bracketings, trained vs initialisation"))
    elif assoc:
        parts.append(f"<p class=note>Associativity: {html.escape(str(assoc))}</p>")
    return parts

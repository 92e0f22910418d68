"""The sections of a report, in page order: each a :class:`Section` whose ``build`` turns the
:class:`Report` (the language, lengths, checkpoint, and the key figures gathered so far) into
HTML parts, adding its own key figures to ``report.key`` for the summary box and the JSON.

A new section is one more entry of :data:`SECTIONS`; ``report.doing(...)`` names what it is
doing in the progress bar (a step that takes long must say so).

Example
-------
>>> [s.name for s in SECTIONS]
['language', 'monoid', 'coverage', 'min-length', 'model', 'probing', 'extraction']
"""

from __future__ import annotations

import base64
import html
import io
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from monoidlab.geometry import Padding, range_text

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from monoidlab.algebra.automaton import Automaton
    from monoidlab.algebra.monoid import SyntacticMonoid
    from monoidlab.evaluation import Evaluation

__all__ = ["Report", "Section", "SECTIONS", "SMALL"]

SMALL = 64  # egg-box and multiplication table only for monoids up to this size
DELTA = 0.01  # sample sizes: P(every needed composition seen) >= 1 - DELTA
# the probing tables' column names where they are terse, as the report shows them
SHOWN_AS = {"cos": "cosine distance", "cos unrelated": "cosine distance, unrelated roots"}


@dataclass
class Report:
    """What the sections read and write: the inputs, and ``key`` (the key figures)."""

    lang: Automaton
    monoid: SyntacticMonoid
    within: Any
    schedule: str
    train_lengths: np.ndarray
    test_lengths: np.ndarray
    lengths_from: str  # "the run's", "given" or "default": said beside the coverage
    checkpoint: Any = None
    loaded: tuple | None = None  # load_checkpoint(checkpoint)
    probe: bool = True
    umap: bool = True
    n_probe: int = 200
    key: dict[str, Any] = field(default_factory=dict)
    doing: Callable[[str], None] = lambda what: None  # the progress bar's label
    evaluation: Any = None  # the model section's Evaluation, for later sections

    @property
    def padding(self) -> Padding:
        """The run's padding with a checkpoint, else the padding of the recipe the report
        recommends training with (:func:`monoidlab.training.config.training_recipe`)."""
        if self.loaded:
            return self.loaded[1].padding
        from monoidlab.training.config import training_recipe

        return Padding.parse(training_recipe()[0]["padding"])


@dataclass(frozen=True)
class Section:
    """One part of the page: ``build(report)`` returns its HTML parts ([] for none)."""

    name: str
    build: Callable[[Report], list[str]]
    needs_model: bool = False


# ------------------------------------------------------------------------------ html pieces
def png(fig: Figure) -> str:
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def img(fig: Figure, alt: str) -> str:
    return f'<figure><img src="{png(fig)}" alt="{html.escape(alt)}"><figcaption>' \
           f'{html.escape(alt)}</figcaption></figure>'


def table(rows: list[dict[str, Any]], cols: list[str]) -> str:
    head = "".join(f"<th>{html.escape(SHOWN_AS.get(c, c))}</th>" for c in cols)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(fmt(r.get(c, '')))}</td>" for c in cols)
                   + "</tr>" for r in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    if isinstance(v, bool):
        return "yes" if v else "no"
    return str(v)


def _rng(r: Any) -> str:
    return range_text(np.asarray(list(r)))


# ------------------------------------------------------------------------------ sections
def language_section(rep: Report) -> list[str]:
    from monoidlab import viz

    lang = rep.lang
    rep.key.update(states=lang.n_states, alphabet=list(lang.alphabet))
    rep.doing("drawing the minimal automaton")
    return ["<h2>Language</h2>", f"<p>{html.escape(lang.description)}</p>",
            table([{"states (minimal)": lang.n_states, "alphabet": " ".join(lang.alphabet),
                    "classes": ", ".join(lang.classes)}],
                  ["states (minimal)", "alphabet", "classes"]),
            img(viz.automaton_figure(lang), "minimal automaton")]


def monoid_section(rep: Report) -> list[str]:
    from monoidlab import viz

    monoid = rep.monoid
    rep.doing("Green's structure of the monoid")
    s = monoid.summary()
    cols = ["size", "idempotents", "r_classes", "l_classes", "h_classes", "j_classes", "group",
            "aperiodic", "commutative", "j_trivial", "r_trivial", "l_trivial"]
    parts = ["<h2>Syntactic monoid</h2>", table([s], cols)]
    if monoid.size <= SMALL:
        parts.append(img(viz.egg_box_figure(monoid), "Green's structure: egg-box diagrams of "
                         "the J-classes (rows R-classes, columns L-classes, * idempotent)"))
        parts.append(img(viz.multiplication_heatmap(monoid), "multiplication table: the row "
                         "(left factor) times the column (right factor)"))
    else:
        parts.append(f"<p class=note>{monoid.size} elements: egg-box diagram and multiplication "
                     f"table are drawn for monoids up to {SMALL} elements.</p>")
    return parts


def coverage_section(rep: Report) -> list[str]:
    from monoidlab import viz
    from monoidlab.coverage.exact import compare, exact_coverage

    tr_txt, te_txt = _rng(rep.train_lengths), _rng(rep.test_lengths)
    rep.key["coverage"] = {"train_lengths": tr_txt, "test_lengths": te_txt,
                           "lengths_from": rep.lengths_from, "padding": rep.padding.value}
    rep.doing(f"exact coverage at training lengths {tr_txt} and test lengths {te_txt}")
    kw = dict(schedule=rep.schedule, within=rep.within, padding=rep.padding)
    gap = compare(exact_coverage(rep.lang, rep.train_lengths, **kw),
                  exact_coverage(rep.lang, rep.test_lengths, **kw))
    summ = gap.summary()
    pad = "" if rep.padding is Padding.LEARNED else f", padding {rep.padding.value}"
    return [f"<h2>EC-composition coverage ({rep.schedule} schedule, exact{pad})</h2>",
            f"<p class=note>Training lengths {tr_txt} and test lengths {te_txt} "
            f"({rep.lengths_from}).</p>",
            table([summ], ["train_lengths", "test_lengths", "needed", "covered", "missing"]),
            img(viz.gap_heatmaps(gap), "log10 frequency of EC compositions at training and at "
                "test lengths, and their ratio (red: needed, never in training); both axes list "
                "the same ECs: those that occur as a left or a right child"),
            img(viz.missing_table(gap), "compositions needed at test, absent in training"),
            img(viz.shift_bars(gap), "node-EC distribution shift")]


def min_length_section(rep: Report) -> list[str]:
    from monoidlab.coverage.min_length import min_training_length

    rows = []
    train = rep.train_lengths
    for off in (None, "random"):
        rep.doing(f"support length and sample size, training offsets {off or 'none'}")
        r = min_training_length(rep.lang, rep.test_lengths, schedule=rep.schedule,
                                within=rep.within, offsets=off, delta=DELTA,
                                sample_ranges=[train], padding=rep.padding)
        n = next(iter(r.samples_needed.values()))
        rep.key.setdefault("support_length", {})[off or "none"] = r.support_length
        if off is None:
            rep.key["sample_size"] = {"n": "unreachable" if n == float("inf") else int(n),
                                      "sampler": r.sampler, "train_lengths": _rng(train),
                                      "delta": DELTA}
            # what the study recommends for the recipe's sampler (a run overrides it)
            from monoidlab.strings.sampling import DEFAULT_SAMPLER
            from monoidlab.training.config import training_recipe

            layout = training_recipe()[0]
            rep.key.setdefault("recommendation", _recommendation(
                r.support_length, layout["sampler"] or DEFAULT_SAMPLER, rep.padding,
                None, min(train), str(layout["model"])))
        rows.append({"training offsets": off or "0", "needed": r.needed,
                     "support length": r.support_length or "never (search limit)",
                     f"samples for P(all seen) ≥ {1 - DELTA:g} at {_rng(train)} ({r.sampler} "
                     "strings)": "unreachable" if n == float("inf") else n})
    return ["<h2>Minimum training length</h2>", table(rows, list(rows[0])),
            "<p class=note>Support length: smallest L such that training lengths "
            f"{min(train)}..L show every composition test lengths need. Sample size: "
            "Poisson approximation on exact expected counts (see docs/coverage.md).</p>"]


def _options_text(cfg: Any, model: Any) -> str:
    """The run's model options; a size left at 0 (auto) is shown as the language set it."""
    given = cfg.model_options.as_dict()
    built = getattr(model, "options", None)
    used = built.as_dict() if built is not None and hasattr(built, "as_dict") else given
    auto = {k: v for k, v in used.items() if given.get(k) != v}
    text = json.dumps(given, ensure_ascii=False)
    if auto:
        text += (" — sized from the language: " + ", ".join(f"{k} = {v}" for k, v in auto.items())
                 + " (states: state_factor × the minimal automaton's state count; codes: 2 × |M|)")
    return text


def model_section(rep: Report) -> list[str]:
    from monoidlab import viz
    from monoidlab.training import evaluate_kinds

    assert rep.loaded is not None
    model, cfg, problem, ckpt = rep.loaded
    rep.doing("support length and sample size for the run's padding, offsets and sampler")
    support, sample = _run_estimates(rep)
    key = rep.key["model"] = {"model": cfg.model, "steps": ckpt["step"],
                              "padding": cfg.padding.value, "offsets": cfg.offsets.mode,
                              "max_train_length": cfg.train_lengths.last,
                              "train_lengths": str(cfg.train_lengths),
                              "test_lengths": _rng(rep.test_lengths),
                              "support_length": support, "sample_size": sample}
    parts = [f"<h2>Trained model: {html.escape(cfg.model)}</h2>",
             table([{"checkpoint": str(rep.checkpoint), "steps": ckpt["step"],
                     "train lengths": str(cfg.train_lengths), "sampler": cfg.sampler,
                     "model_options": _options_text(cfg, model),
                     "support length (this model's padding and offsets)":
                         support or "never (search limit)"}],
                   ["checkpoint", "steps", "train lengths", "sampler", "model_options",
                    "support length (this model's padding and offsets)"])]
    ev = run_evaluation(rep.checkpoint, rep.test_lengths)
    if ev is None:
        lengths = list(rep.test_lengths)
        if len(lengths) > 60:  # a readable curve at report speed: both parities, evenly spread
            lengths = sorted(set(np.linspace(lengths[0], lengths[-1], 48).astype(int).tolist()))
        rep.doing(f"evaluating the model on {len(lengths)} test lengths × "
                  f"{len(cfg.eval_kinds)} kinds")
        ev = evaluate_kinds(model, problem, lengths, min(cfg.test_samples, 64), cfg.seed,
                            cfg.eval_kinds, cfg.solved_threshold)
        source = f"evaluated now on {len(lengths)} of the test lengths"
    else:
        source = "the run's own final evaluation (results.json), every test length"
    rep.evaluation = ev
    from monoidlab.evaluation.kinds import check_kinds, kinds_sentence
    from monoidlab.evaluation.scores import SCORES
    from monoidlab.training.run_state import partial_reason, verdict_line, weights_of

    weights = weights_of(rep.checkpoint, ckpt, cfg)
    run_kinds = check_kinds(cfg.eval_kinds) if problem.language is not None else ev.kinds
    partial = partial_reason(ev, rep.test_lengths, cfg.test_samples, run_kinds,
                             cfg.solved_threshold)
    verdict = verdict_line(ev, partial)
    # a partial check is never 'solved' (None in JSON): the strict verdict is the whole set's
    key.update(solved=None if partial else ev.solved, partial=partial, verdict=verdict,
               **ev.scores(), threshold=ev.threshold, kinds=_kind_rows(ev),
               evaluation_source=source, weights=weights)
    parts += [f"<p>{html.escape(weights['text'])}</p>",
              f"<p><b>{html.escape(verdict)}</b></p>",
              f"<p class=note>Source: {html.escape(source)}, {ev.n_per_length} strings per "
              "length and kind.</p>",
              f"<p class=note>Strict evaluation: per test length, {kinds_sentence()}, each "
              "beside what a trivial model gets on the same strings. Lengths with a single class "
              "are shown but never scored. "
              + " ".join(f"The {s.label} ({s.describe(ev.kinds[0])}): {s.of(ev):.3f}."
                         for s in SCORES) + "</p>",
              table(ev.summary_rows(), ["kind", "scored_lengths", "single_class_lengths", "min",
                                        "mean", *[b.name for b in ev.shown_baselines()]])]
    from monoidlab.evaluation.model_certificate import certify_finite_model, is_finite_model

    if problem.language is not None and is_finite_model(model):
        from monoidlab.errors import MonoidlabError

        rep.doing("certificate: the finite model's table over every length")
        try:
            cert = certify_finite_model(model, problem.language, cfg, source=str(rep.checkpoint))
            key["certificate"] = cert.to_dict()
            shown = cert._repr_html_()
        except MonoidlabError as exc:  # a budget of the certificate: said, the report kept
            key["certificate"] = {"subject": "model", "correct": False,
                                  "verdict": f"not certified: {str(exc).splitlines()[0]}"}
            shown = f"<p>{html.escape(key['certificate']['verdict'])}</p>"
        parts += ["<h3>Certificate: every length</h3>", shown,
                  "<p class=note>The model is a finite table at evaluation; the certificate "
                  "decides it on every string of every length at offset 0 (the tests' layout), "
                  "exactly: a proof, or the shortest string it gets wrong, confirmed by the "
                  "model's own forward pass (docs/probing.md, \"Certificates\").</p>"]
    rep.doing("drawing accuracy by length")
    parts.append(img(viz.kind_accuracy_figure(ev), "accuracy by length, one panel per test "
                     "kind (dashed grey: majority-class baseline, dash-dotted black: count-only "
                     "baseline; hollow: single-class lengths, not scored; dotted: the solved "
                     "threshold)"))
    if not ev.solved and problem.language is not None:
        from monoidlab.training.diagnosis import diagnose

        rep.doing("diagnosis: does the model fit its training lengths, do its wrong strings "
                  "need compositions the training layout never shows at their level")
        d = diagnose(model, cfg, problem, ev, seed=cfg.seed)
        key["diagnosis"] = {"cause": d.cause, "reasons": d.reasons}
        parts += ["<h3>Why it fails: budget, data, depth or training</h3>",
                  "<p class=note>The failing test sets re-drawn (same seed, kind and length): "
                  "the model tested afresh at its training lengths, the wrong strings' "
                  "compositions against what the training layout shows at each tree level "
                  "(exactly; <code>monoidlab evaluate RUN</code> also counts the run's own "
                  "sampled strings), the errors by tree depth.</p>",
                  "<pre>" + html.escape(d.text()) + "</pre>"]
    return parts


def _run_estimates(rep: Report) -> tuple[int | None, dict[str, Any]]:
    """The support length for the run's padding, offsets and the report's test lengths, and
    the sample size for the run's training lengths and sampler (exact coverage computes the
    uniform and balanced laws: another sampler's estimate is for the default, and says so)."""
    from monoidlab.coverage.min_length import min_training_length
    from monoidlab.errors import InputError
    from monoidlab.strings.sampling import DEFAULT_SAMPLER

    assert rep.loaded is not None
    cfg, lang = rep.loaded[1], rep.loaded[2].language  # the model's (other_language: its own)
    sampler = cfg.sampler if cfg.sampler_spec.exact else DEFAULT_SAMPLER
    kw = dict(within=rep.within, padding=cfg.padding, offsets=cfg.offsets)
    sample = {"sampler": sampler, "run_sampler": cfg.sampler,
              "train_lengths": str(cfg.train_lengths), "delta": DELTA, "n": None}
    try:
        r = min_training_length(lang, rep.test_lengths, delta=DELTA, sampler=sampler,
                                sample_ranges=[cfg.train_lengths], **kw)
        n = next(iter(r.samples_needed.values()))
        sample["n"] = "unreachable" if n == float("inf") else int(n)
    except InputError:  # the training layout is beyond exact coverage's work limits
        r = min_training_length(lang, rep.test_lengths, **kw)
    rep.key["recommendation"] = _recommendation(r.support_length, cfg.sampler, cfg.padding,
                                                cfg.offsets, min(cfg.train_lengths), cfg.model)
    return r.support_length, sample


def _recommendation(support: int | None, sampler: str, padding: Any, offsets: Any,
                    train_min: int, model: str = "mlp-ldru") -> dict[str, Any]:
    """The threshold study's recommended length for this layout, sampler and model family
    (the run's: another family's rule is not borrowed), as the key."""
    from monoidlab.coverage.length_rules import recommend
    from monoidlab.geometry import Offsets

    mode = Offsets.parse(offsets).mode
    rec = recommend(support, sampler, padding=str(padding), offsets=mode != "none",
                    train_min=max(int(train_min), 1), model=model)
    return rec.as_dict()


def _kind_rows(ev: Evaluation) -> list[dict[str, Any]]:
    """Evaluation.summary_rows, each with its worst length and how many lengths fall below."""
    rows = ev.summary_rows()
    for row in rows:
        acc = ev.accuracy.get(row["kind"], {})
        row["worst_length"] = min(acc, key=lambda L: acc[L]) if acc else None
        row["lengths_below"] = len(ev.failing_lengths(row["kind"])) if acc else 0
    return rows


def run_evaluation(checkpoint: Any, test_lengths: np.ndarray) -> Evaluation | None:
    """The strict evaluation a run folder's ``results.json`` holds, when it covers exactly
    ``test_lengths`` (its weights are the ones ``load_checkpoint`` loads from the folder)."""
    from pathlib import Path

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


def probing_section(rep: Report) -> list[str]:
    """Cluster agreement, linear probe, UMAP and associativity, trained vs initialisation."""
    from monoidlab.probing import probe_checkpoint, summary_tables
    from monoidlab.viz import probing as viz_probing

    if not rep.probe or rep.loaded is None or rep.loaded[2].language is None:
        return []
    rep.doing(f"probing: node embeddings of {rep.n_probe} held-out strings, trained and at "
              "initialisation (clustering, linear probe, associativity)")
    res = probe_checkpoint(rep.checkpoint, n_strings=rep.n_probe,
                           n_triples=min(150, rep.n_probe))
    m = res["metrics"]
    parts = ["<h3>Probing the tree-node embeddings</h3>",
             f"<p class=note>Held-out strings: {html.escape(str(m['heldout']['description']))}"
             "</p>"]
    tables = summary_tables(m)
    rep.key["probing"] = {"agreement": tables["agreement"], "probe": tables["probe"],
                          "associativity": tables["associativity"]}
    parts.append(table(tables["agreement"], ["model", "clustering", "ARI", "NMI", "V",
                                             "purity", "nodes"]))
    parts.append("<p class=note>Linear probe: the EC predicted from a node's embedding (fit on "
                 "half the held-out strings' nodes, scored on the others); chance = the most "
                 "frequent EC.</p>")
    parts.append(table(tables["probe"], ["model", "accuracy", "train accuracy", "chance"]))
    trained = res["trained"]
    best = next(iter(trained["agreement"].fitted.values()), None)
    if best is not None:
        parts.append(img(viz_probing.contingency_heatmap(best, res["language"].monoid()),
                         "true EC × cluster (KMeans), trained model"))
    if rep.umap:
        n = min(1500, len(trained["embeddings"].meta))
        rep.doing(f"UMAP of {n} node embeddings (umap-learn; its first fit in a process "
                  "compiles numba code: 15-45 s on a shared CPU, --no-umap skips it)")
        parts.append(img(viz_probing.umap_figure(trained["embeddings"], max_points=1500),
                         "UMAP of node embeddings, coloured by true EC (the 10 most frequent; "
                         "the rest grey), by class (in the language's class order) and by "
                         "level"))
    assoc = m["trained"].get("associativity") or {}
    if "overall" in assoc:
        parts.append("<h3>Associativity on held-out triples</h3>")
        parts.append(f"<p class=note>{html.escape(str(m['triples']['description']))}</p>")
        rows = tables["associativity"]
        parts.append(table(rows, list(rows[0])))
        parts.append("<p class=note>head_true: the head decodes (x⊙y)⊙z and x⊙(y⊙z) both to "
                     "the class of xyz; head_direct: the model's own prediction on xyz; "
                     "head_same: both bracketings alike (a constant head scores 1); cosine "
                     "distance / rel_l2: distance between the two bracketings, read against "
                     "roots of unrelated triples (cosine distance, unrelated roots); id_rel_l2: "
                     "x⊙pad against x.</p>")
        init_df = res["init"]["associativity"] if res.get("init") else None
        parts.append(img(viz_probing.associativity_histograms(trained["associativity"], init_df),
                         "distance between the two bracketings: trained (top) and at "
                         "initialisation (bottom), each on its own density axis"))
    elif assoc:
        parts.append(f"<p class=note>Associativity: {html.escape(str(assoc))}</p>")
    return parts


def extraction_section(rep: Report) -> list[str]:
    """What the model computes: the automaton L* extracts from it (every classifier of a
    language) and the finite monoid its operator computes (tree models with an operator)."""
    from monoidlab.errors import MonoidlabError
    from monoidlab.models.protocols import OperatorModel
    from monoidlab.models.registry import model_spec
    from monoidlab.probing.extract_automaton import extract_automaton
    from monoidlab.probing.extract_monoid import extract_monoid
    from monoidlab.probing.extraction_report import extraction_section as fragments

    if not rep.probe or rep.loaded is None or rep.loaded[2].language is None:
        return []
    cfg = rep.loaded[1]
    try:
        rep.doing("extraction: L* with the model as membership oracle (AALpy), test strings "
                  "of every kind as equivalence oracle")
        auto = extract_automaton(rep.checkpoint, max_states=32)
        mon = None
        if model_spec(cfg.model).can(OperatorModel):
            rep.doing("extraction: the operator table on clusters of node states")
            mon = extract_monoid(rep.checkpoint, n_strings=1000, progress=rep.doing)
    except MonoidlabError as exc:  # e.g. aalpy missing: the page says so, the rest stands
        return ["<h3>What the model computes</h3>",
                f"<p class=note>Extraction not done: {html.escape(str(exc))}</p>"]
    parts, figures = fragments(auto, mon)
    rep.key["extraction"] = {"automaton_isomorphic": auto.comparison.isomorphic,
                             "automaton_states": auto.automaton.n_states}
    if mon is not None:
        rep.key["extraction"].update(monoid_k=mon.k, monoid_closed=mon.closed,
                                     monoid_isomorphic=mon.comparison.isomorphic)
    return parts + [img(fig, caption) for fig, caption in figures]


SECTIONS: tuple[Section, ...] = (
    Section("language", language_section),
    Section("monoid", monoid_section),
    Section("coverage", coverage_section),
    Section("min-length", min_length_section),
    Section("model", model_section, needs_model=True),
    Section("probing", probing_section, needs_model=True),
    Section("extraction", extraction_section, needs_model=True),
)

"""The summary box that opens a report: what a reader needs before scrolling, read from the
report's key figures (the same dict as ``OUT/<language>.json``, so page and file agree).

The box holds the language (states, alphabet), the monoid's size, the support length and the
sample-size estimate (with the sampler named), a recommended training length when one is given
(monoidlab makes none yet: the box says so rather than invent one), the strict verdict with each
test kind beside its baselines, and the probing headline.

Example
-------
>>> key = {"language": "parity", "states": 2, "alphabet": ["0", "1"], "monoid_size": 2,
...        "support_length": {"none": 2}, "coverage": {"train_lengths": "1:8",
...        "test_lengths": "30:32"}}
>>> box = summary_box(key)
>>> box.startswith('<section id="summary"'), "no model" in box
(True, True)
"""

from __future__ import annotations

import html
from typing import Any

from monoidlab.coverage.exact import EXACT_SAMPLERS
from monoidlab.evaluation import scores as run_scores

__all__ = ["summary_box", "probing_headline", "sample_text", "SUMMARY_CSS"]

SUMMARY_CSS = """.summary{display:flex;flex-wrap:wrap;gap:1em;border:2px solid #888;
border-radius:6px;padding:.6em 1em;margin:.5em 0 1em;background:#f7f7f7}.summary>div{flex:1 1 430px}
.summary table{margin:.2em 0}.summary td,.summary th{font-size:.88em}.summary .verdict{font-size:1.15em;
font-weight:bold;margin:.1em 0 .3em}.solved{color:#1a7f37}.unsolved{color:#b3261e}.partial{color:#9a6700}
.beats{background:#fde2e1}.summary p{margin:.3em 0;font-size:.9em}"""


def summary_box(key: dict[str, Any], recommended_length: int | None = None,
                recommended_sampler: str | None = None) -> str:
    """The box as HTML (``<section id="summary">``, its verdict in ``id="verdict"``).

    ``recommended_length`` (with the sampler it is for) is shown when given; without it the
    box says that no recommendation is made, beside the support length (a lower bound: training
    must at least show every composition the test needs).
    """
    e = html.escape
    m = key.get("model")
    cov = key.get("coverage", {})
    rows = [("language", f"{key['language']}: {key.get('states', '?')} states, alphabet "
                         f"{{{', '.join(key.get('alphabet', []))}}}"),
            ("monoid", f"{key['monoid_size']} elements")]
    if m:
        sup = m["support_length"]
        where = (f"padding {m['padding']}, offsets {m['offsets']} (the run's), test lengths "
                 f"{m.get('test_lengths', cov.get('test_lengths', '?'))}")
        shown = "never (search limit)" if sup is None else str(sup)
        if sup is not None:
            shown += (" — the run's training lengths up to "
                      f"{m['max_train_length']} " + ("show every needed composition"
                                                     if sup <= m["max_train_length"] else
                                                     "miss needed compositions"))
        rows.append(("support length", f"{shown} ({where})"))
        rows.append(("sample size", sample_text(m.get("sample_size"))))
    else:
        sup = key.get("support_length", {}).get("none")
        rows.append(("support length", f"{'never (search limit)' if sup is None else sup} "
                                       f"(learned padding, no offsets, test lengths "
                                       f"{cov.get('test_lengths', '?')})"))
        if key.get("sample_size"):
            rows.append(("sample size", sample_text(key["sample_size"])))
    rec = key.get("recommendation") or {}
    if recommended_length is not None:
        rows.append(("recommended length", f"{recommended_length}"
                     + (f" ({recommended_sampler} sampler)" if recommended_sampler else "")))
    elif rec.get("length") is not None:
        rows.append(("recommended length", f"{rec['length']} (model "
                                           f"{rec.get('model', 'mlp-ldru')}, "
                                           f"{rec['sampler']} sampler, "
                                           f"{rec['samples']:,} strings): {rec['basis']}"))
    else:
        rows.append(("recommended length", "none: " + (rec.get("basis") or "no rule given")
                     + " (the support length is the least training must reach)"))
    if key.get("recipe"):
        refusal = key["recipe"].get("refusal")
        rows.append(("training recipe", key["recipe"]["basis"] + (
            f"; it refuses {key.get('language', 'this language')} before training: {refusal}"
            if refusal else "")))
    facts = "".join(f"<tr><th>{e(a)}</th><td>{e(b)}</td></tr>" for a, b in rows)
    left = f"<div><table>{facts}</table></div>"
    return (f'<section id="summary" class="summary">{left}'
            f'<div id="verdict">{_verdict_html(m)}{_probing_html(key.get("probing"))}'
            f'{"".join(f"<p>{e(x)}</p>" for x in extraction_headline(key.get("extraction")))}'
            f'{_diagnosis_html(key.get("model", {}).get("diagnosis"))}'
            '</div>'
            "</section>")


def sample_text(s: dict[str, Any] | None) -> str:
    """The sample-size estimate in words, naming its sampler (and the run's, where they differ).

    >>> sample_text({"n": 120, "delta": 0.01, "train_lengths": "1:16", "sampler": "balanced",
    ...              "run_sampler": "balanced"})
    '120 strings for P(every needed composition seen) ≥ 0.99 at training lengths 1:16, balanced sampler'
    """
    if not s:
        return "not estimated"
    n = s.get("n")
    head = ("unreachable (a needed composition has probability 0)" if n == "unreachable" else
            "beyond the work limits" if n is None else f"{n:,} strings")
    text = (f"{head} for P(every needed composition seen) ≥ {1 - s['delta']:g} at training "
            f"lengths {s['train_lengths']}, {s['sampler']} sampler")
    run = s.get("run_sampler")
    if run and run != s["sampler"]:
        text += (f" (the run drew {run} strings; the estimate computes "
                 f"{' and '.join(EXACT_SAMPLERS)} strings only, so it is for {s['sampler']} "
                 "instead)")
    return text


def _verdict_html(m: dict[str, Any] | None) -> str:
    e = html.escape
    if not m:
        return ('<p class="verdict">no model: give a checkpoint (report --checkpoint RUN) for '
                "the strict verdict</p>")
    weights = (m.get("weights") or {}).get("text")
    if m.get("partial"):  # a check on part of the test set: never green, said first
        out = [f'<p class="verdict partial">PARTIAL CHECK, not the strict verdict '
               f'({e(m["partial"])}); {e(m["model"])}, step {m["steps"]}</p>',
               f'<p>{e(m["verdict"])}</p>']
    else:
        cls = "solved" if m["solved"] else "unsolved"
        word = "SOLVED" if m["solved"] else "NOT SOLVED"
        out = [f'<p class="verdict {cls}">{word} (strict: every scored length of every kind '
               f'at ≥ {m.get("threshold", 0.99):g}); {e(m["model"])}, step {m["steps"]}</p>']
    if weights:
        out.append(f"<p>{e(weights)}</p>")
    cert = m.get("certificate")
    if cert:  # a finite model: the exact verdict over every length, beside the strict one
        ccls = "solved" if cert.get("correct") else "unsolved"
        out.append(f'<p class="{ccls}">{e(cert["verdict"])}</p>')
    names = [c for c in ("majority", "count_only") if any(c in r for r in m["kinds"])]
    names += [c for r in m["kinds"] for c in r if c not in _ROW_KEYS and c not in names]
    head = "".join(f"<th>{e(h)}</th>" for h in
                   ["kind", "min (at length)", "mean", *[f"{n} (mean)" for n in names],
                    "lengths below"])
    body = []
    for r in m["kinds"]:
        cells = [e(r["kind"]), f"{_f(r['min'])}" + (f" ({r['worst_length']})"
                                                    if r.get("worst_length") else ""),
                 _f(r["mean"])]
        for n in names:
            v = r.get(n)
            beats = isinstance(v, float) and isinstance(r["mean"], float) and v >= r["mean"]
            cells.append(f'<span class="beats">{_f(v)}</span>' if beats else _f(v))
        cells.append(f"{r.get('lengths_below', '?')} of {r['scored_lengths']}")
        body.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    out.append(f"<table><tr>{head}</tr>{''.join(body)}</table>")
    if any(isinstance(r.get(n), float) and isinstance(r["mean"], float) and r[n] >= r["mean"]
           for r in m["kinds"] for n in names):
        out.append('<p><span class="beats">shaded</span>: a trivial baseline scores at least '
                   "the model's mean on these strings</p>")
    first = m["kinds"][0]["kind"] if m["kinds"] else "first"
    out.append("<p>" + "".join(f"{html.escape(s.label, quote=False)} ({e(s.describe(first))}) {_f(m.get(s.name))}; "
                               for s in run_scores.SCORES) + f"{e(m['evaluation_source'])}</p>")
    return "".join(out)


_ROW_KEYS = {"kind", "scored_lengths", "single_class_lengths", "min", "mean", "worst_length",
             "lengths_below"}


def _probing_html(p: dict[str, Any] | None) -> str:
    lines = probing_headline(p)
    return "".join(f"<p>{html.escape(x)}</p>" for x in lines)


def probing_headline(p: dict[str, Any] | None) -> list[str]:
    """The probing results in up to three lines, each number beside its references (what the
    box shows and ``monoidlab demo`` prints).

    >>> probing_headline({"agreement": [{"model": "trained", "ARI": 0.9},
    ...                                 {"model": "init", "ARI": 0.1}],
    ...                   "probe": [], "associativity": []})
    ['probing: KMeans ARI of node embeddings vs true ECs: trained 0.900, at initialisation 0.100, shuffled -']
    """
    if not p:
        return []

    def cell(table: str, model: str, col: str) -> str:
        r = next((r for r in p.get(table, []) if str(r["model"]).startswith(model)), None)
        return "-" if r is None or r.get(col) in ("", None) else _f(r[col])

    out = [f"probing: KMeans ARI of node embeddings vs true ECs: trained "
           f"{cell('agreement', 'trained', 'ARI')}, at initialisation "
           f"{cell('agreement', 'init', 'ARI')}, shuffled {cell('agreement', 'chance', 'ARI')}"]
    if p.get("probe"):
        out.append(f"linear probe accuracy: trained {cell('probe', 'trained', 'accuracy')}, at "
                   f"initialisation {cell('probe', 'init', 'accuracy')}, most frequent EC "
                   f"{cell('probe', 'trained', 'chance')}")
    if p.get("associativity"):
        out.append(f"associativity head_true: trained "
                   f"{cell('associativity', 'trained', 'head_true')}, at initialisation "
                   f"{cell('associativity', 'init', 'head_true')}, constant head "
                   f"{cell('associativity', 'constant', 'head_true')}")
    return out


def _diagnosis_html(d: dict[str, Any] | None) -> str:
    """The diagnosis of a failed run: its cause and first reason."""
    if not d:
        return ""
    first = d["reasons"][0] if d["reasons"] else ""
    return f"<p><b>diagnosis: {html.escape(d['cause'])}</b> ({html.escape(first)})</p>"


def extraction_headline(x: dict[str, Any] | None) -> list[str]:
    """One line on what L* extracted from the model (and the operator's table, if any).

    >>> extraction_headline({"automaton_isomorphic": True, "automaton_states": 4,
    ...                      "monoid_k": 3, "monoid_closed": False, "monoid_isomorphic": False})
    ['extracted automaton: 4 states, isomorphic to the true one; operator table: not closed at any k (k = 3 shown), not the syntactic monoid']
    """
    if not x:
        return []
    line = (f"extracted automaton: {x['automaton_states']} states, "
            f"{'isomorphic to' if x['automaton_isomorphic'] else 'differs from'} the true one")
    if "monoid_k" in x:
        closed = (f"closed at k = {x['monoid_k']}" if x["monoid_closed"] else
                  f"not closed at any k (k = {x['monoid_k']} shown)")
        line += (f"; operator table: {closed}, "
                 f"{'isomorphic to' if x['monoid_isomorphic'] else 'not'} the syntactic monoid")
    return [line]


def _f(v: Any) -> str:
    return f"{v:.3f}" if isinstance(v, float) else "-" if v is None else str(v)

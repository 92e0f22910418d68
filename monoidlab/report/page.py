"""``build_report``: run the sections, put the summary box first, write the page and its JSON.

Example
-------
>>> import tempfile, pathlib
>>> out = pathlib.Path(tempfile.mkdtemp())
>>> page = build_report("parity", out, train_lengths=range(1, 9), test_lengths=range(30, 33))
>>> text = page.read_text()
>>> text.index('id="summary"') < text.index("<h2>")
True
"""

from __future__ import annotations

import html
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from monoidlab._checks import scalar_args
from monoidlab._paths import check_output_dir, confine, ensure_dir, refuse_clobber, slugify
from monoidlab._util import atomic_write_json, atomic_write_text
from monoidlab.algebra.automaton import Automaton
from monoidlab.errors import InputError
from monoidlab.geometry import Lengths, LengthsLike, length_array, range_text
from monoidlab.report.sections import SECTIONS, Report, Section
from monoidlab.report.summary import SUMMARY_CSS, summary_box

__all__ = ["build_report", "CSS"]

CSS = """body{font-family:system-ui,sans-serif;max-width:1100px;margin:1em auto;padding:0 1em;
color:#222}h1{font-size:1.5em;margin:.3em 0}h2{border-bottom:1px solid #ccc;padding-bottom:.2em;
margin-top:2em}table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;
padding:2px 8px;font-size:.9em}th{text-align:left}figure{margin:1em 0}img{max-width:100%}
figcaption{font-size:.85em;color:#555}.note{color:#555;font-size:.9em}
nav.index{font-size:.9em;margin:.8em 0}nav.index a{margin-right:1em;white-space:nowrap}""" + SUMMARY_CSS

DEFAULT_TRAIN = Lengths(1, 40)  # without a checkpoint: the papers' training lengths
DEFAULT_TEST = Lengths(41, 500)


def _recipe_for(lang: Any, test: Any) -> dict:
    """The recommended recipe, and whether it refuses ``lang`` at the test lengths ``test``
    before training (``refusal``: the trainer's message, or None)."""
    from monoidlab.training.config import training_recipe
    from monoidlab.training.problems import recipe_refusal

    advice = training_recipe()[1]  # for the model `monoidlab train --language` trains
    refusal = (recipe_refusal(lang, range_text(test), model=advice["model"]) if advice["recipe"]
               else None)
    return {**advice, "refusal": refusal}


def _section_index(parts: list[str]) -> tuple[list[str], str]:
    """Every section heading given an anchor, and the index of links to them that opens the
    page under the summary box (a long page is read by jumping, not by scrolling).

    >>> parts, nav = _section_index(["<h2>Language</h2>", "<p>x</p>", "<h2>Model</h2>"])
    >>> parts[2], nav.count("href")
    ('<a id="s2"></a><h2>Model</h2>', 2)
    """
    import re

    titles = []
    out = []
    for part in parts:
        def anchor(m: re.Match) -> str:
            titles.append(m.group(1))
            return f'<a id="s{len(titles)}"></a><h2>{m.group(1)}</h2>'
        out.append(re.sub(r"<h2>(.*?)</h2>", anchor, part))
    links = "".join(f'<a href="#s{i}">{t}</a>' for i, t in enumerate(titles, 1))
    return out, f'<nav class=index>Sections: {links}</nav>' if titles else ""


@scalar_args
def build_report(language: str | Automaton | None, out_dir: str | os.PathLike, *,
                 checkpoint: str | os.PathLike | None = None,
                 train_lengths: LengthsLike | None = None,
                 test_lengths: LengthsLike | None = None, schedule: str = "balanced",
                 probe: bool = True, umap: bool = True, n_probe: int = 200,
                 progress: bool = False, other_language: bool = False,
                 recommended_length: int | None = None,
                 recommended_sampler: str | None = None,
                 sections: Sequence[Section] = SECTIONS, overwrite: bool = False) -> Path:
    """Write ``OUT/<language>.html`` and return its path.

    The page opens with a summary box (language, monoid size, support length and sample size
    with the sampler named, the strict verdict per kind beside its baselines, the probing
    headline), then ``sections`` in order. Beside it, ``OUT/<language>.json`` holds the key
    figures the box shows: what ``monoidlab demo`` prints.

    ``train_lengths`` / ``test_lengths`` default to the run's own (its config) with a
    checkpoint, else to 1:40 and 41:500; with a checkpoint the coverage and minimum-length
    sections also use the run's padding. ``recommended_length`` (and the sampler it is for)
    goes in the box when given; otherwise the box shows the tool's own recommendation (the
    threshold study's rule, ``key["recommendation"]``), and the JSON's ``recommended_length``
    is that length (null only when no rule names one).

    The file names are a slug of the language's name (a spec's ``name`` may hold any text),
    and ``out_dir`` is checked before any work (:func:`monoidlab._paths.check_output_dir`).
    An existing page or key file of that name is refused unless ``overwrite=True`` (it may be
    the only copy of another checkpoint's report); the files are written atomically.

    A ``checkpoint`` must have been trained on ``language`` (the same minimal automaton; its
    name may differ): a page about one language must not show the model of another. With
    ``other_language=True`` it is shown anyway, and the title names both languages.
    ``language=None`` reports the checkpoint's own language (the spec its run carries).
    ``progress`` shows a bar that names what each step is doing.
    """
    import monoidlab as ml
    from monoidlab.sublanguage import resolve_within

    t0 = time.time()
    check_output_dir(out_dir, "report folder")  # before minutes of work, not after
    if recommended_length is not None and (isinstance(recommended_length, bool) or
                                           not isinstance(recommended_length, int)
                                           or recommended_length < 1):
        raise InputError(f"recommended_length: a positive integer or None, got "
                         f"{recommended_length!r}"[:200])
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
    # an existing page may be the user's only copy (another checkpoint's report, say): it is
    # replaced only when asked; a link there would send the page elsewhere and is refused
    refuse_clobber([Path(out_dir) / f"{slugify(lang.name, 'language')}{suffix}"
                    for suffix in (".html", ".json")], "report file", overwrite,
                   "overwrite=True")
    if checkpoint and loaded is None:
        loaded = _load_matching(checkpoint, lang, other_language)
    cfg = loaded[1] if loaded else None
    lengths_from = "given" if train_lengths is not None else "the run's" if cfg else "default"
    train = length_array(train_lengths if train_lengths is not None else
                         cfg.train_lengths if cfg else DEFAULT_TRAIN, "train_lengths")
    test = length_array(test_lengths if test_lengths is not None else
                        cfg.test_lengths if cfg else DEFAULT_TEST, "test_lengths")
    rep = Report(lang, lang.monoid(), resolve_within(lang, "auto"), schedule, train, test,
                 lengths_from, checkpoint, loaded, probe, umap, n_probe,
                 key={"language": lang.name, "monoid_size": lang.monoid().size,
                      "checkpoint": None if checkpoint is None else str(checkpoint),
                      "recommended_length": recommended_length,
                      "recipe": _recipe_for(lang, test)})
    title = lang.name
    if loaded is not None and loaded[2].language != lang:
        title = f"{lang.name} (model trained on {loaded[2].name})"
        rep.key["model_language"] = loaded[2].name
    todo = [s for s in sections if loaded is not None or not s.needs_model]
    parts = _run_sections(rep, todo, progress)
    rec = rep.key.get("recommendation") or {}
    if recommended_length is None and rec.get("length") is not None:
        # one recommendation in the JSON: the length the box shows, from the tool's rule
        rep.key["recommended_length"] = rec["length"]
    parts, index = _section_index(parts)
    head = [f"<h1>monoidlab report: {html.escape(title)}</h1>",
            summary_box(rep.key, recommended_length, recommended_sampler), index]
    parts.append(f"<p class=note>Generated by monoidlab {ml.__version__} in "
                 f"{time.time() - t0:.1f} s.</p>")
    page = (f"<!doctype html><html><head><meta charset=utf-8><title>monoidlab: "
            f"{html.escape(title)}</title><style>{CSS}</style></head><body>"
            + "\n".join(head + parts) + "</body></html>")
    out = ensure_dir(out_dir, "report folder")
    path = confine(out / f"{slugify(lang.name, 'language')}.html", out, "report file")
    atomic_write_text(path, page)
    rep.key["seconds"] = round(time.time() - t0, 1)
    atomic_write_json(path.with_suffix(".json"), rep.key, default=float)
    return path


def _run_sections(rep: Report, todo: Sequence[Section], progress: bool) -> list[str]:
    """Every section's parts in order, under a bar whose label says what is being done."""
    bar = None
    if progress:
        from monoidlab._util import progress_bar

        bar = progress_bar(total=len(todo), desc="report")

        def doing(what: str) -> None:
            bar.set_description_str(f"report: {what}")

        rep.doing = doing
    parts: list[str] = []
    try:
        for section in todo:
            rep.doing(section.name)
            parts += section.build(rep)
            if bar is not None:
                bar.update(1)
        if bar is not None:
            bar.set_description_str("report: done")
    finally:
        if bar is not None:
            bar.close()
    return parts


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
        raise InputError(f"checkpoint {checkpoint}: {what}; report on the run's own language "
                         "(give no language), or show it anyway with other_language=True "
                         "(labelled with both names)")
    return loaded

"""Notebook views: every result object a notebook shows has a short repr (never its arrays)
and an HTML view that leads with that line (or the verdict) over a small table, escaped."""

import html

import pytest

import monoidlab as ml
from monoidlab.evaluation import Evaluation


def _objects():
    lang = ml.load_language("dyck-2")
    batch = ml.sample(lang, range(2, 9), 30, seed=0)
    test = ml.sample(lang, range(20, 24), 30, seed=1)
    ev = Evaluation("dyck-2", ("paper", "near_miss"), 0.99, 8,
                    accuracy={"paper": {L: 1.0 for L in range(41, 141)},
                              "near_miss": {L: 0.5 if L == 77 else 1.0 for L in range(41, 141)}})
    return {"batch": batch, "coverage": ml.exact_coverage(lang, range(1, 6)),
            "gap": ml.coverage_gap(lang, batch, test),
            "min_length": ml.min_training_length(lang, [40], sample_ranges=[range(1, 13)],
                                                 delta=0.01),
            "evaluation": ev}


@pytest.mark.parametrize("name", ["batch", "coverage", "gap", "min_length", "evaluation"])
def test_short_repr_and_an_html_view(name):
    obj = _objects()[name]
    line = repr(obj)
    assert "\n" not in line and len(line) < 400 and "array(" not in line and "{" not in line
    view = obj._repr_html_()
    assert view.startswith("<div><p><b") and "<table>" in view
    if name == "gap":  # compositions missing: red, never green
        assert "color:#b3261e" in view
    head = obj.verdict() if name == "evaluation" else line
    assert html.escape(head) in view


def test_printing_an_evaluation_shows_its_verdict_not_its_dicts():
    ev = _objects()["evaluation"]
    text = str(ev)
    assert "near_miss 0.500 at length 77" in text and "100 scored lengths" in text
    assert "{" not in text and "\n" not in text
    assert "color:#b3261e" in ev._repr_html_()  # not solved: red, never green


def test_html_views_escape_what_they_show():
    from monoidlab._html import html_table, html_view

    assert html_view("<img src=x onerror=alert(1)>") == (
        "<div><p><b>&lt;img src=x onerror=alert(1)&gt;</b></p></div>")

    assert html_table([{"a": "<script>"}], ["a"]) == (
        "<table><tr><th>a</th></tr><tr><td>&lt;script&gt;</td></tr></table>")


"""A model's certificate: correct at every length (a proof), or its shortest counterexample.

A *finite* model (one that declares :class:`~monoidlab.models.protocols.FiniteModel`: the
snapped MLP-LDRU, the transformation tree model) is, in eval mode, a finite table whose fold
over the balanced tree equals its forward pass; :func:`~monoidlab.evaluation.certificate.certify_table`
decides that table exactly, and a counterexample is run once more through the model's own
forward pass (:func:`certify_finite_model`). The verdict is then about the model itself; the
trainer records it in a finite model's results.json.

A *continuous* tree model has no finite table: :func:`monoidlab.probing.certify.certify`
certifies the table extract_monoid reads off its node states instead, as a
:class:`ModelCertificate` whose ``subject`` is ``"surrogate"``, with how often the surrogate
and the model agree on the run's strict test strings.

Example
-------
>>> import monoidlab as ml
>>> from monoidlab.models.snap import SnappedMLPLDRU
>>> import torch; _ = torch.manual_seed(0)
>>> model = SnappedMLPLDRU(2, 2, d=8, codes=4)          # untrained: wrong somewhere
>>> c = certify_finite_model(model, ml.load_language("parity"))
>>> c.subject, c.certificate.correct, c.confirmed
('model', False, True)
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Any

import numpy as np

from monoidlab.evaluation.certificate import Certificate, certify_table

__all__ = ["ModelCertificate", "certify_finite_model", "certify_model_exactly", "run_within",
           "both_scopes", "finite_classifier", "finite_table_of", "is_finite_model", "agreement",
           "confirm"]

#: strings per kind and length on which a surrogate is compared with its model
AGREEMENT_SAMPLES = 32
#: about every how many test lengths the comparison takes one (the run's test lengths are 460)
AGREEMENT_STRIDE = 10


@dataclass(frozen=True)
class ModelCertificate:
    """A model's certificate.

    ``subject``: ``"model"`` (the model's own finite table: the proof is about the model) or
    ``"surrogate"`` (the table extract_monoid built from a continuous model's node states:
    the proof is about that table only). ``certificate``: the exact verdict on that table.
    ``confirmed``: a counterexample, re-run through the model's own forward pass, is misread
    by the model too (True when correct: nothing to confirm). ``agreement``: the fraction of
    ``agreement_strings`` test strings on which the table's fold and the model agree (1.0
    for a finite model, checked, not assumed). ``source``: the run or model certified.
    ``all_strings``: when ``certificate`` is about a sub-language (the run's ``within``:
    modular arithmetic's well-formed expressions), the verdict over every string beside it.
    """

    subject: str
    certificate: Certificate
    confirmed: bool
    agreement: float
    agreement_strings: int
    source: str
    model: str
    all_strings: Certificate | None = None

    @property
    def correct(self) -> bool:
        """Proved correct at every length, about the model itself."""
        return self.subject == "model" and self.certificate.correct

    def to_dict(self) -> dict[str, Any]:
        """Plain values (JSON); ``verdict`` is the one-line text."""
        d = {"subject": self.subject, "correct": self.correct, "confirmed": self.confirmed,
             "agreement": self.agreement, "agreement_strings": self.agreement_strings,
             "source": self.source, "model": self.model, "verdict": self.text(),
             "certificate": self.certificate.to_dict()}
        if self.all_strings is not None:
            d["all_strings"] = self.all_strings.to_dict()
        return d

    def text(self) -> str:
        """One or two lines: what was certified, and the verdict."""
        c = self.certificate
        if self.subject == "model":
            layout = ("prefix-scan layout" if c.layout == "scan" else f"{c.padding} padding"
                      f"{', every offset' if c.offsets else ''}")
            unit = "states, as an automaton: any layout" if c.layout == "automaton" else "codes"
            head = (f"certificate of {self.model} ({c.n_codes} {unit}): "
                    if c.layout == "automaton" else
                    f"certificate of {self.model} ({c.n_codes} {unit}, {layout}): ")
            tail = "" if c.correct or self.confirmed else (
                " [NOT confirmed by the model's forward pass: the table is not the model]")
            return head + c.text() + tail + self._all_strings_text()
        return (f"certificate of a SURROGATE of {self.model}, not of the model: the table "
                f"extract_monoid built on {c.n_codes} clusters of its node states, which agrees "
                f"with the model on {self.agreement:.3f} of {self.agreement_strings} test "
                f"strings; the table is " + c.text() + self._all_strings_text())

    def _all_strings_text(self) -> str:
        a = self.all_strings
        return "" if a is None else f"; over every string: {a.text()}"

    def __str__(self) -> str:
        return self.text()

    def _repr_html_(self) -> str:
        colour = "#1a7f37" if self.correct else "#b42318"
        return (f"<div style='border-left:4px solid {colour};padding-left:8px'>"
                f"<b>{'CORRECT AT EVERY LENGTH' if self.correct else 'not certified'}</b>"
                f"<br>{html.escape(self.text())}</div>")


def is_finite_model(model: Any) -> bool:
    """Whether the model is finite at evaluation (has ``finite_table()``), without building
    the table (a large learned automaton's would exceed its budget)."""
    from monoidlab.models.protocols import FiniteModel

    return isinstance(model, FiniteModel)


def run_within(config: Any, within: Any) -> Any:
    """``within`` as the certifiers take it: ``"run"`` is the run's own sub-language (its
    config's ``within``; ``"auto"`` without a config, training's default), else as given.

    >>> run_within(None, "run"), run_within(None, None)
    ('auto', None)
    """
    if isinstance(within, str) and within == "run":
        return config.within if config is not None else "auto"
    return within


def certify_model_exactly(model: Any, lang: Any, offsets: bool = False,
                          within: Any = None) -> Certificate:
    """The exact certificate of a finite model in eval mode: as its learned automaton when it
    is one (``learned_automaton()``), else of its finite table; ``within`` as
    :func:`~monoidlab.evaluation.certificate.certify_table`'s (None: every string)."""
    from monoidlab._util import eval_mode

    with eval_mode(model):
        if callable(getattr(model, "learned_automaton", None)):
            from monoidlab.evaluation.automaton_certificate import certify_automaton

            dfa = model.learned_automaton()
            return certify_automaton(dfa.delta, dfa.output, dfa.start, lang, within=within)
        return certify_table(model.finite_table(), lang, offsets=offsets, within=within)


def both_scopes(certify_one: Any, lang: Any, within: Any) -> tuple[Certificate,
                                                                   Certificate | None]:
    """``(certificate on the sub-language, certificate over every string or None)``: the
    second only when ``within`` restricts the strings, so a reader sees both claims.
    ``certify_one(within)`` certifies one scope."""
    from monoidlab.sublanguage import resolve_within

    if resolve_within(lang, within) is None:
        return certify_one(None), None
    return certify_one(within), certify_one(None)


def finite_classifier(model: Any) -> Any:
    """``classes(tokens, lengths)`` of a finite model without torch: its learned automaton's
    run, or its table's fold."""
    from monoidlab._util import eval_mode

    with eval_mode(model):
        if callable(getattr(model, "learned_automaton", None)):
            return model.learned_automaton().classify
        return model.finite_table().fold


def finite_table_of(model: Any) -> Any:
    """The model's finite table, if it is a finite model (else None)."""
    from monoidlab.models.protocols import FiniteModel

    return model.finite_table() if isinstance(model, FiniteModel) else None


def _test_strings(lang: Any, config: Any, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """A spread of the run's strict test strings: about every ``AGREEMENT_STRIDE``-th test length,
    each kind, ``AGREEMENT_SAMPLES`` strings (41..500 for a bare model)."""
    from monoidlab.evaluation.kinds import KINDS, check_kinds, kind_batch, lengths_with_strings
    from monoidlab.sublanguage import resolve_within

    within = resolve_within(lang, run_within(config, "run"))
    # the lengths the strict test scores: those with a string of the sub-language (a
    # well-formed expression has an odd length; an even one has no string to draw)
    lengths = lengths_with_strings(
        lang, config.test_lengths if config is not None else range(41, 501), within)
    kinds = check_kinds(config.eval_kinds) if config is not None else KINDS
    toks, lens = [], []
    # evenly spread, both parities (every 10th of 41..500 would be odd only: a Dyck language
    # has one class there)
    pick = np.unique(np.linspace(0, len(lengths) - 1,
                                 max(1, len(lengths) // AGREEMENT_STRIDE) + 1).astype(int))
    for i, L in enumerate(lengths[pick]):
        for j, kind in enumerate(kinds):
            rng = np.random.default_rng([seed, 31_337, i, j])
            b = kind_batch(lang, kind, int(L), AGREEMENT_SAMPLES, rng, within)
            if not len(b.lengths):  # no string of this kind at this length
                continue
            toks.append(np.asarray(b.tokens, np.int64))
            lens.append(np.asarray(b.lengths, np.int64))
    width = max(t.shape[1] for t in toks)
    tokens = np.zeros((sum(len(t) for t in toks), width), np.int64)
    row = 0
    for t in toks:
        tokens[row:row + len(t), : t.shape[1]] = t
        row += len(t)
    return tokens, np.concatenate(lens)


def _model_classes(model: Any, tokens: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The model's class of each string (eval mode, no grad, one length group at a time)."""
    import torch

    from monoidlab._util import eval_mode

    p = next(iter(model.parameters()), None)
    dev = p.device if p is not None else torch.device("cpu")
    out = np.empty(len(lengths), np.int64)
    with eval_mode(model), torch.no_grad():
        for L in np.unique(lengths):
            rows = np.flatnonzero(lengths == L)
            t = torch.as_tensor(tokens[rows, :L], device=dev)
            n = torch.as_tensor(lengths[rows], device=dev)
            out[rows] = model(t, n).argmax(-1).cpu().numpy()
    return out


def agreement(model: Any, table: Any, lang: Any, config: Any = None, seed: int = 0
              ) -> tuple[float, int]:
    """``(fraction, strings)``: how often ``table``'s fold and the model agree on a spread of
    the run's strict test strings (:func:`_test_strings`)."""
    tokens, lengths = _test_strings(lang, config, seed)
    read = table.fold if hasattr(table, "fold") else table.classify  # a table, or a DFA
    same = _model_classes(model, tokens, lengths) == read(tokens, lengths)
    return float(np.mean(same)), int(len(lengths))


def confirm(model: Any, cert: Certificate) -> bool:
    """Whether the model's own forward pass misreads the certificate's counterexample as the
    table does (True when there is none to confirm)."""
    if cert.correct or cert.counterexample_tokens is None:
        return True
    import torch

    from monoidlab._util import eval_mode

    t = torch.as_tensor([cert.counterexample_tokens], dtype=torch.long)
    n = torch.as_tensor([len(cert.counterexample_tokens)])
    with eval_mode(model), torch.no_grad():
        if cert.counterexample_offset:  # the model's own forward at that offset
            logits = model(t, n, torch.as_tensor([cert.counterexample_offset]))
        else:
            logits = model(t, n)
    got = int(logits.argmax(-1)[0])
    return got == cert.predicted and got != cert.expected


def certify_finite_model(model: Any, lang: Any, config: Any = None, *, offsets: bool = False,
                         within: Any = "run", seed: int = 0, source: str = "model"
                         ) -> ModelCertificate:
    """The certificate of a finite model (one with ``finite_table()``) on ``lang``: its table
    certified exactly, checked against the model's forward pass on the run's test strings, and
    a counterexample confirmed by that forward pass. A model that is a DFA whatever its layout
    (``learned_automaton()``: the transformation tree) is certified as that DFA
    (:func:`~monoidlab.evaluation.automaton_certificate.certify_automaton`: n · |Q| state
    pairs, never its transformation semigroup).

    ``within``: the strings the claim is about: ``"run"`` (default) the run's own sub-language
    (its config's ``within``, "auto" without one: what it was trained and tested on), None every
    string, or classes as training's ``within``. On a sub-language the verdict over every
    string is given beside it (``all_strings``)."""
    within = run_within(config, within)
    name = type(model).__name__ if config is None else config.model
    if callable(getattr(model, "learned_automaton", None)):
        cert, every = both_scopes(lambda w: certify_model_exactly(model, lang, within=w), lang,
                                  within)
        agree, n = agreement(model, model.learned_automaton(), lang, config, seed)
        return ModelCertificate("model", cert, confirm(model, cert), agree, n, source, name,
                                every)
    table = finite_table_of(model)
    if table is None:
        from monoidlab.errors import InputError

        raise InputError(f"{type(model).__name__} is not a finite model (no finite_table()); "
                         "monoidlab.certify certifies a continuous model's surrogate table")
    cert, every = both_scopes(lambda w: certify_table(table, lang, offsets=offsets, within=w),
                              lang, within)
    agree, n = agreement(model, table, lang, config, seed)
    return ModelCertificate("model", cert, confirm(model, cert), agree, n, source, name, every)

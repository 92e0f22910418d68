"""The certificate of a finite tree model (monoidlab.evaluation.certificate), against brute force.

Exact tables are proved correct; planted errors (a table entry, a head entry, a leaf, the pad
code) are refuted with the shortest counterexample that brute-force enumeration finds, or
proved harmless when the planted entry is unreachable.
"""

import json

import numpy as np
import pytest

import monoidlab as ml
from monoidlab.algebra.automaton import Automaton
from monoidlab.algebra.random_languages import counter_with_reset
from monoidlab.errors import InputError, MonoidTooLarge
from monoidlab.evaluation.certificate import (
    Certificate,
    brute_force_counterexample,
    certify_table,
)
from monoidlab.models.finite import FiniteTable, monoid_table

COUNTER = counter_with_reset(3, alphabet=("a", "r"))  # a counter mod 3 with a reset
LANGS = {"parity": ml.load_language("parity"), "dyck-2": ml.load_language("dyck-2"),
         "counter": COUNTER}


def _with(t: FiniteTable, **changes) -> FiniteTable:
    kw = dict(leaf=t.leaf, table=t.table, head=t.head, padding=t.padding, pad_leaf=t.pad_leaf)
    return FiniteTable(**(kw | changes))


def _check_against_brute_force(t, lang, offsets, max_length, max_offset=None):
    """The certificate agrees with enumeration up to max_length; returns what happened."""
    max_offset = max_offset or 1 << max_length.bit_length()
    cert = certify_table(t, lang, offsets=offsets)
    brute = brute_force_counterexample(t, lang, max_length, offsets=offsets,
                                       max_offset=max_offset)
    if cert.correct:
        assert brute is None, (cert, brute)
        return "correct"
    assert cert.confirmed and cert.counterexample_length == len(cert.counterexample_tokens)
    tokens = np.array([cert.counterexample_tokens])
    said = t.fold(tokens, [tokens.shape[1]], [cert.counterexample_offset] if offsets else None)
    assert said[0] == cert.predicted != cert.expected == lang.classify(tokens, [tokens.shape[1]])[0]
    if brute is None:  # the shortest counterexample lies beyond the enumeration
        assert cert.counterexample_length > max_length or (
            offsets and cert.counterexample_offset >= max_offset)
        return "beyond"
    length, failing = brute
    if offsets and cert.counterexample_offset >= max_offset:  # found at a deeper offset
        assert cert.counterexample_length <= length
        return "deep offset"
    assert cert.counterexample_length == length
    assert (cert.counterexample, cert.counterexample_offset) in failing
    if not offsets:  # at offset 0 the counterexample is the shortlex-least
        assert cert.counterexample == min(failing)[0] and cert.counterexample_offset == 0
    return "refuted"


@pytest.mark.parametrize("name", sorted(LANGS))
@pytest.mark.parametrize("padding", ["identity", "learned"])
@pytest.mark.parametrize("offsets", [False, True])
def test_exact_tables_are_proved_correct(name, padding, offsets):
    lang = LANGS[name]
    cert = certify_table(monoid_table(lang, padding), lang, offsets=offsets)
    assert cert.correct and cert.levels >= 1 and cert.period >= 1 and cert.pairs >= 1
    assert cert.counterexample is None and cert.expected is None
    assert cert.monoid_size == lang.monoid().size and cert.padding == padding
    assert str(cert).startswith("correct at every length (proved: reachable (code, EC) pairs "
                                f"repeat after {cert.levels} levels, period {cert.period}")
    assert json.loads(json.dumps(cert.to_dict()))["correct"] is True
    if name == "counter":  # a^(2^l) alternates between a and aa: the state cycles
        assert cert.period == 2


def test_planted_errors_match_brute_force():
    rng = np.random.default_rng(20260514)
    seen = {"correct": 0, "refuted": 0, "beyond": 0, "deep offset": 0}
    for trial in range(96):
        name = sorted(LANGS)[trial % 3]
        padding = ("identity", "learned")[trial // 3 % 2]
        offsets = bool(trial // 6 % 2)
        lang, exact = LANGS[name], monoid_table(LANGS[name], padding)
        k, what = exact.n_codes, trial // 12 % 4
        if what <= 1:  # a table entry (twice as often: the richest planting)
            table = exact.table.copy()
            table[tuple(rng.integers(k, size=2))] = rng.integers(k)
            t = _with(exact, table=table)
        elif what == 2:
            head = exact.head.copy()
            head[rng.integers(k)] = rng.integers(lang.n_classes)
            t = _with(exact, head=head)
        elif padding == "learned" and trial % 2:
            t = _with(exact, pad_leaf=int(rng.integers(k)))
        else:
            leaf = exact.leaf.copy()
            leaf[rng.integers(len(leaf))] = rng.integers(k)
            t = _with(exact, leaf=leaf)
        seen[_check_against_brute_force(t, lang, offsets, 9, 32 if offsets else None)] += 1
    # both outcomes occur: reachable plantings refuted, unreachable (or harmless) ones proved
    assert seen["refuted"] >= 30 and seen["correct"] >= 10, seen


def test_unreachable_plantings_are_proved_harmless():
    lang = LANGS["dyck-2"]
    exact = monoid_table(lang)
    # code 0 is the identity, the EC of no non-empty Dyck string: under identity padding no
    # node ever holds it, so its row and column may say anything
    table = exact.table.copy()
    table[0, :] = 3
    table[:, 0] = 5
    junk = _with(exact, table=table)
    for offsets in (False, True):
        assert _check_against_brute_force(junk, lang, offsets, 10, 16) == "correct"
    # under learned padding code 0 is the pad code: the same planting is reached
    learned = _with(junk, padding="learned", pad_leaf=0)
    assert _check_against_brute_force(learned, lang, False, 10) == "refuted"
    # an extra code that no leaf and no product reaches, with a wrong head and a wild row
    k = exact.n_codes
    big = np.full((k + 1, k + 1), k)
    big[:k, :k] = exact.table
    extra = FiniteTable(exact.leaf, big, np.r_[exact.head, 1 - exact.head[0]])
    assert certify_table(extra, lang, offsets=True).correct
    assert brute_force_counterexample(extra, lang, 10) is None


@pytest.mark.parametrize("name", ["parity", "dyck-2", "counter"])
def test_learned_padding_needs_an_identity_pad_code(name):
    lang = LANGS[name]
    exact = monoid_table(lang)
    assert certify_table(exact, lang).correct
    for pad in range(1, exact.n_codes):  # every non-identity pad code
        t = _with(exact, padding="learned", pad_leaf=pad)
        for offsets in (False, True):
            assert _check_against_brute_force(t, lang, offsets, 9, 32) in ("refuted",
                                                                            "correct")
    if name == "parity":  # '1' as padding flips the class of odd lengths, first at 3
        cert = certify_table(_with(exact, padding="learned", pad_leaf=1), lang)
        assert (cert.counterexample, cert.counterexample_length) == ("000", 3)
        assert cert.text() == ("WRONG: shortest counterexample '000' (length 3): the model "
                               "says class 1 (1), the language 0 (0)")


def _late_padding(lang: Automaton, levels: int, bad_pad: int) -> FiniteTable:
    """The exact table plus pad codes z_0..z_{levels-1} that act as the identity, with
    z_i·z_i = z_{i+1} and z_last·z_last = bad_pad: padding goes wrong only at tree level
    ``levels``."""
    exact = monoid_table(lang)
    k = exact.n_codes
    z = np.arange(k, k + levels)
    table = np.zeros((k + levels, k + levels), np.int64)
    table[:k, :k] = exact.table
    table[z, :k] = np.arange(k)
    table[:k, z] = np.arange(k)[:, None]
    table[z[:-1], z[:-1]] = z[1:]
    table[z[-1], z[-1]] = bad_pad
    head = np.r_[exact.head, np.full(levels, exact.head[0])]
    return FiniteTable(exact.leaf, table, head, "learned", int(z[0]))


def test_shortest_counterexample_may_sit_at_a_deep_offset():
    lang = LANGS["dyck-2"]
    m = lang.monoid()
    opening = int(m.letters[0])  # the element of "0" ('('): a bad padding code
    t = _late_padding(lang, 5, opening)
    # at offset 0 the padding first matters at root level 7: a balanced string of length 66
    # is read as itself followed by '0'
    deep = certify_table(t, lang)
    assert not deep.correct and deep.confirmed and deep.counterexample_length == 66
    assert deep.counterexample_level == 7
    # with offsets, "1" at offset >= 32 has its root at level 6, left child all padding
    shallow = _check_against_brute_force(t, lang, True, 2, 64)
    assert shallow == "refuted"
    # plant an error at length 4 ("0101": two "01" children): found first at level 2, the
    # search must go on to level 6 for the length-1 counterexample
    ec01 = int(m.element_of_words(["01"])[0])
    table = t.table.copy()
    table[ec01, ec01] = opening
    planted = _with(t, table=table)
    at0 = certify_table(planted, lang)
    assert (at0.counterexample, at0.counterexample_level) == ("0101", 2)
    anywhere = certify_table(planted, lang, offsets=True)
    assert (anywhere.counterexample, anywhere.counterexample_level) == ("1", 6)
    assert anywhere.counterexample_offset >= 32
    assert anywhere.levels > 6
    assert _check_against_brute_force(planted, lang, True, 4, 64) == "refuted"


def test_certificate_text_fields_and_html():
    alphabet = ["<a>", "&"]  # multi-character symbols that HTML must escape
    lang = Automaton(alphabet=alphabet, delta=[[1, 0], [0, 1]], start=0, output=[0, 1],
                     classes=["even", "odd"], name="odd <a>")
    exact = monoid_table(lang)
    wrong = _with(exact, head=np.array([1, 1]))
    cert = certify_table(wrong, lang)
    assert isinstance(cert, Certificate) and not cert.correct
    assert cert.counterexample == "&" and cert.counterexample_tokens == (1,)
    assert (cert.expected, cert.predicted, cert.expected_name, cert.predicted_name) == (
        0, 1, "even", "odd")
    assert str(cert) == cert.text() == ("WRONG: shortest counterexample '&' (length 1): the "
                                        "model says class 1 (odd), the language 0 (even)")
    assert "&amp;" in cert._repr_html_() and "<a>" not in cert._repr_html_()
    d = json.loads(json.dumps(cert.to_dict()))
    assert d["counterexample_tokens"] == [1] and d["counterexample_offset"] == 0
    table = exact.table.copy()
    table[1, 1] = 1  # "<a><a>" reads as odd
    two = certify_table(_with(exact, table=table), lang)
    assert two.counterexample == "<a> <a>"  # multi-character symbols joined with spaces
    cut = certify_table(_with(exact, table=table), lang, max_witness_length=1)
    assert cut.counterexample is None and cut.counterexample_length == 2
    assert not cut.confirmed and "too long to write out" in cut.text()


def test_errors_name_the_problem():
    parity = LANGS["parity"]
    arith = ml.load_language("modular-arithmetic")
    with pytest.raises(InputError, match="2 letters, the language 'modular-arithmetic' 8"):
        certify_table(monoid_table(parity), arith)
    with pytest.raises(InputError, match="FiniteTable"):
        certify_table(np.zeros((2, 2), int), parity)
    with pytest.raises(InputError, match="max_levels must be a positive integer"):
        certify_table(monoid_table(parity), parity, max_levels=0)
    dyck = ml.load_language("dyck-6")
    with pytest.raises(MonoidTooLarge, match="max_levels=2"):
        certify_table(monoid_table(dyck), dyck, max_levels=2)
    with pytest.raises(MonoidTooLarge, match="over max_pairs=3"):
        certify_table(monoid_table(dyck), dyck, max_pairs=3)
    with pytest.raises(InputError, match="too many"):
        brute_force_counterexample(monoid_table(arith), arith, 12)


def test_brute_force_reference():
    parity = LANGS["parity"]
    exact = monoid_table(parity)
    assert brute_force_counterexample(exact, parity, 8, offsets=True) is None
    flipped = _with(exact, head=np.array([1, 0]))
    assert brute_force_counterexample(flipped, parity, 3) == (1, [("0", 0), ("1", 0)])
    length, failing = brute_force_counterexample(flipped, parity, 3, offsets=True)
    assert length == 1 and ("1", 1) in failing and len(failing) == 2 * 4  # offsets 0..3


def _refinement(lang: Automaton, k: int, seed: int) -> tuple[FiniteTable, np.ndarray]:
    """A correct k-code table: codes are monoid elements (``phi``) with duplicates, products
    land on a random duplicate of the right element."""
    m, rng = lang.monoid(), np.random.default_rng(seed)
    phi = np.r_[np.arange(m.size), rng.integers(m.size, size=k - m.size)]
    pre = [np.flatnonzero(phi == e) for e in range(m.size)]
    table = np.array([[rng.choice(pre[v]) for v in row] for row in m.table[phi][:, phi]])
    leaf = np.array([rng.choice(pre[v]) for v in m.letters])
    return FiniteTable(leaf, table, m.outputs[phi]), phi


def test_speed_sanity_200_codes_on_dyck_6():
    lang = ml.load_language("dyck-6")
    t, _ = _refinement(lang, 200, 0)
    assert certify_table(t, lang).correct
    assert certify_table(_with(t, padding="learned", pad_leaf=0), lang, offsets=True).correct
    table = t.table.copy()
    table[t.leaf[0], t.leaf[1]] = t.leaf[0]  # "01" now reads as "0"
    cert = certify_table(_with(t, table=table), lang)
    assert (cert.counterexample, cert.confirmed) == ("01", True)


def test_planted_heads_on_duplicate_codes_match_brute_force():
    # A correct table with duplicate codes, one duplicate's head flipped: whether and where it
    # shows depends on which node types reach that code, so every rule of the fixpoint matters.
    rng = np.random.default_rng(7)
    seen = {"correct": 0, "refuted": 0, "beyond": 0, "deep offset": 0}
    for trial in range(72):
        name = sorted(LANGS)[trial % 3]
        lang, padding = LANGS[name], ("identity", "learned")[trial // 3 % 2]
        offsets = trial >= 36
        t, phi = _refinement(lang, lang.monoid().size + 4, int(rng.integers(1 << 30)))
        if padding == "learned":  # a copy of the identity as the pad code
            t = _with(t, padding="learned", pad_leaf=int(rng.choice(np.flatnonzero(phi == 0))))
        head = t.head.copy()
        c = int(rng.integers(lang.monoid().size, t.n_codes))
        head[c] = (head[c] + 1) % lang.n_classes
        seen[_check_against_brute_force(_with(t, head=head), lang, offsets, 8, 32)] += 1
    assert seen["refuted"] >= 40, seen


def test_a_padded_prefix_inside_a_node_is_tracked():
    # Parity with extra codes: pad codes z0 -> z1 -> z2 -> 0 acting as the identity, except
    # c·z0 = c' (a copy of c), z1·c' = y_c (another copy, read correctly at a root) and
    # z2·y_c = 1 - c (wrong). Only "pad pad x pad" (a B node built from padding and a padded
    # prefix) followed by two pad leaves and read from the right half reaches z2·y: a single
    # letter at offset 6.
    lang = LANGS["parity"]
    z0, z1, z2, x0, x1, y0, y1 = range(2, 9)
    phi = np.array([0, 1, 0, 0, 0, 0, 1, 0, 1])
    table = phi[:, None] ^ phi[None, :]
    table[[z0, z1, z2], [z0, z1, z2]] = [z1, z2, 0]
    table[[0, 1], z0] = [x0, x1]
    table[z1, [x0, x1]] = [y0, y1]
    table[z2, [y0, y1]] = [1, 0]
    t = FiniteTable(np.array([0, 1]), table, phi, "learned", z0)
    cert = certify_table(t, lang, offsets=True)
    assert (cert.counterexample_length, cert.counterexample_offset % 8) == (1, 6)
    assert _check_against_brute_force(t, lang, True, 3, 32) == "refuted"
    assert certify_table(t, lang).correct  # at offset 0 no string meets that padding


@pytest.mark.parametrize("name", ["parity", "counter"])
@pytest.mark.parametrize("padding", ["identity", "learned"])
@pytest.mark.parametrize("offsets", [False, True])
def test_root_pairs_and_witnesses_equal_enumeration(name, padding, offsets):
    # White-box: at every level up to 4, the (code, EC) pairs the fixpoint finds at roots, and
    # each one's shortest witness length, are exactly those of all strings (and offsets) whose
    # root is read at that level; at offset 0 each witness is the shortlex-least such string.
    from monoidlab.evaluation.certificate import _Fixpoint

    lang, V = LANGS[name], LANGS[name].n_symbols
    mono = lang.monoid()
    rng = np.random.default_rng([len(name), offsets, padding == "learned"])
    for k in (3, 9):  # few codes: many collisions; more codes: every rule shows
        t = FiniteTable(rng.integers(k, size=V), rng.integers(k, size=(k, k)),
                        rng.integers(lang.n_classes, size=k), padding,
                        int(rng.integers(k)) if padding == "learned" else None)
        fx = _Fixpoint(t, mono, offsets)
        e = t.pad_leaf
        for level in range(4):
            fx.hist.append(fx.step(level, e))
            e = None if e is None else int(t.table[e, e])
        for level in range(5):
            rows, lens, offs = [], [], []
            top = 1 << level
            for n in range(1, top + 1):
                starts = range(max(0, top // 2 + 1 - n), top - n + 1) if offsets else [0]
                starts = [r for r in starts if level == 0 or r + n > top // 2]
                if not starts:
                    continue
                tok = (np.arange(V ** n)[:, None] // V ** np.arange(n - 1, -1, -1)) % V
                for r in starts:
                    rows.append(np.pad(tok, ((0, 0), (0, top - n))))
                    lens.append(np.full(len(tok), n))
                    offs.append(np.full(len(tok), r))
            tokens, lengths, offsets_ = (np.concatenate(a) for a in (rows, lens, offs))
            pairs = (t.root_codes(tokens, lengths, offsets_) * mono.size
                     + mono.element_of(tokens, lengths))
            shortlex = np.lexsort([tokens[:, c] for c in range(top - 1, -1, -1)] + [lengths])
            _, first = np.unique(pairs[shortlex], return_index=True)  # each pair's least string
            want = {int(pairs[i]): (int(lengths[i]), tuple(tokens[i, :lengths[i]].tolist()))
                    for i in shortlex[first]}
            roots = fx.hist[level]["R"]
            got = {int(p): int(n) for p, n in zip(roots.p, roots.n, strict=True)}
            assert got == {p: w[0] for p, w in want.items()}, (level, t)
            if not offsets:
                for x, p in enumerate(roots.p):
                    tokens_x, offset_x = fx.witness(level, "R", x)
                    assert (offset_x, tuple(tokens_x.tolist())) == (0, want[int(p)][1])


def test_a_witness_the_model_does_not_fail_on_is_a_bug(monkeypatch):
    # the counterexample is re-run through fold and the DFA; a disagreement is an internal
    # error, never a silent wrong answer
    from monoidlab.evaluation import certificate

    lang = LANGS["parity"]
    wrong = _with(monoid_table(lang), head=np.array([0, 0]))  # "1" is misread
    monkeypatch.setattr(certificate._Fixpoint, "witness",
                        lambda self, level, t, x: (np.array([0]), 0))  # "0": read correctly
    with pytest.raises(RuntimeError, match="internal error, counterexample '0'"):
        certify_table(wrong, lang)


def test_sorting_fallback_agrees_with_scatter_min(monkeypatch):
    # tables with many (code, EC) pairs reduce candidates by sorting instead of scatter-min
    from monoidlab.evaluation import certificate

    lang = LANGS["dyck-2"]
    rng = np.random.default_rng(3)
    tables = []
    for _ in range(6):
        t, _ = _refinement(lang, 24, int(rng.integers(1 << 30)))
        head = t.head.copy()
        head[rng.integers(15, 24)] ^= 1
        tables.append(_with(t, head=head, padding="learned", pad_leaf=0))
    dense = [certify_table(t, lang, offsets=True) for t in tables]
    monkeypatch.setattr(certificate, "_DENSE", 0)
    assert [certify_table(t, lang, offsets=True) for t in tables] == dense

"""The drift diagnostic: within-class spread against the gap between classes, per tree level."""

import numpy as np
import pytest
import torch

import monoidlab as ml
from monoidlab.errors import InputError
from monoidlab.probing.drift import drift, drift_by_level, predicted_failure_level


def _clouds(spread_per_level, gap=4.0, n=60, seed=0):
    """Two ECs whose centres lie ``gap`` apart; the nodes of level l scatter with std
    ``spread_per_level[l]`` around them."""
    rng = np.random.default_rng(seed)
    X, ec, lv = [], [], []
    for level, s in spread_per_level.items():
        for e, centre in enumerate(([0.0, 0.0], [gap, 0.0])):
            X.append(np.asarray(centre) + rng.normal(scale=s, size=(n, 2)))
            ec += [e] * n
            lv += [level] * n
    return np.concatenate(X), np.array(ec), np.array(lv)


def test_spread_overtaking_half_the_gap_predicts_the_level():
    """Spread grows with depth; the predicted level is the first whose median distance to its
    centroid exceeds half the gap, computed by hand from the clouds."""
    X, ec, lv = _clouds({1: 0.01, 2: 0.5, 3: 1.5, 4: 3.0})
    rows, gap = drift_by_level(X, ec, lv, ref_level=1, min_nodes=10)
    assert gap == pytest.approx(4.0, abs=0.05)
    spread = {r["level"]: r["spread"] for r in rows}
    # the median distance of a 2-d Gaussian from its centre is s * sqrt(2 ln 2) ~ 1.18 s
    assert spread[3] == pytest.approx(1.5 * 1.18, rel=0.2)
    assert spread[4] > gap / 2 > spread[2]  # so the level is 3 or 4, whichever passes first
    assert predicted_failure_level(rows, gap) == next(
        k for k in sorted(spread) if spread[k] > gap / 2)


def test_no_spread_no_failure_and_no_gap_no_prediction():
    X, ec, lv = _clouds({1: 0.0, 2: 0.0, 3: 0.0})
    rows, gap = drift_by_level(X, ec, lv, ref_level=2, min_nodes=10)
    assert all(r["spread"] == 0.0 for r in rows) and predicted_failure_level(rows, gap) is None
    one = ec == 0
    rows, gap = drift_by_level(X[one], ec[one], lv[one], ref_level=2, min_nodes=10)
    assert np.isnan(gap) and predicted_failure_level(rows, gap) is None


def test_centroid_drift_is_measured_from_the_reference_level():
    X, ec, lv = _clouds({1: 0.0, 2: 0.0})
    X = X + (lv[:, None] - 1) * np.array([0.0, 2.0])  # both ECs move by 2 from level 1 to 2
    rows, _ = drift_by_level(X, ec, lv, ref_level=1, min_nodes=10)
    assert [r["drift"] for r in rows] == [0.0, 2.0]


def test_bad_shapes_are_refused():
    with pytest.raises(InputError, match="one row per node"):
        drift_by_level(np.zeros((3, 2)), np.zeros(2), np.zeros(3), 1)


def test_a_snapped_model_spreads_only_between_codes():
    """A snapped model's node states are codes: with two codes, every distance from a node to
    its EC's centroid at a level comes from nodes sitting on one of two points, and the
    diagnostic reads the snapped states (not the pre-snap ones): each EC-level group's spread
    is 0 when its nodes share a code."""
    from monoidlab.models.snap import SnappedMLPLDRU

    torch.manual_seed(0)
    model = SnappedMLPLDRU(2, 2, d=8, codes=2).eval()
    d = drift(model, "parity", train_lengths=range(1, 9), test_lengths=(32, 64), strings=8,
              min_nodes=5)
    codes = model.snapper.codebook().detach().numpy()
    assert codes.shape == (2, 8)
    spreads = {r["spread"] for r in d.train + d.test}
    # a median of distances to a centroid on the segment between the two codes is at most
    # their distance
    assert max(spreads) <= float(np.linalg.norm(codes[0] - codes[1])) + 1e-6
    assert "drift of SnappedMLPLDRU on parity" in d.text()


def test_a_run_folder(tiny_ldru_run):
    d = drift(tiny_ldru_run, strings=4, test_lengths=(16, 32), min_nodes=3)
    assert d.deepest_training_level == 3 and d.ref_level == 3
    assert d.test and max(r["level"] for r in d.test) == 5
    assert d.to_dict()["language"] == "parity"
    assert ml.load_language("parity").name in d._repr_html_()

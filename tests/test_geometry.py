"""monoidlab.geometry: the one definition of lengths, padding, offsets and buffer sizes."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from monoidlab.errors import InputError, UnknownName
from monoidlab.geometry import Lengths, Offsets, Padding, buffer_size, length_array, range_text
from monoidlab.strings.schedules import schedule


@given(st.integers(1, 5000))
def test_buffer_size_is_the_smallest_power_of_two_at_least_n(n):
    b = buffer_size(n)
    assert b >= n and b & (b - 1) == 0 and (b == 1 or b // 2 < n)


@given(st.integers(1, 300), st.integers(0, 300))
def test_the_balanced_schedule_uses_buffer_size(length, offset):
    assert schedule("balanced", length, offset).buffer == buffer_size(offset + length)


@given(st.integers(0, 200), st.integers(0, 200), st.integers(1, 9))
def test_lengths_text_round_trips(a, extra, step):
    r = Lengths(a, a + extra, step)
    assert Lengths.parse(str(r)) == r or (len(r) == 1 and Lengths.parse(str(r)).start == a)
    assert list(r) == list(range(a, a + extra + 1, step)) == r.values().tolist()
    assert r.last == list(r)[-1]
    text = range_text(length_array(r))
    back = [int(x) for x in text.split(",")] if "," in text else list(Lengths.parse(text))
    assert back == list(r)


def test_lengths_errors_name_the_argument():
    with pytest.raises(InputError, match="train_lengths"):
        Lengths.parse("1-40", "train_lengths")
    with pytest.raises(InputError, match="need 0 <= A <= B"):
        Lengths.parse("9:2")


def test_padding_is_a_string_with_one_list_of_choices():
    assert Padding.parse("identity") is Padding.IDENTITY == "identity"
    assert Padding.parse(Padding.LEARNED) is Padding.LEARNED
    with pytest.raises(UnknownName, match="choose from learned, identity"):
        Padding.parse("zeros", "padding")


def test_offsets_parse_and_the_offsets_of_a_length():
    assert Offsets.parse(None) == Offsets.parse("none") == Offsets.parse(0) == Offsets()
    assert Offsets.parse("random").for_length(5).tolist() == list(range(0, 16 - 5 + 1))
    assert Offsets.random(8).for_length(3).tolist() == list(range(6))
    assert Offsets.parse([0, 2]).for_length(3).tolist() == [0, 2]
    assert Offsets().for_length(7).tolist() == [0] and Offsets().none
    assert str(Offsets.random()) == "random" and str(Offsets.random(64)) == "random (buffer 64)"
    with pytest.raises(InputError, match="offset_buffer"):
        Offsets.random(8).for_length(9)
    with pytest.raises(InputError, match="random"):
        Offsets.parse("shuffle")
    with pytest.raises(InputError, match="non-negative"):
        Offsets.parse([-1, 2])
    with pytest.raises(InputError, match="offset_buffer"):
        Offsets.random(0)


@given(st.integers(1, 200))
def test_random_offsets_keep_every_string_inside_its_doubled_buffer(length):
    offs = Offsets.random().for_length(length)
    assert offs.min() == 0 and (offs + length).max() == buffer_size(2 * length)
    assert np.array_equal(offs, np.arange(len(offs)))


@given(st.recursive(st.none() | st.booleans() | st.integers(-3, 3) | st.text(max_size=3),
                    lambda c: st.lists(c, max_size=3), max_leaves=6))
def test_offsets_parse_accepts_or_names_the_argument(value):
    try:
        Offsets.parse(value, what="offsets")
    except InputError as exc:
        assert "offsets" in str(exc)

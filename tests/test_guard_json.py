"""The guard's JSON walk (``cedarlite.guard._json``): canonical text, its fast path, depth."""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cedarlite.guard import _json

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=8),
)
json_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=25,
)
keys = st.one_of(st.text(max_size=8), st.sampled_from(["api_key", "X-Token", "a/b~c", "path"]))
flat_objects = st.dictionaries(
    keys,
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.text(max_size=8),
        st.sampled_from(["sk-abcdefghijkl", "see ghp_abcdefghijklmnop", "Bearer 12345678"]),
    ),
)


class Walked(dict):
    """A dict the fast path does not take: it goes through the walk."""


@given(flat_objects)
def test_the_flat_fast_path_writes_what_the_walk_writes(value):
    walk = _json.encode(Walked(value), sort_keys=True, normalize=True, other=_json.STRICT)[0]
    assert _json.canonical(value) == walk
    assert json.loads(walk) == value
    for options in ({"redact": True, "prefix": "/params"}, {}):
        assert _json.encode(value, **options) == _json.encode(Walked(value), **options)


def _shuffled(value, rng):
    if isinstance(value, dict):
        items = list(value.items())
        rng.shuffle(items)
        return {k: _shuffled(v, rng) for k, v in items}
    if isinstance(value, list):
        return [_shuffled(v, rng) for v in value]
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)  # the same JSON number
    return value


@given(json_values, st.integers(0, 1000))
def test_canonical_text_is_the_json_value(value, seed):
    text = _json.canonical(value)
    assert _json.canonical(_shuffled(value, random.Random(seed))) == text
    assert json.loads(text) == json.loads(json.dumps(value))
    assert _json.stable(value) == text


def test_numbers_by_value_and_types_apart():
    assert _json.canonical({"a": 5.0}) == _json.canonical({"a": 5}) == '{"a":5}'
    assert _json.canonical({"a": True}) != _json.canonical({"a": 1})
    assert _json.canonical({"a": "1"}) != _json.canonical({"a": 1})
    assert _json.stable([float("nan")]) != _json.stable(["NaN"])
    assert _json.stable({1: "x"}) == _json.stable({"1": "x"})  # as json.dumps writes keys


@pytest.mark.parametrize("depth, ok", [(256, True), (257, False)])
def test_depth_cap(depth, ok):
    value: list = []
    node = value
    for _ in range(depth - 1):
        node.append([])
        node = node[0]
    if ok:
        assert _json.canonical(value) == "[" * depth + "]" * depth
    else:
        with pytest.raises(_json.NotJSON, match="nested deeper than 256 levels"):
            _json.canonical(value)


def test_any_depth_without_the_cap():
    value: dict = {}
    node = value
    for _ in range(100_000):
        node["k"] = {}
        node = node["k"]
    text = _json.stable(value)
    assert text.startswith('{"k":{"k":') and len(text) == 100_000 * 6 + 2


def test_huge_integers_and_odd_keys():
    with pytest.raises(_json.NotJSON, match="more than 4000 digits") as err:
        _json.canonical({"n": [10**4500]})
    assert err.value.path == "/n/0"
    assert _json.encode({"n": 10**4500})[0] == '{"n":"<int>"}'
    assert _json.canonical({"n": 10**300}) == '{"n":' + str(10**300) + "}"
    with pytest.raises(_json.NotJSON, match="object key `tuple` is not a string"):
        _json.canonical({(1, 2): "x"})


@given(st.one_of(flat_objects, json_values, st.dictionaries(keys, st.integers() | st.floats())))
def test_plain_params_are_json_that_canonical_accepts(value):
    # The guard skips the walk for plain params (their canonical text is made only if asked
    # for): `plain` may say False of JSON, never True of anything `canonical` refuses.
    if _json.plain(value):
        assert json.loads(_json.canonical(value)) == value


@pytest.mark.parametrize(
    "value",
    [
        {"a": 10**5000},
        {"a": 1.5},
        {"a": float("nan")},
        {1: "x"},
        {"a": [1]},
        {"a": {"b": 1}},
        {"a": b"x"},
        Walked(a="x"),
        ["a"],
        "a",
    ],
)
def test_plain_says_no_to_what_the_walk_must_see(value):
    assert not _json.plain(value)

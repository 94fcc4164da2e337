"""``jsontext.dumps`` is ``json.dumps(obj, indent=1)`` byte for byte (the reference: the standard library's
pure-Python encoder), for any JSON document, strings with quotes, newlines, non-ASCII and the placeholder
text itself, floats that are not finite, tuples, and keys that are not strings."""

from __future__ import annotations

import json
import math

from hypothesis import given, settings
from hypothesis import strategies as st

from vmio.store import jsontext

scalars = (
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True)
    | st.text() | st.sampled_from(["\x00vmio: a nested value\x00", ': "\x00', "\n", '"}, {"'])
)  # fmt: skip
keys = st.text() | st.sampled_from(["\x00vmio: a nested value\x00", "a"])
documents = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=5) | st.tuples(inner, inner) | st.dictionaries(keys, inner, max_size=6)
    ),
    max_leaves=40,
)


# 200 documents of up to 40 leaves: every scalar kind and the placeholder strings, nested, many times
@settings(max_examples=200, deadline=None)
@given(documents)
def test_the_same_text_as_json_dumps_indent_1(doc: object) -> None:
    assert jsontext.dumps(doc) == json.dumps(doc, indent=1)


def test_a_show_row_and_keys_json_converts() -> None:
    row = {"point": "a/b", "read_lat_ns": {"min": 1.0, "p99.9": None}, "hosts": ["h"], "iothreads": [],
           "x": {"deep": [{"y": [1, {}]}, math.inf]}, "z": {}, 1: "int key", None: 2.5}  # fmt: skip
    assert jsontext.dumps([row, row]) == json.dumps([row, row], indent=1)


rows = st.lists(
    st.dictionaries(
        keys, scalars | st.dictionaries(keys, scalars, min_size=1) | st.lists(scalars), min_size=1
    ),
    min_size=1,
    max_size=5,
)  # show --json's shape: a list of dicts, some values dicts of scalars (latencies) or lists (hosts)


# 150 lists of up to 5 rows, each value a scalar, a dict of scalars or a list: every shape many times
@settings(max_examples=150, deadline=None)
@given(rows)
def test_rows_as_show_prints_them(doc: list[dict[str, object]]) -> None:
    assert jsontext.dumps(doc) == json.dumps(doc, indent=1)

import contextlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vmio.units import format_size, parse_duration, parse_size


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("512", 512),
        ("4k", 4096),
        ("4K", 4096),
        ("1M", 1 << 20),
        ("4G", 4 << 30),
        ("64KiB", 65536),
        (8192, 8192),
    ],
)
def test_parse_size(text: object, expected: int) -> None:
    assert parse_size(text) == expected


@pytest.mark.parametrize("bad", ["", "k", "4x", "-1", -1, True, None, 1.5, "1.3k"])
def test_parse_size_rejects(bad: object) -> None:
    with pytest.raises(ValueError, match="size"):
        parse_size(bad)


@pytest.mark.parametrize(
    ("text", "expected"), [("500ms", 0.5), ("10s", 10.0), ("2m", 120.0), (3, 3.0), ("1h", 3600.0)]
)
def test_parse_duration(text: object, expected: float) -> None:
    assert parse_duration(text) == expected


@given(st.integers(min_value=0, max_value=1 << 52))
def test_size_round_trip(n: int) -> None:
    assert parse_size(format_size(n)) == n


@given(st.text(max_size=12))
def test_garbage_gives_value_error(text: str) -> None:
    for parse in (parse_size, parse_duration):
        with contextlib.suppress(ValueError):
            parse(text)

"""Reading the CloudPhysics vSCSI CSV into pages."""

from __future__ import annotations

import contextlib
import string
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vmio.errors import TraceError
from vmio.traces.cloudphysics import read_vscsi_pages

HEADER = "version,time,op,size,lbn\n"


def write(tmp_path: Path, body: str) -> Path:
    p = tmp_path / "t.csv"
    p.write_text(HEADER + body)
    return p


def test_requests_expand_to_the_pages_they_cover(tmp_path: Path) -> None:
    # 4096 bytes at sector 0: page 0; 512 bytes at sector 7: page 0; 1024 at sector 7: pages 0-1;
    # 65536 at sector 16 (byte 8192): pages 2..17; size 0: nothing
    body = "1,1,28,4096,0\n1,2,2a,512,7\n1,3,28,1024,7\n1,4,28,65536,16\n1,5,28,0,99\n"
    pages = read_vscsi_pages(write(tmp_path, body)).tolist()
    assert pages == [0, 0, 0, 1, *range(2, 18)]


def test_other_page_sizes(tmp_path: Path) -> None:
    assert read_vscsi_pages(write(tmp_path, "1,1,28,8192,16\n"), page=8192).tolist() == [1]


@pytest.mark.parametrize(
    ("body", "pattern"),
    [
        ("1,1,28,4096\n", r"t.csv:2: 4 columns"),
        ("1,1,28,4096,0\n1,1,28,big,0\n", r"t.csv:3: size 'big'"),
        ("1,1,28,-4,0\n", r"t.csv:2: size -4 and lbn 0 are out of range"),
        (
            "1,1,28,4096,99999999999999999999999\n",
            r"t.csv:2: size 4096 and lbn 99999999999999999999999 are out",
        ),
        ("", r"no request"),
    ],
)
def test_bad_lines_name_the_line(tmp_path: Path, body: str, pattern: str) -> None:
    with pytest.raises(TraceError, match=pattern):
        read_vscsi_pages(write(tmp_path, body))


def test_bad_header_and_missing_file(tmp_path: Path) -> None:
    bad = tmp_path / "h.csv"
    bad.write_text("a,b\n1,2\n")
    with pytest.raises(TraceError, match=r"h.csv:1: header"):
        read_vscsi_pages(bad)
    with pytest.raises(TraceError, match="cannot read"):
        read_vscsi_pages(tmp_path / "missing.csv")


ROWS = st.lists(st.tuples(st.integers(0, 1 << 17), st.integers(0, 1 << 50)), min_size=1, max_size=40)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ROWS)
def test_expansion_matches_a_plain_loop(tmp_path: Path, rows: list[tuple[int, int]]) -> None:
    body = "".join(f"1,{i},28,{size},{lbn}\n" for i, (size, lbn) in enumerate(rows))
    expected = [
        page
        for size, lbn in rows
        if size > 0
        for page in range(lbn * 512 // 4096, (lbn * 512 + size - 1) // 4096 + 1)
    ]
    if not expected:
        with pytest.raises(TraceError):
            read_vscsi_pages(write(tmp_path, body))
    else:
        assert read_vscsi_pages(write(tmp_path, body)).tolist() == expected


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(alphabet=string.printable, max_size=200))
def test_garbage_lines_are_trace_errors(tmp_path: Path, garbage: str) -> None:
    with contextlib.suppress(TraceError):
        read_vscsi_pages(write(tmp_path, "1,1,28,4096,8\n" + garbage))

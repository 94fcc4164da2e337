"""Reading the CloudPhysics vSCSI CSV into pages: all at once, or streamed in bounded chunks."""

from __future__ import annotations

import contextlib
import string
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vmio.errors import TraceError
from vmio.traces.cloudphysics import iter_vscsi_pages, read_vscsi_pages

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


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ROWS, st.integers(1, 40))
def test_streamed_chunks_are_bounded_and_add_up_to_the_whole_trace(
    tmp_path: Path, rows: list[tuple[int, int]], chunk: int
) -> None:
    path = write(tmp_path, "".join(f"1,{i},28,{size},{lbn}\n" for i, (size, lbn) in enumerate(rows)))
    if all(size == 0 for size, _ in rows):
        with pytest.raises(TraceError, match="no request"):
            list(iter_vscsi_pages(path, chunk=chunk))
        return
    chunks = [c.copy() for c in iter_vscsi_pages(path, chunk=chunk)]
    assert all(0 < c.size <= chunk for c in chunks)
    assert all(c.size == chunk for c in chunks[:-1])
    assert np.concatenate(chunks).tolist() == read_vscsi_pages(path).tolist()


def endless_lines(rows: int, counter: list[int], size: int = 65536) -> Iterator[str]:
    """A trace's lines made on demand (none kept), counting how many were taken."""
    yield HEADER
    for i in range(rows):
        counter[0] += 1
        yield f"1,{i},2a,{size},{(i * 7_919 % 1_000_003) * 128}\n"


def test_the_stream_reads_the_trace_as_chunks_are_taken() -> None:
    taken = [0]
    stream = iter_vscsi_pages("big.csv", chunk=1_000, lines=endless_lines(10_000_000, taken))
    first = next(stream)
    assert first.size == 1_000
    assert taken[0] <= 1 << 12  # one batch of rows, not ten million
    for _ in range(200):
        assert next(stream).size == 1_000
    assert taken[0] <= 201 * 1_000 // 16 + (1 << 12)  # the rows of the pages taken, plus one batch


def test_the_stream_holds_one_chunk_whatever_the_trace_length() -> None:
    """20,000 requests of 1 MiB (5.1 M pages: 41 MB as one int64 array) streamed in chunks of 64 Ki pages
    (512 KiB): Python's allocations peak at about one batch of rows plus a few chunk-sized arrays."""
    lines = endless_lines(20_000, [0], size=1 << 20)
    tracemalloc.start()
    try:
        total = 0
        for chunk in iter_vscsi_pages("big.csv", chunk=1 << 16, lines=lines):
            total += chunk.size
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert total == 20_000 * 256
    assert peak < 6 << 20, f"peak {peak} bytes"


def test_a_bad_line_deep_in_the_stream_names_its_line() -> None:
    lines = [HEADER] + [f"1,{i},28,4096,{i}\n" for i in range(40_000)] + ["1,1,28,4096,x\n"]
    with pytest.raises(TraceError, match=r"t.csv:40002: size '4096' and lbn 'x'"):
        for _ in iter_vscsi_pages("t.csv", chunk=100, lines=lines):
            pass

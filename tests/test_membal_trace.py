"""Reading the CloudPhysics vSCSI CSV into pages."""

from __future__ import annotations

from pathlib import Path

import pytest

from vmio.errors import TraceError
from vmio.membal.trace import read_vscsi_pages

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
        ("1,1,28,-4,0\n", r"t.csv:2: size -4"),
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

"""Trace readers on samples written from the documented formats, on the shared real trace, on bad input."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vmio.errors import TraceError
from vmio.traces.readers import read_trace, sniff_format
from vmio.traces.trace import READ, WRITE, concat

from conftest import CLOUDPHYSICS_SAMPLE

DATA = Path(__file__).parent / "data" / "relocate"
SHARED = CLOUDPHYSICS_SAMPLE


def test_blkparse_keeps_issued_reads_and_writes_per_device() -> None:
    tr = read_trace(DATA / "blkparse.txt")
    assert tr.images == ("8,16", "8,32")
    assert tr.offset.tolist() == [2048 * 512, 409600 * 512, 8 * 512]
    assert tr.length.tolist() == [8 * 512, 16 * 512, 8 * 512]
    assert tr.op.tolist() == [READ, WRITE, WRITE]
    assert tr.time == pytest.approx([0.0, 0.001003873 - 0.000007390, 0.0031 - 0.000007390])


def test_blkparse_other_action_selects_completions(tmp_path: Path) -> None:
    from vmio.traces.readers import read_blkparse

    tr = read_blkparse(DATA / "blkparse.txt", action="C")
    assert tr.offset.tolist() == [2048 * 512, 409600 * 512]


def test_fio_v2_uses_wait_actions_as_the_clock() -> None:
    tr = read_trace(DATA / "fio_v2.log")
    assert tr.images == ("/dev/vdb", "/var/tmp/img1")
    assert tr.offset.tolist() == [0, 1048576, 4096]
    assert tr.length.tolist() == [4096, 8192, 4096]
    assert tr.op.tolist() == [READ, WRITE, READ]
    assert tr.time == pytest.approx([0.0, 0.0015, 0.002])


def test_fio_v3_written_by_fio_333() -> None:
    tr = read_trace(DATA / "fio_v3.log")
    assert len(tr) == 6 and tr.images == ("/tmp/fiot/f",)
    assert tr.offset[:2].tolist() == [61440, 774144]
    assert tr.op.tolist() == [READ, READ, READ, WRITE, READ, READ]
    assert tr.time[1] == pytest.approx((403 - 167) / 1e6)


def test_qemu_virtio_and_block_backend_events() -> None:
    tr = read_trace(DATA / "qemu.log")
    assert tr.images == ("0x55d0c0a1b2c0", "0x55d0c0b3f4a0", "0x55d0c09f1000")
    assert tr.offset.tolist() == [2048 * 512, 16 * 512, 1048576, 4096]
    assert tr.length.tolist() == [8 * 512, 16 * 512, 65536, 4096]
    assert tr.op.tolist() == [READ, WRITE, READ, WRITE]
    assert tr.time[-1] == pytest.approx(0.0024)


def test_plain_csv() -> None:
    tr = read_trace(DATA / "plain.csv")
    assert tr.images == ("vm1", "vm2")
    assert tr.op.tolist() == [READ, WRITE, READ]
    assert tr.offset.tolist() == [0, 1048576, 8192]


@pytest.mark.skipif(not SHARED.exists(), reason="the shared CloudPhysics sample is not on this machine")
def test_cloudphysics_sample_matches_its_readme() -> None:
    tr = read_trace(SHARED)
    assert len(tr) == 113_872
    assert int((tr.op == READ).sum()) == 46_974 and int((tr.op == WRITE).sum()) == 66_898
    assert tr.time_unit is None
    assert tr.offset[0] == 42932745 * 512 and tr.length[3] == 6656
    assert 33e9 < tr.offset.max() < 34.5e9


@pytest.mark.parametrize(
    ("name", "text", "bad_line"),
    [
        ("blk.txt", "  8,0    1   1   0.000000000  10  D   R 8 + 8 [x]\nthis is not blkparse\n", 2),
        ("fio.log", "fio version 2 iolog\n/dev/sda add\n/dev/sda read 0\n", 3),
        ("fio3.log", "fio version 3 iolog\n10 /dev/sda read 0 4096\nabc /dev/sda read 0 4096\n", 3),
        ("q.log", "1@1.000001:virtio_blk_handle_read vdev 0x1 req 0x2 sector x nsectors 8\n", 1),
        ("cp.csv", "version,time,op,size,lbn\n1,5,2a,512,7\n1,5,99,512,7\n", 3),
        ("p.csv", "time,image,op,offset,length\n0,vm,r,0,4096\n0,vm,x,0,4096\n", 3),
        ("p2.csv", "time,image,op,offset,length\n0,vm,r,-5,4096\n", 2),
    ],
)
def test_malformed_line_names_file_line_and_text(tmp_path: Path, name: str, text: str, bad_line: int) -> None:
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(TraceError) as info:
        read_trace(path)
    bad_text = text.splitlines()[bad_line - 1]
    assert f"{path}:{bad_line}:" in str(info.value)
    assert repr(bad_text) in str(info.value)


def test_unknown_format_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "x"
    path.write_text("%%%\n")
    with pytest.raises(TraceError, match="cannot tell the trace format"):
        sniff_format(path)
    with pytest.raises(TraceError, match="unknown trace format"):
        read_trace(DATA / "plain.csv", "xml")


def test_missing_file_is_a_trace_error(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match="cannot read trace"):
        read_trace(tmp_path / "nope.csv", "csv")


_rows = st.lists(
    st.tuples(
        st.floats(0, 1e6, allow_nan=False).map(lambda t: round(t, 6)),
        st.sampled_from(["vm1", "vm2", "img-3"]),
        st.sampled_from(["r", "w", "read", "write"]),
        st.integers(0, 2**40),
        st.integers(1, 2**24),
    ),
    min_size=1,
    max_size=30,
)


@settings(max_examples=40, deadline=None)
@given(rows=_rows)
def test_plain_csv_round_trip(
    tmp_path_factory: pytest.TempPathFactory, rows: list[tuple[float, str, str, int, int]]
) -> None:
    path = tmp_path_factory.mktemp("csv") / "t.csv"
    path.write_text(
        "time,image,op,offset,length\n" + "".join(f"{t!r},{i},{o},{off},{n}\n" for t, i, o, off, n in rows)
    )
    tr = read_trace(path)
    names = list(dict.fromkeys(r[1] for r in rows))
    assert [tr.images[i] for i in tr.image] == [r[1] for r in rows]
    assert tr.images == tuple(names)
    assert tr.offset.tolist() == [r[3] for r in rows] and tr.length.tolist() == [r[4] for r in rows]
    assert tr.op.tolist() == [WRITE if r[2].startswith("w") else READ for r in rows]
    assert tr.time == pytest.approx([r[0] - min(x[0] for x in rows) for r in rows])


@settings(max_examples=40, deadline=None)
@given(
    rows=st.lists(
        st.tuples(st.integers(0, 10**9), st.booleans(), st.integers(0, 2**40), st.integers(1, 2**20)),
        min_size=1,
        max_size=30,
    )
)
def test_fio_v3_round_trip(
    tmp_path_factory: pytest.TempPathFactory, rows: list[tuple[int, bool, int, int]]
) -> None:
    rows = sorted(rows)
    path = tmp_path_factory.mktemp("fio") / "t.log"
    body = "".join(f"{t} /dev/x {'write' if w else 'read'} {o} {n}\n" for t, w, o, n in rows)
    path.write_text("fio version 3 iolog\n0 /dev/x add\n0 /dev/x open\n" + body)
    tr = read_trace(path)
    assert tr.offset.tolist() == [r[2] for r in rows]
    assert tr.op.tolist() == [WRITE if r[1] else READ for r in rows]
    assert np.allclose(tr.time, [(r[0] - rows[0][0]) / 1e6 for r in rows])


def test_concat_merges_images_by_name_in_time_order() -> None:
    a = read_trace(DATA / "plain.csv")
    b = read_trace(DATA / "fio_v2.log")
    both = concat([a, b])
    assert both.images == ("vm1", "vm2", "/dev/vdb", "/var/tmp/img1")
    assert len(both) == 6 and bool(np.all(np.diff(both.time) >= 0))

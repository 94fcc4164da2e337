"""Parsing the guest agent's stream of /proc/vmstat + /proc/meminfo records."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from vmio.qemu.agent import split_records


def record(uptime: float, free_kb: int, pgpgin: int) -> str:
    return (
        f"--- vmio {uptime:.2f} 1.00\nnr_free_pages 10\npgpgin {pgpgin}\nMemFree:   {free_kb} kB\n"
        "HugePages_Total:       0\n--- end\n"
    )


def test_partial_first_record_is_dropped_and_tail_kept() -> None:
    text = "pgpgout 5\nMemFree: 1 kB\n--- end\n" + record(1.5, 100, 7) + record(2.0, 90, 9)[:30]
    records, rest = split_records(text)
    assert len(records) == 1
    assert records[0].uptime == 1.5
    assert records[0].vmstat == {"nr_free_pages": 10, "pgpgin": 7}
    assert records[0].meminfo == {"MemFree": 100 * 1024, "HugePages_Total": 0}
    more, _ = split_records(rest + record(2.0, 90, 9)[30:])
    assert [r.uptime for r in more] == [2.0] and more[0].meminfo["MemFree"] == 90 * 1024


@given(
    st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 10**9), st.integers(0, 10**12)), max_size=5),
    st.integers(0, 400),
)
def test_records_survive_any_chunking(samples: list[tuple[int, int, int]], cut: int) -> None:
    stream = "".join(record(u / 100, f, p) for u, f, p in samples)
    cut = min(cut, len(stream))
    first, rest = split_records(stream[:cut])
    second, _ = split_records(rest + stream[cut:])
    got = [(r.uptime, r.meminfo["MemFree"] // 1024, r.vmstat["pgpgin"]) for r in first + second]
    assert got == [(round(u / 100, 2), f, p) for u, f, p in samples]

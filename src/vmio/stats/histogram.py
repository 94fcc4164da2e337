"""fio latency histograms (json+ ``bins``): merge across jobs, VMs and hosts, then take percentiles.

fio's bins map a bucket's representative latency (ns) to a count. fio computes a percentile as the value
of the first bucket whose cumulative count reaches ``p/100 × N``; ``percentile`` does the same, so a
percentile of merged bins equals what fio would report for the merged jobs.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Iterable, Mapping

Histogram = dict[int, int]
PERCENTILES = (50.0, 90.0, 99.0, 99.9, 99.99)


def merge(histograms: Iterable[Mapping[int, int]]) -> Histogram:
    """Bucket-wise sum."""
    out: Histogram = {}
    for hist in histograms:
        for bucket, count in hist.items():
            out[bucket] = out.get(bucket, 0) + count
    return out


def percentile(hist: Mapping[int, int], p: float) -> int | None:
    """fio's rule: the first bucket whose cumulative count reaches ``p/100 × total``."""
    total = sum(hist.values())
    if total == 0:
        return None
    need = p / 100.0 * total
    running = 0
    for bucket in sorted(hist):
        running += hist[bucket]
        if running >= need:
            return bucket
    return max(hist)


def percentiles(hist: Mapping[int, int], ps: Iterable[float] = PERCENTILES) -> dict[float, int | None]:
    """``percentile`` for each of ``ps``, the buckets sorted once."""
    buckets = sorted(hist)
    running = list(itertools.accumulate(hist[b] for b in buckets))
    if not running or running[-1] == 0:
        return {p: None for p in ps}
    total = running[-1]
    return {p: buckets[min(bisect.bisect_left(running, p / 100.0 * total), len(buckets) - 1)] for p in ps}


def bucket_index(value_ns: int) -> int:
    """fio's bucket index for a latency (FIO_IO_U_PLAT_BITS = 6): log-linear, 64 buckets per power of 2."""
    if value_ns < 128:
        return value_ns
    msb = value_ns.bit_length() - 1
    error_bits = msb - 6
    base = (error_bits + 1) << 6
    return base + ((value_ns >> error_bits) & 63)


def same_or_adjacent_bucket(a: int, b: int) -> bool:
    """True when two latencies fall in the same fio bucket or neighbouring ones."""
    return abs(bucket_index(a) - bucket_index(b)) <= 1


def from_json(bins: Mapping[str, int]) -> Histogram:
    """fio prints bucket values as JSON object keys (strings)."""
    out: Histogram = {}
    for key, count in bins.items():
        value = int(key)
        if value < 0 or not isinstance(count, int) or count < 0:
            raise ValueError(f"bad histogram bin {key!r}: {count!r}")
        if count:
            out[value] = count
    return out


def bucket_value(index: int) -> int:
    """The latency (ns) fio reports for bucket ``index`` (its ``plat_idx_to_val``: the bucket's middle)."""
    if index < 128:
        return index
    error_bits = (index >> 6) - 1
    base = 1 << (error_bits + 6)
    return int(base + ((index % 64) + 0.5) * (1 << error_bits))


def from_counts(counts: Iterable[int]) -> Histogram:
    """A histogram from fio's per-bucket counts in bucket order (a histogram log line's bins)."""
    return {bucket_value(i): c for i, c in enumerate(counts) if c}

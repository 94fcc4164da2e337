"""The replicated-store model: bitisle-dstore-2014's published shape, what-if directions, fork-join, Little's law."""

from __future__ import annotations

import pytest

from vmio.dstore.calibrate import fit_profile, parse_network, what_if
from vmio.dstore.degraded import DegradedRun, Outage, Sample, Second, format_run
from vmio.dstore.model import StoreParams, harmonic, predict, solve
from vmio.dstore.profile import Criteria, Point, Profile
from vmio.errors import InputError

KIB = 1 << 10
SMALL = [4 * KIB, 8 * KIB, 16 * KIB, 32 * KIB, 64 * KIB]
LARGE = [256 * KIB, 512 * KIB, 1024 * KIB]


def seed_002_small_points() -> list[Point]:
    """bitisle-dstore-2014 Fig. 2 as its text reads it (§5): "4K to 64K give several thousand IOPS, well above the
    4,000 IOPS goal" (4K〜64K の範囲では数千 IOPS 程出ており、理想とする 4,000IOPS を大きく上回り). The figure
    prints no numbers; these readings keep every size above 4,000, falling with the block size, with
    IOPS x latency = 50 outstanding I/Os, as a closed benchmark with 50 outstanding I/Os gives.
    """
    readings = {4 * KIB: 6000, 8 * KIB: 5800, 16 * KIB: 5500, 32 * KIB: 5000, 64 * KIB: 4400}
    return [
        Point(bs, iops, iops * bs / 1e6, 50e3 / iops, 3 * 50e3 / iops, "ideal")
        for bs, iops in readings.items()
    ]


def seed_fit(write_path: str = "fanout") -> tuple[Profile, StoreParams]:
    profile = Profile(seed_002_small_points(), Criteria(), {"iodepth": 50, "rwmixread": 30})
    base = StoreParams(replicas=3, devices=8, hosts=8, write_path=write_path, net_bw=parse_network("10G"))
    return profile, base


def test_fitted_at_the_papers_small_blocks_the_large_block_latency_is_not_extrapolated() -> None:
    """The paper's text: over 4,000 IOPS at 64K (> 262 MB/s) but over 100 ms at 256K with 50 outstanding
    (< 500 IOPS, < 131 MB/s). Bandwidth falling with the block size is what no I/O-count cost plus byte
    cost gives: fitted at 4K-64K the model keeps 256K under 100 ms, so the paper's large-block latency
    comes from something its small blocks do not show (the paper's own guess: buffers overflowing)."""
    profile, base = seed_fit()
    fit = fit_profile(profile, base)
    assert fit.rms_log_error < 0.05
    small = predict(fit.params, SMALL, 50, 0.3)
    assert all(p.iops > 4000 and p.mean_lat_ms < 20 for p in small)
    (at256,) = predict(fit.params, [256 * KIB], 50, 0.3)
    assert at256.mean_lat_ms < 100
    # the paper's own pair of statements: 64K's MB/s above 256K's ceiling at 50 outstanding (Little's law)
    assert 4000 * 64 * KIB > (50 / 0.100) * 256 * KIB
    large = predict(fit.params, LARGE, 50, 0.3)
    # bandwidth-bound all the same: MB/s levels off while latency keeps growing with the block size
    assert large[2].mb_s < 1.3 * large[0].mb_s
    assert large[2].mean_lat_ms > 2.5 * large[0].mean_lat_ms


def test_same_small_points_without_a_byte_cost_would_not_fail() -> None:
    """The large-block verdict comes from the byte cost seen at 32K-64K, not from the model's defaults."""
    flat = [Point(p.bs, 5000.0, 5000.0 * p.bs / 1e6, 10.0, 30.0, "ideal") for p in seed_002_small_points()]
    _, base = seed_fit()
    fit = fit_profile(Profile(flat, Criteria(), {"iodepth": 50, "rwmixread": 30}), base)
    assert predict(fit.params, [256 * KIB], 50, 0.3)[0].mean_lat_ms < 100


def test_closed_forms_at_one_and_many_outstanding_ios() -> None:
    """Reads of one piece on one copy on one device, the network out of the way: one outstanding I/O
    never queues, so it takes client + round trip + seek + transfer; many outstanding I/Os saturate the
    device, whose throughput bound is 1 / service time (operational analysis, not the model's algebra)."""
    p = StoreParams(replicas=1, devices=1, hosts=1, net_bw=1e18)
    bs = 4 * KIB
    service = p.dev_op_s + bs / p.dev_bw
    (one,) = predict(p, [bs], outstanding=1, read_frac=1.0)
    assert one.mean_lat_ms == pytest.approx((p.client_s + p.rtt_s + service) * 1e3, rel=1e-6)
    (many,) = predict(p, [bs], outstanding=200, read_frac=1.0)
    assert 0.97 / service <= many.iops <= 1 / service
    # and with more devices than I/Os in flight the bound is the single I/O's, not the devices'
    (spread,) = predict(StoreParams(replicas=1, devices=8, hosts=8, net_bw=1e18), [bs], 1, 1.0)
    assert spread.iops == pytest.approx(one.iops, rel=1e-6)


def test_fewer_replicas_more_iops_and_lower_latency() -> None:
    profile, base = seed_fit()
    fit = fit_profile(profile, base)
    three = what_if(fit, [4 * KIB, 1024 * KIB])
    two = what_if(fit, [4 * KIB, 1024 * KIB], replicas=2)
    for a, b in zip(three, two, strict=True):
        assert b.iops > a.iops and b.mean_lat_ms < a.mean_lat_ms


def test_client_fanout_is_network_bound_on_a_slow_link_primary_copy_less_so() -> None:
    base = StoreParams(dev_bw=2e9, dev_op_s=5e-5, net_bw=parse_network("1G"))
    fan = predict(base.with_(write_path="fanout"), [1024 * KIB], 50, 0.3)[0]
    primary = predict(base, [1024 * KIB], 50, 0.3)[0]
    assert fan.iops < primary.iops
    faster = predict(base.with_(write_path="fanout", net_bw=parse_network("25G")), [1024 * KIB], 50, 0.3)[0]
    assert faster.iops > 5 * fan.iops


def test_fork_join_waits_for_the_slowest_replica() -> None:
    one = StoreParams(replicas=1)
    three = StoreParams(replicas=3)
    x1, r1 = solve(one, 4 * KIB, 1, 0.0)
    x3, r3 = solve(three, 4 * KIB, 1, 0.0)
    piece = one.dev_op_s + 4 * KIB / one.dev_bw
    # with one I/O in flight a write waits H_3 piece times, one extra RTT hop to the replicas, and the
    # primary's links carry two more copies out and the replicas' links two more in
    extra_net = 4 * 4 * KIB / three.net_bw
    expected = (harmonic(3) - 1) * piece + three.rtt_s + extra_net
    assert float(r3[0] - r1[0]) == pytest.approx(expected, rel=1e-3)
    assert float(x3[0]) < float(x1[0])
    assert harmonic(3) == pytest.approx(11 / 6)


def test_striping_cuts_light_load_latency_but_not_saturated_throughput() -> None:
    plain = StoreParams()
    striped = plain.with_(stripe=4)
    mib = [1024 * KIB]
    assert predict(striped, mib, 1, 0.3)[0].mean_lat_ms < predict(plain, mib, 1, 0.3)[0].mean_lat_ms
    assert predict(striped, mib, 50, 0.3)[0].iops <= predict(plain, mib, 50, 0.3)[0].iops


def test_write_cache_share_helps_writes() -> None:
    plain = StoreParams()
    cached = plain.with_(cache_share=0.7)
    assert predict(cached, [64 * KIB], 50, 0.3)[0].iops > predict(plain, [64 * KIB], 50, 0.3)[0].iops


@pytest.mark.parametrize(
    ("changes", "needle"),
    [
        ({"write_path": "broadcast"}, "write path 'broadcast'"),
        ({"replicas": 4}, "replicas 4 exceed"),
        ({"cache_share": 1.5}, "cache share 1.5"),
        ({"stripe": 0}, "stripe = 0"),
        ({"dev_bw": 0.0}, "dev_bw = 0.0"),
    ],
)
def test_bad_parameters_are_named(changes: dict[str, object], needle: str) -> None:
    with pytest.raises(InputError, match=needle):
        StoreParams().with_(**changes)


@pytest.mark.parametrize(
    ("text", "bytes_per_s"), [("10G", 1.25e9), ("25G", 3.125e9), ("100M", 12.5e6), ("25Gbps", 3.125e9)]
)
def test_network_speeds_are_bits(text: str, bytes_per_s: float) -> None:
    assert parse_network(text) == pytest.approx(bytes_per_s)


@pytest.mark.parametrize("text", ["fast", "-1G", "G", ""])
def test_bad_network_speed(text: str) -> None:
    with pytest.raises(InputError, match="--network"):
        parse_network(text)


def _outage_run(samples: list[tuple[float, bool]], iops: list[float]) -> DegradedRun:
    run = DegradedRun(Outage(osd=1, at_s=3.0, back_at_s=8.0), 4096, 12.0, 4, 70, 3)
    run.seconds = [Second(t + 1.0, x, x, 0.0, None) for t, x in enumerate(iops)]  # second t: up to t
    run.samples = [Sample(t, up, {}) for t, up in samples]
    return run


def test_iops_while_down_are_the_seconds_the_osd_was_stopped_not_one_unlucky_sample() -> None:
    # fio completed I/O in every second the OSD was stopped but the one it went down in; the cluster's
    # samples, seconds apart, saw it down once, at that edge
    iops = [100.0, 100.0, 100.0, 0.0, 60.0, 50.0, 40.0, 70.0, 0.0, 100.0, 100.0, 100.0]
    run = _outage_run([(1.0, True), (3.2, False), (9.5, True)], iops)
    assert run.down_window() == (3.2, 3.2)
    assert run.iops_while_down() == 0.0  # its times unknown: the samples' window, the second ending at 4
    run.stopped_at_s, run.started_at_s = 3.02, 8.01
    # the seconds wholly inside 3.02 .. 8.01 end at 5, 6, 7 and 8 (the one ending at 4 began before the stop)
    assert run.iops_while_down() == pytest.approx((60 + 50 + 40 + 70) / 4)
    assert "mean IOPS while it was stopped 55" in format_run(run)

"""The disk model against hand-computed service times, and the compiled replay against the reference."""

from __future__ import annotations

import math

import numpy as np
import pytest

from vmio.errors import InputError
from vmio.relocate.disk import DRIVE_7200, HP97560, Geometry, builtin_disk
from vmio.relocate.replay import Requests, replay

HP_REV_MS = 60_000 / 4002


def _one(offset: int, length: int, n: int = 1) -> Requests:
    return Requests(
        np.array([offset] * n, dtype=np.int64),
        np.array([length] * n, dtype=np.int64),
        np.zeros(n, dtype=np.int64),
        np.zeros(n),
    )


def test_hp97560_seek_curve_from_ruemmler_wilkes() -> None:
    s = HP97560.seek
    assert s.ms(0) == 0.0
    assert s.ms(1) == pytest.approx(3.64)
    assert s.ms(382) == pytest.approx(3.24 + 0.4 * math.sqrt(382))
    assert s.ms(383) == pytest.approx(8.00 + 0.008 * 383)
    assert HP97560.cylinders == 1962 and HP97560.capacity_bytes == 1962 * 19 * 72 * 512


def test_7200_drive_is_one_terabyte_with_its_seek_anchors() -> None:
    d = builtin_disk("7200")
    assert 1.0e12 <= d.capacity_bytes < 1.001e12
    assert d.seek.ms(d.cylinders) == pytest.approx(16.0)
    assert d.seek.ms(d.cylinders // 3) == pytest.approx(8.5)
    with pytest.raises(InputError, match="unknown disk model"):
        builtin_disk("ssd")


def test_single_request_service_time_by_hand() -> None:
    # cylinder 100, sector 36 of 72 on head 0: half a turn round; 8 sectors long.
    sector = 100 * 19 * 72 + 36
    res = replay(HP97560, _one(sector * 512, 8 * 512), depth=1)
    at = 2.2 + 3.24 + 0.4 * math.sqrt(100)
    turns = at / HP_REV_MS
    rot = ((0.5 - (turns - math.floor(turns))) % 1.0) * HP_REV_MS
    expected = at + rot + 8 / 72 * HP_REV_MS
    assert res.finish[0] * 1000 == pytest.approx(expected, rel=1e-12)
    assert res.seek_cylinders.tolist() == [100]


def test_repeated_request_costs_overhead_plus_a_full_turn_minus_the_transfer() -> None:
    res = replay(HP97560, _one(0, 512, n=2), depth=1)
    first = res.finish[0] * 1000
    at = first + 2.2
    turns = at / HP_REV_MS
    rot = ((0.0 - (turns - math.floor(turns))) % 1.0) * HP_REV_MS
    assert (res.finish[1] - res.start[1]) * 1000 == pytest.approx(2.2 + rot + HP_REV_MS / 72)
    assert res.seek_cylinders.tolist() == [0, 0]


def test_zones_map_sectors_to_cylinders_and_rates() -> None:
    geo = Geometry.of(DRIVE_7200)
    first_of_zone2 = int(geo.zone_first_sector[1])
    cyl, angle, spt = geo.locate(np.array([0, first_of_zone2 - 1, first_of_zone2], dtype=np.int64))
    assert spt.tolist() == [1900, 1900, 1772]
    assert cyl[2] == geo.zone_first_cyl[1] and cyl[1] == geo.zone_first_cyl[1] - 1
    assert angle[0] == 0.0 and angle[1] == pytest.approx(1899 / 1900)


def test_elevator_serves_in_cylinder_order_fcfs_in_arrival_order() -> None:
    per_cyl = 19 * 72 * 512
    offsets = np.array([900, 100, 500, 300], dtype=np.int64) * per_cyl
    req = Requests(offsets, np.full(4, 512, np.int64), np.arange(4, dtype=np.int64), np.zeros(4))
    elev = replay(HP97560, req, depth=1, policy="elevator")
    fcfs = replay(HP97560, req, depth=1, policy="fcfs")
    assert np.argsort(elev.start).tolist() == [1, 3, 2, 0]
    assert np.argsort(fcfs.start).tolist() == [0, 1, 2, 3]
    assert elev.seek_cylinders.sum() == 900 < fcfs.seek_cylinders.sum()


def test_open_loop_waits_for_arrivals_and_counts_queueing_in_response() -> None:
    req = Requests(
        np.zeros(3, dtype=np.int64),
        np.full(3, 512, np.int64),
        np.zeros(3, dtype=np.int64),
        np.array([0.0, 0.0, 10.0]),
    )
    res = replay(HP97560, req)
    assert res.start[2] == 10.0 and res.issue[1] == 0.0
    assert res.start[1] == res.finish[0]
    s = res.summary()
    assert s["mean_response_ms"] > s["mean_service_ms"] > 0


@pytest.mark.parametrize("policy", ["fcfs", "elevator", "mq-deadline", "bfq"])
@pytest.mark.parametrize("depth", [None, 1, 3])
@pytest.mark.parametrize("disk", [HP97560, DRIVE_7200], ids=lambda d: d.name)
def test_compiled_replay_equals_plain_python(policy: str, depth: int | None, disk: object) -> None:
    rng = np.random.default_rng(42)
    n = 600
    cap = disk.capacity_bytes  # type: ignore[attr-defined]
    req = Requests(
        (rng.integers(0, cap // 4096 - 64, n) * 4096).astype(np.int64),
        (rng.integers(1, 64, n) * 512).astype(np.int64),
        rng.integers(0, 4, n).astype(np.int64),
        np.sort(rng.uniform(0, n * 0.01, n)),
    )
    fast = replay(disk, req, depth=depth, policy=policy, queue=8)  # type: ignore[arg-type]
    ref = replay(disk, req, depth=depth, policy=policy, queue=8, engine="python")  # type: ignore[arg-type]
    assert np.array_equal(fast.finish, ref.finish)
    assert np.array_equal(fast.issue, ref.issue)
    assert np.array_equal(fast.seek_cylinders, ref.seek_cylinders)


def test_requests_beyond_the_disk_and_bad_options_are_input_errors() -> None:
    with pytest.raises(InputError, match="beyond"):
        replay(HP97560, _one(HP97560.capacity_bytes, 512))
    with pytest.raises(InputError, match="unknown queue policy"):
        replay(HP97560, _one(0, 512), policy="sstf")
    with pytest.raises(InputError, match="at least 1"):
        replay(HP97560, _one(0, 512), depth=0)


def test_bfq_serves_one_stream_at_a_time_and_elevator_does_not() -> None:
    # two VMs' requests all queued at t=0, interleaved on the disk: bfq (as modelled) gives one VM the disk
    # for its slice, so VM 0's requests go first, all of them (they take far less than 125 ms)
    n = 8
    cap = DRIVE_7200.capacity_bytes
    offsets = np.array([(i * cap // (2 * n)) // 4096 * 4096 for i in range(2 * n)], dtype=np.int64)
    req = Requests(offsets, np.full(2 * n, 4096, dtype=np.int64), np.arange(2 * n) % 2, np.zeros(2 * n))
    order = np.argsort(replay(DRIVE_7200, req, policy="bfq", queue=64).start, kind="stable")
    assert [int(s) for s in req.stream[order]] == [0] * n + [1] * n
    elev = np.argsort(replay(DRIVE_7200, req, policy="elevator", queue=64).start, kind="stable")
    assert [int(s) for s in req.stream[elev]] == [0, 1] * n  # by cylinder: the streams alternate


def test_mq_deadline_serves_an_expired_request_first() -> None:
    # the head sweeps up through a stream of requests arriving ahead of it; one request behind the head
    # waits under C-LOOK until the sweep ends, under mq-deadline only until read_expire (500 ms)
    cap = DRIVE_7200.capacity_bytes
    k = 300
    ahead = [(cap // 2 + i * cap // (4 * k)) // 4096 * 4096 for i in range(k)]
    offsets = np.array([cap // 2 // 4096 * 4096, 4096, *ahead], dtype=np.int64)
    arrival = np.array([0.0, 0.001, *(0.002 + 0.004 * i for i in range(k))])
    req = Requests(offsets, np.full(k + 2, 4096, dtype=np.int64), np.arange(k + 2), arrival)
    late = replay(DRIVE_7200, req, policy="elevator", queue=64)
    dead = replay(DRIVE_7200, req, policy="mq-deadline", queue=64)
    waited = dead.start[1] - dead.issue[1]
    assert 0.5 <= waited <= 0.5 + float(np.max(dead.finish - dead.start))  # served on expiry, not later
    assert late.start[1] > dead.start[1] + 0.1

from vmio.cli.campaign import format_table
from vmio.store.rows import PointRow


def row(point: str, accel: str | None, r_iops: float, w_iops: float, p50: float, p99: float) -> PointRow:
    lat: dict[str, float | None] = {"p50": p50, "p99": p99}
    return PointRow(
        campaign="c", point_key=point, target="t", target_kind="host", workload="w", bs=4096, offered_iops=None,
        load_processes=0, repetition=1, status="done", accel=accel, fio_version=None, qemu_version=None,
        device="sda", error=None, read_iops=r_iops, read_bw=r_iops * 4096, read_lat_ns=lat if r_iops else None,
        read_ops=int(r_iops), write_iops=w_iops, write_bw=w_iops * 4096, write_lat_ns=lat if w_iops else None,
        write_ops=int(w_iops), hosts=("h",), device_metrics={"dev_busy_pct": 71.25},
        cpu={"cpu_usr_pct": 12.0, "cpu_sys_pct": 30.5}, host_facts={}, qemu_machine=None, qemu_cpu_pct=None,
        guest_io_warnings=None,
    )  # fmt: skip


def test_exact_table() -> None:
    rows = [
        row("bare/rr/bs=4096/offered=max/load=0/rep=1", None, 108264.6, 0, 142_000, 245_500),
        row("vm/rw/bs=4096/offered=max/load=0/rep=1", "tcg", 0, 3638.2, 379_000, 3_981_000),
    ]
    assert format_table(rows) == (
        "point                                       status  accel  IOPS r/w   MB/s r/w  p50 ms  p99 ms  dev busy%  %usr  %sys\n"
        "c:bare/rr/bs=4096/offered=max/load=0/rep=1  done    -      108265/0  443.5/0.0   0.142   0.245       71.2  12.0  30.5\n"
        "c:vm/rw/bs=4096/offered=max/load=0/rep=1    done    tcg      0/3638   0.0/14.9   0.379   3.981       71.2  12.0  30.5\n"
    )


def test_empty() -> None:
    assert format_table([]) == "no points stored\n"

"""Export a campaign's points and metric series as CSV, JSON or Parquet, written atomically.

CSV and Parquet give three tables: the points at ``PATH``, the series at ``PATH`` with ``.series``
before the suffix and the per-operation latencies (``ops`` workloads) with ``.oplat``. JSON gives one
document ``{"campaign", "points", "series", "oplat"}``.
"""

from __future__ import annotations

import csv
import io
import json
import os
from pathlib import Path
from typing import Any

from vmio.errors import InputError
from vmio.store.database import Store
from vmio.store.rows import point_rows

FORMATS = ("csv", "json", "parquet")


def flat_points(store: Store, campaign: str) -> list[dict[str, Any]]:
    rows = []
    for row in point_rows(store, campaign):
        flat = {
            k: v for k, v in row.items() if k not in ("read_lat_ns", "write_lat_ns", "hosts", "host_facts")
        }
        flat["offered_iops"] = str(flat["offered_iops"])
        flat["hosts"] = " ".join(row["hosts"])
        for ddir in ("read", "write"):
            lat = row[f"{ddir}_lat_ns"] or {}
            for key in ("min", "mean", "max", "p50", "p90", "p99", "p99.9", "p99.99"):
                flat[f"{ddir}_lat_{key.replace('.', '_')}_ns"] = lat.get(key)
        rows.append(flat)
    return rows


def series(store: Store, campaign: str) -> list[dict[str, Any]]:
    return [
        {
            "point": run["point_key"],
            "t": s["t"],
            "source": s["source"],
            "metric": s["metric"],
            "value": s["value"],
        }
        for run in store.runs(campaign)
        for s in store.samples(run["id"])
    ]


def operations(store: Store, campaign: str) -> list[dict[str, Any]]:
    return [
        {"point": run["point_key"], "host": o["host"], "job": o["job"], "seq": o["seq"], "t_ms": o["t_ms"],
         "lat_ns": o["lat_ns"], "ddir": o["ddir"]}
        for run in store.runs(campaign)
        for o in store.oplat(run["id"])
    ]  # fmt: skip


def export(store: Store, campaign: str, fmt: str, path: Path) -> list[Path]:
    """Write the files; return their paths."""
    store.require(campaign)
    if fmt not in FORMATS:
        raise InputError(f"--format {fmt!r} is not known; use one of {', '.join(FORMATS)}")
    check_output(path)
    points, samples, ops = flat_points(store, campaign), series(store, campaign), operations(store, campaign)
    if fmt == "json":
        doc = {"campaign": campaign, "points": points, "series": samples, "oplat": ops}
        _atomic(path, json.dumps(doc, indent=1).encode())
        return [path]
    write = _csv if fmt == "csv" else _parquet
    written = []
    for suffix, rows in (("", points), (".series", samples), (".oplat", ops)):
        side = path.with_name(f"{path.stem}{suffix}{path.suffix or '.' + fmt}") if suffix else path
        _atomic(side, write(rows))
        written.append(side)
    return written


def _csv(rows: list[dict[str, Any]]) -> bytes:
    buf = io.StringIO()
    if rows:
        writer = csv.DictWriter(buf, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    return buf.getvalue().encode()


def _parquet(rows: list[dict[str, Any]]) -> bytes:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError as exc:
        raise InputError("--format parquet needs pyarrow: pip install 'vmio[parquet]'") from exc
    table = pa.Table.from_pylist(rows)
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    return bytes(sink.getvalue().to_pybytes())


def check_output(path: Path) -> None:
    """Refuse an output path that is a folder or lies in a folder that does not exist."""
    if path.is_dir():
        raise InputError(f"the output {str(path)!r} is a folder; give a file name inside it")
    if not path.parent.is_dir():
        raise InputError(f"the output's folder {str(path.parent)!r} does not exist; create it first")


def _atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file beside it, removed if anything fails."""
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise InputError(f"cannot write {str(path)!r}: {exc.strerror}") from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise

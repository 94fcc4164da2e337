"""Export a campaign's points and metric series as CSV, JSON or Parquet, written atomically.

CSV and Parquet give two tables: the points at ``PATH`` and the series at ``PATH`` with ``.series``
before the suffix. JSON gives one document ``{"campaign", "points", "series"}``.
"""

from __future__ import annotations

import csv
import io
import json
import os
from pathlib import Path
from typing import Any

from vmio.errors import InputError
from vmio.store import Store
from vmio.summary import point_rows

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


def export(store: Store, campaign: str, fmt: str, path: Path) -> list[Path]:
    """Write the files; return their paths."""
    store.require(campaign)
    if fmt not in FORMATS:
        raise InputError(f"--format {fmt!r} is not known; use one of {', '.join(FORMATS)}")
    points, samples = flat_points(store, campaign), series(store, campaign)
    if fmt == "json":
        doc = {"campaign": campaign, "points": points, "series": samples}
        _atomic(path, json.dumps(doc, indent=1).encode())
        return [path]
    side = path.with_name(f"{path.stem}.series{path.suffix or '.' + fmt}")
    write = _csv if fmt == "csv" else _parquet
    _atomic(path, write(points))
    _atomic(side, write(samples))
    return [path, side]


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


def _atomic(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)

"""Export a campaign's points and metric series as CSV, JSON or Parquet, written atomically.

NDJSON gives one sample per line and per done point and metric in PKB's shape (labels as an object);
Prometheus a node-exporter textfile with the same labels; a campaign in a series (``vmio trend``) also carries
the label ``series``, so a dashboard draws the same line as the trend. CSV and Parquet give three tables: the points at ``PATH``, the series at ``PATH`` with ``.series``
before the suffix and the per-operation latencies (``ops`` workloads) with ``.oplat``. JSON gives one
document ``{"campaign", "points", "series", "oplat"}``.
"""

from __future__ import annotations

import contextlib
import csv
import io
import itertools
import json
import operator
import os
import select
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, BinaryIO, TypedDict

from vmio.errors import InputError
from vmio.store import jsontext, packed, show_json
from vmio.store.database import Store
from vmio.store.formats import FORMATS
from vmio.store.integrity import shown
from vmio.store.rows import PointRow, gc_paused, point_rows
from vmio.system import files, forked
from vmio.system.output_paths import all_or_none, check_output_file

# metric name → (unit, how to read it from a ``show --json`` row); latencies in ns as the store keeps them
SAMPLE_METRICS: tuple[tuple[str, str, Callable[[PointRow], float | None]], ...] = (
    *((f"{d}_iops", "ops/s", (lambda r, d=d: r.iops(d))) for d in ("read", "write")),
    *((f"{d}_bw", "bytes/s", (lambda r, d=d: r.bw(d))) for d in ("read", "write")),
    *(
        (f"{d}_lat_{k.replace('.', '_')}", "ns", (lambda r, d=d, k=k: (r.lat_ns(d) or {}).get(k)))
        for d in ("read", "write")
        for k in ("mean", "p50", "p90", "p99", "p99.9", "p99.99")
    ),
    ("dev_busy_pct", "percent", lambda r: r.metric("dev_busy_pct")),
    ("cpu_usr_pct", "percent", lambda r: r.metric("cpu_usr_pct")),
    ("cpu_sys_pct", "percent", lambda r: r.metric("cpu_sys_pct")),
)
# each metric with the direction whose operations it needs (IOPS and bandwidth: none without operations)
SAMPLE_CHECKS = tuple(
    (metric, unit, read, metric.split("_")[0] if metric.endswith(("_iops", "_bw")) else None)
    for metric, unit, read in SAMPLE_METRICS
)
LABELS = ("campaign", "target", "workload", "bs", "offered_iops", "load_processes", "repetition", "accel",
          "qemu_version", "host")  # fmt: skip


TableRow = dict[str, object]  # one row of an exported table: column → a JSON, CSV or Parquet value
FlatValues = tuple[tuple[str, ...], Sequence[object]]  # a point of the flat table: its keys, its values


class PkbSample(TypedDict):
    """One sample in PerfKitBenchmarker's shape (``--format ndjson``; ``prometheus`` reads the same)."""

    metric: str
    value: float
    unit: str
    labels: dict[str, object]
    timestamp: float


def samples(store: Store, campaign: str) -> list[PkbSample]:
    """PKB's sample shape, one per done point and metric with a value: metric, value, unit, labels
    (an object), timestamp (the point's end, seconds since the epoch)."""
    ended = {k: t for rows in store.run_tuples(campaign, ("point_key", "ended")) for k, t in rows}
    series = store.series_of(campaign)  # a label only for a campaign in a series (vmio trend)
    out: list[PkbSample] = []
    for row in point_rows(store, campaign):
        if not row.done:
            continue
        labels: dict[str, object] = {
            "campaign": row.campaign,
            "target": row.target,
            "workload": row.workload,
            "bs": row.bs,
            "offered_iops": _offered(row),
            "load_processes": row.load_processes,
            "repetition": row.repetition,
            "accel": row.accel,
            "qemu_version": row.qemu_version,
            "host": row.host_facts.get("hostname"),
        }
        if series is not None:
            labels["series"] = series
        out += _layer_samples(row, labels, ended[row.point])
        for metric, unit, read, moved in SAMPLE_CHECKS:
            value = read(row)
            if value is None or (moved is not None and not row.ops(moved)):
                continue
            out.append(
                {
                    "metric": metric,
                    "value": float(value),
                    "unit": unit,
                    "labels": labels,
                    "timestamp": ended[row.point],
                }
            )
    return out


def _layer_samples(row: PointRow, labels: dict[str, object], ended: float) -> list[PkbSample]:
    """A traced point's layers (docs/layers.md): ``{read|write}_layer_{mean|p50|p99}_us`` and
    ``{read|write}_layer_ios`` per layer, labelled with ``layer``."""
    out: list[PkbSample] = []
    for name, layer in (row.layers or {}).items():
        for ddir in ("read", "write"):
            figures = layer.get(ddir) if isinstance(layer, dict) else None
            for key in LAYER_FIGURES if isinstance(figures, dict) else ():
                value = figures.get(key) if isinstance(figures, dict) else None
                if isinstance(value, int | float):
                    unit = "count" if key == "ios" else "us"
                    metric = f"{ddir}_layer_{key}"
                    out.append({"metric": metric, "value": float(value), "unit": unit,
                                "labels": {**labels, "layer": name}, "timestamp": ended})  # fmt: skip
    return out


def ndjson(rows: list[PkbSample]) -> bytes:
    """One ``json.dumps(sample)`` a line; a point's labels (one object shared by its samples) encoded once."""
    encode = json.JSONEncoder().encode  # json.dumps' own settings
    lines, labels, shown = [], None, ""
    for r in rows:
        if r["labels"] is not labels:
            labels, shown = r["labels"], encode(r["labels"])
        if list(r) != PKB_KEYS:  # a sample of another shape: as json.dumps writes it
            lines.append(encode(r) + "\n")
            continue
        lines.append(
            f'{{"metric": {encode(r["metric"])}, "value": {encode(r["value"])}, "unit": {encode(r["unit"])}, '
            f'"labels": {shown}, "timestamp": {encode(r["timestamp"])}}}\n'
        )
    return "".join(lines).encode()


PKB_KEYS = list(PkbSample.__annotations__)  # a sample's keys in the order ``samples`` writes them


def prometheus(rows: list[PkbSample]) -> bytes:
    """A node-exporter textfile: one gauge per metric in Prometheus' base units (``prom_name``), one series per
    point, the same labels."""
    by_metric: dict[str, list[PkbSample]] = {}
    for r in rows:
        by_metric.setdefault(r["metric"], []).append(r)
    lines = []
    shown: dict[int, str] = {}  # a point's labels (one object shared by its samples), written once
    for metric, unit, _ in SAMPLE_METRICS:
        mine = by_metric.get(metric)
        if not mine:
            continue
        name, scale, base = prom_name(metric, unit)
        lines += [f"# HELP {name} vmio point {metric} in {base}", f"# TYPE {name} gauge"]
        for r in mine:
            labels = shown.get(id(r["labels"]))
            if labels is None:
                keys = (*LABELS, "series") if "series" in r["labels"] else LABELS
                labels = ",".join(f'{k}="{_prom_escape(r["labels"][k])}"' for k in keys)
                shown[id(r["labels"])] = labels
            lines.append(
                f"{name}{{{labels}}} {r['value'] * scale!r}"
            )  # the textfile collector refuses timestamps
    return ("\n".join(lines) + "\n").encode()


# vmio's unit → (Prometheus base unit, its name's suffix, the factor to it): seconds not nanoseconds, a ratio
# (0 to 1) not a percent; a rate of operations or bytes per second (https://prometheus.io/docs/practices/naming/)
PROM_UNIT = {
    "ops/s": ("operations per second", "operations_per_second", 1.0),
    "bytes/s": ("bytes per second", "bytes_per_second", 1.0),
    "ns": ("seconds", "seconds", 1e-9),
    "percent": ("a ratio from 0 to 1", "ratio", 0.01),
}
# the metric's name without its unit (which the suffix says once): read_iops → read, dev_busy_pct → device_busy
PROM_STEM = {"dev_busy_pct": "device_busy", "cpu_usr_pct": "cpu_user", "cpu_sys_pct": "cpu_system"}


def prom_name(metric: str, unit: str) -> tuple[str, float, str]:
    """The Prometheus name of a sample metric, the factor from vmio's unit to its base unit, and that unit:
    ``read_iops`` → ``vmio_read_operations_per_second``, ``read_lat_p99`` → ``vmio_read_latency_p99_seconds``,
    ``cpu_sys_pct`` → ``vmio_cpu_system_ratio`` (CHANGELOG.md lists the former names)."""
    base, suffix, scale = PROM_UNIT[unit]
    stem = PROM_STEM.get(metric) or metric.removesuffix("_iops").removesuffix("_bw").replace(
        "_lat_", "_latency_"
    )
    return f"vmio_{stem}_{suffix}", scale, base


def _prom_escape(value: object) -> str:
    text = "" if value is None else str(value)
    return text.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def flat_points(store: Store, campaign: str) -> list[TableRow]:
    """The points table: ``flat_row`` of each point (``show_json.flat_rows``: without a ``PointRow`` each)."""
    return show_json.flat_rows(store, campaign, flat_row)


def flat_row(row: PointRow) -> TableRow:
    """A point as the flat tables hold it: ``show --json``'s keys, its nested values spread out as columns."""
    flat = row.to_json(facts=False)
    for key in NESTED:  # dropped in place: the other columns keep their order
        flat.pop(key, None)
    flat.update(layer_columns(row.layers))
    for key, value in (row.dstore or {}).items():  # a stored dstore profile's labels, one column each
        flat[f"dstore_{key}"] = json.dumps(value) if isinstance(value, list | dict) else value
    flat["offered_iops"] = _offered(row)
    flat["hosts"] = " ".join(row.hosts)
    for ddir, columns, keys in LAT_FLAT:
        lat = row.lat_ns(ddir)
        flat.update(zip(columns, map(lat.get, keys), strict=True) if lat else dict.fromkeys(columns))
    return flat


# show --json's keys a flat table spreads out
NESTED = ("read_lat_ns", "write_lat_ns", "hosts", "dstore", "layers")
_LAT_KEYS = ("min", "mean", "max", "p50", "p90", "p99", "p99.9", "p99.99")
LAT_FLAT = tuple(
    (ddir, tuple(f"{ddir}_lat_{k.replace('.', '_')}_ns" for k in _LAT_KEYS), _LAT_KEYS)
    for ddir in ("read", "write")
)  # each direction's latency columns and the keys they take


LAYER_FIGURES = ("mean_us", "p50_us", "p99_us", "ios")


def layer_columns(layers: dict[str, object] | None) -> TableRow:
    """A point's ``layers`` (docs/layers.md) as flat columns: ``layer_{name}_{read|write}_{figure}``,
    ``layer_{name}_why`` for a layer that was not traced and ``layer_{name}_clock`` for one read off a coarse
    clock."""
    out: TableRow = {}
    for name, layer in (layers or {}).items():
        if not isinstance(layer, dict):
            continue
        for ddir in ("read", "write"):
            figures = layer.get(ddir) or {}
            for key in LAYER_FIGURES:
                out[f"layer_{name}_{ddir}_{key}"] = figures.get(key)
        if "why" in layer:
            out[f"layer_{name}_why"] = layer["why"]
        if "clock" in layer:  # a guest's coarse clock: its percentiles are multiples of a step
            out[f"layer_{name}_clock"] = layer["clock"]
    return out


def _offered(row: PointRow) -> str:
    return "max" if row.offered_iops is None else str(row.offered_iops)


SERIES_COLUMNS = ("point", "t", "source", "metric", "value")
OPLAT_COLUMNS = ("point", "host", "job", "seq", "t_ms", "lat_ns", "ddir", "offset")
# the points table of a campaign with no point: the columns every point has (show --json's contract)
LAT_KEYS = ("min", "mean", "max", "p50", "p90", "p99", "p99_9", "p99_99")
POINT_COLUMNS = ("campaign", "point", "target", "target_kind", "workload", "bs", "offered_iops", "load_processes",
                 "repetition", "status", "accel", "read_iops", "write_iops", "read_bw", "write_bw",
                 *(f"{d}_lat_{k}_ns" for d in ("read", "write") for k in LAT_KEYS),
                 "dev_read_iops", "dev_write_iops", "dev_busy_pct", "cpu_usr_pct", "cpu_sys_pct", "cpu_iowait_pct",
                 "cpu_steal_pct")  # fmt: skip
COLUMN_TYPES = {"t": "float", "value": "float", "seq": "int", "t_ms": "float", "lat_ns": "int", "offset": "int",
                "bs": "int", "load_processes": "int", "repetition": "int",
                **{c: "float" for c in POINT_COLUMNS[11:]}}  # fmt: skip


def series(store: Store, campaign: str) -> list[TableRow]:
    """The samples table's rows (Parquet): each run's samples (``Store.unpacked``) under its point key."""
    return [
        {"point": key, **{c: s[c] for c in SERIES_COLUMNS[1:]}}
        for rows in store.campaign_packed_samples(campaign)
        for run_id, key, *row in rows
        for s in store.unpacked(run_id, row)
    ]


def operations(store: Store, campaign: str) -> list[TableRow]:
    chunks = store.campaign_table("oplat", OPLAT_COLUMNS[1:], OPLAT_ORDER, campaign)
    return [dict(zip(OPLAT_COLUMNS, r, strict=True)) for rows in chunks for r in rows]


OPLAT_ORDER = "t.seq"


def _series_text(
    store: Store, campaign: str, parts: Sequence[str], cell: Callable[[str], str], null: str
) -> Iterator[str]:
    """Each chunk of runs' ``.series`` rows as one text (a few large strings, not one a run): the five cells
    (point, t, source, metric, value) with ``parts`` before, between and after them (the sixth: the row's
    end). The numbers are their stored texts (``packed.numbers``: JSON and ``repr`` write them so; ``null``
    for none), a text is ``cell`` of it; what lies between a row's ``t`` and ``value`` is worked out once per
    pair of packed source and metric lists (a campaign's runs share a few), so a run's rows are one join. A
    row ``packed`` cannot read is the store's one error for it."""
    before, after_key, after_t, after_source, after_metric, end = parts
    middles: dict[tuple[str, str], list[str]] = {}  # a run's source and metric lists → its rows' middles
    for rows in store.campaign_packed_samples(campaign):
        chunk: list[str] = []  # the runs of this fetch, joined once
        for run_id, key, n, t, source, metric, value in rows:
            try:
                ts, vs = packed.numbers(t, n, "t"), packed.numbers(value, n, "value")
                middle = middles.get((source, metric))
                if middle is None:
                    if len(middles) > 256:  # a few shared lists, not one per run held
                        middles.clear()
                    ss, ms = packed.texts(source, n, "source"), packed.texts(metric, n, "metric")
                    middle = middles[source, metric] = [
                        f"{after_t}{cell(s)}{after_source}{cell(m)}{after_metric}"
                        for s, m in zip(ss, ms, strict=True)
                    ]
            except ValueError as exc:
                raise store.sample_damage(run_id, exc) from None
            if null != "null" and "n" in value:
                vs = [null if v == "null" else v for v in vs]
            head = before + cell(key) + after_key
            chunk.append(head + (end + head).join(map(operator.add, map(operator.add, ts, middle), vs)) + end)
        yield "".join(chunk)


# what comes before, between and after a .series row's cells in the JSON document (two levels deep)
JSON_SERIES = (
    *(("{\n   " if i == 0 else ",\n   ") + f'"{c}": ' for i, c in enumerate(SERIES_COLUMNS)),
    "\n  },\n  ",
)


def _csv_cell(text: str) -> str:
    """A text cell as the CSV writer writes it in a row of several, made inert (``inert``)."""
    if not text.startswith(FORMULA_STARTS) and not any(c in text for c in CSV_QUOTED):
        return text
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerow([inert(text), ""])
    return buf.getvalue()[:-2]  # without the empty cell's comma and the line's end


def _csv_series(store: Store, campaign: str) -> list[bytes]:
    """The ``.series`` table as CSV, in pieces (``_series_text``'s, never joined: 2M rows are 170 MB): the
    text ``_csv_rows`` writes (a number as it is, none as blank, text inert)."""
    texts = _series_text(store, campaign, ("", ",", ",", ",", ",", "\n"), _csv_cell, "")
    return [(",".join(SERIES_COLUMNS) + "\n").encode(), *(text.encode() for text in texts)]


SINGLE_FILE = ("json", "ndjson", "prometheus")  # one document; csv and parquet write side files
SUFFIXES = {
    ".csv": "csv",
    ".json": "json",
    ".parquet": "parquet",
    ".pq": "parquet",
    ".ndjson": "ndjson",
    ".jsonl": "ndjson",
    ".prom": "prometheus",
}


def format_for(path: str) -> str:
    """The export format an output file's suffix names (``x.csv`` → csv); an ``InputError`` otherwise."""
    fmt = SUFFIXES.get(Path(path).suffix.lower())
    if fmt is None:
        known = ", ".join(f"{suffix} ({name})" for suffix, name in SUFFIXES.items())
        raise InputError(
            f"cannot tell the export format from {path!r}; give --format {{{','.join(FORMATS)}}}, "
            f"or an output named with one of {known}"
        )
    return fmt


def document(store: Store, campaign: str, fmt: str) -> bytes:
    """The whole export in one document, for the formats that are one (``SINGLE_FILE``)."""
    with gc_paused():  # millions of rows, none in a cycle: the collector would walk them again and again
        return _document(store, campaign, fmt)


def _document(store: Store, campaign: str, fmt: str) -> bytes:
    store.require(campaign)
    if fmt not in SINGLE_FILE:
        raise InputError(
            f"--format {fmt} writes side files (.series, .oplat) beside its output, so it cannot go "
            f"to stdout; give -o FILE, or use one of {', '.join(SINGLE_FILE)} with -o -"
        )
    if fmt in ("ndjson", "prometheus"):
        rows = samples(store, campaign)
        return ndjson(rows) if fmt == "ndjson" else prometheus(rows)
    return (
        _json_head(campaign) + _json_points(store, campaign) + "".join(_json_rest(store, campaign))
    ).encode()


def _json_head(campaign: str) -> str:
    """The JSON document's text up to its points list."""
    return f'{{\n "campaign": {json.dumps(campaign)},\n "points": '


def _json_rest(store: Store, campaign: str) -> list[str]:
    """``json.dumps({"campaign", "points", "series", "oplat"}, indent=1)``'s text after the points list,
    written a part at a time: Python's encoder is its slow pure-Python one wherever ``indent`` is given, so the
    flat rows of the side tables (20 and more a point) go through the C one, their separators carrying the
    indentation (``_json_rows``: as a %-format of each chunk where it can). In pieces, joined once or never
    (hundreds of MB at 100k points: each copy of the whole costs). The document is ``_json_head``, the points
    (``_json_points``) and these."""
    flat = json.JSONEncoder(separators=(",\n   ", ": "))  # a side table's row, two levels deep

    def rows(chunks: Iterator[list[tuple[Any, ...]]], columns: tuple[str, ...]) -> list[str]:
        items = [
            "{\n   " + flat.encode(dict(zip(columns, r, strict=True)))[1:-1] + "\n  }"
            for c in chunks
            for r in c
        ]
        return jsontext.list_pieces(items, "  ", " ")  # a side table: two levels deep

    def table(name: str, columns: tuple[str, ...], order: str) -> list[str]:
        pieces = _json_rows(store, campaign, name, columns, order)
        if pieces is not None:
            return pieces
        return rows(store.campaign_table(name, columns[1:], order, campaign), columns)

    runs = _series_text(store, campaign, JSON_SERIES, json.JSONEncoder().encode, "null")
    sampled = jsontext.list_pieces([text[:-4] for text in runs], "  ", " ")  # a chunk's rows, last comma cut
    ops = table("oplat", OPLAT_COLUMNS, OPLAT_ORDER)
    return [',\n "series": ', *sampled, ',\n "oplat": ', *ops, "\n}"]


def _json_points(store: Store, campaign: str) -> str:
    """The JSON document's points list (one level deeper than the document's keys)."""
    return show_json.flat_text(store, campaign, flat_row, " ")


POINTS_NEWLINE = "\n "  # a line break in the points list, one level deep in the document


def _json_rows(
    store: Store, campaign: str, table: str, columns: tuple[str, ...], order: str
) -> list[str] | None:
    """A detail table's list in the JSON document as ``_json_document``'s ``rows`` writes it, each chunk of
    rows one ``%`` of its rows' text (``str`` of a number is its JSON; a text is written in quotes as it is);
    None where a text is not written so: one that is not plain ASCII, or holds a quote or a backslash (each
    chunk's distinct texts checked, ``_texts_are``), or a NULL text."""
    item = "{\n   " + ",\n   ".join(f'"{c}": ' + ('"%s"' if c in TEXT_COLUMNS else "%s") for c in columns)
    item += "\n  }"
    cells = ["{c}" if c in TEXT_COLUMNS else JSON_NUMBER for c in columns]
    texts = [i for i, c in enumerate(columns) if c in TEXT_COLUMNS]
    chunks = []
    for rows in store.campaign_table(table, columns[1:], order, campaign, cell=cells):
        if not _texts_are(rows, texts, _json_plain):
            return None
        chunks.append(",\n  ".join([item] * len(rows)) % tuple(itertools.chain.from_iterable(rows)))
    return jsontext.list_pieces(chunks, "  ", " ")


# a number column's cell as SQLite reads it for ``_json_rows``: the number as it is, NULL as null (a detail
# table's number columns hold finite numbers or NULL: ``TEXT_COLUMNS``)
JSON_NUMBER = "ifnull({c}, 'null')"


def _texts_are(rows: list[tuple[Any, ...]], at: Sequence[int], plain: Callable[[str], bool]) -> bool:
    """Whether every value of the columns ``at`` in ``rows`` is a text that is ``plain``: each distinct value
    checked once (a column of a chunk holds a few: its points' keys, its sources), picked out in C."""
    distinct = (set(map(operator.itemgetter(i), rows)) for i in at)
    return all(type(v) is str and plain(v) for values in distinct for v in values)


def _json_plain(text: str) -> bool:
    """Whether ``json.dumps`` writes ``text`` as it is between quotes: printable ASCII (no control character,
    no 0x7f) without a quote or a backslash."""
    return text.isascii() and text.isprintable() and '"' not in text and "\\" not in text


def export(store: Store, campaign: str, fmt: str, path: Path) -> list[Path]:
    """Write the files; return their paths."""
    with gc_paused():  # as ``document``
        return _export(store, campaign, fmt, path)


def _export(store: Store, campaign: str, fmt: str, path: Path) -> list[Path]:
    store.require(campaign)
    if fmt not in FORMATS:
        raise InputError(f"--format {fmt!r} is not known; use one of {', '.join(FORMATS)}")
    check_output(path)
    if fmt == "json":
        _write_json(store, campaign, path)
        return [path]
    if fmt in SINGLE_FILE:
        _atomic(path, document(store, campaign, fmt))
        return [path]
    if fmt == "csv":  # the side tables straight from SQLite to the CSV writer, a row at a time
        with _beside(
            store, campaign, lambda own: _csv(show_json.flat_values(own, campaign, flat_row), POINT_COLUMNS)
        ) as points:
            sides = [
                _csv_series(store, campaign),
                _csv_rows(store, campaign, "oplat", OPLAT_COLUMNS, OPLAT_ORDER),
            ]
            return _written(path, fmt, [[points()], *sides])
    return _written(
        path,
        fmt,
        [
            _parquet(flat_points(store, campaign), POINT_COLUMNS, "run"),
            _parquet(series(store, campaign), SERIES_COLUMNS, "sample"),
            _parquet(operations(store, campaign), OPLAT_COLUMNS, "oplat"),
        ],
    )


def _written(path: Path, fmt: str, tables: list[Any]) -> list[Path]:
    """The points, ``.series`` and ``.oplat`` tables (bytes, or pieces of them) written beside each other: the
    three files, or none of them."""
    written: list[Path] = []
    with all_or_none(written):
        for suffix, table in zip(("", ".series", ".oplat"), tables, strict=True):
            side = path.with_name(f"{path.stem}{suffix}{path.suffix or '.' + fmt}") if suffix else path
            _atomic(side, table)
            written.append(side)
    return written


# a campaign with fewer points is exported in one process: a child's start and its own open of the store (its
# checks) cost about what it would save (benchmarks/store_scale.py)
FORK_POINTS = 2000
CHILD_TIMEOUT = 600.0  # seconds the child may take; past them this process does the child's part itself


@contextlib.contextmanager
def _beside(store: Store, campaign: str, make: Callable[[Store], bytes]) -> Iterator[Callable[[], bytes]]:
    """``make`` (a part of the export: the points table) done by a forked child on the second CPU, with its own
    read-only connection to the store, while this process does the rest; the getter waits for it and gives
    its bytes, which the child wrote into an anonymous memory file (100k points are ~170 MB of JSON: no pipe
    this process would have to drain meanwhile). Where no child may run (one CPU, another thread, a small
    campaign, a store read through a migrated copy in memory) or it failed or ran out of time, the getter
    makes the part here: what is written is the same either way, and an error in the part is this
    process' error."""
    if not _fork_count(store, campaign):
        yield lambda: make(store)
        return
    memory = os.memfd_create("vmio-export", os.MFD_CLOEXEC)

    def child() -> bytes:
        with store.reader() as own, open(memory, "wb", closefd=False) as out:
            out.write(make(own))
        return b""

    def get() -> bytes:
        if forked.collect(pid, pipe, CHILD_TIMEOUT) is None:
            return make(store)
        with open(memory, "rb", closefd=False) as made:
            made.seek(0)  # the child's writes moved the offset this process shares with it
            return made.read()

    try:
        pid, pipe = forked.start(child)
        try:
            yield get
        finally:
            forked.end(pid, pipe)
    finally:
        os.close(memory)


def _write_json(store: Store, campaign: str, path: Path) -> None:
    """The JSON document written at ``path`` a part at a time (100k points' is 470 MB: never joined): its
    head, its points (``_points_beside``: on two CPUs where that pays), its series and oplat tables."""
    with files.replacing(path) as out:
        out.write(_json_head(campaign).encode())
        with _points_beside(store, campaign, out) as points:
            rest = _json_rest(store, campaign)
            points()
        out.writelines(map(str.encode, rest))


@contextlib.contextmanager
def _points_beside(store: Store, campaign: str, out: BinaryIO) -> Iterator[Callable[[], None]]:
    """The JSON document's points list written into ``out`` where it stands, made on two CPUs.

    A forked child (its own connection: ``Store.reader``) writes the points' text into ``out`` from the
    first point on, while this process makes the rest of the document. Then the getter asks the child for a
    share: the child gives this process the later half of the points it has not reached (``_until_asked``:
    their first id) and stops before them; this process makes those, waits for the child and writes them
    after its text. Where no child may run (``_fork_count``) the getter writes the points; where the
    child failed, ran out of time or wrote other than it said, or a point is not for the templates
    (``show_json.Untemplated``), the child's text is cut off and this process writes them all: what is
    written is the same either way, and an error in the points is this process' error."""

    def alone() -> None:
        out.write(_json_points(store, campaign).encode())

    count = _fork_count(store, campaign)
    if not count:
        yield alone
        return
    out.flush()
    start = out.tell()
    ask, asked = os.pipe()  # this process -> the child: "give me a share"
    told, tell = os.pipe()  # the child -> this process: the share's first id

    def child() -> bytes:
        os.close(asked)
        os.close(told)
        written = items = 0
        with store.reader() as own, open(out.fileno(), "wb", closefd=False) as mine:
            rows = _until_asked(own, campaign, count, ask, tell)
            for piece in _list_pieces(show_json.flat_items(own, campaign, flat_row, POINTS_NEWLINE, rows), 0):
                written += mine.write(piece)
                items += 1
        return f"{written} {items}".encode()

    def points() -> None:
        with contextlib.suppress(BrokenPipeError):  # the child has ended: it made them all, or failed
            os.write(asked, b"?")
        first = _told(told)
        mine: list[str] | None = []
        if first:
            try:
                rows = store.run_tuples(campaign, show_json.COLUMNS, show_json.CHUNK, first=first)
                mine = list(show_json.flat_items(store, campaign, flat_row, POINTS_NEWLINE, rows))
            except show_json.Untemplated:
                mine = None
        made = None if first is None else forked.collect(pid, pipe, CHILD_TIMEOUT)
        written, items = map(int, made.split()) if made else (0, 0)
        if mine is None or made is None or out.tell() != start + written:
            forked.stop(pid)  # before its text is cut off: a child past its time may still be writing
            out.seek(start)
            out.truncate()
            alone()
            return
        out.writelines(_list_pieces(mine, items))
        out.write((POINTS_NEWLINE + "]" if items or mine else "[]").encode())  # as show_json.flat_list ends

    try:
        pid, pipe = forked.start(child)
    except BaseException:
        for fd in (ask, asked, told, tell):
            os.close(fd)
        raise
    os.close(ask)
    os.close(tell)
    try:
        yield points
    finally:
        forked.end(pid, pipe)
        os.close(asked)
        os.close(told)


def _list_pieces(items: Iterable[str], before: int) -> Iterator[bytes]:
    """The points list's text of ``items`` (``show_json.flat_items``'), each after its separator (``[`` for
    the list's first, else ``,``), ``before`` items written ahead of them: ``show_json.flat_list`` a piece at a
    time, without its end."""
    for k, item in enumerate(items, before):
        yield (("," if k else "[") + POINTS_NEWLINE + item).encode()


RUN_ID = show_json.COLUMNS.index("id")  # a run's id in ``show_json.COLUMNS``


def _until_asked(
    store: Store, campaign: str, count: int, ask: int, tell: int
) -> Iterator[list[tuple[Any, ...]]]:
    """The campaign's ``count`` runs as ``show_json.flat_items`` reads them, a chunk at a time, until asked
    (a byte on ``ask``, looked for after each chunk): then the later half of the runs not yet given is the
    asker's, its first id told on ``tell`` (8 bytes; 0: none, fewer than two chunks were left), and the runs
    stop before it."""
    given, below = 0, None
    chunks = store.run_tuples(campaign, show_json.COLUMNS, show_json.CHUNK)
    for chunk in chunks:
        yield chunk
        given += len(chunk)
        if select.select([ask], [], [], 0)[0]:
            left = count - given
            if left >= 2 * show_json.CHUNK:
                below = store.run_id_past(campaign, chunk[-1][RUN_ID], left // 2)
            os.write(tell, (below or 0).to_bytes(8, "little"))
            break
    if below is None:  # not asked, or nothing to share
        yield from chunks
        return
    for chunk in chunks:
        kept = [r for r in chunk if r[RUN_ID] < below]
        if kept:
            yield kept
        if len(kept) < len(chunk):
            return


def _told(told: int) -> int | None:
    """The first id of the share the child told (``_until_asked``): 0 for none, or where it ended without
    telling (it made them all, or failed: ``forked.collect`` says which); None where it told nothing in
    ``CHILD_TIMEOUT`` seconds."""
    if not select.select([told], [], [], CHILD_TIMEOUT)[0]:
        return None
    said = os.read(told, 8)
    return int.from_bytes(said, "little") if len(said) == 8 else 0


def _fork_count(store: Store, campaign: str) -> int:
    """The campaign's points where a child is worth forking for them, else 0: two CPUs and one thread
    (``forked.may_fork``), a campaign of ``FORK_POINTS`` or more, and a store read from its file (not an older
    one migrated into a copy in memory, which a child's open would migrate again)."""
    if not forked.may_fork() or not store.db.execute("PRAGMA database_list").fetchone()[2]:
        return 0  # no file behind the connection: ":memory:", or an older store's migrated copy
    count = store.run_count(campaign)
    return count if count >= FORK_POINTS else 0


def _csv(points: list[FlatValues], columns: tuple[str, ...]) -> bytes:
    """The points table as CSV (each point its keys and values, ``show_json.flat_values``): its header always
    (``columns`` for an empty table), every point's columns (some only on some points: blank elsewhere)."""
    shapes = dict.fromkeys(keys for keys, _ in points)  # most points share a few tuples of keys
    names = tuple(dict.fromkeys(itertools.chain.from_iterable(shapes))) if points else columns
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow([inert(k) for k in names])
    parts = [buf.getvalue()]
    spread = {keys: _spread(keys, names) for keys in shapes if keys != names}
    rows = [spread[keys](values) if keys in spread else values for keys, values in points]
    for at in range(0, len(rows), 1000):
        chunk = rows[at : at + 1000]
        buf.seek(0)
        buf.truncate()
        # the rows as they are: a cell the writer starts with a formula's sign is refused
        writer.writerows(chunk)
        if not _formula_free(buf.getvalue()):
            buf.seek(0)
            buf.truncate()
            writer.writerows(  # ``inert`` only for text: a call per number was a third of 100k points' time
                [inert(v) if isinstance(v, str) else v for v in row] for row in chunk
            )
        parts.append(buf.getvalue())
    return "".join(parts).encode()


def _spread(keys: tuple[str, ...], names: tuple[str, ...]) -> Callable[[Sequence[object]], list[object]]:
    """A point's values (by ``keys``) under the table's columns ``names``: "" for a column it does not have."""
    at = {k: i for i, k in enumerate(keys)}
    picked = [at.get(name, len(keys)) for name in names]
    return lambda values: [(*values, "")[i] for i in picked]


def _formula_free(text: str) -> bool:
    """Whether no cell of CSV ``text`` (whole lines) starts with a sign of ``FORMULA_STARTS``, quoted or not:
    then ``inert`` changes none of its cells (a number starting with "-" is refused too). A sign that is not in
    the text at all is ruled out by one ``memchr``-fast pass; only the others are looked for after a cell's
    start."""
    if text[:1] in FORMULA_STARTS or (text[:1] == '"' and text[1:2] in FORMULA_STARTS):
        return False
    signs = [sign for sign in FORMULA_STARTS if sign in text]
    return not any(f"{before}{sign}" in text for sign in signs for before in _CELL_STARTS)


_CELL_STARTS = (",", "\n", ',"', '\n"')  # what a cell follows inside a CSV text: a comma or a line's end


def _csv_rows(store: Store, campaign: str, table: str, columns: tuple[str, ...], order: str) -> bytes:
    """A detail table (``oplat``) of the campaign as CSV, as ``_csv`` writes its rows as dicts:
    the header, then each row, its text cells made inert (``inert``).

    A chunk of rows is one ``%`` of a line per row (``str`` of each cell, as the CSV writer takes it) where its
    text cells are plain (``_csv_plain``: each distinct text checked once, ``_texts_are``); else the writer
    writes that chunk, its texts made inert."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow([inert(k) for k in columns])
    parts = [buf.getvalue().encode()]
    cells = ["{c}" if c in TEXT_COLUMNS else CSV_NUMBER for c in columns]
    texts = [i for i, c in enumerate(columns) if c in TEXT_COLUMNS]
    line = ",".join(["%s"] * len(columns)) + "\n"
    for rows in store.campaign_table(table, columns[1:], order, campaign, cell=cells):
        text = (line * len(rows)) % tuple(itertools.chain.from_iterable(rows))
        if _texts_are(rows, texts, _csv_plain):
            parts.append(text.encode())
            continue
        buf.seek(0)
        buf.truncate()
        writer.writerows([inert(v) for v in row] for row in rows)
        parts.append(buf.getvalue().encode())
    return b"".join(parts)


def _csv_plain(text: str) -> bool:
    """Whether the CSV writer writes ``text`` as it is and ``inert`` leaves it so: no character the writer
    quotes (``CSV_QUOTED``), no formula's sign first."""
    return not text.startswith(FORMULA_STARTS) and not any(c in text for c in CSV_QUOTED)


# the cells the CSV writer quotes hold one of these (it quotes ``,``, ``"`` and ``\n``; ``\r`` too in some
# Pythons): a chunk holding one in a text goes through the writer
CSV_QUOTED = ',"\n\r'
# the detail tables' columns of TEXT affinity: their values are text or NULL; the others finite numbers or NULL
# (the store refuses any other value, a blob, a text in a number column, an infinity, before a detail table
# is read: ``integrity.check_rows``)
TEXT_COLUMNS = frozenset({"point", "source", "metric", "host", "job", "ddir"})
# a number column's cell as SQLite reads it for CSV: the number as it is, NULL as "" (the writer's ``str`` of None)
CSV_NUMBER = "ifnull({c}, '')"


# A text cell starting with one of these is a formula to a spreadsheet (OWASP "CSV injection").
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def inert(value: object) -> object:
    """A CSV cell a spreadsheet will not run: text starting with ``= + - @``, a tab or a CR gets a leading
    ``'`` (which spreadsheets show as a text marker); numbers (int, float) are written as they are."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def _parquet(rows: list[TableRow], columns: tuple[str, ...], name: str) -> bytes:
    """The table as Parquet; an empty one keeps its ``columns`` (typed where ``COLUMN_TYPES`` knows them). A
    column Parquet cannot hold as one type (an integer beyond 2^53 beside decimals, text beside numbers or
    blobs: a store written by hand) is one ``InputError`` naming the store's table, point, column and value."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError as exc:
        raise InputError("--format parquet needs pyarrow: pip install 'vmio[parquet]'") from exc
    if rows:
        try:
            table = pa.Table.from_pylist(rows)
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as exc:
            raise _not_parquet(rows, name, exc) from None
    else:
        types = {"int": pa.int64(), "float": pa.float64(), "str": pa.string()}
        schema = pa.schema([(c, types[COLUMN_TYPES.get(c, "str")]) for c in columns])
        table = schema.empty_table()
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    return bytes(sink.getvalue().to_pybytes())


def _not_parquet(rows: list[TableRow], table: str, exc: Exception) -> InputError:
    """The column and value Arrow refused (found by converting each column alone), as one error."""
    import pyarrow as pa

    for column in dict.fromkeys(itertools.chain.from_iterable(rows)):
        values = [r.get(column) for r in rows]
        try:
            pa.array(values)
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as refused:
            at = _odd_value(values)
            return InputError(
                f"cannot export table {table} as Parquet: point {rows[at].get('point')!r}, column {column}: "
                f"{shown(values[at])} ({refused}); a Parquet column holds one type: --format csv or json "
                "writes every value as stored"
            )
    return InputError(f"cannot export table {table} as Parquet: {exc}")


def _odd_value(values: list[object]) -> int:
    """The index of the value that keeps ``values`` from being one Arrow column: an integer a double cannot
    hold exactly among decimals, else the first of a type other than the first value's."""
    kinds = [type(v) for v in values if v is not None]
    if float in kinds:
        for i, v in enumerate(values):
            if type(v) is int and abs(v) > 2**53:
                return i
    first = next(iter(kinds), type(None))
    numbers = {int, float}
    for i, v in enumerate(values):
        if v is not None and type(v) is not first and not {type(v), first} <= numbers:
            return i
    return 0


def check_output(path: Path) -> None:
    """Refuse an output path that is a folder or lies in a folder that does not exist."""
    check_output_file(path)


def _atomic(path: Path, data: bytes | Iterable[bytes]) -> None:
    """Write ``data`` to ``path`` through a private temporary file beside it (``files.write_atomic``)."""
    files.write_atomic(path, data)

"""The text ``vmio show --json`` prints, built straight from the ``run`` rows: 100k points in seconds.

``PointRow.to_json`` is the contract, printed by ``jsontext.dumps``. For a point whose summary and figures
are stored (every point a current vmio recorded or migrated) this builds the same text without a
``PointRow`` or a dict: the columns are selected in the order ``show`` prints them, a chunk's values are
gathered in one list, encoded in one call of the C encoder and set into a template per shape of row (which
keys, how many hosts and I/O threads). The templates are the text ``json.dumps`` prints of
``PointRow.to_json`` itself, with a slot for each value, so keys, their order and the indents are the
contract's. Other points (imports, a store whose stored columns were emptied) and any value the C encoder
does not take go through ``PointRow.to_json``; tests/test_show_json.py holds both against each other.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator, Mapping, Sequence
from json import encoder as _encoder
from typing import Any

from vmio.store import jsontext, rows, storage_fields, summaries
from vmio.store.database import Store
from vmio.store.point_metrics import CPU_FIELDS, DEVICE_FIELDS
from vmio.store.summaries import LAT_COLUMNS, LAT_NAMES

# the run columns in the order show prints them: the head, per direction its sums and latency then its job
# count, the hosts, the device's and CPU's figures, then what decides the rest
HEAD = ("point_key", "target", "target_kind", "workload", "bs", "offered_iops", "load_processes", "repetition",
        "status", "accel", "fio_version", "qemu_version", "device", "error")  # fmt: skip
DIRECTION = ("iops", "bw", *LAT_COLUMNS, "ops", "jobs")
FIGURES = (*DEVICE_FIELDS.values(), *CPU_FIELDS.values())
TAIL = ("hosts_json", "host_json", "qemu_cpu_json", "steady_json", "precondition_json", "fio_job_json",
        "iodepth", "numjobs", "offered_pct", "arrivals", "id")  # fmt: skip
COLUMNS = (*HEAD, *(f"{d}_{c}" for d in ("read", "write") for c in DIRECTION), *FIGURES, *TAIL)
_READ, _WRITE = len(HEAD), len(HEAD) + len(DIRECTION)
_FIGURES = _WRITE + len(DIRECTION)
_HOSTS, _FACTS, _QEMU, _STEADY, _PRECONDITION, _FIO_JOB, _IODEPTH, _NUMJOBS, _OFFERED_PCT, _ARRIVALS, _ID = (
    COLUMNS.index(c) for c in TAIL)  # fmt: skip
_KIND, _QEMU_VERSION = HEAD.index("target_kind"), HEAD.index("qemu_version")
_OFFERED = HEAD.index("offered_iops")
_MEAN, _OPS, _JOBS = (DIRECTION.index(c) for c in ("lat_mean", "ops", "jobs"))  # within a direction
QEMU_KEYS = ("vcpu", "main_loop", "iothreads", "other")
_SCALARS = (str, int, float, bool, type(None))
_SLOT = "\x00vmio: a value\x00"
_OPAQUE = {"\x00vmio: a nested value\x00": _SLOT}  # a whole nested value in one slot
_make = getattr(_encoder, "c_make_encoder", None)
CHUNK = 500  # points a time: their values are freed and their memory reused (2000: twice the page faults)


class _Generic(Exception):
    """This text is for ``PointRow.to_json`` and ``jsontext.dumps`` to print."""


def _refuse(_value: object) -> object:
    raise _Generic


def text(store: Store, campaign: str | None) -> str:
    """``jsontext.dumps([row.to_json(facts=False) for row in rows.point_rows(store, campaign)])``."""
    return "".join(pieces(store, campaign))


def pieces(store: Store, campaign: str | None) -> list[str]:
    """``text`` in pieces (so 100k points' text is not copied once more to be printed)."""
    with rows.gc_paused():  # 100k points are millions of small objects, none in a cycle
        names = [campaign] if campaign else store.campaigns()
        if campaign:
            store.require(campaign)
        if _make is None:
            return [_generic(store, names)]
        try:
            chunks = [chunk for name in names for chunk in _campaign(store, name)]
        except _Generic:
            return [_generic(store, names)]
    if not chunks:
        return ["[]"]
    out = ["[\n"]
    for chunk in chunks:
        out += (chunk, ",\n")
    out[-1] = "\n]"
    return out


def _generic(store: Store, names: list[str]) -> str:
    return jsontext.dumps(
        [row.to_json(facts=False) for name in names for row in rows.point_rows(store, name)]
    )


def _campaign(store: Store, name: str) -> Iterator[str]:
    """The campaign's points, each chunk's as one text (the rows' texts joined by ``,\\n``)."""
    detail = rows.Detail(store, name)
    for chunk in store.run_tuples(name, COLUMNS, CHUNK):
        values: list[object] = []
        nested: dict[int, str] = {}  # index in values -> the text of a value the template takes whole
        templates = [_point(name, r, values, nested, detail) for r in chunk]
        yield _fill(",\n".join(templates), values, nested)


def _fill(template: str, values: list[object], nested: dict[int, str]) -> str:
    """``template`` with its slots filled by ``values`` as JSON (one call of the C encoder), ``nested``'s
    indices by their texts."""
    encoded = "".join(_flat()(values, 0))[1:-1].split("\n")  # a JSON scalar's text holds no newline
    for i, value_text in nested.items():
        encoded[i] = value_text
    return template % tuple(encoded)


@functools.cache
def _flat() -> Any:
    """The C encoder for a flat list: its values one a line (JSON scalars, anything else refused). It is
    CPython's own (``json.encoder.c_make_encoder``, which ``json.dumps`` uses); where it is missing ``pieces``
    prints through ``PointRow.to_json``."""
    return _make(None, _refuse, _encoder.encode_basestring_ascii, None, ": ", "\n", False, False, True)  # type: ignore[misc]


def _point(
    campaign: str,
    r: Sequence[Any],
    values: list[object],
    nested: dict[int, str],
    detail: rows.Detail,
) -> str:
    """One point's template; its values appended to ``values`` (``nested``: those taken whole)."""
    if not _summed(r):
        row = rows.stored_row(campaign, dict(zip(COLUMNS, r, strict=True)), detail).to_json(facts=False)
        nested[len(values)] = " " + jsontext.dumps(row).replace("\n", "\n ")
        values.append(None)
        return "%s"
    values.append(campaign)
    values.extend(r[:_OFFERED])
    values.append("max" if r[_OFFERED] is None else r[_OFFERED])
    values.extend(r[_OFFERED + 1 : _READ])
    read, write = _direction(r, _READ, values), _direction(r, _WRITE, values)
    hosts = summaries.hosts(r[_HOSTS])
    values.extend(hosts)
    values.extend(r[_FIGURES:_HOSTS])
    facts = _facts(r[_FACTS])
    vm = r[_KIND] in ("qemu", "libvirt")
    _value(facts.get("qemu_machine", "q35" if r[_QEMU_VERSION] else None) if vm else None, values, nested)
    qemu = _qemu(json.loads(r[_QEMU]) if vm and r[_QEMU] != "null" else None, values, nested)
    _value(facts.get("guest_io_warnings"), values, nested)
    decoded = tuple(r[i] is not None for i in (_STEADY, _PRECONDITION, _FIO_JOB))
    for i in (_STEADY, _PRECONDITION, _FIO_JOB):
        if r[i] is not None:
            _whole(dict(json.loads(r[i])), values, nested)
    sweep = tuple(r[i] is not None for i in (_IODEPTH, _NUMJOBS, _OFFERED_PCT, _ARRIVALS))
    values.extend(v for v in r[_IODEPTH:_ID] if v is not None)
    dstore = facts.get("dstore")
    if isinstance(dstore, dict):
        _whole(dict(dstore), values, nested)
    storage = storage_fields.fields(facts.get("storage"))
    for value in (storage or {}).values():
        _value(value, values, nested)
    shape = (read, write, len(hosts), qemu, decoded, sweep, isinstance(dstore, dict), storage is not None)
    return _template(shape)


def _facts(text: str | None) -> Mapping[str, object]:
    """The host facts, decoded only when they can hold one that show prints: a JSON object's key is its
    name in quotes unless written with an escape (a VM point's facts are 1.5 kB, 12 µs to decode)."""
    if text and (
        '"qemu_machine"' in text
        or '"guest_io_warnings"' in text
        or '"dstore"' in text
        or '"storage"' in text
        or "\\" in text
    ):
        facts: Mapping[str, object] = json.loads(text)  # an object: the store's integrity check holds it
        return facts
    return {}


def _summed(r: Sequence[Any]) -> bool:
    """Whether a point's summary and figures are stored and it is not an import (whose fio figures are read
    from its results)."""
    jobs = r[_READ + _JOBS] is not None and r[_WRITE + _JOBS] is not None
    return jobs and r[_HOSTS] is not None and r[_QEMU] is not None and r[_KIND] != "import"


def _direction(r: Sequence[Any], at: int, values: list[object]) -> bool:
    """One direction's values as ``summaries.direction`` gives them; whether its latency is a dict."""
    if not int(r[at + _JOBS]):  # no job measured it: the sums of nothing
        values += (0, 0, 0)
        return False
    if r[at + _MEAN] is None:  # no latency stored
        values += (r[at], r[at + 1], r[at + _OPS])  # IOPS, bandwidth, operations
        return False
    values.extend(r[at : at + _JOBS])
    return True


def _value(value: object, values: list[object], nested: dict[int, str]) -> None:
    if type(value) in _SCALARS:
        values.append(value)
    else:
        _whole(value, values, nested)


def _whole(value: object, values: list[object], nested: dict[int, str]) -> None:
    """A value printed whole, as ``jsontext.dumps`` prints it at a row's key."""
    nested[len(values)] = jsontext.dumps(value).replace("\n", "\n  ")
    values.append(None)


def _qemu(qemu: object, values: list[object], nested: dict[int, str]) -> int | None:
    """QEMU's CPU by thread class: None (null), the I/O threads' count, or -1 (printed whole)."""
    if qemu is None:
        return None
    if (
        type(qemu) is dict
        and tuple(qemu) == QEMU_KEYS
        and type(threads := qemu["iothreads"]) is list
        and all(type(v) in _SCALARS for v in (qemu["vcpu"], qemu["main_loop"], qemu["other"], *threads))
    ):
        values += (qemu["vcpu"], qemu["main_loop"], *threads, qemu["other"])
        return len(threads)
    _whole(dict(qemu), values, nested)  # type: ignore[call-overload]
    return -1


@functools.cache
def _template(
    shape: tuple[bool, bool, int, int | None, tuple[bool, ...], tuple[bool, ...], bool, bool],
) -> str:
    """A row's text as an element of show's list, ``%s`` for each value: ``json.dumps`` of
    ``PointRow.to_json`` of a row of this shape whose values are slots."""
    read, write, hosts, qemu, decoded, sweep, dstore, storage = shape
    s: Any = _SLOT
    lat = {n: s for n in LAT_NAMES}
    whole: Any = _OPAQUE
    opaque: Any = (
        whole if qemu == -1 else {"vcpu": s, "main_loop": s, "iothreads": [s] * (qemu or 0), "other": s}
    )
    point = rows.PointRow(
        s, s, s, s, s, s, s, s, s, s, s, s, s, s, s, s, s, lat if read else None, s, s, s, lat if write else None, s,
        hosts=(s,) * hosts, device_metrics=dict.fromkeys(DEVICE_FIELDS.values(), s),
        cpu=dict.fromkeys(CPU_FIELDS.values(), s), host_facts={}, qemu_machine=s,
        qemu_cpu_pct=None if qemu is None else opaque, guest_io_warnings=s,
        steady=whole if decoded[0] else None, precondition=whole if decoded[1] else None,
        fio_job=whole if decoded[2] else None,
        **{k: s for k, on in zip(("iodepth", "numjobs", "offered_pct", "arrivals"), sweep, strict=True) if on},
        dstore=whole if dstore else None, storage=dict.fromkeys(storage_fields.KEYS, s) if storage else None,
    )  # fmt: skip
    text = json.dumps([point.to_json(facts=False)], indent=1)[2:-2]  # " {...}": the list's element
    slot = json.dumps(_SLOT)
    return (
        text.replace("%", "%%")
        .replace(json.dumps(whole, indent=1).replace("\n", "\n  "), slot)
        .replace(slot, "%s")
    )

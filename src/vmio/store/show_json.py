"""The text ``vmio show --json`` prints, built straight from the ``run`` rows: 100k points in seconds.

``PointRow.to_json`` is the one encoder: it alone says which keys a point prints, in which order (the stored
per-point fields as ``store.fields`` declares them, then the figures). For a point whose summary and figures
are stored (every point a current vmio recorded or migrated) this prints the same text without a ``PointRow``
or a dict per point: a point's sources are its columns plus the few values worked out from them; per shape of
row (which keys, how many hosts and I/O threads) a template is cached: ``json.dumps`` of ``to_json`` of a row
whose values name their sources, each slot ``%s``, with a getter that takes the sources in the slots' order.
A chunk's values are encoded in one call of the C encoder and set into the templates. Other points (imports, a
store whose stored columns were emptied) and any value the C encoder does not take go through
``PointRow.to_json`` and ``jsontext.dumps``; tests/test_show_json.py holds both against each other.
"""

from __future__ import annotations

import functools
import json
import operator
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from json import encoder as _encoder
from typing import Any

from vmio.store import fields, jsontext, rows, storage_fields, summaries
from vmio.store.database import Store
from vmio.store.point_metrics import CPU_FIELDS, DEVICE_FIELDS
from vmio.store.summaries import LAT_COLUMNS, LAT_NAMES

# the run columns in the order show prints them: the head (the declared fields printed first), per direction
# its sums and latency then its job count, the hosts, the device's and CPU's figures, then what decides the
# rest and the optional declared fields (printed where stored)
HEAD = tuple(f.column for f in fields.HEAD if f.column is not None)
DIRECTION = ("iops", "bw", *LAT_COLUMNS, "ops", "jobs")
FIGURES = (*DEVICE_FIELDS.values(), *CPU_FIELDS.values())
OPTIONAL = tuple(f.column for f in fields.OPTIONAL if f.column is not None)
TAIL = ("hosts_json", "host_json", "qemu_cpu_json", *OPTIONAL, "ended", "id")  # ended: an import's file
COLUMNS = (*HEAD, *(f"{d}_{c}" for d in ("read", "write") for c in DIRECTION), *FIGURES, *TAIL)
_READ, _WRITE = len(HEAD), len(HEAD) + len(DIRECTION)
_FIGURES = _WRITE + len(DIRECTION)
_HOSTS, _FACTS, _QEMU, _ID = (COLUMNS.index(c) for c in ("hosts_json", "host_json", "qemu_cpu_json", "id"))
# the optional fields' columns and whether each is a JSON text (printed whole)
_OPTIONAL = tuple(
    (COLUMNS.index(f.column), f.read == "json") for f in fields.OPTIONAL if f.column is not None
)
_KIND, _QEMU_VERSION = HEAD.index("target_kind"), HEAD.index("qemu_version")
_MEAN, _OPS, _JOBS = (DIRECTION.index(c) for c in ("lat_mean", "ops", "jobs"))  # within a direction
QEMU_KEYS = ("vcpu", "main_loop", "iothreads", "other")
_SCALARS = (str, int, float, bool, type(None))
# a point's sources after its columns: the campaign, the head's values as shown (offered_iops: "max"), zero (a
# direction no job measured), the QEMU machine, the guest's I/O warnings; then its hosts and what follows them
_HEAD_COLUMNS = [f for f in fields.HEAD if f.column is not None]
_SHOWN = {
    COLUMNS.index(f.column): f.shown for f in _HEAD_COLUMNS if f.read != "value" and f.column is not None
}
_CAMPAIGN = len(COLUMNS)
_ZERO = _CAMPAIGN + 1 + len(_SHOWN)
_MACHINE, _WARNINGS, _VARIABLE = _ZERO + 1, _ZERO + 2, _ZERO + 3
_HEAD_SOURCE = {
    f.name: _CAMPAIGN if f.column is None
    else _CAMPAIGN + 1 + list(_SHOWN).index(COLUMNS.index(f.column)) if f.read != "value"
    else COLUMNS.index(f.column)
    for f in fields.HEAD
}  # fmt: skip
_MARK = re.compile(r'"\\u0000(-?\d+)\\u0000"')  # a slot in json.dumps' text: its source's index
_make = getattr(_encoder, "c_make_encoder", None)
CHUNK = 500  # points a time: their values are freed and their memory reused (2000: twice the page faults)


class Untemplated(Exception):
    """This text is for ``PointRow.to_json`` and ``jsontext.dumps`` to print."""


def _refuse(_value: object) -> object:
    raise Untemplated


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
        except Untemplated:
            return [_generic(store, names)]
    return jsontext.list_pieces(chunks)


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
    """One point's template; its values appended to ``values`` (``nested``: those taken whole).

    The point's sources are its columns and, after them, the values worked out from them (``_EXTRA``, then
    its hosts, QEMU threads, dstore and storage); the shape's template says which source fills each slot.
    """
    if not _summed(r):
        row = rows.stored_row(campaign, dict(zip(COLUMNS, r, strict=True)), detail).to_json(facts=False)
        nested[len(values)] = " " + jsontext.dumps(row).replace("\n", "\n ")
        values.append(None)
        return "%s"
    src, whole, shape = _sources(campaign, r)
    template, take, slots = _template(shape)
    at = len(values)
    values.extend(take(src))
    for i, value in whole.items():
        text = _text(value)
        for slot in slots[i]:
            nested[at + slot] = text
    return template


def _sources(campaign: str, r: Sequence[Any]) -> tuple[list[object], dict[int, object], Shape]:
    """A summed point's sources (its columns, then the values worked out from them), the values printed whole
    by source index (None in ``src``), and its shape."""
    src = list(r)
    whole: dict[int, object] = {}  # source index -> a value printed whole
    src.append(campaign)
    src.extend(_SHOWN[i](r[i]) for i in _SHOWN)
    src.append(0)
    facts = _facts(r[_FACTS])
    vm = r[_KIND] in ("qemu", "libvirt")
    _value(facts.get("qemu_machine", "q35" if r[_QEMU_VERSION] else None) if vm else None, src, whole)
    _value(facts.get("guest_io_warnings"), src, whole)
    hosts = summaries.hosts(r[_HOSTS])
    src.extend(hosts)
    qemu = _qemu(json.loads(r[_QEMU]) if vm and r[_QEMU] != "null" else None, src, whole)
    stored = []  # which optional fields the point holds
    for i, is_json in _OPTIONAL:
        stored.append(r[i] is not None)
        if is_json and r[i] is not None:
            whole[i] = dict(json.loads(r[i]))
    dstore = facts.get("dstore")
    if isinstance(dstore, dict):
        _whole(dict(dstore), src, whole)
    storage = storage_fields.fields(facts.get("storage"))
    for value in (storage or {}).values():
        _value(value, src, whole)
    shape = (_direction(r, _READ), _direction(r, _WRITE), len(hosts), qemu, tuple(stored),
             isinstance(dstore, dict), storage is not None)  # fmt: skip
    return src, whole, shape


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


def _direction(r: Sequence[Any], at: int) -> int:
    """One direction as ``summaries.direction`` gives it: 0 no job measured it (the sums of nothing), 1 its
    sums without latency, 2 its sums and latency."""
    if not int(r[at + _JOBS]):
        return 0
    return 1 if r[at + _MEAN] is None else 2


def _text(value: object) -> str:
    """A value printed whole, as ``jsontext.dumps`` prints it at a row's key."""
    return jsontext.dumps(value).replace("\n", "\n  ")


def _value(value: object, src: list[object], whole: dict[int, object]) -> None:
    if type(value) in _SCALARS:
        src.append(value)
    else:
        _whole(value, src, whole)


def _whole(value: object, src: list[object], whole: dict[int, object]) -> None:
    whole[len(src)] = value
    src.append(None)


def _qemu(qemu: object, src: list[object], whole: dict[int, object]) -> int | None:
    """QEMU's CPU by thread class: None (null), the I/O threads' count, or -1 (printed whole)."""
    if qemu is None:
        return None
    if (
        type(qemu) is dict
        and tuple(qemu) == QEMU_KEYS
        and type(threads := qemu["iothreads"]) is list
        and all(type(v) in _SCALARS for v in (qemu["vcpu"], qemu["main_loop"], qemu["other"], *threads))
    ):
        src += (qemu["vcpu"], qemu["main_loop"], *threads, qemu["other"])
        return len(threads)
    _whole(dict(qemu), src, whole)  # type: ignore[call-overload]
    return -1


Shape = tuple[int, int, int, int | None, tuple[bool, ...], bool, bool]


def _slot(i: int) -> Any:
    """A template's value that names its source (Any: it stands for a value of any field's type)."""
    return f"\x00{i}\x00"


@functools.cache
def _template(shape: Shape) -> tuple[str, Callable[[list[object]], tuple[object, ...]], dict[int, list[int]]]:
    """A row's text as an element of show's list, ``%s`` for each value; the getter that takes the values
    from a point's sources in the slots' order; each source's slots.

    The text is ``json.dumps`` of ``PointRow.to_json`` (the one encoder: it alone says which keys, in which
    order) of a row of this shape whose values name their sources."""
    wholes: list[int] = []
    point = _slot_row(shape, wholes)
    text = json.dumps([point.to_json(facts=False)], indent=1)[2:-2].replace(
        "%", "%%"
    )  # " {...}": the element
    for i in wholes:
        text = text.replace(_text_of_whole(i), json.dumps(_slot(i)))
    pieces = _MARK.split(text)  # text, source, text, source, ..., text
    sources = [int(i) for i in pieces[1::2]]
    slots: dict[int, list[int]] = {}
    for k, i in enumerate(sources):
        slots.setdefault(i, []).append(k)
    return "%s".join(pieces[::2]), operator.itemgetter(*sources), slots


def _slot_row(shape: Shape, wholes: list[int], flat: bool = False) -> rows.PointRow:
    """A ``PointRow`` of this shape whose values name their sources (``_slot``; a value printed whole a dict
    ``{"\\x00whole\\x00": slot}``, its source appended to ``wholes``). ``flat``: as ``flat_rows`` reads it
    (``offered_iops`` and the hosts as the texts the flat table holds)."""
    read, write, hosts, qemu, stored, dstore, storage = shape

    def whole(i: int) -> Any:
        wholes.append(i)
        return {"\x00whole\x00": _slot(i)}

    def direction(state: int, at: int) -> dict[str, Any]:
        zero = _slot(_ZERO)
        lat = {n: _slot(at + 2 + k) for k, n in enumerate(LAT_NAMES)} if state == 2 else None
        if not state:
            return {"iops": zero, "bw": zero, "lat_ns": None, "ops": zero}
        return {"iops": _slot(at), "bw": _slot(at + 1), "lat_ns": lat, "ops": _slot(at + _OPS)}

    head = {f.name: _slot(_HEAD_SOURCE[f.name]) for f in fields.HEAD}
    if flat:
        head["offered_iops"] = _slot(_OFFERED_TEXT)
    optional = {
        f.name: whole(i) if is_json else _slot(i)
        for f, (i, is_json), on in zip(fields.OPTIONAL, _OPTIONAL, stored, strict=True)
        if on
    }
    at = _VARIABLE + hosts  # QEMU's threads, then dstore, then storage
    if qemu is None:
        qemu_cpu = None
    elif qemu == -1:
        qemu_cpu, at = whole(at), at + 1
    else:
        threads = [_slot(at + 2 + k) for k in range(qemu)]
        qemu_cpu = {
            "vcpu": _slot(at),
            "main_loop": _slot(at + 1),
            "iothreads": threads,
            "other": _slot(at + 2 + qemu),
        }
        at += 3 + qemu
    dstore_value = whole(at) if dstore else None
    at += bool(dstore)
    r, w = direction(read, _READ), direction(write, _WRITE)
    return rows.PointRow(
        **head, **optional,
        read_iops=r["iops"], read_bw=r["bw"], read_lat_ns=r["lat_ns"], read_ops=r["ops"],
        write_iops=w["iops"], write_bw=w["bw"], write_lat_ns=w["lat_ns"], write_ops=w["ops"],
        hosts=(_slot(_HOSTS_TEXT),) if flat else tuple(_slot(_VARIABLE + k) for k in range(hosts)),
        device_metrics={c: _slot(COLUMNS.index(c)) for c in DEVICE_FIELDS.values()},
        cpu={c: _slot(COLUMNS.index(c)) for c in CPU_FIELDS.values()}, host_facts={},
        qemu_machine=_slot(_MACHINE), qemu_cpu_pct=qemu_cpu, guest_io_warnings=_slot(_WARNINGS),
        dstore=dstore_value,
        storage={k: _slot(at + j) for j, k in enumerate(storage_fields.KEYS)} if storage else None,
    )  # fmt: skip


def _text_of_whole(i: int) -> str:
    return json.dumps({"\x00whole\x00": _slot(i)}, indent=1).replace("\n", "\n  ")


FlatRow = dict[str, object]
_OFFERED = COLUMNS.index("offered_iops")
# a flat row's sources after the point's own (``flat_rows``): offered_iops as the flat table's text, the hosts
# joined, None (a value the template holds as None)
_OFFERED_TEXT, _HOSTS_TEXT, _NONE = -3, -2, -1
_FLAT_SLOT = re.compile("\x00(-?\\d+)\x00")
_LAYERS = [f.name for f in fields.OPTIONAL].index("layers")
Build = Callable[[list[object]], object]
FlatTemplate = tuple[
    tuple[str, ...],
    Callable[[list[object]], Sequence[object]],
    tuple[tuple[int, Build], ...],
    dict[int, list[int]],
]


def flat_rows(store: Store, campaign: str, flatten: Callable[[rows.PointRow], FlatRow]) -> list[FlatRow]:
    """``[flatten(row) for row in rows.point_rows(store, campaign)]`` (``export``'s flat table), the same
    dicts without a ``PointRow`` per point (``flat_values``)."""
    return [dict(zip(keys, values, strict=True)) for keys, values in flat_values(store, campaign, flatten)]


def flat_values(
    store: Store, campaign: str, flatten: Callable[[rows.PointRow], FlatRow]
) -> list[tuple[tuple[str, ...], Sequence[object]]]:
    """``flat_rows``, each point as its keys (one tuple shared by the points of a shape) and its values."""
    with rows.gc_paused():
        return [(keys, values) for keys, values, _ in _flat_points(store, campaign, flatten)]


def flat_text(
    store: Store, campaign: str, flatten: Callable[[rows.PointRow], FlatRow], indent: str = ""
) -> str:
    """``jsontext.dumps(flat_rows(store, campaign, flatten))``, the same text as ``text`` prints show's: one
    template per tuple of keys, each chunk's scalars encoded in one call of the C encoder. ``indent``: each
    line but the first indented by it (the list nested in a document: ``.replace("\n", "\n" + indent)``, a
    JSON string holding no newline), the templates indented once, not the whole text copied."""
    with rows.gc_paused():
        try:
            return flat_list(list(flat_items(store, campaign, flatten, "\n" + indent)), "\n" + indent)
        except Untemplated:
            return jsontext.dumps(flat_rows(store, campaign, flatten)).replace("\n", "\n" + indent)


def flat_list(items: Sequence[str], newline: str) -> str:
    """The list of ``flat_items``' pieces: ``[``, the pieces one after another, ``]``."""
    return "[" + newline + ("," + newline).join(items) + newline + "]" if items else "[]"


def flat_items(
    store: Store,
    campaign: str,
    flatten: Callable[[rows.PointRow], FlatRow],
    newline: str,
    chunks: Iterable[list[tuple[Any, ...]]] | None = None,
) -> Iterator[str]:
    """The items of ``flat_text``'s list, a chunk of points a piece (their texts joined by ``,`` and
    ``newline``): a summed point's text is its shape's (``_flat_row_template``: its values, those of nested QEMU
    threads too, taken from its sources in one getter), any other point's the one of its tuple of keys
    (``_keys_template``) over ``flatten`` of it. ``chunks``: the points' ``COLUMNS`` (``Store.run_tuples``),
    all the campaign's when None. Raises ``Untemplated`` where a value is not for the templates."""
    if _make is None:
        raise Untemplated
    store.require(campaign)
    detail = rows.Detail(store, campaign)
    indented: dict[str, str] = {}  # a template -> its lines after the first indented (``newline``)

    def lines(text: str) -> str:
        return text if newline == "\n" else text.replace("\n", newline)

    for chunk in store.run_tuples(campaign, COLUMNS, CHUNK) if chunks is None else chunks:
        values: list[object] = []
        nested: dict[int, str] = {}  # index in values -> the text of a value printed whole
        templates: list[str] = []
        for r in chunk:
            made = None
            if _summed(r):
                src, whole, shape = _sources(campaign, r)
                made = _flat_row_template(shape, flatten)
            at = len(values)
            if made is None:
                flat = flatten(rows.stored_row(campaign, dict(zip(COLUMNS, r, strict=True)), detail))
                template = _keys_template(tuple(flat))
                values.extend(flat.values())
                for k, value in enumerate(flat.values()):
                    if type(value) not in _SCALARS:
                        nested[at + k] = lines(_text(value))
                        values[at + k] = None
            else:
                template, take, slots = made
                src += _flat_tail(r)
                values.extend(take(src))
                for i, value in whole.items():
                    text = lines(_text(value))
                    for slot in slots.get(i, ()):
                        nested[at + slot] = text
            templates.append(indented.get(template) or indented.setdefault(template, lines(template)))
        if templates:
            yield _fill(("," + newline).join(templates), values, nested)


def _flat_tail(r: Sequence[Any]) -> tuple[object, ...]:
    """What a flat row's templates read after a point's ``_sources``: its offered load as text ("max" for
    none), its hosts joined, and an empty value."""
    offered = r[_OFFERED]
    return ("max" if offered is None else str(offered), " ".join(summaries.hosts(r[_HOSTS])), None)


@functools.cache
def _flat_row_template(
    shape: Shape, flatten: Callable[[rows.PointRow], FlatRow]
) -> tuple[str, Callable[[list[object]], Sequence[object]], dict[int, list[int]]] | None:
    """A flat row's text as an element of a list, ``%s`` for each value, as ``_template`` makes show's: the
    getter of its values from a point's sources (after them: offered_iops' text, the hosts joined, None) and
    each source's slots; None where ``flatten`` must read the point itself (``_flat_template``) or a value is
    not one slot."""
    if _flat_template(shape, flatten) is None:
        return None
    wholes: list[int] = []
    text = json.dumps([flatten(_slot_row(shape, wholes, flat=True))], indent=1)[2:-2].replace("%", "%%")
    for i in wholes:
        text = text.replace(_text_of_whole(i), json.dumps(_slot(i)))
    pieces = _MARK.split(text)
    if any("\\u0000" in piece for piece in pieces[::2]) or len(pieces) < 5:  # a slot inside a text; one value
        return None
    sources = [int(i) for i in pieces[1::2]]
    slots: dict[int, list[int]] = {}
    for k, i in enumerate(sources):
        slots.setdefault(i, []).append(k)
    return "%s".join(pieces[::2]), operator.itemgetter(*sources), slots


@functools.lru_cache(maxsize=256)
def _keys_template(keys: tuple[str, ...]) -> str:
    """A flat row's text as an element of a list (``json.dumps(..., indent=1)``), ``%s`` for each value."""
    if any("\x00" in k for k in keys):  # a key that could read as a slot
        raise Untemplated
    text = json.dumps([{k: _slot(i) for i, k in enumerate(keys)}], indent=1)[2:-2].replace("%", "%%")
    pieces = _MARK.split(text)
    if [int(i) for i in pieces[1::2]] != list(range(len(keys))):
        raise Untemplated
    return "%s".join(pieces[::2])


def _flat_points(
    store: Store, campaign: str, flatten: Callable[[rows.PointRow], FlatRow]
) -> Iterator[tuple[tuple[str, ...], Sequence[object], Sequence[int] | None]]:
    """Each point's keys, values and the places of the values that can be containers (None: any).

    Per shape of row, ``flatten`` of a row whose values name their sources (as ``_template``) says which
    source fills each key; a point's values are then one getter of its sources. A point ``flatten`` spreads
    out by content (traced layers, a dstore profile), or that is not summed, goes through ``flatten`` itself;
    tests/test_export_tables.py holds both against each other."""
    store.require(campaign)
    detail = rows.Detail(store, campaign)
    for chunk in store.run_tuples(campaign, COLUMNS, CHUNK):
        for r in chunk:
            made = None
            if _summed(r):
                src, whole, shape = _sources(campaign, r)
                made = _flat_template(shape, flatten)
            if made is None:
                flat = flatten(rows.stored_row(campaign, dict(zip(COLUMNS, r, strict=True)), detail))
                yield tuple(flat), tuple(flat.values()), None
                continue
            keys, take, builds, at_source = made
            maybe = [at for at, _ in builds]
            for i, value in whole.items():
                src[i] = value
                maybe += at_source.get(i, ())
            src += _flat_tail(r)
            values = take(src)
            if builds:
                values = list(values)
                for at, build in builds:
                    values[at] = build(src)
            yield keys, values, maybe


@functools.cache
def _flat_template(shape: Shape, flatten: Callable[[rows.PointRow], FlatRow]) -> FlatTemplate | None:
    """A flat row's keys, the getter of its values from a point's sources, the values built from several
    sources (QEMU's CPU by thread) and each source's places; None where ``flatten`` must read the point
    itself."""
    if shape[5] or shape[4][_LAYERS]:  # a dstore profile, traced layers: columns named by their content
        return None
    flat = flatten(_slot_row(shape, [], flat=True))
    keys = tuple(flat)
    if any("\x00" in k for k in keys):
        return None
    sources: list[int] = []
    builds: list[tuple[int, Build]] = []
    for at, value in enumerate(flat.values()):
        i = _source_of(value)
        if i is None:
            build = _builder(value)
            if build is None:
                return None
            builds.append((at, build))
            i = _NONE
        sources.append(i)
    at_source: dict[int, list[int]] = {}
    for at, i in enumerate(sources):
        at_source.setdefault(i, []).append(at)
    return keys, operator.itemgetter(*sources), tuple(builds), at_source


def _source_of(value: object) -> int | None:
    """The source a template's value names (a slot, or a value printed whole), else None."""
    if type(value) is dict and len(value) == 1 and "\x00whole\x00" in value:
        value = value["\x00whole\x00"]
    if type(value) is str and (found := _FLAT_SLOT.fullmatch(value)):
        return int(found[1])
    return None


def _builder(value: object) -> Build | None:
    """How a template's value is built from a point's sources: a container of slots, a constant; None for
    anything else (a text with a slot inside it)."""
    i = _source_of(value)
    if i is not None:
        return operator.itemgetter(i)
    if type(value) in _SCALARS and not (type(value) is str and "\x00" in value):
        return lambda _src: value
    if type(value) is dict:
        parts = {k: _builder(v) for k, v in value.items()}
        if any(b is None or "\x00" in k for k, b in parts.items()):
            return None
        made = [(k, b) for k, b in parts.items() if b is not None]
        return lambda src: {k: b(src) for k, b in made}
    if type(value) is list:
        items = [_builder(v) for v in value]
        if any(b is None for b in items):
            return None
        made_items = [b for b in items if b is not None]
        return lambda src: [b(src) for b in made_items]
    return None

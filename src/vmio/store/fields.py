"""The stored per-point fields, declared once: each one's name, SQL type, unit, JSON name and how it is read.

``StoredPoint`` is the declaration: one line per field, ``name: type = stored(SQL, ...)``. Everything else
derives from it: ``RunRecord`` (what a run writes) and ``PointRow`` (what ``show`` reads) inherit its fields;
``Store.record`` inserts the ``run`` columns it names; ``rows`` reads them back; ``show --json`` prints them
(the head fields always, in this order, before the figures; the optional ones after the figures, only where
stored). ``tests/test_architecture.py`` holds the declaration against the schema the migrations build.

A new field is one line here (optional, so that older points read as they always did), its migration in
``schema.MIGRATIONS`` and that schema's fixture (``scripts/store-fixture.py``).
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import KW_ONLY, dataclass, field
from typing import Any, Literal, TypedDict


class Steady(TypedDict):
    """Whether a point's measured jobs reached fio's steady state, and when the last one did."""

    criterion: str
    reached: bool
    at_s: float | None
    jobs: int


class Precondition(TypedDict):
    """The target's preconditioning (SNIA PTS), recorded on the point that followed it."""

    size: int | None
    fill_bytes: int
    random_bytes: int
    seconds: float


class FioJob(TypedDict):
    """A workload taken from a person's fio job file: the file, its section, the options vmio replaced."""

    file: str
    section: str
    replaced: list[str]


Read = Literal["value", "json", "max"]  # as stored; a JSON text (decoded); a number or None printed "max"


@dataclass(frozen=True, slots=True)
class Field:
    """One stored per-point field: its attribute ``name``, ``run`` column (None: not a column of its own),
    SQL type, unit, ``show --json`` key, how it is read, and whether ``show --json`` prints it only where
    stored (``optional``: a field a later migration added, NULL on older points)."""

    name: str
    column: str | None
    sql: str | None
    unit: str | None
    json: str
    read: Read
    optional: bool

    def to_column(self, value: object) -> object:
        """The value as the ``run`` column holds it."""
        if self.read == "json" and value is not None:
            return json.dumps(value, sort_keys=True)
        return value

    def from_column(self, value: Any) -> Any:
        """The column's value as the row type holds it."""
        if self.read == "json" and value is not None:
            return json.loads(value)
        return value

    def load(self, run: Any) -> Any:
        """The field's value read from a ``run`` row (a ``sqlite3.Row``, or a dict by column)."""
        return None if self.column is None else self.from_column(run[self.column])

    def shown(self, value: Any) -> Any:
        """The value as ``show --json`` prints it."""
        if self.read == "max" and value is None:
            return "max"
        if self.read == "json" and value is not None:
            return dict(value)
        return value


def stored(
    sql: str | None,
    *,
    unit: str | None = None,
    json: str | None = None,
    read: Read = "value",
    column: str | None = "",
    optional: bool = False,
) -> dict[str, object]:
    """A ``StoredPoint`` field's declaration, as its ``dataclasses.field`` metadata (``json`` and ``column``
    default to its name)."""
    return {
        "vmio": {"sql": sql, "unit": unit, "json": json, "read": read, "column": column, "optional": optional}
    }


def optional(
    sql: str, *, unit: str | None = None, json: str | None = None, read: Read = "value", column: str = ""
) -> Any:
    """A field a later migration added: None on older points, and ``show --json`` prints it only where
    stored."""
    return field(
        default=None, metadata=stored(sql, unit=unit, json=json, read=read, column=column, optional=True)
    )


@dataclass(slots=True)
class StoredPoint:
    """The fields a point is stored with and read back with (``RunRecord`` and ``PointRow`` are ones)."""

    campaign: str = field(metadata=stored(None, column=None))  # the campaign's row (run.campaign_id)
    point_key: str = field(metadata=stored("TEXT NOT NULL", json="point"))
    target: str = field(metadata=stored("TEXT NOT NULL"))
    target_kind: str = field(metadata=stored("TEXT NOT NULL"))
    workload: str = field(metadata=stored("TEXT NOT NULL"))
    bs: int = field(metadata=stored("INTEGER NOT NULL", unit="bytes"))
    offered_iops: int | None = field(metadata=stored("INTEGER", unit="IO/s", read="max"))  # None: unthrottled
    load_processes: int = field(metadata=stored("INTEGER NOT NULL"))
    repetition: int = field(metadata=stored("INTEGER NOT NULL"))
    status: str = field(metadata=stored("TEXT NOT NULL"))  # "done" | "failed"
    _: KW_ONLY
    accel: str | None = field(default=None, metadata=stored("TEXT"))
    fio_version: str | None = field(default=None, metadata=stored("TEXT"))
    qemu_version: str | None = field(default=None, metadata=stored("TEXT"))
    device: str | None = field(default=None, metadata=stored("TEXT"))
    error: str | None = field(default=None, metadata=stored("TEXT"))
    # added by later migrations: printed only where stored, so older points read as they always did
    steady: Steady | None = optional("TEXT", column="steady_json", read="json")
    precondition: Precondition | None = optional("TEXT", column="precondition_json", read="json")
    fio_job: FioJob | None = optional("TEXT", column="fio_job_json", read="json")
    iodepth: int | None = optional("INTEGER")  # the queue depth each job ran at
    numjobs: int | None = optional("INTEGER")  # each fio process's jobs (a VM's jobs_per_vm)
    offered_pct: float | None = optional("REAL", unit="%")  # of the max point's achieved IOPS
    arrivals: str | None = optional("TEXT")  # an offered rate's spacing: "uniform" | "poisson"
    # where the latency went, per layer and direction (docs/layers.md): {layer: {read, write}} or its ``why``
    layers: dict[str, Any] | None = optional("TEXT", column="layers_json", read="json")


def declared(cls: type[Any] = StoredPoint) -> tuple[Field, ...]:
    """The fields ``cls`` declares with ``stored``, in order."""
    out = []
    for f in dataclasses.fields(cls):
        meta = f.metadata.get("vmio")
        if meta is None:
            continue
        column = f.name if meta["column"] == "" else meta["column"]
        out.append(Field(f.name, column, meta["sql"], meta["unit"], meta["json"] or f.name, meta["read"],
                         meta["optional"]))  # fmt: skip
    return tuple(out)


FIELDS = declared()
COLUMNS = tuple(f for f in FIELDS if f.column is not None)  # the fields with run columns, in order
COLUMN_NAMES = tuple(f.column for f in COLUMNS if f.column is not None)
HEAD = tuple(f for f in FIELDS if not f.optional)  # printed first, always
OPTIONAL = tuple(f for f in FIELDS if f.optional)  # printed after the figures, where stored
HEAD_SHOWN = tuple((f.json, f.name, f.read == "max") for f in HEAD)  # ``Field.shown``: "max" for None
assert all(f.read != "json" for f in HEAD), "a head field read as JSON: PointRow.to_json shows it as is"
_AS_STORED = tuple((f.name, f.column) for f in COLUMNS if f.read != "json" and f.column is not None)
_DECODED = tuple((f.name, f.column) for f in COLUMNS if f.read == "json" and f.column is not None)


def load_columns(run: Any) -> dict[str, Any]:
    """Every ``COLUMNS`` field's value read from a ``run`` row, by name: ``Field.load`` of each, without a
    call per field (``show``, ``compare`` and ``export`` read 20 of them from each of 100k points)."""
    out = {name: run[column] for name, column in _AS_STORED}
    for name, column in _DECODED:
        value = run[column]
        out[name] = None if value is None else json.loads(value)
    return out

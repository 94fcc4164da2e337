"""What the cluster's own OSD map said while one profile point ran: which OSDs were down at any time between
the point's start and its end, and the cluster's health right after it.

``ceph osd dump`` is read before the point and after it; when the map changed in between (its epoch rose),
every map in between is read too (``ceph osd dump EPOCH``: the mon keeps hundreds of past maps), so an OSD
that went down and came back inside the point is seen all the same, and nothing polls the cluster while
fio measures. A point on a cluster with an OSD down still measures something real (a replicated pool keeps
serving I/O with ``min_size`` copies), but not the healthy cluster: the profile says so per point.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from vmio.dstore.cluster import ceph, health
from vmio.errors import ClusterError
from vmio.system.process import Runner

MAX_EPOCHS = 50  # maps read between a point's first and last (more: the first and last only, said so)
TIMEOUT_S = 30.0


@dataclass
class Seen:
    """OSDs down in any map from ``epochs[0]`` to ``epochs[1]``; ``health`` after the point."""

    down: set[int] = field(default_factory=set)
    epochs: list[int] = field(default_factory=list)
    health: str | None = None
    note: str | None = None  # a map that could not be read, or too many to read


def osd_map(
    runner: Runner, conf: Path, epoch: int | None = None, auth: Sequence[str] = ()
) -> tuple[int, set[int]]:
    """(epoch, ids of the OSDs that map shows down) from ``ceph osd dump [EPOCH] --format json``."""
    args = ["osd", "dump", *([str(epoch)] if epoch is not None else []), "--format", "json"]
    dump = json.loads(ceph(runner, conf, *args, timeout=TIMEOUT_S, auth=auth))
    return int(dump["epoch"]), {int(o["osd"]) for o in dump.get("osds", []) if not o.get("up")}


@contextlib.contextmanager
def watch_point(runner: Runner, conf: Path, auth: Sequence[str] = ()) -> Iterator[Seen]:
    """The OSD maps around the block's work (a failed read is noted, never fatal: the point's figures
    stand on their own)."""
    seen = Seen()
    first = _read(seen, runner, conf, auth=auth)
    try:
        yield seen
    finally:
        last = _read(seen, runner, conf, auth=auth)
        if first is not None and last is not None:
            seen.epochs = [first, last]
            between = range(first + 1, last)
            if len(between) > MAX_EPOCHS:
                seen.note = (
                    f"{len(between)} OSD maps between epochs {first} and {last}; read the first and last"
                )
            else:
                for epoch in between:
                    _read(seen, runner, conf, epoch, auth)
        with contextlib.suppress(ClusterError, ValueError, KeyError):
            seen.health = health(runner, conf, TIMEOUT_S, auth)[0]


def _read(
    seen: Seen, runner: Runner, conf: Path, epoch: int | None = None, auth: Sequence[str] = ()
) -> int | None:
    try:
        got, down = osd_map(runner, conf, epoch, auth)
    except (ClusterError, ValueError, KeyError, TypeError) as exc:
        seen.note = f"`ceph osd dump{'' if epoch is None else f' {epoch}'}` failed: {str(exc)[:200]}"
        return None
    seen.down |= down
    return got

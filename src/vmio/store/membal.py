"""Live controller runs and decisions in the store (tables ``membal_run`` and ``membal_decision``).

Every decision is stored with its inputs (the guest's signals, the policy's observation, the overhead and
the balloon's actual size) so a run can be replayed through ``governor.govern`` afterwards.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from vmio.store.database import Store


@dataclass(frozen=True)
class DecisionRow:
    """One VM's decision at one step, as stored."""

    step: int
    t: float
    vm: str
    inputs: Mapping[str, object]  # the signals the policy read, as stored (JSON)
    old_target: int
    new_target: int
    actual: int | None
    policy: str
    reason: str


def start_run(
    store: Store,
    policy: str,
    settings: Mapping[str, Any],
    *,
    accel: str | None = None,
    qemu_version: str | None = None,
    qemu_argv: Sequence[Sequence[str]] | None = None,
) -> int:
    """A new run in state 'running'; its id."""
    with store.transaction() as db:
        cur = db.execute(
            "INSERT INTO membal_run (started, policy, settings, accel, qemu_version, qemu_argv, status) "
            "VALUES (?, ?, ?, ?, ?, ?, 'running')",
            (
                time.time(),
                policy,
                json.dumps(settings, sort_keys=True),
                accel,
                qemu_version,
                json.dumps([list(a) for a in qemu_argv]) if qemu_argv is not None else None,
            ),
        )
        return int(cur.lastrowid or 0)


def add_decisions(store: Store, run_id: int, rows: Sequence[DecisionRow]) -> None:
    """One step's decisions, written together."""
    with store.transaction() as db:
        db.executemany(
            "INSERT INTO membal_decision (run_id, t, step, vm, inputs, old_target, new_target, actual, "
            "policy, reason) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    run_id,
                    r.t,
                    r.step,
                    r.vm,
                    json.dumps(r.inputs, sort_keys=True),
                    r.old_target,
                    r.new_target,
                    r.actual,
                    r.policy,
                    r.reason,
                )
                for r in rows
            ],
        )


def finish_run(
    store: Store, run_id: int, status: str, summary: Mapping[str, Any] | None = None, error: str | None = None
) -> None:
    with store.transaction() as db:
        db.execute(
            "UPDATE membal_run SET ended = ?, status = ?, summary = ?, error = ? WHERE id = ?",
            (time.time(), status, json.dumps(summary, sort_keys=True) if summary else None, error, run_id),
        )


def run_row(store: Store, run_id: int) -> sqlite3.Row | None:
    row: sqlite3.Row | None = store.db.execute("SELECT * FROM membal_run WHERE id = ?", (run_id,)).fetchone()
    return row


def decisions(store: Store, run_id: int) -> list[DecisionRow]:
    """A run's decisions in step order, then VM."""
    rows = store.db.execute(
        "SELECT * FROM membal_decision WHERE run_id = ? ORDER BY step, vm", (run_id,)
    ).fetchall()
    return [
        DecisionRow(
            r["step"],
            r["t"],
            r["vm"],
            json.loads(r["inputs"]),
            r["old_target"],
            r["new_target"],
            r["actual"],
            r["policy"],
            r["reason"],
        )
        for r in rows
    ]

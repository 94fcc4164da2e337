"""The live controller on recorded guest agent records (no VMs): signals, pressure, decisions, the store."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from vmio.errors import InputError
from vmio.membal.governor import Rules
from vmio.membal.live import LIVE_POLICIES, LiveController, check_live_policy
from vmio.membal.signals import PAGE, pressure, signals
from vmio.qemu.agent import AgentRecord, split_records
from vmio.store import Store
from vmio.store.membal import decisions, finish_run, run_row, start_run

M = 1 << 20
DATA = Path(__file__).parent / "data" / "membal_agent_randread.txt"


def recorded() -> list[AgentRecord]:
    records, _ = split_records(DATA.read_text())
    return records


class RecordedGuest:
    """A guest replaying recorded agent records, one per ``records()`` call; its balloon follows at once."""

    def __init__(self, name: str, records: list[AgentRecord]) -> None:
        self.name = name
        self.memory = 512 * M
        self.queue = list(records)
        self.target = 0
        self.set_calls: list[int] = []

    def set_target(self, target: int) -> None:
        self.target = target
        self.set_calls.append(target)

    def actual(self) -> int:
        return self.target

    def records(self) -> list[AgentRecord]:
        return [self.queue.pop(0)] if self.queue else []


def idle(count: int) -> list[AgentRecord]:
    """A guest that does nothing: the capture's first record, its uptime advancing."""
    first = recorded()[0]
    return [replace(first, uptime=first.uptime + i) for i in range(count)]


def test_signals_of_an_idle_and_a_thrashing_interval() -> None:
    recs = recorded()
    calm = signals(recs[1], recs[2])
    assert (calm.refaults, calm.activations, calm.read_pages) == (0, 0, 0)
    assert calm.pressure.source == "psi" and not calm.pressure.under
    assert calm.file == 0 and calm.free == 128244 * 1024
    hot = signals(recs[-3], recs[-2])
    assert hot.activations > 1000 and hot.refaults > hot.activations and hot.read_pages > 0.9 * hot.refaults
    assert hot.pressure.under and 0.05 < hot.pressure.stall < 1.0
    obs = hot.observation()
    assert obs.resident == hot.file // PAGE and obs.allocation == (hot.free + hot.file) // PAGE


def test_without_psi_direct_reclaim_or_swap_is_pressure() -> None:
    a, b = recorded()[-3:-1]
    strip = {k: v for k, v in b.vmstat.items() if not k.startswith("psi_")}
    b = replace(b, vmstat=strip)
    p = pressure(a, b)
    assert p.source == "vmstat" and p.reclaim == 0 and not p.under
    stalled = replace(b, vmstat={**strip, "allocstall_normal": a.vmstat["allocstall_normal"] + 3})
    assert pressure(a, stalled).under and pressure(a, stalled).reclaim == 3
    swapped = replace(b, vmstat={**strip, "pswpin": a.vmstat.get("pswpin", 0) + 5})
    assert pressure(a, swapped).under and pressure(a, swapped).reclaim == 5
    # with PSI present the stall share decides, not the counters: 30 ms stalled per second is pressure
    seconds = b.uptime - a.uptime
    psi = replace(
        b, vmstat={**b.vmstat, "psi_memory_some_us": a.vmstat["psi_memory_some_us"] + int(0.03e6 * seconds)}
    )
    assert pressure(a, psi).source == "psi" and pressure(a, psi).stall == pytest.approx(0.03, abs=1e-4)
    assert pressure(a, psi).under and not pressure(a, psi, psi_threshold=0.05).under
    swapped = replace(b, vmstat={**strip, "pswpout": 10})
    assert pressure(a, swapped).under


@pytest.mark.parametrize("name", ["marginal", "nonsense"])
def test_policies_a_guest_cannot_feed_are_refused(name: str) -> None:
    with pytest.raises(InputError, match="live policies are equal, refault, mom, efficiency"):
        check_live_policy(name)
    assert name not in LIVE_POLICIES


def rules() -> Rules:
    return Rules(
        budget=576 * M,
        floors=(256 * M, 256 * M),
        ceilings=(512 * M, 512 * M),
        max_step=32 * M,
        min_move=8 * M,
        deflate=32 * M,
    )


@pytest.mark.parametrize("policy", ["refault", "mom"])
def test_a_thrashing_guest_is_deflated_from_an_idle_one_and_every_decision_is_stored(policy: str) -> None:
    loaded = RecordedGuest("vm-loaded", recorded())
    quiet = RecordedGuest("vm-idle", idle(len(loaded.queue)))
    with Store(":memory:") as store:
        run_id = start_run(store, policy, {"test": True})
        control = LiveController([loaded, quiet], rules(), policy, store=store, run_id=run_id)
        control.start(settle=1.0)
        assert (loaded.target, quiet.target) == (288 * M, 288 * M)
        while len(loaded.queue) > 1:
            control.step(wait=1.0)
        finish_run(store, run_id, "done", control.summary())
        rows = decisions(store, run_id)
        row = run_row(store, run_id)
    assert row is not None and row["status"] == "done"
    assert len(rows) == 2 * len(control.steps)
    mine = [r for r in rows if r.vm == "vm-loaded"]
    pressed = [r for r in mine if "pressure" in r.reason]
    assert pressed and all(r.new_target >= r.old_target for r in pressed)  # never shrunk under pressure
    assert pressed[0].new_target > pressed[0].old_target  # deflated while the idle guest had room to give
    assert pressed[0].inputs["signals"]["pressure"]["under"]
    assert pressed[0].inputs["observation"]["resident"] == pressed[0].inputs["signals"]["file"] // PAGE
    assert (
        pressed[0].inputs["signals"]["activations"]
        == control.steps[pressed[0].step].vms[0].signals.activations
    )
    assert loaded.target > 288 * M and quiet.target < 288 * M
    assert all(r.new_target >= 256 * M for r in rows)  # floors
    assert all(abs(r.new_target - r.old_target) <= 32 * M for r in rows)  # max step
    assert loaded.target + quiet.target <= 576 * M
    assert control.summary()["vm-loaded"]["pressure_steps"] == len(pressed)

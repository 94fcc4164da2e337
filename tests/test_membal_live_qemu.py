"""The live controller on two real VMs (TCG here): balloons move and QEMU follows, a guest under memory
pressure is deflated, floors hold, decisions are stored with their inputs; and the ``vmio membal run`` CLI."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from vmio.cli import main
from vmio.guest import GuestImage
from vmio.membal.balloon import BalloonedVM
from vmio.membal.live import LiveController
from vmio.membal.liverun import LiveSettings, vm_configs
from vmio.membal.livework import Load, LoadRun
from vmio.qemu import AccelProber, Fleet, QemuCaps
from vmio.store import Store
from vmio.store.membal import DecisionRow, decisions, finish_run, run_row, start_run

from qemu_support import caps, needs_qemu, session_guest

pytestmark = [pytest.mark.qemu, pytest.mark.fio, needs_qemu]
M = 1 << 20


@pytest.fixture(scope="module")
def guest(tmp_path_factory: pytest.TempPathFactory) -> GuestImage:
    return session_guest(tmp_path_factory)


@pytest.fixture(scope="module")
def qcaps() -> QemuCaps:
    return caps()


def settle(vm: BalloonedVM, target: int, timeout: float = 15.0) -> int:
    """The balloon's size once it reached ``target`` (or when ``timeout`` ran out)."""
    deadline = time.monotonic() + timeout
    while (actual := vm.actual()) != target and time.monotonic() < deadline:
        time.sleep(0.2)
    return actual


MOVED_S = 90.0  # the longest the controller runs for the moves the test reads


def _both_moved(rows: list[DecisionRow]) -> bool:
    """The loaded guest (vmio-0) deflated under pressure and the idle one (vmio-1) shrunk by the policy."""
    return any(
        r.vm == "vmio-0" and "pressure" in r.reason and r.new_target > r.old_target for r in rows
    ) and any(r.vm == "vmio-1" and r.reason == "policy" and r.new_target < r.old_target for r in rows)


def test_balloons_follow_the_controller_and_a_pressured_guest_is_deflated(
    guest: GuestImage, qcaps: QemuCaps, tmp_path: Path
) -> None:
    settings = LiveSettings(
        policy="mom", budget=576 * M, max_step=32 * M, interval=1.5, duration=12.0, loads=(Load(260 * M),)
    )
    accel = AccelProber(guest, qcaps, cache_dir=guest.path.parents[1] / "accel").resolve("auto").accel
    configs = vm_configs(settings, accel, tmp_path)
    with (
        Fleet(configs, guest, caps=qcaps, workdir=tmp_path / "vms") as fleet,
        Store(tmp_path / "m.db") as store,
    ):
        guests = [BalloonedVM(vm) for vm in fleet.vms]
        run_id = start_run(store, "mom", settings.to_json(), accel=accel)
        control = LiveController(guests, settings.rules(), "mom", store=store, run_id=run_id)
        control.start()
        assert [settle(g, 288 * M) for g in guests] == [288 * M, 288 * M]  # QEMU took the initial targets
        vm0 = fleet.vms[0]
        # steps of 1.5 s until the loaded guest was deflated under pressure and the idle one shrunk: on a
        # quiet host within the 12 s of ``duration``; a busy host delays the guests' fio and their pressure
        load = LoadRun([(vm0.fio_client, settings.loads[0], vm0.guest_devices()[0])], MOVED_S + 10, tmp_path)
        deadline = time.monotonic() + MOVED_S
        try:
            control.run(settings.duration, settings.interval)
            while not _both_moved(decisions(store, run_id)) and time.monotonic() < deadline:
                control.run(settings.interval, settings.interval)
        finally:
            load.stop()
        finals = [settle(g, t) for g, t in zip(guests, control.targets, strict=True)]
        finish_run(store, run_id, "done", control.summary())
        rows = decisions(store, run_id)
        assert run_row(store, run_id)["status"] == "done"  # type: ignore[index]
        for g in guests:
            g.close()
    assert finals == control.targets  # the sizes QEMU reports follow the controller
    loaded = [r for r in rows if r.vm == "vmio-0"]
    idle = [r for r in rows if r.vm == "vmio-1"]
    assert any("pressure" in r.reason and r.new_target > r.old_target for r in loaded), [
        r.reason for r in loaded
    ]
    assert control.targets[0] > 288 * M  # deflated: memory given back to the guest under pressure
    assert control.targets[1] < 288 * M  # the idle guest's unused memory was taken
    assert any(r.reason == "policy" and r.new_target < r.old_target for r in idle), [r.reason for r in idle]
    assert all(r.new_target >= 256 * M and (r.actual or 0) >= 256 * M for r in rows)  # floors never crossed
    assert all(abs(r.new_target - r.old_target) <= 32 * M for r in rows)
    assert sum(control.targets) <= 576 * M
    first = next(r for r in loaded if "pressure" in r.reason)
    assert first.inputs["signals"]["pressure"]["source"] == "psi"  # the guests boot with psi=1
    assert first.inputs["signals"]["pressure"]["stall"] >= 0.01 and first.inputs["signals"]["read_pages"] > 0
    assert idle[-1].inputs["signals"]["read_pages"] < first.inputs["signals"]["read_pages"]


def test_cli_run_prints_steps_and_stores_the_run(
    guest: GuestImage, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(guest.path.parents[2]))  # the session's guest and accel choice
    config = tmp_path / "live.toml"
    config.write_text('[run]\npolicy = "equal"\ninterval = "1s"\nduration = "3s"\n\n[[vm]]\nfloor = "300M"\n')
    db = tmp_path / "live.db"
    code = main(
        [
            "membal",
            "run",
            "--config",
            str(config),
            "--memory",
            "400M",
            "--floor",
            "256M",
            "--db",
            str(db),
            "--json",
        ]
    )
    out = capsys.readouterr()
    assert code == 0, out.err
    data = json.loads(out.out)
    assert data["settings"]["floors"] == [256 * M, 256 * M]  # the command line wins over the file
    assert data["settings"]["policy"] == "equal" and len(data["steps"]) == 3
    with Store(db) as store:
        rows = decisions(store, data["run_id"])
    assert len(rows) == 6 and {r.vm for r in rows} == {"vmio-0", "vmio-1"}
    assert all(r.policy == "equal" and r.new_target >= 256 * M for r in rows)

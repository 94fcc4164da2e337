"""Faults injected into real campaigns: the point fails naming where, the campaign goes on, nothing is left.

An unreachable remote is a closed port on 127.0.0.1; a fio server is killed while its point runs; fio is
killed at its deadline with its JSON unwritten. Each time the stored outcome is checked, and that no fio
process of the test outlives it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from vmio.campaign import measure
from vmio.cli import main
from vmio.store import Store
from vmio.system.ports import free_port
from vmio.targets.remote import LocalFioServer

from conftest import SESSION_MARK, leftover_processes
from qemu_support import needs_qemu

pytestmark = pytest.mark.fio


def spec(tmp: Path, scratch: Path, remote: str, runtime: str = "2s") -> Path:
    (scratch / "remote.img").write_bytes(b"\xa5" * (4 << 20))
    path = tmp / "f.toml"
    path.write_text(
        f'[campaign]\nname = "faults"\n'
        f'[[target]]\nname = "far"\nkind = "remote"\nhosts = ["{remote}"]\npaths = ["{scratch}/remote.img"]\n'
        'size = "4M"\n'
        f'[[target]]\nname = "near"\nkind = "host"\npath = "{scratch}/near.img"\nsize = "4M"\n'
        f'[[workload]]\nname = "rr"\nrw = "randread"\nbs = "4k"\nruntime = "{runtime}"\n'
    )
    return path


def outcome(db: Path) -> dict[str, tuple[str, str | None]]:
    with Store(db, readonly=True) as s:
        return {r["target"]: (r["status"], r["error"]) for r in s.runs("faults")}


def fio_left(marker: Path) -> str:
    """fio processes whose command line contains ``marker`` (a folder of the test, a server's option)."""
    out = subprocess.run(["pgrep", "-af", "fio"], capture_output=True, text=True, timeout=10).stdout
    return "\n".join(line for line in out.splitlines() if str(marker) in line and "pgrep" not in line)


def test_a_closed_port_fails_its_point_by_name_and_the_campaign_goes_on(
    fio: str, scratch: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    address = f"127.0.0.1:{free_port()}"  # nothing listens there
    db = tmp_path / "f.db"
    code = main(
        ["run", str(spec(tmp_path, scratch, address)), "--db", str(db), "--workdir", str(tmp_path / "w")]
    )
    assert code == 1
    got = outcome(db)
    assert got["far"][0] == "failed" and address in (got["far"][1] or "")
    assert got["near"] == ("done", None)
    assert "failed: far/rr" in capsys.readouterr().out
    assert fio_left(tmp_path) == ""


def test_a_fio_server_dying_mid_point(fio: str, scratch: Path, tmp_path: Path) -> None:
    db = tmp_path / "f.db"
    with LocalFioServer() as server:
        killer = threading.Timer(2.0, lambda: os.killpg(server.proc.popen.pid, signal.SIGKILL))
        killer.start()
        try:
            started = time.monotonic()
            code = main(["run", str(spec(tmp_path, scratch, server.address, runtime="6s")), "--db", str(db),
                         "--workdir", str(tmp_path / "w")])  # fmt: skip
        finally:
            killer.cancel()
        assert server.proc.popen.poll() is not None, "the server was not killed during the point"
    assert code == 1
    assert time.monotonic() - started > 2.0
    got = outcome(db)
    assert got["far"][0] == "failed" and server.address in (got["far"][1] or "")
    assert got["near"] == ("done", None)
    time.sleep(0.5)
    assert fio_left(tmp_path) == ""
    assert fio_left(Path(f"--server=127.0.0.1,{server.port}")) == ""  # nor any process of the server


def test_fio_killed_at_its_deadline_is_a_failed_point_with_the_reason(
    fio: str, scratch: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # deadline = runtime + ramp + grace; a negative grace makes fio overrun a 3 s job by design
    monkeypatch.setattr(measure, "FIO_GRACE_S", -2.0)
    path = tmp_path / "t.toml"
    path.write_text(
        f'[campaign]\nname = "faults"\n[[target]]\nname = "near"\nkind = "host"\npath = "{scratch}/t.img"\n'
        'size = "4M"\n[[workload]]\nname = "slow"\nrw = "randread"\nbs = "4k"\nruntime = "3s"\n'
        '[[workload]]\nname = "ok"\nrw = "randread"\nbs = "4k"\nruntime = "3s"\noffered_iops = [100]\n'
    )
    db = tmp_path / "t.db"
    assert main(["run", str(path), "--db", str(db), "--workdir", str(tmp_path / "w")]) == 1
    with Store(db, readonly=True) as s:
        runs = {r["workload"]: r for r in s.runs("faults")}
    for run in runs.values():  # both overran: each is failed, named, with fio's partial output kept
        assert run["status"] == "failed"
        assert run["error"].startswith("fio on local: fio did not finish within 1 s and was killed")
    assert len(list((tmp_path / "w").glob("*/fio-output.txt"))) == 2
    assert fio_left(tmp_path) == ""


def our_qemus() -> list[int]:
    return [pid for pid, _ in leftover_processes(os.environ[SESSION_MARK])
            if Path(f"/proc/{pid}/comm").read_text().startswith("qemu-system")]  # fmt: skip


@needs_qemu
@pytest.mark.qemu
def test_qemu_dying_mid_point_fails_that_point_with_its_console_and_the_next_boots_afresh(
    fio: str, scratch: Path, tmp_path: Path
) -> None:
    path = tmp_path / "q.toml"
    path.write_text(
        f'[campaign]\nname = "faults"\n[[target]]\nname = "vm"\nkind = "qemu"\nbacking = ["{scratch}/q.img"]\n'
        'size = "32M"\n'
        '[[workload]]\nname = "first"\nrw = "randread"\nbs = "4k"\nruntime = "6s"\n'
        '[[workload]]\nname = "second"\nrw = "randread"\nbs = "4k"\nruntime = "1s"\n'
    )  # fmt: skip
    db, work = tmp_path / "q.db", tmp_path / "w"
    killed: list[int] = []
    seen: set[int] = set()

    def kill_qemu_inside_the_first_point() -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not list(work.glob("vm_first_*/job0.fio")):
            seen.update(our_qemus())
            time.sleep(0.05)
        time.sleep(2.0)  # fio is running in the guest
        for pid in our_qemus():
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)
        while time.monotonic() < deadline and not list(work.glob("vm_second_*/job0.fio")):
            seen.update(our_qemus())
            time.sleep(0.05)

    killer = threading.Thread(target=kill_qemu_inside_the_first_point)
    killer.start()
    try:
        code = main(["run", str(path), "--db", str(db), "--workdir", str(work)])
    finally:
        killer.join(timeout=150)
    assert len(killed) == 1, "no QEMU was running during the first point"
    assert code == 1
    with Store(db, readonly=True) as s:
        runs = {r["workload"]: r for r in s.runs("faults")}
    first, second = runs["first"], runs["second"]
    assert first["status"] == "failed"
    assert first["error"].startswith(
        f"QEMU for vmio-0 (pid {killed[0]}) exited (killed by signal 9) during the point"
    ), first["error"]
    assert "console" in (first["log"] or "") and "VMIO-READY" in first["log"]  # the tail of its console
    assert second["status"] == "done", second["error"]
    assert seen - set(killed), "the second point did not boot a QEMU of its own"
    time.sleep(0.5)
    assert our_qemus() == []

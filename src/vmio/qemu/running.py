"""Running QEMU processes and what they say about themselves: command line, then QMP (or libvirt).

``find_qemus(proc_root)`` scans ``/proc`` for ``qemu-system-*`` processes and parses each command line.
``ask(proc)`` asks the QEMU over its QMP socket (or through ``virsh qemu-monitor-command`` for a libvirt
domain when virsh is installed) for its version, disks (query-block), iothreads (query-iothreads), vCPU
threads and per-disk I/O counters. A QMP socket already held by another client (QEMU serves one at a time)
does not answer; the QEMU is then described from its command line alone, and the report says so. A
session vmio opens is held for the sampling window only, then closed.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import pwd
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from vmio.errors import ToolError
from vmio.qemu import cmdline
from vmio.qemu.cmdline import CmdDisk, Cmdline
from vmio.qemu.qmp import QMPConnection
from vmio.system.process import Runner
from vmio.system.safety import is_block_device

QMP_TIMEOUT = 2.0  # seconds; a QMP socket held by another client never greets


@dataclass(frozen=True)
class QemuProcess:
    pid: int
    exe: str
    cmd: Cmdline
    uids: tuple[int, ...] = (0,)  # real, effective, saved and filesystem uid (/proc/PID/status)


LIBVIRT_QEMU_USER = "libvirt-qemu"


def trusted_uids() -> frozenset[int]:
    """Whose QEMUs ``diagnose --live`` contacts unasked: root, the invoking user (also behind sudo) and
    libvirt's QEMU user. Another user's QEMU could name a QMP socket or a domain of its choosing."""
    uids = {0, os.getuid()}
    if os.environ.get("SUDO_UID", "").isdigit():
        uids.add(int(os.environ["SUDO_UID"]))
    with contextlib.suppress(KeyError):
        uids.add(pwd.getpwnam(LIBVIRT_QEMU_USER).pw_uid)
    return frozenset(uids)


def _uids(entry: Path) -> tuple[int, ...]:
    """The process's uids from ``status`` (the directory's owner is root for a non-dumpable process)."""
    try:
        for line in (entry / "status").read_text().splitlines():
            if line.startswith("Uid:"):
                return tuple(int(u) for u in line.split()[1:])
    except (OSError, ValueError):
        pass
    try:
        return (entry.stat().st_uid,)
    except OSError:
        return (-1,)


class Monitor(Protocol):
    via: str

    def execute(self, command: str, arguments: dict[str, object] | None = None) -> Any: ...

    def close(self) -> None: ...


@dataclass
class BlockCounters:
    read_ops: int
    write_ops: int
    read_bytes: int
    write_bytes: int


@dataclass
class QmpFacts:
    """What QMP said; ``error`` when it could not be asked (then everything else is empty)."""

    via: str | None = None
    error: str | None = None
    version: str | None = None
    disks: list[CmdDisk] = field(default_factory=list)
    iothread_tids: dict[str, int] = field(default_factory=dict)
    vcpu_tids: list[int] = field(default_factory=list)

    @property
    def reachable(self) -> bool:
        return self.error is None and self.via is not None


def find_qemus(proc_root: Path = Path("/proc")) -> list[QemuProcess]:
    """Every ``qemu-system-*`` process under ``proc_root``, by pid."""
    found = []
    for entry in proc_root.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            raw = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        argv = tuple(a.decode(errors="replace") for a in raw.split(b"\0") if a)
        if not cmdline.is_qemu(argv):
            continue
        try:
            exe = str((entry / "exe").readlink())
        except OSError:
            exe = argv[0]
        found.append(QemuProcess(int(entry.name), exe, cmdline.parse(argv), _uids(entry)))
    return sorted(found, key=lambda q: q.pid)


class VirshMonitor:
    """QMP through libvirt: ``virsh qemu-monitor-command DOMAIN JSON``."""

    def __init__(self, domain: str, runner: Runner) -> None:
        self.domain, self.runner, self.via = domain, runner, f"virsh qemu-monitor-command {domain}"

    def execute(self, command: str, arguments: dict[str, object] | None = None) -> Any:
        request = json.dumps({"execute": command, **({"arguments": arguments} if arguments else {})})
        done = self.runner.run(["virsh", "qemu-monitor-command", self.domain, request], timeout=10)
        return json.loads(done.stdout)["return"]

    def close(self) -> None:
        return None


class SocketMonitor:
    def __init__(self, path: str, timeout: float) -> None:
        self.via = path
        self.conn = QMPConnection(Path(path), name="vmio-diagnose", timeout=timeout)
        quiet = logging.getLogger("qemu.qmp")
        level = quiet.level
        quiet.setLevel(logging.CRITICAL)  # a held socket is expected; the report says so, not a log line
        try:
            self.conn.connect()
        except ToolError as exc:
            self.conn.close()
            why = str(exc.__cause__ or exc)
            if isinstance(exc.__cause__, TimeoutError):
                why = f"no greeting within {timeout:g} s; QEMU serves one QMP client at a time, another may hold it"
            raise ToolError(f"QMP socket {path!r} did not answer: {why}") from exc
        finally:
            quiet.setLevel(level)

    def execute(self, command: str, arguments: dict[str, object] | None = None) -> Any:
        return self.conn.execute(command, arguments)

    def close(self) -> None:
        self.conn.close()


def open_monitor(proc: QemuProcess, runner: Runner, timeout: float = QMP_TIMEOUT) -> Monitor:
    """libvirt's monitor when virsh is here and the QEMU is a libvirt domain, else the QMP socket."""
    domain = _libvirt_domain(proc.cmd.argv)
    if domain is not None and shutil.which("virsh"):
        return VirshMonitor(domain, runner)
    if proc.cmd.qmp is None:
        raise ToolError("its command line has no QMP unix socket (-qmp unix:PATH or -chardev socket + -mon)")
    return SocketMonitor(proc.cmd.qmp, timeout)


def _libvirt_domain(argv: tuple[str, ...]) -> str | None:
    names = cmdline.options(argv, "-name")
    opts = cmdline.split_opts(names[0], "name") if names else {}
    return str(opts["guest"]) if "guest" in opts else None


def ask(proc: QemuProcess, open_fn: Callable[[QemuProcess], Monitor]) -> tuple[QmpFacts, Monitor | None]:
    """Ask the QEMU over QMP; the monitor is returned open, for the counters at the end of sampling."""
    try:
        mon = open_fn(proc)
    except ToolError as exc:
        return QmpFacts(error=str(exc)), None
    facts = QmpFacts(via=mon.via)
    try:
        version = mon.execute("query-version")["qemu"]
        facts.version = f"{version['major']}.{version['minor']}.{version['micro']}"
        facts.iothread_tids = {t["id"]: int(t["thread-id"]) for t in mon.execute("query-iothreads")}
        with contextlib.suppress(ToolError):  # QEMU before 2.12 has no query-cpus-fast: names decide
            facts.vcpu_tids = [int(c["thread-id"]) for c in mon.execute("query-cpus-fast")]
        facts.disks = [_disk(mon, b, proc.cmd) for b in mon.execute("query-block") if b.get("inserted")]
    except (ToolError, KeyError, TypeError, ValueError) as exc:
        mon.close()
        return QmpFacts(error=f"QMP did not answer as expected: {exc}"), None
    return facts, mon


def _disk(mon: Monitor, block: dict[str, Any], cmd: Cmdline) -> CmdDisk:
    inserted = block["inserted"]
    node = str(inserted.get("node-name") or block.get("device"))
    qdev = str(block.get("qdev") or "")
    dev_id = qdev.removeprefix("/machine/peripheral/").split("/")[0] if "/peripheral/" in qdev else None
    path, protocol = file_of(str(inserted.get("file", "")))
    known = next((d for d in cmd.disks if d.device_id == dev_id or d.drive == node), None)
    iothread = known.iothread if known else None
    if iothread is None and qdev:
        with contextlib.suppress(ToolError, KeyError, TypeError):
            link = mon.execute("qom-get", {"path": qdev, "property": "iothread"})
            iothread = str(link).rsplit("/", 1)[-1] or None
    bus = known.bus if known else "virtio-blk"
    if bus == "virtio-blk" and (protocol == "host_device" or (path and is_block_device(path))):
        bus = "block"
    return CmdDisk(dev_id, node, path, bus, iothread, known.vq_mapping if known else False)


def file_of(filename: str) -> tuple[str | None, str | None]:
    """(host path, protocol driver) of a block node's filename, which may be a ``json:{...}`` pseudo-name."""
    if not filename:
        return None, None
    if not filename.startswith("json:"):
        return filename, None
    try:
        node: Any = json.loads(filename[len("json:") :])
    except json.JSONDecodeError:
        return None, None
    while isinstance(node, dict):
        if isinstance(node.get("filename"), str):
            return node["filename"], node.get("driver")
        node = node.get("file")
    return None, None


def block_counters(mon: Monitor) -> dict[str, BlockCounters]:
    """Per-disk I/O counters by node name and by device id (query-blockstats)."""
    out: dict[str, BlockCounters] = {}
    for entry in mon.execute("query-blockstats"):
        s = entry["stats"]
        counters = BlockCounters(s["rd_operations"], s["wr_operations"], s["rd_bytes"], s["wr_bytes"])
        qdev = str(entry.get("qdev") or "")
        for key in (entry.get("node-name"), qdev.removeprefix("/machine/peripheral/").split("/")[0]):
            if key:
                out[str(key)] = counters
    return out

"""Programs run inside a guest through the QEMU guest agent: ``guest-exec``, then ``guest-exec-status``.

No guest network is needed: the agent listens on the domain's virtio-serial port ``org.qemu.guest_agent.0``
and libvirt relays its commands (``virsh qemu-agent-command``), for local and remote URIs alike.
"""

from __future__ import annotations

import base64
import contextlib
import time
from dataclasses import dataclass
from typing import Any

from vmio.errors import InputError, ToolError
from vmio.libvirt.domxml import DiskShape
from vmio.libvirt.virsh import Virsh


@dataclass(frozen=True)
class Exited:
    """What a guest program left: its exit code (None when a signal ended it), stdout and stderr."""

    exitcode: int | None
    signal: int | None
    out: str
    err: str


def start(virsh: Virsh, domain: str, path: str, args: list[str], input_text: str | None = None) -> int:
    """Start ``path ARGS`` in the guest (``input_text`` on its stdin); its guest PID."""
    request: dict[str, object] = {"path": path, "arg": args, "capture-output": True}
    if input_text is not None:
        request["input-data"] = base64.b64encode(input_text.encode()).decode()
    answer = virsh.agent(domain, "guest-exec", request)
    return int(answer["pid"])


def wait(virsh: Virsh, domain: str, pid: int, timeout: float, poll: float = 0.5) -> Exited:
    """Wait for guest process ``pid``; past ``timeout`` it is killed in the guest and a ``ToolError`` raised."""
    deadline = time.monotonic() + timeout
    while True:
        status = virsh.agent(domain, "guest-exec-status", {"pid": pid})
        if status.get("exited"):
            return Exited(
                status.get("exitcode"),
                status.get("signal"),
                _decoded(status.get("out-data")),
                _decoded(status.get("err-data")),
            )
        if time.monotonic() > deadline:
            with contextlib.suppress(ToolError):
                start(virsh, domain, "kill", ["-9", str(pid)])
            raise ToolError(f"domain {domain!r}: guest process {pid} did not finish within {timeout:g} s")
        time.sleep(poll)


def run(
    virsh: Virsh,
    domain: str,
    path: str,
    args: list[str],
    timeout: float = 30.0,
    input_text: str | None = None,
) -> Exited:
    """Run ``path ARGS`` in the guest to its end."""
    return wait(virsh, domain, start(virsh, domain, path, args, input_text), timeout, poll=0.1)


def check_ready(virsh: Virsh, domain: str, tools: tuple[str, ...] = ("fio",)) -> None:
    """The domain runs, its agent answers and runs programs, and ``tools`` are in its PATH; else one
    sentence naming the domain and what is missing (``InputError``)."""
    state = virsh.state(domain)
    if state != "running":
        raise InputError(f"domain {domain!r} on {virsh.uri} is {state}, not running; start it first")
    try:
        virsh.agent(domain, "guest-ping", timeout=10)
    except ToolError as exc:
        said = [line for line in exc.output.splitlines() if line.strip()]
        why = said[-1].strip().removeprefix("error: ") if said else "no answer"
        raise InputError(
            f"domain {domain!r} on {virsh.uri} has no QEMU guest agent answering (libvirt: {why}); install "
            f"qemu-guest-agent in the guest and give the domain a virtio-serial channel named "
            f"org.qemu.guest_agent.0"
        ) from None
    for tool in tools:
        try:
            done = run(virsh, domain, tool, ["--version"], timeout=30)
        except ToolError:
            done = Exited(127, None, "", "")
        if done.exitcode != 0:
            raise InputError(
                f"domain {domain!r} on {virsh.uri} has no {tool} in its PATH; install {tool} in the guest"
            )


def guest_device(virsh: Virsh, name: str, disk: DiskShape) -> str:
    """The guest's name for ``disk``: matched by PCI address (virtio-blk) or SCSI unit (virtio-scsi)
    against the guest agent's ``guest-get-disks``."""
    try:
        found = virsh.agent(name, "guest-get-disks")
    except ToolError as exc:
        raise InputError(
            f"domain {name!r}: its guest agent cannot list disks (guest-get-disks): {exc}"
        ) from None
    for entry in found:
        if _same_disk(entry, disk):
            return str(entry.get("name"))
    raise InputError(
        f"domain {name!r}: the guest shows no disk at {disk.dev}'s address {disk.address} (its disks: "
        f"{', '.join(str(e.get('name')) for e in found) or 'none'})"
    )


def _same_disk(entry: dict[str, Any], disk: DiskShape) -> bool:
    addr = entry.get("address") or {}
    want = disk.address
    if disk.serial and addr.get("serial") == disk.serial:
        return True
    if disk.bus == "virtio-blk" and want.get("type") == "pci":
        pci = addr.get("pci-controller") or {}
        have = (pci.get("bus"), pci.get("slot"), pci.get("function"))
        return have == tuple(int(want.get(k, "0"), 0) for k in ("bus", "slot", "function"))
    if disk.bus == "virtio-scsi" and want.get("type") == "drive" and addr.get("bus-type") == "scsi":
        unit = (addr.get("target"), addr.get("unit"))
        return unit == (int(want.get("target", "0")), int(want.get("unit", "0")))
    return False


def clock_offset(virsh: Virsh, domain: str) -> float:
    """The guest's wall clock minus this host's, in seconds (``guest-get-time``, taken mid-call)."""
    before = time.time()
    guest_ns = int(virsh.agent(domain, "guest-get-time"))
    after = time.time()
    return round(guest_ns / 1e9 - (before + after) / 2, 3)


def _decoded(data: object) -> str:
    return base64.b64decode(str(data)).decode(errors="replace") if data else ""

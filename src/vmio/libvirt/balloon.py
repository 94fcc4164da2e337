"""A running domain's balloon through libvirt: its target (``virsh setmem --live``), its statistics
(``virsh dommemstat``, what the guest's virtio balloon driver reports) and, where the domain runs vmio's
own guest agent (canaries), the host end of its ``vmio.agent`` port.

``dommemstat`` values are KiB: ``actual`` (the balloon's size), ``available`` (the guest's MemTotal),
``unused`` (MemFree), ``usable`` (MemAvailable), ``disk_caches`` (file pages), ``major_fault``,
``minor_fault``, ``swap_in``, ``swap_out`` (since boot) and ``last_update`` (when the guest last sent
them, in seconds). The guest sends them only when the balloon's statistics period is set
(``<memballoon><stats period="N"/>``, or ``virsh dommemstat --period N --live``).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

from vmio.errors import InputError, ToolError
from vmio.libvirt.virsh import Virsh, is_local

VMIO_AGENT_PORT = "vmio.agent"


@dataclass(frozen=True)
class BalloonDomain:
    """What the controller needs to know of a domain before it drives its balloon."""

    name: str
    uri: str
    running: bool
    balloon: bool  # a virtio balloon
    memory: int  # bytes: the domain's maximum memory (``<memory>``), the balloon's ceiling
    stats_period: int  # seconds between the guest's balloon statistics (0: not sent)
    agent_port: bool  # a virtio-serial port named vmio.agent (vmio's own agent, in canaries)
    agent_socket: Path | None  # its host end, for a running domain on a local URI; else None

    def check(self) -> None:
        """Running, with a virtio balloon; else one sentence (``InputError``)."""
        if not self.running:
            raise InputError(f"domain {self.name!r} on {self.uri} is not running; start it first")
        if not self.balloon:
            raise InputError(
                f"domain {self.name!r} on {self.uri} has no virtio balloon; give it <memballoon model='virtio'>"
            )


def read_domain(virsh: Virsh, name: str) -> BalloonDomain:
    """A domain's balloon, memory and vmio agent port, from its XML (live when it runs)."""
    running = virsh.state(name) == "running"
    try:
        dom = ET.fromstring(virsh.dumpxml(name))
    except ET.ParseError as exc:
        raise InputError(f"domain {name!r} on {virsh.uri}: its XML does not parse: {exc}") from None
    balloon = dom.find("devices/memballoon")
    virtio = balloon is not None and balloon.get("model", "").startswith("virtio")
    stats = balloon.find("stats") if balloon is not None else None
    period = int(stats.get("period", "0")) if stats is not None else 0
    mem = dom.find("memory")
    if mem is None or not (mem.text or "").strip().isdigit():
        raise InputError(f"domain {name!r} on {virsh.uri}: its XML names no <memory>")
    memory = int(mem.text or "0") * _UNITS.get(mem.get("unit", "KiB"), 1024)
    port, socket = False, None
    for channel in dom.findall("devices/channel"):
        target, source = channel.find("target"), channel.find("source")
        if target is not None and target.get("name") == VMIO_AGENT_PORT:
            port = True
            if source is not None and source.get("path") and running and is_local(virsh.uri):
                socket = Path(source.get("path", ""))
    return BalloonDomain(name, virsh.uri, running, virtio, memory, period, port, socket)


_UNITS = {"b": 1, "bytes": 1, "KiB": 1024, "k": 1024, "MiB": 1 << 20, "M": 1 << 20, "GiB": 1 << 30}


def set_period(virsh: Virsh, name: str, seconds: int) -> None:
    """Ask the guest's balloon driver for statistics every ``seconds`` (the running domain only)."""
    virsh.run("dommemstat", name, "--period", str(seconds), "--live")


def memstat(virsh: Virsh, name: str) -> dict[str, int]:
    """``virsh dommemstat``: name → value (KiB, counts for the faults, seconds for ``last_update``)."""
    done = virsh.run("dommemstat", name, timeout=30)
    out: dict[str, int] = {}
    for line in done.stdout.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].lstrip("-").isdigit():
            out[parts[0]] = int(parts[1])
    if "actual" not in out:
        raise ToolError(
            f"domain {name!r} on {virsh.uri}: dommemstat reports no balloon size", output=done.stdout
        )
    return out


def set_target(virsh: Virsh, name: str, target: int) -> None:
    """The balloon's target: the guest keeps ``target`` bytes (``virsh setmem --live``, KiB)."""
    virsh.run("setmem", name, "--size", f"{target >> 10}KiB", "--live", timeout=30)

"""The configuration guideline (seed 000, Fig. 9) as a decision over requirements and host facts.

(a) Will capacity grow by adding VMs (scale-out)? yes → "1 fio/VM x N": one job per VM, as many VMs as
needed. no → (c) tune one VM: (d) can a device be dedicated to it? yes → "N fio/VM + passthrough";
no → (e) "N fio/VM + iothread" on virtio-blk, else plain "N fio/VM". Extended with what the seed could not
know: passthrough blocks live migration; QEMU >= 9.0 spreads one disk's queues over several iothreads
(``iothread-vq-mapping``), which this host's QEMU is asked about; two or more SSDs → spread the disks.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from vmio.advise import thresholds as t
from vmio.advise.disk_config import LIBVIRT_VQ_MAPPING, Config, libvirt_xml, maps_queues, qemu_args
from vmio.advise.inventory import BlockDevice, HostFacts
from vmio.errors import InputError

ADVISE_BUSES = ("virtio-blk", "virtio-scsi", "block", "vfio")
SHARED_BUSES = ("virtio-blk", "virtio-scsi")
SCALE_OUT = "1 fio/VM x N"
PASSTHROUGH = "N fio/VM + passthrough"
IOTHREAD = "N fio/VM + iothread"
ONE_VM = "N fio/VM"
DEFAULT_IMAGE = "/var/lib/vmio/vm0.raw"


@dataclass(frozen=True)
class Requirements:
    """What the operator needs; each answers one question of Fig. 9."""

    scale_out: bool = False
    dedicated_disk: bool = False
    buses: tuple[str, ...] = ADVISE_BUSES
    live_migration: bool = False


@dataclass(frozen=True)
class PathStep:
    node: str
    question: str
    answer: str


@dataclass(frozen=True)
class Advice:
    config: Config
    path: tuple[PathStep, ...]
    ratio: t.Ratio
    qemu_args: tuple[str, ...]
    libvirt_xml: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "config": {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self.config).items()},
            "path": [asdict(s) for s in self.path],
            "expected_ratio": asdict(self.ratio),
            "qemu_args": list(self.qemu_args),
            "libvirt_xml": self.libvirt_xml,
        }


def parse_buses(text: str) -> tuple[str, ...]:
    """``'virtio-blk,vfio'`` → ('virtio-blk', 'vfio'); InputError names an unknown bus."""
    buses = tuple(b.strip() for b in text.split(",") if b.strip())
    for bus in buses:
        if bus not in ADVISE_BUSES:
            accepted = ", ".join(ADVISE_BUSES)
            raise InputError(f"--bus {bus!r} is not a bus vmio advises on; use some of {accepted}")
    if not buses:
        raise InputError(f"--bus {text!r} names no bus; use some of {', '.join(ADVISE_BUSES)}")
    return buses


def advise(
    facts: HostFacts,
    req: Requirements,
    *,
    image: str = DEFAULT_IMAGE,
    measured: Mapping[str, t.Ratio] | None = None,
) -> Advice:
    """Walk Fig. 9. ``measured`` maps a configuration name to this host's stored VM/bare ratio."""
    walk = _Fig9(facts, req, image)
    config = walk.choose()
    ratio = (measured or {}).get(config.name) or _seed_ratio(config)
    libvirt = facts.libvirt()
    if config.vq_mapping:
        walk.note(
            "libvirt",
            "Does this host's libvirt take the queue mapping in its XML?",
            _libvirt_answer(config, libvirt),
        )
    if not facts.block_devices or all(d.rotational for d in facts.block_devices):
        walk.note("ratio", "Do seed 000's figures fit this host?", "no SSD found; they are for NVMe SSDs")
    return Advice(config, tuple(walk.path), ratio, tuple(qemu_args(config)), libvirt_xml(config, libvirt))


def _libvirt_answer(config: Config, libvirt: tuple[int, int, int] | None) -> str:
    needs = ".".join(map(str, LIBVIRT_VQ_MAPPING))
    if libvirt is None:
        return (
            f"libvirt not found here; the XML maps the queues (<driver><iothreads>), which needs libvirt "
            f">= {needs}"
        )
    have = ".".join(map(str, libvirt))
    if maps_queues(config, libvirt):
        return f"yes: libvirt {have} (>= {needs}) -> <driver><iothreads> maps the queues"
    return (
        f"no: libvirt {have} lacks <driver><iothreads> (needs {needs}) -> the XML puts the disk's "
        f"{config.iothreads} queues on 1 iothread (<driver iothread='1'>); QEMU's arguments keep the mapping"
    )


def _seed_ratio(config: Config) -> t.Ratio:
    if config.name == SCALE_OUT:
        return t.SEED_RATIO_SCALE_OUT
    if config.passthrough == "vfio":
        return t.SEED_RATIO_PASSTHROUGH
    if config.name == ONE_VM or config.bus != "virtio-blk":
        return t.SEED_RATIO_ONE_VM
    return t.SEED_RATIO_IOTHREAD


class _Fig9:
    def __init__(self, facts: HostFacts, req: Requirements, image: str) -> None:
        self.facts, self.req, self.image = facts, req, image
        self.path: list[PathStep] = []
        self.ssds = [d for d in facts.block_devices if d.rotational is False]

    def note(self, node: str, question: str, answer: str) -> None:
        self.path.append(PathStep(node, question, answer))

    def usable(self, bus: str) -> bool:
        needs = {"virtio-blk": "virtio-blk-pci", "block": "virtio-blk-pci", "vfio": "vfio-pci"}
        return bus in self.req.buses and self.facts.has_device(needs.get(bus, "virtio-scsi-pci"))

    def choose(self) -> Config:
        self.note("disks", "Which SSDs can hold VM disks?", self._devices_answer())
        if self.req.scale_out:
            self.note("a", "Will capacity grow by adding VMs (scale-out)?", f"yes -> {SCALE_OUT}")
            bus = self.shared_bus("scale-out")
            return Config(SCALE_OUT, bus, image=self.image, spread_over=self.spread())
        self.note("a", "Will capacity grow by adding VMs (scale-out)?", "no -> (c) tune one VM's settings")
        dedicated = self.dedicated()
        return dedicated if dedicated is not None else self.shared()

    def _devices_answer(self) -> str:
        if len(self.ssds) >= 2:
            gain = t.SEED_TWO_SSD_GAIN
            names = ", ".join(d.name for d in self.ssds)
            return (
                f"{names}: spread VM disks over them ({gain.basis}: {gain.read}x read, {gain.write}x write)"
            )
        if self.ssds:
            return f"{self.ssds[0].name} only"
        rot = ", ".join(d.name for d in self.facts.block_devices) or "no block devices"
        return f"none non-rotational ({rot})"

    def spread(self) -> tuple[str, ...]:
        return tuple(d.name for d in self.ssds) if len(self.ssds) >= 2 else ()

    def shared_bus(self, why: str) -> str:
        for bus in SHARED_BUSES:
            if self.usable(bus):
                return bus
        raise InputError(
            f"{why} needs a bus that VMs can share, and --bus {','.join(self.req.buses)!r} with this QEMU "
            f"offers none; add virtio-blk or virtio-scsi"
        )

    def dedicated(self) -> Config | None:
        question = "Can a device be dedicated to the VM?"
        if not self.req.dedicated_disk:
            self.note("d", question, "no -> (e) share the device")
            return None
        if self.req.live_migration:
            self.note("d", question, "wanted, but passthrough blocks live migration -> (e)")
            return None
        target = self._passthrough_target()
        if target is None:
            return None
        if self.usable("vfio") and target.pci_address:
            answer = f"yes -> {PASSTHROUGH}: {target.name}'s PCI function {target.pci_address} via vfio-pci"
            self.note("d", question, answer + " (seed 000 Fig. 5: 1.0x bare)")
            return Config(
                PASSTHROUGH, "vfio", passthrough="vfio", device=target.name, pci_address=target.pci_address
            )
        if not self.usable("block"):
            self.note("d", question, f"wanted, but {target.name} has no PCI function for vfio-pci -> (e)")
            return None
        answer = f"yes -> {PASSTHROUGH}: /dev/{target.name} given raw to virtio-blk (no vfio passthrough)"
        self.note("d", question, answer)
        threads, vq = self.iothreads()
        return Config(PASSTHROUGH, "virtio-blk", threads, vq, passthrough="block", device=target.name)

    def _passthrough_target(self) -> BlockDevice | None:
        devices = self.ssds or list(self.facts.block_devices)
        candidates = [d for d in devices if not d.host_uses]
        why = ""
        if not (self.usable("vfio") or self.usable("block")):
            why = "neither vfio nor block is allowed and supported by this QEMU"
        elif not devices:
            why = "no device found"
        elif not candidates:
            why = "the host uses every device (" + "; ".join(str(d.host_uses) for d in devices) + ")"
        if why:
            self.note("d", "Can a device be dedicated to the VM?", f"wanted, but {why} -> (e)")
            return None
        with_pci = [d for d in candidates if d.pci_address]
        return with_pci[0] if self.usable("vfio") and with_pci else candidates[0]

    def shared(self) -> Config:
        question = "Does the shared bus get an iothread?"
        bus = self.shared_bus("a shared device")
        device = "virtio-blk-pci" if bus == "virtio-blk" else "virtio-scsi-pci"
        if not self.facts.has_property(device, "iothread"):
            self.note("e", question, f"no: this QEMU's {device} has no iothread property -> {ONE_VM}")
            return Config(ONE_VM, bus, image=self.image, spread_over=self.spread())
        self.note("e", question, f"yes -> {IOTHREAD} on {bus}")
        threads, vq = self.iothreads() if bus == "virtio-blk" else (1, False)
        return Config(IOTHREAD, bus, threads, vq, image=self.image, spread_over=self.spread())

    def iothreads(self) -> tuple[int, bool]:
        question = "Can one disk's queues be spread over several iothreads (iothread-vq-mapping)?"
        version = self.facts.qemu_version
        if not self.facts.has_property("virtio-blk-pci", "iothread-vq-mapping"):
            self.note("vq", question, f"no: QEMU {version} lacks it (needs 9.0) -> 1 iothread")
            return 1, False
        cpus = self.facts.cpus or 2
        n = min(t.VQ_MAPPING_MAX_IOTHREADS, cpus // 2)
        if n < 2:
            self.note("vq", question, f"QEMU {version} can, but {cpus} CPU(s) leave room for 1 iothread")
            return 1, False
        why = t.VQ_MAPPING_MAX_IOTHREADS_SOURCE
        self.note("vq", question, f"yes: QEMU {version} has it -> {n} iothreads ({why})")
        return n, True

"""The configuration guideline (hitachi-nvme-2016, Fig. 9) as a decision over requirements and host facts.

(a) Will capacity grow by adding VMs (scale-out)? yes → "1 fio/VM x N": one job per VM, as many VMs as
needed. no → (c) tune one VM: (d) can a device be dedicated to it? yes → "N fio/VM + passthrough";
no → (e) "N fio/VM + iothread" on virtio-blk, else plain "N fio/VM" (the paper: the iothread option can be
set only when the VM uses virtio-blk; without virtio-blk, "N fio/vm" is chosen).

Where vmio departs from the figure, because of what the paper could not know, the advice names the
departure with the paper's answer beside it (``Advice.departures``): passthrough blocks live migration;
QEMU's virtio-scsi takes an iothread too; QEMU >= 9.0 spreads one disk's queues over several iothreads
(``iothread-vq-mapping``), which this host's QEMU is asked about; two or more SSDs → spread the disks
(the paper's Fig. 7, outside Fig. 9). The expected ratio is this host's, measured on a target of the same
shape (``measured``), else the paper's for the configuration (``vmio.published``); N is named either way.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import TypedDict

from vmio import published
from vmio.advise import thresholds as t
from vmio.advise.buses import ADVISE_BUSES, SHARED_BUSES
from vmio.advise.disk_config import LIBVIRT_VQ_MAPPING, Config, libvirt_xml, maps_queues, qemu_args
from vmio.advise.inventory import BlockDevice, HostFacts
from vmio.errors import InputError
from vmio.published import SEED_N

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
    device: str | None = None  # the VM disk's file or block device (advise --device PATH)
    device_is_block: bool = False


@dataclass(frozen=True)
class PathStep:
    node: str
    question: str
    answer: str


@dataclass(frozen=True)
class Departure:
    """Where the advice is not Fig. 9's answer as the paper wrote it, and the paper's answer beside it."""

    node: str
    vmio: str
    paper: str
    why: str


class AdviceJson(TypedDict):
    """``advise --json``."""

    config: dict[str, object]  # Config's fields, tuples as lists
    path: list[dict[str, str]]  # PathStep's fields
    departures: list[dict[str, str]]  # Departure's fields
    n: str
    disk: str
    expected_ratio: dict[str, object]  # published.Ratio's fields
    qemu_args: list[str]
    libvirt_xml: str


@dataclass(frozen=True)
class Advice:
    config: Config
    path: tuple[PathStep, ...]
    ratio: published.Ratio
    qemu_args: tuple[str, ...]
    libvirt_xml: str
    departures: tuple[Departure, ...] = ()
    n: str = ""  # what N is in the configuration's name
    disk: str = ""  # where the VM disk in the arguments and XML comes from

    def to_dict(self) -> AdviceJson:
        return {
            "config": {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self.config).items()},
            "path": [asdict(s) for s in self.path],
            "departures": [asdict(d) for d in self.departures],
            "n": self.n,
            "disk": self.disk,
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
    measured: Callable[[Config], published.Ratio | None] | None = None,
) -> Advice:
    """Walk Fig. 9. ``measured`` gives this host's stored VM/bare ratio for a configuration, from targets
    of its shape (None: none stored)."""
    walk = _Fig9(facts, req, req.device or image)
    config = walk.choose()
    found = measured(config) if measured is not None else None
    ratio = found or _seed_ratio(config)
    libvirt = facts.libvirt()
    if config.vq_mapping:
        walk.note(
            "libvirt",
            "Does this host's libvirt take the queue mapping in its XML?",
            _libvirt_answer(config, libvirt),
        )
    if found is None and (not facts.block_devices or all(d.rotational for d in facts.block_devices)):
        walk.note(
            "ratio", "Do hitachi-nvme-2016's figures fit this host?", "no SSD found; they are for NVMe SSDs"
        )
    return Advice(
        config,
        tuple(walk.path),
        ratio,
        tuple(qemu_args(config)),
        libvirt_xml(config, libvirt),
        tuple(walk.departures),
        _n_text(config, ratio, found is not None),
        _disk_text(config, req),
    )


def _n_text(config: Config, ratio: published.Ratio, measured: bool) -> str:
    if config.name == SCALE_OUT:
        what = "N = the number of VMs, one fio (application job) each"
    else:
        what = "N = the fio jobs (application threads doing I/O) the one VM runs"
    where = ratio.basis.split(" (", 1)[0] if measured else f"N = {SEED_N} in the paper's figures"
    return f"{what}; the expected ratio is for {where}"


def _disk_text(config: Config, req: Requirements) -> str:
    if config.passthrough == "vfio":
        return f"the PCI function {config.pci_address} of {config.device}, passed through whole (vfio-pci)"
    if config.passthrough == "block":
        return f"the block device {config.device}, given raw to the VM"
    if req.device:
        return f"{req.device} (advise --device)"
    return (
        f"{config.image} is a placeholder: put your VM disk's file or block device there (in -blockdev's "
        "file.filename and the XML's <source>), or name it with advise --device PATH"
    )


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


def _seed_ratio(config: Config) -> published.Ratio:
    """The paper's ratio for the configuration: passthrough of a PCI function or of a raw block device is
    the paper's "Path Through" (Fig. 5); virtio-scsi with an iothread has no figure of its own, so it is the
    paper's answer there, "N fio/vm" (Fig. 4)."""
    if config.name == SCALE_OUT:
        return published.SEED_RATIO_SCALE_OUT
    if config.passthrough is not None:
        return published.SEED_RATIO_PASSTHROUGH
    if config.name == ONE_VM or config.bus != "virtio-blk":
        return published.SEED_RATIO_ONE_VM
    return published.SEED_RATIO_IOTHREAD


class _Fig9:
    def __init__(self, facts: HostFacts, req: Requirements, image: str) -> None:
        self.facts, self.req, self.image = facts, req, image
        self.path: list[PathStep] = []
        self.departures: list[Departure] = []
        self.ssds = [d for d in facts.block_devices if d.rotational is False]

    def note(self, node: str, question: str, answer: str) -> None:
        self.path.append(PathStep(node, question, answer))

    def depart(self, node: str, vmio: str, paper: str, why: str) -> None:
        self.departures.append(Departure(node, vmio, paper, why))

    def usable(self, bus: str) -> bool:
        needs = {"virtio-blk": "virtio-blk-pci", "block": "virtio-blk-pci", "vfio": "vfio-pci"}
        return bus in self.req.buses and self.facts.has_device(needs.get(bus, "virtio-scsi-pci"))

    def choose(self) -> Config:
        self.note("disks", "Which SSDs can hold VM disks?", self._devices_answer())
        if self.req.scale_out:
            self.note("a", "Will capacity grow by adding VMs (scale-out)?", f"yes -> {SCALE_OUT}")
            bus = self.shared_bus("scale-out")
            return Config(
                SCALE_OUT,
                bus,
                image=self.image,
                image_is_block=self.req.device_is_block,
                spread_over=self.spread(),
            )
        self.note("a", "Will capacity grow by adding VMs (scale-out)?", "no -> (c) tune one VM's settings")
        dedicated = self.dedicated()
        return dedicated if dedicated is not None else self.shared()

    def _devices_answer(self) -> str:
        if len(self.ssds) >= 2:
            gain = published.SEED_TWO_SSD_GAIN
            names = ", ".join(d.name for d in self.ssds)
            return (
                f"{names}: spread VM disks over them ({gain.basis}: {gain.read}x read, {gain.write}x write)"
            )
        if self.ssds:
            return f"{self.ssds[0].name} only"
        rot = ", ".join(d.name for d in self.facts.block_devices) or "no block devices"
        return f"none non-rotational ({rot})"

    def spread(self) -> tuple[str, ...]:
        if len(self.ssds) < 2:
            return ()
        names = tuple(d.name for d in self.ssds)
        self.depart(
            "disks",
            f"VM disks spread over {', '.join(names)}",
            "one SSD (Fig. 9 does not ask)",
            "the paper's Fig. 7: two SSDs gave 1.57x/2.75x bare metal on one",
        )
        return names

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
            self.depart(
                "d",
                "no passthrough: live migration is required",
                PASSTHROUGH,
                "a VM holding a host device or PCI function cannot live-migrate (QEMU docs)",
            )
            return None
        target = self._passthrough_target()
        if target is None:
            return None
        if self.usable("vfio") and target.pci_address:
            answer = f"yes -> {PASSTHROUGH}: {target.name}'s PCI function {target.pci_address} via vfio-pci"
            self.note("d", question, answer + " (hitachi-nvme-2016 Fig. 5: 1.0x bare)")
            return Config(
                PASSTHROUGH, "vfio", passthrough="vfio", device=target.name, pci_address=target.pci_address
            )
        if not self.usable("block"):
            self.note("d", question, f"wanted, but {target.name} has no PCI function for vfio-pci -> (e)")
            return None
        answer = f"yes -> {PASSTHROUGH}: /dev/{target.name} given raw to virtio-blk (no vfio passthrough)"
        self.note("d", question, answer)
        threads, vq = self.iothreads()
        device = self.req.device if self.req.device_is_block and self.req.device else target.name
        self.depart(
            "d",
            f"the raw device on virtio-blk with {threads} iothread(s)",
            f"{PASSTHROUGH} (the device given to the VM, no iothread)",
            "without vfio, QEMU still carries the device's I/O, so it gets the iothread Fig. 8 "
            "measured; the expected ratio stays Fig. 5's",
        )
        return Config(PASSTHROUGH, "virtio-blk", threads, vq, passthrough="block", device=device)

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
            return Config(
                ONE_VM,
                bus,
                image=self.image,
                image_is_block=self.req.device_is_block,
                spread_over=self.spread(),
            )
        self.note("e", question, f"yes -> {IOTHREAD} on {bus}")
        if bus != "virtio-blk":
            self.depart(
                "e",
                f"{IOTHREAD} on {bus}",
                f"{ONE_VM} (the iothread option is virtio-blk's in the paper)",
                f"QEMU's {device} takes an iothread property too; the paper measured no figure for it, so "
                f"the expected ratio is the paper's {ONE_VM}",
            )
        threads, vq = self.iothreads() if bus == "virtio-blk" else (1, False)
        return Config(
            IOTHREAD,
            bus,
            threads,
            vq,
            image=self.image,
            image_is_block=self.req.device_is_block,
            spread_over=self.spread(),
        )

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
        self.depart(
            "vq",
            f"{n} iothreads with the disk's queues spread over them (iothread-vq-mapping)",
            "1 iothread",
            t.IOTHREAD_VQ_MAPPING_SOURCE,
        )
        return n, True

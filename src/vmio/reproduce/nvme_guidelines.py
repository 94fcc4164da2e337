"""hitachi-nvme-2016's method inside its reproduction: the Configuration Guideline (Fig. 9) run through
``vmio.advise`` on the paper's case and on this host, and the Tuning Guideline (Fig. 10) run through
``vmio.advise.diagnose`` on every configuration the reproduction measured.

Fig. 9 asks three questions (will I/O grow by adding VMs? may the SSD be dedicated to one VM? is virtio-blk
used?) and ends at one of Table 3's four configurations. The paper's case is written as those answers and as
the host the paper describes (Fedora 23's QEMU 2.4, one NVMe SSD with its PCI function, the iothread option
on virtio-blk only: Table 3, "virtio-blk 以外に利用不可"); a ``fig9-*`` claim holds when ``advise`` reaches the
paper's configuration there. ``advise`` on this host, with the same answers, is shown beside it with its path.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from vmio.advise import from_store
from vmio.advise.config_guideline import (
    IOTHREAD,
    ONE_VM,
    PASSTHROUGH,
    SCALE_OUT,
    Advice,
    Requirements,
    advise,
)
from vmio.advise.diagnose import Diagnosis, diagnose
from vmio.advise.disk_config import Config
from vmio.advise.evidence import Evidence
from vmio.advise.inventory import BlockDevice, HostFacts
from vmio.published import Ratio
from vmio.reproduce.result import Measured, Spread, TableRow
from vmio.store import Store

# The host the paper describes (§3.2, Table 1, Table 3), as ``advise`` reads a host.
PAPER_HOST = HostFacts(
    qemu_version="2.4.1",  # Fedora 23 (Linux 4.2.3), §3.2: its QEMU 2.4 has no iothread-vq-mapping
    qemu_devices=frozenset({"virtio-blk-pci", "virtio-scsi-pci", "vfio-pci"}),
    device_properties={"virtio-blk-pci": frozenset({"iothread"}), "virtio-scsi-pci": frozenset()},
    cpus=16,
    block_devices=(BlockDevice("nvme0n1", False, 400_000_000_000, "0000:01:00.0"),),
)


@dataclass(frozen=True)
class Leaf:
    """One leaf of Fig. 9: the paper's answers to its questions and the configuration it chooses there."""

    claim: str
    scale_out: bool
    dedicated: bool
    virtio_blk: bool
    paper_choice: str  # Table 3's configuration, in ``advise``'s words
    table3: int  # its number in Table 3

    def requirements(self) -> Requirements:
        buses = ("virtio-blk", "virtio-scsi", "block", "vfio") if self.virtio_blk else ("virtio-scsi",)
        return Requirements(scale_out=self.scale_out, dedicated_disk=self.dedicated, buses=buses)


LEAVES = (
    Leaf("fig9-scaleout", True, False, True, SCALE_OUT, 1),
    Leaf("fig9-dedicated", False, True, True, PASSTHROUGH, 3),
    Leaf("fig9-shared-virtio-blk", False, False, True, IOTHREAD, 4),
    Leaf("fig9-shared-no-virtio-blk", False, False, False, ONE_VM, 2),
)


def _path(advice: Advice) -> str:
    steps = "; ".join(f"({s.node}) {s.answer}" for s in advice.path)
    departs = "; ".join(
        f"departs at ({d.node}): {d.vmio} where the paper says {d.paper} ({d.why})" for d in advice.departures
    )
    return steps + (f"; {departs}" if departs else "")


def _host_line(facts: HostFacts) -> str:
    disks = ", ".join(
        f"{d.name} ({'rotational' if d.rotational else 'non-rotational'}"
        + (f", held: {d.host_uses}" if d.host_uses else "")
        + ")"
        for d in facts.block_devices
    )
    return f"QEMU {facts.qemu_version}, {facts.cpus} CPUs, block devices: {disks or 'none'}"


def fig9(
    here: HostFacts | None,
    why_not_here: str = "",
    measured_here: Callable[[Config], Ratio | None] | None = None,
) -> tuple[dict[str, Measured], list[TableRow]]:
    """Each leaf of Fig. 9: 1.0 when ``advise`` on the paper's case gives the paper's configuration, else 0.0;
    ``advise`` on this host (``here``; None: its facts could not be read, ``why_not_here`` says why; with
    ``measured_here``, this host's stored ratios, as ``vmio advise --db`` reads them) beside it."""
    measured: dict[str, Measured] = {}
    rows: list[TableRow] = []
    for leaf in LEAVES:
        paper = advise(PAPER_HOST, leaf.requirements())
        mine = advise(here, leaf.requirements(), measured=measured_here) if here is not None else None
        got = paper.config.name
        here_text = (
            f"on this host ({_host_line(here)}) advise gives {mine.config.name} on {mine.config.bus}: "
            f"{_path(mine)}; expected {mine.ratio.read:g}x Bare's reads, {mine.ratio.write:g}x its writes "
            f"({mine.ratio.source}: {mine.ratio.basis})"
            if mine is not None and here is not None
            else f"advise could not read this host: {why_not_here}"
        )
        measured[leaf.claim] = Measured(
            1.0 if got == leaf.paper_choice else 0.0,
            exact=True,
            why=None
            if got == leaf.paper_choice
            else f"on the paper's case advise gives {got}: {_path(paper)}",
            note=f"on the paper's case ({_host_line(PAPER_HOST)}) advise gives {got}: {_path(paper)}; {here_text}",
        )
        rows.append(
            {
                "claim": leaf.claim,
                "scale out": "yes" if leaf.scale_out else "no",
                "SSD dedicated to one VM": "yes" if leaf.dedicated else "no",
                "virtio-blk": "yes" if leaf.virtio_blk else "no",
                "paper's choice (Table 3)": f"{leaf.table3}: {leaf.paper_choice}",
                "advise, the paper's case": got,
                "advise, this host": None if mine is None else f"{mine.config.name} ({mine.config.bus})",
            }
        )
    return measured, rows


# Fig. 10 at each configuration the reproduction measures: (claim, target, the paper's step there in the
# diagnosis' words, what the paper did or says there). The paper's step is the one the leaf (c)-(g) or,
# for 1fio/vm x N, the free-SSD question (b) gives; "none": the paper's walk ends at the I/O limit.
@dataclass(frozen=True)
class Fig10:
    claim: str
    target: str
    node: str  # the question the paper's step answers: "b" (free SSD) or "leaf" ((c) to (g))
    paper_step: str  # a diagnose action, or "none" (I/O 性能限界: no step left)
    paper_says: str


FIG10 = (
    Fig10("fig10-scaleout", "1fio-per-vm-xN", "b", "spread-disks",
          "(b) the second SSD was free: the VM disks spread over both gave 1.57x/2.75x Bare (§4.2, Fig. 7)"),
    Fig10("fig10-onevm", "Nfio-1vm", "leaf", "add-iothread",
          "(c) 16 fio in one VM, (f) no iothread: the paper added one, 0.21x -> 0.78x Bare reads (§4.3, Fig. 8)"),
    Fig10("fig10-iothread", "Nfio-1vm-iothread", "leaf", "none",
          "(f) the iothread in use: I/O 性能限界, the I/O limit, no step left (§5.2); reads as 1fio/vm x 16 (Fig. 8)"),
    Fig10("fig10-iothread-mq", "Nfio-1vm-iothread-mq", "leaf", "none",
          "(f) the iothread in use: the I/O limit (§5.2), whatever the queues"),
    Fig10("fig10-passthrough", "Nfio-1vm-passthrough", "leaf", "none",
          "Path Through: equal to Bare (Fig. 5), whose limit is the device (Fig. 6); no further step"),
    Fig10("fig10-two-devices", "1fio-per-vm-xN-2dev", "b", "none",
          "(b) both SSDs taken: no free SSD left to spread over (§4.2, Fig. 7)"),
)  # fmt: skip
FIRST_STEPS = ("dedicate-disk", "spread-disks")  # (a) and (b): steps whatever the leaf


def step_of(d: Diagnosis, node: str) -> str:
    """The diagnosis' step at ``node``: (b)'s spread-disks or none; the leaf's first action or none."""
    if node == "b":
        return "spread-disks" if "spread-disks" in d.actions else "none"
    leaf = [a for a in d.actions if a not in FIRST_STEPS and a != "none"]
    return leaf[0] if leaf else "none"


def diagnoses(store: Store, campaigns: Sequence[str], target: str) -> list[tuple[str, Evidence, Diagnosis]]:
    """``vmio diagnose`` on each done point of ``target`` (every workload and repetition): its point key,
    the evidence read from the store and the verdict."""
    out = []
    for name in campaigns:
        camp = from_store.stored_campaign(store, name)
        for r in store.runs(name):
            if r["target"] == target and r["status"] == "done":
                evidence = from_store.evidence_for(store, camp, r)
                out.append((r["point_key"], evidence, diagnose(evidence)))
    return out


def fig10(
    store: Store, campaigns: Sequence[str], untested: Mapping[str, str]
) -> tuple[dict[str, Measured], list[TableRow]]:
    """Each configuration's points through Fig. 10 beside the paper's step there: the share of its points
    (the claim's repetitions, 1.0 each whose step is the paper's). ``untested``: by target, why this host
    cannot put the paper's question (VFIO absent); Fig. 10 (b) is untested where no device is free."""
    measured: dict[str, Measured] = {}
    rows: list[TableRow] = []
    for c in FIG10:
        found = diagnoses(store, campaigns, c.target)
        if not found:
            continue
        values = tuple(1.0 if step_of(d, c.node) == c.paper_step else 0.0 for _, _, d in found)
        key, evidence, first = found[0]
        path = "; ".join(f"({s.node}) {s.answer}" for s in first.steps)
        said = f"the paper: {c.paper_says}; diagnose on {key}: {path}"
        why = untested.get(c.target)
        if why is None and c.node == "b" and not any(d.in_use is False for d in evidence.devices):
            why = "this host has no free device, so Fig. 10 (b) cannot answer yes here (the paper had a second SSD)"
        share = statistics.fmean(values)
        measured[c.claim] = Measured(share, Spread.of(values), values=values, untested=why, note=said)
        rows += [
            {
                "claim": c.claim,
                "point": point,
                "paper's step": c.paper_step,
                "diagnose's step": step_of(d, c.node),
                "actions": ", ".join(d.actions),
                "at the limit": "yes" if d.at_limit else "no",
                "limit": d.limit,
            }
            for point, _, d in found
        ]
    return measured, rows

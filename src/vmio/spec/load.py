"""Experiment specs: TOML → the validated objects of ``vmio.spec.model``.

Every bad value raises ``SpecError`` naming file:line, the field, the value and what is accepted.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from vmio.errors import InputError, SpecError
from vmio.spec import fields as f
from vmio.spec.fields import Fields
from vmio.spec.fiofile import STEADY_OPTIONS, OptionNames, built_in, patterns
from vmio.spec.model import (
    ACCELS,
    AIOS,
    ARRIVALS,
    BUSES,
    CACHES,
    MACHINES,
    MMIO_BUSES,
    RW_MODES,
    Campaign,
    HostTarget,
    LibvirtDomain,
    LibvirtTarget,
    Offered,
    QemuTarget,
    RbdTarget,
    RemoteTarget,
    Target,
    Workload,
    swept_jobs,
)
from vmio.spec.series import series_name, until_stable
from vmio.spec.sla import Sla, parse_sla, parse_stored_sla
from vmio.spec.steady import parse_steady
from vmio.spec.tomlfile import Locator, load_toml, loads_toml
from vmio.system.input_file import capacity
from vmio.system.safety import is_block_device


def campaign_name(value: str, where: str) -> str:
    """A campaign name given on the command line (``--name``, ``vmio rename``), checked as the spec's is."""
    try:
        return f.name(value)
    except ValueError as exc:
        raise InputError(f"{where} {value!r}: {exc}") from None


def load_spec(path: str | Path, *, fio_names: Callable[[], OptionNames] = built_in) -> Campaign:
    """The campaign of spec file ``path``; a ``fio = FILE`` workload's job file is read with ``fio_names``
    (asked only then: the installed fio's option names, ``vmio.fio.options.names``; fio 3.33's when not
    given)."""
    data, loc = load_toml(path)
    return _campaign(data, loc, fio_names=fio_names)


def loads_spec(
    text: str, path: str = "<spec>", *, stored: bool = False, fio_names: Callable[[], OptionNames] = built_in
) -> Campaign:
    """The campaign of spec ``text``. ``stored``: a spec read back from a store, written by an older vmio,
    so what it once accepted still loads (a bare SLA number, aio = 'native' beside a page-cache mode).
    ``fio_names`` as for ``load_spec``."""
    data, loc = loads_toml(text, path)
    return _campaign(data, loc, stored=stored, fio_names=fio_names)


MAX_SEED = 2**63 - 1
MAX_POINTS = 100_000  # at a second or more each, over a day of measuring; a store row per point


def _campaign(
    data: dict[str, Any],
    loc: Locator,
    *,
    stored: bool = False,
    fio_names: Callable[[], OptionNames] = built_in,
) -> Campaign:
    extra = sorted(set(data) - {"campaign", "target", "workload"})
    if extra:
        raise loc.error(
            extra[0], 0, None, f"unknown table [{extra[0]}]; use [campaign], [[target]], [[workload]]"
        )
    head = Fields(data.get("campaign", {}), loc, "campaign")
    name = head.take("name", f.name)
    repetitions = head.take("repetitions", f.integer(1, 1000), 1)
    sla: Sla | None = head.take("sla", parse_stored_sla if stored else parse_sla, None)
    seed: int | None = head.take("seed", f.integer(0, MAX_SEED), None)
    series: str | None = head.take("series", series_name, None)
    until = until_stable(head, repetitions)
    layers: bool = head.take("layers", f.boolean, False)
    head.done()
    targets = tuple(_target(t, loc, i, stored) for i, t in enumerate(_array(data, "target", loc)))
    workloads = tuple(
        w for i, item in enumerate(_array(data, "workload", loc)) for w in _workload(item, loc, i, fio_names)
    )
    _unique(targets, "target", loc)
    _unique(workloads, "workload", loc)
    count = repetitions * sum(
        len(w.bs)
        * len(w.offered_iops)
        * len(w.load_processes)
        * len(w.iodepth_sweep or (1,))
        * len(swept_jobs(t, w))
        for t in targets
        for w in workloads
    )
    if count > MAX_POINTS:
        why = (
            f"the spec expands to {count} points; a campaign holds at most {MAX_POINTS}: split it, "
            "or shorten the lists of bs, offered_iops, load_processes, iodepth or numjobs"
        )
        raise loc.error("campaign", 0, None, why)
    _check_ops_loads(targets, workloads, loc)
    if seed is not None and not any(w.ops for w in workloads):
        why = (
            f"campaign.seed = {seed} sets the offsets of timed operations; "
            "no workload has ops = N (the operations per process to replay at those offsets)"
        )
        raise loc.error("campaign", 0, "seed", why)
    return Campaign(name, repetitions, targets, workloads, loc.path, sla, seed, series, until, layers)


def _check_ops_loads(targets: tuple[Target, ...], workloads: tuple[Workload, ...], loc: Locator) -> None:
    """Timed operations beside load processes: one measured process per fio. fio's ``exitall`` (which ends
    the loads when the operations are done) ends every job as soon as the first one ends, so a second
    measured process in the same fio would be cut short."""
    for i, w in enumerate(workloads):
        if not (w.ops and any(w.load_processes)):
            continue
        if max((w.numjobs, *w.numjobs_sweep)) > 1:
            why = (
                f"workload[{i}].numjobs = {w.numjobs} with ops = {w.ops} "
                "and load processes: one measured process per fio (the loads stop when the first "
                "measured process ends); use numjobs = 1, or a separate workload without loads"
            )
            raise loc.error("workload", i, "numjobs", why)
        for j, t in enumerate(targets):
            # isinstance: spec sits below targets; a VM target's jobs_per_vm is validated with its keys
            if isinstance(t, QemuTarget) and max((t.jobs_per_vm, *t.jobs_per_vm_sweep)) > 1:
                why = (
                    f"target[{j}].jobs_per_vm = {t.jobs_per_vm} with "
                    f"workload {w.name!r} (ops and load processes): one measured process per VM "
                    "(the loads stop when the first measured process ends); use vms instead"
                )
                raise loc.error("target", j, "jobs_per_vm", why)


def _array(data: dict[str, Any], key: str, loc: Locator) -> list[Any]:
    items = data.get(key)
    if not isinstance(items, list) or not items:
        raise SpecError(f"{loc.path}:1: the spec needs at least one [[{key}]] table")
    return items


def _unique(items: tuple[Target, ...] | tuple[Workload, ...], table: str, loc: Locator) -> None:
    seen: set[str] = set()
    for i, item in enumerate(items):
        try:
            f.name(item.name)
        except ValueError as exc:
            raise loc.error(table, i, "name", f"{table}[{i}].name = {item.name[:40]!r}...: {exc}") from None
        if item.name in seen:
            raise loc.error(
                table, i, "name", f"{table}[{i}].name = {item.name!r} is used twice; names must differ"
            )
        seen.add(item.name)


def _target(data: object, loc: Locator, i: int, stored: bool = False) -> Target:
    t = Fields(data, loc, "target", i)
    name = t.take("name", f.string)
    kind = t.take("kind", f.choice("host", "qemu", "remote", "rbd", "libvirt"), "host")
    target: Target
    if kind == "host":
        target = HostTarget(
            name,
            t.take("path", f.path),
            t.take("size", f.size, None),
            t.take("loop", f.boolean, False),
            cpus=t.take("cpus", f.integer(1, 4096), None),
            capacity_read_iops=t.take("capacity_read_iops", f.integer(1), None),
            capacity_write_iops=t.take("capacity_write_iops", f.integer(1), None),
        )
        _check_loop(t, (target.path,), target.loop)
        _check_size_fits(t, (target.path,), target.size)
    elif kind == "remote":
        hosts = t.take("hosts", f.one_or_many(_host_port))
        paths: tuple[str, ...] = t.take("paths", f.one_or_many(f.path), ())
        paths = paths or (t.take("path", f.path),) * len(hosts)
        if len(paths) != len(hosts):
            raise t.error("paths", f"target[{i}].paths has {len(paths)} entries for {len(hosts)} hosts")
        target = RemoteTarget(name, hosts, paths, t.take("size", f.size, None))
    elif kind == "libvirt":
        uri = t.take("uri", f.string, "qemu:///system")
        domains = t.take("domains", f.one_or_many(_libvirt_domain))
        target = LibvirtTarget(
            name,
            tuple(LibvirtDomain(d.name, d.uri or uri) for d in domains),
            uri,
            t.take("disk", _libvirt_disk, None),
            guest_layers=t.take("guest_layers", f.boolean, False),
        )
        if len(set(target.domains)) != len(target.domains):
            raise t.error("domains", f"target[{i}].domains names a domain twice")
    elif kind == "rbd":
        target = RbdTarget(
            name,
            t.take("pool", f.token, "rbd"),
            t.take("image", f.token),
            t.take("conf", f.path),
            t.take("clientname", f.token, "admin"),
            keyring=t.take("keyring", f.path, None),
        )
    else:
        target = _qemu_target(t, name, stored)
        _check_rbd(t, target)
        _check_machine(t, target)
        _check_loop(t, target.backing, target.loop)
        _check_bus(t, target)
        _check_size_fits(t, target.backing, target.size)
    t.done()
    return target


DIRECT_CACHES = ("none", "directsync")  # the cache modes that open the backing with O_DIRECT


def default_aio(cache: str) -> str:
    """The aio a target gets when it names none: ``native`` (Linux AIO, which needs O_DIRECT) for the
    direct cache modes, ``threads`` (QEMU's own default, a thread pool) for the page-cache ones."""
    return "native" if cache in DIRECT_CACHES else "threads"


def _qemu_target(t: Fields, name: str, stored: bool = False) -> QemuTarget:
    cache = t.take("cache", f.choice(*CACHES), "none")
    aio = t.take("aio", f.choice(*AIOS), None)
    if aio == "native" and cache not in DIRECT_CACHES and not stored:
        raise t.error(
            "aio",
            f"{t.label}.aio = 'native' needs O_DIRECT, which cache = {cache!r} does not use; "
            "use cache 'none' or 'directsync', or aio 'threads' or 'io_uring' (or leave aio out: "
            f"with cache = {cache!r} it defaults to 'threads')",
        )
    return QemuTarget(
        name=name,
        backing=t.take("backing", f.one_or_many(f.path)),
        bus=t.take("bus", f.choice(*BUSES), "virtio-blk"),
        iothreads=t.take("iothreads", f.count(0, 64), 0),
        queues=t.take("queues", f.count(1, 64), 1),
        cache=cache,
        aio=aio or default_aio(cache),
        vms=t.take("vms", f.count(1, 256), 1),
        jobs_per_vm=_first(t, "jobs_per_vm", f.count(1, 256), 1),
        jobs_per_vm_sweep=_sweep(t, "jobs_per_vm", f.count(1, 256)),
        vcpus=t.take("vcpus", f.count(1, 64), 1),
        memory=t.take("memory", _memory, 512 << 20),
        accel=t.take("accel", f.choice(*ACCELS), "auto"),
        size=t.take("size", f.size, None),
        trace=t.take("trace", f.boolean, False),
        conf=t.take("conf", f.path, None),
        clientname=t.take("clientname", f.token, None),
        keyring=t.take("keyring", f.path, None),
        qemu=t.take("qemu", _qemu, None),
        machine=t.take("machine", f.choice(*MACHINES), "q35"),
        loop=t.take("loop", f.boolean, False),
        idle_vms=t.take("idle_vms", f.integer(0, MAX_IDLE_VMS), 0),
    )


MAX_IDLE_VMS = 16


def _check_size_fits(t: Fields, paths: tuple[str, ...], size: int | None) -> None:
    """A target ``size`` must fit where it goes: a block device's bytes, or the capacity of the filesystem
    that would hold the file (judged from the nearest folder that exists)."""
    if size is None:
        return
    for path in paths:
        room = capacity(path)
        if room is not None and size > room[0]:
            raise t.error(
                "size",
                f"{t.label}.size = {size} bytes does not fit {room[1]} ({room[0]} bytes); "
                "use a size up to that",
            )


def _check_loop(t: Fields, paths: tuple[str, ...], loop: bool) -> None:
    """``loop = true`` makes a file a loop device; a block device or an RBD image cannot be one."""
    if not loop:
        return
    for path in paths:
        if path.startswith("rbd:"):
            raise t.error(
                "loop",
                f"{t.label}.loop = true cannot attach the RBD image {path!r}; "
                "loop devices are for files on this host",
            )
        if is_block_device(path):
            raise t.error(
                "loop",
                f"{t.label}.loop = true: {path!r} is already a block device; "
                "loop = true is for a file (leave it out to use the device itself)",
            )


def _qemu(value: object) -> str:
    """An installed QEMU version (``"10.0"``) or the path of an executable QEMU binary."""
    text = f.string(value)
    if "/" in text:
        if not (os.path.isfile(text) and os.access(text, os.X_OK)):
            raise ValueError(f"is not an executable file (the path {text!r})")
        return text
    if not re.fullmatch(r"\d+(\.\d+){0,2}", text):
        raise ValueError("is neither a QEMU version such as '10.0' nor a path to qemu-system-x86_64")
    return text


def _check_machine(t: Fields, target: QemuTarget) -> None:
    if target.machine == "microvm" and target.bus not in MMIO_BUSES:
        raise t.error(
            "bus",
            f"{t.label}.bus = {target.bus!r} cannot run on machine = 'microvm': microvm has no PCI bus "
            f"(virtio over MMIO only); use {', '.join(MMIO_BUSES)}, or machine 'q35'",
        )


_PCI_ADDRESS = re.compile(r"^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$")


def _check_bus(t: Fields, target: QemuTarget) -> None:
    """``vfio`` passes PCI devices through: its backings are PCI addresses."""
    if target.bus == "vfio":
        bad = [b for b in target.backing if not _PCI_ADDRESS.match(b)]
        if bad:
            raise t.error(
                "backing",
                f"{t.label}.bus = 'vfio' passes a PCI device through; backing {bad[0]!r} "
                "is not a PCI address like '0000:01:00.0'",
            )


def _check_rbd(t: Fields, target: QemuTarget) -> None:
    rbd = [b for b in target.backing if b.startswith("rbd:")]
    for b in rbd:
        pool, _, image = b[4:].partition("/")
        if not pool or not image:
            raise t.error("backing", f"{t.label}.backing has {b!r}; write an RBD image as 'rbd:POOL/IMAGE'")
    if rbd and target.conf is None:
        raise t.error("backing", f'{t.label}.backing names RBD images; give conf = "/path/to/ceph.conf"')
    for key in ("clientname", "keyring"):
        if getattr(target, key) is not None and not rbd:
            raise t.error(key, f"{t.label}.{key} is for rbd:POOL/IMAGE backings, and this target has none")
    shared = [b for b, count in target.vms_per_backing().items() if count > 1 and b.startswith("rbd:")]
    if shared and target.size is None:
        raise t.error(
            "size",
            f"{t.label}: {target.vms_per_backing()[shared[0]]} VMs share {shared[0]!r}; "
            'give size per VM (e.g. size = "1G")',
        )
    if rbd and target.bus in ("block", "vfio"):
        raise t.error(
            "bus",
            f"{t.label}.bus = {target.bus!r} cannot use an RBD image; use virtio-blk, virtio-scsi or nvme",
        )


def _memory(value: object) -> int:
    n = f.size(value)
    if n < 128 << 20:
        raise ValueError("is too small for the guest; use at least '128M'")
    return n


def _host_port(value: object) -> str:
    text = f.string(value)
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError("is not host:port such as '127.0.0.1:8765'")
    return text


def _libvirt_domain(value: object) -> LibvirtDomain:
    """A domain by name (on the target's ``uri``), or ``{uri = "...", name = "..."}``."""
    if isinstance(value, dict):
        extra = sorted(set(value) - {"uri", "name"})
        if extra or "name" not in value:
            raise ValueError(
                f'is not a domain; use a name or {{uri = "...", name = "..."}} (got keys {sorted(value)})'
            )
        return LibvirtDomain(f.string(value["name"]), f.string(value["uri"]) if "uri" in value else "")
    return LibvirtDomain(f.string(value), "")


def _libvirt_disk(value: object) -> str:
    text = f.string(value).removeprefix("/dev/")
    if not text.replace("-", "").isalnum():
        raise ValueError("is not a libvirt disk target name such as 'vdb' or 'sdb'")
    return text


def _offered(value: object) -> Offered:
    if value == "max":
        return None
    if isinstance(value, str) and _PCT.fullmatch(value.strip()):
        pct = float(value.strip().rstrip("%"))
        if not 0 < pct <= 100:
            raise ValueError("is a share of the max point's IOPS outside (0%, 100%]")
        return f"{pct:g}%"
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(
            "is not an offered load; use a positive number of IOPS, a share of the max point "
            'such as "50%", or "max"'
        )
    if value > MAX_OFFERED:
        raise ValueError(f"is more IOPS than fio can be asked for; offered loads go up to {MAX_OFFERED:,}")
    return value


# fio's rate_iops is a 32-bit count per job; no device serves a billion IOPS
MAX_OFFERED = 1_000_000_000


_PCT = re.compile(r"\d+(\.\d+)?%")


def _offered_loads(w: Fields) -> tuple[Offered, ...]:
    """``offered_iops``: shares of the max point need ``max`` in the same list (it runs first)."""
    offered: tuple[Offered, ...] = w.take("offered_iops", f.one_or_many(_offered), (None,))
    if len(set(offered)) != len(offered):
        raise w.error("offered_iops", f"{w.label}.offered_iops = {list(offered)} lists a load twice")
    if any(isinstance(o, str) for o in offered) and None not in offered:
        shares = [o for o in offered if isinstance(o, str)]
        raise w.error(
            "offered_iops",
            f"{w.label}.offered_iops = {shares}: a share is of the achieved IOPS of "
            'the "max" point, which runs first; add "max" to the list',
        )
    return offered


def _first(w: Fields, key: str, convert: Callable[[object], int], default: int) -> int:
    """A key that takes one value or a list to sweep: its value, or the list's first."""
    value = w.data.get(key)
    if isinstance(value, list):
        return _sweep(w, key, convert)[0]
    taken: int = w.take(key, convert, default)
    return taken


def _sweep(w: Fields, key: str, convert: Callable[[object], int]) -> tuple[int, ...]:
    """The values of a key given as a list (each a point of the sweep); () when given as one value."""
    value = w.data.get(key)
    if not isinstance(value, list):
        return ()
    values: tuple[int, ...] = w.take(key, f.one_or_many(convert))
    if len(set(values)) != len(values):
        raise w.error(key, f"{w.label}.{key} = {list(values)} lists a value twice")
    return values


def _stop_at(value: object) -> Sla:
    """``stop_at = "p99=5ms"``: the latency a sweep stops beyond."""
    return parse_sla(value)


def _arrivals(w: Fields, offered: tuple[Offered, ...]) -> str:
    arrivals: str = w.take("arrivals", f.choice(*ARRIVALS), "uniform")
    if arrivals == "poisson" and offered == (None,):
        raise w.error(
            "arrivals",
            f"{w.label}.arrivals = 'poisson' spaces an offered rate's I/Os; "
            'offered_iops is only "max" (no rate): give offered_iops a number or a share',
        )
    return arrivals


def _workload(
    data: object, loc: Locator, i: int, fio_names: Callable[[], OptionNames]
) -> tuple[Workload, ...]:
    w = Fields(data, loc, "workload", i)
    if "fio" in w.data:
        return _fio_workloads(w, loc, fio_names)
    workload = Workload(
        name=w.take("name", f.string),
        rw=w.take("rw", f.choice(*RW_MODES)),
        bs=w.take("bs", f.one_or_many(f.block_size), (4096,)),
        rwmixread=w.take("rwmixread", f.integer(0, 100), 50),
        iodepth=_first(w, "iodepth", f.integer(1, 65536), 1),
        numjobs=_first(w, "numjobs", f.count(1, 1024), 1),
        direct=w.take("direct", f.boolean, True),
        ioengine=w.take("ioengine", f.ioengine, "libaio"),
        runtime=w.take("runtime", _positive_duration, 10.0),
        ramp=w.take("ramp", f.duration, 0.0),
        offered_iops=_offered_loads(w),
        load_processes=w.take("load_processes", f.one_or_many(f.count(0, 256)), (0,)),
        ops=w.take("ops", f.integer(0, 10_000_000), 0),
        steady=w.take("steady", parse_steady, None),
        precondition=w.take("precondition", f.boolean, False),
        iodepth_sweep=_sweep(w, "iodepth", f.integer(1, 65536)),
        numjobs_sweep=_sweep(w, "numjobs", f.count(1, 1024)),
        stop_at=w.take("stop_at", _stop_at, None),
    )
    workload = dataclasses.replace(workload, arrivals=_arrivals(w, workload.offered_iops))
    _check_conditioning(w, workload)
    w.done()
    return (workload,)


def _check_conditioning(w: Fields, workload: Workload) -> None:
    if workload.precondition and not workload.writes:
        raise w.error(
            "precondition",
            f"{w.label}.precondition = true is for write workloads; rw = {workload.rw!r} does not write",
        )
    if workload.steady is not None:
        if workload.ops:
            raise w.error(
                "steady", f"{w.label}.steady needs a timed run; it cannot go with ops = {workload.ops}"
            )
        if workload.steady.window_s > workload.runtime:
            raise w.error(
                "steady",
                f"{w.label}.steady = {str(workload.steady)!r}: the window is longer than "
                f"runtime = {workload.runtime:g}s (the runtime is the maximum)",
            )


def _fio_workloads(w: Fields, loc: Locator, fio_names: Callable[[], OptionNames]) -> tuple[Workload, ...]:
    """One workload per job section of ``fio = "FILE"`` (relative to the spec's folder)."""
    given = w.take("fio", f.path)
    label: str | None = w.take("name", f.string, None)
    path = Path(given)
    if not path.is_absolute() and loc.path not in ("<spec>", ""):
        path = Path(loc.path).parent / path
    runtime: float | None = w.take("runtime", _positive_duration, None)
    ramp: float | None = w.take("ramp", f.duration, None)
    offered = _offered_loads(w)
    loads: tuple[int, ...] = w.take("load_processes", f.one_or_many(f.count(0, 256)), (0,))
    steady = w.take("steady", parse_steady, None)
    pre = w.take("precondition", f.boolean, False)
    stop_at = w.take("stop_at", _stop_at, None)
    arrivals = _arrivals(w, offered)
    w.done()
    out = []
    found = patterns(path, given, fio_names())
    for p in found:
        replaced, options = p.replaced, p.options
        if steady is not None:  # the workload's criterion stands in for the file's
            replaced += tuple(f"{k}={v} (workload steady)" for k, v in options if k in STEADY_OPTIONS)
            options = tuple((k, v) for k, v in options if k not in STEADY_OPTIONS)
        # The file's own runtime and ramp_time hold unless the workload (or `vmio run --runtime`) gives one.
        for own, given_here, key in ((p.runtime, runtime, "runtime"), (p.ramp, ramp, "ramp")):
            if own is not None and given_here is not None:
                replaced += (f"{own[1]} (workload {key})",)
        if label is None:
            name = f"{Path(given).name}:{p.section}"
        else:  # the label itself for a one-section file; else the prefix of its sections' names
            name = label if len(found) == 1 else f"{label}:{p.section}"
        workload = Workload(
            name=name,
            rw=p.rw,
            bs=(p.bs,),
            rwmixread=p.rwmixread,
            iodepth=p.iodepth,
            numjobs=p.numjobs,
            direct=p.direct,
            ioengine=p.ioengine,
            runtime=runtime if runtime is not None else p.runtime[0] if p.runtime else 10.0,
            ramp=ramp if ramp is not None else p.ramp[0] if p.ramp else 0.0,
            offered_iops=offered,
            load_processes=loads,
            steady=steady,
            precondition=pre,
            fio_file=given,
            fio_options=options,
            fio_replaced=replaced,
            stop_at=stop_at,
            arrivals=arrivals,
        )
        _check_conditioning(w, workload)
        out.append(workload)
    return tuple(out)


def _positive_duration(value: object) -> float:
    seconds = f.duration(value)
    if seconds <= 0:
        raise ValueError("must be longer than zero")
    return seconds

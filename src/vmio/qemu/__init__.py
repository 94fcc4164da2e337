"""QEMU VMs running the vmio guest: configuration, argv, lifecycle, accelerator probe, thread CPU.

Public API (all importable from ``vmio.qemu``):

    probe_caps(binary="qemu-system-x86_64", runner=None) -> QemuCaps
        .binary, .version (7, 2, 22), .version_string, .version_text, .iothread_vq_mapping,
        .has_prop(driver, prop), .kvm_device
    Disk(path: Path, offset: int = 0, size: int | None = None, read_only: bool = False)
        a file/block device, or a byte range of it (raw offset/size); for bus vfio a PCI address
    VMConfig(index=0, disks=(), bus=Bus.VIRTIO_BLK, iothreads=0, queues=1, cache=Cache.NONE,
             aio=Aio.NATIVE, vcpus=1, memory=512 MiB (bytes), accel=Accel.TCG, balloon=True,
             agent_interval=None, disk_wait=30, loglevel=4, extra_append=())
        .name ("vmio-<index>"), .iothread_ids, .guest_devices() -> ["/dev/vda", ...]
        Bus/Cache/Aio/Accel are StrEnums: plain strings ("virtio-scsi", "none", ...) are accepted.
    build_argv(config, image: GuestImage, runtime: Runtime, caps) -> list[str]
        Runtime(workdir: Path, host_port: int) -> .console, .qmp, .agent, .qemu_log paths
    resolve_accel(requested: str, image, caps, *, deadline=10.0, cache_dir=None) -> AccelChoice
        AccelChoice(accel "kvm"|"tcg", reason, qemu_version, probe_seconds, cached);
        AccelProber(image, caps, deadline=..., cache_dir=None).resolve(requested) keeps one answer
    VM(config, image, *, caps, workdir=None, boot_timeout=60.0, host_port=None)   context manager
        .launch(), .poll_ready() -> bool, .wait_ready(), .start(), .shutdown()
        .state (VMState), .argv, .pid, .accel, .fio_client ("127.0.0.1,PORT"), .boot_seconds,
        .guest_devices(), .console_tail(lines), .failure_output(),
        .qmp(cmd, args), .query_status(), .balloon(bytes), .query_balloon() -> bytes
        raises GuestBootError (console tail in .output) when the guest is not ready in time
    Fleet(configs, image, *, caps, workdir=None, boot_timeout=90.0)   context manager
        .vms, .start(), .shutdown(), .fio_client_args(job_files) -> ["--client=127.0.0.1,P", job, ...]
    ThreadSampler(pid, iothread_ids=(), *, proc_root=Path("/proc"), clock=time.monotonic)
        .sample() -> [ThreadCPU(tid, comm, kind "vcpu"|"iothread"|"main"|"other", usr_pct, sys_pct)]
        cpu_between(before: Snapshot, after: Snapshot, iothread_ids) for replayed snapshots
    VfioBinding(address, sys_root=Path("/sys")), iommu_present(sys_root) -> bool
    read_agent_records(vm.runtime.agent, count=1, timeout=10.0) -> [AgentRecord(uptime, vmstat, meminfo, procs)]
        procs: ProcIO(pid, comm, rchar, read_bytes) of the guest workload (fio) from /proc/PID/io
        needs VMConfig(agent_interval=SECONDS); meminfo values in bytes

QEMU runs in its own session with PR_SET_PDEATHSIG=SIGKILL: it dies with the *thread* that launched it,
so launch VMs (VM.launch/start, Fleet.start) from a thread that outlives them, e.g. the main thread.
Per-thread CPU of a running VM: ThreadSampler(vm.pid, vm.config.iothread_ids).sample().

Typical use (accel resolved once, then VMs):

    caps = probe_caps(); image = vmio.guest.build()
    choice = resolve_accel("auto", image, caps)            # record choice.accel and caps.version_string
    config = VMConfig(disks=(Disk(Path("/var/tmp/d.img"), offset=0, size=1 << 30),), accel=choice.accel)
    with VM(config, image, caps=caps) as vm:                 # record vm.argv
        fio --client=vm.fio_client job.fio  (job's filename = vm.guest_devices()[0])
"""

import importlib as _importlib
import typing as _typing

if _typing.TYPE_CHECKING:
    from vmio.qemu import builds
    from vmio.qemu.accel import KVM_PROBE_DEADLINE, AccelChoice, AccelProber, resolve_accel
    from vmio.qemu.agent import AgentRecord, ProcIO, read_agent_records
    from vmio.qemu.argv import Runtime, build_argv, kernel_cmdline
    from vmio.qemu.caps import QemuCaps, probe_caps
    from vmio.qemu.fleet import Fleet, check_disjoint
    from vmio.qemu.threads import Snapshot, ThreadCPU, ThreadSampler, cpu_between, read_threads
    from vmio.qemu.vfio import VfioBinding, iommu_present
    from vmio.qemu.vm import VM, VMState
    from vmio.qemu.vmconfig import Accel, Aio, Bus, Cache, Disk, Machine, VMConfig
    from vmio.system.ports import free_port

# Each name is imported on first use (PEP 562), so that importing one module of the package (``vmio.qemu.caps``
# for a command's --help, ``vmio.qemu.vmconfig`` for the spec model) does not bring in the QMP client and
# asyncio with it.
_LAZY: dict[str, tuple[str, str | None]] = {
    "Accel": ("vmio.qemu.vmconfig", "Accel"),
    "AccelChoice": ("vmio.qemu.accel", "AccelChoice"),
    "AccelProber": ("vmio.qemu.accel", "AccelProber"),
    "AgentRecord": ("vmio.qemu.agent", "AgentRecord"),
    "Aio": ("vmio.qemu.vmconfig", "Aio"),
    "Bus": ("vmio.qemu.vmconfig", "Bus"),
    "Cache": ("vmio.qemu.vmconfig", "Cache"),
    "Disk": ("vmio.qemu.vmconfig", "Disk"),
    "Fleet": ("vmio.qemu.fleet", "Fleet"),
    "KVM_PROBE_DEADLINE": ("vmio.qemu.accel", "KVM_PROBE_DEADLINE"),
    "Machine": ("vmio.qemu.vmconfig", "Machine"),
    "ProcIO": ("vmio.qemu.agent", "ProcIO"),
    "QemuCaps": ("vmio.qemu.caps", "QemuCaps"),
    "Runtime": ("vmio.qemu.argv", "Runtime"),
    "Snapshot": ("vmio.qemu.threads", "Snapshot"),
    "ThreadCPU": ("vmio.qemu.threads", "ThreadCPU"),
    "ThreadSampler": ("vmio.qemu.threads", "ThreadSampler"),
    "VM": ("vmio.qemu.vm", "VM"),
    "VMConfig": ("vmio.qemu.vmconfig", "VMConfig"),
    "VMState": ("vmio.qemu.vm", "VMState"),
    "VfioBinding": ("vmio.qemu.vfio", "VfioBinding"),
    "build_argv": ("vmio.qemu.argv", "build_argv"),
    "builds": ("vmio.qemu.builds", None),
    "check_disjoint": ("vmio.qemu.fleet", "check_disjoint"),
    "cpu_between": ("vmio.qemu.threads", "cpu_between"),
    "free_port": ("vmio.system.ports", "free_port"),
    "iommu_present": ("vmio.qemu.vfio", "iommu_present"),
    "kernel_cmdline": ("vmio.qemu.argv", "kernel_cmdline"),
    "probe_caps": ("vmio.qemu.caps", "probe_caps"),
    "read_agent_records": ("vmio.qemu.agent", "read_agent_records"),
    "read_threads": ("vmio.qemu.threads", "read_threads"),
    "resolve_accel": ("vmio.qemu.accel", "resolve_accel"),
}


def __getattr__(name: str) -> _typing.Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'vmio.qemu' has no attribute {name!r}")
    module, attribute = _LAZY[name]
    value = _importlib.import_module(module)
    if attribute is not None:
        value = getattr(value, attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "KVM_PROBE_DEADLINE",
    "Machine",
    "VM",
    "Accel",
    "AccelChoice",
    "AccelProber",
    "AgentRecord",
    "Aio",
    "Bus",
    "Cache",
    "Disk",
    "Fleet",
    "ProcIO",
    "QemuCaps",
    "Runtime",
    "Snapshot",
    "ThreadCPU",
    "ThreadSampler",
    "VMConfig",
    "VMState",
    "VfioBinding",
    "build_argv",
    "builds",
    "check_disjoint",
    "cpu_between",
    "free_port",
    "iommu_present",
    "kernel_cmdline",
    "probe_caps",
    "read_agent_records",
    "read_threads",
    "resolve_accel",
]

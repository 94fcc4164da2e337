"""``vmio diagnose --live``: a verdict per running VM and disk, with what each verdict rests on."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from vmio.advise.live_sample import LiveVm, Seams, diagnose_live, others_qemus
from vmio.advise.text import format_diagnosis
from vmio.cli import argtypes
from vmio.errors import InputError
from vmio.qemu.running import LIBVIRT_QEMU_USER, find_qemus
from vmio.system import files


def run_live(args: argparse.Namespace) -> int:
    if args.jobs_per_vm is not None and args.jobs_per_vm < 1:
        raise InputError(f"--jobs-per-vm {args.jobs_per_vm!r} must be at least 1")
    if args.point is not None:
        raise InputError(f"--point {args.point!r} picks a stored campaign's point; --live has none")
    span = argtypes.positive_duration("--seconds", args.seconds)
    seams = Seams(proc_root=args.proc, sys_root=Path("/sys"))
    vms = diagnose_live(span, seams, pids=args.pid or (), jobs_per_vm=args.jobs_per_vm)
    for other in others_qemus(find_qemus(args.proc), seams) if not args.pid else ():
        print(
            f"skipped QEMU pid {other.pid} (uid {other.uids[0]}): not run by root, you or "
            f"{LIBVIRT_QEMU_USER}; name it with --pid {other.pid} to diagnose it",
            file=sys.stderr,
        )
    if args.dump_evidence is not None and vms:
        doc = {
            f"{vm.proc.pid}/{d.disk.device_id or d.disk.drive}": d.evidence.to_dict()
            for vm in vms
            for d in vm.disks
        }
        files.write_atomic(args.dump_evidence, (json.dumps(doc, indent=2) + "\n").encode())
        print(f"evidence for {len(doc)} disk(s) written to {args.dump_evidence}")
        return 0
    if args.json:
        print(json.dumps({"seconds": span, "vms": [vm_dict(vm) for vm in vms]}, indent=1))
    elif not vms:
        print("no running QEMU (qemu-system-*) found")
    else:
        sys.stdout.write(f"sampled for {span:g} s\n" + "".join(format_vm(vm) for vm in vms))
    return 0 if vms else 1


def vm_dict(vm: LiveVm) -> dict[str, object]:
    cmd, facts = vm.proc.cmd, vm.facts
    return {
        "pid": vm.proc.pid,
        "name": cmd.name,
        "accel": cmd.accel,
        "qemu_version": vm.version,
        "qmp": {"socket": cmd.qmp, "via": facts.via, "reachable": facts.reachable, "error": facts.error},
        "source": "qmp" if facts.reachable else "command line",
        "iothreads": {name: facts.iothread_tids.get(name) for name in facts.iothread_tids or cmd.iothreads},
        "disks": [
            {
                "id": d.disk.device_id,
                "node": d.disk.drive,
                "bus": d.disk.bus,
                "path": d.disk.path,
                "iothread": d.disk.iothread,
                "host_device": d.host_device,
                "evidence": d.evidence.to_dict(),
                "diagnosis": d.diagnosis.to_dict(),
            }
            for d in vm.disks
        ],
        "notes": vm.notes,
    }


def format_vm(vm: LiveVm) -> str:
    cmd, facts = vm.proc.cmd, vm.facts
    head = f"\n== QEMU pid {vm.proc.pid} ({cmd.name or 'unnamed'}), accel {cmd.accel or 'unknown'}, "
    head += f"QEMU {vm.version or 'version unknown'}\n"
    if facts.reachable:
        head += f"   QMP via {facts.via}: disks from query-block, iothreads from query-iothreads\n"
    else:
        head += f"   QMP not reachable ({facts.error}); described from its command line alone\n"
    threads = facts.iothread_tids or dict.fromkeys(cmd.iothreads)
    names = ", ".join(f"{n} (tid {t})" if t else n for n, t in threads.items()) or "none"
    head += f"   iothreads: {names}\n"
    head += "".join(f"   note: {n}\n" for n in vm.notes)
    if not vm.disks:
        return head + "   no disks found\n"
    for d in vm.disks:
        where = f"{d.disk.path} on host device {d.host_device or 'unknown'}"
        name = d.disk.device_id or d.disk.drive
        head += f"-- disk {name} ({d.disk.bus}, iothread {d.disk.iothread or 'none'}): {where}\n"
        head += "".join(f"   {line}\n" for line in format_diagnosis(d.diagnosis).splitlines())
    return head

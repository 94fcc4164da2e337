"""``vmio guest define NAME`` and ``vmio guest undefine NAME``: canary domains in libvirt (``vmio.libvirt``)."""

from __future__ import annotations

import argparse
import functools
import json
from typing import TYPE_CHECKING

from vmio.cli import argtypes
from vmio.errors import InputError
from vmio.libvirt import canary, domxml
from vmio.libvirt.virsh import DEFAULT_URI, Virsh

if TYPE_CHECKING:
    from vmio.guest import GuestImage


def register(actions: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    define = actions.add_parser(
        "define",
        help="define and start a libvirt canary domain: vmio's guest, a disk shaped like a domain's",
        epilog=f"The canary's kernel, initramfs, XML and console log live in {canary.ROOT}/NAME (root, group "
        f"{canary.QEMU_USER}, mode 0750); 'vmio guest undefine NAME' removes them, the domain and a backing "
        "file vmio made. See docs/libvirt.md.",
    )
    define.add_argument("name", help="the canary domain's name")
    define.add_argument("--uri", default=DEFAULT_URI, help=f"libvirt URI (default {DEFAULT_URI})")
    define.add_argument("--like", metavar="DOMAIN", help="copy bus, cache, io, iothreads, queues from DOMAIN")
    define.add_argument(
        "--disk", metavar="DEV", help="which of DOMAIN's disks to copy (default: its only data disk)"
    )
    define.add_argument(
        "--backing",
        required=True,
        help="the canary's disk: a block device, or a new file vmio creates (--size)",
    )
    define.add_argument("--size", type=argtypes.size, help="size of a backing file vmio creates (default 1G)")
    define.add_argument("--bus", choices=canary.BUSES, help="the disk's bus")
    define.add_argument("--iothreads", type=argtypes.count(0, 64), help="the domain's iothreads (0 = none)")
    define.add_argument("--cache", choices=canary.CACHES, help="the disk's cache mode")
    define.add_argument("--aio", choices=canary.AIOS, help="the disk's I/O mode (libvirt io=)")
    define.add_argument("--queues", type=argtypes.count(1, 64), help="the disk's queues")
    define.add_argument(
        "--accel",
        choices=("auto", "kvm", "tcg"),
        default="auto",
        help="domain type kvm or qemu (TCG); auto: vmio's probe boot decides",
    )
    define.add_argument(
        "--boot-timeout",
        type=functools.partial(argtypes.positive_duration, "--boot-timeout"),
        default=180.0,
        help="how long the guest agent has to answer (default 3m)",
    )
    define.add_argument("--memory", type=argtypes.size, default=384 << 20, help="guest memory (default 384M)")
    define.add_argument("--json", action="store_true", help="print the canary as one JSON object")
    define.set_defaults(handler=_define)
    undefine = actions.add_parser("undefine", help="remove a canary domain and every file vmio made for it")
    undefine.add_argument("name", help="the canary domain to remove")
    undefine.add_argument("--uri", default=DEFAULT_URI, help=f"libvirt URI (default {DEFAULT_URI})")
    undefine.set_defaults(handler=_undefine)


def _shape(args: argparse.Namespace, virsh: Virsh) -> canary.Shape:
    base = canary.Shape()
    if args.like:
        found = domxml.parse(virsh.dumpxml(args.like), f"domain {args.like!r}")
        base = canary.shape_like(found.disk(args.disk, virsh.uri), found.iothreads, args.like)
    elif args.disk:
        raise InputError("--disk names a disk of the --like domain; give --like DOMAIN too")
    given = {k: getattr(args, k) for k in ("bus", "cache", "aio", "iothreads", "queues")}
    shape = canary.Shape(**{**vars(base), **{k: v for k, v in given.items() if v is not None}})
    if shape.iothread is not None and shape.iothread > shape.iothreads:
        shape = canary.Shape(**{**vars(shape), "iothread": None})
    return shape


def _domain_type(accel: str, built: GuestImage, virsh: Virsh) -> str:
    """libvirt's domain type for ``accel``; ``auto``: what vmio's probe boot found works here."""
    if accel == "auto":
        from vmio.qemu import AccelProber, probe_caps  # the QMP client: only for a probe boot

        accel = AccelProber(built, probe_caps(runner=virsh.runner)).resolve("auto").accel
    return "kvm" if accel == "kvm" else "qemu"


def _define(args: argparse.Namespace) -> int:
    from vmio.guest import image  # the image builder: when a canary is defined, not for --help

    virsh = Virsh(args.uri)
    shape = _shape(args, virsh)
    built = image.build()
    domain_type = _domain_type(args.accel, built, virsh)
    made = canary.define(
        virsh,
        args.name,
        args.backing,
        shape,
        domain_type=domain_type,
        size=args.size,
        like=args.like,
        memory=args.memory,
        kernel=built.kernel,
        base_initrd=built.initrd,
        boot_timeout=args.boot_timeout,
    )
    if args.json:
        print(json.dumps(made.to_json(), indent=2))
        return 0
    s = made.shape
    print(
        f"canary {made.name} on {made.uri}: domain type {made.domain_type}, {s.bus}, cache={s.cache}, "
        f"io={s.aio}, iothreads={s.iothreads}, queues={s.queues or '-'}"
        + (f" (like {made.like})" if made.like else "")
    )
    print(f"files: {made.folder}; disk: {made.backing}" + (" (made by vmio)" if made.made_backing else ""))
    return 0


def _undefine(args: argparse.Namespace) -> int:
    for name in canary.undefine(Virsh(args.uri), args.name):
        print(f"removed canary {name}")
    return 0

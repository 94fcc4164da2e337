"""``vmio guest build | info | probe``: make the boot-to-fio guest image, show it, pick the accelerator."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING

from vmio.cli import guest_define
from vmio.errors import InputError

# the image builder (and the fio it packs) is imported when a command runs, not for its --help
if TYPE_CHECKING:
    from vmio.guest.inputs import KernelSource


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``vmio guest`` and its sub-commands to ``sub``."""
    guest = sub.add_parser("guest", help="build or show the boot-to-fio guest image; define libvirt canaries")
    actions = guest.add_subparsers(dest="guest_command", metavar="ACTION")
    actions.required = True
    build = actions.add_parser("build", help="build the guest image into the cache (once per input set)")
    _source_args(build)
    build.add_argument("--force", action="store_true", help="rebuild even when the cached image exists")
    build.add_argument("--prune", action="store_true", help="delete cached images of other input versions")
    build.set_defaults(handler=_build)
    info = actions.add_parser("info", help="show the cached guest image for the current inputs")
    _source_args(info)
    info.add_argument("--json", action="store_true", help="print one JSON object")
    info.set_defaults(handler=_info)
    probe = actions.add_parser("probe", help="show the QEMU found and the accelerator 'auto' resolves to")
    _source_args(probe)
    probe.add_argument("--fresh", action="store_true", help="ignore the cached probe result")
    probe.add_argument("--json", action="store_true", help="print one JSON object")
    probe.set_defaults(handler=_probe)
    guest_define.register(actions)


def _source_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--kernel", type=Path, help="a vmlinuz to use instead of Debian's cloud kernel")
    parser.add_argument(
        "--initrd-modules",
        type=Path,
        metavar="DIR",
        help="the /lib/modules/<release> directory that goes with --kernel",
    )


def _source(args: argparse.Namespace) -> KernelSource:
    if args.initrd_modules is not None and args.kernel is None:
        raise InputError("--initrd-modules needs --kernel; give both, or neither for Debian's cloud kernel")
    from vmio.guest.inputs import KernelSource

    return KernelSource(kernel=args.kernel, modules=args.initrd_modules)


def _build(args: argparse.Namespace) -> int:
    from vmio.guest import image

    built = image.build(_source(args), force=args.force)
    print(f"guest {built.key}: {built.path} ({_mib(built.size)})")
    if args.prune:
        for old in image.remove_stale(built.path.parent, keep=built.key):
            print(f"removed {old}")
    return 0


def _info(args: argparse.Namespace) -> int:
    from vmio.guest import image

    found = image.find(_source(args))
    if found is None:
        if args.json:
            print(json.dumps({"built": False, "cache": str(image.cache_root())}))
        else:
            print(
                f"no guest image built for the current inputs under {image.cache_root()}; "
                "run 'vmio guest build'"
            )
        return 1
    if args.json:
        print(json.dumps({"built": True, **found.to_json()}, indent=2))
        return 0
    print(f"path:     {found.path}\nkey:      {found.key}\nsize:     {_mib(found.size)}")
    for name, value in vars(found.versions).items():
        print(f"{name + ':':<9} {value}")
    print(f"modules:  {' '.join(found.modules) or '(none)'}")
    return 0


def _mib(size: int) -> str:
    return f"{size / 2**20:.1f} MiB"


def _probe(args: argparse.Namespace) -> int:
    from vmio.guest import image
    from vmio.qemu import AccelProber, probe_caps

    caps = probe_caps()
    built = image.build(_source(args))
    choice = AccelProber(built, caps, use_cache=not args.fresh).resolve("auto")
    facts = {
        "qemu": caps.binary,
        "qemu_version": caps.version_string,
        "iothread_vq_mapping": caps.iothread_vq_mapping,
        "kvm_device": caps.kvm_device,
        "accel": choice.accel,
        "reason": choice.reason,
        "cached": choice.cached,
        "guest": built.key,
    }
    if args.json:
        print(json.dumps(facts, indent=2))
    else:
        for name, value in facts.items():
            print(f"{name + ':':<20} {value}")
    return 0

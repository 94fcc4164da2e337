"""``vmio qemu list | add | remove``: the QEMU builds vmio can use, side by side with the system's."""

from __future__ import annotations

import argparse
import json

from vmio.qemu import builds
from vmio.qemu.caps import probe_caps


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``vmio qemu`` and its sub-commands to ``sub``."""
    qemu = sub.add_parser("qemu", help="list, add or remove QEMU builds (the system's is never touched)")
    actions = qemu.add_subparsers(dest="qemu_command", metavar="ACTION")
    actions.required = True
    listing = actions.add_parser("list", help="every QEMU vmio can use: the system's and those it installed")
    listing.add_argument("--json", action="store_true", help="print a JSON array")
    listing.set_defaults(handler=_list)
    add = actions.add_parser(
        "add", help="install the distribution's build of VERSION (e.g. 10.0) into vmio's cache"
    )
    add.add_argument("version", metavar="VERSION", help="10.0 picks the newest 10.0.x offered")
    add.set_defaults(handler=_add)
    remove = actions.add_parser("remove", help="delete a build vmio installed")
    remove.add_argument("version", metavar="VERSION", help="the installed version to delete (vmio qemu list)")
    remove.set_defaults(handler=_remove)


def _entries() -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    for build in builds.available():
        caps = probe_caps(build.path, env=build.env, data_dirs=build.data_dirs, source=build.source)
        out.append(
            {
                "version": build.version,
                "path": build.path,
                "source": build.source,
                "capabilities": caps.as_dict(),
            }
        )
    return out


def _list(args: argparse.Namespace) -> int:
    entries = _entries()
    if args.json:
        print(json.dumps(entries, indent=1))
        return 0
    for e in entries:
        caps = e["capabilities"]
        assert isinstance(caps, dict)
        vq = caps["iothread_vq_mapping"]
        mapped = [bus for bus, ok in vq.items() if ok] if isinstance(vq, dict) else []
        print(
            f"{e['version']:<10} {e['source']:<7} {e['path']}\n"
            f"{'':18}machines: {', '.join(caps['machines'])}; "
            f"iothread-vq-mapping: {', '.join(mapped) or 'no'}; "
            f"nvme timeout workaround: {'yes' if caps['nvme_io_timeout_workaround'] else 'no'}"
        )
    if not entries:
        print("no QEMU found; install qemu-system-x86 or run `vmio qemu add VERSION`")
    return 0


def _add(args: argparse.Namespace) -> int:
    build = builds.add(args.version)
    where = "the system's QEMU" if build.source == "system" else f"installed in {build.path}"
    print(f"QEMU {build.version}: {where}")
    return 0


def _remove(args: argparse.Namespace) -> int:
    for build in builds.remove(args.version):
        print(f"removed QEMU {build.version} ({build.path})")
    return 0

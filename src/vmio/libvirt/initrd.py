"""A canary's initramfs: vmio's guest image with the QEMU guest agent laid over it.

The kernel unpacks concatenated cpio archives in order, so the canary's initramfs is the cached guest's,
unchanged, followed by a small archive holding Debian's ``qemu-ga`` (with its libraries) and
``/vmio-canary``, which the kernel runs first (``rdinit=/vmio-canary``): it starts the agent on the
virtio-serial port ``org.qemu.guest_agent.0`` once that port appears, then hands over to vmio's ``/init``.
The guest image's cache key is untouched.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from vmio.errors import InputError
from vmio.guest.cpio import CpioWriter
from vmio.libvirt.virsh import AGENT_CHANNEL
from vmio.system.process import Runner

AGENT_PACKAGE = "qemu-guest-agent"
RDINIT = "/vmio-canary"
LIB_DIRS = ("/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64")

CANARY_INIT = """#!/bin/sh
# vmio canary: the QEMU guest agent beside vmio's guest init (which this hands over to).
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
(
    export LD_LIBRARY_PATH=@LIBS@
    while :; do
        for port in /sys/class/virtio-ports/*; do
            if [ "$(cat "$port/name" 2>/dev/null)" = @CHANNEL@ ]; then
                echo "vmio-canary: qemu-ga on /dev/${port##*/}"
                exec /usr/sbin/qemu-ga -m virtio-serial -p "/dev/${port##*/}" -f /run/qemu-ga.pid -t /run
            fi
        done
        sleep 0.2
    done
) &
exec /init
"""


def find_agent(runner: Runner) -> Path:
    """The host's ``qemu-ga`` (Debian's ``qemu-guest-agent``)."""
    found = shutil.which("qemu-ga") or ("/usr/sbin/qemu-ga" if Path("/usr/sbin/qemu-ga").is_file() else None)
    if found is None:
        raise InputError(f"qemu-ga is not installed; install the Debian package {AGENT_PACKAGE!r}")
    return Path(found)


def write(base: Path, out: Path, runner: Runner) -> None:
    """``base`` (the guest's initramfs) followed by the agent's archive, into ``out``."""
    from vmio.guest import inputs  # fio's runner and the spec: when a canary's initramfs is written

    agent = find_agent(runner)
    libs = inputs.shared_libraries(runner, str(agent))
    dirs = sorted({str(lib.parent) for lib in libs} | set(LIB_DIRS))
    with open(out, "wb") as raw:
        with open(base, "rb") as src:
            shutil.copyfileobj(src, raw)
        raw.write(b"\0" * (-raw.tell() % 4))
        writer = CpioWriter(raw)
        for d in ("usr", "usr/sbin", "var"):
            writer.directory(d)
        writer.symlink("var/run", "/run")
        writer.file("usr/sbin/qemu-ga", agent.read_bytes(), 0o755)
        made: set[str] = set()
        for lib in libs:
            parts = lib.parent.parts[1:]
            for i in range(1, len(parts) + 1):
                if "/".join(parts[:i]) not in made:
                    made.add("/".join(parts[:i]))
                    writer.directory("/".join(parts[:i]))
            writer.file(str(lib).lstrip("/"), lib.read_bytes(), 0o755)
        text = CANARY_INIT.replace("@LIBS@", ":".join(dirs)).replace("@CHANNEL@", AGENT_CHANNEL)
        writer.file(RDINIT.lstrip("/"), text.encode(), 0o755)
        writer.close()

"""Loopback ports only vmio's own user may connect to.

QEMU forwards a port on 127.0.0.1 to the guest's ``fio --server``, which has no authentication: any local
user who reached it could run a job (and ``exec_prerun``) as root inside the guest, writing the backing.
Each forwarded port gets one firewall rule in the host's ``OUTPUT`` chain (the same place libvirt keeps
its own rules): a TCP connection to ``127.0.0.1:PORT`` from a socket whose owner is not vmio's user is
reset. Every client (campaign, membal, dstore's guest runs, tune) is guarded the same way because the
port is, and QEMU, the guest and the data path are unchanged (no IOPS cost). Why this and not a private
network namespace or a unix socket: see docs/security.md, "Isolation (part 2)".

A rule carries vmio's pid in its comment; rules whose vmio died (SIGKILL) are swept by the next guard.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Sequence

from vmio.errors import ToolError
from vmio.system.process import Runner, alive

IPTABLES = "iptables"
COMMENT = "vmio guard pid"
TIMEOUT_S = 20.0
_STALE = re.compile(rf'^-A OUTPUT (.*--comment "?{COMMENT} (\d+)"?.*)$')


def rule(port: int, uid: int, pid: int) -> list[str]:
    """The rule's match and target, as ``iptables -I/-D OUTPUT`` takes them."""
    return ["-o", "lo", "-p", "tcp", "-d", "127.0.0.1", "--dport", str(port),
            "-m", "owner", "!", "--uid-owner", str(uid),
            "-m", "comment", "--comment", f"{COMMENT} {pid}",
            "-j", "REJECT", "--reject-with", "tcp-reset"]  # fmt: skip


class PortGuard:
    """Guarded loopback ports; ``add`` before the server listens, ``close`` when it has gone."""

    def __init__(self, runner: Runner | None = None, *, uid: int | None = None) -> None:
        self.runner = runner or Runner()
        self.uid = os.geteuid() if uid is None else uid
        self.pid = os.getpid()
        self.ports: list[int] = []
        self._swept = False

    def _iptables(self, args: Sequence[str], *, check: bool = True) -> str:
        done = self.runner.run([IPTABLES, "-w", "10", *args], timeout=TIMEOUT_S, check=False)
        if check and done.returncode != 0:
            raise ToolError(
                f"cannot keep other users off a forwarded port: iptables {' '.join(args[:2])} failed "
                f"({done.stderr.strip() or done.stdout.strip()}); vmio needs root (CAP_NET_ADMIN) and "
                "iptables with the owner match to start VMs",
                argv=[IPTABLES, *args],
                returncode=done.returncode,
            )
        return done.stdout

    def add(self, port: int) -> None:
        """Guard ``port``; a guard's first port sweeps dead vmios' rules first (one ``iptables -S`` per
        guard, not per port: a VM's forwarded port and its fio relay's share one)."""
        if not self._swept:
            self.sweep()
            self._swept = True
        self._iptables(["-I", "OUTPUT", *rule(port, self.uid, self.pid)])
        self.ports.append(port)

    def remove(self, port: int) -> None:
        if port in self.ports:
            self.ports.remove(port)
            self._iptables(["-D", "OUTPUT", *rule(port, self.uid, self.pid)], check=False)

    def close(self) -> None:
        for port in list(self.ports):
            self.remove(port)

    def sweep(self) -> None:
        """Remove rules left by a vmio process that no longer exists."""
        for line in self._iptables(["-S", "OUTPUT"], check=False).splitlines():
            found = _STALE.match(line)
            if found and not alive(int(found[2])):
                self._iptables(["-D", "OUTPUT", *_split(found[1])], check=False)


def _split(spec: str) -> list[str]:
    """``iptables -S`` output back into arguments (its only quoted field is the comment)."""
    return shlex.split(spec)

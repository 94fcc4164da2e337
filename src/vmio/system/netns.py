"""A private shaped network of network namespaces, for a throwaway Ceph cluster whose replicas cross a link.

Each member (the monitor, each OSD, the client) gets a namespace of its own with one veth whose other end is
a port of a bridge in a further namespace; nothing is made in the host's namespace, so the host's own
interfaces and routes are untouched. Addresses come from the benchmarking range 198.18.0.0/15 (RFC 2544)
and exist only inside these namespaces. Both ends of every veth carry a ``tbf`` qdisc at the link's rate,
so a member sends and receives at most that rate, as through a switch port; a delay is added with
``netem`` only where the kernel has it (``delay_note`` says when it has not).

Every namespace is named ``vmio-<pid>x<hex>-<role>`` (``pid``: the vmio that made it): ``ip netns`` shows
vmio's, and removing a token's namespaces (after killing what still runs in them) removes their veths, the
bridge and the qdiscs.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import re
import secrets
import shutil
import signal
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from vmio.errors import InputError, ToolError
from vmio.system.process import Completed, Runner, alive

PREFIX = "vmio-"
BRIDGE = "net"  # the role of the bridge's namespace
SUBNET = ipaddress.ip_network("198.18.0.0/24")  # inside 198.18.0.0/15, the benchmarking range
RANGE = ipaddress.ip_network("198.18.0.0/15")
DEFAULT_RATE = 10_000_000_000  # 10 Gbit/s: bitisle-dstore-2014's 10 GbE
TIMEOUT_S = 20.0
LATENCY_MS = 50  # tbf's queue: what waits longer than this at the rate is dropped
_NAME = re.compile(r"^vmio-(\d+x[0-9a-f]{4})-([a-z0-9]+)$")
_RATE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(bit|kbit|mbit|gbit|tbit)?\s*$", re.IGNORECASE)
_UNITS = {"bit": 1, "kbit": 10**3, "mbit": 10**6, "gbit": 10**9, "tbit": 10**12}


def parse_rate(text: str, flag: str = "--rate") -> int:
    """``10gbit``, ``100mbit``, ``1000000`` (bit/s; tc's units are decimal) as bits per second."""
    found = _RATE.match(text)
    if not found:
        raise InputError(f"{flag} {text!r} is not a rate; give e.g. 10gbit, 1gbit or 100mbit")
    bps = int(float(found[1]) * _UNITS[(found[2] or "bit").lower()])
    if not 1_000_000 <= bps <= 400 * 10**9:
        raise InputError(f"{flag} {text!r} is out of range; give 1mbit to 400gbit")
    return bps


def format_rate(bps: int) -> str:
    """``10 Gbit/s``, ``100 Mbit/s``."""
    for unit, size in (("Tbit/s", 10**12), ("Gbit/s", 10**9), ("Mbit/s", 10**6), ("kbit/s", 10**3)):
        if bps >= size:
            return f"{bps / size:g} {unit}"
    return f"{bps} bit/s"


@dataclass(frozen=True)
class Network:
    """vmio's namespaces of one network: their token, the members' roles, the shaping applied."""

    token: str
    roles: tuple[str, ...]
    rate: int  # bits per second, each direction of each member's link
    delay_ms: float | None  # applied one-way delay; None: none (not asked, or netem absent)
    delay_note: str | None = None  # why a delay asked for was not applied

    def ns(self, role: str) -> str:
        return f"{PREFIX}{self.token}-{role}"

    def addr(self, role: str) -> str:
        """The member's address (198.18.0.10 + its place)."""
        return str(SUBNET.network_address + 10 + self.roles.index(role))

    def links(self, role: str) -> list[tuple[str, str]]:
        """Both ends of a member's link, each (namespace, device): shaped alike."""
        return [(self.ns(role), "eth0"), (self.ns(BRIDGE), role)]

    def namespaces(self) -> list[str]:
        return [self.ns(BRIDGE), *(self.ns(r) for r in self.roles)]

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {"kind": "netns", "rate": self.rate, "delay_ms": self.delay_ms}
        if self.delay_note:
            out["delay_note"] = self.delay_note
        return out

    def describe(self) -> str:
        delay = f", {self.delay_ms:g} ms delay" if self.delay_ms else ", no added delay"
        return f"netns, {format_rate(self.rate)} per link{delay}"

    @classmethod
    def from_json(cls, data: Mapping[str, object]) -> Network:
        delay = data.get("delay_ms")
        note = data.get("delay_note")
        return cls(
            str(data["token"]),
            tuple(str(r) for r in data["roles"]),  # type: ignore[attr-defined]
            int(str(data["rate"])),
            None if delay is None else float(str(delay)),
            None if note is None else str(note),
        )

    def state(self) -> dict[str, object]:
        """What a cluster's state file keeps to find and remove the network again."""
        return {**self.to_json(), "token": self.token, "roles": list(self.roles)}


def available() -> bool:
    """Whether vmio can make namespaces here: root, with ``ip`` and ``tc`` installed."""
    return os.geteuid() == 0 and all(shutil.which(tool) for tool in ("ip", "tc"))


def new_token() -> str:
    """``<pid>x<4 hex>``: the vmio that made the namespaces, and a random part."""
    return f"{os.getpid()}x{secrets.token_hex(2)}"


def maker(token: str) -> int | None:
    """The PID of the vmio that made a token's namespaces."""
    pid, _, _ = token.partition("x")
    return int(pid) if pid.isdigit() else None


def _ip(runner: Runner, *args: str, check: bool = True) -> Completed:
    return _checked(runner, ["ip", *args], check, f"cannot build vmio's network: ip {' '.join(args)}",
                    "; namespaces need root (CAP_SYS_ADMIN, CAP_NET_ADMIN)")  # fmt: skip


def _tc(runner: Runner, ns: str, *args: str, check: bool = True) -> Completed:
    return _checked(
        runner, ["tc", "-n", ns, *args], check, f"cannot shape vmio's network: tc {' '.join(args)} in {ns}"
    )


def _checked(runner: Runner, argv: list[str], check: bool, failed: str, hint: str = "") -> Completed:
    """``argv`` run; with ``check`` a failure is a ToolError: ``failed``, the tool's own words, ``hint``."""
    done = runner.run(argv, timeout=TIMEOUT_S, check=False)
    if check and done.returncode != 0:
        words = done.stderr.strip() or done.stdout.strip()
        raise ToolError(f"{failed} failed ({words}){hint}", argv=done.argv, returncode=done.returncode)
    return done


def burst_bytes(rate: int) -> int:
    """tbf's bucket: 2 ms at the rate, at least 128 KiB (a GSO packet on a veth is up to 64 KiB)."""
    return max(128 << 10, rate // 8 // 500)


def make(
    roles: Sequence[str],
    *,
    rate: int = DEFAULT_RATE,
    delay_ms: float | None = None,
    runner: Runner | None = None,
    token: str | None = None,
) -> Network:
    """Make the namespaces, the bridge, the veths, the addresses and the qdiscs; on any failure remove
    whatever was made and raise."""
    runner = runner or Runner()
    if not roles or len(set(roles)) != len(roles) or any(not re.fullmatch(r"[a-z0-9]+", r) for r in roles):
        raise InputError(f"network members {list(roles)!r} must be distinct short names (a-z, 0-9)")
    if delay_ms is not None and not 0 <= delay_ms <= 10_000:
        raise InputError(f"--delay-ms {delay_ms:g} is out of range; give 0 to 10000")
    net = Network(token or new_token(), tuple(roles), rate, None)
    try:
        return _build(runner, net, delay_ms)
    except BaseException:
        remove(net.token, runner)
        raise


def _build(runner: Runner, net: Network, delay_ms: float | None) -> Network:
    bridge = net.ns(BRIDGE)
    for ns in net.namespaces():
        _ip(runner, "netns", "add", ns)
        _ip(runner, "-n", ns, "link", "set", "dev", "lo", "up")
    _ip(runner, "-n", bridge, "link", "add", "name", "br0", "type", "bridge")
    _ip(runner, "-n", bridge, "link", "set", "dev", "br0", "up")
    note: str | None = None
    applied: float | None = None
    for role in net.roles:
        ns = net.ns(role)
        _ip(
            runner,
            "-n",
            bridge,
            "link",
            "add",
            "name",
            role,
            "type",
            "veth",
            "peer",
            "name",
            "eth0",
            "netns",
            ns,
        )
        _ip(runner, "-n", bridge, "link", "set", "dev", role, "master", "br0")
        _ip(runner, "-n", bridge, "link", "set", "dev", role, "up")
        _ip(runner, "-n", ns, "addr", "add", f"{net.addr(role)}/{SUBNET.prefixlen}", "dev", "eth0")
        _ip(runner, "-n", ns, "link", "set", "dev", "eth0", "up")
        for where, dev in net.links(role):
            absent = _shape(runner, where, dev, net.rate, delay_ms)
            if absent is not None:
                note, delay_ms = absent, None
            applied = delay_ms
    return Network(net.token, net.roles, net.rate, applied, note)


def _shape(runner: Runner, ns: str, dev: str, rate: int, delay_ms: float | None) -> str | None:
    """``tbf`` at ``rate`` as the root qdisc of ``dev`` (below a ``netem`` half of ``delay_ms`` where the
    kernel has it); why the delay was not added, or None."""
    shape = ["tbf", "rate", f"{rate}bit", "burst", str(burst_bytes(rate)), "latency", f"{LATENCY_MS}ms"]
    if delay_ms:
        done = _tc(runner, ns, "qdisc", "add", "dev", dev, "root", "handle", "1:", "netem",
                   "delay", f"{delay_ms / 2:g}ms", check=False)  # fmt: skip
        if done.returncode == 0:
            _tc(runner, ns, "qdisc", "add", "dev", dev, "parent", "1:1", "handle", "10:", *shape)
            return None
        _tc(runner, ns, "qdisc", "add", "dev", dev, "root", *shape)
        return (
            f"a delay of {delay_ms:g} ms was asked but this kernel has no netem "
            f"({done.stderr.strip() or 'tc refused it'}): none was added"
        )
    _tc(runner, ns, "qdisc", "add", "dev", dev, "root", *shape)
    return None


def set_rate(net: Network, rate: int, runner: Runner | None = None) -> Network:
    """Shape every link of ``net`` to ``rate`` instead (its delay kept); the network as it now is."""
    runner = runner or Runner()
    for role in net.roles:
        for ns, dev in net.links(role):
            _tc(runner, ns, "qdisc", "del", "dev", dev, "root")
            _shape(runner, ns, dev, rate, net.delay_ms)
    return Network(net.token, net.roles, rate, net.delay_ms, net.delay_note)


def link_bytes(net: Network, runner: Runner | None = None) -> dict[str, tuple[int, int]]:
    """Bytes each member has sent and received over its link so far, by role, as the kernel counts them on
    the bridge's ports (one ``ip -s -j`` in the bridge's namespace: a port transmits what its member
    receives). Empty when the counters cannot be read."""
    done = _ip(runner or Runner(), "-s", "-j", "-n", net.ns(BRIDGE), "link", "show", check=False)
    try:
        ports = json.loads(done.stdout) if done.returncode == 0 else []
        return {
            str(p["ifname"]): (int(p["stats64"]["rx"]["bytes"]), int(p["stats64"]["tx"]["bytes"]))
            for p in ports
            if p.get("ifname") in net.roles
        }
    except (ValueError, KeyError, TypeError):
        return {}


def listed(runner: Runner | None = None) -> dict[str, list[str]]:
    """vmio's namespaces now (``ip netns list``), by token."""
    runner = runner or Runner()
    out = _ip(runner, "netns", "list", check=False).stdout
    found: dict[str, list[str]] = {}
    for line in out.splitlines():
        name = line.split()[0] if line.split() else ""
        match = _NAME.match(name)
        if match:
            found.setdefault(match[1], []).append(name)
    return found


def pids(ns: str, runner: Runner | None = None) -> list[int]:
    """The processes running in namespace ``ns``."""
    out = _ip(runner or Runner(), "netns", "pids", ns, check=False).stdout
    return [int(word) for word in out.split() if word.isdigit()]


def remove(token: str, runner: Runner | None = None, *, namespaces: Iterable[str] = ()) -> list[str]:
    """Kill whatever still runs in the token's namespaces (only vmio's own processes live there) and delete
    them: their veths, the bridge and the qdiscs go with them. The names removed."""
    runner = runner or Runner()
    names = sorted({*listed(runner).get(token, []), *namespaces})
    for _ in range(50):  # bounded: processes may take a moment to die
        live = [pid for ns in names for pid in pids(ns, runner) if alive(pid)]
        if not live:
            break
        for pid in live:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.1)
    for ns in names:
        _ip(runner, "netns", "delete", ns, check=False)
    left = listed(runner).get(token, [])
    if left:
        raise ToolError(f"vmio's namespaces {', '.join(left)} could not be removed (ip netns delete)")
    return names


def in_range(addr: str) -> bool:
    return ipaddress.ip_address(addr) in RANGE


class InNamespace(Runner):
    """A runner that starts the programs named in ``tools`` inside namespace ``ns`` (``ip netns exec``),
    under the same supervisor, timeout and death-with-vmio as any other; other programs as ``inner`` does."""

    def __init__(self, ns: str, tools: Iterable[str], inner: Runner | None = None) -> None:
        self.ns = ns
        self.tools = frozenset(tools)
        self.inner = inner or Runner()

    def wrap(self, argv: Sequence[str]) -> list[str]:
        argv = [str(a) for a in argv]
        if argv and os.path.basename(argv[0]) in self.tools:
            return ["ip", "netns", "exec", self.ns, *argv]
        return argv

    def run(
        self,
        argv: Sequence[str],
        *,
        timeout: float,
        check: bool = True,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        input_text: str | None = None,
        error: type[ToolError] = ToolError,
        leaves_daemon: bool = False,
        interrupt: float = 0.0,
    ) -> Completed:
        return self.inner.run(
            self.wrap(argv),
            timeout=timeout,
            check=check,
            env=env,
            cwd=cwd,
            input_text=input_text,
            error=error,
            leaves_daemon=leaves_daemon,
            interrupt=interrupt,
        )

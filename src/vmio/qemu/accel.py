"""Choosing the accelerator: a bounded probe boot with KVM, falling back to TCG.

Some hosts expose a ``/dev/kvm`` on which stock guest kernels hang (paravirtual nested hypervisors), so
"``/dev/kvm`` exists" is not enough: the probe boots the real guest under KVM and waits for its ready
marker. The default deadline is 10 s: a healthy KVM boot of this guest takes ~1.5 s, and TCG needs
~4-5 s here, so a KVM guest not ready in 10 s is either hung or slower than TCG and not worth using.
Results are cached per host boot (``/proc/sys/kernel/random/boot_id``), QEMU and guest image.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from vmio.errors import GuestBootError, InputError
from vmio.guest.image import GuestImage, cache_root
from vmio.qemu.caps import QemuCaps
from vmio.qemu.vm import VM
from vmio.qemu.vmconfig import Accel, VMConfig

KVM_PROBE_DEADLINE = 10.0


@dataclass(frozen=True)
class AccelChoice:
    """The accelerator to use and why; record it with every VM run."""

    accel: str  # "kvm" | "tcg"
    reason: str
    qemu_version: str
    probe_seconds: float = 0.0
    cached: bool = False


def boot_id(proc_root: Path = Path("/proc")) -> str:
    try:
        return (proc_root / "sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return "unknown-boot"


@dataclass
class AccelProber:
    """Resolves ``auto``; remembers its answer for this object's life and in a per-boot cache file."""

    image: GuestImage
    caps: QemuCaps
    deadline: float = KVM_PROBE_DEADLINE
    cache_dir: Path | None = None  # default: $XDG_CACHE_HOME/vmio/accel; a tmp dir in tests
    use_cache: bool = True
    _memo: AccelChoice | None = field(default=None, init=False, repr=False)

    def resolve(self, requested: str) -> AccelChoice:
        if requested not in {a.value for a in Accel}:
            raise InputError(f"accel = {requested!r} is not accepted; use auto, kvm or tcg")
        if requested != Accel.AUTO:
            return AccelChoice(requested, "requested", self.caps.version_string)
        if self._memo is None:
            self._memo = self._cached() or self._probe()
        return self._memo

    def _cache_file(self) -> Path:
        ident = f"{self.caps.binary}\n{self.caps.version_text}\n{self.image.key}\n{self.deadline}"
        digest = hashlib.sha256(ident.encode()).hexdigest()[:12]
        root = self.cache_dir or cache_root().parent / "accel"
        return root / f"{boot_id()}-{digest}.json"

    def _cached(self) -> AccelChoice | None:
        path = self._cache_file()
        if not self.use_cache or not path.is_file():
            return None
        data = json.loads(path.read_text())
        return AccelChoice(**{**data, "cached": True})

    def _probe(self) -> AccelChoice:
        if not self.caps.kvm_device:
            choice = AccelChoice("tcg", "/dev/kvm is missing or not accessible", self.caps.version_string)
        else:
            choice = self._probe_boot()
        if self.use_cache:
            path = self._cache_file()
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(asdict(choice)) + "\n")
        return choice

    def _probe_boot(self) -> AccelChoice:
        config = VMConfig(index=9999, accel=Accel.KVM, memory=256 * 2**20, balloon=False)
        start = time.monotonic()
        try:
            with VM(config, self.image, caps=self.caps, boot_timeout=self.deadline):
                took = time.monotonic() - start
                return AccelChoice("kvm", f"KVM guest ready in {took:.1f} s", self.caps.version_string, took)
        except GuestBootError as exc:
            took = time.monotonic() - start
            last = exc.output.strip().splitlines()[-1:] or ["(no console output)"]
            reason = (
                f"KVM probe boot not ready after {took:.1f} s (deadline {self.deadline:g} s); "
                f"console ends: {last[0][:120]!r}"
            )
            return AccelChoice("tcg", reason, self.caps.version_string, took)


def resolve_accel(
    requested: str,
    image: GuestImage,
    caps: QemuCaps,
    *,
    deadline: float = KVM_PROBE_DEADLINE,
    cache_dir: Path | None = None,
) -> AccelChoice:
    """``kvm``/``tcg`` as given; ``auto`` by a (cached) probe boot. See ``AccelProber``."""
    return AccelProber(image, caps, deadline=deadline, cache_dir=cache_dir).resolve(requested)

"""What a guest image is made of: the kernel, its modules, busybox and fio, with their versions.

Versions are read without downloading (``apt-cache``, ``dpkg-query``, ``fio --version``) so the cache key
can be computed, and the cache checked, before anything is fetched.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from vmio.errors import InputError, ToolError, UnsafeTargetError, VmioError
from vmio.fio import run as fiorun
from vmio.system import files
from vmio.system.process import Runner

KERNEL_PACKAGE = "linux-image-cloud-amd64"
BUSYBOX_PACKAGE = "busybox-static"


@dataclass(frozen=True)
class Versions:
    """The inputs' versions that decide the image's cache key."""

    kernel: str
    busybox: str
    fio: str
    init: str

    def key(self) -> str:
        text = "\n".join((self.kernel, self.busybox, self.fio, self.init))
        return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class KernelSource:
    """A kernel to build from: Debian's cloud kernel package, or a given vmlinuz and module dir."""

    kernel: Path | None = None
    modules: Path | None = None

    def version(self, runner: Runner, remembered: Path | None = None) -> str:
        """The kernel's version as the cache key takes it (``remembered``: where apt's answer is kept while
        apt's state is unchanged, ``debian_kernel_package``)."""
        if self.kernel is None:
            pkg, version = debian_kernel_package(runner, remembered)
            return f"{pkg}={version}"
        if not self.kernel.is_file():
            raise InputError(f"--kernel {str(self.kernel)!r} is not a file; give a vmlinuz path")
        info = self.kernel.stat()
        mods = self.modules.resolve() if self.modules else "-"
        return f"file:{self.kernel.resolve()}:{info.st_size}:{int(info.st_mtime)}:{mods}"


def debian_kernel_package(
    runner: Runner, remembered: Path | None = None, places: tuple[str, ...] | None = None
) -> tuple[str, str]:
    """The concrete image package behind ``linux-image-cloud-amd64`` and its version.

    ``apt-cache`` reads every package list to say it (2-4 s on a host whose apt keeps no ``pkgcache.bin``,
    as Debian's container images configure it), and each ``vmio run`` with a VM target asks once. With
    ``remembered``, its answer is kept in that file with a stamp of what apt reads (``apt_state``) and
    given again while the stamp (of ``places``, default ``APT_PLACES``) is the same; a file another user
    could have written is not believed."""
    state = apt_state(places or APT_PLACES) if remembered is not None else ""
    if remembered is not None and remembered.is_file():
        try:
            files.check_trusted(remembered, "apt's remembered answer", verb="read")
            kept = json.loads(remembered.read_text())
            if kept.get("apt_state") == state and kept.get("package") == KERNEL_PACKAGE:
                return str(kept["image"]), str(kept["version"])
        except (UnsafeTargetError, OSError, ValueError, KeyError, AttributeError):
            pass  # asked again below
    out = runner.run(["apt-cache", "show", "--no-all-versions", KERNEL_PACKAGE], timeout=60).stdout
    version = _field(out, "Version")
    match = re.search(r"^Depends:.*?\b(linux-image-[\w.+-]+)", out, re.MULTILINE)
    if not match:
        raise ToolError(f"apt-cache shows no linux-image dependency for {KERNEL_PACKAGE!r}", output=out)
    if remembered is not None:
        answer = {"package": KERNEL_PACKAGE, "apt_state": state, "image": match.group(1), "version": version}
        with contextlib.suppress(OSError, VmioError):  # no cache folder yet, say: asked again next time
            files.write_atomic(remembered, (json.dumps(answer) + "\n").encode())
    return match.group(1), version


APT_PLACES = ("/etc/apt", "/var/lib/apt/lists", "/var/lib/dpkg/status")


def apt_state(places: tuple[str, ...] = APT_PLACES) -> str:
    """A stamp of what ``apt-cache`` reads to choose a package's candidate: its configuration (sources,
    preferences, apt.conf.d), the package lists ``apt-get update`` writes, dpkg's installed packages, and
    ``APT_CONFIG``. Each file's and folder's size and change time, one level into each folder under
    ``/etc/apt``; ``apt-get update``, a changed source or pin, or an installed package changes it."""
    seen = [f"APT_CONFIG={os.environ.get('APT_CONFIG', '')}"]
    for place in places:
        paths = [Path(place)]
        if paths[0].is_dir():
            paths += sorted(paths[0].iterdir())
            paths += sorted(q for p in paths[1:] if p.is_dir() and place == "/etc/apt" for q in p.iterdir())
        for path in paths:
            try:
                st = path.stat()
            except OSError:
                seen.append(f"{path} -")
                continue
            seen.append(f"{path} {st.st_size} {st.st_mtime_ns} {st.st_ctime_ns}")
    return hashlib.sha256("\n".join(seen).encode()).hexdigest()


def busybox_version(runner: Runner) -> str:
    """The installed busybox-static version, or the candidate apt would download."""
    query = ["dpkg-query", "-W", "-f=${Status} ${Version}", BUSYBOX_PACKAGE]
    done = runner.run(query, timeout=30, check=False)
    if done.returncode == 0 and done.stdout.startswith("install ok installed"):
        return done.stdout.split()[-1]
    out = runner.run(["apt-cache", "show", "--no-all-versions", BUSYBOX_PACKAGE], timeout=60).stdout
    return _field(out, "Version") + "(download)"


def fio_version(runner: Runner, fio: str = "fio") -> str:
    path = shutil.which(fio)
    if path is None:
        raise ToolError(f"{fio!r} is not installed; install the Debian package 'fio'")
    found = fiorun.version(runner, path)
    if found is None:
        raise ToolError(f"{path} --version did not say its version")
    return found


def apt_download(runner: Runner, package: str, dest: Path) -> Path:
    """``apt-get download PACKAGE`` into ``dest``; return the .deb file."""
    runner.run(["apt-get", "download", package], timeout=600, cwd=str(dest))
    debs = sorted(dest.glob(f"{package}_*.deb"))
    if not debs:
        raise ToolError(f"apt-get download {package} left no .deb in {str(dest)!r}")
    return debs[-1]


def unpack_deb(runner: Runner, deb: Path, dest: Path) -> None:
    runner.run(["dpkg-deb", "-x", str(deb), str(dest)], timeout=300)


def fetch_debian_kernel(runner: Runner, work: Path) -> tuple[Path, Path]:
    """Download and unpack the cloud kernel; return (vmlinuz, /lib/modules/<release>)."""
    package, _ = debian_kernel_package(runner)
    unpack_deb(runner, apt_download(runner, package, work), work / "kernel")
    vmlinuz = sorted((work / "kernel" / "boot").glob("vmlinuz-*"))
    moddirs = sorted((work / "kernel" / "lib" / "modules").iterdir())
    if not vmlinuz or not moddirs:
        raise ToolError(f"{package} has no boot/vmlinuz-* or lib/modules/* inside")
    return vmlinuz[-1], moddirs[-1]


def find_busybox(runner: Runner, work: Path) -> Path:
    """The static busybox: the installed one, or one unpacked from a downloaded busybox-static."""
    if not busybox_version(runner).endswith("(download)"):
        return Path("/bin/busybox")
    unpack_deb(runner, apt_download(runner, BUSYBOX_PACKAGE, work), work / "busybox")
    return work / "busybox" / "bin" / "busybox"


def busybox_applets(busybox: Path, runner: Runner | None = None) -> list[str]:
    """Where busybox installs its applets (``busybox --list-full``: ``usr/bin/awk``, ...)."""
    out = (runner or Runner()).run([str(busybox), "--list-full"], timeout=30).stdout
    return [line.strip() for line in out.splitlines() if line.strip()]


def shared_libraries(runner: Runner, binary: str, env: dict[str, str] | None = None) -> list[Path]:
    """The shared libraries and the dynamic loader ``binary`` needs, from ``ldd`` (run with ``env``)."""
    out = runner.run(["ldd", binary], timeout=60, env=env).stdout
    libs: list[Path] = []
    for line in out.splitlines():
        match = re.search(r"(?:=>\s*)?(/\S+)\s+\(0x", line)
        if match:
            libs.append(Path(match.group(1)))
    return libs


def _field(text: str, name: str) -> str:
    match = re.search(rf"^{name}:\s*(\S+)", text, re.MULTILINE)
    if not match:
        raise ToolError(f"no {name!r} field in apt-cache output", output=text)
    return match.group(1)

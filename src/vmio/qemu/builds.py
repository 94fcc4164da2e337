"""QEMU builds side by side: the system's and those vmio installed into its cache.

``add("10.0")`` installs the distribution's build of the newest 10.0.x its package mirrors offer (on
Debian 12: bookworm-backports) without touching the system: a private apt configuration (its own sources
list, package lists and archive cache under vmio's cache; the system's sources and dpkg database are only
read) downloads ``qemu-system-x86`` and whatever it needs that the system lacks or has too old
(``apt-get install --download-only``), and ``dpkg-deb -x`` unpacks them into
``~/.cache/vmio/qemu/VERSION/root``. Such a build runs with its own firmware folders (``-L``), its own
libraries first (``LD_LIBRARY_PATH``) and its own modules (``QEMU_MODULE_DIR``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from vmio.errors import InputError, ToolError
from vmio.system.files import check_place, check_trusted
from vmio.system.process import Runner

QEMU_BINARY = "qemu-system-x86_64"
PACKAGE = "qemu-system-x86"
# The build's loadable modules: Debian's QEMU loads every module of -device help from its compiled-in
# folder too, so each module the system's QEMU keeps there must also be in ours, from the same build.
MODULE_PACKAGES = ("qemu-block-extra", "qemu-system-modules-opengl", "qemu-system-modules-spice")
BIN_IN_ROOT = Path("usr/bin") / QEMU_BINARY
MANIFEST = "build.json"
APT_TIMEOUT = 600.0
# Where a private apt looks; the Debian mirrors the system uses, plus backports (never added to the system).
DEBIAN_SOURCES = (
    "deb http://deb.debian.org/debian {codename} main",
    "deb http://deb.debian.org/debian {codename}-updates main",
    "deb http://deb.debian.org/debian-security {codename}-security main",
    "deb http://deb.debian.org/debian {codename}-backports main",
)
LIB_DIRS = ("usr/lib/x86_64-linux-gnu", "lib/x86_64-linux-gnu", "usr/lib")
DATA_DIRS = ("usr/share/qemu", "usr/share/seabios", "usr/lib/ipxe/qemu")
MODULE_DIR = "usr/lib/x86_64-linux-gnu/qemu"


@dataclass(frozen=True)
class QemuBuild:
    """One QEMU binary vmio can run, and how: extra firmware folders and environment."""

    version: str  # "10.0.2" as QEMU reports it
    path: str
    source: str  # "system" | "vmio" | "path"
    data_dirs: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    package_version: str | None = None  # the distribution's version, e.g. "1:10.0.2+ds-2+deb13u1~bpo12+1"

    def as_dict(self) -> dict[str, object]:
        return {
            "version": self.version,
            "path": self.path,
            "source": self.source,
            "data_dirs": list(self.data_dirs),
            "env": dict(self.env),
            "package_version": self.package_version,
        }


def cache_root(env: Mapping[str, str] | None = None) -> Path:
    """``$XDG_CACHE_HOME/vmio/qemu`` (default ``~/.cache/vmio/qemu``); ``$VMIO_QEMU_CACHE`` overrides."""
    env = os.environ if env is None else env
    if env.get("VMIO_QEMU_CACHE"):
        return Path(env["VMIO_QEMU_CACHE"])
    base = env.get("XDG_CACHE_HOME") or str(Path(env.get("HOME", str(Path.home()))) / ".cache")
    return Path(base) / "vmio" / "qemu"


def version_of(path: str, runner: Runner | None = None, env: Mapping[str, str] | None = None) -> str:
    """``'10.0.2'`` from ``path --version``."""
    runner = runner or Runner()
    done = runner.run([path, "--version"], timeout=30, env=env, check=False)
    match = re.search(r"version (\d+\.\d+(?:\.\d+)?)", done.stdout)
    if done.returncode != 0 or match is None:
        raise ToolError(f"{path} --version failed (exit {done.returncode})", output=done.stdout + done.stderr)
    return match[1]


def system_build(runner: Runner | None = None) -> QemuBuild | None:
    path = shutil.which(QEMU_BINARY)
    if path is None:
        return None
    check_trusted(path, "the system's QEMU")  # found through PATH, which may name any folder
    return QemuBuild(version_of(path, runner), path, "system")


def installed(root: Path | None = None) -> list[QemuBuild]:
    """The builds vmio installed, oldest first. Each is run as root, so the cache (wherever
    ``VMIO_QEMU_CACHE`` or ``XDG_CACHE_HOME`` puts it), each manifest, and every binary and folder a manifest
    names must be such that no other user could have changed them (``files.check_trusted``, exit 3)."""
    root = root or cache_root()
    if not root.exists():
        return []
    check_trusted(root, "the QEMU build cache", verb="use")
    found = []
    for manifest in sorted(root.glob(f"*/{MANIFEST}")):
        check_trusted(manifest, "the QEMU build manifest", verb="use")
        data = json.loads(manifest.read_text())
        build = QemuBuild(
            data["version"],
            data["path"],
            "vmio",
            tuple(data["data_dirs"]),
            data["env"],
            data.get("package_version"),
        )
        check_build(build)
        found.append(build)
    return sorted(found, key=lambda b: _key(b.version))


def check_build(build: QemuBuild) -> None:
    """Refuse an installed build whose binary, libraries, modules or firmware another user could change."""
    check_trusted(build.path, f"QEMU {build.version}")
    folders = [*build.data_dirs, *build.env.get("LD_LIBRARY_PATH", "").split(":")]
    folders.append(build.env.get("QEMU_MODULE_DIR", ""))
    for folder in filter(None, folders):
        check_trusted(folder, f"the folder of QEMU {build.version}", verb="use")


def available(runner: Runner | None = None, root: Path | None = None) -> list[QemuBuild]:
    """Every QEMU vmio can use: the system's first, then the installed ones."""
    system = system_build(runner)
    return ([system] if system else []) + installed(root)


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", version)[:3])


def matches(version: str, wanted: str) -> bool:
    """``'10.0.2'`` matches ``'10'``, ``'10.0'`` and ``'10.0.2'``."""
    return _key(version)[: len(_key(wanted))] == _key(wanted)


def check_wanted(wanted: str) -> None:
    if not re.fullmatch(r"\d+(\.\d+){0,2}", wanted):
        raise InputError(f"QEMU version {wanted!r} is not a version such as '10.0' or '10.0.2'")


def resolve(wanted: str | None, runner: Runner | None = None, root: Path | None = None) -> QemuBuild:
    """The build a target's ``qemu`` names: None the system's, a version an installed build (newest
    match), a path any executable QEMU."""
    if wanted is None:
        system = system_build(runner)
        if system is None:
            raise ToolError(f"{QEMU_BINARY!r} is not installed; install the Debian package '{PACKAGE}'")
        return system
    if "/" in wanted:
        check_executable(wanted)
        check_trusted(wanted, "qemu =")
        return QemuBuild(version_of(wanted, runner), str(Path(wanted).resolve()), "path")
    check_wanted(wanted)
    found = [b for b in available(runner, root) if matches(b.version, wanted)]
    if not found:
        have = ", ".join(f"{b.version} ({b.source})" for b in available(runner, root)) or "none"
        raise InputError(
            f"QEMU {wanted} is not installed (installed: {have}); run `vmio qemu add {wanted}` first"
        )
    return max(found, key=lambda b: (_key(b.version), b.source == "vmio"))


def check_executable(path: str) -> None:
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        raise InputError(f"qemu = {path!r} is not an executable file")


# ---- installing -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PrivateApt:
    """apt with its own sources list, package lists and archive cache; reads the system's dpkg status."""

    home: Path
    codename: str
    runner: Runner

    @property
    def options(self) -> list[str]:
        return [
            "-o", f"Dir::Etc::SourceList={self.home / 'sources.list'}",
            "-o", "Dir::Etc::SourceParts=/dev/null",
            "-o", f"Dir::State::Lists={self.home / 'lists'}",
            "-o", f"Dir::Cache={self.home / 'cache'}",
            "-o", "Debug::NoLocking=1",
            "-o", "APT::Sandbox::User=root",
        ]  # fmt: skip

    def update(self) -> None:
        (self.home / "lists" / "partial").mkdir(parents=True, exist_ok=True)
        (self.home / "cache" / "archives" / "partial").mkdir(parents=True, exist_ok=True)
        lines = [s.format(codename=self.codename) for s in DEBIAN_SOURCES]
        (self.home / "sources.list").write_text("\n".join(lines) + "\n")
        self.runner.run(["apt-get", *self.options, "-q", "update"], timeout=APT_TIMEOUT)

    def offered(self, package: str = PACKAGE) -> list[tuple[str, str, str]]:
        """``(upstream version, package version, suite)`` of every ``package`` the mirrors offer."""
        out = self.runner.run(["apt-cache", *self.options, "madison", package], timeout=120).stdout
        rows = []
        for line in out.splitlines():
            parts = [p.strip() for p in line.split("|")]
            if len(parts) < 3 or "Packages" not in parts[2]:
                continue
            suite = parts[2].split()[1].split("/")[0]
            rows.append((upstream(parts[1]), parts[1], suite))
        return rows

    def download(self, package_version: str, suite: str) -> list[Path]:
        """Download ``qemu-system-x86=VERSION``, its module packages of that version and what they need
        that the system lacks or has too old; return the .debs."""
        archives = self.home / "cache" / "archives"
        for old in archives.glob("*.deb"):
            old.unlink()
        wanted = [f"{PACKAGE}={package_version}"] + [
            f"{pkg}={package_version}"
            for pkg in MODULE_PACKAGES
            if any(row[1] == package_version for row in self.offered(pkg))
        ]
        self.runner.run(
            ["apt-get", *self.options, "-q", "-y", "--download-only", "--no-install-recommends",
             "-t", suite, "install", *wanted],
            timeout=APT_TIMEOUT,
        )  # fmt: skip
        return sorted(archives.glob("*.deb"))


def upstream(package_version: str) -> str:
    """``'1:10.0.2+ds-2+deb13u1~bpo12+1'`` → ``'10.0.2'``."""
    match = re.match(r"(?:\d+:)?(\d+\.\d+(?:\.\d+)?)", package_version)
    return match[1] if match else package_version


def codename() -> str:
    text = Path("/etc/os-release").read_text() if Path("/etc/os-release").is_file() else ""
    match = re.search(r"^VERSION_CODENAME=(\w+)", text, re.MULTILINE)
    if match is None:
        raise ToolError("vmio qemu add needs a Debian system (/etc/os-release names no VERSION_CODENAME)")
    return match[1]


def add(wanted: str, runner: Runner | None = None, root: Path | None = None) -> QemuBuild:
    """Install the newest offered build matching ``wanted`` into vmio's cache (or return it if there)."""
    check_wanted(wanted)
    runner = runner or Runner()
    root = root or cache_root()
    if root.exists():
        check_trusted(root, "the QEMU build cache", verb="use")
    else:
        check_place(root, new=True)
    apt = PrivateApt(root / "apt", codename(), runner)
    apt.update()
    offered = [row for row in apt.offered() if matches(row[0], wanted)]
    if not offered:
        versions = sorted({row[0] for row in apt.offered()}, key=_key)
        raise InputError(
            f"QEMU {wanted} is not offered by this system's package mirrors; offered: "
            f"{', '.join(versions) or 'none'}"
        )
    version, package_version, suite = max(offered, key=lambda row: _key(row[0]))
    system = system_build(runner)
    if system is not None and system.version == version:
        return system
    for build in installed(root):
        if build.package_version == package_version:
            return build
    debs = apt.download(package_version, suite)
    dest = root / version
    if dest.exists():
        shutil.rmtree(dest)
    tree = dest / "root"
    tree.mkdir(parents=True)
    for deb in debs:
        runner.run(["dpkg-deb", "-x", str(deb), str(tree)], timeout=300)
    return _write_manifest(dest, version, package_version, runner)


def _write_manifest(dest: Path, version: str, package_version: str, runner: Runner) -> QemuBuild:
    tree = dest / "root"
    binary = tree / BIN_IN_ROOT
    if not binary.is_file():
        raise ToolError(f"the unpacked packages hold no {BIN_IN_ROOT} under {tree}")
    libs = [str(tree / d) for d in LIB_DIRS if (tree / d).is_dir()]
    env = {"LD_LIBRARY_PATH": ":".join(libs)} if libs else {}
    if (tree / MODULE_DIR).is_dir():
        env["QEMU_MODULE_DIR"] = str(tree / MODULE_DIR)
    data_dirs = tuple(str(tree / d) for d in DATA_DIRS if (tree / d).is_dir())
    # the system's iPXE option ROMs (virtio-net) when the build brought none
    data_dirs += tuple(d for d in ("/usr/lib/ipxe/qemu",) if Path(d).is_dir() and d not in data_dirs)
    reported = version_of(str(binary), runner, env)
    build = QemuBuild(reported, str(binary), "vmio", data_dirs, env, package_version)
    (dest / MANIFEST).write_text(json.dumps(build.as_dict(), indent=1, sort_keys=True) + "\n")
    return build


def remove(wanted: str, root: Path | None = None) -> list[QemuBuild]:
    """Delete the installed builds matching ``wanted``; the system's QEMU is never touched."""
    check_wanted(wanted)
    root = root or cache_root()
    gone = [b for b in installed(root) if matches(b.version, wanted)]
    if not gone:
        have = ", ".join(b.version for b in installed(root)) or "none"
        raise InputError(f"no QEMU {wanted} installed by vmio to remove (installed by vmio: {have})")
    for build in gone:
        shutil.rmtree(Path(build.path).parents[len(BIN_IN_ROOT.parts)])
    return gone

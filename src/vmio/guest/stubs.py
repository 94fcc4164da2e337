"""Stand-in libraries for fio's engines that the guest never runs.

Debian's fio links the libraries of its network and persistent-memory engines (Ceph RBD, GlusterFS,
NBD, RDMA, PMDK): with theirs, fio needs ~75 MB of shared libraries (ICU's data alone is 31 MB), about
nine tenths of the guest's initramfs. Under TCG the guest pays for that size three times at boot:
QEMU copies the initramfs into guest memory, the kernel unpacks it, and the dynamic loader maps and
relocates every library before ``fio --server`` listens. vmio's guests run only local engines (libaio,
psync, io_uring, null); a Ceph target's fio runs on the host.

So the image carries, for each of those libraries, a stub with the same soname that defines exactly the
symbols fio takes from it, at the same symbol versions: the loader is satisfied (fio binds everything
at start, ``BIND_NOW``) and the library's own dependencies stay out. A stubbed function, if ever called,
prints which library is missing and exits with code 127. The stubs are compiled with ``gcc`` and
checked by running ``fio --version`` against them; without ``gcc`` the image keeps the real libraries.
"""

from __future__ import annotations

import hashlib
import re
import shutil
from collections import defaultdict
from pathlib import Path

from vmio.system.process import Runner

#: fio's engine libraries the guest replaces with stubs (sonames as fio's DT_NEEDED names them).
STUBBED = (
    "libgfapi.so.0",
    "libnbd.so.0",
    "libibverbs.so.1",
    "librdmacm.so.1",
    "librados.so.2",
    "librbd.so.1",
    "libpmemblk.so.1",
    "libpmem.so.1",
)

# Names the stub's C source defines: plain C identifiers only (every fio import is one).
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

_PRELUDE = r"""
static void vmio_missing(void) {
    static const char msg[] = "vmio guest: fio called into %(soname)s, which the guest image leaves out\n";
    long ret;
    __asm__ volatile ("syscall" : "=a"(ret) : "a"(1L), "D"(2L), "S"(msg), "d"(sizeof msg - 1)
                      : "rcx", "r11", "memory");
    __asm__ volatile ("syscall" : : "a"(231L), "D"(127L) : "rcx", "r11", "memory");
    __builtin_unreachable();
}
"""
_FUNCTION = "void %s(void) { vmio_missing(); }\n"


def available() -> bool:
    """Whether stubs can be built here (a C compiler)."""
    return shutil.which("gcc") is not None


def fingerprint() -> str:
    """What the stubs are made of, for the image's cache key: the stubbed sonames and the stub code."""
    return hashlib.sha256((",".join(STUBBED) + _PRELUDE + _FUNCTION).encode()).hexdigest()[:16]


def imports(runner: Runner, binary: Path) -> dict[str, str]:
    """The dynamic symbols ``binary`` takes from libraries: name -> version ('' when unversioned)."""
    out = runner.run(["nm", "-D", "--undefined-only", str(binary)], timeout=60).stdout
    found = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == "U":
            name, _, version = parts[1].partition("@")
            found[name] = version
    return found


def exports(runner: Runner, library: Path) -> set[str]:
    """The names of the functions and objects ``library`` defines (versions dropped)."""
    out = runner.run(["nm", "-D", "--defined-only", str(library)], timeout=60).stdout
    return {
        parts[2].split("@")[0] for parts in (line.split() for line in out.splitlines()) if len(parts) == 3
    }


def source(soname: str, symbols: dict[str, str]) -> tuple[str, str]:
    """The C source of the stub and its linker version script."""
    names = sorted(n for n in symbols if _IDENT.match(n))
    body = _PRELUDE % {"soname": soname} + "".join(_FUNCTION % n for n in names)
    by_version: dict[str, list[str]] = defaultdict(list)
    for name in names:
        by_version[symbols[name]].append(name)
    versions = sorted(v for v in by_version if v)
    if not versions:  # an unversioned library: one anonymous node
        return body, "{ global: " + " ".join(f"{n};" for n in names) + " local: *; };\n"
    # An unversioned import binds to the default version: list it under the first node.
    by_version[versions[0]] += by_version.pop("", [])
    nodes = []
    for i, version in enumerate(versions):
        listed = " ".join(f"{n};" for n in sorted(by_version[version]))
        local = " local: *;" if i == 0 else ""
        parent = f" {versions[i - 1]}" if i else ""
        nodes.append(f"{version} {{ global: {listed}{local} }}{parent};")
    return body, "\n".join(nodes) + "\n"


def build(runner: Runner, binary: Path, libraries: list[Path], out: Path) -> dict[str, Path]:
    """Stubs for the ``STUBBED`` libraries among ``libraries`` (``ldd``'s answer for ``binary``) into
    ``out``; return soname -> the real library's path each replaces. Empty when there is nothing to
    stub."""
    wanted = imports(runner, binary)
    replaced: dict[str, Path] = {}
    out.mkdir(parents=True, exist_ok=True)
    for lib in libraries:
        if lib.name not in STUBBED:
            continue
        defined = exports(runner, lib)
        symbols = {n: v for n, v in wanted.items() if n in defined}
        code, script = source(lib.name, symbols)
        (out / f"{lib.name}.c").write_text(code)
        (out / f"{lib.name}.map").write_text(script)
        runner.run(
            ["gcc", "-shared", "-fPIC", "-nostdlib", "-O2", "-o", str(out / lib.name), str(out / f"{lib.name}.c"),
             f"-Wl,-soname,{lib.name}", f"-Wl,--version-script,{out / f'{lib.name}.map'}",
             "-Wl,--hash-style=both", "-Wl,-z,noexecstack"],
            timeout=120,
        )  # fmt: skip
        replaced[lib.name] = lib
    return replaced

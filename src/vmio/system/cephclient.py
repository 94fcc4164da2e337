"""A named Ceph client: which cephx identity vmio's Ceph clients use and where its key is.

``--client NAME --keyring PATH`` (``clientname``/``keyring`` in a spec) reach every client alike:

- the ``ceph`` and ``rbd`` commands: ``--id NAME --keyring PATH``;
- fio's rbd engine: ``clientname=NAME`` in the job, and ``CEPH_CONF`` pointing at a per-run copy of the
  cluster's conf with ``keyring = PATH`` in a ``[client.NAME]`` section (fio's engine reads only its conf);
- QEMU's rbd driver: ``user=NAME`` and ``conf=`` that same per-run conf.

The per-run conf lives in a folder only vmio's user can open (0700) and goes with the run. Without a name,
clients connect as the conf says (``client.admin`` and its keyring by default).
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from vmio.errors import InputError, ToolError
from vmio.system.files import check_trusted
from vmio.system.process import Runner

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_AUTH_WORDS = ("permission denied", "errno 13", "errno 1]", "auth", "keyring", "unable to find", "eacces")


@dataclass(frozen=True)
class CephClient:
    """A cephx client: ``name`` without ``client.`` (None: the conf's default, admin), its keyring."""

    name: str | None = None
    keyring: Path | None = None

    def __post_init__(self) -> None:
        if self.name is not None and not NAME.match(self.name.removeprefix("client.")):
            raise InputError(f"--client {self.name!r} is not a Ceph client name (letters, digits, _ . -)")
        if self.name is not None and self.name.startswith("client."):
            object.__setattr__(self, "name", self.name.removeprefix("client."))

    @property
    def id(self) -> str:
        return self.name or "admin"

    def args(self) -> tuple[str, ...]:
        """``--id NAME --keyring PATH`` for the ``ceph`` and ``rbd`` commands (what is given)."""
        out: tuple[str, ...] = ("--id", self.name) if self.name else ()
        return out + (("--keyring", str(self.keyring)) if self.keyring else ())

    def check(self, where: str = "--keyring") -> None:
        """The keyring, when given, is a readable file; else one sentence (``InputError``)."""
        if self.keyring is None:
            return
        if not self.keyring.is_file():
            raise InputError(f"{where} {str(self.keyring)!r} is not a file; give the client's keyring")
        if not os.access(self.keyring, os.R_OK):
            raise InputError(f"{where} {str(self.keyring)!r} cannot be read by vmio's user")

    def conf_text(self, conf: Path) -> str:
        """``conf``'s text with ``keyring = PATH`` for ``[client.NAME]`` (at the end of that section, or in a
        new one), for clients that read only a conf."""
        text = conf.read_text()
        if self.keyring is None:
            return text
        line = f"keyring = {self.keyring}"
        header = re.compile(rf"^\s*\[\s*client\.{re.escape(self.id)}\s*\]\s*$")
        lines = text.splitlines()
        for i, current in enumerate(lines):
            if header.match(current):
                end = next(
                    (j for j in range(i + 1, len(lines)) if lines[j].lstrip().startswith("[")), len(lines)
                )
                return "\n".join([*lines[:end], line, *lines[end:]]) + "\n"
        return text.rstrip("\n") + f"\n\n[client.{self.id}]\n{line}\n"


@contextmanager
def client_conf(conf: Path, client: CephClient) -> Iterator[Path]:
    """The conf a conf-only client (fio's rbd engine, QEMU) reads for ``client``: ``conf`` itself without a
    keyring, else a copy naming the keyring, in a 0700 folder removed afterwards. Both are checked first
    (``check_conf``): this is the conf fio's rbd engine and QEMU read as root."""
    check_conf(conf, client)
    if client.keyring is None:
        yield conf
        return
    with tempfile.TemporaryDirectory(prefix="vmio-ceph-") as folder:  # mkdtemp: 0700
        path = Path(folder) / "ceph.conf"
        with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as f:
            f.write(client.conf_text(conf))
        yield path


def check_conf(conf: Path, client: CephClient) -> None:
    """Refuse (``UnsafeTargetError``, exit 3) a ``ceph.conf`` or keyring another user could have changed: a
    conf names files Ceph's clients write as root (``log file``, ``admin socket``) and a keyring is the key
    they present (``files.check_trusted``)."""
    check_trusted(conf, "the Ceph configuration", verb="use")
    if client.keyring is not None:
        check_trusted(client.keyring, "the Ceph keyring", verb="use")


def authenticate(runner: Runner, conf: Path, client: CephClient, timeout: float = 60.0) -> None:
    """Check the conf and keyring (``check_conf``), then connect once as ``client`` (``ceph health``); a key
    the cluster refuses is one sentence (``InputError``); a cluster that cannot be reached stays a
    ``ToolError``."""
    check_conf(conf, client)
    if client.name is None and client.keyring is None:
        return
    client.check()
    argv = ["ceph", "-c", str(conf), "--connect-timeout", "20", *client.args(), "health"]
    done = runner.run(argv, timeout=timeout, check=False)
    if done.returncode == 0:
        return
    said = [x.strip() for x in (done.stderr + done.stdout).splitlines() if x.strip()]
    text = " ".join(said).lower()
    if any(word in text for word in _AUTH_WORDS):
        key = f"the keyring {str(client.keyring)!r}" if client.keyring else "its keyring from the conf"
        raise InputError(
            f"the cluster of {str(conf)!r} refuses client.{client.id} with {key} "
            f"({said[-1] if said else 'no message'}); give the client's own keyring"
        )
    raise ToolError(
        f"cannot reach the cluster of {str(conf)!r} as client.{client.id}: {said[-1] if said else 'no message'}",
        argv=argv,
        returncode=done.returncode,
        output=done.stdout + done.stderr,
    )

"""The installed fio's own names for its options: which name is an alias of which (``readwrite`` is ``rw``).

vmio reads a person's job file as fio reads it (``spec.fiofile``): the last of an option and its aliases
wins. The names are fio's own: ``fio --cmdhelp=KEY`` shows the option ``KEY`` names (its first line) and
that option's alias. Each fio run takes a moment, so each name is asked once per fio binary, when a job file
first uses it, and kept beside vmio's other caches (``$XDG_CACHE_HOME/vmio/fio/``), keyed by the binary's
identity (its resolved path, device, inode, size and modification time): a new fio build is asked again.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import stat
from collections.abc import Mapping
from pathlib import Path

from vmio.errors import FioError, ToolError
from vmio.system import files
from vmio.system.process import Runner

FIO = "fio"
HELP_TIMEOUT_S = 30.0
_ALIAS = re.compile(r"^\s*alias:\s*(\S+)\s*$")
_NAME = re.compile(r"^\s*([A-Za-z0-9_\-]+)\s*:")


def cache_root(env: Mapping[str, str] | None = None) -> Path:
    """``$XDG_CACHE_HOME/vmio/fio`` (default ``~/.cache/vmio/fio``)."""
    env = os.environ if env is None else env
    base = env.get("XDG_CACHE_HOME") or str(Path(env.get("HOME", str(Path.home()))) / ".cache")
    return Path(base) / "vmio" / "fio"


def identity(binary: str = FIO) -> tuple[str, str]:
    """The resolved path of fio ``binary`` and what names its build: path, device, inode, size and
    modification time, hashed."""
    found = shutil.which(binary)
    if found is None:
        raise FioError(f"fio is not installed ({binary!r} is not on PATH); install the fio package")
    real = os.path.realpath(found)
    st = os.stat(real)
    text = f"{real}\n{st.st_dev}\n{st.st_ino}\n{st.st_size}\n{st.st_mtime_ns}"
    return real, hashlib.sha256(text.encode()).hexdigest()[:20]


class InstalledNames:
    """The option names of one fio build (``spec.fiofile.OptionNames``): each name asked once
    (``fio --cmdhelp=KEY``) and cached in ``cache`` for that build."""

    def __init__(self, runner: Runner | None = None, binary: str = FIO, cache: Path | None = None) -> None:
        self.runner = runner or Runner()
        self.binary, key = identity(binary)
        self.path = (cache or cache_root()) / f"options-{key}.json"
        self.known: dict[str, str] = _read(self.path)

    def canonical(self, key: str) -> str:
        if key not in self.known:
            self.known[key] = ask(self.runner, self.binary, key)
            files.make_folder(self.path.parent)
            body = {"binary": self.binary, "names": self.known}
            files.write_atomic(self.path, (json.dumps(body, sort_keys=True, indent=1) + "\n").encode(), 0o600)
        return self.known[key] or key


def names(runner: Runner | None = None, binary: str = FIO, cache: Path | None = None) -> InstalledNames:
    """The installed fio's option names (``InstalledNames``)."""
    return InstalledNames(runner, binary, cache)


def ask(runner: Runner, binary: str, key: str) -> str:
    """The option ``key`` names in fio ``binary`` (its own name, or the option it is an alias of); ``""``
    when fio knows no such option (``No such command``)."""
    argv = [binary, f"--cmdhelp={key}"]
    try:
        text = runner.run(argv, timeout=HELP_TIMEOUT_S, check=False).stdout
    except ToolError as exc:
        raise FioError(f"cannot ask fio for its option {key!r}: {exc}", argv=argv) from exc
    own = ""
    for line in text.splitlines():
        if own == "" and (m := _NAME.match(line)) and not line.startswith("No such"):
            own = m.group(1)
        elif (alias := _ALIAS.match(line)) and alias.group(1) == key:
            return own
    return own if own == key else ""


def _read(path: Path) -> dict[str, str]:
    """The names cached at ``path``, if only vmio's user could have written it; else none."""
    try:
        st = os.stat(path, follow_symlinks=False)
        if not stat.S_ISREG(st.st_mode) or st.st_uid not in files.trusted_uids() or st.st_mode & 0o022:
            return {}
        data = json.loads(path.read_text())
        return {str(k): str(v) for k, v in dict(data["names"]).items()}
    except (OSError, ValueError, KeyError, TypeError):
        return {}

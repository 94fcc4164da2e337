"""Every file vmio writes goes through here: no write follows a planted link or lands where another user
controls, and the files vmio makes to write into carry a mark.

- :func:`check_place` refuses a path below a folder, at any level, that another unprivileged user owns or
  can write (mode bits, POSIX ACLs, group members: ``grants.other_writers``), unless that folder is sticky and what sits in it is ours (root's or the
  invoking user's) or the file vmio is about to create there. It checks both the path as written and what
  it resolves to, so a symlink planted on the way is caught where it lies.
- :func:`check_trusted` refuses a file vmio executes or hands to a program (a QEMU binary, a ``ceph.conf``,
  a keyring, a guest kernel) unless it and every folder above it are such that no other user could have
  changed them.
- :func:`write_atomic` writes a whole file: a ``mkstemp`` temporary beside it (``O_EXCL``, 0600 then the
  final mode), fsync, ``rename`` over the name. A rename replaces a planted link, never its target.
- :func:`create_exclusive` makes a new file (``O_EXCL | O_NOFOLLOW``), :func:`open_lock` a lock file
  (``O_NOFOLLOW``, never truncated through a link).
- :func:`mark` / :func:`is_marked`: the ``user.vmio.scratch`` extended attribute on files vmio created to do
  I/O in (target files, VM images). On a filesystem without user xattrs the mark cannot be set: the file is
  then data like any other, and writing it again needs ``--destroy-data``.
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import stat
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, BinaryIO, Protocol

from vmio.errors import UnsafeTargetError
from vmio.system import grants
from vmio.system.output_paths import write_failed
from vmio.system.paths import resolved

MARK = "user.vmio.scratch"
MARK_VALUE = b"vmio"


class Figure(Protocol):
    """What :func:`write_figure` needs of a figure (matplotlib's, without importing matplotlib here)."""

    def savefig(self, fname: Any, **kwargs: Any) -> None: ...


def write_figure(figure: Figure, path: str | os.PathLike[str], **kwargs: Any) -> Path:
    """Render ``figure`` in the format its suffix names and write it through :func:`write_atomic` (a figure
    written straight to the path would follow a link planted there)."""
    buf = io.BytesIO()
    figure.savefig(buf, format=Path(path).suffix.lstrip(".") or "png", **kwargs)
    return write_atomic(path, buf.getvalue())


def scratch_home() -> Path:
    """vmio's default place for the disk files it makes: ``/var/lib/vmio`` for root, else
    ``$XDG_STATE_HOME/vmio`` (``~/.local/state/vmio``); writable by the invoking user only."""
    if os.geteuid() == 0:
        return Path("/var/lib/vmio")
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "vmio"


def make_folder(path: str | os.PathLike[str]) -> Path:
    """Create ``path`` (and its missing parents) writable by its owner only (0755: others may pass through,
    as libvirt's QEMU user must to reach a canary's files below ``/var/lib/vmio``), after checking that no
    other user controls a folder above it."""
    folder = Path(path)
    check_place(folder, new=True)
    folder.mkdir(mode=0o755, parents=True, exist_ok=True)
    check_place(folder)
    return folder


def trusted_uids() -> frozenset[int]:
    """Owners whose folders and files vmio trusts: root and the user running vmio."""
    return grants.trusted_uids()


def _chain(path: Path) -> list[Path]:
    """``path``'s folders from ``/`` down to its parent, with the path itself last."""
    return [*reversed(path.parents), path]


def check_place(path: str | os.PathLike[str], *, new: bool = False, verb: str = "write") -> None:
    """Raise ``UnsafeTargetError`` when another unprivileged user controls a folder above ``path``: owns it,
    or may write it (mode bits, POSIX ACLs: ``grants.other_writers``).

    ``new``: vmio is about to create ``path`` itself, exclusively (a sticky parent is then fine).
    ``verb``: what vmio would do with ``path``, for the message (``write``, ``run``, ``read``)."""
    written = Path(os.path.abspath(path))
    real = Path(resolved(path))
    for chain in (_chain(written), _chain(real)):
        for folder, child in zip(chain, chain[1:], strict=False):
            _check_folder(path, folder, child, last=child == chain[-1], new=new, verb=verb)


def _check_folder(shown: object, folder: Path, child: Path, *, last: bool, new: bool, verb: str) -> None:
    try:
        st = os.stat(folder)
    except OSError:
        return  # a folder that does not exist yet: whoever creates it is checked when it is made
    trusted = trusted_uids()
    if st.st_uid not in trusted:
        raise UnsafeTargetError(
            f"refusing to {verb} {str(shown)!r}: its folder {str(folder)!r} belongs to "
            f"{grants.user_name(st.st_uid)}, who could swap what is there for a link; use a folder only you "
            "can write"
        )
    writers = grants.other_writers(folder, st)
    if not writers:
        return
    try:
        child_uid: int | None = os.lstat(child).st_uid
    except OSError:
        child_uid = None
    ours = child_uid in trusted or (child_uid is None and last and new)
    if not (st.st_mode & stat.S_ISVTX and ours):
        raise UnsafeTargetError(
            f"refusing to {verb} {str(shown)!r}: its folder {str(folder)!r} can be written by other users "
            f"({writers[0]}); use a folder only you can write"
        )


def check_trusted(path: str | os.PathLike[str], what: str, verb: str = "run") -> None:
    """Raise ``UnsafeTargetError`` unless no other user could have changed ``path``, a file vmio executes
    or hands to a program (a QEMU binary, a build's libraries, a ``ceph.conf``, a keyring, a guest kernel):
    it (and what it resolves to) belongs to root or the invoking user, no other user may write it, and no
    folder up to ``/`` is another user's (``check_place``)."""
    check_place(path, verb=verb)
    for name in dict.fromkeys([str(path), resolved(path)]):
        try:
            st = os.stat(name) if name != str(path) else os.lstat(name)
        except OSError:
            continue  # a missing file: the program that opens it says so
        if stat.S_ISLNK(st.st_mode):
            continue  # a link's own owner does not matter: what it resolves to is checked next
        if st.st_uid not in trusted_uids():
            raise UnsafeTargetError(
                f"refusing to {verb} {what} {name!r}: it belongs to {grants.user_name(st.st_uid)}, "
                "who could have changed it; use a copy only root or you can write"
            )
        writers = grants.other_writers(name, st)
        if writers:
            raise UnsafeTargetError(
                f"refusing to {verb} {what} {name!r}: other users could have changed it ({writers[0]}); "
                "use a copy only root or you can write"
            )


def write_atomic(path: str | os.PathLike[str], data: bytes | Iterable[bytes], mode: int = 0o644) -> Path:
    """Write ``data`` (bytes, or pieces of them: a large document never joined in memory) as the whole of
    ``path``: a private temporary beside it, then a rename (``replacing``)."""
    with replacing(path, mode) as out:
        if isinstance(data, bytes):
            out.write(data)
        else:
            out.writelines(data)
    return Path(path)


@contextlib.contextmanager
def replacing(path: str | os.PathLike[str], mode: int = 0o644) -> Iterator[BinaryIO]:
    """A file to write the whole of ``path`` into: a private temporary beside it, which replaces ``path``
    (flushed, ``mode``, synced to the disk) when the block ends, and is removed when it raises. An ``OSError``
    in the block is a failure to write ``path``, named so (a full disk exit 1, anything else exit 2)."""
    target = Path(path)
    check_place(target, new=True)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except OSError as exc:
        raise write_failed(target, exc) from None
    try:
        with os.fdopen(fd, "wb") as out:
            yield out
            out.flush()
            os.fchmod(out.fileno(), mode)
            os.fsync(out.fileno())
        os.replace(tmp, target)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise write_failed(target, exc) from None
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


@contextlib.contextmanager
def temporary_beside(path: str | os.PathLike[str]) -> Iterator[tuple[int, Path]]:
    """A private new file beside ``path`` (``mkstemp``: ``O_EXCL``, 0600) as ``(fd, path)``; removed
    unless the caller renamed it into place. The fd is closed on leaving."""
    target = Path(path)
    check_place(target, new=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".vmio-partial", dir=target.parent)
    try:
        yield fd, Path(tmp)
    finally:
        os.close(fd)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def create_exclusive(path: str | os.PathLike[str], mode: int = 0o644) -> int:
    """A new file at ``path``, opened for writing; fails if anything (a file, a link) is already there."""
    check_place(path, new=True)
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode)


def open_new(path: str | os.PathLike[str]) -> BinaryIO:
    """``path`` opened for writing from empty, replacing a file of this user but never through a link."""
    check_place(path, new=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    return os.fdopen(fd, "wb")


def open_lock(path: str | os.PathLike[str]) -> int:
    """A lock file opened read-write, created if missing, never through a link (``O_NOFOLLOW``)."""
    check_place(path, new=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_uid not in trusted_uids():
        os.close(fd)
        raise UnsafeTargetError(f"refusing to use the lock file {str(path)!r}: it is not a file of this user")
    return fd


def mark(fd: int) -> bool:
    """Put vmio's mark on the open file ``fd``; False where the filesystem keeps no user xattrs."""
    try:
        os.setxattr(fd, MARK, MARK_VALUE)
    except OSError as exc:
        if exc.errno in (errno.ENOTSUP, errno.EOPNOTSUPP, errno.EPERM, errno.ENOSPC):
            return False
        raise
    return True


def is_marked(path: str | os.PathLike[str]) -> bool:
    """True when ``path`` is a regular file vmio created (it carries vmio's mark)."""
    try:
        return os.getxattr(path, MARK) == MARK_VALUE
    except OSError:
        return False

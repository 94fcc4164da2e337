"""Who besides root and the invoking user may write a file or folder, as the kernel decides it.

The kernel grants write through the mode bits and, where a POSIX ACL is set, through its entries
(``system.posix_acl_access``; named users and groups, limited by the mask, which ``stat`` shows in the group
bits). A folder's default ACL (``system.posix_acl_default``) grants nothing on the folder itself but is
copied onto every file made in it, so a write grant there is counted too. A group grant reaches every member
of the group: root's group (gid 0) counts as trusted only while no untrusted user is in it; any other group
is taken to reach other users (its members may come from a directory service vmio cannot list).

:func:`other_writers` names those grants in words; empty means only trusted users may write.
"""

from __future__ import annotations

import contextlib
import errno
import grp
import os
import pwd
import stat
import struct

ACCESS = "system.posix_acl_access"
DEFAULT = "system.posix_acl_default"

# linux/posix_acl_xattr.h
ACL_VERSION = 2
USER_OBJ, USER, GROUP_OBJ, GROUP, MASK, OTHER = 0x01, 0x02, 0x04, 0x08, 0x10, 0x20
WRITE = 0x02


def trusted_uids() -> frozenset[int]:
    """Owners vmio trusts: root and the user running vmio."""
    return frozenset({0, os.geteuid()})


def user_name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


def group_name(gid: int) -> str:
    try:
        return grp.getgrgid(gid).gr_name
    except KeyError:
        return f"gid {gid}"


def group_reaches_others(gid: int) -> bool:
    """True when a grant to group ``gid`` reaches a user vmio does not trust."""
    if gid != 0:
        return True
    trusted = trusted_uids()
    try:
        members = set(grp.getgrgid(gid).gr_mem)
    except KeyError:
        return True
    uids = {p.pw_uid for p in pwd.getpwall() if p.pw_gid == gid or p.pw_name in members}
    return not uids <= trusted


def acl_entries(path: str | os.PathLike[str], name: str = ACCESS) -> list[tuple[int, int, int]]:
    """``(tag, perm, id)`` of the POSIX ACL ``name`` on ``path`` (following links); empty when none is set or
    the filesystem keeps none."""
    try:
        raw = os.getxattr(path, name)
    except OSError as exc:
        if exc.errno in (errno.ENODATA, errno.ENOTSUP, errno.EOPNOTSUPP, errno.ENOENT):
            return []
        raise
    if len(raw) < 4 or struct.unpack_from("<I", raw)[0] != ACL_VERSION:
        return [(OTHER, WRITE, 0)]  # an ACL vmio cannot read: take it as a grant to everyone
    return [struct.unpack_from("<HHI", raw, at) for at in range(4, len(raw) - 7, 8)]


def _acl_writers(entries: list[tuple[int, int, int]], st: os.stat_result, where: str) -> list[str]:
    """The ACL entries that give another user write, limited by the mask."""
    masks = [perm for tag, perm, _ in entries if tag == MASK]
    mask = masks[0] if masks else 0o7
    trusted = trusted_uids()
    found = []
    for tag, perm, ident in entries:
        if not perm & WRITE or (tag in (USER, GROUP, GROUP_OBJ) and not mask & WRITE):
            continue
        if tag == USER and ident not in trusted:
            found.append(f"{where} ACL lets {user_name(ident)} write")
        elif tag == GROUP and group_reaches_others(ident):
            found.append(f"{where} ACL lets group {group_name(ident)} write")
        elif tag == GROUP_OBJ and group_reaches_others(st.st_gid):
            found.append(f"{where} ACL lets group {group_name(st.st_gid)} write")
        elif tag == OTHER:
            found.append(f"{where} ACL lets every user write")
    return found


def other_writers(path: str | os.PathLike[str], st: os.stat_result | None = None) -> list[str]:
    """How users other than root and the invoking user may write ``path`` (following links), in words:
    the mode bits, its access ACL and, on a folder, its default ACL. Empty: nobody else may."""
    st = os.stat(path) if st is None else st
    found = []
    access = acl_entries(path)
    if access:
        found += _acl_writers(access, st, "its")
    else:
        if st.st_mode & stat.S_IWOTH:
            found.append(f"every user may write it (mode {stat.S_IMODE(st.st_mode):o})")
        if st.st_mode & stat.S_IWGRP and group_reaches_others(st.st_gid):
            found.append(f"group {group_name(st.st_gid)} may write it (mode {stat.S_IMODE(st.st_mode):o})")
    if stat.S_ISDIR(st.st_mode):
        with contextlib.suppress(OSError):
            found += _acl_writers(acl_entries(path, DEFAULT), st, "its default")
    return found

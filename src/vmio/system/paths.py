"""The one rule for a path vmio hands to fio or checks for data.

fio reads ``filename=`` as a ``:``-separated list of files; a ``:`` inside one name is written ``\\:`` (fio's
HOWTO, ``filename``: "if the filename contains a colon, escape it with a backslash"). fio removes exactly the
backslash before each colon and keeps every other backslash, so escaping each ``:`` once is exact for any
name. What fio cannot take in a job file (a line break, a NUL, a ``${`` fio would expand from the
environment) is refused.

The data-holding check runs on what a path resolves to: a local path through :func:`resolved`
(``os.path.realpath``: symlinks, ``.``, ``..`` and repeated slashes), a path on another host through
:func:`remote_normal` (its string form, since the path lives elsewhere: ``//dev/./x/../loop1`` is
``/dev/loop1``).
"""

from __future__ import annotations

import os
import posixpath

from vmio.errors import InputError, UnsafeTargetError

UNESCAPABLE = {"\n": "a line break", "\r": "a carriage return", "\0": "a NUL byte", "${": "'${'"}


def fio_name(path: str) -> str:
    """``path`` as one name in a fio ``filename=`` line: each ``:`` escaped as ``\\:``."""
    for bad, what in UNESCAPABLE.items():
        if bad in path:
            raise InputError(f"the path {path!r} holds {what}, which a fio job file cannot carry; rename it")
    return path.replace(":", "\\:")


def resolved(path: str | os.PathLike[str]) -> str:
    """The absolute path ``path`` names on this host, every symlink, ``.``, ``..`` and extra slash gone.

    A name swapped between a link and a file while it is read (``realpath``'s ``readlink`` then fails) is
    read again; one that keeps changing is refused (``UnsafeTargetError``): someone is racing vmio."""
    for _ in range(RESOLVE_TRIES):
        try:
            return os.path.realpath(path)
        except OSError:
            continue
    raise UnsafeTargetError(f"refusing {str(path)!r}: it kept changing while vmio resolved it")


RESOLVE_TRIES = 5


def remote_normal(path: str) -> str:
    """A path on another host in normal form: ``.``, ``..``, repeated and leading slashes collapsed
    (POSIX lets ``//`` mean something else; Linux does not, so ``//dev/sda`` is ``/dev/sda``)."""
    normal = posixpath.normpath(path)
    if normal.startswith("//"):
        normal = "/" + normal.lstrip("/")
    return normal


def same_path(a: str, b: str) -> bool:
    """True when the two local paths name the same place."""
    return resolved(a) == resolved(b)

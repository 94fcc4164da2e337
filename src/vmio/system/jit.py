"""numba's ``njit`` where the ``sim`` extra is installed; otherwise stand-ins that say which extra to install.

The simulators' compiled fast paths (membal's page caches and stack distances, relocate's replay) are
decorated with :func:`njit`. Without numba their modules still import (so every command can be listed and
the ones that need no simulator run), and calling a compiled function raises
:class:`~vmio.errors.MissingExtraError` naming the extra.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any, TypeVar, cast

from vmio.errors import MissingExtraError

F = TypeVar("F", bound=Callable[..., Any])

EXTRA = "sim"
try:  # numba brings llvmlite; a missing or broken llvmlite fails numba's import too
    import numba

    HAVE_NUMBA = True
except ImportError:
    HAVE_NUMBA = False


def missing(what: str = "this command's compiled simulator") -> MissingExtraError:
    return MissingExtraError(
        f"{what} needs numba, which is not installed: install vmio's {EXTRA!r} extra "
        f"(pip install 'vmio[{EXTRA}]')"
    )


def require(what: str) -> None:
    """Raise :class:`MissingExtraError` naming ``what`` unless numba is installed."""
    if not HAVE_NUMBA:
        raise missing(what)


def njit(**options: Any) -> Any:
    """``numba.njit(**options)``, or a decorator whose functions raise :class:`MissingExtraError` when called
    (typed ``Any`` as numba's own decorator is)."""
    if HAVE_NUMBA:
        return numba.njit(**options)

    def stand_in(fn: F) -> F:
        @wraps(fn)
        def needs_numba(*args: Any, **kwargs: Any) -> Any:
            raise missing()

        return cast(F, needs_numba)

    return stand_in

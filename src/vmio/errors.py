"""The error tree of vmio.

Library code raises these; the CLI turns them into one message and an exit code.

    VmioError                 root; exit code 1 unless a subclass says otherwise
    ├── InputError            bad user input (arguments, files); exit 2
    │   ├── SpecError         an experiment spec or scenario file is invalid
    │   ├── TraceError        a block trace has a malformed line
    │   └── MissingExtraError an optional part of vmio (a pip extra) is not installed
    ├── UnsafeTargetError     a write would destroy data on a device; exit 3
    ├── ToolError             an external program failed (argv, exit code, output tail)
    │   ├── FioError          fio failed or printed output that cannot be parsed
    │   ├── GuestBootError    a VM did not reach its ready marker
    │   └── ClusterError      a replicated-store daemon failed to start or answer
    └── StoreError            the SQLite store cannot be opened, migrated or written
"""

from __future__ import annotations

from collections.abc import Sequence


class VmioError(Exception):
    """Root of every error vmio raises on purpose."""

    exit_code = 1


class InputError(VmioError):
    """Bad input from the user: arguments, files, values."""

    exit_code = 2


class SpecError(InputError):
    """An experiment spec or scenario is invalid; the message names file:line and field."""


class TraceError(InputError):
    """A block trace has a line that cannot be read; the message names file:line."""


class MissingExtraError(InputError):
    """A command needs an optional extra (``pip install 'vmio[EXTRA]'``) that is not installed."""


class UnsafeTargetError(VmioError):
    """A write workload would touch a device holding data the user did not offer up."""

    exit_code = 3


class ToolError(VmioError):
    """An external program failed. Keeps the argv, exit code and the tail of its output."""

    def __init__(
        self,
        message: str,
        *,
        argv: Sequence[str] = (),
        returncode: int | None = None,
        output: str = "",
    ) -> None:
        self.argv = list(argv)
        self.returncode = returncode
        self.output = output
        detail = message
        if argv:
            detail += f"\n  command: {' '.join(self.argv)}"
        if returncode is not None:
            detail += f"\n  exit code: {returncode}"
        tail = tail_lines(output, 15)
        if tail:
            detail += "\n  output (tail):\n    " + tail.replace("\n", "\n    ")
        super().__init__(detail)


class FioError(ToolError):
    """fio failed, or its output could not be parsed."""


class GuestBootError(ToolError):
    """A guest VM did not become ready in time, or died."""


class ClusterError(ToolError):
    """A replicated-store cluster could not be started, queried or stopped."""


class StoreError(VmioError):
    """The SQLite store could not be opened, migrated or written; exit 2 when the store itself is bad input."""

    def __init__(self, message: str, *, exit_code: int = 1) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def tail_lines(text: str, n: int) -> str:
    """The last ``n`` non-empty lines of ``text``."""
    lines = [line for line in text.splitlines() if line.strip()]
    return "\n".join(lines[-n:])

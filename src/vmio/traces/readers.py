"""Trace file readers: blkparse text, fio iologs v2/v3, QEMU log-backend traces, plain CSV (CloudPhysics CSV:
``traces.cloudphysics``).

Each reader returns a ``Trace``; a line that cannot be read raises ``TraceError`` naming ``file:line`` and
the text. ``read_trace(path)`` picks the reader from the file's first lines.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path

from vmio.errors import InputError, TraceError
from vmio.system.input_file import check_regular
from vmio.traces.cloudphysics import read_cloudphysics
from vmio.traces.trace import READ, WRITE, Trace, TraceBuilder

SECTOR = 512
FORMATS = ("blkparse", "fio", "qemu", "cloudphysics", "csv")

# blkparse default output: "%D %2c %8s %5T.%9t %5p %2a %3d " then, for sector events, "%S + %n ... [%C]".
_BLK_HEAD = re.compile(r"^\s*(\d+,\d+)\s+(\d+)\s+(\d+)\s+(\d+\.\d+)\s+(\d+)\s+([A-Za-z]{1,2})\s+(\S+)(.*)$")
_BLK_SECTOR = re.compile(r"^\s*(\d+)\s+\+\s+(\d+)\b")
_BLK_TRAILER = re.compile(r"^(CPU\d+|Total) \(")
# QEMU log backend: optional "PID@SEC.USEC:" then "event args".
_QEMU = re.compile(
    r"^(?:(\d+)@(\d+)\.(\d+):)?(virtio_blk_handle_(?:read|write)|blk_co_p(?:read|write)v)\s+(.*)$"
)
_QEMU_ANY = re.compile(r"^(?:\d+@\d+\.\d+:)?[a-z0-9_]+(\s|$)")


def _fail(path: Path, lineno: int, why: str, text: str) -> TraceError:
    return TraceError(f"{path}:{lineno}: {why}: {text.rstrip()!r}")


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    """The numbered lines of a regular file of UTF-8 text (a FIFO, device or folder is refused at once)."""
    try:
        check_regular(path, "trace")
        with path.open(encoding="utf-8") as fh:
            yield from enumerate(fh, start=1)
    except InputError as exc:
        raise TraceError(str(exc)) from None
    except OSError as exc:
        raise TraceError(f"cannot read trace {str(path)!r}: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        raise TraceError(f"{path}: not UTF-8 text ({exc.reason})") from None


def read_blkparse(path: Path, *, action: str = "D") -> Trace:
    """blkparse default text output; keeps events of ``action`` (D = issued to the device) with R or W."""
    builder = TraceBuilder()
    for lineno, line in _lines(path):
        if not line.strip():
            continue
        if _BLK_TRAILER.match(line):
            break  # the per-CPU and total summaries follow the events
        m = _BLK_HEAD.match(line)
        if not m:
            raise _fail(
                path, lineno, "not a blkparse event line (device cpu seq time pid action rwbs ...)", line
            )
        dev, _cpu, _seq, ts, _pid, act, rwbs, rest = m.groups()
        if act != action:
            continue
        op = WRITE if "W" in rwbs else READ if "R" in rwbs else None
        sector = _BLK_SECTOR.match(rest)
        if op is None or sector is None:
            continue  # flushes, discards and events without a sector range carry no data transfer
        try:
            builder.add(float(ts), dev, op, int(sector.group(1)) * SECTOR, int(sector.group(2)) * SECTOR)
        except ValueError as exc:
            raise _fail(path, lineno, str(exc), line) from None
    return builder.build()


def read_fio_iolog(path: Path) -> Trace:
    """fio iolog version 2 (``wait`` actions in microseconds) or 3 (a microsecond timestamp per line)."""
    builder = TraceBuilder()
    version = 0
    clock_us = 0.0
    for lineno, line in _lines(path):
        text = line.strip()
        if lineno == 1:
            m = re.fullmatch(r"fio version ([23]) iolog", text)
            if not m:
                raise _fail(path, lineno, "expected 'fio version 2 iolog' or 'fio version 3 iolog'", line)
            version = int(m.group(1))
            continue
        if not text:
            continue
        clock_us = _fio_line(builder, path, lineno, line, version, clock_us)
    return builder.build()


_FIO_FILE_ACTIONS = {"add", "open", "close"}
_FIO_IGNORED = {"sync", "datasync", "trim"}


def _fio_line(b: TraceBuilder, path: Path, lineno: int, line: str, version: int, clock_us: float) -> float:
    fields = line.split()
    try:
        if version == 3:
            clock_us = float(int(fields[0]))
            fields = fields[1:]
        if len(fields) == 2 and fields[1] in _FIO_FILE_ACTIONS:
            return clock_us
        name, action, offset, length = fields
        if action == "wait" and version == 2:
            return clock_us + int(offset)
        if action in _FIO_IGNORED:
            return clock_us
        op = {"read": READ, "write": WRITE}[action]
        off, size = int(offset), int(length)
    except (ValueError, KeyError, IndexError):
        raise _fail(path, lineno, f"not a fio v{version} iolog line", line) from None
    try:
        b.add(clock_us / 1e6, name, op, off, size)
    except ValueError as exc:
        raise _fail(path, lineno, str(exc), line) from None
    return clock_us


def read_qemu(path: Path) -> Trace:
    """QEMU ``-trace`` log output of virtio_blk_handle_read/write and blk_co_preadv/pwritev.

    The image is the ``vdev`` (virtio-blk) or ``blk`` (block backend) pointer QEMU prints. Lines of other
    events and other program output are skipped; a line naming one of the four events with bad arguments is
    an error. Without ``-msg timestamp=on`` lines carry no time: the trace keeps line order, unit ``None``.
    """
    builder = TraceBuilder()
    t0_us: int | None = None  # epoch microseconds lose precision as floats: subtract the first one exactly
    for lineno, line in _lines(path):
        text = line.strip()
        if not text:
            continue
        m = _QEMU.match(text)
        if not m:
            if _QEMU_ANY.match(text):
                continue
            raise _fail(path, lineno, "not a QEMU trace line ('[PID@SEC.USEC:]event args')", line)
        _pid, sec, usec, event, args = m.groups()
        kv = _qemu_args(args)
        if sec is None:
            builder.time_unit = None  # without -msg timestamp=on the log has no clock; keep line order
            t = float(lineno)
        else:
            us = int(sec) * 1_000_000 + int(usec)
            t0_us = us if t0_us is None else t0_us
            t = (us - t0_us) / 1e6
        try:
            if event.startswith("virtio_blk"):
                op = READ if event.endswith("read") else WRITE
                image, off, length = kv["vdev"], int(kv["sector"]) * SECTOR, int(kv["nsectors"]) * SECTOR
            else:
                op = READ if event == "blk_co_preadv" else WRITE
                image, off, length = kv["blk"], int(kv["offset"]), int(kv["bytes"])
        except (KeyError, ValueError):
            raise _fail(path, lineno, f"{event} without readable arguments", line) from None
        try:
            builder.add(t, image, op, off, length)
        except ValueError as exc:
            raise _fail(path, lineno, str(exc), line) from None
    return builder.build()


def _qemu_args(args: str) -> dict[str, str]:
    words = args.split()
    return {words[i]: words[i + 1] for i in range(0, len(words) - 1, 2)}


_CSV_OPS = {"r": READ, "read": READ, "w": WRITE, "write": WRITE}


def read_csv(path: Path) -> Trace:
    """Plain CSV with the header ``time,image,op,offset,length`` (seconds, name, r/w/read/write, bytes)."""
    builder = TraceBuilder()
    for lineno, line in _lines(path):
        text = line.strip()
        if lineno == 1:
            if text.replace(" ", "") != "time,image,op,offset,length":
                raise _fail(path, lineno, "expected the header 'time,image,op,offset,length'", line)
            continue
        if not text:
            continue
        try:
            t, image, op, off, length = (f.strip() for f in text.split(","))
            offset, size, kind = int(off), int(length), _CSV_OPS[op.lower()]
            if size <= 0 or not image:
                raise ValueError
        except (ValueError, KeyError):
            raise _fail(path, lineno, "not a 'time,image,op,offset,length' row", line) from None
        try:
            builder.add(float(t), image, kind, offset, size)
        except ValueError as exc:
            raise _fail(path, lineno, str(exc), line) from None
    return builder.build()


READERS: dict[str, Callable[[Path], Trace]] = {
    "blkparse": read_blkparse,
    "fio": read_fio_iolog,
    "qemu": read_qemu,
    "cloudphysics": read_cloudphysics,
    "csv": read_csv,
}


def sniff_format(path: Path) -> str:
    """The format of ``path`` judged from its first non-empty line."""
    first = ""
    for _lineno, line in _lines(path):
        if line.strip():
            first = line.strip()
            break
    if first.startswith("fio version"):
        return "fio"
    if first.startswith("version,time,op"):
        return "cloudphysics"
    if first.replace(" ", "").startswith("time,image,op"):
        return "csv"
    if _BLK_HEAD.match(first):
        return "blkparse"
    if _QEMU_ANY.match(first):
        return "qemu"
    raise TraceError(f"{path}:1: cannot tell the trace format from {first[:80]!r}; pass one of {FORMATS}")


def read_trace(path: str | Path, fmt: str = "auto") -> Trace:
    """Read ``path`` as ``fmt`` (one of ``FORMATS`` or ``"auto"``)."""
    p = Path(path)
    if fmt == "auto":
        fmt = sniff_format(p)
    if fmt not in READERS:
        raise TraceError(f"unknown trace format {fmt!r}; use one of {('auto', *FORMATS)}")
    trace = READERS[fmt](p)
    if not len(trace):
        raise TraceError(f"{p}: no read or write request in this {fmt} trace; there is nothing to analyse")
    return trace

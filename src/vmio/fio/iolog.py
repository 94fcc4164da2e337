"""okayama-hypervisors-2020's fixed operation offsets: generated once from a seed, replayed by fio from an I/O log.

The offsets are drawn once (``generate``) and stored with the campaign; every measured process of every
point replays them through ``read_iolog`` (fio's version 2 I/O log), ``replay_redirect`` sending the log's
file to the endpoint's own device or file. fio reads an I/O log where it runs: for a fio server (a VM's
guest, a remote host) a fio job of its own (``put_job``), run before the measured one, writes the log there
with fio's own writes into a folder fio makes new and private for the run (``private_path``): no shell line,
no fixed name in a shared folder. The measured job then only reads, under fio's ``--readonly``, and a last
read-only job removes the log (``drop_job``).
"""

from __future__ import annotations

import random
import secrets
from collections.abc import Mapping

SPAN = 2 << 30  # the seed draws offsets within the first 2 GiB of the device
LOG_FILE = "vmio-ops"  # the file name inside the log; replay_redirect sends its I/O to the endpoint
SERVER_DIR = "/tmp"
CHUNK = 512  # fio's buffer_pattern holds at most 512 bytes (MAX_PATTERN_SIZE)


def generate(seed: int, count: int, span: int, align: int) -> list[int]:
    """``count`` offsets, multiples of ``align``, within ``[0, span - align]``, drawn from ``seed``."""
    if align <= 0 or span < align:
        raise ValueError(f"cannot place {align}-byte operations within {span} bytes")
    rng = random.Random(seed)
    slots = span // align
    return [rng.randrange(slots) * align for _ in range(count)]


def directions(seed: int, count: int, read_pct: int) -> list[str]:
    """Read or write for each of ``count`` operations: all one way unless the workload mixes them, then
    drawn from ``seed`` (the same sequence for every process)."""
    if read_pct >= 100:
        return ["read"] * count
    if read_pct <= 0:
        return ["write"] * count
    rng = random.Random(f"{seed}:directions")
    return ["read" if rng.random() * 100 < read_pct else "write" for _ in range(count)]


def render(offsets: list[int], ddirs: list[str], bs: int) -> str:
    """A version 2 I/O log of one ``bs``-byte operation at each offset, in order."""
    lines = ["fio version 2 iolog", f"{LOG_FILE} add", f"{LOG_FILE} open"]
    lines += [f"{LOG_FILE} {d} {o} {bs}" for o, d in zip(offsets, ddirs, strict=True)]
    lines.append(f"{LOG_FILE} close")
    return "\n".join(lines) + "\n"


# this vmio's folder on every fio server's host: 128 random bits, so no other user can create it (or plant
# a file or link in its place) first; fio creates it, 0700, with the first log it puts there
RUN_FOLDER = f"{SERVER_DIR}/vmio-{secrets.token_hex(16)}"


def private_path(index: int) -> str:
    """Where endpoint ``index``'s log of one point goes on a fio server's host: a new name in this vmio's own
    folder (``RUN_FOLDER``), made by fio 0700 (``put_job``) and emptied after each point (``drop_job``)."""
    return f"{RUN_FOLDER}/ops-{index}-{secrets.token_hex(8)}.iolog"


def put_job(text: str, path: str) -> str:
    """A fio job file that writes ``text`` to ``path`` where fio runs (a fio server's host): fio itself
    creates the missing folders of ``path`` (mode 0700) and writes the text with its own write jobs, one
    ``buffer_pattern`` chunk (at most ``CHUNK`` bytes, fio's limit) each, one after another: the first makes
    the file anew, the rest append. No shell, no program: only fio's own writes to that one file."""
    data = text.encode()
    glob: dict[str, str | int | float] = {"ioengine": "psync", "rw": "write", "thread": 1, "filename": path}
    out = [section("global", glob)]
    for k in range(0, len(data), CHUNK):
        chunk = data[k : k + CHUNK]
        job: dict[str, str | int | float] = {"bs": len(chunk), "size": len(chunk)}
        job.update(buffer_pattern=f"0x{chunk.hex()}", file_append=int(k > 0), stonewall=1)
        out.append(section(f"put-{k // CHUNK}", job))
    return "".join(out)


def drop_job(path: str, size: int) -> str:
    """A fio job file that removes the log at ``path`` (``size`` bytes) after the point: fio reads it once
    and unlinks it (``unlink=1``), a read-only job like the measured one."""
    job: dict[str, str | int | float] = {"ioengine": "psync", "rw": "read", "filename": path}
    job.update(bs=size, size=size, unlink=1)
    return section("drop-iolog", job)


def section(name: str, options: Mapping[str, str | int | float]) -> str:
    lines = [f"[{name}]"] + [f"{key}={value}" for key, value in options.items()]
    return "\n".join(lines) + "\n\n"

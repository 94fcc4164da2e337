"""Seed 004's fixed operation offsets: generated once from a seed, replayed by fio from an I/O log.

The offsets are drawn once (``generate``) and stored with the campaign; every measured process of every
point replays them through ``read_iolog`` (fio's version 2 I/O log), ``replay_redirect`` sending the log's
file to the endpoint's own device or file. fio reads an I/O log where it runs: a fio server (a VM's guest)
gets it from a small ``exec`` job placed before the measured jobs (``put_section``), which writes the log in
the guest's /tmp; the text travels in the job file itself, base64 in a shell command.
"""

from __future__ import annotations

import base64
import random

SPAN = 2 << 30  # the seed draws offsets within the first 2 GiB of the device
LOG_FILE = "vmio-ops"  # the file name inside the log; replay_redirect sends its I/O to the endpoint
GUEST_DIR = "/tmp"
PUT_RUNTIME = "500ms"  # the exec job lasts this long (fio waits out its runtime, then grace_time)


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


def guest_path(index: int) -> str:
    """Where endpoint ``index``'s log is written on a fio server."""
    return f"{GUEST_DIR}/vmio-ops-{index}.iolog"


def put_section(text: str, path: str) -> dict[str, str | int | float]:
    """A fio ``exec`` job writing ``text`` to ``path`` where fio runs (a fio server's host).

    fio splits the engine's ``arguments`` at spaces; the shell splits its command at tabs as well, so the
    command has tabs and no spaces. The log is written beside and renamed, so a cut-off write leaves no
    log and the measured job fails rather than replaying part of it."""
    data = base64.b64encode(text.encode()).decode()
    part = f"{path}.part"
    command = f"echo\t{data}|base64\t-d>{part}&&mv\t{part}\t{path}"
    return {
        "ioengine": "exec",
        "rw": "read",  # not the workload's random pattern: fio would map the device for it and give up
        "norandommap": 1,
        "program": "/bin/sh",
        "arguments": f"-c {command}",
        "std_redirect": 0,
        "grace_time": 1,
        "runtime": PUT_RUNTIME,
    }

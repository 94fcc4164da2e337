"""Page-cache load inside live guests: buffered fio reads over each guest's disk, driven from the host.

Every guest runs ``fio --server``; one host fio client starts a job per loaded VM. A job reads a working
set of ``size`` bytes through the guest's page cache (``direct=0``): a working set larger than the memory
the guest's cache has left refaults and, near the floor, puts the guest under memory pressure.

``--config TOML`` describes the run and its per-VM workloads::

    [run]                       # every key optional; command-line options win
    policy = "refault"
    memory = "512M"
    floor = "256M"
    interval = "2s"
    duration = "60s"
    max_step = "64M"
    psi_threshold = 0.01        # PSI stall share that counts as memory pressure
    sim = "../case1.toml"       # the same workloads as a `membal sim` scenario (relative to this file),
                                # simulated beside the live runs by `membal run --compare`

    [policy]                    # the policy's parameters, e.g. for refault:
    hysteresis = 0.1            # move only when the gains differ by more than 10 %

    [[vm]]                      # one per VM, in order
    load = "300M"               # working set of buffered reads ("0": idle)
    rw = "randread"             # randread | read
    bs = "64k"                  # block size of the reads
    floor = "256M"              # this VM's floor
    hot = "150M"                # optional: a hot range at the start of the working set ...
    hot_share = 0.9             # ... that gets this share of the random reads (fio zoned_abs)
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vmio.errors import SpecError
from vmio.fio import jobfile
from vmio.fio import run as fiorun
from vmio.spec.tomlfile import load_toml
from vmio.units import parse_duration, parse_size

RUN_KEYS = {
    "policy": "text",
    "memory": "size",
    "floor": "size",
    "interval": "duration",
    "duration": "duration",
    "max_step": "size",
    "budget": "size",
    "min_move": "size",
    "vms": "count",
    "psi_threshold": "fraction",
    "sim": "text",
}
VM_KEYS = {
    "load": "size",
    "rw": "text",
    "bs": "size",
    "floor": "size",
    "hot": "size",
    "hot_share": "fraction",
}
RW = ("randread", "read")
STOP_GRACE_S = 60.0  # a load's fio is killed this long after its runtime if nobody stopped it


@dataclass(frozen=True)
class Load:
    """One VM's workload: buffered reads over ``size`` bytes of its first disk (0: none)."""

    size: int = 0
    rw: str = "randread"
    bs: int = 64 << 10
    hot: int = 0  # bytes at the start of the working set that get ``hot_share`` of the random reads
    hot_share: float = 0.0


@dataclass(frozen=True)
class LiveConfig:
    run: dict[str, Any]  # RUN_KEYS values, parsed
    loads: tuple[Load, ...]
    floors: tuple[int | None, ...]
    params: dict[str, object]  # [policy] table, checked against the policy later


def _value(kind: str, value: object) -> object:
    if kind == "size":
        return parse_size(value)
    if kind == "duration":
        return parse_duration(value)
    if kind == "fraction":
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 1:
            raise ValueError(f"{value!r} is not a fraction in (0, 1]")
        return float(value)
    if kind == "count":
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"{value!r} is not a count; use an integer >= 1")
        return value
    if not isinstance(value, str):
        raise ValueError(f"{value!r} is not text")
    return value


def _table(loc_error: Any, name: str, index: int, data: object, keys: dict[str, str]) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise loc_error(name, index, None, f"[{name}] must be a table")
    out = {}
    for key, value in data.items():
        if key not in keys:
            raise loc_error(name, index, key, f"{name}.{key} is not known; use one of {', '.join(keys)}")
        try:
            out[key] = _value(keys[key], value)
        except ValueError as exc:
            raise loc_error(name, index, key, f"{name}.{key}: {exc}") from exc
    return out


def load_config(path: str | Path) -> LiveConfig:
    """Parse a ``--config`` file; errors name file:line and the field."""
    data, loc = load_toml(path)
    unknown = set(data) - {"run", "vm", "policy"}
    if unknown:
        raise SpecError(f"{path}:1: unknown tables {sorted(unknown)!r}; use [run], [policy] and [[vm]]")
    params = data.get("policy", {})
    if not isinstance(params, dict):
        raise loc.error("policy", 0, None, "[policy] must be a table of the policy's parameters")
    run = _table(loc.error, "run", 0, data.get("run", {}), RUN_KEYS)
    vms = data.get("vm", [])
    if not isinstance(vms, list):
        raise loc.error("vm", 0, None, "vm must be an array of tables: [[vm]]")
    tables = [_table(loc.error, "vm", i, v, VM_KEYS) for i, v in enumerate(vms)]
    for i, t in enumerate(tables):
        if t.get("rw", "randread") not in RW:
            raise loc.error("vm", i, "rw", f"vm.rw = {t['rw']!r} is not accepted; use one of {', '.join(RW)}")
    for i, t in enumerate(tables):
        if ("hot" in t) != ("hot_share" in t):
            raise loc.error("vm", i, "hot", "vm.hot and vm.hot_share go together; give both or neither")
        if "hot" in t and not 0 < t["hot"] < t.get("load", 0):
            raise loc.error("vm", i, "hot", f"vm.hot = {t['hot']!r} bytes must lie inside the load (vm.load)")
        if "hot" in t and t.get("rw", "randread") != "randread":
            raise loc.error("vm", i, "hot", 'vm.hot needs rw = "randread"')
    loads = tuple(
        Load(
            t.get("load", 0),
            t.get("rw", "randread"),
            t.get("bs", 64 << 10),
            t.get("hot", 0),
            t.get("hot_share", 0.0),
        )
        for t in tables
    )
    return LiveConfig(run, loads, tuple(t.get("floor") for t in tables), params)


def job_text(load: Load, device: str, runtime: float) -> str:
    """The fio job for one VM's load; ``invalidate=0`` keeps fio from dropping the cache between loops
    (pages it drops leave no shadow entries, so their refaults would not count). A ``hot`` range gets
    ``hot_share`` of the reads through fio's ``random_distribution=zoned_abs``.

    Random reads pick blocks independently (``norandommap=1``), as web users do and as the simulator's
    workloads do: fio's default random map reads every block once before any block twice, so a uniform
    reader over more than it reads in a run never re-reads a block and reports no hits (measured: 6,144
    random 32k reads over 192M, 0 hits; with ``norandommap`` the misses are the closed form's distinct
    blocks within 0.5 %). ``fadvise_hint=1`` (fio's default, written out) advises ``POSIX_FADV_RANDOM``, which
    turns the guest's readahead off for the job: with readahead on (``fadvise_hint=0``) the same reads
    fetched 12 % more pages than the distinct blocks they read, counted as misses."""
    options: dict[str, str | int | float] = {
        "filename": device,
        "rw": load.rw,
        "bs": load.bs,
        "size": load.size,
        "direct": 0,
        "invalidate": 0,
        "ioengine": "psync",
        "runtime": max(1, int(runtime)),
        "time_based": 1,
        "randrepeat": 0,
    }
    if load.rw == "randread":
        options["norandommap"] = 1
        options["fadvise_hint"] = 1
    if load.hot:
        share = round(load.hot_share * 100)
        rest = f":{100 - share}/{load.size - load.hot}" if share < 100 else ""
        options["random_distribution"] = f"zoned_abs:{share}/{load.hot}{rest}"
    return jobfile.section("membal-load", options)


class LoadRun:
    """One host fio client driving every loaded VM's job in the background; ``stop`` ends it (fio's own
    limit is the run's ``runtime`` and a grace, ``STOP_GRACE_S``).

    ``clients`` are (the VM's ``--client`` address ``host,port``, its load, the guest's device)."""

    def __init__(self, clients: list[tuple[str, Load, str]], runtime: float, workdir: Path) -> None:
        endpoints = []
        for i, (client, load, device) in enumerate(clients):
            job = workdir / f"load-{i}.fio"
            job.write_text(job_text(load, device, runtime))
            host, _, port = client.rpartition(",")
            endpoints.append(fiorun.Endpoint(f"{host}:{port}", job))
        self.log = workdir / "load.log"
        self.proc: fiorun.Background | None = None
        if endpoints:
            self.proc = fiorun.Background(
                endpoints, timeout=runtime + STOP_GRACE_S, cwd=workdir, log=self.log, env={"LC_ALL": "C"}
            )

    def stop(self) -> None:
        """End the guests' jobs: the client is interrupted, so it tells the fio servers to end them (a killed
        client would leave them running until their runtime ends)."""
        if self.proc is not None:
            self.proc.interrupt(wait=20.0)
            self.proc = None

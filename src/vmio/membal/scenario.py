"""Scenario files (TOML) → a validated :class:`Scenario`.

```toml
[scenario]
name = "case1"
memory = "256M"          # page-cache memory shared by all VMs
page = "4k"              # default 4k
epoch = 20000            # accesses between policy decisions
accesses = 2000000       # total, over all VMs
seed = 1
policies = ["equal", "efficiency", "marginal", "mom", "refault"]
grain = "1M"             # allocation unit of the optimal bound and of `marginal` (default memory/256)

[policy.efficiency]      # optional parameters per policy
step = "8M"

[[vm]]
name = "web"
workload = "web-normal"  # uniform | zipf | scan | loop | phases | trace | web-normal | web-burst | nfs-images
rate = 1.0               # relative share of the accesses
floor = "16M"
content = "4G"
```
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vmio.errors import SpecError
from vmio.membal.policies import POLICY_PARAMS
from vmio.membal.specfields import (
    Where,
    get_float,
    get_int,
    get_pages,
    get_size,
    get_str,
    need_table,
)
from vmio.membal.specworkloads import WORKLOADS, parse_workload
from vmio.membal.workloads import Workload
from vmio.spec.tomlfile import Locator, loads_toml, read_spec_text

DEFAULT_POLICIES = ("equal", "efficiency", "marginal", "mom", "refault")
SCENARIO_KEYS = {"name", "memory", "page", "epoch", "accesses", "seed", "policies", "grain"}
MAX_PAGES = 1 << 24
MAX_FOOTPRINT = 1 << 25  # pages over all VMs: the simulator keeps ~25 bytes per page


@dataclass(frozen=True)
class VmSpec:
    name: str
    workload: Workload
    rate: float
    floor: int  # pages


@dataclass(frozen=True)
class Scenario:
    name: str
    memory: int  # pages
    page: int  # bytes
    epoch: int
    accesses: int
    seed: int
    policies: tuple[str, ...]
    vms: tuple[VmSpec, ...]
    grain: int  # pages
    policy_params: Mapping[str, Mapping[str, float]] = field(default_factory=dict)  # sizes in pages

    @property
    def floors(self) -> list[int]:
        return [vm.floor for vm in self.vms]


def load_scenario(path: str | Path) -> Scenario:
    """Read and validate a scenario file. Raises ``SpecError`` naming file:line, field and value."""
    p = Path(path)
    text = read_spec_text(p, "scenario file")
    return parse_scenario(text, str(p), base=p.parent)


def parse_scenario(text: str, path: str = "<scenario>", base: Path | None = None) -> Scenario:
    """Validate scenario TOML ``text``; ``path`` names it in errors, ``base`` resolves trace paths."""
    data, src = loads_toml(text, path)
    need_table(Where(src, "", None, "(top level)"), data, {"scenario", "vm", "policy"})
    head = _table(Where(src, "scenario", None, "scenario"), data.get("scenario"), required=True)
    top = Where(src, "scenario", None, "scenario")
    need_table(top, head, SCENARIO_KEYS)
    page = get_size(top, head, "page", "4k", low=512, high=1 << 21)
    if page & (page - 1):
        raise top.error("page", head.get("page"), "use a power of two such as '4k'")
    memory = get_pages(top, head, "memory", page, high=MAX_PAGES)
    epoch = get_int(top, head, "epoch", low=1, high=10**8)
    scenario = Scenario(
        name=get_str(top, head, "name"),
        memory=memory,
        page=page,
        epoch=epoch,
        accesses=get_int(top, head, "accesses", low=epoch, high=10**9),
        seed=get_int(top, head, "seed", 0, high=2**63 - 1),
        policies=_policies(top, head),
        vms=_vms(src, data.get("vm"), page, base or Path(".")),
        grain=get_pages(top, head, "grain", page, max(1, -(-memory // 256)), high=memory),
        policy_params=_policy_params(src, data.get("policy"), page),
    )
    _check_totals(src, scenario)
    return scenario


def _table(where: Where, value: object, required: bool = False) -> dict[str, Any]:
    if value is None and not required:
        return {}
    if not isinstance(value, dict):
        raise where.error(None, value, f"[{where.table}] must be a table")
    return value


def _policies(top: Where, head: Mapping[str, Any]) -> tuple[str, ...]:
    value = head.get("policies", list(DEFAULT_POLICIES))
    names = tuple(POLICY_PARAMS)
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        raise top.error("policies", value, f"use a non-empty list of names from {', '.join(names)}")
    for v in value:
        if v not in POLICY_PARAMS:
            raise top.error("policies", v, f"policies are {', '.join(names)}")
    ordered = ["equal"] + [v for v in dict.fromkeys(value) if v != "equal"]
    return tuple(ordered)


def _policy_params(src: Locator, value: object, page: int) -> dict[str, dict[str, float]]:
    where = Where(src, "policy", None, "policy")
    tables = _table(where, value)
    need_table(where, tables, set(POLICY_PARAMS))
    out: dict[str, dict[str, float]] = {}
    for name, params in tables.items():
        w = Where(src, f"policy.{name}", None, f"policy.{name}")
        table = _table(w, params)
        kinds = POLICY_PARAMS[name]
        need_table(w, table, set(kinds))
        out[name] = {
            key: get_pages(w, table, key, page, high=MAX_PAGES)
            if kinds[key] == "size"
            else get_float(w, table, key, low=0.0, high=1.0, low_open=True)
            for key in table
        }
    return out


def _vms(src: Locator, value: object, page: int, base: Path) -> tuple[VmSpec, ...]:
    if not isinstance(value, list) or not value:
        raise SpecError(f"{src.path}:1: [[vm]] = {value!r} is not accepted; give one or more [[vm]] tables")
    vms = []
    for i, table in enumerate(value):
        where = Where(src, "vm", i, f"vm[{i}]")
        if not isinstance(table, dict):
            raise where.error(None, table, "each [[vm]] must be a table")
        vms.append(_vm(where, table, page, base))
    names = [vm.name for vm in vms]
    for i, name in enumerate(names):
        if name in names[:i]:
            raise Where(src, "vm", i, f"vm[{i}]").error("name", name, "VM names must be unique")
    return tuple(vms)


def _vm(where: Where, table: Mapping[str, Any], page: int, base: Path) -> VmSpec:
    kind = get_str(where, table, "workload", choices=tuple(WORKLOADS))
    need_table(where, table, {"name", "workload", "rate", "floor"} | set(WORKLOADS[kind]))
    return VmSpec(
        name=get_str(where, table, "name"),
        workload=parse_workload(where, table, kind, page, base),
        rate=get_float(where, table, "rate", 1.0, low=0.0, high=1e9, low_open=True),
        floor=get_pages(where, table, "floor", page, 0, low=0, high=MAX_PAGES),
    )


def _check_totals(src: Locator, s: Scenario) -> None:
    if sum(s.floors) > s.memory:
        raise Where(src, "scenario", None, "scenario").error(
            "memory",
            s.memory * s.page,
            f"the VMs' floors add up to {sum(s.floors) * s.page} bytes, more than it",
        )
    footprint = sum(vm.workload.footprint for vm in s.vms)
    if footprint > MAX_FOOTPRINT:
        raise Where(src, "vm", None, "vm").error(
            None, footprint, f"the VMs' workloads span too many pages; keep the sum under {MAX_FOOTPRINT}"
        )

"""The live controller on existing libvirt domains (``membal run --uri URI --domains a,b``).

Each interval the controller reads each guest's memory from its virtio balloon driver through libvirt
(``virsh dommemstat``: ``available`` → MemTotal, ``unused`` → MemFree, ``usable`` → MemAvailable,
``disk_caches`` → file pages, ``major_fault``, ``swap_in``/``swap_out``, ``last_update`` → the record's
time) and sets balloon targets with ``virsh setmem --live``. An unmodified guest reports nothing more, so
the policies that run on it are those that need only these figures: ``equal`` and ``mom`` (oVirt MOM's
free-memory rule). A domain that also runs vmio's guest agent on a ``vmio.agent`` port (canaries from
``vmio guest define``), on a local URI, adds what its agent reports: refaults and activations
(``refault``) and the page-cache hits of every process in the guest (``efficiency``).

A domain whose balloon statistics period is 0 gets period 1 for the run and 0 back after it; every
domain's balloon is set back to the size it had before the run.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Sequence
from dataclasses import replace

from vmio.errors import InputError, ToolError
from vmio.libvirt import balloon as lb
from vmio.libvirt.virsh import DEFAULT_URI, Virsh, is_local
from vmio.membal.balloon import AgentStream
from vmio.membal.live import LiveController, Step
from vmio.membal.liverun import LiveOutcome, LiveSettings
from vmio.qemu.agent import AgentRecord
from vmio.store import Store
from vmio.store.membal import finish_run, start_run

STATS_ONLY = ("equal", "mom")  # policies an unmodified guest's balloon statistics are enough for
AGENT_POLICIES = ("refault", "efficiency")  # policies that need vmio's agent in the guest
_WHAT = {
    "refault": "the guest's refaults and activations (workingset_*_file)",
    "efficiency": "the page-cache hits of the guest's processes",
}


def record_from(stats: dict[str, int], agent: AgentRecord | None = None) -> AgentRecord:
    """An agent record made of a domain's balloon statistics (KiB), with the latest record of vmio's agent
    for what only it reports (its counters and per-process reads) when the domain has one."""
    kib = 1024
    meminfo = {
        "MemTotal": stats.get("available", 0) * kib,
        "MemFree": stats.get("unused", 0) * kib,
        "MemAvailable": stats.get("usable", 0) * kib,
        "Active(file)": stats.get("disk_caches", 0) * kib,
        "Inactive(file)": 0,
    }
    vmstat = dict(agent.vmstat) if agent is not None else {}
    vmstat.update(
        {
            "pgmajfault": stats.get("major_fault", 0),
            "pgfault": stats.get("minor_fault", 0),
            "pswpin": stats.get("swap_in", 0),
            "pswpout": stats.get("swap_out", 0),
        }
    )
    return AgentRecord(
        float(stats.get("last_update", 0)), vmstat, meminfo, agent.procs if agent is not None else ()
    )


class LibvirtGuest:
    """One running domain's balloon as the controller drives it (:class:`vmio.membal.balloon.Guest`)."""

    def __init__(
        self, virsh: Virsh, domain: lb.BalloonDomain, *, use_agent: bool, min_poll: float = 0.5
    ) -> None:
        self.virsh = virsh
        self.domain = domain
        self.name = domain.name
        self.memory = domain.memory
        self.min_poll = min_poll
        self.stats: dict[str, int] = {}
        self._last_update = -1
        self._polled = 0.0
        self._agent: AgentRecord | None = None
        self.stream = AgentStream(domain.agent_socket) if use_agent and domain.agent_socket else None

    def set_target(self, target: int) -> None:
        lb.set_target(self.virsh, self.name, target)

    def actual(self) -> int:
        """The balloon's size at the latest statistics read (KiB → bytes)."""
        return (self.stats or lb.memstat(self.virsh, self.name))["actual"] * 1024

    def records(self) -> list[AgentRecord]:
        """A new record when the guest sent fresh balloon statistics (and, with vmio's agent, once the agent
        has sent one); polled at most every ``min_poll`` seconds."""
        if self.stream is not None:
            got = self.stream.drain()
            if got:
                self._agent = got[-1]
        now = time.monotonic()
        if now - self._polled < self.min_poll:
            return []
        self._polled = now
        stats = lb.memstat(self.virsh, self.name)
        update = stats.get("last_update", 0)
        if update <= self._last_update or (self.stream is not None and self._agent is None):
            return []
        self._last_update = update
        self.stats = stats
        return [record_from(stats, self._agent if self.stream is not None else None)]

    def close(self) -> None:
        if self.stream is not None:
            self.stream.close()


def read_domains(settings: LiveSettings, virsh: Virsh | None = None) -> tuple[Virsh, list[lb.BalloonDomain]]:
    """The domains of ``settings``, read and checked: running, with a virtio balloon, and, for a policy that
    needs vmio's agent, with that agent; else one sentence naming the domain and the policies that can run."""
    virsh = virsh or Virsh(settings.uri or DEFAULT_URI)
    if len(set(settings.domains)) != len(settings.domains):
        raise InputError(f"--domains {','.join(settings.domains)!r} names a domain twice")
    domains = [lb.read_domain(virsh, name) for name in settings.domains]
    if settings.policy in AGENT_POLICIES:
        for d in domains:
            if not d.agent_port or not is_local(virsh.uri):
                why = "has no vmio.agent port" if d.agent_port is False else "is not on this host"
                raise InputError(
                    f"--policy {settings.policy!r} needs {_WHAT[settings.policy]}, which only vmio's agent "
                    f"reports, and domain {d.name!r} on {virsh.uri} {why}; policies that run on its balloon "
                    f"statistics alone: {', '.join(STATS_ONLY)}"
                )
    for d in domains:
        d.check()
    return virsh, domains


def with_domains(settings: LiveSettings, domains: Sequence[lb.BalloonDomain]) -> LiveSettings:
    """``settings`` with each domain's maximum memory as its balloon's ceiling."""
    ceilings = tuple(d.memory for d in domains)
    return replace(settings, vms=len(domains), ceilings=ceilings, memory=max(ceilings))


def run_domains(
    settings: LiveSettings,
    store: Store,
    virsh: Virsh,
    domains: Sequence[lb.BalloonDomain],
    *,
    on_step: Callable[[Step], None] | None = None,
) -> LiveOutcome:
    """Control the domains' balloons for ``settings.duration``; the run and its decisions are in ``store``;
    balloons and statistics periods are put back as they were."""
    rules = settings.rules()
    use_agent = settings.policy in AGENT_POLICIES
    before = {d.name: lb.memstat(virsh, d.name)["actual"] << 10 for d in domains}
    periods = [d for d in domains if d.stats_period <= 0]
    guests: list[LibvirtGuest] = []
    try:
        for d in periods:
            lb.set_period(virsh, d.name, 1)
        guests = [LibvirtGuest(virsh, d, use_agent=use_agent) for d in domains]
        run_id = start_run(
            store,
            settings.policy,
            settings.to_json(),
            accel=None,
            qemu_version=virsh.hypervisor_version(),
        )
        control = LiveController(
            guests,
            rules,
            settings.policy,
            settings.params,
            psi_threshold=settings.psi_threshold,
            store=store,
            run_id=run_id,
        )
        try:
            control.start()
            control.run(settings.duration, settings.interval, on_step)
        except BaseException as exc:
            finish_run(store, run_id, "failed", control.summary(), error=f"{type(exc).__name__}: {exc}")
            raise
        summary = control.summary()
        finish_run(store, run_id, "done", summary)
        return LiveOutcome(
            run_id, "libvirt", summary, control.steps, [g.name for g in guests], control.hit_ratio()
        )
    finally:
        for g in guests:
            g.close()
        for name, size in before.items():
            with contextlib.suppress(ToolError):
                lb.set_target(virsh, name, size)
        for d in periods:
            with contextlib.suppress(ToolError):
                lb.set_period(virsh, d.name, 0)

"""A dstore profile is a campaign: each configuration it profiles (the pool as configured, a baseline, the
view from a guest, a compared variant) is a target, the profile's mix its one workload, and
``campaign.runner`` runs its points, so they are stored, resumed after a crash, reported, exported and
compared like any campaign's (``vmio dstore profile --name NAME`` keeps them; without a name they go to a
store that lasts as long as the command).

Around each point whose I/O reaches the cluster its OSD map is watched (:mod:`vmio.dstore.watch`), and the
point is stored with what it ran on as the host fact ``dstore``: the Ceph version of the cluster and of this
host's client, pool, image, replicas, OSDs, the mix, queue depth, durations, the configuration's label, the
criteria and the point's verdicts. The profile a command prints is read back from the stored points
(:func:`read_profiles`), so a profile stored before this module ran them (by ``dstore profile`` of an older
vmio, which stored the same points) reads the same way.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from vmio.dstore.cluster import ClusterRef, ceph
from vmio.dstore.figures import figures, of_results, of_stored
from vmio.dstore.profile import Criteria, Point, Profile, make_point
from vmio.dstore.watch import Seen, watch_point
from vmio.errors import InputError, ToolError
from vmio.spec.model import Campaign, HostTarget, RbdTarget, Target, Workload
from vmio.spec.model import Point as SpecPoint
from vmio.store import RunRecord, Store
from vmio.store.summaries import RunRow
from vmio.system.process import Runner

SPEC_PATH = "<vmio dstore profile>"  # the spec path of a stored profile (it has no spec file)
WORKLOAD = "randrw"  # the workload's name; its mix and depth are in its definition and every point's facts
HOST_LIBRBD = "host librbd (fio rbd engine)"  # where a point ran unless its configuration says otherwise
# what each point ran on (None: not of this configuration)
SETUP_KEYS = (
    "pool",
    "image",
    "replicas",
    "osds",
    "path",
    "disk",
    "accel",
    "accel_reason",
    "qemu_version",
    "rwmixread",
    "iodepth",
    "runtime_s",
    "ramp_s",
    "network",
)
# the setup every profile prints, in its order, and what a guest's adds
PRINTED = ("pool", "image", "replicas", "osds", "iodepth", "rwmixread", "runtime_s", "ramp_s", "config")
GUEST_KEYS = ("where", "disk", "accel", "accel_reason", "qemu_version")


@dataclass(frozen=True)
class Config:
    """One configuration of a profile: its campaign target, its label, its role in the profile (``base``,
    ``baseline``, ``guest``, ``compare``), what it runs on, and the cluster whose OSD map is watched around
    its points (None: its I/O stays on this host)."""

    target: Target
    label: str
    role: str
    setup: Mapping[str, object]
    watch: ClusterRef | None


def rbd_target(name: str, ref: ClusterRef) -> RbdTarget:
    """The campaign target of a profile on ``ref``'s image through fio's rbd engine."""
    keyring = str(ref.client.keyring) if ref.client.keyring else None
    return RbdTarget(name, ref.pool, ref.image, str(ref.conf), ref.client.name or "admin", keyring=keyring)


def file_target(name: str, path: Path) -> HostTarget:
    """The campaign target of a baseline on a local file (or device) through libaio."""
    return HostTarget(name, str(path))


def setup(ref: ClusterRef, load: Workload, label: str, **more: object) -> dict[str, object]:
    """What a configuration on ``ref`` runs, as the profile prints it."""
    return {
        "pool": ref.pool,
        "image": ref.image,
        "replicas": ref.replicas,
        "osds": ref.osds,
        "iodepth": load.iodepth,
        "rwmixread": load.rwmixread,
        "runtime_s": load.runtime,
        "ramp_s": load.ramp,
        "config": label,
        "network": ref.network_json(),  # the links its replicas crossed
        **more,
    }


def workload(
    bs_list: Sequence[int], rwmixread: int, iodepth: int, runtime_s: float, ramp_s: float
) -> Workload:
    """The profile's mix as a campaign workload: random, ``rwmixread`` % reads, direct, one job, through
    libaio (a file's or a guest's disk); an RBD target's placement gives its points fio's rbd engine."""
    return Workload(
        name=WORKLOAD,
        rw="randrw",
        bs=tuple(bs_list),
        rwmixread=rwmixread,
        iodepth=iodepth,
        runtime=runtime_s,
        ramp=ramp_s,
    )


def campaign_of(name: str, configs: Sequence[Config], load: Workload) -> Campaign:
    """The campaign a profile runs: one target per configuration, the mix as its one workload."""
    return Campaign(name, 1, tuple(c.target for c in configs), (load,), SPEC_PATH)


def check_name(store: Store, name: str) -> None:
    """Refuse (exit 2) a ``--name`` a campaign other than a dstore profile holds, before anything runs (a
    stored profile of that name is resumed when it is the same profile, refused by :func:`check_same`
    otherwise)."""
    row = store.campaign(name)
    if row is not None and row["spec_path"] != SPEC_PATH:
        raise InputError(
            f"--name {name!r}: a campaign of that name is already stored in {store.path} (from "
            f"{row['spec_path']}); give the profile a new name (vmio ls lists the stored ones, vmio rm removes one)"
        )


def check_same(store: Store, campaign: Campaign) -> None:
    """Refuse (exit 2), before any pool or image is made, a profile whose name a different stored profile
    holds; the same profile is resumed (its done points kept)."""
    row = store.campaign(campaign.name)
    if row is None or row["canonical"] == campaign.canonical() or not store.done_keys(campaign.name):
        return
    raise InputError(
        f"--name {campaign.name!r}: a different profile of that name is already stored in {store.path} (other "
        "configurations, block sizes, mix or durations); give this one a new name, or run the stored one's "
        "options again to finish it"
    )


@dataclass(frozen=True)
class CephVersions:
    """The Ceph versions a profile ran with; None where unknown."""

    cluster: str | list[str] | None = None  # the daemons' version, or each of theirs when they differ
    client: str | None = None  # this host's ``ceph --version`` (the librbd fio and QEMU load)


def ceph_versions(runner: Runner, ref: ClusterRef) -> CephVersions:
    """The Ceph versions a profile ran with: the cluster's daemons (``ceph versions``) and this host's
    client (``ceph --version``, the librbd fio and QEMU load); None where the cluster would not say."""
    cluster: str | list[str] | None = None
    try:
        overall = json.loads(ceph(runner, ref.conf, "versions", "--format", "json", auth=ref.auth()))[
            "overall"
        ]
        cluster = sorted(overall)[0] if len(overall) == 1 else sorted(overall)
    except (ToolError, ValueError, KeyError, TypeError):
        pass  # a client without the mon's read capability: the version stays unknown, never guessed
    client = None
    with contextlib.suppress(ToolError):
        client = runner.run(["ceph", "--version"], timeout=30).stdout.strip() or None
    return CephVersions(cluster, client)


@dataclass
class Labeller:
    """The runner's watch around each point (``Options.around_point``): the OSD map while its I/O reaches
    the cluster, and the ``dstore`` host fact stored with it."""

    configs: Mapping[str, Config]
    criteria: Criteria
    versions: CephVersions
    runner: Runner

    @contextlib.contextmanager
    def around(self, point: SpecPoint) -> Iterator[Callable[[RunRecord], None]]:
        config = self.configs[point.target]
        if config.watch is None:
            yield lambda rec: self.label(rec, config, None)
            return
        with watch_point(self.runner, config.watch.conf, config.watch.auth()) as seen:
            yield lambda rec: self.label(rec, config, seen)

    def facts(self, config: Config, ran: Mapping[str, object] | None = None) -> dict[str, object]:
        """What every point of ``config`` ran on (``ran``: its setup as the run found it)."""
        ran = config.setup if ran is None else ran
        return {
            "config": config.label,
            "where": ran.get("where", HOST_LIBRBD),
            "ceph_version": self.versions.cluster,
            "ceph_client_version": self.versions.client,
            **{k: ran.get(k) for k in SETUP_KEYS},  # the same keys on every point (None: not of this one)
            "rw": "randrw",
            "criteria": asdict(self.criteria),
        }

    def label(self, rec: RunRecord, config: Config, seen: Seen | None) -> None:
        ran = dict(config.setup)
        if config.role == "guest":  # the VM's facts, as the run found them
            ran |= {
                "accel": rec.accel,
                "accel_reason": rec.host.get("accel_reason"),
                "qemu_version": rec.qemu_version,
            }
        judged: dict[str, object] = dict.fromkeys(
            ("verdict", "spikes", "meets_host_iops", "meets_cluster_iops")
        )
        if rec.status == "done":
            p = make_point(rec.bs, figures(of_results(rec.results), rec.point_key), self.criteria)
            judged = {k: getattr(p, k) for k in judged}
        rec.host["dstore"] = {
            **self.facts(config, ran),
            **judged,
            "osds_down": sorted(seen.down) if seen else None,
            "osdmap_epochs": (seen.epochs or None) if seen else None,
            "health_after": seen.health if seen else None,
            "watch_note": seen.note if seen else None,
        }


def stored_point(store: Store, run: RunRow, criteria: Criteria) -> Point:
    """A done stored point of a profile, judged against ``criteria`` from its stored figures."""
    facts = _facts(run)
    point = make_point(run["bs"], figures(of_stored(store, run["id"]), run["point_key"]), criteria)
    if facts.get("osdmap_epochs") is None and facts.get("osds_down") is None:
        return point
    return replace(
        point,
        osds_down=facts.get("osds_down"),
        osdmap_epochs=facts.get("osdmap_epochs"),
        health_after=facts.get("health_after"),
        watch_note=facts.get("watch_note"),
    )


def _facts(run: RunRow) -> dict[str, Any]:
    host = json.loads(run["host_json"] or "{}")
    dstore = host.get("dstore") if isinstance(host, dict) else None
    return dict(dstore) if isinstance(dstore, dict) else {}


@dataclass(frozen=True)
class StoredConfig:
    """One configuration of a stored profile: its target, role and label, and its profile."""

    target: str
    role: str
    label: str
    profile: Profile


def read_profiles(store: Store, name: str, criteria: Criteria | None = None) -> list[StoredConfig]:
    """Every configuration of stored profile ``name`` in its campaign's order, each a profile of its done
    points in block-size order, judged against ``criteria`` (None: the criteria stored with the points)."""
    spec = store.spec(name)
    runs = [r for r in store.runs(name) if r["status"] == "done"]
    out = []
    for target in spec.targets:
        mine = sorted((r for r in runs if r["target"] == target.name), key=lambda r: r["bs"])
        if not mine:
            continue
        facts = _facts(mine[0])
        judge = criteria or Criteria(**{k: float(v) for k, v in (facts.get("criteria") or {}).items()})
        points = [stored_point(store, r, judge) for r in mine]
        label = str(facts.get("config"))
        out.append(
            StoredConfig(
                target.name, role_of(target.name, facts), label, Profile(points, judge, _setup(facts))
            )
        )
    if not out:
        raise InputError(f"campaign {name!r} holds no done point of a dstore profile")
    return out


def role_of(target: str, facts: Mapping[str, Any]) -> str:
    """A stored configuration's role, from its target's name and its points' facts (as every vmio that
    stored a profile wrote them)."""
    where, label = facts.get("where"), str(facts.get("config"))
    if target == "guest-rbd" or where == "guest":
        return "guest"
    if target == "host-librbd":
        return "base"
    if target == "host-file" or where == "local file, libaio" or label.startswith("replicas="):
        return "baseline"
    return "compare"


def _setup(facts: Mapping[str, Any]) -> dict[str, object]:
    """A configuration's setup as the profile printed it, from a point's stored facts."""
    out: dict[str, object] = {k: facts.get(k) for k in PRINTED}
    if "network" in facts:  # stored since profiles name the network their replicas crossed
        out["network"] = facts["network"]
    where = facts.get("where")
    if where == "guest":
        out |= {k: facts.get(k) for k in GUEST_KEYS}
    elif where not in (None, HOST_LIBRBD):
        out |= {"where": where, "path": facts.get("path")}
    return out

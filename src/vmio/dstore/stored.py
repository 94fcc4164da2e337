"""A dstore profile stored as a campaign (``vmio dstore profile --name NAME``), so ``show``, ``export``,
``report``, ``compare`` and ``dstore model --calibrate NAME`` read it as they read any campaign.

Each configuration the command profiled (the pool as configured, a baseline, the view from a guest, a
compared variant) is a target of the campaign, and the profile's mix its one workload: a campaign model
like any other, so its canonical text defines the points and its spec text (``spec.dump``) reads back as
the campaign. Each block size is one point with fio's own
per-job figures and latency histograms (fio's json+ output, kept by :class:`FioTap` as each run ends).
Every point's host facts name what it ran on under ``dstore``: the Ceph version of the cluster and of this
host's client, pool, image, replicas, OSDs, the mix, queue depth, durations, the configuration's label,
the criteria and the point's verdicts. The name is unique like any campaign's: a stored one is refused.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from vmio.campaign import facts as host_facts
from vmio.dstore.cluster import ClusterRef, ceph
from vmio.dstore.profile import Point, Profile
from vmio.errors import FioError, InputError, ToolError
from vmio.fio import output
from vmio.fio import run as fiorun
from vmio.spec.dump import dumps
from vmio.spec.model import Campaign, HostTarget, RbdTarget, Target, Workload
from vmio.spec.model import Point as SpecPoint
from vmio.store import RunRecord, Store
from vmio.system.process import Completed, Runner

SPEC_PATH = "<vmio dstore profile>"  # the spec path of a stored profile (it has no spec file)
WORKLOAD = "randrw"  # the workload's name; its mix and depth are in its definition and every point's facts
# what each point ran on, from its profile's setup (run_profile's, the baseline's file, the guest's VM)
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
)
FIO_ARG = fiorun.OUTPUT_FORMAT  # how vmio's fio runs ask for the histograms stored with each point


@dataclass(frozen=True)
class Tapped:
    """One fio run as it ended: its json+ output, its job files' text, and when it ran."""

    text: str
    job_file: str
    started: float
    ended: float


class FioTap(Runner):
    """A ``Runner`` that keeps what each fio run it starts printed (the json+ output every dstore run asks
    for), so a profile's points can be stored with fio's per-job figures and histograms."""

    def __init__(self) -> None:
        self.tapped: list[Tapped] = []

    def run(self, argv: Sequence[str], *, timeout: float, **options: Any) -> Completed:
        """``Runner.run`` (the same options), keeping what a fio json+ run printed."""
        started = time.time()
        done = super().run(argv, timeout=timeout, **options)
        args = [str(a) for a in argv]
        if args and Path(args[0]).name == "fio" and FIO_ARG in args and done.returncode == 0:
            self.tapped.append(
                Tapped(done.stdout, _job_files(args, options.get("cwd")), started, time.time())
            )
        return done


def _job_files(args: list[str], cwd: str | None) -> str:
    texts = []
    for arg in args[1:]:
        path = Path(cwd or ".") / arg if not arg.startswith("-") else None
        if path is not None and path.suffix == ".fio" and path.is_file():
            texts.append(path.read_text(errors="replace"))
    return "\n".join(texts)


@dataclass
class Configured:
    """One configuration a profile ran: its target as a campaign names it, the profile, the fio runs of its
    points (in block-size order) and what it ran on (the guest's accelerator and QEMU, a file's path)."""

    target: Target
    profile: Profile
    runs: list[Tapped] = field(default_factory=list)


def rbd_target(name: str, ref: ClusterRef) -> RbdTarget:
    """The campaign target of a profile on ``ref``'s image through fio's rbd engine."""
    keyring = str(ref.client.keyring) if ref.client.keyring else None
    return RbdTarget(name, ref.pool, ref.image, str(ref.conf), ref.client.name or "admin", keyring=keyring)


def file_target(name: str, path: Path) -> HostTarget:
    """The campaign target of a baseline on a local file (or device) through libaio."""
    return HostTarget(name, str(path))


def check_name(store: Store, name: str) -> None:
    """Refuse (exit 2) a ``--name`` a campaign of ``store`` already holds, before anything runs."""
    if store.campaign(name) is not None:
        raise InputError(
            f"--name {name!r}: a campaign of that name is already stored in {store.path}; give the profile "
            "a new name (vmio ls lists the stored ones, vmio rm removes one)"
        )


def workload(profile: Profile, bs_list: Sequence[int]) -> Workload:
    """The profile's mix as a campaign workload: random, ``rwmixread`` % reads, direct, one job, through
    libaio (a file's or a guest's disk); an RBD target's placement gives its points fio's rbd engine."""
    s = profile.setup
    return Workload(
        name=WORKLOAD,
        rw="randrw",
        bs=tuple(bs_list),
        rwmixread=int(s["rwmixread"]),
        iodepth=int(s["iodepth"]),
        runtime=float(s["runtime_s"]),
        ramp=float(s["ramp_s"]),
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


def store_profile(
    store: Store, name: str, configs: Sequence[Configured], versions: CephVersions
) -> list[str]:
    """Store ``configs`` as campaign ``name`` (refused if stored meanwhile): one point per configuration
    and block size, each in one transaction; the point keys in order. A failure removes what was stored."""
    check_name(store, name)
    bs_list = [p.bs for p in configs[0].profile.points]
    load = workload(configs[0].profile, bs_list)
    campaign = Campaign(name, 1, tuple(c.target for c in configs), (load,), SPEC_PATH)
    text = dumps(
        campaign, comment=f"stored by vmio dstore profile --name {name} (bitisle-dstore-2014's profile)"
    )
    store.ensure_campaign(name, SPEC_PATH, text, campaign.canonical())
    facts = host_facts.collect()
    keys = []
    try:
        for config in configs:
            if len(config.runs) != len(config.profile.points):
                raise FioError(
                    f"profile {config.target.name!r}: {len(config.runs)} fio runs were seen for "
                    f"{len(config.profile.points)} points; nothing is stored"
                )
            for point, run in zip(config.profile.points, config.runs, strict=True):
                rec = _record(campaign, load, config, point, run, facts, versions)
                store.record(rec)
                keys.append(rec.point_key)
    except BaseException:
        store.remove_campaign(name)
        raise
    return keys


def _record(
    campaign: Campaign,
    load: Workload,
    config: Configured,
    point: Point,
    run: Tapped,
    facts: Mapping[str, object],
    versions: CephVersions,
) -> RunRecord:
    parsed = output.parse(run.text)
    setup = config.profile.setup
    key = SpecPoint(campaign.name, config.target.name, load.name, point.bs, None, 0, 1).key
    ran_on = {
        "config": setup.get("config"),
        "where": setup.get("where", "host librbd (fio rbd engine)"),
        "ceph_version": versions.cluster,
        "ceph_client_version": versions.client,
        **{k: setup.get(k) for k in SETUP_KEYS},  # the same keys on every point (None: not of this one)
        "rw": load.rw,
        "criteria": asdict(config.profile.criteria),
        "verdict": point.verdict,
        "spikes": point.spikes,
        "meets_host_iops": point.meets_host_iops,
        "meets_cluster_iops": point.meets_cluster_iops,
        "osds_down": point.osds_down,
        "osdmap_epochs": point.osdmap_epochs,
        "health_after": point.health_after,
        "watch_note": point.watch_note,
    }
    rec = RunRecord(
        campaign=campaign.name,
        point_key=key,
        target=config.target.name,
        target_kind=config.target.kind,
        workload=load.name,
        bs=point.bs,
        offered_iops=None,
        load_processes=0,
        repetition=1,
        status="done",
        started=run.started,
        ended=run.ended,
        host={**facts, "dstore": ran_on},
        accel=setup.get("accel"),
        fio_version=parsed.version or None,
        qemu_version=setup.get("qemu_version"),
        job_file=run.job_file,
        results=[r for r in parsed.results if r.role == "measure"],
        iodepth=load.iodepth,
        numjobs=load.numjobs,
    )
    return rec

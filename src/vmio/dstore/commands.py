"""What the ``vmio dstore`` sub-commands do, one function each, returning data (the CLI prints it).

``profile`` runs bitisle-dstore-2014's profile on the pool as configured and, as asked, beside it a
non-replicated baseline, the view from a guest and a second configuration, draws the figures and stores
the whole as a campaign; ``degraded`` runs the time series through one OSD's outage; ``model`` fits the
replicated-store model to a profile and asks it what-if questions.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from vmio.campaign.runner import Options
from vmio.campaign.runner import Progress as Progress_
from vmio.campaign.runner import run as run_campaign
from vmio.dstore import cluster
from vmio.dstore.baseline import parse_baseline, prepare_file_baseline
from vmio.dstore.calibrate import Fit, fit_profile, parse_network, what_if
from vmio.dstore.degraded import DegradedRun, Outage, OutageWatch, stored_run
from vmio.dstore.guestrun import guest_target
from vmio.dstore.model import Prediction, StoreParams, predict
from vmio.dstore.profile import DEFAULT_BS, Criteria, Point, Profile, degraded_warning, load_profile, ratios
from vmio.dstore.settings import ModelSettings, ProfileSettings, UpSettings
from vmio.dstore.stored import (
    Config,
    Labeller,
    StoredConfig,
    campaign_of,
    ceph_versions,
    check_name,
    check_same,
    file_target,
    rbd_target,
    read_profiles,
    setup,
    stored_point,
    workload,
)
from vmio.dstore.variants import (
    check_kind,
    make_sized_pool,
    make_variant,
    remove_variant,
    sized_ref,
    variant_ref,
)
from vmio.dstore.where import Where, target, writable_target
from vmio.errors import ClusterError, FioError, InputError
from vmio.spec.dump import dumps
from vmio.spec.model import HostTarget, Workload
from vmio.store import Store
from vmio.system import rbdimage
from vmio.system.output_paths import all_or_none
from vmio.system.process import Runner
from vmio.units import format_size, parse_duration, parse_size


def up(root: Path, settings: UpSettings) -> cluster.ClusterRef:
    """``vmio dstore up``: a new cluster in ``root``."""
    return cluster.up(root, osds=settings.osds, deadline_s=settings.deadline_s, shaping=settings.shaping())


def down(root: Path) -> list[str]:
    """``vmio dstore down``: stop every daemon of the cluster in ``root`` and remove it; the daemons stopped."""
    return cluster.down(root)


def status(where: Where) -> cluster.ClusterStatus:
    """``vmio dstore status``: the cluster's state (``healthy``: every PG active+clean, every OSD up)."""
    return cluster.status(Runner(), target(where))


@dataclass
class ProfileResult:
    """A profile and what ran beside it: the profiles to print beside the base (label, profile, ratio
    name), the baseline and the guest's, the compared configuration, figures and stored points; ``to_json``
    is the document the command writes."""

    base: Profile
    sides: list[tuple[str, Profile, str]] = field(default_factory=list)
    labels: tuple[str, str] | None = None
    other: Profile | None = None
    compare: str | None = None  # --compare's kind (replicas or stripe), with ``other``
    baseline: tuple[str, Profile] | None = None  # --baseline's label and profile
    guest: Profile | None = None  # --from-guest's profile
    plots: list[Path] = field(default_factory=list)
    stored: list[str] | None = None  # the point keys of the campaign it was stored as

    def to_json(self) -> dict[str, object]:
        base = self.base
        points = [asdict(p) for p in base.points]
        out = base.to_json()
        if self.baseline is not None:
            label, prof = self.baseline
            for point, ratio in zip(points, ratios(base.points, prof.points).values(), strict=True):
                point["vs_baseline"] = ratio
            out["baseline"] = {
                "label": label,
                "points": [asdict(p) for p in prof.points],
                "setup": prof.setup,
            }
        out["points"] = points
        if self.guest is not None:
            guest = self.guest
            vs_host = ratios(guest.points, base.points).values()
            out["guest"] = {
                "label": "from guest",
                "points": [{**asdict(p), "vs_host": r} for p, r in zip(guest.points, vs_host, strict=True)],
                "setup": guest.setup,
            }
        if self.labels and self.other is not None:
            out["compare"] = {
                "kind": self.compare,
                "labels": list(self.labels),
                "other": self.other.to_json(),
            }
        return out


Progress = Callable[[Point], None]
Warn = Callable[[str], None]
TEMP_NAME = "dstore-profile"  # the campaign of a profile not asked to be kept (--name), in a store of its own


def profile(
    where: Where,
    settings: ProfileSettings,
    *,
    store: Store | None = None,
    on_point: Progress | None = None,
    warn: Warn | None = None,
) -> ProfileResult:
    """``vmio dstore profile`` without ``--fail-osd``: every configuration asked, on the image of ``where``,
    run as a campaign (``settings.name`` keeps it in ``store``, its name checked before anything runs, and
    a stored profile of that name is resumed)."""
    if settings.fail_osd is not None:
        raise InputError("a run with --fail-osd is a time series: use degraded()")
    for flag, value in (("--at", settings.at_s), ("--back-at", settings.back_at_s)):
        if value is not None:
            raise InputError(f"{flag} '{value:g}s' needs --fail-osd N")
    if settings.name is not None:
        if store is None:
            raise InputError(f"--name {settings.name!r} needs a store to keep the profile in")
        check_name(store, settings.name)
    runner = Runner()
    with contextlib.ExitStack() as stack:
        if store is None or settings.name is None:
            folder = stack.enter_context(tempfile.TemporaryDirectory(prefix="vmio-dstore-"))
            store = stack.enter_context(Store(str(Path(folder) / "profile.db")))
        ref = stack.enter_context(writable_target(where, runner, settings.destroy_data))
        if settings.from_guest and ref.network is not None:
            raise InputError(
                f"--from-guest: the cluster in {str(ref.root)!r} lives in network namespaces "
                "(dstore up --network netns) that a VM on this host cannot reach; profile from a guest on "
                "a loopback cluster"
            )
        runner = cluster.client_runner(ref, runner)  # a shaped cluster: its clients in its namespace
        return _profile_on(ref, settings, runner, store, on_point, warn or (lambda _: None))


def plan(ref: cluster.ClusterRef, settings: ProfileSettings, load: Workload) -> list[Config]:
    """The configurations a profile runs, in order: the pool as configured, the baseline, the view from a
    guest, the compared variant (names and targets only: nothing is made yet)."""
    labels = check_kind(settings.compare) if settings.compare else None
    base_label = labels[1] if labels else "as configured"
    configs = [Config(rbd_target("host-librbd", ref), base_label, "base", setup(ref, load, base_label), ref)]
    if settings.baseline:
        base = parse_baseline(settings.baseline, ref)
        if base.path is not None:
            facts = setup(ref, load, base.label, where="local file, libaio", path=str(base.path))
            facts |= {"pool": None, "image": None, "network": None}
            configs.append(Config(file_target("host-file", base.path), base.label, "baseline", facts, None))
        else:
            assert base.replicas is not None
            on = sized_ref(ref, base.replicas)
            name = f"host-librbd-size{base.replicas}"
            configs.append(
                Config(rbd_target(name, on), base.label, "baseline", setup(on, load, base.label), on)
            )
    if settings.from_guest:
        facts = setup(ref, load, "from guest", where="guest", disk=f"QEMU rbd driver, {ref.pool}/{ref.image}")
        configs.append(Config(guest_target(ref), "from guest", "guest", facts, ref))
    if labels and settings.compare:
        on = variant_ref(ref, settings.compare)
        name = f"host-librbd-{'size2' if settings.compare == 'replicas' else 'striped'}"
        configs.append(Config(rbd_target(name, on), labels[0], "compare", setup(on, load, labels[0]), on))
    return configs


def _profile_on(
    ref: cluster.ClusterRef,
    settings: ProfileSettings,
    runner: Runner,
    store: Store,
    on_point: Progress | None,
    warn: Warn,
) -> ProfileResult:
    load = workload(
        settings.bs_list(), settings.rwmixread, settings.iodepth, settings.runtime(), settings.ramp_s
    )
    configs = plan(ref, settings, load)
    campaign = campaign_of(settings.name or TEMP_NAME, configs, load)
    check_same(store, campaign)
    comment = f"stored by vmio dstore profile --name {campaign.name} (bitisle-dstore-2014's profile)"
    text = dumps(campaign, comment=comment)
    labeller = Labeller(
        {c.target.name: c for c in configs}, settings.criteria, ceph_versions(runner, ref), runner
    )
    options = Options(
        destroy_data=settings.destroy_data,
        runner=runner,
        boot_timeout=settings.boot_timeout_s,
        around_point=labeller.around,
    )

    def progress(p: Progress_) -> None:
        if p.status == "done" and on_point is not None and not p.tick:
            (run,) = [r for r in store.runs(campaign.name) if r["point_key"] == p.point]
            on_point(stored_point(store, run, settings.criteria))

    with contextlib.ExitStack() as stack:
        _make(stack, runner, ref, configs, settings)
        outcome = run_campaign(campaign, text, store, options, progress)
    if outcome.failed:
        kept = f"; the done points are kept in campaign {campaign.name!r}: run the same command to measure the rest"
        raise FioError(
            f"{outcome.failed} of the profile's points failed ({outcome.failures[0]})"
            + (kept if settings.name else ""),
        )
    stored_configs = read_profiles(store, campaign.name, settings.criteria)
    result = _result(stored_configs, settings.compare)
    for config in stored_configs:
        warning = degraded_warning(config.profile, config.label)
        if warning:
            warn(warning)
    if settings.plot_dir is not None:
        result.plots = _plots(result, settings.plot_dir)
    if settings.name is not None:
        result.stored = [p.key for p in campaign.points()]
    return result


def _make(
    stack: contextlib.ExitStack,
    runner: Runner,
    ref: cluster.ClusterRef,
    configs: list[Config],
    settings: ProfileSettings,
) -> None:
    """Make what the configurations need beside the cluster's image (a baseline pool, a file, a variant),
    removed when ``stack`` closes."""
    for config in configs:
        # isinstance: a file baseline is a host target's own file, which dstore creates before the cluster runs
        if config.role == "baseline" and isinstance(config.target, HostTarget):
            prepare_file_baseline(Path(config.target.path), runner)
        elif config.role == "baseline" and config.watch is not None:
            made = make_sized_pool(runner, ref, config.watch.replicas)
            stack.callback(remove_variant, runner, ref, made)
        elif config.role == "compare" and settings.compare:
            made = make_variant(runner, ref, settings.compare)
            stack.callback(remove_variant, runner, ref, made)


def stored(store: Store, name: str, criteria: Criteria | None = None) -> ProfileResult:
    """``vmio dstore show NAME``: a stored profile as ``dstore profile`` printed it, from its stored points
    (judged against ``criteria``; None: the criteria it was run with)."""
    return _result(read_profiles(store, name, criteria), _compare_kind(store, name))


def _compare_kind(store: Store, name: str) -> str | None:
    for stored_target in store.spec(name).targets:
        if stored_target.name == "host-librbd-size2":
            return "replicas"
        if stored_target.name == "host-librbd-striped":
            return "striping"
    return None


def _result(configs: list[StoredConfig], compare: str | None) -> ProfileResult:
    """The printed profile of stored configurations (the pool as configured first)."""
    by_role = {c.role: c for c in configs}
    if "base" not in by_role:
        raise InputError(
            "the stored profile has no done point on its pool as configured (target host-librbd)"
        )
    base = by_role["base"]
    result = ProfileResult(base.profile)
    if "baseline" in by_role:
        b = by_role["baseline"]
        result.baseline = (b.label, b.profile)
        result.sides.append((b.label, b.profile, "vs base"))
    if "guest" in by_role:
        g = by_role["guest"]
        result.guest = g.profile
        result.sides.append((f"from guest ({g.profile.setup.get('accel')})", g.profile, "guest/host"))
    if "compare" in by_role:
        other = by_role["compare"]
        result.other, result.compare = other.profile, compare
        result.labels = (other.label, base.label)
    return result


def _plots(result: ProfileResult, plot_dir: Path) -> list[Path]:
    """profile.png, one figure per profile beside it (baseline.png, guest.png) and compare.png: every
    figure, or none of them."""
    from vmio.dstore.plots import plot_compare, plot_profile  # matplotlib: only when plotting

    base, labels = result.base, result.labels
    plotted: list[Path] = []
    with all_or_none(plotted):
        plotted.append(plot_profile(base, plot_dir / "profile.png"))
        for label, prof, _ in result.sides:
            name = "baseline.png" if prof.setup.get("config") != "from guest" else "guest.png"
            plotted.append(
                plot_compare(
                    prof, base, (label, "replicated"), plot_dir / name, title=f"{label} vs replicated"
                )
            )
        if labels and result.other is not None:
            plotted.append(
                plot_compare(
                    result.other, base, labels, plot_dir / "compare.png", title=f"{labels[0]} vs {labels[1]}"
                )
            )
    return plotted


def degraded(where: Where, settings: ProfileSettings, *, store: Store | None = None) -> DegradedRun:
    """``vmio dstore profile --fail-osd N``: one block size as a time series through the OSD's outage, a
    campaign of one point (``settings.name`` keeps it in ``store``: its series, samples and outage)."""
    if settings.fail_osd is None:
        raise InputError("degraded() needs --fail-osd N")
    for flag, value in (("--baseline", settings.baseline), ("--compare", settings.compare)):
        if value:
            raise InputError(f"{flag} {value!r} cannot be combined with --fail-osd; run them separately")
    if settings.from_guest:
        raise InputError("--from-guest cannot be combined with --fail-osd; run them separately")
    if settings.name is not None:
        if store is None:
            raise InputError(f"--name {settings.name!r} needs a store to keep the run in")
        check_name(store, settings.name)
        if store.campaign(settings.name) is not None:
            raise InputError(
                f"--name {settings.name!r}: a campaign of that name is already stored in {store.path}; an "
                "outage is not resumed (it would not be the same outage): give the run a new name"
            )
    bs_list = settings.bs_list()
    if len(bs_list) != 1:
        raise InputError(f"--bs {_bs_text(settings)!r}: a run with --fail-osd takes one block size")
    ref = target(where)
    runner = cluster.client_runner(ref)
    rbdimage.check_write(runner, ref.conf, ref.pool, ref.image, settings.destroy_data, ref.auth())
    at, back = settings.outage_times()
    runtime = settings.runtime()
    outage = Outage(settings.fail_osd, at, back)
    outage.check(ref, runtime)
    with contextlib.ExitStack() as stack:
        if store is None or settings.name is None:
            folder = stack.enter_context(tempfile.TemporaryDirectory(prefix="vmio-dstore-"))
            store = stack.enter_context(Store(str(Path(folder) / "degraded.db")))
        return _degraded_on(ref, outage, settings, runner, store)


def _degraded_on(
    ref: cluster.ClusterRef, outage: Outage, settings: ProfileSettings, runner: Runner, store: Store
) -> DegradedRun:
    bs, runtime = settings.bs_list()[0], settings.runtime()
    load = workload([bs], settings.rwmixread, settings.iodepth, runtime, 0.0)
    label = f"osd.{outage.osd} stopped at {outage.at_s:g} s, started at {outage.back_at_s:g} s"
    config = Config(rbd_target("host-librbd", ref), label, "degraded", setup(ref, load, label), ref)
    campaign = campaign_of(settings.name or "dstore-degraded", [config], load)
    labels = Labeller({}, settings.criteria, ceph_versions(runner, ref), runner).facts(config)
    watch = OutageWatch(
        ref,
        DegradedRun(outage, bs, runtime, settings.iodepth, settings.rwmixread, ref.replicas),
        runner,
        labels,
    )
    options = Options(destroy_data=settings.destroy_data, runner=runner, around_point=watch.around)
    run_campaign(
        campaign,
        dumps(campaign, comment=f"stored by vmio dstore profile --fail-osd {outage.osd}"),
        store,
        options,
    )
    (row,) = store.runs(campaign.name)
    if watch.unclean is not None:
        raise ClusterError(watch.unclean)
    return stored_run(store, row, outage, ref.replicas)


def _bs_text(settings: ProfileSettings) -> str:
    return ",".join(format_size(b) for b in settings.bs_list())


@dataclass(frozen=True)
class ModelResult:
    """``vmio dstore model``: the fitted (or given) model, its predictions per block size, the same with
    the changes asked, and the criteria the verdicts use."""

    fit: Fit
    baseline: list[Prediction]
    changed: list[Prediction]
    changes: dict[str, object]
    criteria: Criteria


def model(settings: ModelSettings) -> ModelResult:
    """Fit the replicated-store model to a profile (or take the parameters as given) and predict each block
    size as it is and with the changes asked."""
    prof = _calibration(settings) if settings.calibrate else None
    fit = _fit(settings, prof)
    if settings.bs is not None:
        bs_list = list(settings.bs)
    else:
        bs_list = sorted({p.bs for p in prof.points} | set(DEFAULT_BS)) if prof else list(DEFAULT_BS)
    baseline = predict(fit.params, bs_list, settings.iodepth or fit.outstanding, fit.read_frac)
    net = parse_network(settings.network) if settings.network else None
    changed = what_if(
        fit,
        bs_list,
        replicas=settings.replicas,
        stripe=settings.stripe,
        net_bw=net,
        write_path=settings.write_path,
        cache_share=settings.cache_share,
        outstanding=settings.iodepth,
    )
    return ModelResult(fit, baseline, changed, settings.changes(), Criteria())


def _calibration(settings: ModelSettings) -> Profile:
    """The profile to fit: a JSON file when one exists at that path, else a stored campaign."""
    assert settings.calibrate is not None
    path = Path(settings.calibrate)
    if path.suffix == ".json" or path.is_file():
        return load_profile(path)
    from vmio.dstore.from_campaign import profile_from_campaign

    if settings.db is None:
        raise InputError(f"--calibrate {settings.calibrate!r} is not a file: name the store of that campaign")
    with Store(settings.db, readonly=True) as store:
        return profile_from_campaign(store, settings.calibrate, settings.target)


def _fit(settings: ModelSettings, prof: Profile | None) -> Fit:
    setup = prof.setup if prof else {}
    devices = settings.devices or int(setup.get("osds", ModelSettings.DEVICES))
    try:
        base = StoreParams(
            replicas=settings.base_replicas or int(setup.get("replicas", ModelSettings.REPLICAS)),
            devices=devices,
            hosts=settings.hosts or devices,
            write_path=settings.base_write_path,
            dev_op_s=parse_duration(settings.dev_op),
            dev_bw=float(parse_size(settings.dev_bw)),
            net_bw=parse_network(settings.base_network),
            rtt_s=parse_duration(settings.rtt),
        )
    except ValueError as exc:
        raise InputError(f"model parameters: {exc}") from exc
    if prof is None:
        defaults = ProfileSettings()
        return Fit(base, settings.iodepth or defaults.iodepth, defaults.rwmixread / 100, [], 0.0)
    return fit_profile(prof, base, list(settings.fit_bs) if settings.fit_bs else None)

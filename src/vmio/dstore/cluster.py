"""A throwaway Ceph cluster on 127.0.0.1 (1 mon, 1 mgr, N bluestore-on-file OSDs), or an existing one.

``up`` builds it in a folder and waits for every PG to be active+clean; ``down`` stops each daemon by the
PID in its pid file (checking the PID still runs a daemon of this cluster) and removes the folder.

With a ``Shaping`` the monitor (and the mgr beside it), each OSD and the client live each in a network
namespace of their own, joined through a bridge by rate-shaped links (``vmio.system.netns``): every
mirrored write crosses the link from its primary OSD to each replica's. Every ``ceph``, ``rbd`` and ``fio``
of the cluster then runs in the client's namespace (``client_runner``). The namespaces go with the cluster
(``down``, a failed ``up``); those of a cluster whose owning vmio died (SIGKILL) are removed, with its
daemons and folder, by the next ``up`` (``sweep``).
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import time
import uuid
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from vmio.dstore import daemons
from vmio.dstore.cephconf import ClusterLayout, new_layout, render_conf
from vmio.errors import ClusterError, InputError, UnsafeTargetError
from vmio.system import netns, rbdimage
from vmio.system.cephclient import CephClient
from vmio.system.netns import Network
from vmio.system.process import Runner, alive

STATE_FILE = "vmio-dstore.json"
CMD_TIMEOUT = 60.0
DAEMON_TOOLS = ("ceph-mon", "ceph-mgr", "ceph-osd", "ceph", "monmaptool", "rbd")
CLIENT_TOOLS = ("ceph", "rbd", "rados", "fio")  # what runs in the client's namespace


@dataclass(frozen=True)
class Shaping:
    """``vmio dstore up --network netns``: each link's rate (bit/s) and the delay asked (ms, or none)."""

    rate: int = netns.DEFAULT_RATE
    delay_ms: float | None = None


@dataclass(frozen=True)
class ClusterRef:
    """How clients reach a cluster: its ``ceph.conf``, pool and RBD image; ``root`` when vmio owns it."""

    conf: Path
    pool: str
    image: str
    root: Path | None = None
    replicas: int = 3
    osds: int = 3
    client: CephClient = CephClient()  # the cephx client to connect as (default: the conf's, admin)
    network: Network | None = None  # the namespaces of a shaped cluster vmio started (None: loopback)

    def auth(self) -> tuple[str, ...]:
        """``--id NAME --keyring PATH`` for the ``ceph`` and ``rbd`` commands (empty: the conf's client)."""
        return self.client.args()

    def env(self) -> dict[str, str]:
        """Environment for clients that read only ``CEPH_CONF`` (fio's rbd engine)."""
        return {"CEPH_CONF": str(self.conf)}

    def network_json(self) -> dict[str, object]:
        """What a profile stores and prints about the network its replicas crossed."""
        if self.network is not None:
            return self.network.to_json()
        kind = "loopback" if self.root is not None else "existing"
        return {"kind": kind, "rate": None, "delay_ms": None}


def client_runner(ref: ClusterRef, runner: Runner | None = None) -> Runner:
    """A runner whose ``ceph``, ``rbd`` and ``fio`` reach the cluster: in the client's namespace when it has
    one (it is unreachable from anywhere else), as ``runner`` otherwise."""
    runner = runner or Runner()
    if ref.network is None or isinstance(runner, netns.InNamespace):
        return runner
    return netns.InNamespace(ref.network.ns("client"), CLIENT_TOOLS, runner)


def ceph(
    runner: Runner, conf: Path, *args: str, timeout: float = CMD_TIMEOUT, auth: Sequence[str] = ()
) -> str:
    """Run ``ceph -c conf [--id NAME --keyring PATH] ARGS`` and return its stdout."""
    argv = ["ceph", "-c", str(conf), "--connect-timeout", "20", *auth, *args]
    return runner.run(argv, timeout=timeout, error=ClusterError).stdout


def health(
    runner: Runner, conf: Path, timeout: float = CMD_TIMEOUT, auth: Sequence[str] = ()
) -> tuple[str, list[str]]:
    """``ceph health --format json``: the status (``HEALTH_OK``, ``HEALTH_WARN``, ``HEALTH_ERR``) and the
    codes of the checks it raises (``PG_DEGRADED``, ...), sorted."""
    raw = json.loads(ceph(runner, conf, "health", "--format", "json", timeout=timeout, auth=auth))
    return str(raw.get("status", "unknown")), sorted(raw.get("checks", {}))


def up(
    root: Path,
    *,
    osds: int = 3,
    runner: Runner | None = None,
    deadline_s: float = 180.0,
    shaping: Shaping | None = None,
    owned: bool = False,
) -> ClusterRef:
    """Start a new cluster in ``root`` (absent or empty); tear it down again if any step fails. ``shaping``:
    in namespaces over shaped links. ``owned``: the cluster lives only as long as this process (a sweep
    after its death removes it); otherwise it stays until ``down`` once it is up."""
    runner = runner or Runner()
    if not 1 <= osds <= 12:
        raise InputError(f"--osds {osds!r} is out of range; use 1 to 12 OSDs")
    missing = [tool for tool in DAEMON_TOOLS if shutil.which(tool) is None]
    if missing:
        raise ClusterError(
            f"{', '.join(missing)} not installed; install Debian's ceph-mon, ceph-osd, "
            "ceph-mgr and ceph-common (scripts/setup-system.sh full)"
        )
    root = root.absolute()
    if root.exists() and (not root.is_dir() or any(root.iterdir())):
        raise InputError(f"--dir {str(root)!r} exists and is not an empty folder; give a new folder")
    check_own_folder(root)
    if shaping is not None:
        sweep(runner)
    made = not root.exists()
    root.mkdir(mode=0o700, parents=True, exist_ok=True)
    root.chmod(0o700)  # the keyring, the conf and the daemons' sockets: vmio's user only
    network = None
    if shaping is not None:
        roles = ["mon", *(f"osd{i}" for i in range(osds)), "client"]
        try:
            network = netns.make(roles, rate=shaping.rate, delay_ms=shaping.delay_ms, runner=runner)
        except BaseException:
            if made:
                root.rmdir()
            raise
    layout = new_layout(root, osds, network)
    ref = ClusterRef(layout.conf, layout.pool, layout.image, root, layout.replicas, osds, network=network)
    try:
        for sub in ("run", "log", "crash", "mon", "mgr", "osd"):
            (root / sub).mkdir(parents=True, exist_ok=True)
        layout.conf.write_text(render_conf(layout))
        _write_state(root, ref, layout, owner=os.getpid())
    except BaseException:
        if network is not None:
            netns.remove(network.token, runner)
        raise
    try:
        _bootstrap(runner, layout, time.monotonic() + deadline_s)
        if not owned:
            _write_state(root, ref, layout, owner=None)  # up: it stays until `dstore down`
    except BaseException:
        down(root)
        raise
    return ref


def check_own_folder(root: Path, uid: int | None = None) -> None:
    """Refuse (exit 3) a cluster folder that another user owns or can write, or that lies below a folder
    another user can write (unless sticky): they could read the keys or swap ``ceph.conf``."""
    uid = os.geteuid() if uid is None else uid
    for folder in [root, *root.parents]:
        try:
            st = folder.lstat()
        except FileNotFoundError:
            continue
        owned = st.st_uid in (uid, 0) if folder != root else st.st_uid == uid
        others_write = bool(st.st_mode & 0o022) and not (folder != root and st.st_mode & 0o1000)
        if not owned or others_write:
            who = f"uid {st.st_uid}" if not owned else f"mode {stat.filemode(st.st_mode)}"
            raise UnsafeTargetError(
                f"refusing --dir {str(root)!r}: {str(folder)!r} ({who}) can be written by another user; "
                "give a folder only you can write"
            )


def _keyring(runner: Runner, layout: ClusterLayout) -> None:
    """cephx keys for the mon, the admin client and the mgr, in one keyring only its owner can read."""
    keyring = str(layout.keyring)
    entities = (
        ("mon.", ["--cap", "mon", "allow *"]),
        ("client.admin", ["--cap", "mon", "allow *", "--cap", "osd", "allow *", "--cap", "mgr", "allow *"]),
        ("mgr.x", ["--cap", "mon", "allow profile mgr", "--cap", "osd", "allow *"]),
    )
    layout.keyring.touch(mode=0o600, exist_ok=False)
    for name, caps in entities:
        runner.run(
            ["ceph-authtool", keyring, "--gen-key", "-n", name, *caps],
            timeout=CMD_TIMEOUT,
            error=ClusterError,
        )
    layout.keyring.chmod(0o600)


def _bootstrap(runner: Runner, layout: ClusterLayout, deadline: float) -> None:
    conf = str(layout.conf)
    monmap = str(layout.root / "monmap")
    _keyring(runner, layout)
    addr = f"[v2:{layout.mon_addr}:{layout.mon_port}]"
    runner.run(
        ["monmaptool", "--create", "--fsid", layout.fsid, "--addv", "a", addr, monmap],
        timeout=CMD_TIMEOUT,
        error=ClusterError,
    )
    runner.run(
        ["ceph-mon", "-c", conf, "--mkfs", "-i", "a", "--monmap", monmap, "--keyring", str(layout.keyring)],
        timeout=CMD_TIMEOUT,
        error=ClusterError,
    )
    daemons.start(runner, layout, "mon", "a")
    daemons.start(runner, layout, "mgr", "x")
    if layout.network is not None:  # the monitor is reachable only from the client's namespace
        runner = netns.InNamespace(layout.network.ns("client"), CLIENT_TOOLS, runner)
    _add_osds(runner, layout)
    ceph(runner, layout.conf, "osd", "crush", "rule", "create-replicated", "vmio-osd", "default", "osd")
    pg = str(layout.pg_num)
    # its size and min_size are the conf's pool defaults (``cephconf.render_conf``: the layout's replicas)
    ceph(runner, layout.conf, "osd", "pool", "create", layout.pool, pg, pg, "replicated", "vmio-osd")
    ceph(runner, layout.conf, "osd", "pool", "application", "enable", layout.pool, "rbd")
    wait_clean(runner, layout.conf, deadline, expected=layout.pg_num)
    runner.run(
        ["rbd", "-c", conf, "create", "--size", str(layout.image_size_mib), f"{layout.pool}/{layout.image}"],
        timeout=CMD_TIMEOUT,
        error=ClusterError,
    )
    rbdimage.mark(runner, conf, layout.pool, layout.image)  # vmio's own: profiles may write it


def _add_osds(runner: Runner, layout: ClusterLayout) -> None:
    """Every OSD: its id and key from the mon one after another, then each one's store made and its daemon
    started, the OSDs side by side (``ceph-osd --mkfs`` and a starting ``ceph-osd``, which returns once its
    store is mounted, take 2-3 s each on a loaded 2-core host: 15 s for three one after another)."""
    new = [_new_osd(runner, layout) for _ in range(layout.osds)]
    with ThreadPoolExecutor(max_workers=len(new)) as pool:
        for done in [pool.submit(_make_osd, runner, layout, osd_id, osd_uuid) for osd_id, osd_uuid in new]:
            done.result()  # the first failure raises (``up`` then takes down what started)


def _new_osd(runner: Runner, layout: ClusterLayout) -> tuple[int, str]:
    """A new OSD's id and uuid from the mon, its key in the cluster's keyring."""
    osd_uuid = str(uuid.uuid4())
    osd_id = int(ceph(runner, layout.conf, "osd", "new", osd_uuid).strip())
    key = ceph(runner, layout.conf, "auth", "get-or-create", f"osd.{osd_id}", "mon", "allow profile osd",
               "mgr", "allow profile osd", "osd", "allow *")  # fmt: skip
    with layout.keyring.open("a") as keyring:
        keyring.write(key if key.endswith("\n") else key + "\n")
    return osd_id, osd_uuid


def _make_osd(runner: Runner, layout: ClusterLayout, osd_id: int, osd_uuid: str) -> None:
    """OSD ``osd_id``'s store made and its daemon started."""
    layout.osd_dir(osd_id).mkdir(parents=True)
    mkfs = ["ceph-osd", "-c", str(layout.conf), "-i", str(osd_id), "--mkfs", "--osd-uuid", osd_uuid]
    if layout.network is not None:
        mkfs = ["ip", "netns", "exec", layout.network.ns(f"osd{osd_id}"), *mkfs]
    runner.run(mkfs, timeout=120.0, error=ClusterError)
    daemons.start(runner, layout, "osd", str(osd_id))


def pg_summary(runner: Runner, conf: Path, auth: Sequence[str] = ()) -> tuple[int, dict[str, int]]:
    """(number of PGs, count per state) from ``ceph pg stat``."""
    data = json.loads(ceph(runner, conf, "pg", "stat", "--format", "json", auth=auth))
    summary = data.get("pg_summary", data)
    states = {s["name"]: int(s["num"]) for s in summary.get("num_pg_by_state", [])}
    return int(summary.get("num_pgs", 0)), states


def wait_clean(runner: Runner, conf: Path, deadline: float, expected: int = 1) -> None:
    """Wait until ``ceph pg stat`` shows at least ``expected`` PGs, all active+clean, before ``deadline``."""
    seen: tuple[int, dict[str, int]] = (0, {})
    while time.monotonic() < deadline:
        seen = pg_summary(runner, conf)
        total, states = seen
        if total >= expected and states.get("active+clean", 0) == total:
            return
        time.sleep(1.0)
    raise ClusterError(f"PGs not all active+clean before the deadline; last seen {seen[0]} PGs: {seen[1]}")


def down(root: Path, *, term_wait_s: float = 20.0) -> list[str]:
    """Stop every daemon of the cluster in ``root`` by PID and remove the folder; return what was stopped."""
    root = root.absolute()
    if not root.is_dir():
        raise InputError(f"--dir {str(root)!r} does not exist; give the folder `vmio dstore up` made")
    if not (root / STATE_FILE).is_file():
        raise InputError(f"--dir {str(root)!r} has no {STATE_FILE}; it is not a cluster vmio started")
    network = _state_network(root)
    try:
        stopped = daemons.stop_all(root / "run", root / "ceph.conf", term_wait_s)
    finally:
        if network is not None:
            netns.remove(network.token)
    shutil.rmtree(root)
    return stopped


def _state_network(root: Path) -> Network | None:
    """The network a cluster's state file names (None: loopback, or no readable state)."""
    try:
        data = json.loads((root / STATE_FILE).read_text())
        raw = data.get("network")
        return None if raw is None else Network.from_json(raw)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def sweep(runner: Runner | None = None) -> list[str]:
    """Remove vmio's namespaces that no live cluster or live vmio owns: those whose maker died before any
    daemon ran in them, and every namespace, daemon and the folder of a cluster whose owning vmio died
    (SIGKILL during ``up``, or during a run that brings its own cluster up and down). A cluster that is up
    (``dstore up`` returned) is left alone. A cluster's folder is found through its running daemons' command
    lines: one killed before any daemon ran keeps its folder (files only; ``dstore down --dir`` removes it).
    The namespaces removed."""
    runner = runner or Runner()
    removed: list[str] = []
    for token, names in netns.listed(runner).items():
        maker = netns.maker(token)
        running = {pid for ns in names for pid in netns.pids(ns, runner) if alive(pid)}
        roots = {r for r in (_cluster_root(pid) for pid in running) if r is not None}
        owners: list[int | None] = []
        for root in roots:
            network = _state_network(root)
            if network is not None and network.token == token:
                owners.append(_state_owner(root))
        if any(owner is None or alive(owner) for owner in owners):
            continue  # a cluster that is up, or whose owner is alive
        if not owners and (maker is None or alive(maker)):
            continue  # its maker may still be building it
        for root in roots:
            if _state_network(root) is not None:
                daemons.stop_all(root / "run", root / "ceph.conf", 5.0)
                shutil.rmtree(root, ignore_errors=True)
        removed += netns.remove(token, runner, namespaces=names)
    return removed


def _cluster_root(pid: int) -> Path | None:
    """The folder of the cluster a Ceph daemon runs for (its ``-c ROOT/ceph.conf``), if it has a state."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return None
    for flag, value in zip(argv, argv[1:], strict=False):
        if flag == b"-c" and value.endswith(b"/ceph.conf"):
            root = Path(value.decode(errors="replace")).parent
            if (root / STATE_FILE).is_file():
                return root
    return None


def _state_owner(root: Path) -> int | None:
    try:
        owner = json.loads((root / STATE_FILE).read_text()).get("owner")
    except (OSError, ValueError, AttributeError):
        return None
    return None if owner is None else int(owner)


def load(root: Path) -> ClusterRef:
    """The cluster vmio started in ``root``."""
    path = root.absolute() / STATE_FILE
    try:
        data: dict[str, Any] = json.loads(path.read_text())
    except FileNotFoundError:
        raise InputError(
            f"--dir {str(root)!r} holds no cluster ({STATE_FILE} missing); "
            "start one with `vmio dstore up --dir DIR`"
        ) from None
    except (OSError, ValueError) as exc:
        raise InputError(f"{str(path)!r} cannot be read: {exc}") from exc
    try:
        ref = ClusterRef(
            Path(data["conf"]),
            data["pool"],
            data["image"],
            Path(data["root"]),
            int(data["replicas"]),
            int(data["osds"]),
            network=None if data.get("network") is None else Network.from_json(data["network"]),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError(f"{str(path)!r} lacks field {exc}; it was not written by `vmio dstore up`") from exc
    if not ref.conf.is_file():
        raise InputError(f"{str(ref.conf)!r} (named in {str(path)!r}) is missing; the cluster is gone")
    return ref


def layout_of(ref: ClusterRef) -> ClusterLayout:
    """The layout of a cluster vmio started (to stop and start its daemons); others have none."""
    if ref.root is None:
        raise InputError(
            f"the cluster of {str(ref.conf)!r} was not started by `vmio dstore up`; vmio starts and "
            "stops only its own daemons (give --dir)"
        )
    path = ref.root / STATE_FILE
    try:
        data = json.loads(path.read_text())
        return ClusterLayout(
            root=ref.root,
            fsid=str(data["fsid"]),
            mon_port=int(data["mon_port"]),
            osds=ref.osds,
            pool=ref.pool,
            image=ref.image,
            network=ref.network,
        )
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise InputError(f"{str(path)!r} lacks the cluster's fsid and mon port: {exc}") from exc


def existing(
    conf: Path, pool: str, image: str, replicas: int = 3, client: CephClient | None = None
) -> ClusterRef:
    """A reference to a cluster named by its ``ceph.conf``, after checking it exists; the ``ceph.conf`` of a
    shaped cluster of ``vmio dstore up`` brings its network (its clients must run in its namespace)."""
    if not conf.is_file():
        raise InputError(f"--conf {str(conf)!r} is not a file; give the cluster's ceph.conf")
    conf = conf.absolute()
    network = _state_network(conf.parent) if conf.name == "ceph.conf" else None
    if network is not None and not netns.listed().get(network.token):
        network = None  # its namespaces are gone: the state is stale
    return ClusterRef(conf, pool, image, None, replicas, replicas, client or CephClient(), network=network)


def _write_state(root: Path, ref: ClusterRef, layout: ClusterLayout, owner: int | None) -> None:
    """The cluster's state file; ``owner``: the vmio whose death ends the cluster (None: ``down`` does)."""
    data = {
        k: str(v) if isinstance(v, Path) else v
        for k, v in asdict(ref).items()
        if k not in ("client", "network")
    }
    data.update(fsid=layout.fsid, mon_port=layout.mon_port, pid=os.getpid(), owner=owner)
    data["network"] = None if ref.network is None else ref.network.state()
    (root / STATE_FILE).write_text(json.dumps(data, indent=2) + "\n")


@dataclass(frozen=True)
class ClusterStatus:
    """``vmio dstore status``: what ``ceph status``, ``pg stat`` and the pool say (None where they do not);
    ``dir`` and ``daemons`` only for a cluster vmio started."""

    conf: str
    pool: str
    image: str
    health: str
    health_checks: list[str]
    osds: int | None
    osds_up: int | None
    osds_in: int | None
    pgs: int
    pg_states: dict[str, int]
    pool_size: int | None
    dir: str | None = None
    daemons: dict[str, int] | None = None  # daemon name -> PID
    network: dict[str, object] | None = None  # kind, rate (bit/s), delay_ms of a cluster vmio started

    @property
    def healthy(self) -> bool:
        """Every PG active+clean and every OSD up."""
        clean = self.pgs > 0 and self.pg_states.get("active+clean", 0) == self.pgs
        return clean and self.osds_up == self.osds

    def to_json(self) -> dict[str, object]:
        out = asdict(self)
        if self.dir is None:
            del out["dir"], out["daemons"], out["network"]
        return out


def status(runner: Runner, ref: ClusterRef) -> ClusterStatus:
    """Health, OSDs up/in, PG states, pool size and the live daemons (for clusters vmio owns)."""
    runner = client_runner(ref, runner)
    auth = ref.auth()
    raw = json.loads(ceph(runner, ref.conf, "status", "--format", "json", auth=auth))
    osdmap = raw.get("osdmap", {})
    osdmap = osdmap.get("osdmap", osdmap)
    try:
        total, states = pg_summary(runner, ref.conf, auth=auth)
    except ClusterError as exc:
        if "EACCES" not in exc.output and "access denied" not in exc.output:
            raise
        raise InputError(
            f"client.{ref.client.id} may not read the PG states (ceph pg stat: access denied); give it mgr "
            "'allow r' or ask as a client that has it"
        ) from None
    size = json.loads(
        ceph(runner, ref.conf, "osd", "pool", "get", ref.pool, "size", "--format", "json", auth=auth)
    )
    return ClusterStatus(
        conf=str(ref.conf),
        pool=ref.pool,
        image=ref.image,
        health=raw.get("health", {}).get("status", "unknown"),
        health_checks=sorted(raw.get("health", {}).get("checks", {})),
        osds=osdmap.get("num_osds"),
        osds_up=osdmap.get("num_up_osds"),
        osds_in=osdmap.get("num_in_osds"),
        pgs=total,
        pg_states=states,
        pool_size=size.get("size"),
        dir=None if ref.root is None else str(ref.root),
        daemons=None if ref.root is None else daemons.running(ref.root / "run", ref.conf),
        network=None if ref.root is None else ref.network_json(),
    )

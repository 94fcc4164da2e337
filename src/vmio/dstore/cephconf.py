"""The ``ceph.conf`` of a throwaway loopback cluster: every path inside its folder, every port on 127.0.0.1.

Small-memory settings (``osd_memory_target``, bluestore cache, few op shards) keep three OSDs, a mon and a
mgr near 1.2 GiB, so the cluster can share a 2-core machine with other work.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from pathlib import Path

from vmio.system.netns import SUBNET, Network
from vmio.system.ports import free_port

LOOPBACK = "127.0.0.1"


@dataclass(frozen=True)
class ClusterLayout:
    """Where a throwaway cluster keeps its files, and how it is shaped."""

    root: Path
    fsid: str
    mon_port: int
    osds: int = 3
    pool: str = "vmio"
    image: str = "vmio-disk"
    image_size_mib: int = 1024
    pg_num: int = 32
    osd_block_mib: int = 4096
    network: Network | None = None  # the monitor, each OSD and the client in namespaces of their own

    @property
    def replicas(self) -> int:
        """The copies of the cluster's pool (and of any pool created on it with the defaults): 3, or one per
        OSD on fewer."""
        return min(3, self.osds)

    def role(self, name: str) -> str:
        """The network member a daemon (``mon.a``, ``mgr.x``, ``osd.2``) lives in: the mgr beside the mon."""
        kind, _, ident = name.partition(".")
        return "mon" if kind in ("mon", "mgr") else f"{kind}{ident}"

    @property
    def mon_addr(self) -> str:
        return LOOPBACK if self.network is None else self.network.addr("mon")

    @property
    def conf(self) -> Path:
        return self.root / "ceph.conf"

    @property
    def keyring(self) -> Path:
        return self.root / "keyring"

    @property
    def run_dir(self) -> Path:
        return self.root / "run"

    @property
    def log_dir(self) -> Path:
        return self.root / "log"

    def pid_file(self, name: str) -> Path:
        """The pid file of daemon ``name`` (``mon.a``, ``mgr.x``, ``osd.0``)."""
        return self.run_dir / f"{name}.pid"

    def osd_dir(self, osd_id: int) -> Path:
        return self.root / "osd" / f"ceph-{osd_id}"


def new_layout(root: Path, osds: int = 3, network: Network | None = None) -> ClusterLayout:
    """A layout for a new cluster in ``root`` with a fresh fsid and a free mon port on 127.0.0.1 (Ceph's
    own 3300 inside a network of namespaces, where nothing else listens)."""
    port = free_port() if network is None else 3300
    return ClusterLayout(root=root, fsid=str(uuid.uuid4()), mon_port=port, osds=osds, network=network)


def _addresses(layout: ClusterLayout) -> list[str]:
    """Where the daemons bind: 127.0.0.1, or each its own namespace's address (a section per daemon)."""
    net = layout.network
    if net is None:
        return [f"public addr = {LOOPBACK}", f"cluster addr = {LOOPBACK}", "public network = 127.0.0.0/8"]
    return [f"public network = {SUBNET}", f"cluster network = {SUBNET}"]


def _sections(layout: ClusterLayout) -> list[str]:
    net = layout.network
    if net is None:
        return []
    lines: list[str] = []
    names = ["mon.a", "mgr.x", *(f"osd.{i}" for i in range(layout.osds))]
    for name in names:
        addr = net.addr(layout.role(name))
        lines += [f"[{name}]", f"public addr = {addr}", f"cluster addr = {addr}", ""]
    return lines


def render_conf(layout: ClusterLayout) -> str:
    """The text of ``ceph.conf`` for ``layout``."""
    root = layout.root
    lines = [
        "[global]",
        f"fsid = {layout.fsid}",
        f"mon host = v2:{layout.mon_addr}:{layout.mon_port}",
        *_addresses(layout),
        "ms bind ipv6 = false",
        "ms bind msgr1 = false",
        # cephx: the mon and OSD ports stay open on 127.0.0.1; only holders of the keyring (0600, in the
        # cluster's 0700 folder) get in
        "auth cluster required = cephx",
        "auth service required = cephx",
        "auth client required = cephx",
        "auth allow insecure global id reclaim = false",
        f"run dir = {layout.run_dir}",
        f"pid file = {layout.run_dir}/$name.pid",
        f"admin socket = {layout.run_dir}/$name.asok",
        f"log file = {layout.log_dir}/$name.log",
        f"mon cluster log file = {layout.log_dir}/cluster.log",
        f"crash dir = {root}/crash",
        f"keyring = {layout.keyring}",
        f"mon data = {root}/mon/ceph-$id",
        f"mgr data = {root}/mgr/ceph-$id",
        f"osd data = {root}/osd/ceph-$id",
        "osd crush chooseleaf type = 0",
        # the pool's copies at its creation: no `osd pool set` after it (each a map change the mon commits
        # about a second later)
        f"osd pool default size = {layout.replicas}",
        f"osd pool default min size = {max(1, layout.replicas - 1)}",
        f"osd pool default pg num = {layout.pg_num}",
        f"osd pool default pgp num = {layout.pg_num}",
        "osd pool default pg autoscale mode = off",
        "mon allow pool delete = true",
        "mon allow pool size one = true",
        "mon warn on pool no redundancy = false",
        "mon osd down out interval = 0",
        "mon warn on osd down out interval zero = false",
        "mon data avail warn = 5",
        "osd memory target = 939524096",
        "osd memory cache min = 67108864",
        "bluestore cache autotune = false",
        "bluestore cache size = 67108864",
        "bluestore block create = true",
        f"bluestore block size = {layout.osd_block_mib << 20}",
        "bluestore fsck on mount = false",
        # RocksDB memtables (256 MiB x 4 by default) and the PG log dominate an idle OSD's memory.
        "bluestore rocksdb options = compression=kNoCompression,max_write_buffer_number=2,"
        "min_write_buffer_number_to_merge=1,recycle_log_file_num=2,write_buffer_size=16777216,"
        "writable_file_max_buffer_size=0,compaction_readahead_size=2097152,max_background_compactions=1,"
        "max_total_wal_size=67108864",
        "osd min pg log entries = 100",
        "osd max pg log entries = 500",
        "osd target pg log entries per osd = 10000",
        "osd map cache size = 20",
        "bluestore fsck on mkfs = false",
        "osd op num shards = 2",
        "osd op num threads per shard = 1",
        "osd objectstore = bluestore",
        "",
        "[client]",
        f"admin socket = {layout.run_dir}/$name.$pid.asok",
        f"log file = {layout.log_dir}/$name.$pid.log",
        "rbd cache = false",
        "",
        *_sections(layout),
    ]
    return "\n".join(lines)

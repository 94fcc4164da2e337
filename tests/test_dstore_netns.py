"""The shaped network of ``vmio dstore up --network netns``: a real transfer between two of vmio's namespaces
runs at the configured rate, the host's own interfaces, routes and qdiscs are untouched, a profile on the
shaped cluster stores its network and its replicas cross the links, and nothing of vmio's (namespace, veth,
bridge, qdisc, daemon) is left after ``dstore down`` or after a kill -9 of vmio."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from vmio.cli import main
from vmio.dstore import cluster, daemons
from vmio.errors import ToolError
from vmio.reproduce import dstore_paper
from vmio.reproduce.run import Request, reproduce
from vmio.system import netns
from vmio.system.process import Runner, Supervised

from conftest import CEPH_TOOLS, ceph_processes, needs_tools

RATE = 100_000_000  # 100 Mbit/s: a bounded transfer of 25 MB takes about 2 s
SENT = 25_000_000
PORT = 5201

RECEIVER = """
import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2]))); s.listen(1); s.settimeout(30)
c, _ = s.accept(); c.settimeout(30)
got, first = 0, None
while True:
    b = c.recv(1 << 16)
    if not b:
        break
    first = first or time.monotonic()
    got += len(b)
print(got, time.monotonic() - first, flush=True)
"""
SENDER = """
import socket, sys, time
for _ in range(100):
    try:
        c = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=5); break
    except OSError:
        time.sleep(0.1)
c.sendall(b"x" * int(sys.argv[3])); c.close()
"""

needs_root = pytest.mark.skipif(not netns.available(), reason="network namespaces need root, ip and tc")


def _host_view() -> tuple[str, str, str, str]:
    """What of vmio's kind the host's own namespace shows (``ip``, ``tc``): its veths, bridges, addresses
    and routes in 198.18.0.0/15, tbf qdiscs (other users' links elsewhere on the host may come and go)."""

    def out(*argv: str) -> str:
        return subprocess.run(argv, capture_output=True, text=True, timeout=20, check=True).stdout

    links = out("ip", "-o", "link", "show", "type", "veth") + out(
        "ip", "-o", "link", "show", "type", "bridge"
    )
    ours = [
        line
        for line in out("ip", "-4", "addr").splitlines() + out("ip", "route").splitlines()
        if "198.1" in line
    ]
    tbf = [line for line in out("tc", "qdisc", "show").splitlines() if " tbf " in line]
    return links, "\n".join(ours), "\n".join(tbf), ""


def _ours() -> list[str]:
    return [n for names in netns.listed().values() for n in names]


@needs_root
def test_a_transfer_between_two_namespaces_sees_the_configured_rate() -> None:
    before = _host_view()
    net = netns.make(["a", "b"], rate=RATE)
    try:
        assert _host_view() == before  # nothing made in the host's namespace
        assert before[1] == ""  # no address or route of the range on the host
        addr = net.addr("b")
        assert netns.in_range(addr)
        receiver = Supervised(
            ["ip", "netns", "exec", net.ns("b"), sys.executable, "-c", RECEIVER, addr, str(PORT)]
        )
        try:
            Runner().run(
                [
                    "ip",
                    "netns",
                    "exec",
                    net.ns("a"),
                    sys.executable,
                    "-c",
                    SENDER,
                    addr,
                    str(PORT),
                    str(SENT),
                ],
                timeout=60,
            )
            out, err = receiver.popen.communicate(timeout=60)
        finally:
            receiver.stop()
        got, seconds = out.split()
        assert int(got) == SENT, err
        goodput = SENT * 8 / float(seconds)  # TCP payload: the link also carries ~4 % of headers
        assert 0.8 * RATE <= goodput <= 1.2 * RATE, f"{goodput / 1e6:.1f} Mbit/s through a 100 Mbit/s link"
    finally:
        netns.remove(net.token)
    assert net.token not in netns.listed()
    assert _host_view() == before


@needs_root
@pytest.mark.ceph
@pytest.mark.fio
@pytest.mark.slow
@needs_tools(*CEPH_TOOLS)
def test_a_shaped_cluster_stores_its_network_and_leaves_nothing_after_down(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "c"
    before = _host_view()
    assert main(["dstore", "up", "--dir", str(root), "--network", "netns", "--rate", "2gbit"]) == 0
    try:
        ref = cluster.load(root)
        assert ref.network is not None
        names = ref.network.namespaces()
        assert sorted(names) == sorted(netns.listed()[ref.network.token])
        nobody = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
        entered = subprocess.run(
            [*nobody, "ip", "netns", "exec", ref.network.ns("client"), "true"],
            capture_output=True,
            timeout=20,
        )
        assert entered.returncode != 0 and b"not permitted" in entered.stderr  # only root enters them
        out = tmp_path / "p.json"
        argv = ["dstore", "profile", "--dir", str(root), "--bs", "64k", "--runtime", "2s", "--ramp", "0s"]
        assert main([*argv, "-o", str(out), "--name", "shaped", "--db", str(tmp_path / "v.db")]) == 0
        capsys.readouterr()
        assert json.loads(out.read_text())["setup"]["network"] == {
            "kind": "netns",
            "rate": 2 * 10**9,
            "delay_ms": None,
        }
        assert main(["dstore", "show", "shaped", "--db", str(tmp_path / "v.db")]) == 0
        assert "network: netns, 2 Gbit/s per link, no added delay" in capsys.readouterr().out
        # every mirrored write crossed a link: the OSDs sent (to their replicas) at least twice what the
        # client sent them, as the kernel's own qdisc counters say
        sent = {role: _sent(ref.network.ns(role)) for role in ref.network.roles}
        osds = sum(v for k, v in sent.items() if k.startswith("osd"))
        assert sent["client"] > 10 << 20
        assert osds >= 2 * 0.8 * sent["client"], sent
        # cephx stays on inside the namespaces: in the client's own namespace, a client without the key (or
        # asking for no authentication) is refused; the keyed one is answered
        assert cluster.ceph(cluster.client_runner(ref), ref.conf, "osd", "ls").split()
        mon_host = next(
            x.split("=", 1)[1].strip() for x in ref.conf.read_text().splitlines() if x.startswith("mon host")
        )
        for auth in ("cephx", "none"):
            conf = tmp_path / f"{auth}.conf"
            conf.write_text(
                f"[global]\nmon host = {mon_host}\nauth client required = {auth}\nkeyring = {tmp_path}/none\n"
            )
            keyless = [
                "ip",
                "netns",
                "exec",
                ref.network.ns("client"),
                "ceph",
                "-c",
                str(conf),
                "--connect-timeout",
                "5",
                "osd",
                "ls",
            ]
            refused = subprocess.run(keyless, capture_output=True, text=True, timeout=60)
            assert refused.returncode != 0 and not refused.stdout.split(), (auth, refused.stdout)
        # bitisle-dstore-2014's reproduction on that cluster (its conf brings the namespaces), at a tiny
        # scale: result.json carries the network, Fig. 2 is a curve of 5 sizes, the second run at 1 Gbit/s is
        # judged against the latency stated before it, no setup claim is counted as agreeing
        sizes = (4 << 10, 64 << 10, 256 << 10, 512 << 10, 1 << 20)
        tiny = dstore_paper.Scale(1.0, 0.0, 1, 64, bs=sizes, striped=False, slow_link_bs=(1 << 20,))
        monkeypatch.setitem(dstore_paper.SCALES, "quick", tiny)
        req = Request(
            "bitisle-dstore-2014", "quick", tmp_path / "out", db=str(tmp_path / "r.db"), disk_dir=tmp_path,
            conf=root / "ceph.conf",
        )  # fmt: skip
        rep = reproduce(req)
        assert rep.failures == []
        result = json.loads((tmp_path / "out" / "result.json").read_text())
        slow = result["network"].pop("at_1gbit")
        assert result["network"] == {"kind": "netns", "rate": 2 * 10**9, "delay_ms": None}
        figs = {f["id"]: f for f in result["figures"]}
        for fig in ("fig2-iops", "fig2-latency"):
            curves = {s["name"]: s["points"] for s in figs[fig]["series"]}
            assert [x for x, _ in curves["plain (3-way mirror)"]] == [2, 6, 8, 9, 10]  # log2 KiB, 4K..1M
            assert len(curves["plain, links at 1 Gbit/s"]) == 1
        claims = {c["id"]: c for c in result["claims"]}
        setup = [c for c in result["claims"] if c["kind"] == "setup"]
        assert setup and all(c["agrees"] is None for c in setup) and result["counts"]["setup"] == len(setup)
        assert result["counts"]["agree"] == sum(
            c["agrees"] is True and c["stable"] is not False
            for c in result["claims"]
            if c["kind"] == "result"
        )
        # the second run at 1 Gbit/s beside the latency stated before it: 50 outstanding x the busiest link's
        # bytes per I/O (the client's writes, 70 % of 1 MiB) at 125 MB/s
        (row,) = slow
        stated = row["link-bound mean ms at 1 Gbit/s (stated before)"]
        assert stated == pytest.approx(50 * 0.7 * (1 << 20) / 125e3, abs=0.1)
        assert row["measured mean ms at 1 Gbit/s"] > 0 and row["measured mean ms at the cluster's rate"] > 0
        link = claims["fig2-mirror-link-1gbit-1m"]
        assert link["measured"] == pytest.approx(row["measured mean ms at 1 Gbit/s"], abs=0.05)
        assert "stated before the run: 293.6 ms" in link["why"] and "the busiest link (" in link["why"]
        shown = ["tc", "-n", ref.network.ns("osd0"), "qdisc", "show", "dev", "eth0"]
        assert (
            "rate 2Gbit" in subprocess.run(shown, capture_output=True, text=True, timeout=20).stdout
        )  # put back
        # the large-block reasons name the links the copies crossed, and how busy the busiest one was
        large = claims["fig2-latency-1m"]
        assert "shaped by tc" in large["why"] and "the busiest link (" in large["why"], large
        assert _host_view() == before
    finally:
        assert main(["dstore", "down", "--dir", str(root)]) == 0
    assert ceph_processes(str(root)) == []
    assert not root.exists()
    assert not [n for n in _ours() if ref.network.token in n]
    assert _host_view() == before


@needs_root
def test_a_network_whose_shaping_fails_is_removed_whole() -> None:
    """tc refuses the rate (0 bit/s) after the namespaces, the bridge and the veths exist: all of them go."""
    before = _host_view()
    token = netns.new_token()
    with pytest.raises(ToolError, match="cannot shape vmio's network"):
        netns.make(["a", "b"], rate=0, token=token)
    assert token not in netns.listed()
    assert _host_view() == before


@needs_root
@pytest.mark.ceph
@pytest.mark.slow
@needs_tools(*CEPH_TOOLS)
def test_an_interrupted_shaped_up_leaves_nothing(tmp_path: Path) -> None:
    """Ctrl-C (SIGINT) while `dstore up --network netns` starts its daemons: exit 130, and no daemon,
    namespace, veth, bridge, qdisc or folder of the cluster is left."""
    root = tmp_path / "c"
    before = _host_view()
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1] / "src")}
    argv = [sys.executable, "-m", "vmio", "dstore", "up", "--dir", str(root), "--network", "netns"]
    up = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        _wait_for_the_monitor(root, up)
        token = json.loads((root / cluster.STATE_FILE).read_text())["network"]["token"]
        assert netns.listed().get(token)
    finally:
        up.send_signal(signal.SIGINT)
        _, err = up.communicate(timeout=120)
    assert up.returncode == 130, err
    assert token not in netns.listed()
    assert ceph_processes(str(root)) == []
    assert not root.exists()
    assert _host_view() == before


def _wait_for_the_monitor(root: Path, up: subprocess.Popen[str] | subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 90
    mon = root / "run" / "mon.a.pid"  # the monitor runs as a daemon in its namespace
    while (
        time.monotonic() < deadline
        and daemons.owned_pid(mon, root / "ceph.conf") is None
        and up.poll() is None
    ):
        time.sleep(0.2)
    assert daemons.owned_pid(mon, root / "ceph.conf") is not None, "the monitor never started"


def _sent(ns: str) -> int:
    """Bytes the tbf qdisc on a member's link has sent (``tc -s``)."""
    text = subprocess.run(
        ["tc", "-s", "-n", ns, "qdisc", "show", "dev", "eth0"], capture_output=True, text=True, timeout=20
    ).stdout
    assert "tbf" in text
    return int(text.split("Sent ")[1].split()[0])


@needs_root
@pytest.mark.ceph
@pytest.mark.slow
@needs_tools(*CEPH_TOOLS)
def test_a_cluster_whose_vmio_was_killed_is_swept_whole(tmp_path: Path) -> None:
    root = tmp_path / "c"
    before = _host_view()
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1] / "src")}
    argv = [sys.executable, "-m", "vmio", "dstore", "up", "--dir", str(root), "--network", "netns"]
    up = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_for_the_monitor(root, up)
        token = json.loads((root / cluster.STATE_FILE).read_text())["network"]["token"]
    finally:
        os.kill(up.pid, signal.SIGKILL)
        up.wait(timeout=30)
    assert netns.listed().get(token)  # the daemons and namespaces outlived vmio
    swept = cluster.sweep()  # what the next `dstore up --network netns` does first
    assert sorted(swept) == sorted(
        f"vmio-{token}-{r}" for r in ("net", "mon", "osd0", "osd1", "osd2", "client")
    )
    assert token not in netns.listed()
    assert ceph_processes(str(root)) == []
    assert not root.exists()
    assert _host_view() == before

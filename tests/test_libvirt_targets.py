"""The operator's own VMs through libvirt: canary domains (``vmio guest define/undefine``) and
``kind = "libvirt"`` targets, against Debian's libvirtd (started once per run, ``conftest.libvirtd``) with
TCG domains (type ``qemu``). Referees: ``virsh dumpxml`` and ``virt-xml-validate`` for the XML, the guest
fio's own JSON for the stored figures, ``/proc`` thread names for the QEMU threads, the file system for
what undefine leaves.
"""

from __future__ import annotations

import grp
import io
import json
import os
import re
import shutil
import sqlite3
import subprocess
import time
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from vmio.campaign import layers as campaign_layers
from vmio.campaign.runner import Progress
from vmio.cli import main
from vmio.cli.campaign import ProgressPrinter
from vmio.errors import InputError, UnsafeTargetError
from vmio.guest.image import script
from vmio.libvirt import agent, canary
from vmio.libvirt.guest_trace import AgentTracer
from vmio.libvirt.virsh import Virsh
from vmio.spec import LibvirtDomain, LibvirtTarget
from vmio.store import RunRecord, Store
from vmio.system.process import Runner
from vmio.targets import Env
from vmio.targets.libvirt import GUEST_UNTRACED, QEMU_UNTRACED, check_libvirt_writes

from conftest import virsh

TAG = f"vmio-t{os.getpid()}"


def _tools() -> None:
    for tool in ("virt-xml-validate", "qemu-ga"):
        if shutil.which(tool) is None and not Path(f"/usr/sbin/{tool}").exists():
            pytest.skip(f"needs {tool} (libvirt-clients, qemu-guest-agent)")


@pytest.fixture(scope="module")
def files() -> Iterator[Path]:
    """A folder libvirt's QEMU user can pass through (root's, mode 0755) for backing files."""
    path = Path(subprocess.check_output(["mktemp", "-d", "/var/tmp/vmio-libvirt.XXXXXX"], text=True).strip())
    path.chmod(0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def prod(libvirtd: str, files: Path) -> Iterator[str]:
    """A 'production' domain (defined, never started): a root disk and a data disk vdb in iothread 2 of 2,
    cache none, io native, 2 queues."""
    _tools()
    name = f"{TAG}-prod"
    for disk in ("root.img", "data.img"):
        with open(files / disk, "wb") as f:
            f.truncate(16 << 20)
    xml = f"""<domain type='qemu'><name>{name}</name><memory unit='MiB'>128</memory><vcpu>1</vcpu>
      <iothreads>2</iothreads><os><type arch='x86_64' machine='pc'>hvm</type><boot dev='hd'/></os>
      <devices>
        <disk type='file' device='disk'><driver name='qemu' type='raw' cache='writeback' io='threads'/>
          <source file='{files}/root.img'/><target dev='vda' bus='virtio'/></disk>
        <disk type='file' device='disk'>
          <driver name='qemu' type='raw' cache='none' io='native' iothread='2' queues='2'/>
          <source file='{files}/data.img'/><target dev='vdb' bus='virtio'/></disk>
        <memballoon model='none'/>
      </devices></domain>"""
    (files / "prod.xml").write_text(xml)
    done = virsh("define", str(files / "prod.xml"))
    assert done.returncode == 0, done.stderr
    try:
        yield name
    finally:
        virsh("undefine", name)


def _cleanup(*names: str) -> None:
    for name in names:
        if virsh("domstate", name).returncode == 0:
            main(["guest", "undefine", name])


def _define(name: str, backing: Path, *extra: str) -> None:
    argv = ["guest", "define", name, "--backing", str(backing), "--size", "32M", "--accel", "tcg", *extra]
    assert main(argv) == 0


def _spec(
    path: Path, domains: list[str], rw: str = "randread", runtime: str = "3s", target: str = ""
) -> Path:
    names = ", ".join(f'"{d}"' for d in domains)
    path.write_text(f"""[campaign]
name = "lv"
[[target]]
name = "lv"
kind = "libvirt"
domains = [{names}]
{target}
[[workload]]
name = "w"
rw = "{rw}"
bs = "4k"
iodepth = 4
runtime = "{runtime}"
ramp = "1s"
""")
    return path


def _guest_docs(log: str) -> dict[str, tuple[dict[str, Any], float]]:
    """Each guest fio's own JSON from a run's log, with the guest clock offset its header gives."""
    docs = {}
    for part in log.split("# fio in domain ")[1:]:
        head, _, body = part.partition("\n")
        offset = float(head.rpartition("offset ")[2].split()[0])
        doc, _ = json.JSONDecoder().raw_decode(body[body.index("{") :])
        docs[head.split()[0]] = (doc, offset)
    return docs


def _runs(db: Path) -> list[sqlite3.Row]:
    con = sqlite3.connect(db)
    con.row_factory = sqlite3.Row
    return list(con.execute("SELECT * FROM run ORDER BY id"))


def _metrics(db: Path, run_id: int, source: str) -> dict[str, float]:
    con = sqlite3.connect(db)
    rows = con.execute(
        "SELECT metric, value FROM run_metric WHERE run_id = ? AND source = ?", (run_id, source)
    )
    return dict(rows)


@pytest.mark.qemu
@pytest.mark.root
@pytest.mark.slow
def test_a_canary_like_a_domain_is_measured_and_leaves_nothing(
    libvirtd: str,
    prod: str,
    files: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A canary shaped like a production domain, measured with layers (its guest's block layer not
    asked for, then asked for: ``_guest_layer``), and removed with everything vmio made."""
    name = f"{TAG}-like"
    backing = files / "like.img"
    try:
        _define(name, backing, "--like", prod)
        # the backing vmio made is written through: no unwritten extent (read back as zeros by the
        # filesystem without touching the disk), as the kernel's own extent map (filefrag) shows
        extents = subprocess.run(["filefrag", "-v", str(backing)], capture_output=True, text=True, timeout=60)
        assert extents.returncode == 0 and "unwritten" not in extents.stdout, extents.stdout
        dumped = virsh("dumpxml", name).stdout
        (tmp_path / "canary.xml").write_text(dumped)
        checked = subprocess.run(
            ["virt-xml-validate", str(tmp_path / "canary.xml"), "domain"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert checked.returncode == 0, checked.stdout + checked.stderr
        dom = ET.fromstring(dumped)
        assert dom.get("type") == "qemu" and dom.findtext("iothreads") == "2"
        driver = dom.find("devices/disk/driver")
        assert driver is not None
        assert (driver.get("cache"), driver.get("io"), driver.get("iothread"), driver.get("queues")) == (
            "none", "native", "2", "2",
        )  # fmt: skip
        channels = {c.get("name") for c in dom.iterfind("devices/channel/target")}
        assert channels == {"org.qemu.guest_agent.0", "vmio.agent"}  # libvirt's agent and vmio's
        assert "usable" in virsh("dommemstat", name).stdout  # the balloon reports (issue 30 balances it)
        folder = canary.ROOT / name
        info = folder.stat()
        assert oct(info.st_mode & 0o777) == "0o750" and info.st_uid == 0
        assert grp.getgrgid(info.st_gid).gr_name == "libvirt-qemu"  # libvirt's QEMU reads; no one else

        db = tmp_path / "v.db"
        assert main(["run", str(_spec(tmp_path / "s.toml", [name])), "--db", str(db), "--layers"]) == 0
        capsys.readouterr()
        assert main(["show", "lv", "--db", str(db), "--json"]) == 0
        (row,) = json.loads(capsys.readouterr().out)
        assert row["status"] == "done" and row["target_kind"] == "libvirt" and row["accel"] == "tcg"
        # the layers: the operator's QEMU is not traced and says why; the host's block layer is, on the disk
        # under the canary's file (cache none: each guest read reaches it) where bpftrace is installed
        layers = row["layers"]
        assert layers["qemu"] == {"read": None, "write": None, "why": QEMU_UNTRACED}
        # nor is the guest's block layer, unless the target asks (guest_layers = true): its entry says so
        assert layers["guest_block"] == {"read": None, "write": None, "why": GUEST_UNTRACED}
        assert layers["app"]["read"]["ios"] == row["read_ops"]
        host = layers["host_block"]
        assert host["read"]["ios"] > 0 if shutil.which("bpftrace") else "why" in host, host
        (run,) = _runs(db)
        (doc, _), *_ = _guest_docs(run["log"]).values()
        measured = [j for j in doc["jobs"] if j["jobname"] == "measure"]
        assert measured and row["read_iops"] == pytest.approx(
            sum(j["read"]["iops"] for j in measured), rel=1e-9
        )
        assert row["read_iops"] > 0
        facts = json.loads(run["host_json"])["libvirt_domains"][0]
        assert facts["disk"]["iothread"] == "2" and facts["disk"]["source"] == str(backing)
        assert facts["iothread_ids"] == ["iothread1", "iothread2"] and facts["qemu_pid"] > 0
        threads = _metrics(db, run["id"], f"qemu:{name}")
        # the disk runs in libvirt's iothread2 (the second): it worked, the first idled
        assert threads["iothread1_pct"] > 0 and threads["iothread1_pct"] > threads["iothread0_pct"]
        assert row["qemu_cpu_pct"]["iothreads"][1] == pytest.approx(threads["iothread1_pct"], abs=0.01)
        with pytest.raises(InputError) as caught:  # a guest without a tool the target needs: one sentence
            agent.check_ready(Virsh(libvirtd), name, tools=("fio", "vmio-no-such-tool"))
        assert str(caught.value) == (
            f"domain {name!r} on qemu:///system has no vmio-no-such-tool in its PATH; install vmio-no-such-tool "
            "in the guest"
        )
        hist = sqlite3.connect(db).execute(
            "SELECT DISTINCT host FROM hist_log WHERE run_id = ?", (run["id"],)
        )
        assert [h for (h,) in hist] == [name]  # fio's histogram logs came back out of the guest
        _guest_layer(name, libvirtd, tmp_path, capsys, monkeypatch)
    finally:
        _cleanup(name)
    assert name not in virsh("list", "--all", "--name").stdout.split()
    assert not backing.exists() and not (canary.ROOT / name).exists()
    assert virsh("vol-list", "--all").returncode != 0 or str(backing) not in virsh("vol-list", "--all").stdout


def _guest_layer(
    name: str,
    libvirtd: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``guest_layers = true``: the guest's block layer is traced through its guest agent (the tracer's
    text on ``sh``'s stdin). Its request count is fio's own within 10 % (the window's start is within a
    100 ms slot of fio's), its mean lies between fio's and the host block layer's (cache none: each read
    goes through to the host's disk; 3 % slack per step, as the TCG test in test_layers.py), and the
    guest's tracefs, read through the agent, holds vmio's triggers during the point and nothing after it.
    A tracer that is switched on and never off (a vmio killed mid-point) is switched off by the guest
    itself once the limit ``on`` gave it has passed."""
    during: list[str] = []
    enter = campaign_layers.Tracing.__enter__

    def entered(self: campaign_layers.Tracing) -> campaign_layers.Tracing:
        out = enter(self)
        during.extend(t.command("state")[1] for t in self.guest)
        return out

    monkeypatch.setattr(campaign_layers.Tracing, "__enter__", entered)
    db = tmp_path / "g.db"
    spec = _spec(tmp_path / "g.toml", [name], target="guest_layers = true")
    assert main(["run", str(spec), "--db", str(db), "--layers"]) == 0
    capsys.readouterr()
    assert main(["show", "lv", "--db", str(db), "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    layers = row["layers"]
    app, guest, host = (layers[k]["read"] for k in ("app", "guest_block", "host_block"))
    assert app["ios"] == row["read_ops"] and "cut" not in layers["guest_block"], layers
    assert guest["ios"] == pytest.approx(app["ios"], rel=0.1), layers
    tol = 0.97
    assert app["mean_us"] >= tol * guest["mean_us"], layers
    assert guest["mean_us"] >= tol * host["mean_us"], layers
    (run,) = _runs(db)
    with Store(db) as store:
        stored = {(h[0], h[1]): h for h in store.layer_hists(run["id"])}
    assert sum(stored[("guest_block", "read")][4].values()) == guest["ios"]
    _clock(name, libvirtd, run, layers, stored[("guest_block", "read")][4])
    # the guest's tracefs: vmio's triggers during the point, nothing of them after it
    (state,) = during
    assert "onmatch(block.block_rq_issue).trace(vmio_blk_lat" in state and "vmio_ts0" in state
    tracer = AgentTracer(Virsh(libvirtd), name)
    assert _left(tracer) == ["0"]  # events/block/enable reads 0; no trigger, synthetic event or set_event
    # switched on and never off: the guest switches it off itself past the limit (1 s here); watched in the
    # guest (every 0.2 s, for up to 30 s), in one agent call with the two runs' commands that follow
    disk = json.loads(run["host_json"])["libvirt_domains"][0]["guest_device"].removeprefix("/dev/")
    watch = (
        "!n=0; while [ $n -lt 150 ] && grep -q vmio_blk_lat /sys/kernel/tracing/synthetic_events; do sleep 0.2; "
        "n=$((n + 1)); done"
    )
    said = _batch(Virsh(libvirtd), name, [f"on {disk} 100000000 8192 4096 1", "state", watch, "state",
                                          *_two_runs(disk)])  # fmt: skip
    rc, text = said[0]
    assert rc == 0 and text.startswith(f"on {disk} dev "), said
    assert "vmio_blk_lat" in said[1][1]
    assert _state(said[3][1]) == ["0"], said
    _two_runs_said(said[4:], disk)
    _off_refused(tracer, name, libvirtd, disk, tmp_path)


def _clock(name: str, libvirtd: str, run: sqlite3.Row, layers: dict[str, Any], bins: dict[int, int]) -> None:
    """The guest's clocks, against the guest kernel's own word (read through the agent): its clocksource as
    stored in the point's facts. The canary has ACPI (its HPET and PM timer), so its TSC calibrates even
    under TCG and neither fio's latencies nor the guest's block layer's are read off a coarse clock: no note,
    and latencies between the kernel's ticks (a canary without ACPI read every one as 0, 4000, 8000 µs...;
    the coarse case: test_guesttrace.py, test_advise_diagnose.py, test_report_guest_warnings.py)."""
    said = agent.run(
        Virsh(libvirtd), name, "sh", ["-c", "cat /sys/devices/system/clocksource/clocksource0/current_clocksource;"
                                      " dmesg | grep -c 'could not calculate TSC khz'"],
    )  # fmt: skip
    source, no_tsc = said.out.split()
    (facts,) = json.loads(run["host_json"])["guest_clock"].values()
    assert facts["clocksource"] == source, (facts, said)
    assert source not in ("jiffies", "refined-jiffies") and no_tsc == "0", said
    assert "clock" not in layers["app"] and "clock" not in layers["guest_block"], layers
    assert facts.get("trace_step_us") is None, facts
    off_tick = [b for b in bins if min(b % 4_000_000, 4_000_000 - b % 4_000_000) > 200_000]
    assert len(off_tick) >= len(bins) // 2, bins  # most buckets are not near a 4 ms multiple


def _batch(virsh: Virsh, name: str, lines: list[str]) -> list[tuple[int, str]]:
    """Tracer commands run one after another in the guest, through one ``guest-exec`` (each agent call
    takes about a second under TCG): each command its own ``sh -s -- -c COMMAND`` process with the tracer's
    text on its standard input, as ``AgentTracer`` runs it; a line starting with ``!`` is a shell command of
    the test's. Each line's exit status and output."""
    steps = "".join(
        (f"{line[1:]}\n" if line.startswith("!") else f'printf "%s\\n" "$t" | sh -s -- -c {line}\n')
        + 'echo "--- rc $?"\n'
        for line in lines
    )
    done = agent.run(
        virsh, name, "sh", ["-c", f"t=$(cat)\n{steps}"], timeout=120, input_text=script("trace.sh")
    )
    parts = re.split(r"^--- rc (\d+)\n", done.out, flags=re.M)
    said = [(int(rc), text) for text, rc in zip(parts[0::2], parts[1::2], strict=False)]
    assert len(said) == len(lines), (done, lines)
    return said


def _state(said: str) -> list[str]:
    """The tracer's ``state`` output less its headings (as ``_left``)."""
    return [line for line in said.splitlines() if not line.startswith("== ")]


def _two_runs(disk: str) -> list[str]:
    """Two vmio runs tracing one guest (the commands; ``_two_runs_said`` checks what they said)."""
    on = f"on {disk} 100000000 8192 4096 60"
    kill = "!read -r k _ < /run/vmio-trace/held/by && kill $k && echo $k"
    return [
        f"{on} vmio-1@first", "state", f"{on} vmio-2@second", "read vmio-2@second", "off vmio-2@second",
        "state", "off vmio-1@first", "state", f"{on} vmio-1@first", kill, f"{on} vmio-2@second", "state",
        "off vmio-2@second", "state",
    ]  # fmt: skip


def _two_runs_said(said: list[tuple[int, str]], disk: str) -> None:
    """Two vmio runs tracing one guest: while the first's tracer lives (its keeper runs, its limit has not
    passed), the second's ``on`` is refused in one line naming the first and changes nothing, and its
    ``read`` and ``off`` are refused too; the first's ``off`` leaves nothing. A claim whose keeper was killed
    in the guest (restarting the agent may take it) is stale: the next ``on`` sweeps it and claims anew."""
    assert said[0][0] == 0, said
    held = _state(said[1][1])
    assert held[0].endswith(" vmio-1@first") and any("vmio_ts0" in line for line in held), held
    keeper = held[0].split()[0]  # the claim's first word: the keeper's PID in the guest
    rc, refused = said[2]
    assert rc == 1 and refused.startswith(
        f"the guest's block layer is being traced by another run, vmio-1@first (its tracer, PID {keeper} in "
        "the guest, holds it until its limit, "
    ), said
    assert refused.endswith("s from now); nothing was changed\n") and refused.count("\n") == 1, said
    for rc, text in said[3:5]:  # the second run owns nothing there: read and off refused, nothing changed
        assert rc == 1 and text.endswith("; refused for vmio-2@second\n"), said
    assert _state(said[5][1]) == held
    assert said[6][0] == 0 and _state(said[7][1]) == ["0"], said  # the first's off: nothing left
    assert said[8][0] == 0 and said[9][0] == 0, said
    killed = said[9][1].strip()
    rc, text = said[10]  # the first's keeper killed: stale, swept and claimed by the second
    assert rc == 0 and text.startswith(f"on {disk} dev "), said
    claim = _state(said[11][1])[0]
    assert claim.endswith(" vmio-2@second") and claim.split()[0] != killed, said
    assert said[12][0] == 0 and _state(said[13][1]) == ["0"], said


class _Domain:
    """A rig of one libvirt domain whose guest is traced through its agent (no fio, no host disk)."""

    probes: list[object] = []
    fio_env = None

    def __init__(self, tracer: AgentTracer, disk: str) -> None:
        self.tracer, self.disk = tracer, disk

    def guest_tracers(self) -> list[tuple[AgentTracer, str]]:
        return [(self.tracer, self.disk)]


BUSY = "/sys/kernel/tracing/instances/vmio-test-busy/events/synthetic/vmio_blk_lat/enable"


def _off_refused(tracer: AgentTracer, name: str, libvirtd: str, disk: str, tmp_path: Path) -> None:
    """The guest's ``off`` fails: vmio's synthetic event, enabled in a tracefs instance by someone else
    (here: the test, through the agent), cannot be removed (the kernel answers EBUSY). The point's
    guest_block carries the guest's words in ``cut``, its figures are the requests the guest counted before
    (as many as the guest's own /sys/block/DISK/stat counted), vmio run's output warns; the next ``on``
    refuses with the same words while the obstacle stays, and sweeps once it is gone. Before that, another
    run's point while this one's tracer lives: refused, saying why, touching nothing."""
    virsh = Virsh(libvirtd)
    # 40 direct reads, counted by the guest's own disk statistics; then the obstacle
    reads = (
        f"read -r a _ < /sys/block/{disk}/stat; dd if=/dev/{disk} of=/dev/null bs=4096 count=40 skip=100 "
        f"iflag=direct 2>/dev/null; read -r b _ < /sys/block/{disk}/stat; echo $((b - a)); "
        f"mkdir {BUSY.split('/events/')[0]} && echo 1 > {BUSY}"
    )
    with campaign_layers.Tracing(_Domain(tracer, disk), Runner(), tmp_path, 5.0, 4.0) as traced:  # type: ignore[arg-type]
        assert traced.guest == [tracer], traced.why
        done = agent.run(virsh, name, "sh", ["-c", reads])
        assert done.exitcode == 0, done
        counted = int(done.out.strip())
        # another run's point meanwhile: refused in the guest (this one's tracer lives), its guest_block says
        # why, and it neither reads nor switches off there (this one's table is read whole below)
        other = campaign_layers.Tracing(_Domain(tracer, disk), Runner(), tmp_path, 5.0, 4.0)  # type: ignore[arg-type]
        other.owner = "vmio-2@other"
        with other:
            assert other.guest == []
        assert other.why["guest_block"].startswith(
            f"{name}'s block layer could not be traced: the guest's block layer is being traced by another "
            f"run, {traced.owner} (its tracer, PID "
        ) and other.why["guest_block"].endswith("; nothing was changed"), other.why
    now = time.monotonic()
    rec = RunRecord(
        campaign="t", point_key="t/p", target="t", target_kind="libvirt", workload="w", bs=4096,
        offered_iops=None, load_processes=0, repetition=1, status="done", started=now - 4, ended=now,
    )  # fmt: skip
    traced.finish(rec, [], (now - 4, now))
    words = (
        "the guest's triggers could not all be removed (left in synthetic_events): sh: write error: Device or "
        "resource busy"
    )
    guest = rec.layers["guest_block"] if rec.layers else {}
    assert guest["cut"] == f"{name}'s tracing could not be switched off: {words}", guest
    assert counted == 40 and guest["read"]["ios"] == counted, (counted, guest)
    assert [(h[0], h[1], sum(h[4].values())) for h in rec.layer_hists] == [("guest_block", "read", counted)]
    assert rec.warnings == [guest["cut"]]
    out = io.StringIO()  # vmio run's lines (not a terminal): the point, then its warning
    ProgressPrinter(out)(Progress(1, 1, "t/p", "done", None, warnings=tuple(rec.warnings)))
    assert out.getvalue().splitlines()[1] == f"  warning: {guest['cut']}"
    on = f"on {disk} 100000000 8192 4096 60 vmio-3@next"
    said = _batch(
        virsh, name,
        ["state", on, "state", f"!echo 0 > {BUSY} && rmdir {BUSY.split('/events/')[0]}", on, "off vmio-3@next",
         "state"],
    )  # fmt: skip
    left = _state(said[0][1])
    # the synthetic event (and its dynamic_events line), nothing else: events/block/enable reads 0
    assert [line.split()[0] for line in left] == ["vmio_blk_lat", "s:synthetic/vmio_blk_lat", "0"], said
    assert said[1] == (1, words + "\n") and _state(said[2][1]) == left, said  # the obstacle stays: refused
    assert said[3][0] == 0 and said[4][0] == 0 and said[5][0] == 0, said  # gone: swept, on, off
    assert _state(said[6][1]) == ["0"], said


def _left(tracer: AgentTracer) -> list[str]:
    """The guest's tracefs as the tracer's ``state`` reads it, less its headings."""
    rc, said = tracer.command("state")
    assert rc == 0, said
    return [line for line in said.splitlines() if not line.startswith("== ")]


@pytest.mark.qemu
@pytest.mark.root
@pytest.mark.slow
def test_two_domains_start_together(libvirtd: str, files: Path, tmp_path: Path) -> None:
    """Two canaries (virtio-blk with an iothread, virtio-scsi) in one target: both guests' fio report, and
    their measured windows (fio's own timestamps, taken to this host's clock) overlap for at least half the
    runtime. Started one after the other they would not overlap at all; how close together they start
    depends on how busy the host is (each start is a ``virsh`` call answered by a guest agent), so the test
    asks for overlap, not a fixed number of seconds."""
    _tools()
    names = [f"{TAG}-a", f"{TAG}-b"]
    try:
        _define(names[0], files / "a.img", "--iothreads", "1")
        _define(names[1], files / "b.img", "--bus", "virtio-scsi", "--cache", "writeback", "--aio", "threads")
        db = tmp_path / "v.db"
        spec = _spec(tmp_path / "s.toml", names, rw="randwrite", runtime="4s")
        assert main(["run", str(spec), "--db", str(db)]) == 0  # writes: the canaries' disks are vmio's
        (run,) = _runs(db)
        assert run["status"] == "done", run["error"]
        docs = _guest_docs(run["log"])
        assert sorted(docs) == sorted(names)
        windows = []
        for doc, offset in docs.values():
            (job,) = [j for j in doc["jobs"] if j["jobname"] == "measure"]
            assert job["write"]["iops"] > 0
            # fio's end stamp less its runtime is where its measured window began, on the guest's clock;
            # less the guest's clock offset, on this host's
            end = doc["timestamp_ms"] / 1000 - offset
            windows.append((end - job["job_runtime"] / 1000, end))
        overlap = min(e for _, e in windows) - max(s for s, _ in windows)
        assert overlap >= 2.0, windows  # half of the 4 s runtime; one after the other: below 0
        stored = {r["name"]: r for r in json.loads(run["host_json"])["libvirt_domains"]}
        assert (
            stored[names[1]]["disk"]["bus"] == "virtio-scsi"
            and stored[names[1]]["guest_device"] == "/dev/sda"
        )
    finally:
        _cleanup(*names)
    for name in names:
        assert name not in virsh("list", "--all", "--name").stdout.split()
    assert not (files / "a.img").exists() and not (files / "b.img").exists()


@pytest.mark.qemu
@pytest.mark.root
@pytest.mark.slow
def test_what_a_libvirt_target_refuses(
    prod: str, files: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """One sentence each: a write to a disk vmio did not make (exit 3), a domain that is not running
    (exit 2), a domain with two data disks and no ``disk`` (exit 2), --like a domain not there (exit 2)."""
    db = tmp_path / "v.db"
    capsys.readouterr()
    assert main(["run", str(_spec(tmp_path / "w.toml", [prod], rw="randwrite")), "--db", str(db)]) == 3
    err = capsys.readouterr().err
    assert f"--destroy-data {prod}:vdb" in err and "Traceback" not in err
    target = LibvirtTarget("t", (LibvirtDomain(prod, "qemu:///system"),))
    check_libvirt_writes(target, (f"{prod}:vdb",), Env())  # named: allowed
    with pytest.raises(UnsafeTargetError):
        check_libvirt_writes(target, (f"{prod}:vda", "/dev/vdb"), Env())  # another disk, or a host path
    assert main(["run", str(_spec(tmp_path / "r.toml", [prod])), "--db", str(tmp_path / "r.db")]) == 2
    err = capsys.readouterr().err
    assert f"domain {prod!r} on qemu:///system is shut off, not running" in err
    assert virsh("start", prod).returncode == 0  # firmware looking for a boot disk: no agent
    try:
        assert main(["run", str(_spec(tmp_path / "g.toml", [prod])), "--db", str(tmp_path / "g.db")]) == 2
        err = capsys.readouterr().err
        assert f"domain {prod!r} on qemu:///system has no QEMU guest agent answering" in err
        assert len([line for line in err.splitlines() if not line.startswith("[")]) == 1  # no progress
    finally:
        virsh("destroy", prod)
    shutil.copyfile(files / "prod.xml", tmp_path / "two.xml")
    two = (tmp_path / "two.xml").read_text().replace(prod, f"{TAG}-two")
    two = two.replace("<memballoon", f"<disk type='file' device='disk'><source file='{files}/data.img'/>"
                      "<target dev='vdc' bus='virtio'/></disk><memballoon")  # fmt: skip
    (tmp_path / "two.xml").write_text(two)
    assert virsh("define", str(tmp_path / "two.xml")).returncode == 0
    try:
        assert (
            main(["run", str(_spec(tmp_path / "t.toml", [f"{TAG}-two"])), "--db", str(tmp_path / "t.db")])
            == 2
        )
        err = capsys.readouterr().err
        assert "has 2 disks besides its root disk (vdb, vdc); name the one to measure" in err
    finally:
        virsh("undefine", f"{TAG}-two")
    assert (
        main(["guest", "define", f"{TAG}-x", "--like", f"{TAG}-nope", "--backing", str(files / "x.img")]) == 2
    )
    assert f"domain '{TAG}-nope' is not defined on qemu:///system" in capsys.readouterr().err
    assert not (files / "x.img").exists()


@pytest.mark.qemu
@pytest.mark.root
@pytest.mark.slow
def test_a_canary_left_by_a_killed_vmio_is_removed(
    libvirtd: str, files: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """What a define killed half-way leaves (the domain defined, ``canary.json`` saying ``defining``, its
    pid gone) is removed by the next undefine, whatever name that one is for; a domain vmio did not
    make is never undefined (exit 3)."""
    _tools()
    name = f"{TAG}-left"
    dead = subprocess.Popen(["true"])
    dead.wait()
    folder = canary.ROOT / name
    folder.mkdir(parents=True)
    backing = files / "left.img"
    backing.write_bytes(b"\0" * 4096)
    made = canary.Canary(name, libvirtd, str(folder), str(backing), True, "qemu", canary.Shape())
    (folder / "canary.json").write_text(json.dumps({**made.to_json(), "state": "defining", "pid": dead.pid}))
    (folder / "domain.xml").write_text(canary.domain_xml(made, folder))
    assert virsh("define", str(folder / "domain.xml")).returncode == 0
    capsys.readouterr()
    assert main(["guest", "undefine", f"{TAG}-other"]) == 2  # no such canary, but the sweep ran first
    assert "no canary named" in capsys.readouterr().err
    assert virsh("domstate", name).returncode != 0
    assert not folder.exists() and not backing.exists()
    # a domain carrying vmio's marker but no record of vmio's: undefined, but the file it names is kept
    bait = files / "bait.img"
    bait.write_bytes(b"data")
    forged = canary.Canary(f"{TAG}-forged", libvirtd, str(files), str(bait), True, "qemu", canary.Shape())
    (files / "forged.xml").write_text(canary.domain_xml(forged, files))
    assert virsh("define", str(files / "forged.xml")).returncode == 0
    assert main(["guest", "undefine", f"{TAG}-other"]) == 2
    assert virsh("domstate", forged.name).returncode != 0 and bait.read_bytes() == b"data"
    plain = f"{TAG}-plain"
    (files / "plain.xml").write_text(
        f"<domain type='qemu'><name>{plain}</name><memory unit='MiB'>64</memory>"
        "<os><type arch='x86_64'>hvm</type></os></domain>"
    )
    assert virsh("define", str(files / "plain.xml")).returncode == 0
    try:
        assert main(["guest", "undefine", plain]) == 3
        assert f"domain {plain!r} on qemu:///system is not a vmio canary" in capsys.readouterr().err
        assert virsh("domstate", plain).returncode == 0
    finally:
        virsh("undefine", plain)


# -- the spec and the domain XML, without a daemon -------------------------------------------------------

SPEC = """[campaign]
name = "x"
[[target]]
name = "t"
kind = "libvirt"
{body}
[[workload]]
name = "w"
rw = "randread"
"""


def test_libvirt_spec_round_trips() -> None:
    from vmio.spec import LibvirtDomain, loads_spec
    from vmio.spec.dump import dumps

    body = "domains = ['a', {uri = 'qemu+ssh://h/system', name = 'b'}]\ndisk = '/dev/vdb'"
    campaign = loads_spec(SPEC.format(body=body))
    (target,) = campaign.targets
    assert target.domains == (LibvirtDomain("a", "qemu:///system"), LibvirtDomain("b", "qemu+ssh://h/system"))
    assert target.disk == "vdb" and target.kind == "libvirt" and not target.guest_layers
    assert loads_spec(dumps(campaign)) == campaign
    assert "guest_layers" not in dumps(campaign)  # at its default, a stored campaign's text is unchanged
    traced = loads_spec(SPEC.format(body=body + "\nguest_layers = true"))
    assert traced.targets[0].guest_layers and loads_spec(dumps(traced)) == traced
    assert traced.canonical() != campaign.canonical()


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("domains = []", "<spec>:6: target[0].domains = []: expected at least one value"),
        ("domains = [{name = 'a', url = 'x'}]", 'is not a domain; use a name or {uri = "...", name = "..."}'),
        ("domains = ['a', 'a']", "target[0].domains names a domain twice"),
        (
            "domains = ['a']\ndisk = 'v b'",
            "<spec>:7: target[0].disk = 'v b': is not a libvirt disk target name",
        ),
        ("domains = ['a']\nguest_layers = 'yes'", "<spec>:7: target[0].guest_layers = 'yes': "),
    ],
)
def test_bad_libvirt_targets_are_one_sentence(body: str, message: str) -> None:
    from vmio.errors import SpecError
    from vmio.spec import loads_spec

    with pytest.raises(SpecError) as caught:
        loads_spec(SPEC.format(body=body))
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_the_measured_disk_is_read_from_the_xml() -> None:
    """A virtio-scsi disk takes its iothread and queues from its controller; a domain's root disk (booted
    from, else the first) is not measured; a local URI is one without a host."""
    from vmio.errors import InputError
    from vmio.libvirt import domxml
    from vmio.libvirt.virsh import is_local

    xml = """<domain type='kvm'><name>p</name><iothreads>4</iothreads><os><type machine='q35'>hvm</type></os>
      <devices>
        <controller type='scsi' index='0' model='virtio-scsi'><driver iothread='3' queues='4'/></controller>
        <disk type='block' device='disk'><driver name='qemu' cache='directsync' io='io_uring'/>
          <source dev='/dev/nvme0n1'/><target dev='sdb' bus='scsi'/><address type='drive' controller='0'
          bus='0' target='0' unit='1'/></disk>
        <disk type='file' device='disk'><source file='/img/root.qcow2'/><target dev='sda' bus='scsi'/>
          <boot order='1'/></disk>
        <disk type='file' device='cdrom'><target dev='hdc' bus='ide'/></disk>
      </devices></domain>"""
    shape = domxml.parse(xml)
    assert (shape.type, shape.machine, shape.iothreads, shape.marker) == ("kvm", "q35", 4, None)
    disk = shape.disk(None, "qemu:///system")
    assert (disk.dev, disk.bus, disk.cache, disk.io, disk.iothread, disk.queues) == (
        "sdb", "virtio-scsi", "directsync", "io_uring", "3", 4,
    )  # fmt: skip
    assert (disk.source, disk.source_type) == ("/dev/nvme0n1", "block")
    with pytest.raises(InputError, match=r"domain 'p' on u has no disk 'vdz' \(its disks: sdb, sda\)"):
        shape.disk("vdz", "u")
    assert [is_local(u) for u in ("qemu:///system", "qemu+unix:///system", "qemu+ssh://h/system")] == [
        True, True, False,
    ]  # fmt: skip

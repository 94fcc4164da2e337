"""The guest_block layer's table as the guest kernel prints it (docs/layers.md): parsed, windowed, binned."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from vmio.campaign import layers
from vmio.libvirt.guest_trace import AgentTracer
from vmio.libvirt.virsh import Virsh
from vmio.metrics import guesttrace
from vmio.metrics.layers import Spans, traced
from vmio.qemu.guestctl import GuestTracer
from vmio.stats import histogram
from vmio.system.process import Runner

# as vmio-trace read printed it in a guest (Debian 12's 6.1 kernel), trimmed to a few entries
READ = """# event histogram
#
# trigger info: hist:keys=rwbs,slot,us:vals=hitcount,lat:sort=slot:size=8192 [active]
#

{ rwbs: R                                                 , slot:        155, us:      37801 } hitcount:          1  lat:   37801544
{ rwbs: R                                                 , slot:        156, us:       9740 } hitcount:          2  lat:   19480500
{ rwbs: WS                                                , slot:        156, us:        409 } hitcount:          1  lat:     409204
{ rwbs: FN                                                , slot:        157, us:         12 } hitcount:          1  lat:      12000
{ rwbs: R                                                 , slot:        157, us:      14013 } hitcount:          1  lat:   14012547

Totals:
    Hits: 6
    Entries: 5
    Dropped: 3
== issue
Totals:
    Hits: 6
    Entries: 6
    Dropped: 1
"""


def test_the_table_is_read_and_cut_to_the_last_slots() -> None:
    table = guesttrace.read(READ)
    assert table.dropped == 4 and table.failed is None
    assert [(e.ddir, e.slot, e.count) for e in table.entries] == [
        ("read", 155, 1),
        ("read", 156, 2),
        ("write", 156, 1),
        ("read", 157, 1),
    ]  # fmt: skip  (the flush is no direction)
    spans = Spans()
    # 0.2 s of 100 ms slots: the last two slots the guest completed requests in (156 and 157)
    guesttrace.window([table], 0.2, 100_000_000, spans)
    shown = traced(spans)
    assert shown["read"] == {
        "mean_us": round((19480500 + 14012547) / 3 / 1000, 3),
        "p50_us": histogram.bucket_value(histogram.bucket_index(9740250)) / 1000,
        "p99_us": histogram.bucket_value(histogram.bucket_index(14012547)) / 1000,
        "ios": 3,
    }
    assert shown["write"] is not None and shown["write"]["ios"] == 1
    failed = guesttrace.read(
        READ + "renewal failed: the guest's pairing triggers could not be written again\n"
    )
    assert failed.failed is not None and failed.failed.startswith("renewal failed")
    assert table.renewals == 0 and guesttrace.read(READ + "renewals 0\n").renewals == 0
    assert guesttrace.read(READ + "renewals 3\n").renewals == 3  # each lost the requests then in flight


def test_slots_scale_with_the_point() -> None:
    assert guesttrace.slot_ns(4) == 100_000_000  # 4 s / 40 is below the 100 ms floor
    assert guesttrace.slot_ns(70) == 1_700_000_000  # 1.75 s, on 100 ms steps


class _Rig:
    """A rig whose one VM's tracer does not answer (its socket is not there): a seam, no VM."""

    probes: list[object] = []
    fio_env = None

    def __init__(self, path: Path) -> None:
        self.path = path

    def guest_tracers(self) -> list[tuple[GuestTracer, str]]:
        return [(GuestTracer(self.path, "vmio-0"), "vda")]


def test_a_guest_that_does_not_answer_says_why(tmp_path: Path) -> None:
    """The guest's tracer cannot be reached: guest_block says why and nothing else is held up."""
    rig = _Rig(tmp_path / "trace.sock")
    with layers.Tracing(rig, Runner(), tmp_path, 5.0, 4.0) as traced:  # type: ignore[arg-type]
        assert traced.guest == []
    why = traced.why["guest_block"]
    assert why.startswith(
        "vmio-0's block layer could not be traced: vmio-0: the guest's tracer did not answer 'on'"
    )
    assert traced.tables is None


class _Domains:
    """A libvirt rig whose one domain's agent refuses (no such domain: ``virsh`` says so): a seam, no VM."""

    probes: list[object] = []
    fio_env = None

    def guest_tracers(self) -> list[tuple[AgentTracer, str]]:
        return [(AgentTracer(Virsh("qemu:///system", Runner()), "vmio-no-such-domain"), "vdb")]


def test_a_domain_whose_agent_refuses_says_why(tmp_path: Path) -> None:
    """A libvirt domain's tracer runs through ``virsh qemu-agent-command``: when that fails (here: no such
    domain, or no libvirtd at all) guest_block says why, in libvirt's words, and the point goes on."""
    if shutil.which("virsh") is None:
        pytest.skip("needs virsh (libvirt-clients)")
    with layers.Tracing(_Domains(), Runner(), tmp_path, 5.0, 4.0) as traced:  # type: ignore[arg-type]
        assert traced.guest == []
    why = traced.why["guest_block"]
    assert why.startswith(
        "vmio-no-such-domain's block layer could not be traced: domain 'vmio-no-such-domain' on "
        "qemu:///system: the QEMU guest agent did not answer guest-exec ("
    ), why
    assert traced.tables is None


def test_a_coarse_trace_clock_shows_in_its_steps() -> None:
    """The trace clock's step from the latencies the guest counted (docs/layers.md): a guest whose
    sched_clock counts jiffies (HZ=250: 4 ms) reads every request as 0, 4000, 8000 µs...; a fine clock
    reads them as they are."""

    def table(*us: int) -> guesttrace.Table:
        return guesttrace.Table([guesttrace.Entry("read", 1, 1, u * 1000, u) for u in us])

    # a canary without ACPI (no usable TSC; refined-jiffies' tick is a little over 4 ms)
    assert table(0, 4000, 4001, 8001).step_us() == 4000
    assert table(8001, 12002, 40010).step_us() == 4000  # the shortest request took two steps
    assert table(0, 0).step_us() == 0  # every request read 0: the step is longer than all of them
    assert table(0, 10000).step_us() == 10000  # HZ=100
    assert table(37801, 9740, 409, 14013).step_us() is None  # a fine clock (the READ table's latencies)
    assert table(1613, 4882, 22675, 3001).step_us() is None  # a fine clock on slow requests (TCG)
    assert table(8000).step_us() is None and table(4000, 12000).step_us() is None  # too few to tell
    assert table().step_us() is None
    assert table(2000, 3000, 5000).step_us() == 1000  # HZ=1000
    said = "on vdb dev 266338320 pairs 8192 renew_every 0 tables_kb 8040 clock refined-jiffies global"
    assert guesttrace.clock(said) == ("refined-jiffies", "global")
    assert guesttrace.clock("on vdb dev 266338320 pairs 8192 renew_every 0 tables_kb 8040") is None
    assert guesttrace.coarse("refined-jiffies") and not guesttrace.coarse("tsc")

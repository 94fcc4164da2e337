"""The accelerator probe: a bounded KVM boot, falling back to TCG; cached per host boot."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest

from vmio.errors import InputError
from vmio.qemu import VM, AccelProber, VMConfig
from vmio.qemu.accel import boot_id

from qemu_support import caps, needs_qemu, session_guest

pytestmark = [pytest.mark.qemu, needs_qemu]


def test_auto_probe_picks_an_accelerator_that_boots(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    guest, qcaps = session_guest(tmp_path_factory), caps()
    prober = AccelProber(guest, qcaps, deadline=10, cache_dir=tmp_path)
    started = time.monotonic()
    choice = prober.resolve("auto")
    assert time.monotonic() - started < 30
    assert choice.qemu_version == qcaps.version_string and not choice.cached
    if choice.accel == "tcg" and qcaps.kvm_device:
        assert "KVM probe boot not ready" in choice.reason
    assert prober.resolve("auto") is choice  # remembered for this prober's life
    cached = AccelProber(guest, qcaps, deadline=10, cache_dir=tmp_path).resolve("auto")
    assert cached.cached and cached.accel == choice.accel
    assert [p.name.startswith(boot_id()) for p in tmp_path.iterdir()] == [True]
    # The choice must actually work: the guest boots with it. The forwarded port given is taken by
    # another socket, so QEMU cannot bind it and the VM must relaunch on a fresh port.
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = taken.getsockname()[1]
        config = VMConfig(accel=choice.accel, balloon=False)
        with VM(config, guest, caps=qcaps, workdir=tmp_path / "vm", host_port=busy) as vm:
            assert vm.query_status() == "running"
            assert vm.runtime.host_port != busy and f"127.0.0.1:{vm.runtime.host_port}-" in " ".join(vm.argv)


def test_explicit_accelerators_pass_and_bad_ones_fail(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    prober = AccelProber(session_guest(tmp_path_factory), caps(), cache_dir=tmp_path)
    assert prober.resolve("tcg").accel == "tcg" and prober.resolve("tcg").reason == "requested"
    with pytest.raises(InputError, match="accel = 'xen'"):
        prober.resolve("xen")
    assert list(tmp_path.iterdir()) == []

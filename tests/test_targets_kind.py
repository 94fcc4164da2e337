"""Each target kind answers for itself (``vmio.targets.kind_of``): preflight is one loop over the targets,
and a QEMU target's build is resolved once per run (preflight resolves it; the rig takes the same one), its
capabilities and the guest image once per run too."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from vmio import guest
from vmio.campaign import runner
from vmio.errors import InputError
from vmio.qemu import QemuCaps, builds, probe_caps
from vmio.spec import Campaign, loads_spec
from vmio.targets import KINDS, kind_of, qemu
from vmio.targets.traits import TRAITS, traits_of, vm_config


def campaign(tmp_path: Path, version: str = "") -> Campaign:
    disk = tmp_path / "d.img"
    disk.write_bytes(b"\0" * 4096)
    wanted = f'qemu = "{version}"\n' if version else ""
    return loads_spec(
        f'[campaign]\nname = "c"\n[[target]]\nname = "bare"\nkind = "host"\npath = "{disk}"\n'
        f'[[target]]\nname = "vm"\nkind = "qemu"\nbacking = ["{disk}"]\n{wanted}'
        '[[workload]]\nname = "r"\nrw = "randread"\nruntime = "1s"\n',
        str(tmp_path / "c.toml"),
    )


def test_the_qemu_build_is_resolved_once_per_target(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str | None] = []
    real = builds.resolve

    def counted(wanted: str | None, *args: Any, **kwargs: Any) -> builds.QemuBuild:
        calls.append(wanted)
        return real(wanted, *args, **kwargs)

    monkeypatch.setattr(builds, "resolve", counted)
    camp = campaign(tmp_path)
    options = runner.Options()
    runner.preflight(camp, options)
    assert calls == [None]  # the system's build, for the one QEMU target
    vm = camp.targets[1]
    first = qemu.resolved_build(vm, options.target_env())  # what the rig that boots the VMs takes
    assert calls == [None] and first is options.builds["vm"]


def test_a_missing_build_is_refused_by_the_qemu_kind(tmp_path: Path) -> None:
    camp = campaign(tmp_path, "0.1")
    with pytest.raises(InputError, match="vmio qemu add"):
        runner.preflight(camp, runner.Options())


def test_each_kind_answers_by_its_spec_kind(tmp_path: Path) -> None:
    camp = campaign(tmp_path)
    bare, vm = camp.targets
    assert (kind_of(bare).bare, kind_of(bare).vm, kind_of(bare).qemu(bare)) == (True, False, None)
    assert (kind_of(vm).bare, kind_of(vm).vm, kind_of(vm).qemu(vm)) == (False, True, vm)
    assert kind_of(bare).size(bare) == 4096 and kind_of(vm).size(vm) == 4096  # the file's own size
    config = kind_of(vm).qemu(vm)
    assert config is not None and kind_of(vm).label(vm) == f"; cache {config.cache}, aio {config.aio}"


def test_each_kind_is_its_traits_with_a_rig(tmp_path: Path) -> None:
    """What the report reads of a kind without its rig (``targets.traits``) is the kind's own answer."""
    assert set(TRAITS) == set(KINDS)
    for name, kind in KINDS.items():
        assert isinstance(kind, type(TRAITS[name])), name
    bare, vm = campaign(tmp_path).targets
    assert (vm_config(bare), vm_config(vm), vm_config(None)) == (None, vm, None)
    assert (traits_of(bare).bare, traits_of(vm).vm) == (kind_of(bare).bare, kind_of(vm).vm) == (True, True)


def test_the_targets_of_one_build_share_its_capabilities(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Probing a build runs QEMU seven times (1-2 s on a loaded host): once per run, not once per target."""
    calls: list[str] = []
    real = qemu.probe_caps

    def counted(binary: str, *args: Any, **kwargs: Any) -> QemuCaps:
        calls.append(binary)
        return real(binary, *args, **kwargs)

    monkeypatch.setattr(qemu, "probe_caps", counted)
    camp = campaign(tmp_path)
    other = dataclasses.replace(camp.targets[1], name="vm2", bus="virtio-scsi")
    env = runner.Options().target_env()
    first = qemu.resolved_caps(camp.targets[1], env)
    assert qemu.resolved_caps(other, env) is first
    build = builds.resolve(None)
    assert calls == [build.path]
    assert first.version_string == probe_caps(build.path, env=build.env).version_string  # QEMU's own answer


@pytest.mark.qemu
def test_the_guest_image_is_found_once_per_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """Finding the guest image asks apt-cache for the kernel's version (1-4 s on a loaded host): once a run."""
    calls: list[object] = []
    real = guest.build

    def counted(*args: Any, **kwargs: Any) -> guest.GuestImage:
        calls.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(guest, "build", counted)
    env = runner.Options().target_env()
    image = qemu.resolved_image(env)
    assert qemu.resolved_image(env) is image and len(calls) == 1
    assert image == guest.find()  # the image in the cache for today's inputs

"""``relocate apply`` checks the whole plan against the device before a byte moves: each invalid plan, applied
with a real loop device (filled with a known pattern) as the source, exits 2 with one sentence, leaves the
device's bytes as they were and writes no output, journal or map. A valid plan through the same path is
applied (so the assertions can fail)."""

from __future__ import annotations

import copy
import hashlib
import json
import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from vmio.cli import main
from vmio.relocate.apply import side_paths
from vmio.relocate.layout import Layout
from vmio.relocate.plan_io import plan_to_dict
from vmio.relocate.planner import build_plan

from conftest import disk_folder, need

E = 4096
DEVICE_BYTES = 4 << 20
pytestmark = pytest.mark.root


def _valid_plan() -> dict[str, Any]:
    layout = Layout.consecutive(["vm1", "vm2"], [256 * E, 256 * E], E, DEVICE_BYTES)
    hot = [np.arange(0, 256, 7), np.arange(3, 256, 11)]
    return plan_to_dict(build_plan(layout, hot, position="after", order="image"))


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(d: dict[str, Any]) -> None:
        *head, last = path.split(".")
        for key in head:
            d = d[int(key)] if isinstance(d, list) else d[key]
        if isinstance(d, list):
            d[int(last)] = value
        else:
            d[last] = value

    return change


class _Text:
    """A change to the plan's JSON text rather than to its decoded dict."""

    def __init__(self, old: str, new: str) -> None:
        self.old, self.new = old, new

    def __call__(self, text: str) -> str:
        assert self.old in text
        return text.replace(self.old, self.new)


def _overlap(d: dict[str, Any]) -> None:
    d["moves"][1][3] = d["moves"][0][3]


def _past_device(d: dict[str, Any]) -> None:
    d["disk_bytes"] = 64 << 20
    d["images"][1]["base_extent"] = 2000
    d["moves"] = []


def _dst_outside(d: dict[str, Any]) -> None:
    d["moves"][0][3] = DEVICE_BYTES // E


# (id, change to the valid plan's dict or the plan's whole text, fragment of the message)
CASES: list[tuple[str, Any, str]] = [
    ("image -1", _set("moves.0.0", -1), "moves[0] image = -1 is out of range"),
    ("image 2 of 2", _set("moves.0.0", 2), "moves[0] image = 2 is out of range"),
    ("extent_bytes 1000", _set("extent_bytes", 1000), "extent_bytes = 1000 is not a multiple of 512"),
    ("extent_bytes 0", _set("extent_bytes", 0), "extent_bytes = 0 is out of range"),
    ("extent_bytes 1e400", _Text('"extent_bytes": 4096', '"extent_bytes": 1e400'), "1e400 is too large"),
    ("extent_bytes 4096.0", _set("extent_bytes", 4096.0), "extent_bytes = 4096.0 is not a whole number"),
    ("extent_bytes '4096'", _set("extent_bytes", "4096"), "extent_bytes = '4096' is not a whole number"),
    ("extent_bytes 1536 on a 4096-byte-sector device", None, "logical block size"),
    ("destination 1e30", _set("moves.0.3", 1e30), "moves[0] to = 1e+30 is not a whole number"),
    ("destination 2**70", _set("moves.0.3", 1 << 70), "moves[0] to = 1180591620717411303424 is out of range"),
    ("destination past the disk", _dst_outside, "moves[0] to = 1024 is out of range"),
    ("overlapping destinations", _overlap, "same place on the disk"),
    ("no images", _set("images", []), "a plan needs a list of at least one image"),
    ("images overlap", _set("images.1.base_extent", 100), "images 'vm1' and 'vm2' overlap"),
    ("image past the device", _past_device, "has 4194304 bytes; the plan's images need at least 9240576"),
    ("moves not a list", _set("moves", {"a": 1}), "is not a list of [image, extent, from, to]"),
    ("move of 3 numbers", _set("moves.0", [0, 0, 0]), "is not [image, extent, from, to]"),
    ("5000-digit integer", _Text('"extent_bytes": 4096', '"extent_bytes": ' + "9" * 5000), "digits"),
    ("binary plan", b"\xff\xfe\x00PK\x03\x04" + bytes(range(256)), "not UTF-8 text"),
    ("deep JSON", "[" * 100_000 + "]" * 100_000, "nested more than 200 levels"),
]


def _sha(dev: str) -> str:
    with open(dev, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


@pytest.fixture(scope="module")
def devices(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[int, str]]:
    """Two loop devices holding the same random pattern: 512-byte and 4096-byte logical blocks."""
    if os.geteuid() != 0:
        pytest.skip("needs root for loop devices")
    need("losetup")
    with disk_folder() as folder:
        pattern = np.random.default_rng(25).bytes(DEVICE_BYTES)
        devs: dict[int, str] = {}
        try:
            for block in (512, 4096):
                image = folder / f"dev{block}.img"
                image.write_bytes(pattern)
                argv = ["losetup", "-f", "--show", "--sector-size", str(block), str(image)]
                devs[block] = subprocess.check_output(argv, text=True, timeout=30).strip()
            yield devs
        finally:
            for dev in devs.values():
                subprocess.run(["losetup", "-d", dev], check=False, timeout=30)


def _plan_file(folder: Path, change: Any) -> Path:
    path = folder / "plan.json"
    good = _valid_plan()
    if isinstance(change, _Text):
        path.write_text(change(json.dumps(good)))
    elif callable(change):
        data = copy.deepcopy(good)
        change(data)
        path.write_text(json.dumps(data))
    elif isinstance(change, bytes):
        path.write_bytes(change)
    elif isinstance(change, str):
        path.write_text(change)
    return path


@pytest.mark.parametrize(("change", "message"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_invalid_plan_moves_no_byte(
    change: Any, message: str, devices: dict[int, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dev = devices[512]
    if change is None:  # a plan valid for 512-byte sectors, on the device with 4096-byte ones
        dev = devices[4096]
        layout = Layout.consecutive(["vm1"], [256 * 1536], 1536, 1024 * 1536)
        good = plan_to_dict(build_plan(layout, [np.arange(0, 256, 5)], position="after", order="image"))
        plan = tmp_path / "plan.json"
        plan.write_text(json.dumps(good))
    else:
        plan = _plan_file(tmp_path, change)
    before = _sha(dev)
    out = tmp_path / "out.img"
    code = main(["relocate", "apply", str(plan), "--source", dev, "--to-image", str(out)])
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert message in err[0]
    assert code == 2
    assert _sha(dev) == before
    assert not out.exists() and not any(p.exists() for p in side_paths(out))


def test_the_valid_plan_is_applied_from_the_device(
    devices: dict[int, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plan = _plan_file(tmp_path, _Text("", ""))
    out = tmp_path / "out.img"
    assert main(["relocate", "apply", str(plan), "--source", devices[4096], "--to-image", str(out)]) == 0
    data = json.loads(plan.read_text())
    src = Path(devices[4096]).read_bytes()
    dst = out.read_bytes()
    assert data["moves"]
    for image, logical, old, new in data["moves"]:
        assert dst[new * E : (new + 1) * E] == src[old * E : (old + 1) * E], (image, logical)
    assert "extents copied and verified" in capsys.readouterr().out

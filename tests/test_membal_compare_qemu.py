"""``vmio membal run --compare equal,efficiency``: both policies live on two real VMs (TCG here), the same
workload and length, beside ``membal sim`` of the shipped case 1 scenario. TCG is noisy, so only directions
and signs: under ``efficiency`` memory moves toward the bursty VM, live and simulated; under ``equal`` it
does not move; the bursty VM hits more than the web VM."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from vmio.cli import main
from vmio.store import Store
from vmio.store.membal import run_row

from qemu_support import needs_qemu, session_guest

pytestmark = [pytest.mark.qemu, pytest.mark.fio, needs_qemu]
M = 1 << 20
SIM = Path(__file__).parents[1] / "examples" / "membal" / "case1-live-sim.toml"
# case 1 made small: "web" reads 400M uniformly, "burst" 400M with 91 % of its reads on the first 100M
CONFIG = f"""[run]
policy = "efficiency"
memory = "512M"
floor = "256M"
budget = "576M"
interval = "1.5s"
duration = "9s"
max_step = "32M"
psi_threshold = 0.9
sim = "{SIM}"

[[vm]]
load = "400M"
bs = "32k"

[[vm]]
load = "400M"
bs = "32k"
hot = "100M"
hot_share = 0.91
"""


def test_compare_runs_both_policies_live_beside_the_sim(
    tmp_path: Path,
    tmp_path_factory: pytest.TempPathFactory,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    guest = session_guest(tmp_path_factory)
    monkeypatch.setenv("XDG_CACHE_HOME", str(guest.path.parents[2]))  # the session's guest and accel choice
    config = tmp_path / "case1.toml"
    config.write_text(CONFIG)
    db = tmp_path / "m.db"
    code = main(
        ["membal", "run", "--config", str(config), "--compare", "equal,efficiency", "--db", str(db), "--json"]
    )
    out = capsys.readouterr()
    assert code == 0, out.err
    data = json.loads(out.out)
    assert data["policies"] == ["equal", "efficiency"] and data["vms"] == ["vmio-0/web", "vmio-1/burst"]
    live, sim = data["live"], data["sim"]
    web, burst = data["vms"]
    with Store(db) as store:  # both runs stored, as long as each other
        rows = [run_row(store, data["run_ids"][p]) for p in data["policies"]]
    assert [r["status"] for r in rows] == ["done", "done"]  # type: ignore[index]
    assert [r["policy"] for r in rows] == data["policies"] and data["duration"] == 9.0  # type: ignore[index]
    for side in (live, sim):  # equal holds; efficiency moves memory from the web VM to the bursty one
        assert side["equal"]["vms"][web]["move"] == 0 == side["equal"]["vms"][burst]["move"]
        assert side["efficiency"]["vms"][burst]["move"] > 0 > side["efficiency"]["vms"][web]["move"]
    for p in data["policies"]:  # the bursty VM's hot part makes it hit more, live and simulated
        assert live[p]["vms"][burst]["hit_ratio"] > live[p]["vms"][web]["hit_ratio"] > 0
        assert sim[p]["vms"][burst]["hit_ratio"] > sim[p]["vms"][web]["hit_ratio"] > 0
    ratios = data["vs_baseline"]
    assert ratios["live"]["equal"] == 1.0 == ratios["sim"]["equal"]
    assert ratios["sim"]["efficiency"] > 1.0  # the sim is deterministic; live ratio only printed
    assert isinstance(ratios["live"]["efficiency"], float)

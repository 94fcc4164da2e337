"""A named Ceph client (``--client NAME --keyring PATH``) on the suite's cephx cluster (``live_cluster``).

Referees: the cluster's own cephx (a key it did not issue is refused; a client whose OSD caps name another
pool cannot do I/O on this one, so a profile that works did its I/O as the client named) and fio's own
output.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
from pathlib import Path

import pytest

from vmio.cli import main
from vmio.dstore import cluster
from vmio.system.cephclient import CephClient

NAME = f"vmiot{os.getpid()}"


def _keyring(ref: cluster.ClusterRef, folder: Path, name: str, osd_caps: str, *mgr: str) -> Path:
    """``ceph auth get-or-create client.NAME`` into a 0600 keyring in a 0700 folder (``mgr``: its mgr caps,
    which ``dstore status`` needs to read the PG states)."""
    folder.mkdir(mode=0o700, exist_ok=True)
    path = folder / f"{name}.keyring"
    argv = ["ceph", "-c", str(ref.conf), "auth", "get-or-create", f"client.{name}", "mon", "profile rbd",
            "osd", osd_caps, *mgr, "-o", str(path)]  # fmt: skip
    subprocess.run(argv, check=True, timeout=60, capture_output=True)
    path.chmod(0o600)
    return path


def _profile(ref: cluster.ClusterRef, name: str, keyring: Path, *extra: str) -> int:
    argv = ["dstore", "profile", "--dir", str(ref.root), "--client", name, "--keyring", str(keyring),
            "--bs", "16k", "--runtime", "1s", "--ramp", "0s", *extra]  # fmt: skip
    return main(argv)


@pytest.mark.ceph
@pytest.mark.fio
@pytest.mark.slow
def test_a_second_client_profiles_with_its_own_keyring(
    live_cluster: cluster.ClusterRef, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    keys = tmp_path / "keys"
    keyring = _keyring(live_cluster, keys, NAME, f"profile rbd pool={live_cluster.pool}", "mgr", "allow r")
    assert _profile(live_cluster, NAME, keyring, "--json") == 0
    out = json.loads(capsys.readouterr().out)
    (point,) = out["points"]
    assert point["bs"] == 16384 and point["iops"] > 0
    assert main(["dstore", "status", "--dir", str(live_cluster.root), "--client", NAME, "--keyring",
                 str(keyring), "--json"]) == 0  # fmt: skip
    assert json.loads(capsys.readouterr().out)["pool"] == live_cluster.pool

    # the I/O really went as that client: one whose OSD caps name another pool gets none done
    other = _keyring(live_cluster, keys, f"{NAME}x", "profile rbd pool=elsewhere")
    assert _profile(live_cluster, f"{NAME}x", other) == 1
    capsys.readouterr()

    # a key the cluster did not issue: one sentence, exit 2, nothing measured
    wrong = keys / "wrong.keyring"
    subprocess.run(["ceph-authtool", "--create-keyring", str(wrong), "--gen-key", "-n", f"client.{NAME}"],
                   check=True, timeout=30, capture_output=True)  # fmt: skip
    assert _profile(live_cluster, NAME, wrong, "--json") == 2
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert captured.out == "" and err.count("\n") == 0
    assert f"client.{NAME}" in err and str(wrong) in err
    assert main(["dstore", "status", "--dir", str(live_cluster.root), "--client", NAME, "--keyring",
                 str(keys / "missing")]) == 2  # fmt: skip
    assert "is not a file" in capsys.readouterr().err

    # a campaign's kind = "rbd" target as that client: done with its keyring, one sentence with a wrong one
    for key, code in ((keyring, 0), (wrong, 2)):
        spec = tmp_path / "rbd.toml"
        spec.write_text(
            f'[campaign]\nname = "c"\n[[target]]\nname = "ceph"\nkind = "rbd"\nconf = "{live_cluster.conf}"\n'
            f'pool = "{live_cluster.pool}"\nimage = "{live_cluster.image}"\nclientname = "{NAME}"\n'
            f'keyring = "{key}"\n[[workload]]\nname = "r"\nrw = "randread"\nbs = "4k"\nruntime = "1s"\n'
        )
        # a store each: the wrong key's run is not a re-run of the stored campaign with a changed keyring
        assert main(["run", str(spec), "--db", str(tmp_path / f"c{code}.db")]) == code
        err = capsys.readouterr().err
        assert code == 0 or (f"client.{NAME}" in err and str(wrong) in err and "Traceback" not in err)
    con = sqlite3.connect(tmp_path / "c0.db")
    (job_file,) = con.execute("SELECT job_file FROM run").fetchone()
    assert f"clientname={NAME}" in job_file


def test_the_per_run_conf_names_the_keyring(tmp_path: Path) -> None:
    conf = tmp_path / "ceph.conf"
    conf.write_text(
        "[global]\nfsid = x\nkeyring = /admin.keyring\n[client.bob]\nlog file = /dev/null\n[osd]\n"
    )
    text = CephClient("client.bob", Path("/k/bob.keyring")).conf_text(conf)
    assert text.splitlines()[3:6] == ["[client.bob]", "log file = /dev/null", "keyring = /k/bob.keyring"]
    text = CephClient("ann", Path("/k/ann")).conf_text(conf)
    assert text.endswith("[osd]\n\n[client.ann]\nkeyring = /k/ann\n")
    assert CephClient("ann").args() == ("--id", "ann")


def test_rbd_backings_connect_as_the_named_client(tmp_path: Path) -> None:
    """QEMU's rbd driver gets ``user=`` the client; the keys go only with rbd: backings."""
    from vmio.errors import SpecError
    from vmio.qemu.argv import blockdev_args
    from vmio.qemu.vmconfig import Disk, VMConfig
    from vmio.spec import loads_spec

    disk = Disk(Path("vmio/img"), rbd_conf=tmp_path / "c.conf", rbd_user="bench")
    args = blockdev_args(0, disk, VMConfig(index=0, disks=(disk,)))
    proto = json.loads(args[1])
    assert (proto["driver"], proto["user"], proto["conf"]) == ("rbd", "bench", str(tmp_path / "c.conf"))
    base = '[campaign]\nname = "c"\n[[workload]]\nname = "w"\nrw = "read"\nbs = "4k"\n'
    spec = loads_spec(base + '[[target]]\nname = "t"\nkind = "qemu"\nbacking = ["rbd:p/i"]\nconf = "/c"\n'
                      'clientname = "bench"\nkeyring = "/k"\n')  # fmt: skip
    assert (spec.targets[0].clientname, spec.targets[0].keyring) == ("bench", "/k")
    with pytest.raises(SpecError, match="keyring is for rbd:POOL/IMAGE backings"):
        loads_spec(base + '[[target]]\nname = "t"\nkind = "qemu"\nbacking = ["/d.img"]\nkeyring = "/k"\n')

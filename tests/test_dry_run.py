from pathlib import Path

import pytest

from vmio.cli import main

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def test_dry_run_prints_every_point_with_its_job_file(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(EXAMPLES / "demo.toml"), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("campaign 'demo': 42 points\n")  # 7 targets x 2 workloads x 3 offered loads
    assert out.count("\n## ") == 42 and out.count("[measure]") == 42
    # hitachi-nvme-2016's "1fio/vm x N": 2000 IOPS offered over 2 VMs of one fio each
    vms = out.split("## 1fio-per-vm-x2/4k-randread/bs=4k/offered=2000/load=0/rep=1")[1].split("## ")[0]
    assert "in each of 2 VM(s)" in vms and "filename=/dev/vda" in vms and "numjobs=1" in vms
    assert "rate_iops=1000" in vms
    # "N fio/vm": both fio in one VM, 2000 over 2 jobs
    one = out.split("## 2fio-1vm/4k-randread/bs=4k/offered=2000/load=0/rep=1")[1].split("## ")[0]
    assert "in each of 1 VM(s)" in one and "numjobs=2" in one and "rate_iops=1000" in one
    bare = out.split("## bare/4k-randwrite/bs=4k/offered=max/load=0/rep=1")[1].split("## ")[0]
    assert "filename=/var/lib/vmio/demo.img" in bare and "numjobs=2" in bare and "rate_iops" not in bare


def test_bad_spec_is_one_error_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "bad.toml"
    spec.write_text(
        '[campaign]\nname = "x"\n[[target]]\nname = "t"\npath = "/x"\n[[workload]]\nname = "w"\nrw = "read"\nbs = "3000"\n'
    )
    assert main(["run", str(spec), "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{spec}:9: workload[0].bs = '3000'" in err and "Traceback" not in err


@pytest.mark.parametrize(
    ("value", "message"), [("50ms", "below the 100ms floor"), ("1x", "is not a duration")]
)
def test_interval_is_checked(value: str, message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(EXAMPLES / "quick.toml"), "--interval", value, "--dry-run"]) == 2
    assert message in capsys.readouterr().err

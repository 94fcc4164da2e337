from pathlib import Path

import pytest

from vmio.cli import main

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def test_dry_run_prints_every_point_with_its_job_file(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(EXAMPLES / "demo.toml"), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("campaign 'demo': 40 points\n")
    assert out.count("\n## ") == 40 and out.count("[measure]") == 40
    scsi = out.split("## virtio-scsi/4k-randread/bs=4096/offered=1000/load=0/rep=1")[1].split("## ")[0]
    assert "filename=/dev/sda" in scsi and "numjobs=2" in scsi and "rate_iops=500" in scsi  # 1000 over 2 jobs
    nvme = out.split("## nvme/4k-randwrite/bs=4096/offered=max/load=0/rep=2")[1].split("## ")[0]
    assert "filename=/dev/nvme0n1" in nvme and "rate_iops" not in nvme


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

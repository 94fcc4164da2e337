"""A person's own fio job file as the workload: fio's own ``examples/`` job files (GPL-2.0, test data only,
see tests/data/fio-examples/README.md), loaded, checked, and run on a real file with real fio."""

from __future__ import annotations

import configparser
import json
import re
from pathlib import Path

import pytest

from vmio.cli import main
from vmio.errors import SpecError
from vmio.spec import loads_spec

EXAMPLES = Path(__file__).parent / "data" / "fio-examples"


def fio_sections(path: Path) -> configparser.ConfigParser:
    """The job file as Python's own INI reader sees it (the reference, not vmio's parser)."""
    ini = configparser.ConfigParser(
        allow_no_value=True, default_section="global", comment_prefixes=("#", ";")
    )
    ini.read(path)
    return ini


def spec_text(job_file: Path, target: Path, extra: str = "") -> str:
    return (
        f'[campaign]\nname = "mine"\n[[target]]\nname = "file"\npath = "{target}"\nsize = "8M"\n'
        f'[[workload]]\nfio = "{job_file}"\nruntime = "1s"\n{extra}'
    )


def test_sections_become_workloads_with_the_files_pattern(tmp_path: Path) -> None:
    job = EXAMPLES / "ssd-test.fio"
    camp = loads_spec(spec_text(job, tmp_path / "t"))
    ini = fio_sections(job)
    assert [w.name for w in camp.workloads] == [f"ssd-test.fio:{s}" for s in ini.sections()]
    for w, section in zip(camp.workloads, ini.sections(), strict=True):
        s = ini[section]
        assert (w.rw, w.iodepth, w.ioengine, w.direct) == (
            s["rw"],
            int(s["iodepth"]),
            s["ioengine"],
            s["direct"] == "1",
        )
        assert w.bs == (4096,) and w.runtime == 1.0  # bs=4k from the file; runtime from vmio
        replaced = {r.split(" ")[0].split("=")[0] for r in w.fio_replaced}
        assert replaced == {"size", "runtime", "directory", "filename"}
        line = {r.split("=")[0]: r for r in w.fio_replaced}["filename"]
        assert line.endswith("ssd-test.fio:21)")
        text = job.read_text().splitlines()
        assert text[21 - 1] == "filename=ssd.test.file"


def test_mixed_workload_from_rwmixread_and_numjobs(tmp_path: Path) -> None:
    (w,) = loads_spec(spec_text(EXAMPLES / "fio-rand-RW.fio", tmp_path / "t")).workloads
    s = fio_sections(EXAMPLES / "fio-rand-RW.fio")["file1"]
    assert (w.rw, w.rwmixread, w.numjobs, w.iodepth, w.direct) == (
        s["rw"],
        int(s["rwmixread"]),
        int(s["numjobs"]),
        int(s["iodepth"]),
        s["direct"] == "1",
    )


def test_unsupported_options_named_in_one_error_with_file_and_line(tmp_path: Path) -> None:
    with pytest.raises(SpecError) as err:
        loads_spec(spec_text(EXAMPLES / "null.fio", tmp_path / "t"))
    assert "null.fio:3: gtod_reduce=1" in str(err.value)
    mine = tmp_path / "mine.fio"
    mine.write_text("[global]\nbs=4k\nexec_prerun=drop-caches\n\n[a]\nrw=randread\nioengine=libaio\n"
                    "[b]\nrw=trim\nunified_rw_reporting=1\n")  # fmt: skip
    with pytest.raises(SpecError) as err:
        loads_spec(spec_text(mine, tmp_path / "t"))
    message = str(err.value)
    assert f"{mine}:3: exec_prerun=drop-caches (in [global])" in message
    assert message.count("exec_prerun") == 1  # a [global] option is named once, not per section
    assert f"{mine}:9: rw=trim" in message and f"{mine}:10: unified_rw_reporting=1 (in [b])" in message
    assert "ioengine" not in message and "bs=4k" not in message


def test_cli_error_is_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(
        [
            "run",
            str(EXAMPLES / "steadystate.fio"),
            "--target",
            str(tmp_path / "t"),
            "--db",
            str(tmp_path / "d.db"),
        ]
    )
    err = capsys.readouterr().err
    assert rc == 2 and "steadystate.fio:9: threads=1 (in [global])" in err and "Traceback" not in err
    rc = main(["run", str(EXAMPLES / "ssd-test.fio"), "--db", str(tmp_path / "d.db")])
    assert rc == 2 and "--target PATH" in capsys.readouterr().err


def test_run_job_file_on_one_target(
    tmp_path: Path, scratch: Path, fio: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """vmio run ssd-test.fio --target FILE: four sections, one after another, each as the file says."""
    db, target = tmp_path / "v.db", scratch / "target"
    job = EXAMPLES / "ssd-test.fio"
    rc = main(["run", str(job), "--target", str(target), "--size", "8M", "--runtime", "1s", "--db", str(db)])
    assert rc == 0, capsys.readouterr()
    capsys.readouterr()
    assert main(["show", "ssd-test", "--json", "--db", str(db)]) == 0
    rows = json.loads(capsys.readouterr().out)
    ini = fio_sections(job)
    assert [r["workload"] for r in rows] == [f"ssd-test.fio:{s}" for s in ini.sections()]
    for r, section in zip(rows, ini.sections(), strict=True):
        assert r["status"] == "done"
        assert r["fio_job"]["section"] == section and r["fio_job"]["file"] == str(job.resolve())
        assert any(x.startswith("filename=ssd.test.file") for x in r["fio_job"]["replaced"])
        reads = ini[section]["rw"] in ("read", "randread")
        assert (r["read_ops"] > 0, r["write_ops"] > 0) == (reads, not reads)  # fio's own counts
    from vmio.store import Store

    with Store(db) as store:
        runs = store.runs("ssd-test")
        assert [run["started"] for run in runs] == sorted(run["started"] for run in runs)  # one after another
        text = runs[0]["job_file"]
    assert re.search(r"^iodepth=4$", text, re.M) and re.search(r"^ioengine=libaio$", text, re.M)
    # fio opened the target through vmio's descriptor of it (docs/security.md, part 4), named in a comment
    assert re.search(rf"^; (/proc/\d+/fd/\d+) is {re.escape(str(target))}, checked", text, re.M)
    assert "ssd.test.file" not in text.split("[global]")[1]
    assert "; replaced by vmio: filename=ssd.test.file" in text

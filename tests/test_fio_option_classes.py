"""Every option of a person's own fio job file is run as given, replaced by vmio and named, or refused with the
class of its reason, as the table in docs/fio-files.md says. The job files here are written for these tests
in the shape of fio's own ``examples/`` (a tiobench-like sweep with inline comments, latency-target and
flow-control jobs, a network job, file-creation jobs, a steady-state job of a later fio); fio's files are
GPL and not copied. ``vmio run FILE --dry-run`` is checked option by option against the docs' table, and
the installed fio (``fio --parse-only``) is the referee of how the file reads."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from vmio.cli import main
from vmio.spec import fio_refusals, fiofile

from conftest import need

DOC = Path(__file__).parent.parent / "docs" / "fio-files.md"


def doc_table() -> dict[str, str]:
    """Option → its class, as docs/fio-files.md's table gives it."""
    out = {}
    for line in DOC.read_text().splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == 3 and cells[0].startswith(("run as given", "replaced", "refused")):
            for name in re.findall(r"`([^`]+)`", cells[2]):
                out[name] = cells[0]
    return out


def test_the_docs_table_is_vmios_table() -> None:
    table = doc_table()
    assert {k for k, c in table.items() if c.startswith("run as given")} == fiofile.KEPT
    assert {k for k, c in table.items() if c.startswith("run as given: tunes")} == fiofile.TUNING
    assert {k for k, c in table.items() if c.startswith("replaced")} == fiofile.REPLACED
    assert {k: c.removeprefix("refused: ") for k, c in table.items() if c.startswith("refused")} == (
        fio_refusals.REFUSED
    )


def dry_run(job: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(
        ["run", str(job), "--target", str(tmp_path / "t.img"), "--dry-run", "--db", str(tmp_path / "d.db")]
    )
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


def options(text: str) -> list[tuple[str, str, str | None]]:
    """(section, key, value) of each option line, comments cut as fio cuts them (the file is written so
    that a plain reading of it is unambiguous)."""
    section, out = "", []
    for raw in text.splitlines():
        line = re.split(r"[;#]", raw, maxsplit=1)[0].strip()
        if line.startswith("["):
            section = line.strip("[]")
        elif line:
            key, sep, value = line.partition("=")
            out.append((section, key.strip(), value.strip() if sep else None))
    return out


def parse_only(job: Path) -> subprocess.CompletedProcess[str]:
    need("fio")
    return subprocess.run(["fio", "--parse-only", str(job)], capture_output=True, text=True, timeout=30)


TIOBENCH_SHAPED = """\
; sequential and random writes and reads, four threads each, one after another
[global]
direct=1
size=64m
bs=4k\t\t# the block size
runtime=60
numjobs=4\t; 4 simultaneous threads for each job

[f-write] ; first
rw=write

[r-write]
stonewall
rw=randwrite

[f-read]
stonewall
rw=read

[r-read]
stonewall
rw=randread
"""

TUNED = """\
; bounded and flow-controlled random reads
[global]
ioengine=libaio
direct=1
rw=randread
bs=4k
iodepth=32
latency_target=2ms
latency_window=5s
latency_percentile=99
exitall
continue_on_error=all
log_prio=1
rate_min=1k

[heavy]
flow=2

[light]
stonewall
flow=1
"""

REFUSED = {
    "measurement": "[global]\nrw=randread\nunified_rw_reporting=1\ngtod_reduce=1\n[a]\ndisable_lat=1\n",
    "network": "[global]\nioengine=net\nhostname=localhost\nport=8765\nprotocol=tcp\n[receiver]\nrw=read\nlisten\n",
    "files": "[global]\nnrfiles=100\nopenfiles=10\n[create]\nioengine=filecreate\ncreate_only=1\nunlink=1\n",
    "zoned": "[zbd]\nrw=write\nzonemode=zbd\nzonesize=64m\nmax_open_zones=4\n",
    "host": "[global]\nexec_prerun=true\nioscheduler=none\n[a]\nrw=read\n",
    "later-fio": "[global]\nrw=randread\nsteadystate=iops_slope:0.3%\nsteadystate_duration=60s\n"
    "steadystate_check_interval=10s\n[ss]\nbs=4k\n",
}


def test_options_that_run_are_in_the_job_vmio_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    table = doc_table()
    for name, text in (("tiobench-shaped.fio", TIOBENCH_SHAPED), ("tuned.fio", TUNED)):
        job = tmp_path / name
        job.write_text(text)
        assert parse_only(job).returncode == 0  # fio itself reads the file, comments and all
        code, out, err = dry_run(job, tmp_path, capsys)
        assert code == 0, err
        jobs = dict(re.findall(r"^## \S+?:([^/]+)/.*?\n(.*?)(?=^## |\Z)", out, re.M | re.S))
        for section, key, value in options(text):
            sections = [section] if section != "global" else list(jobs)
            for s in sections:
                shown = jobs[s]
                if key in fiofile.TIMING:  # the file's own time runs unless vmio is given one
                    assert f"{key}={int(float(value or 0) * 1000)}ms" in shown, (key, s)
                elif table[key] == "replaced by vmio and named":
                    assert f"; replaced by vmio: {key}={value} ({job}:" in shown, (key, s)
                elif (
                    key in fiofile.MAPPED
                ):  # read into the workload's own fields, then written as fio reads them
                    assert re.search(rf"^{key}=", shown, re.M), (key, s)
                elif key not in fiofile.ORDERING:
                    assert table[key].startswith("run as given"), key
                    assert re.search(rf"^{key}={re.escape(value or '1')}$", shown, re.M), (key, s)
        if name == "tiobench-shaped.fio":  # the inline comments are cut as fio cuts them
            assert all(re.search(r"^numjobs=4$", j, re.M) and "bs=4096" in j for j in jobs.values())


@pytest.mark.parametrize("name", list(REFUSED))
def test_refused_options_are_named_with_their_class(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    job = tmp_path / f"{name}.fio"
    job.write_text(REFUSED[name])
    code, _, err = dry_run(job, tmp_path, capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1
    table = doc_table()
    for section, key, value in options(REFUSED[name]):
        text = key if value is None else f"{key}={value}"
        if key == "ioengine":
            reason = fio_refusals.engine_reason(str(value))
            assert re.search(rf"{text} \(in \[[^]]+\]\): {re.escape(reason)}", err), (text, err)
            continue
        elif key in table and table[key].startswith("refused"):
            reason = table[key].removeprefix("refused: ")
        elif key in table:
            assert text not in err  # run or replaced: not named among the refusals
            continue
        else:  # in no row of the table: the installed fio decides
            said = subprocess.run(["fio", f"--cmdhelp={key}"], capture_output=True, text=True, timeout=30)
            known = f"No such command: {key}" not in said.stdout + said.stderr
            reason = fio_refusals.UNCLASSED if known else fio_refusals.UNKNOWN
            text = text if known else key  # an option fio does not know: its value is not shown (security.md)
        assert f"{text} (in [{section}]): {reason}" in err, (text, err)
    if name == "later-fio":  # fio 3.33 itself does not know it
        need("fio")
        assert "steadystate_check_interval (in [global]): unknown to the installed fio" in err
        assert parse_only(job).returncode != 0


def test_aliases_are_classed_as_the_option_they_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    job = tmp_path / "aliases.fio"
    job.write_text(TIOBENCH_SHAPED.replace("runtime=60", "timeout=60") + "[bounded]\nrw=read\nratemin=1k\n")
    code, out, err = dry_run(job, tmp_path, capsys)
    assert code == 0, err
    assert f"; replaced by vmio: timeout=60 ({job}:" in out or "runtime=60" in out
    assert re.search(r"^(rate_min|ratemin)=1k$", out, re.M)

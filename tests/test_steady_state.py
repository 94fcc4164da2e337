"""Steady state (fio's steadystate criterion; the workload's runtime is the maximum) and SNIA-style
preconditioning, run with real fio on a real file; the store migrates from schema 3."""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path

import pytest

from vmio.cli import main
from vmio.errors import SpecError
from vmio.spec import loads_spec
from vmio.store import Store
from vmio.store.schema import SCHEMA_VERSION

from conftest import store_from_sql

FIXTURE = Path(__file__).parent / "data" / "stores" / "schema-v3-run.sql"


def spec(target: Path, workload: str) -> str:
    return (
        f'[campaign]\nname = "ss"\n[[target]]\nname = "file"\npath = "{target}"\nsize = "8M"\n'
        f'[[workload]]\nname = "w"\nbs = "4k"\nioengine = "psync"\n{workload}'
    )


def run_rows(tmp_path: Path, text: str, capsys: pytest.CaptureFixture[str]) -> list[dict[str, object]]:
    path, db = tmp_path / "spec.toml", tmp_path / "v.db"
    path.write_text(text)
    assert main(["run", str(path), "--db", str(db)]) == 0, capsys.readouterr()
    capsys.readouterr()
    assert main(["show", "ss", "--json", "--db", str(db)]) == 0
    rows: list[dict[str, object]] = json.loads(capsys.readouterr().out)
    return rows


def test_reached_on_a_rate_limited_job(
    tmp_path: Path, scratch: Path, fio: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """200 IOPS offered: the IOPS are flat, so a 2 s window holds well before the 8 s maximum."""
    text = spec(
        scratch / "t", 'rw = "randread"\noffered_iops = 200\nruntime = "8s"\nsteady = "iops_slope:5%:2s"\n'
    )
    (row,) = run_rows(tmp_path, text, capsys)
    steady = row["steady"]
    assert isinstance(steady, dict)
    assert steady["reached"] is True and steady["criterion"] == "iops_slope:5%:2s"
    assert (
        1.0 <= steady["at_s"] < 8.0
    )  # fio samples once a second from the start: a 2 s window fills by ~1.9 s
    ops = row["read_ops"]
    assert isinstance(ops, int)
    assert ops == pytest.approx(200 * steady["at_s"], rel=0.15)  # fio stopped when it held, not at 8 s


def test_not_reached_on_a_bounded_runtime(
    tmp_path: Path, scratch: Path, fio: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A 0.001 % bound on unthrottled IOPS never holds: fio runs the whole 3 s and says so."""
    text = spec(scratch / "t", 'rw = "randread"\nruntime = "3s"\nsteady = "iops:0.001%:2s"\n')
    (row,) = run_rows(tmp_path, text, capsys)
    assert row["steady"] == {"criterion": "iops:0.001%:2s", "reached": False, "at_s": None, "jobs": 1}
    capsys.readouterr()
    assert main(["show", "ss", "--db", str(tmp_path / "v.db")]) == 0
    # the table; under it, on a busy machine, a note that other work shared the host
    head, line, *notes = capsys.readouterr().out.splitlines()
    assert head.split()[-1] == "steady" and line.split()[-1] == "no"
    assert all(n.startswith("note: other work shared the host") for n in notes), notes


def test_precondition_fills_then_writes_twice_the_size(
    tmp_path: Path, scratch: Path, fio: str, capsys: pytest.CaptureFixture[str]
) -> None:
    text = spec(scratch / "t", 'rw = "randwrite"\nruntime = "1s"\nprecondition = true\nbs = ["4k", "8k"]\n')
    text = text.replace('bs = "4k"\n', "")
    first, second = run_rows(tmp_path, text, capsys)
    pre = first["precondition"]
    assert isinstance(pre, dict)
    size = 8 << 20
    assert (pre["size"], pre["fill_bytes"], pre["random_bytes"]) == (size, size, 2 * size)  # fio's I/O counts
    assert "precondition" not in second  # once, before the target's first point


def test_bad_criteria_name_the_line(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match=r"<spec>:\d+: workload\[0\]\.steady = 'iops_slope:2%'"):
        loads_spec(spec(tmp_path / "t", 'rw = "read"\nsteady = "iops_slope:2%"\n'))
    with pytest.raises(SpecError, match="longer than runtime"):
        loads_spec(spec(tmp_path / "t", 'rw = "read"\nruntime = "5s"\nsteady = "iops:2%:10s"\n'))
    with pytest.raises(SpecError, match="precondition = true is for write workloads"):
        loads_spec(spec(tmp_path / "t", 'rw = "randread"\nprecondition = true\n'))


def test_schema_3_store_migrates(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A store vmio wrote at schema 3 gains the new columns; its rows read as before (no new keys)."""
    db = store_from_sql(FIXTURE.name, tmp_path / "v3.db")
    with Store(db) as store:
        assert store.schema_version == SCHEMA_VERSION  # migrated to the newest
    assert main(["show", "v3", "--json", "--db", str(db)]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert row["status"] == "done" and row["read_ops"] > 0
    assert not {"steady", "precondition", "fio_job"} & set(row)


class _SteadyTable(HTMLParser):
    """The report's #steady-state table: per point, each cell's stored value (``data-value``) and text."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: dict[str, dict[str, tuple[object, str]]] = {}
        self.toc: list[str] = []
        self._in_section = False
        self._point: str | None = None
        self._cell: tuple[str, object] | None = None
        self._text = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "a" and a.get("href", "").startswith("#"):
            self.toc.append(str(a["href"]))
        if tag == "section":
            self._in_section = a.get("id") == "steady-state"
        if self._in_section and tag == "tr" and "data-point" in a:
            self._point = str(a["data-point"])
            self.rows[self._point] = {}
        if self._point and tag == "td":
            self._cell, self._text = (str(a["data-key"]), json.loads(str(a["data-value"]))), ""

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._text += data

    def handle_endtag(self, tag: str) -> None:
        if tag == "td" and self._cell is not None and self._point is not None:
            key, value = self._cell
            self.rows[self._point][key] = (value, self._text)
            self._cell = None
        if tag == "tr":
            self._point = None
        if tag == "section":
            self._in_section = False


def test_the_report_shows_steady_state_and_preconditioning_per_point(
    tmp_path: Path, scratch: Path, fio: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A campaign whose write workload preconditions its file and never holds a 0.001 % bound, and whose
    rate-limited read holds a 5 % slope: the page's table says per point what the store's rows say."""
    text = (
        f'[campaign]\nname = "ss"\n[[target]]\nname = "file"\npath = "{scratch / "t"}"\nsize = "8M"\n'
        '[[workload]]\nname = "w"\nrw = "randwrite"\nbs = "4k"\nioengine = "psync"\nruntime = "3s"\n'
        'precondition = true\nsteady = "iops:0.001%:2s"\n'
        '[[workload]]\nname = "r"\nrw = "randread"\nbs = "4k"\nioengine = "psync"\noffered_iops = 200\n'
        'runtime = "6s"\nsteady = "iops_slope:5%:2s"\n'
    )
    rows = {str(r["point"]): r for r in run_rows(tmp_path, text, capsys)}
    page = tmp_path / "report.html"
    assert main(["report", "ss", "--db", str(tmp_path / "v.db"), "-o", str(page)]) == 0
    table = _SteadyTable()
    table.feed(page.read_text())
    assert "#steady-state" in table.toc
    assert set(table.rows) == set(rows) and len(rows) == 2
    for point, row in rows.items():
        cells = table.rows[point]
        steady = row["steady"]
        assert isinstance(steady, dict)
        for key in ("criterion", "reached", "at_s", "jobs"):
            assert cells[key][0] == steady[key], (point, key)
        assert cells["reached"][1] == ("yes" if steady["reached"] else "no")
        pre = row.get("precondition")
        for key in ("size", "fill_bytes", "random_bytes", "seconds"):
            assert cells[key][0] == (pre[key] if isinstance(pre, dict) else None), (point, key)
    # and what the page shows is what fio did: the slope held on 200 IOPS offered, the 0.001 % bound never;
    # the fill wrote the file's 8 MiB once and the random writes twice over, before the first point only
    w, r = (next(p for p, row in rows.items() if row["workload"] == name) for name in ("w", "r"))
    assert table.rows[w]["reached"] == (False, "no") and table.rows[w]["at_s"] == (None, "-")
    assert table.rows[r]["reached"][0] is True and 1.0 <= float(table.rows[r]["at_s"][0]) < 6.0  # type: ignore[arg-type]
    pre_rows = [p for p in rows if table.rows[p]["size"][0] is not None]
    assert len(pre_rows) == 1
    cells = table.rows[pre_rows[0]]
    assert (cells["size"][0], cells["fill_bytes"][0], cells["random_bytes"][0]) == (
        8 << 20,
        8 << 20,
        16 << 20,
    )
    assert cells["fill_bytes"][1] == "8m" and cells["random_bytes"][1] == "16m"

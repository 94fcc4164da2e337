"""On a terminal, vmio run's bar and the show/compare tables come from rich (a forced-terminal Console);
off a terminal the text is the plain text the golden tests hold."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from rich.console import Console

from vmio import spec
from vmio.campaign import runner
from vmio.cli import main, terminal
from vmio.cli.campaign import ProgressPrinter, format_table
from vmio.store import Store
from vmio.store import rows as summary

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def forced() -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, force_terminal=True, width=220, color_system="standard"), out


@pytest.fixture
def campaign(tmp_path: Path, scratch: Path, fio: str) -> tuple[Path, str, io.StringIO]:
    """Two file targets, one 1 s point each, run with the rich bar; the store and what the bar drew."""
    text = (
        '[campaign]\nname = "t"\n'
        f'[[target]]\nname = "a"\npath = "{scratch / "a"}"\nsize = "8M"\n'
        f'[[target]]\nname = "b"\npath = "{scratch / "b"}"\nsize = "8M"\n'
        '[[workload]]\nname = "rr"\nrw = "randread"\nruntime = "1s"\n'
    )
    console, drawn = forced()
    db = tmp_path / "v.db"
    with Store(db) as store:
        bar = ProgressPrinter(io.StringIO(), console)
        outcome = runner.run(spec.loads_spec(text), text, store, runner.Options(), bar)
        bar.close()
    assert outcome.done == 2
    return db, text, drawn


def test_progress_bar_is_rich(campaign: tuple[Path, str, io.StringIO]) -> None:
    db, _, drawn = campaign
    text = ANSI.sub("", drawn.getvalue())
    assert "\x1b[" in drawn.getvalue() and "━" in text  # rich's bar, drawn with escape codes
    last = text.replace("\r", "\n").strip().splitlines()[-1]
    assert "2/2" in last and "b/rr/bs=4k" in last and re.search(r"0:00:0\d", last)
    with Store(db) as store:
        rows = summary.point_rows(store, "t")
    iops = re.search(r"last ([\d,]+) IOPS", last)
    assert iops is not None
    assert int(iops.group(1).replace(",", "")) == round(rows[-1].read_iops)  # fio's figure, stored


def test_show_and_compare_tables_are_rich_on_a_terminal(
    campaign: tuple[Path, str, io.StringIO],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    db = campaign[0]
    assert main(["show", "t", "--db", str(db)]) == 0  # not a terminal: the plain table
    plain = capsys.readouterr().out
    with Store(db) as store:
        rows = summary.point_rows(store, "t")
        note = summary.shared_host_note(rows)  # other work on this host: said under the table
        assert plain == format_table(rows) + (f"note: {note}\n" if note else "")
    assert main(["compare", "t", "--baseline", "a", "--db", str(db)]) == 0
    plain_compare = capsys.readouterr().out

    console, out = forced()
    monkeypatch.setattr(terminal, "console_for", lambda stream: console)
    assert main(["show", "t", "--db", str(db)]) == 0
    assert main(["compare", "t", "--baseline", "a", "--db", str(db)]) == 0
    drawn = out.getvalue()
    assert "\x1b[1m" in drawn  # bold heads: rich on a terminal
    text = ANSI.sub("", drawn)
    rows_of = [line for line in plain.splitlines()[1:] if not line.startswith("note: ")]  # the note: below it
    for line in rows_of + plain_compare.splitlines()[2:]:  # every cell, in order, in one row
        cells = line.split("  ")
        cells = [c.strip() for c in cells if c.strip()]
        assert re.search(r"\s+".join(re.escape(c) for c in cells), text), line
    assert plain_compare.splitlines()[0] in text  # the title as plain text above the table

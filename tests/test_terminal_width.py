"""On a real pseudo-terminal of 80 and 120 columns, ``show``, ``ls`` and ``compare`` print every figure they
show whole: each figure of ``show --json`` (formatted here from the JSON, not by vmio's table code) is
found on the screen, no cell ends in an ellipsis, and the columns left out for width are named with the
``--wide`` hint; with ``--wide`` every column is there."""

from __future__ import annotations

import contextlib
import fcntl
import io
import json
import os
import pty
import re
import select
import shutil
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path
from typing import Any

import pytest

from vmio.cli import main

STORES = Path(__file__).parent / "data" / "stores"
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
SHOW_HEADS = ("IOPS r/w", "MB/s r/w", "p50 ms", "p99 ms", "dev busy%", "%usr", "%sys")


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo's store (three real campaigns), copied so nothing is written beside the fixture."""
    path = tmp_path_factory.mktemp("tty") / "demo.db"
    shutil.copy(STORES / "demo000.db", path)
    return path


def on_tty(args: list[str], cols: int) -> list[str]:
    """``vmio ARGS`` run with its output on a pseudo-terminal ``cols`` wide; the screen's lines as the
    terminal shows them (escape codes dropped, a line longer than the terminal wrapped at its width)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, cols, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "NO_COLOR", "TERM")}
    env["TERM"] = "xterm-256color"
    proc = subprocess.Popen(
        [sys.executable, "-m", "vmio", *args], stdin=slave, stdout=slave, stderr=slave, env=env
    )
    os.close(slave)
    out = b""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 1.0)
        if not ready:
            if proc.poll() is not None:
                break
            continue
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    assert proc.wait(timeout=30) == 0, out.decode(errors="replace")
    text = ANSI.sub("", out.decode()).replace("\r\n", "\n").replace("\r", "")
    screen = []
    for line in text.split("\n"):
        screen += [line[i : i + cols] for i in range(0, max(len(line), 1), cols)]
    return screen


def as_json(args: list[str]) -> Any:
    """What ``vmio ARGS --json`` prints, decoded (run in this process: its text is not on a terminal)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main([*args, "--json"]) == 0
    return json.loads(out.getvalue())


def show_json(db: Path, campaign: str) -> list[dict[str, object]]:
    points: list[dict[str, object]] = as_json(["show", campaign, "--db", str(db)])
    return points


def figures(point: dict[str, object]) -> dict[str, str]:
    """A point's figures as show's table heads them, formatted from its JSON."""

    def num(v: object, digits: int = 0) -> str:
        return "-" if not isinstance(v, int | float) else f"{v:.{digits}f}"

    def ms(key: str) -> str:
        lat = point["read_lat_ns"] or point["write_lat_ns"]
        value = lat.get(key) if isinstance(lat, dict) else None
        return "-" if value is None else f"{value / 1e6:.3f}"

    bw = [point["read_bw"], point["write_bw"]]
    return {
        "IOPS r/w": f"{num(point['read_iops'])}/{num(point['write_iops'])}",
        "MB/s r/w": "/".join("-" if not isinstance(b, int | float) else f"{b / 1e6:.1f}" for b in bw),
        "p50 ms": ms("p50"),
        "p99 ms": ms("p99"),
        "dev busy%": num(point["dev_busy_pct"], 1),
        "%usr": num(point["cpu_usr_pct"], 1),
        "%sys": num(point["cpu_sys_pct"], 1),
    }


def table_rows(screen: list[str], second: str) -> dict[str, str]:
    """Each row of the table whose second column is headed ``second``: its first cell (a name, joined
    again where it wrapped) → the rest of its lines."""
    head = next(i for i, line in enumerate(screen) if re.search(rf"\s{re.escape(second)}(\s|$)", line))
    w0 = screen[head].index(second)
    out: dict[str, str] = {}
    name, rest = "", ""
    for line in screen[head + 2 :]:
        if not line.strip() or "--wide" in line:
            break
        if line[w0:].strip() and name:  # a new row
            out[name] = rest
            name, rest = "", ""
        name += line[:w0].strip()
        rest += " " + line[w0:] + " "
    if name:
        out[name] = rest
    return out


@pytest.mark.parametrize("cols", [80, 120])
def test_show_prints_every_figure_whole(db: Path, cols: int) -> None:
    points = show_json(db, "demo")
    screen = on_tty(["show", "demo", "--db", str(db)], cols)
    text = "\n".join(screen)
    assert "…" not in text
    head = next(line for line in screen if "point" in line)
    shown = [h for h in SHOW_HEADS if h in head]
    hidden = [h for h in SHOW_HEADS if h not in head]
    assert "IOPS r/w" in shown and "p99 ms" in shown
    if hidden:
        hint = " ".join(text[text.index("not shown") :].split())
        assert "--wide" in hint and all(h in hint for h in hidden), hint
    assert all(len(line) <= cols for line in screen)
    rows = table_rows(screen, "status")
    assert len(rows) == len(points)
    for p in points:
        mine = rows[f"{p['campaign']}:{p['point']}"]  # the name whole (it may wrap)
        for head_name in shown:
            assert re.search(rf"(^|\s){re.escape(figures(p)[head_name])}(\s|$)", mine), (head_name, mine)


def test_show_wide_has_every_column(db: Path) -> None:
    points = show_json(db, "demo")
    screen = on_tty(["show", "demo", "--db", str(db), "--wide"], 80)
    text = "\n".join(screen)
    unwrapped = text.replace("\n", "")
    assert "…" not in text and "--wide shows" not in text
    for p in points:
        for value in figures(p).values():
            assert value in unwrapped


@pytest.mark.parametrize("cols", [80, 120])
def test_ls_and_compare_print_every_figure_whole(db: Path, cols: int) -> None:
    listed = as_json(["ls", "--db", str(db)])
    screen = on_tty(["ls", "--db", str(db)], cols)
    assert "…" not in "\n".join(screen)
    for c in listed:
        line = next(line for line in screen if line.startswith(c["name"] + " "))
        assert re.search(rf"\s{c['points_done']}\s+{c['points_failed']}(\s|$)", line), line

    doc = as_json(["compare", "demo", "--baseline", "bare", "--db", str(db)])
    screen = on_tty(["compare", "demo", "--baseline", "bare", "--db", str(db)], cols)
    text = "\n".join(screen)
    assert "…" not in text
    assert all(len(line) <= cols for line in screen)
    head = next(line for line in screen if "IOPS ratio" in line)
    for r in doc["rows"]:
        ratios = r["ratio"]
        for metric in ("IOPS", "p50", "p99"):
            if f"{metric} ratio" in head and ratios[metric] is not None:
                assert f"{ratios[metric]['median']:.2f}" in text, (metric, r)


def test_compare_two_campaigns_at_80_columns(db: Path) -> None:
    doc = as_json(["compare", "builds-10", "builds-72", "--db", str(db)])
    screen = on_tty(["compare", "builds-10", "builds-72", "--db", str(db)], 80)
    text = "\n".join(screen)
    assert "…" not in text and "--wide" in text
    for c in doc["changes"]:
        if c["metric"] == "IOPS":
            sign = "-" if c["diff"] < 0 else "+"
            assert f"{sign}{abs(c['diff']):.1f} ({c['rel']:+.1%})" in text, c

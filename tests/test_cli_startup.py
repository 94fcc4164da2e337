"""Listing the commands and printing any command's help import nothing heavy: each command imports what it
needs when it runs (`vmio.cli.main.FEATURES`). Every help the parser knows is run in a fresh interpreter and
its ``sys.modules`` read afterwards, so a heavy import anywhere on the path of a ``register`` fails here."""

from __future__ import annotations

import argparse
import importlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from vmio.cli.main import FEATURES, build_parser

SRC = str(Path(__file__).resolve().parents[1] / "src")
ROOT = Path(__file__).resolve().parents[1]
# plotting, arrays, the JIT, event loops (and the QMP client that brings one), columnar files, rich's console
HEAVY = ("matplotlib", "numpy", "numba", "llvmlite", "scipy", "asyncio", "qemu", "pyarrow", "rich")

# A fresh interpreter imports what `vmio --version` imports (vmio.cli.main), then forks one child per line
# of arguments read from stdin: the child runs `vmio ARGS` (output to /dev/null) and writes its exit code and
# the top-level packages it then had as one JSON line. A fork of that light parent starts as a fresh `vmio`
# would, without paying the interpreter's start once per help.
PROBE = """
import json, os, sys
from vmio.cli import main
print(json.dumps(sorted({m.partition(".")[0] for m in sys.modules})), flush=True)
for line in sys.stdin:
    args = json.loads(line)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.dup2(null, 2)
        code = main(args)
        mods = sorted({m.partition(".")[0] for m in sys.modules})
        os.write(write, json.dumps([code, mods]).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as answer:
        print(answer.read(), flush=True)
    os.waitpid(pid, 0)
"""


def helps(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """``path + --help`` for the parser and every sub-command under it, found from the parser itself."""
    found = [(*path, "--help")]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found += helps(sub, (*path, name))
    return found


HELPS = helps(build_parser())


def probe(*runs: tuple[str, ...], home: Path = ROOT) -> tuple[set[str], list[tuple[int, set[str]]]]:
    """The packages the light parent had, and for each of ``runs`` the exit code of `vmio ARGS` and the
    top-level packages loaded after it, each in its own fork of that parent (``home``: its ``HOME``)."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE],
        input="".join(json.dumps(list(args)) + "\n" for args in runs),
        env={"PYTHONPATH": SRC, "PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "HOME": str(home)},
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    first, *lines = done.stdout.splitlines()
    assert len(lines) == len(runs), done.stdout
    answers = [json.loads(line) for line in lines]
    return set(json.loads(first)), [(code, set(modules)) for code, modules in answers]


def test_every_command_and_sub_command_is_probed() -> None:
    firsts = {args[0] for args in HELPS if len(args) > 1}
    assert firsts == {c for commands in FEATURES.values() for c in commands}
    assert ("membal", "sim", "--help") in HELPS and ("relocate", "analyze", "--help") in HELPS
    assert ("--help",) in HELPS and len(HELPS) > 40


def test_no_help_imports_anything_heavy() -> None:
    parent, results = probe(*HELPS)
    assert not set(HEAVY) & parent  # each help starts from `vmio --version`'s imports only
    heavy = {
        " ".join(args): sorted(set(HEAVY) & mods) for args, (_, mods) in zip(HELPS, results, strict=True)
    }
    assert {args: found for args, found in heavy.items() if found} == {}
    assert {code for code, _ in results} == {0}


def test_the_probe_sees_what_a_running_command_imports(tmp_path: Path) -> None:
    # the same probe, on a command that does its work: the work's libraries are in sys.modules after it
    trace = tmp_path / "t.csv"
    trace.write_text(
        "version,time,op,size,lbn\n" + "".join(f"1,{i},28,4096,{i % 50 * 8}\n" for i in range(200))
    )
    _, [(code, modules), (_, helped)] = probe(("membal", "mrc", str(trace), "--points", "3"), ("--help",))
    assert code == 0 and "numpy" in modules
    assert "numpy" not in helped  # and a later fork starts clean again


@pytest.mark.parametrize("family", list(FEATURES))
def test_the_command_table_is_what_each_module_registers(family: str) -> None:
    sub = argparse.ArgumentParser().add_subparsers()
    importlib.import_module(f"vmio.cli.{family}").register(sub)
    assert tuple(sub.choices) == FEATURES[family]


def test_a_report_imports_no_target_rig(tmp_path: Path) -> None:
    """`vmio report` reads what a stored target is (``targets.traits``), never the rigs that run targets: they
    bring QEMU's control (asyncio), fio's launcher, libvirt and Ceph clients, a third of its start-up."""
    db = tmp_path / "v2.db"
    shutil.copyfile(ROOT / "tests" / "data" / "stores" / "v2-campaign.db", db)
    page = tmp_path / "r.html"
    _, [(code, modules)] = probe(("report", "base", "-o", str(page), "--db", str(db)), home=tmp_path)
    assert code == 0 and page.read_text().count("<svg") >= 6  # it drew the page
    assert "matplotlib" not in modules  # its panels are charts vmio draws itself (report.chart)
    assert "asyncio" not in modules


def test_a_relocation_plan_imports_no_plotting_or_simulator(tmp_path: Path) -> None:
    """`vmio relocate plan` draws nothing and replays nothing: matplotlib and numba (2-4 s of a loaded
    host's start-up) stay out; `analyze --plot-dir` still imports matplotlib, as it draws."""
    trace = tmp_path / "t.csv"
    trace.write_text(
        "version,time,op,size,lbn\n" + "".join(f"1,{i},28,4096,{i % 7 * 4096}\n" for i in range(50))
    )
    plan, figures = tmp_path / "plan.json", tmp_path / "figures"
    _, [(code, modules), (drew, plotted)] = probe(
        ("relocate", "plan", str(trace), "-o", str(plan)),
        ("relocate", "analyze", str(trace), "--plot-dir", str(figures)),
        home=tmp_path,  # matplotlib's font cache goes there
    )
    assert code == 0 and json.loads(plan.read_text())["zone"]["extents"] >= 1
    assert not {"matplotlib", "numba", "llvmlite"} & modules
    assert drew == 0 and "matplotlib" in plotted and (figures / "access-distribution.png").is_file()

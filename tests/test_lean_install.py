"""`pip install vmio` without extras: the fio commands run with numba, llvmlite and scipy unimportable, and a
command that needs the `sim` extra says so. `vmio --version` imports neither numpy nor matplotlib."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from scipy.stats import ttest_ind

from conftest import need

SRC = str(Path(__file__).resolve().parents[1] / "src")
ROOT = Path(__file__).resolve().parents[1]

# The interpreter of a lean install: a finder ahead of every other refuses numba, llvmlite and scipy, as if
# pip had never installed them; then vmio's own entry point runs.
LEAN = """
import sys

class NotInstalled:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in ("numba", "llvmlite", "scipy"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, NotInstalled())
from vmio.cli import main
code = main(sys.argv[1:])
leaked = sorted(m for m in sys.modules if m.partition(".")[0] in ("numba", "llvmlite", "scipy"))
assert not leaked, leaked
sys.exit(code)
"""


def lean(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", LEAN, *args],
        cwd=cwd, env={"PYTHONPATH": SRC, "PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "HOME": str(cwd)},
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip


def spec(work: Path, disk: Path, name: str) -> Path:
    file = work / f"{name}.toml"
    file.write_text(
        f'[campaign]\nname = "{name}"\nrepetitions = 2\n\n'
        f'[[target]]\nname = "bare"\nkind = "host"\npath = "{disk}/disk.img"\nsize = "16M"\n\n'
        '[[workload]]\nname = "rr"\nrw = "randread"\nbs = "4k"\niodepth = 2\nruntime = "1s"\n'
    )
    return file


@pytest.mark.fio
def test_the_fio_commands_run_without_numba_llvmlite_or_scipy(tmp_path: Path, scratch: Path) -> None:
    need("fio")
    db = str(tmp_path / "vmio.db")
    for name in ("a", "b"):
        run = lean("run", str(spec(tmp_path, scratch, name)), "--db", db, cwd=tmp_path)
        assert run.returncode == 0, run.stderr
    shown = lean("show", "a", "--db", db, "--json", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    rows = json.loads(shown.stdout)
    assert [row["status"] for row in rows] == ["done", "done"], rows
    assert all(row["read_iops"] > 0 for row in rows), rows
    out = tmp_path / "a.csv"
    exported = lean("export", "a", "--db", db, "-o", str(out), cwd=tmp_path)
    assert exported.returncode == 0, exported.stderr
    assert len(out.read_text().splitlines()) == 3  # a header and the two repetitions
    page = tmp_path / "a.html"
    report = lean("report", "a", "--db", db, "-o", str(page), cwd=tmp_path)
    assert report.returncode == 0, report.stderr
    assert "<html" in page.read_text().lower()
    compared = lean("compare", "a", "b", "--db", db, "--json", cwd=tmp_path)
    assert compared.returncode == 0, compared.stderr
    # two repetitions a side: Welch's interval, from vmio's own t quantile, is scipy's
    changes = json.loads(compared.stdout)["changes"]
    iops = [c for c in changes if c["ddir"] == "read" and c["metric"] == "IOPS"]
    assert len(iops) == 1, changes
    after = json.loads(lean("show", "b", "--db", db, "--json", cwd=tmp_path).stdout)
    welch = ttest_ind([r["read_iops"] for r in after], [r["read_iops"] for r in rows], equal_var=False)
    interval = welch.confidence_interval(0.95)
    assert iops[0]["ci_low"] == pytest.approx(interval.low)
    assert iops[0]["ci_high"] == pytest.approx(interval.high)
    diagnosed = lean("diagnose", "a", "--db", db, "--json", cwd=tmp_path)
    assert diagnosed.returncode == 0, diagnosed.stderr
    json.loads(diagnosed.stdout)
    advised = lean("advise", "--scale-out", "no", "--json", cwd=tmp_path)
    assert advised.returncode == 0, advised.stderr
    json.loads(advised.stdout)


def test_membal_sim_and_relocate_replay_name_the_extra_without_numba(tmp_path: Path) -> None:
    sim = lean("membal", "sim", str(ROOT / "examples" / "membal" / "uniform-vs-skewed.toml"), cwd=tmp_path)
    assert sim.returncode == 2, sim.stderr
    assert sim.stderr.count("\n") == 1 and "pip install 'vmio[sim]'" in sim.stderr, sim.stderr
    trace = str(ROOT / "tests" / "data" / "relocate" / "fio_v2.log")
    for args in (["relocate", "evaluate", "--synthetic", "ffsb", "--requests", "10"],
                 ["relocate", "analyze", trace, "--cache-curve"]):  # fmt: skip
        needs = lean(*args, cwd=tmp_path)
        assert needs.returncode == 2 and "pip install 'vmio[sim]'" in needs.stderr, (args, needs.stderr)
    heat = lean("relocate", "analyze", trace, "--json", cwd=tmp_path)  # heat maps need no simulator
    assert heat.returncode == 0, heat.stderr
    assert json.loads(heat.stdout)["images"]
    listed = lean("--help", cwd=tmp_path)  # every command is still listed
    assert listed.returncode == 0 and "membal" in listed.stdout and "relocate" in listed.stdout


def loaded_by(*args: str) -> set[str]:
    """Top-level packages in sys.modules after `vmio ARGS` (it exits 0)."""
    code = (
        "import sys\nfrom vmio.cli import main\ncode = main(sys.argv[1:])\n"
        "print(' '.join(sorted({m.partition('.')[0] for m in sys.modules})))\nsys.exit(code)"
    )
    done = subprocess.run([sys.executable, "-c", code, *args], env={"PYTHONPATH": SRC},
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return set(done.stdout.splitlines()[-1].split())


def test_version_imports_neither_numpy_nor_matplotlib() -> None:
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "vmio", "--version"],
                          env={"PYTHONPATH": SRC}, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0 and done.stdout.startswith("vmio "), done.stderr
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if "|" in line}
    assert "vmio.cli.main" in imported  # the account is of vmio's start-up
    assert not {m for m in imported if m.partition(".")[0] in ("numpy", "matplotlib", "numba", "scipy")}


def test_a_command_imports_only_its_own_family() -> None:
    assert not {"numba", "scipy", "matplotlib"} & loaded_by("run", "--help")
    assert "numba" not in loaded_by("show", "--help")


def test_the_version_is_the_installed_package_metadata() -> None:
    from importlib import metadata

    from vmio.version import VERSION

    assert metadata.version("vmio") == VERSION  # pyproject.toml's dynamic version reads vmio.version.VERSION

"""The layers and the no-cycle rule of docs/ARCHITECTURE.md, checked by import-linter on every test run.

The contracts live in pyproject.toml. A copy of ``src/vmio`` with an upward import, and one with a cycle,
shows that each contract can fail.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINT = Path(sys.executable).with_name("lint-imports")


def lint(src: Path, config: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(src)}
    return subprocess.run(
        [str(LINT), "--config", str(config), "--no-cache"],
        capture_output=True, text=True, env=env, timeout=300, cwd=src,
    )  # fmt: skip


@pytest.fixture
def copy(tmp_path: Path) -> tuple[Path, Path]:
    """A copy of the package and of the contracts, outside the repository."""
    src = tmp_path / "src"
    shutil.copytree(ROOT / "src" / "vmio", src / "vmio", ignore=shutil.ignore_patterns("__pycache__"))
    config = tmp_path / "pyproject.toml"
    shutil.copy(ROOT / "pyproject.toml", config)
    return src, config


def inject(module: Path, line: str) -> None:
    text = module.read_text()
    head, sep, rest = text.partition("from __future__ import annotations\n")
    module.write_text(head + sep + line + "\n" + rest)


def test_the_package_keeps_its_contracts() -> None:
    done = lint(ROOT / "src", ROOT / "pyproject.toml")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 kept, 0 broken" in done.stdout


def test_an_upward_import_breaks_the_layers(copy: tuple[Path, Path]) -> None:
    src, config = copy
    inject(src / "vmio" / "store" / "rows.py", "from vmio.campaign import runner  # noqa")
    done = lint(src, config)
    assert done.returncode != 0
    assert "vmio.store is not allowed to import vmio.campaign" in done.stdout
    assert "vmio.store.rows -> vmio.campaign.runner" in done.stdout


def test_a_cycle_breaks_the_acyclic_contract(copy: tuple[Path, Path]) -> None:
    src, config = copy
    inject(src / "vmio" / "spec" / "fields.py", "from vmio.spec import load  # noqa")
    done = lint(src, config)
    assert done.returncode != 0
    assert "No cycles are allowed in vmio.spec" in done.stdout


def test_a_feature_importing_another_breaks_the_layers(copy: tuple[Path, Path]) -> None:
    src, config = copy
    inject(src / "vmio" / "advise" / "tune.py", "from vmio.report import compare  # noqa")
    done = lint(src, config)
    assert done.returncode != 0
    assert "vmio.advise is not allowed to import vmio.report" in done.stdout

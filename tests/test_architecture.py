"""The layers and the no-cycle rule of docs/ARCHITECTURE.md, checked by import-linter on every test run.

The contracts live in pyproject.toml. A copy of ``src/vmio`` with an upward import, and one with a cycle,
shows that each contract can fail.
"""

from __future__ import annotations

import os
import re
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


def modules() -> list[str]:
    """Every module of the package, dotted below ``vmio`` (``store.rows``), packages' ``__init__`` aside."""
    src = ROOT / "src" / "vmio"
    found = []
    for path in sorted(src.rglob("*.py")):
        if path.name in ("__init__.py", "__main__.py"):
            continue
        found.append(".".join(path.relative_to(src).with_suffix("").parts))
    return found


def named(module: str, doc: str) -> bool:
    """Is ``module`` named in the doc: in backticks as ``pkg.mod`` or ``mod`` (in its package's row)?"""
    *package, name = module.split(".")
    if f"`{module}" in doc or f"`vmio.{module}" in doc:
        return True
    rows = [line for line in doc.splitlines() if not package or line.startswith(f"| `{package[-1]}` |")]
    return any(re.search(rf"`{re.escape(name)}[`(./]", line) for line in rows)


def test_architecture_names_every_module() -> None:
    doc = (ROOT / "docs" / "ARCHITECTURE.md").read_text()
    missing = [m for m in modules() if not named(m, doc)]
    assert len(modules()) > 100  # the walk found the package
    assert not missing, f"docs/ARCHITECTURE.md does not name: {', '.join(missing)}"


def test_no_reference_to_a_file_the_project_does_not_hold() -> None:
    """Every ``*.md`` a doc, the README or the code names is a file of the project."""
    texts = [
        ROOT / "README.md",
        ROOT / "CONTRIBUTING.md",
        *sorted((ROOT / "docs").glob("*.md")),
        *sorted((ROOT / "src").rglob("*.py")),
    ]
    missing = set()
    for path in texts:
        for ref in re.findall(r"[\w./-]+\.md\b", path.read_text()):
            if not any((base / ref).exists() for base in (ROOT, ROOT / "docs", path.parent)):
                missing.add(f"{path.relative_to(ROOT)}: {ref}")
    assert not missing, sorted(missing)

"""The layers and the no-cycle rule of docs/ARCHITECTURE.md, checked by import-linter on every test run.

The contracts live in pyproject.toml. A copy of ``src/vmio`` with an upward import, and one with a cycle,
shows that each contract can fail.
"""

from __future__ import annotations

import ast
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


TOP_LEVEL = "At the top of `src/vmio`"


def definitions(doc: str, known: list[str]) -> dict[str, list[str]]:
    """Where ``doc`` says what each module of ``known`` holds: its package's row of the table (the module's
    bare name in backticks) or a ``- `pkg.mod`:`` line of "The other modules", each as ``place:line``; a
    top-level module in the paragraph on what remains at the top of ``src/vmio``. A line naming a module
    of another package under a heading counts as that heading's (so the test below can find it there)."""
    found: dict[str, list[str]] = {m: [] for m in known}
    heading = None
    top = False
    for number, line in enumerate(doc.splitlines(), 1):
        top = line.startswith(TOP_LEVEL) or (top and bool(line.strip()))
        if re.fullmatch(r"\*\*\w+\*\*", line.strip()):
            heading = line.strip().strip("*")
        row = re.match(r"\| `(\w+)` \|", line)
        item = re.match(r"- `([\w.]+)`:", line)
        if row:
            package = row.group(1)
            for name in sorted(set(re.findall(r"`(\w+)[`(./]", line))):
                if f"{package}.{name}" in found:
                    found[f"{package}.{name}"].append(f"row {package}:{number}")
        elif item and heading is not None:
            package, _, name = item.group(1).partition(".")
            module = f"{package}.{name}"
            if module in found:
                found[module].append(f"under {heading}:{number}")
        elif top:
            for name in sorted(set(re.findall(r"`(\w+)`", line))):
                if name in found:
                    found[name].append(f"top:{number}")
    return found


def misplaced(doc: str, known: list[str]) -> list[str]:
    """Modules not said exactly once, or said under another package's heading or row."""
    wrong = []
    for module, places in definitions(doc, known).items():
        package = module.partition(".")[0] if "." in module else None
        if len(places) != 1:
            wrong.append(f"{module}: said {len(places)} times ({', '.join(places) or 'nowhere'})")
        elif package is not None and not places[0].startswith((f"row {package}:", f"under {package}:")):
            wrong.append(f"{module}: said {places[0]}, not under {package}")
    return wrong


def test_architecture_says_what_each_module_holds_once_under_its_package() -> None:
    doc = (ROOT / "docs" / "ARCHITECTURE.md").read_text()
    assert misplaced(doc, modules()) == []


@pytest.mark.parametrize(
    ("old", "new", "needle"),
    [
        # a module put under another package's heading (as mrc.exact once sat under membal)
        ("**membal**\n", "**membal**\n\n- `mrc.curve`: curves\n", "mrc.curve: said 2 times"),
        ("**spec**\n", "**report**\n\n- `spec.sla`: x\n\n**spec**\n", "spec.sla: said 2 times"),
        ("- `store.capacity`:", "- `storex.capacity`:", "store.capacity: said 0 times"),
    ],
)
def test_a_module_said_twice_or_elsewhere_is_found(old: str, new: str, needle: str) -> None:
    doc = (ROOT / "docs" / "ARCHITECTURE.md").read_text()
    assert old in doc
    found = misplaced(doc.replace(old, new, 1), modules())
    assert any(needle in f for f in found), found


def test_a_module_under_the_wrong_heading_is_found() -> None:
    doc = (ROOT / "docs" / "ARCHITECTURE.md").read_text()
    line = next(x for x in doc.splitlines() if x.startswith("- `store.capacity`:"))
    planted = doc.replace(line + "\n", "").replace("**targets**\n", f"**targets**\n\n{line}\n", 1)
    assert misplaced(planted, modules()) == ["store.capacity: said under targets:" + str(
        planted.splitlines().index(line) + 1) + ", not under store"]  # fmt: skip


# Every place vmio starts a program some other way than ``system.process`` (``Runner``/``Supervised``,
# which put it under ``system/supervise.py``), with the reason it may.
STARTS_ALLOWED = {
    "vmio/system/process.py:Supervised.__init__": "the supervisor's own launch: every Runner call comes here",
    "vmio/system/supervise.py:main": "the supervisor executes the program it watches (it is the child)",
    "vmio/qemu/lifecycle.py:spawn": "QEMU in its own session with PR_SET_PDEATHSIG (a forking thread's death "
    "kills it; vm.py stops its process group): a VM outlives no vmio thread that started it",
    "vmio/guest/kmod.py:read_module": "zstd as a bytes filter over one module file, with a timeout, while the "
    "guest image is built (no program it starts lives on)",
    "vmio/guest/pvh.py:decompress": "the kernel payload's decompressor as a bytes filter, with a timeout, while "
    "the guest image is built",
    "vmio/spec/fio_refusals.py:fio_knows": "`fio --cmdhelp=KEY` (prints an option's help, runs no job), 20 s "
    "timeout, once per key: spec sits below vmio.fio and system.process's callers (tests/test_fio_launch.py "
    "lists it too)",
    "vmio/system/forked.py:start": "a fork of vmio itself (no program executed) drawing half a report's "
    "figures or making a big export's points table on the second CPU; it dies with vmio (parent-death "
    "SIGKILL), the parent reads its pipe with a deadline and kills and reaps it",
}
MODULE_STARTS = {
    "subprocess": {"run", "Popen", "call", "check_call", "check_output", "getoutput", "getstatusoutput"},
    "os": {"system", "popen", "fork", "forkpty", "posix_spawn", "posix_spawnp", "execv", "execve", "execvp",
           "execvpe", "execl", "execle", "execlp", "execlpe", "spawnv", "spawnve", "spawnvp", "spawnl"},
    "asyncio": {"create_subprocess_exec", "create_subprocess_shell"},
    "pty": {"spawn", "fork"},
}  # fmt: skip


def process_starts(src: Path) -> list[str]:
    """Every call that starts a program (``subprocess``, ``os.exec*``/``spawn*``/``system``, ``pty``,
    asyncio's), as ``path:Function`` where it sits; names followed through ``import ... as`` and
    ``from ... import``."""
    found = set()
    for path in sorted(src.rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        modules: dict[str, str] = {}  # local name -> module it stands for
        functions: dict[str, str] = {}  # local name -> the module's starting function it stands for
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.name in MODULE_STARTS:
                        modules[a.asname or a.name] = a.name
            elif isinstance(node, ast.ImportFrom) and node.module in MODULE_STARTS:
                for a in node.names:
                    if a.name in MODULE_STARTS[node.module]:
                        functions[a.asname or a.name] = a.name
        for where, node in _calls(tree):
            f = node.func
            hit = (isinstance(f, ast.Name) and f.id in functions) or (
                isinstance(f, ast.Attribute)
                and isinstance(f.value, ast.Name)
                and f.attr in MODULE_STARTS.get(modules.get(f.value.id, ""), ())
            )
            if hit:
                found.add(f"{path.relative_to(src)}:{where}")
    return sorted(found)


def _calls(tree: ast.AST, where: str = "") -> list[tuple[str, ast.Call]]:
    """Every call in ``tree`` with the dotted name of the function or class it sits in."""
    out = []
    for child in ast.iter_child_nodes(tree):
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            out += _calls(child, f"{where}.{child.name}" if where else child.name)
            continue
        if isinstance(child, ast.Call):
            out.append((where or "<module>", child))
        out += _calls(child, where)
    return out


def test_every_program_starts_under_the_supervisor_or_says_why_not() -> None:
    found = process_starts(ROOT / "src")
    assert "vmio/system/process.py:Supervised.__init__" in found  # the walk sees the supervisor's own
    assert sorted(set(found) - set(STARTS_ALLOWED)) == []
    assert sorted(set(STARTS_ALLOWED) - set(found)) == []  # the list holds no stale entry


@pytest.mark.parametrize(
    "code",
    [
        "def f():\n    import subprocess\n    subprocess.run(['ls'], timeout=1)\n",
        "from subprocess import Popen as P\ndef f():\n    P(['ls'])\n",
        "import os as o\ndef f():\n    o.execvp('ls', ['ls'])\n",
        "import asyncio\nasync def f():\n    await asyncio.create_subprocess_exec('ls')\n",
    ],
)
def test_a_program_started_elsewhere_is_found(tmp_path: Path, code: str) -> None:
    src = tmp_path / "src"  # the check reads module by module: the package beside one planted module
    (src / "vmio" / "dstore").mkdir(parents=True)
    (src / "vmio" / "dstore" / "planted.py").write_text(code)
    assert process_starts(src) == ["vmio/dstore/planted.py:f"]


TARGET_CLASSES = re.compile(
    r"isinstance\([^)]*\b(QemuTarget|HostTarget|RemoteTarget|RbdTarget|LibvirtTarget)\b"
)
MAX_KIND_CHECKS = 5  # issue 44: each kind answers for itself; these few say why they test a class


def kind_checks(src: Path) -> list[tuple[str, int, bool]]:
    """Each ``isinstance`` on a target class outside ``targets/``: file, line, whether a comment on its line or
    the line before says why (``# isinstance: ...``)."""
    found = []
    for path in sorted(src.rglob("*.py")):
        if "targets" in path.relative_to(src).parts[:1]:
            continue
        lines = path.read_text().splitlines()
        for i, line in enumerate(lines):
            if TARGET_CLASSES.search(line):
                said = "# isinstance:" in line or (i > 0 and lines[i - 1].strip().startswith("# isinstance:"))
                found.append((str(path.relative_to(src)), i + 1, said))
    return found


def test_target_kinds_answer_for_themselves() -> None:
    checks = kind_checks(ROOT / "src" / "vmio")
    assert len(checks) <= MAX_KIND_CHECKS, checks
    assert all(said for *_, said in checks), [c for c in checks if not c[2]]


def test_a_new_kind_check_is_counted(tmp_path: Path) -> None:
    src = tmp_path / "vmio"
    shutil.copytree(ROOT / "src" / "vmio", src, ignore=shutil.ignore_patterns("__pycache__"))
    data = src / "report" / "data.py"
    data.write_text(
        data.read_text() + "\n\ndef vm(t: object) -> bool:\n    return isinstance(t, QemuTarget)\n"
    )
    checks = kind_checks(src)
    assert ("report/data.py", len(data.read_text().splitlines()), False) in checks


def test_every_kind_is_found_by_its_spec_kind() -> None:
    from vmio.spec import model
    from vmio.targets import KINDS

    spec_kinds = {c.kind for c in vars(model).values() if isinstance(c, type) and c.__name__.endswith("Target")
                  and isinstance(getattr(c, "kind", None), str)}  # fmt: skip
    assert set(KINDS) == spec_kinds
    assert {k for k, kind in KINDS.items() if kind.vm} == {"qemu", "libvirt"}
    assert {k for k, kind in KINDS.items() if kind.bare} == {"host"}

"""fio is launched in one package, ``vmio.fio`` (``fio.run``): campaigns (dstore's profiles among them),
calibrate, membal's loads, the libvirt guests' fio (started by their agent through ``fio.run.start_via``)
and the version probes all go through it.

``fio_launches`` reads every module of ``src/vmio`` outside ``vmio/fio`` (its syntax tree, not its text)
for a fio started there: a launching call (``Supervised``, ``Popen``, ``run``, ``start``, ...) handed fio
or a list starting with it, an argument list starting with fio built for later, or fio's
``--output-format`` option. "fio" is followed through names: a name assigned ``"fio"``, a path ending in
it, ``shutil.which("fio")``, ``vmio.fio``'s argument lists, ``str()``/``Path()`` of those, and the
parameters of the module's own functions handed them. A copy of the package with one such launch put back
shows the check fails.
"""

from __future__ import annotations

import ast
import json
import subprocess
import time
from pathlib import Path

import pytest

from vmio.errors import FioError, UnsafeTargetError
from vmio.fio import run as fiorun
from vmio.system.process import Runner

ROOT = Path(__file__).resolve().parents[1]
LAUNCHERS = {"Supervised", "Popen", "run", "call", "check_call", "check_output", "start", "spawn",
             "create_subprocess_exec", "execvp", "execv", "system"}  # fmt: skip
OPTIONS = ("--output-format",)


ARGV_BUILDERS = {"stdin_argv", "argv"}  # vmio.fio's functions that return fio's command line


def _is_fio(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str) and Path(node.value).name == "fio"


class _Names:
    """The names of one module that hold fio (its name, a path to it, its command line), followed through
    assignments, unpacking, ``str()``/``Path()``/``shutil.which()`` and the parameters of the module's own
    functions that are handed such a value."""

    def __init__(self, tree: ast.Module) -> None:
        self.held: set[str] = set()
        self.functions = {
            n.name: n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
        }
        while True:
            before = len(self.held)
            for node in ast.walk(tree):
                self._follow(node)
            if len(self.held) == before:
                break

    def holds(self, node: ast.AST) -> bool:
        """Does ``node`` evaluate to fio, a path to it or an argument list starting with it?"""
        if _is_fio(node) or (isinstance(node, ast.Name) and node.id in self.held):
            return True
        if isinstance(node, ast.Starred | ast.FormattedValue):
            return self.holds(node.value)
        if isinstance(node, ast.JoinedStr):
            return any(self.holds(v) for v in node.values)
        if isinstance(node, ast.List | ast.Tuple):
            return bool(node.elts) and self.holds(node.elts[0])
        if isinstance(node, ast.Call):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            return name in ARGV_BUILDERS or (
                name in ("str", "Path", "which", "fspath", "resolve", "list", "tuple")
                and any(self.holds(a) for a in node.args)
            )
        return False

    def _follow(self, node: ast.AST) -> None:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):  # a parameter whose default is fio
            args = node.args
            positional = [*args.posonlyargs, *args.args]
            pairs = [*zip(positional[len(positional) - len(args.defaults) :], args.defaults, strict=True),
                     *((a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d)]  # fmt: skip
            self.held |= {a.arg for a, d in pairs if d is not None and self.holds(d)}
            return
        if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None and self.holds(node.value):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                self.held |= {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
        elif (
            isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in self.functions
        ):
            params = self.functions[node.func.id].args
            positional = [*params.posonlyargs, *params.args]
            for i, arg in enumerate(node.args):
                if i < len(positional) and self.holds(arg):
                    self.held.add(positional[i].arg)
            for kw in node.keywords:
                if kw.arg is not None and self.holds(kw.value):
                    self.held.add(kw.arg)


def fio_launches(src: Path) -> list[str]:
    """Every place outside ``vmio/fio`` that starts fio or builds its command line, as ``path:line``."""
    found = []
    for path in sorted(src.rglob("*.py")):
        rel = path.relative_to(src)
        if rel.parts[:2] == ("vmio", "fio"):
            continue
        tree = ast.parse(path.read_text(), str(path))
        names = _Names(tree)
        for node in ast.walk(tree):
            hit = False
            if isinstance(node, ast.Call):
                name = (
                    node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
                )
                args = [*node.args, *(k.value for k in node.keywords)]
                hit = name in LAUNCHERS and any(names.holds(a) for a in args)
            elif isinstance(node, ast.List | ast.Tuple) and isinstance(node.ctx, ast.Load):
                hit = len(node.elts) > 1 and names.holds(node.elts[0])
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                hit = node.value.startswith(OPTIONS)
            if hit:
                found.append(f"{rel}:{node.lineno}")  # type: ignore[attr-defined]
    return sorted(set(found))


# fio started outside vmio.fio, with the reason it may be
ALLOWED = {
    "vmio/spec/fio_refusals.py": "`fio --cmdhelp=KEY` asks the installed fio whether it knows an option "
    "name (no job runs); spec sits below vmio.fio in the layers, so it cannot call fio.run",
}


def test_fio_is_launched_only_in_the_fio_package() -> None:
    found = fio_launches(ROOT / "src")
    assert [f for f in found if f.rpartition(":")[0] not in ALLOWED] == []
    assert {f.rpartition(":")[0] for f in found} == set(ALLOWED)  # the list holds no stale entry


@pytest.mark.parametrize(
    "line",
    [
        'P = lambda runner: runner.run(["fio", "--version"], timeout=5)',
        'ARGV = ["fio", "job.fio"]',
        'P = lambda agent, v: agent.start(v, "dom", "fio", ["-"])',
        'P = lambda: Supervised(("fio", "--server=127.0.0.1,8765"))',
        'FORMAT = "--output-format=json"',
        # names, not only the literal: fio found on PATH, kept in a name, handed to a function of the module
        'def probe(runner, binary):\n    return runner.run([str(binary), "--version"], timeout=5)\n'
        'def planted(runner):\n    found = shutil.which("fio")\n    return probe(runner, Path(found))',
        'FIO = "/usr/bin/fio"\nP = lambda runner: runner.run([FIO, "-"], timeout=5)',
        'def planted(key, binary="fio"):\n    return subprocess.run([shutil.which(binary), key], timeout=5)',
        "def planted(agent, job):\n    program, *args = fiorun.stdin_argv()\n"
        '    return agent.start("dom", program, args, input_text=job)',
    ],
)
def test_a_launch_outside_the_package_is_found(tmp_path: Path, line: str) -> None:
    src = tmp_path / "src"  # the check reads module by module: one module with the launch put back
    module = src / "vmio" / "dstore" / "rbdfio.py"
    module.parent.mkdir(parents=True)
    module.write_text((ROOT / "src" / "vmio" / "dstore" / "rbdfio.py").read_text() + "\n" + line + "\n")
    found = fio_launches(src)
    assert len(found) == 1 and found[0].startswith("vmio/dstore/rbdfio.py:"), found


def test_a_job_naming_an_engine_vmio_does_not_run_is_refused_before_fio_starts(tmp_path: Path) -> None:
    ran = tmp_path / "ran"
    job = f"[global]\nioengine=exec\nprogram=/usr/bin/touch\narguments={ran}\n\n[x]\n"
    with pytest.raises(UnsafeTargetError, match=r"section \[global\] asks fio for ioengine=exec"):
        fiorun.run_job(job, timeout=30, runner=Runner())
    with pytest.raises(UnsafeTargetError, match="ioengine=external:/tmp/x.so"):
        fiorun.check_job("[a]\nioengine=libaio\n[b]\nioengine = external:/tmp/x.so\n")
    assert not ran.exists()
    # no section is an exception (vmio's I/O logs reach a fio server by fio's own writes), and no job
    # vmio starts runs a program before or after its jobs
    for job in ("[put-iolog]\nioengine=exec\n", "[x]\nexec_prerun=/bin/true\n", "[x]\nexec_postrun=x\n"):
        with pytest.raises(UnsafeTargetError):
            fiorun.check_job(job)


@pytest.mark.fio
def test_run_job_keeps_the_histograms_fio_printed(fio: str) -> None:
    job = "[x]\nioengine=null\nrw=randrw\nrwmixread=30\nsize=8m\nbs=4k\n"
    result = fiorun.run_job(job, timeout=60, runner=Runner())
    raw = subprocess.run(
        ["fio", "--output-format=json+", "--name=x", "--ioengine=null", "--rw=randrw", "--size=8m", "--bs=4k"],
        capture_output=True, text=True, timeout=60, check=True,
    ).stdout  # fmt: skip
    assert json.loads(raw[raw.index("{") :])["jobs"][0]["read"]["clat_ns"]["bins"]  # fio's json+ has bins
    assert result.jobs == 1 and sum(r.total_ios for r in result.results) == 2048
    for r in result.results:
        assert r.bins and sum(r.bins.values()) == r.total_ios  # every I/O is in the histogram


@pytest.mark.fio
def test_a_failed_fio_names_what_ran(fio: str) -> None:
    with pytest.raises(FioError, match="fio failed on the test job"):
        fiorun.run_job("[x]\nioengine=null\nrw=nonsense\n", timeout=60, runner=Runner(), what="the test job")


@pytest.mark.fio
def test_version_is_fios_own(fio: str) -> None:
    own = subprocess.run(["fio", "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
    assert fiorun.version(Runner()) == own and own.startswith("fio-")
    assert fiorun.version(Runner(), "/nonexistent/fio") is None


@pytest.mark.fio
def test_a_background_fio_is_killed_at_its_timeout(fio: str, tmp_path: Path) -> None:
    job = tmp_path / "job.fio"
    job.write_text("[x]\nioengine=null\nrw=read\nsize=1g\ntime_based=1\nruntime=120s\n")
    started = time.monotonic()
    bg = fiorun.Background([fiorun.Endpoint(None, job)], timeout=1.0, cwd=tmp_path, log=tmp_path / "log")
    try:
        while bg.running() and time.monotonic() - started < 60:
            time.sleep(0.1)
        assert not bg.running() and bg.timed_out
        assert time.monotonic() - started < 60  # long before fio's own 120 s
    finally:
        bg.stop()
    assert bg.returncode is not None and bg.returncode != 0

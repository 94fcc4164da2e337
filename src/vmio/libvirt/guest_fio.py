"""fio inside libvirt guests through the QEMU guest agent: the job on stdin, ``--output-format=json+``, its
logs fetched back; the guests of one point made ready first and their fio started at once.
"""

from __future__ import annotations

import contextlib
import dataclasses
import re
import threading
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from vmio.errors import FioError, ToolError, VmioError
from vmio.fio import output
from vmio.fio import run as fiorun
from vmio.fio.output import FioOutput
from vmio.libvirt import agent
from vmio.libvirt.domxml import DiskShape, DomainShape
from vmio.libvirt.virsh import Virsh
from vmio.spec import LibvirtDomain

FILE_MARK = "@@vmio-file "


@dataclass
class Domain:
    """One measured domain, read and checked: its XML's shape, the disk measured, its guest device."""

    ref: LibvirtDomain
    virsh: Virsh
    shape: DomainShape
    disk: DiskShape
    guest_device: str
    clock_offset: float  # guest wall clock minus this host's, seconds
    pid: int | None  # QEMU's PID where the URI is local

    @property
    def server(self) -> str:
        return self.ref.name

    def to_json(self) -> dict[str, object]:
        return {
            "name": self.ref.name,
            "uri": self.ref.uri,
            "type": self.shape.type,
            "machine": self.shape.machine,
            "iothreads": self.shape.iothreads,
            "canary": self.shape.marker is not None,
            "disk": self.disk.to_json(),
            "guest_device": self.guest_device,
            "guest_clock_offset_s": self.clock_offset,
            "qemu_pid": self.pid,
            "iothread_ids": [f"iothread{k}" for k in range(1, self.shape.iothreads + 1)],
        }


def run_together(jobs: Sequence[tuple[Domain, Path]], *, timeout: float, cwd: Path) -> FioOutput:
    """Run each job file in its domain's guest, all started at once; one ``FioOutput`` of them all, results
    named by domain, fio's end time on this host's clock. Every guest's raw output goes in its ``text``
    (and ``cwd/fio-output.txt``), headed by its domain and guest clock offset."""
    for _, job_file in jobs:  # the engines vmio runs, as for every fio it starts (``fio.run``)
        fiorun.check_job(job_file.read_text(), str(job_file))
    gate = threading.Barrier(len(jobs))  # every guest's folder made first, then every fio started
    runs = [_GuestFio(domain, job_file, cwd, gate) for domain, job_file in jobs]
    threads = [threading.Thread(target=r.run, args=(timeout,), daemon=True) for r in runs]
    for t in threads:
        t.start()
    try:
        for t in threads:
            t.join()
    except BaseException:  # Ctrl-C: the guests' fio must not outlive vmio either
        for r in runs:
            r.stop()
        raise
    failed = [r.error for r in runs if r.error is not None]
    text = "\n".join(r.log for r in runs)
    (cwd / "fio-output.txt").write_text(text)
    if failed:
        raise FioError(str(failed[0]).splitlines()[0], output=text[-8000:]) from failed[0]
    return _merge([r.result for r in runs if r.result is not None], text)


class _GuestFio:
    """fio in one guest: the job on stdin, ``--output-format=json+``, logs fetched back after."""

    def __init__(self, domain: Domain, job_file: Path, cwd: Path, gate: threading.Barrier) -> None:
        self.domain, self.job_file, self.cwd, self.gate = domain, job_file, cwd, gate
        self.result: FioOutput | None = None
        self.pid: int | None = None
        self.folder = f"/tmp/vmio-{uuid.uuid4().hex[:12]}"
        self.error: VmioError | None = None
        self.log = ""

    def run(self, timeout: float) -> None:
        d = self.domain
        folder = self.folder
        job = self.job_file.read_text().replace(str(self.cwd), folder)
        head = f"# fio in domain {d.ref.name} on {d.ref.uri} (guest clock offset {d.clock_offset:+.3f} s)"
        try:
            try:
                agent.run(d.virsh, d.ref.name, "mkdir", ["-m", "700", folder], timeout=30)
            except VmioError:
                self.gate.abort()
                raise
            try:
                try:
                    self.gate.wait(timeout=120)
                except threading.BrokenBarrierError:
                    raise ToolError(
                        f"domain {d.ref.name!r}: another domain of the target could not start fio"
                    ) from None
                self.pid = fiorun.start_via(
                    lambda program, args, job: agent.start(
                        d.virsh, d.ref.name, program, args, input_text=job
                    ),
                    job,
                    f"domain {d.ref.name!r}: {self.job_file}",
                )
                done = agent.wait(d.virsh, d.ref.name, self.pid, timeout)
                self._fetch_logs(folder)
            finally:
                with contextlib.suppress(VmioError):
                    agent.run(d.virsh, d.ref.name, "rm", ["-rf", folder], timeout=30)
            self.log = f"{head}\n{done.out}" + (f"\n{done.err}" if done.err.strip() else "")
            if done.exitcode != 0:
                raise FioError(
                    f"fio failed in domain {d.ref.name!r} (exit {done.exitcode}, signal {done.signal})",
                    output=self.log,
                )
            parsed = output.parse(done.out)
            self.result = dataclasses.replace(
                parsed,
                results=[dataclasses.replace(r, host=d.server) for r in parsed.results],
                steady=[(d.server, *s[1:]) for s in parsed.steady],
                timestamp_ms=(
                    None if parsed.timestamp_ms is None else int(parsed.timestamp_ms - d.clock_offset * 1000)
                ),
            )
        except VmioError as exc:
            self.log = self.log or f"{head}\n{exc}"
            self.error = exc

    def stop(self) -> None:
        """Kill the guest's fio (if started) and remove its folder."""
        d = self.domain
        with contextlib.suppress(VmioError):
            if self.pid is not None:
                agent.start(d.virsh, d.ref.name, "kill", ["-9", str(self.pid)])
            agent.start(d.virsh, d.ref.name, "rm", ["-rf", self.folder])

    def _fetch_logs(self, folder: str) -> None:
        """fio's latency logs from the guest's folder into ``cwd`` under the names the host would give."""
        d = self.domain
        script = f'for f in {folder}/*.log; do [ -f "$f" ] && echo "{FILE_MARK}$f" && cat "$f"; done; true'
        done = agent.run(d.virsh, d.ref.name, "sh", ["-c", script], timeout=120)
        name = None
        lines: list[str] = []
        for line in [*done.out.splitlines(), FILE_MARK]:
            if line.startswith(FILE_MARK):
                if name is not None and re.fullmatch(r"[\w.+-]+\.log", name):
                    (self.cwd / name).write_text("\n".join(lines) + "\n")
                name, lines = line[len(FILE_MARK) :].rpartition("/")[2], []
            else:
                lines.append(line)


def _merge(results: list[FioOutput], text: str) -> FioOutput:
    stamps = [r.timestamp_ms for r in results if r.timestamp_ms is not None]
    return FioOutput(
        version=results[0].version if results else "",
        results=[j for r in results for j in r.results],
        disk_util=[u for r in results for u in r.disk_util],
        text=text,
        timestamp_ms=max(stamps) if stamps else None,
        steady=[s for r in results for s in r.steady],
        jobs=sum(r.jobs for r in results),
        io_errors=sum(r.io_errors for r in results),
    )

"""The relay in front of a fio server (``fio.relay``): the server is reached only once the client's RUN is in
hand, with every byte both ways unchanged; a real fio job runs through it; its port is guarded as the port
it leads to."""

from __future__ import annotations

import contextlib
import os
import socket
import struct
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from vmio.fio import run as fiorun
from vmio.fio.relay import HEADER, RUN, RunRelay
from vmio.system.guard import PortGuard, rule
from vmio.system.process import Runner
from vmio.targets.remote import LocalFioServer

PROBE, JOB = 10, 3  # fio's FIO_NET_CMD_PROBE and FIO_NET_CMD_JOB


def command(opcode: int, payload: bytes, tag: int = 0) -> bytes:
    """One fio net command as a client sends it (the checksums are not looked at by the relay)."""
    return HEADER.pack(97, opcode, 0, tag, len(payload), 0, 0) + payload


class Upstream:
    """A stand-in server on a loopback port: when it accepted its connection, and every byte it got."""

    def __init__(self, reply: bytes = b"") -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(1)
        self.port = self.sock.getsockname()[1]
        self.reply = reply
        self.accepted_at: float | None = None
        self.got = b""
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        try:
            conn, _ = self.sock.accept()
        except OSError:  # closed unreached (``close``)
            return
        self.accepted_at = time.monotonic()
        with conn:
            conn.sendall(self.reply)
            conn.settimeout(10)
            while data := conn.recv(65536):
                self.got += data

    def join(self) -> None:
        self.thread.join(timeout=10)
        self.close()

    def close(self) -> None:
        """Stop listening; a thread still waiting to accept ends (a shutdown wakes it, a close would not),
        so no thread of the test outlives it."""
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        self.thread.join(timeout=10)
        self.sock.close()
        assert not self.thread.is_alive()


@pytest.fixture
def guard() -> Iterator[PortGuard]:
    guard = PortGuard()
    yield guard
    guard.close()


def test_the_server_is_reached_only_after_the_clients_run_and_gets_every_byte(guard: PortGuard) -> None:
    job = command(JOB, b"[global]\nioengine=null\n" * 100)  # longer than one read
    sent = [command(PROBE, b"p" * 136), job, command(JOB, b"x" * 224)]
    run = command(RUN, b"")
    upstream = Upstream(reply=b"from the server")
    relay = RunRelay(upstream.port, guard)
    try:
        with socket.create_connection(("127.0.0.1", relay.port), timeout=10) as client:
            for part in sent:
                client.sendall(part)
            time.sleep(0.5)  # as fio's client calibrating its clock between its jobs and its RUN
            assert upstream.accepted_at is None  # nothing reached the server without the RUN
            client.sendall(run[:10])  # a RUN in two pieces is whole only with its second
            time.sleep(0.2)
            assert upstream.accepted_at is None
            run_at = time.monotonic()
            client.sendall(run[10:])
            client.sendall(b"after the run")  # passed on as it comes
            assert client.recv(100) == b"from the server"
            client.shutdown(socket.SHUT_WR)
            upstream.join()
        assert upstream.accepted_at is not None and upstream.accepted_at >= run_at
        assert upstream.got == b"".join(sent) + run + b"after the run"
    finally:
        relay.close()


def test_what_is_not_fios_protocol_or_ends_before_a_run_is_passed_on(guard: PortGuard) -> None:
    upstream = Upstream()
    relay = RunRelay(upstream.port, guard)
    try:
        with socket.create_connection(("127.0.0.1", relay.port), timeout=10) as client:
            client.sendall(struct.pack("<HHIQIHH", 1, 2, 0, 0, 1 << 30, 0, 0))  # no fio command is 1 GiB
            deadline = time.monotonic() + 10
            while upstream.accepted_at is None and time.monotonic() < deadline:
                time.sleep(0.01)
            assert upstream.accepted_at is not None
        upstream.join()
        assert len(upstream.got) == HEADER.size
        second = Upstream()
        relay.upstream = second.port
        with socket.create_connection(("127.0.0.1", relay.port), timeout=10) as client:
            client.sendall(command(PROBE, b"p" * 8))  # then the client ends, no RUN
        second.join()
        assert second.got == command(PROBE, b"p" * 8)
    finally:
        relay.close()


@pytest.mark.fio
def test_a_real_fio_job_runs_through_the_relay_and_reports_its_port(guard: PortGuard, tmp_path: Path) -> None:
    job = tmp_path / "job.fio"
    job.write_text(
        "[global]\nioengine=null\nsize=64m\nbs=4k\nrw=randread\ntime_based=1\nruntime=500ms\n[measure]\n"
    )
    with LocalFioServer() as server:
        relay = RunRelay(server.port, guard)
        try:
            address = relay.address.replace(",", ":")
            result = fiorun.run(
                [fiorun.Endpoint(address, job)], timeout=60, runner=Runner(), cwd=tmp_path, read_pct=100
            )
        finally:
            relay.close()
    [measured] = [r for r in result.results if r.job == "measure"]
    assert measured.total_ios > 0  # fio's own count of the null engine's reads
    assert measured.host == address  # as fio names the server it reached: the relay's port


def test_the_relays_port_is_guarded_from_before_it_listens_until_it_closes(guard: PortGuard) -> None:
    upstream = Upstream()
    relay = RunRelay(upstream.port, guard)
    port = relay.port
    try:
        rules = guard._iptables(["-S", "OUTPUT"])
        assert f"--dport {port} " in rules and port in guard.ports
    finally:
        relay.close()
        upstream.close()
    assert port not in guard.ports
    assert f"--dport {port} " not in guard._iptables(["-S", "OUTPUT"])
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=2).close()


class CountingRunner(Runner):
    """The real runner, keeping each ``iptables`` run's arguments."""

    def __init__(self) -> None:
        super().__init__()
        self.iptables: list[list[str]] = []

    def run(self, argv, **kwargs):  # type: ignore[no-untyped-def]
        if argv[0] == "iptables":
            self.iptables.append(list(argv))
        return super().run(argv, **kwargs)


def test_a_guard_sweeps_dead_vmios_rules_once_for_all_its_ports() -> None:
    stale = rule(1, os.geteuid(), 2**22 + 12345)  # above pid_max's default: no such process
    runner = CountingRunner()
    runner.run(["iptables", "-w", "10", "-I", "OUTPUT", *stale], timeout=20)
    guard = PortGuard(runner)
    try:
        upstream = Upstream()
        relay = RunRelay(upstream.port, guard)  # its port: the guard's first
        guard.add(upstream.port)  # a second port on the same guard
        sweeps = [a for a in runner.iptables if "-S" in a]
        assert len(sweeps) == 1
        assert "--dport 1 " not in guard._iptables(["-S", "OUTPUT"])  # the dead vmio's rule went
        relay.close()
        upstream.close()
    finally:
        guard.close()
        runner.run(["iptables", "-w", "10", "-D", "OUTPUT", *stale], timeout=20, check=False)

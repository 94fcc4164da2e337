"""A loopback relay in front of a ``fio --server`` that hands the server a client's jobs and its RUN together.

fio's server waits for its client in a loop that looks at the socket and, when nothing is there, sleeps up
to 1 s (100 ms once a job runs) unless it has something to send (``server.c``'s ``handle_connection``, fio
3.33 to today's master). A client sends its job files as soon as it connects, then calibrates its own clock
(``fio_time_init``: 0.1-0.4 s on a busy host), then sends RUN. A guest's server has parsed the jobs and
answered by then, found its socket empty and gone to sleep: the RUN waits out the rest of that second, and
so does every point run on it (0.6-1 s a point, the guest idle meanwhile). The relay keeps what a client
sends until its RUN has come, then passes it all on in one write, so the server finds the RUN waiting when
it has parsed the jobs; after that the bytes flow both ways unchanged. What the server runs, and when its
jobs' I/O starts relative to each other, is the same: only the wait for the RUN goes.

A relay listens on a loopback port guarded like the forwarded port it leads to (``system.guard``: a
connection from another user's socket is reset), from before it listens until it is closed.
"""

from __future__ import annotations

import contextlib
import selectors
import socket
import struct
import threading
import time

from vmio.system.guard import PortGuard
from vmio.system.ports import LOOPBACK

HEADER = struct.Struct("<HHIQIHH")  # fio's struct fio_net_cmd: version, opcode, flags, tag, pdu_len, crcs
RUN = 16  # FIO_NET_CMD_RUN
HOLD_S = 10.0  # a client that sends no RUN this long after connecting gets what it sent passed on anyway
CONNECT_S = 10.0
CHUNK = 1 << 16
MAX_PDU = 1 << 26


def pass_on(buffer: bytes) -> bool:
    """Whether what a client sent so far (``buffer``, from its first byte) is to be passed on now: it holds
    a whole RUN command, or it is not fio's protocol (a command longer than any fio sends)."""
    at = 0
    while len(buffer) - at >= HEADER.size:
        _version, opcode, _flags, _tag, pdu_len, _, _ = HEADER.unpack_from(buffer, at)
        end = at + HEADER.size + pdu_len
        if (opcode == RUN and len(buffer) >= end) or pdu_len > MAX_PDU:
            return True
        at = end
    return False


class RunRelay:
    """``127.0.0.1:port`` relaying each connection to ``127.0.0.1:upstream``, a client's bytes held until
    its RUN (``pass_on``). Threads of vmio's, daemons; ``close`` stops listening and ends every
    connection."""

    def __init__(self, upstream: int, guard: PortGuard) -> None:
        self.upstream = upstream
        self.guard = guard
        self._closed = threading.Event()
        self._conns: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._listener, self.port = self._listen()
        self._thread = threading.Thread(target=self._accept, name=f"vmio-fio-relay-{self.port}", daemon=True)
        self._thread.start()

    def _listen(self) -> tuple[socket.socket, int]:
        """A socket bound to a free loopback port, guarded, then listening (no connection before the rule)."""
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            sock.bind((LOOPBACK, 0))
            port: int = sock.getsockname()[1]
            self.guard.add(port)
        except BaseException:
            sock.close()
            raise
        try:
            sock.listen(16)
        except BaseException:
            sock.close()
            self.guard.remove(port)
            raise
        return sock, port

    @property
    def address(self) -> str:
        """fio's ``--client=`` value for the relay: ``127.0.0.1,PORT``."""
        return f"{LOOPBACK},{self.port}"

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(
                target=self._serve, args=(client,), name="vmio-fio-relay-conn", daemon=True
            ).start()

    def _serve(self, client: socket.socket) -> None:
        """One client: what it sends held until its RUN, then the server connected and handed all of it;
        bytes both ways after that. The server is connected only then: a server connected earlier would
        find its socket empty when it first looks and go to sleep."""
        with self._lock:
            if self._closed.is_set():
                client.close()
                return
            self._conns.add(client)
        server = None
        try:
            held = _held(client)
            if held is None:
                return
            try:
                server = socket.create_connection((LOOPBACK, self.upstream), timeout=CONNECT_S)
            except OSError:
                return
            server.settimeout(None)
            with self._lock:
                self._conns.add(server)
            if held and not _send(server, held):
                return
            _pump(client, server)
        finally:
            with self._lock:
                self._conns -= {client, server}
            client.close()
            if server is not None:
                server.close()

    def close(self) -> None:
        """Stop listening, end every connection, drop the guard's rule."""
        self._closed.set()
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()
        with self._lock:
            for conn in self._conns:
                with contextlib.suppress(OSError):
                    conn.shutdown(socket.SHUT_RDWR)
        self._thread.join(timeout=5)
        self.guard.remove(self.port)


def _held(client: socket.socket) -> bytes | None:
    """What the client sends up to and with its RUN (``pass_on``; all it sent if it ends first or sends no
    RUN within ``HOLD_S``); None if the connection failed."""
    held = b""
    deadline = time.monotonic() + HOLD_S
    while not pass_on(held):
        left = deadline - time.monotonic()
        if left <= 0:
            break
        client.settimeout(left)
        try:
            data = client.recv(CHUNK)
        except TimeoutError:
            break
        except OSError:
            return None
        if not data:
            break
        held += data
    client.settimeout(None)
    return held


def _pump(client: socket.socket, server: socket.socket) -> None:
    """Bytes both ways until both sides have ended (each end passed on to the other as a shutdown)."""
    open_from = {client: server, server: client}
    with selectors.DefaultSelector() as sel:
        for sock in open_from:
            sel.register(sock, selectors.EVENT_READ)
        while open_from:
            for key, _ in sel.select():
                src = key.fileobj
                assert isinstance(src, socket.socket)
                dst = open_from[src]
                try:
                    data = src.recv(CHUNK)
                except OSError:
                    data = b""
                if not data:
                    sel.unregister(src)
                    del open_from[src]
                    with contextlib.suppress(OSError):
                        dst.shutdown(socket.SHUT_WR)
                    continue
                if not _send(dst, data):
                    return


def _send(sock: socket.socket, data: bytes) -> bool:
    try:
        sock.sendall(data)
    except OSError:
        return False
    return True

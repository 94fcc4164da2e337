"""libvirt through ``virsh -c URI``: every call an argument list with a timeout, run by the project's Runner.

``virsh`` rather than the libvirt Python binding: no C extension to build, and the same client reaches
local and remote URIs (``qemu+ssh://host/system``) as the operator's own shell does.
"""

from __future__ import annotations

import json
import re
import shutil
from typing import Any
from urllib.parse import urlparse

from vmio.errors import InputError, ToolError
from vmio.system.process import Completed, Runner

DEFAULT_URI = "qemu:///system"
AGENT_CHANNEL = "org.qemu.guest_agent.0"


def is_local(uri: str) -> bool:
    """Whether ``uri`` reaches this host's libvirtd (no host part: ``qemu:///system``, ``qemu+unix:///...``)."""
    parsed = urlparse(uri)
    return parsed.hostname in (None, "", "localhost") and parsed.scheme.partition("+")[2] in ("", "unix")


class Virsh:
    """One libvirt connection, as ``virsh -c URI`` calls."""

    def __init__(self, uri: str = DEFAULT_URI, runner: Runner | None = None, timeout: float = 60.0) -> None:
        if shutil.which("virsh") is None:
            raise InputError("virsh is not installed; install the Debian package 'libvirt-clients'")
        self.uri = uri
        self.runner = runner or Runner()
        self.timeout = timeout

    def run(self, *args: str, timeout: float | None = None, check: bool = True) -> Completed:
        """``virsh -c URI ARGS``; with ``check``, a failure is a ``ToolError`` quoting virsh's own words."""
        done = self.runner.run(["virsh", "-c", self.uri, *args], timeout=timeout or self.timeout, check=False)
        if check and done.returncode != 0:
            said = (done.stderr.strip() or done.stdout.strip()).splitlines()
            raise ToolError(
                f"virsh -c {self.uri} {args[0]} failed: {said[0] if said else 'no message'}",
                argv=done.argv,
                returncode=done.returncode,
                output=done.stdout + done.stderr,
            )
        return done

    def domains(self, *, running_only: bool = False) -> list[str]:
        args = ["list", "--name"] + ([] if running_only else ["--all"])
        return [line.strip() for line in self.run(*args).stdout.splitlines() if line.strip()]

    def exists(self, name: str) -> bool:
        return self.run("domstate", name, check=False).returncode == 0

    def state(self, name: str) -> str:
        """``running``, ``shut off``, ...; an ``InputError`` when ``name`` is not a domain on this URI."""
        done = self.run("domstate", name, check=False)
        if done.returncode != 0:
            raise InputError(f"domain {name!r} is not defined on {self.uri}")
        return done.stdout.strip()

    def dumpxml(self, name: str) -> str:
        """The domain's live XML (its running configuration, with the addresses libvirt assigned)."""
        self.state(name)
        return self.run("dumpxml", name).stdout

    def hypervisor_version(self) -> str | None:
        """The QEMU version libvirt runs on this URI's host (``Running hypervisor: QEMU 7.2.0``)."""
        done = self.run("version", check=False)
        match = re.search(r"Running hypervisor:\s*QEMU\s+(\S+)", done.stdout)
        return match.group(1) if match else None

    def agent(
        self, name: str, execute: str, arguments: dict[str, Any] | None = None, timeout: float = 30.0
    ) -> Any:
        """One QEMU guest agent command's ``return`` value (``virsh qemu-agent-command``)."""
        request: dict[str, Any] = {"execute": execute}
        if arguments:
            request["arguments"] = arguments
        done = self.run(
            "qemu-agent-command",
            name,
            "--timeout",
            str(max(1, int(timeout))),
            json.dumps(request),
            timeout=timeout + 30,
            check=False,
        )
        if done.returncode != 0:
            said = (done.stderr.strip() or done.stdout.strip()).splitlines()
            raise ToolError(
                f"domain {name!r} on {self.uri}: the QEMU guest agent did not answer {execute} "
                f"({said[0] if said else 'no message'})",
                argv=done.argv,
                returncode=done.returncode,
                output=done.stdout + done.stderr,
            )
        try:
            return json.loads(done.stdout)["return"]
        except (ValueError, KeyError, TypeError) as exc:
            raise ToolError(
                f"domain {name!r}: the guest agent's answer to {execute} is not JSON with a 'return'",
                output=done.stdout,
            ) from exc

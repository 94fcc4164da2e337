"""The guest_block layer in a libvirt domain's guest, when its target asks (``guest_layers = true``;
docs/layers.md): vmio's guest tracer (``guest/trace.sh``) run one command at a time through the QEMU guest
agent's ``guest-exec``, as ``sh -s -- -c COMMAND ARGS`` with the script's text on its standard input.

Nothing is installed in the operator's guest: the tracer's state between commands (the keeper's PID, its
renewals) is in ``/run/vmio-trace``, root's alone. Each call has a time limit (``agent.run`` kills the guest
process past it). ``on`` claims the guest for this run (``/run/vmio-trace/held``: another run's live tracer
makes it refuse, changing nothing) and sweeps what an earlier tracer left (it finds vmio's triggers in the
guest's trigger files), and the guest switches everything off by itself past the limit ``on`` is given: a
vmio killed in a point leaves nothing on in the guest after that limit, or after the next point's ``on``,
whichever comes first.
"""

from __future__ import annotations

from vmio.guest.image import script
from vmio.libvirt import agent
from vmio.libvirt.virsh import Virsh

TIMEOUT_S = 60.0  # a command under TCG on a loaded host (reading a table, allocating them) can take seconds


class AgentTracer:
    """One domain's guest tracer, reached through its guest agent (``guesttrace.Tracer``)."""

    def __init__(self, virsh: Virsh, domain: str) -> None:
        self.virsh, self.domain = virsh, domain
        self.name = domain

    def command(self, line: str, timeout: float = TIMEOUT_S) -> tuple[int, str]:
        """Run one tracer command in the guest; its exit status (1 for a signal) and output. ``ToolError``
        when the agent refuses or the command does not end within ``timeout``."""
        done = agent.run(
            self.virsh,
            self.domain,
            "sh",
            ["-s", "--", "-c", *line.split()],
            timeout=timeout,
            input_text=script("trace.sh"),
        )
        said = done.out + (f"\n{done.err}" if done.err.strip() else "")
        return (1 if done.exitcode is None else done.exitcode), said

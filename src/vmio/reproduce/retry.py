"""A reproduction's campaign with a second chance for each point that fails.

A reproduction runs tens of points on guests that share a busy host; one point can fail for a reason that is
not the configuration's (a TCG guest stalled past fio's time limit, a host disk throttled for a minute). The
campaign is then run once more: the runner skips the points already done and measures the failed ones again
on fresh guests (it stops a failed point's guests). The store keeps a point's last try (one run per point);
a point that fails twice is a failure of the reproduction, and one measured on its second try is reported
with its first failure.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from vmio.campaign import runner
from vmio.fio import options as fio_options
from vmio.spec import loads_spec
from vmio.store import Store


@dataclass
class Tries:
    """What a reproduction's campaigns left: failures (failed twice) and retried (failed once, then measured;
    each with its first failure), each ``POINT: ERROR``."""

    failures: list[str] = field(default_factory=list)
    retried: list[str] = field(default_factory=list)


def run_campaign(
    text: str,
    source: str,
    store: Store,
    options: runner.Options,
    progress: Callable[[runner.Progress], None] | None,
    tries: Tries,
) -> str:
    """Run the campaign of spec ``text`` (named ``source`` in errors), a second time if a point failed;
    its name."""
    camp = loads_spec(text, source, fio_names=fio_options.names)
    first = runner.run(camp, text, store, options, progress)
    if not first.failures:
        return camp.name
    second = runner.run(camp, text, store, options, progress)
    again = {f.partition(": ")[0] for f in second.failures}
    tries.retried += [f for f in first.failures if f.partition(": ")[0] not in again]
    tries.failures += list(second.failures)
    return camp.name

"""Before/after: replay the same multi-VM stream on the disk model with the original layout and a plan."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from vmio.relocate.disk import DiskParams
from vmio.relocate.heat import HotChoice
from vmio.relocate.layout import Layout
from vmio.relocate.order import ORDERS
from vmio.relocate.planner import Plan, build_plan
from vmio.relocate.replay import ReplayResult, Requests, replay
from vmio.traces.trace import Trace


@dataclass(frozen=True)
class ReplaySetup:
    """How to replay: closed loop with ``depth`` per image (``None``: open loop on trace times)."""

    disk: DiskParams
    depth: int | None = 1
    policy: str = "fcfs"
    queue: int = 32


@dataclass
class Evaluation:
    """Summaries before and after, the plan used, and the gains of every in-zone order."""

    before: dict[str, float]  # ReplayResult.summary()
    after: dict[str, float]
    plan: Plan
    order_gains: dict[str, float] = field(default_factory=dict)

    @property
    def gain(self) -> float:
        b = self.before["throughput_iops"]
        return self.after["throughput_iops"] / b - 1.0 if b else 0.0


def requests_for(
    trace: Trace, phys: NDArray[np.int64], depth: int | None, streams: NDArray[np.int64] | None = None
) -> Requests:
    """One replay stream per image, or per ``streams`` entry (e.g. one per benchmark thread)."""
    arrival = np.zeros(len(trace)) if depth is not None else trace.time.astype(np.float64)
    stream = trace.image.astype(np.int64) if streams is None else streams
    return Requests(phys, trace.length, stream, arrival)


def run_setup(
    setup: ReplaySetup, trace: Trace, phys: NDArray[np.int64], streams: NDArray[np.int64] | None = None
) -> ReplayResult:
    req = requests_for(trace, phys, setup.depth, streams)
    return replay(setup.disk, req, depth=setup.depth, policy=setup.policy, queue=setup.queue)


def evaluate(
    layout: Layout,
    profile: Trace,
    stream: Trace,
    setup: ReplaySetup,
    hot: HotChoice,
    *,
    position: str = "auto",
    order: str = "coaccess",
    orders: Sequence[str] = ORDERS,
    streams: NDArray[np.int64] | None = None,
) -> Evaluation:
    """Plan from ``profile``, replay ``stream`` before and after; also try every order in ``orders``.

    ``streams`` gives each request of ``stream`` its replay stream (default: its image).
    """
    hot_sets = hot.pick(profile, layout)
    phys = layout.physical_offset(stream.image, stream.offset)
    before = run_setup(setup, stream, phys, streams).summary()
    results: dict[str, tuple[Plan, dict[str, float]]] = {}
    for name in dict.fromkeys([order, *orders]):
        plan = build_plan(layout, hot_sets, position=position, order=name, trace=profile, disk=setup.disk)
        after = run_setup(setup, stream, plan.physical_offset(stream.image, stream.offset), streams).summary()
        results[name] = (plan, after)
    base = before["throughput_iops"]
    gains = {k: (v[1]["throughput_iops"] / base - 1.0 if base else 0.0) for k, v in results.items()}
    plan, after = results[order]
    return Evaluation(before, after, plan, gains)

"""A spec's points measured and recorded: the runner, the measurement of one point, the facts of each run."""

from vmio.campaign.runner import Options, Outcome, Progress, preflight, run

__all__ = ["Options", "Outcome", "Progress", "preflight", "run"]

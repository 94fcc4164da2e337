"""Each paper beside vmio: the papers' claims (package data), the experiments that test them, the page.

``vmio reproduce --list`` lists the papers (ids as in docs/references.md); ``vmio reproduce ID`` runs one
paper's experiments and judges each of its claims by the claim's tolerance.

The names below are imported on first use (PEP 562): every paper's experiment pulls in its feature
(campaigns, the simulators, plotting), which ``vmio reproduce --help`` and ``--list`` need none of.
"""

import typing as _typing

from vmio.lazy import exports as _exports

if _typing.TYPE_CHECKING:
    from vmio.reproduce.claims import NEEDS, TCG_WHY, Claim, Paper, paper, papers
    from vmio.reproduce.result import Measured, Reproduction, Spread, judge
    from vmio.reproduce.run import Request, check, reproduce

SCALES = ("quick", "paper")  # quick: a few minutes on 2 cores; paper: the paper's sizes where the host allows

_LAZY = {
    "Claim": "vmio.reproduce.claims",
    "Measured": "vmio.reproduce.result",
    "NEEDS": "vmio.reproduce.claims",
    "Paper": "vmio.reproduce.claims",
    "Reproduction": "vmio.reproduce.result",
    "Request": "vmio.reproduce.run",
    "Spread": "vmio.reproduce.result",
    "TCG_WHY": "vmio.reproduce.claims",
    "check": "vmio.reproduce.run",
    "judge": "vmio.reproduce.result",
    "paper": "vmio.reproduce.claims",
    "papers": "vmio.reproduce.claims",
    "reproduce": "vmio.reproduce.run",
}


__getattr__, __dir__ = _exports(__name__, _LAZY, globals())


__all__ = [
    "NEEDS",
    "SCALES",
    "TCG_WHY",
    "Claim",
    "Measured",
    "Paper",
    "Reproduction",
    "Request",
    "Spread",
    "check",
    "judge",
    "paper",
    "papers",
    "reproduce",
]

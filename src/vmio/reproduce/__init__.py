"""Each paper beside vmio: the papers' claims (package data), the experiments that test them, the page.

``vmio reproduce --list`` lists the papers (ids as in docs/references.md); ``vmio reproduce ID`` runs one
paper's experiments and judges each of its claims by the claim's tolerance.
"""

from vmio.reproduce.claims import NEEDS, TCG_WHY, Claim, Paper, paper, papers
from vmio.reproduce.result import Measured, Reproduction, Spread, judge
from vmio.reproduce.run import SCALES, Request, check, reproduce

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

"""What a live guest reports, and so which memory policies can run live (``vmio.membal.live``); apart from
the controller so that ``vmio membal run --help`` names the policies without loading the simulator."""

from __future__ import annotations

# What each policy reads of an observation beyond allocation/resident, and whether a guest reports it.
NEEDS: dict[str, tuple[str, ...]] = {
    "equal": (),
    "refault": ("activations",),
    "mom": (),
    "efficiency": ("hit_pages",),
    "marginal": ("reuse",),
}
GUEST_REPORTS = frozenset({"allocation", "resident", "refaults", "activations", "accesses", "hit_pages"})
WHY_NOT_REPORTED = {  # what a guest cannot report, said in a sentence
    "reuse": "sampled stack distances of its accesses, which a guest cannot see",
}
LIVE_POLICIES = tuple(p for p, needs in NEEDS.items() if set(needs) <= GUEST_REPORTS)

__all__ = ["GUEST_REPORTS", "LIVE_POLICIES", "NEEDS", "WHY_NOT_REPORTED"]

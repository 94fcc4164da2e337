"""``vmio reproduce --diff A B``: the claims whose verdict or stability changed between two ``result.json``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TypedDict

from vmio.errors import InputError


class Change(TypedDict):
    id: str
    before: str  # "agree" | "disagree" | "cannot tell" | "not judged" | "setup" | "absent" | "missing"
    after: str
    measured_before: float | None
    measured_after: float | None


def load(path: Path) -> dict[str, Any]:
    """A stored ``result.json`` (or the folder holding one); an InputError naming the file otherwise."""
    file = path / "result.json" if path.is_dir() else path
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(
            f"reproduce --diff: {str(file)!r} does not exist; give a result.json or its folder"
        ) from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"reproduce --diff: {str(file)!r} is not a result.json vmio wrote ({exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("claims"), list):
        raise InputError(f"reproduce --diff: {str(file)!r} has no claims list; is it a vmio result.json?")
    return data


def state(claim: dict[str, Any] | None) -> str:
    """A claim's verdict as the page shows it: a claim the repetitions cannot tell is "cannot tell" whichever
    side its value lies on (older results without ``kind``/``stable`` read as result, stable); "missing": the
    result has no such claim."""
    if claim is None:
        return "missing"
    kind = claim.get("kind", "result")
    if kind in ("setup", "absent"):
        return str(kind)
    agrees = claim.get("agrees")
    if agrees is None:
        return "not judged"
    if claim.get("stable", True) is False:
        return "cannot tell"
    return "agree" if agrees else "disagree"


def diff(a: dict[str, Any], b: dict[str, Any]) -> list[Change]:
    """Every claim of either result whose verdict or stability differs, in ``a``'s order then ``b``'s."""
    if a.get("paper") != b.get("paper"):
        raise InputError(
            f"reproduce --diff: the results are of different papers ({a.get('paper')!r}, {b.get('paper')!r})"
        )
    before = {c["id"]: c for c in a["claims"]}
    after = {c["id"]: c for c in b["claims"]}
    out: list[Change] = []
    for cid in [*before, *(k for k in after if k not in before)]:
        x, y = before.get(cid), after.get(cid)
        if state(x) != state(y):
            out.append(
                {
                    "id": cid,
                    "before": state(x),
                    "after": state(y),
                    "measured_before": None if x is None else x.get("measured"),
                    "measured_after": None if y is None else y.get("measured"),
                }
            )
    return out

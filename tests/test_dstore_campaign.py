"""A dstore profile is a campaign: a profile stored the old way (by ``dstore profile --name`` before its
points ran through ``campaign.runner``) still reads, with ``show``, ``report`` and its verdicts
(``dstore show``), and what ``dstore show`` prints of it is what that vmio printed when it measured it.

The fixture ``tests/data/stores/dstore-profile-v9.db`` is the store that vmio wrote for
``dstore profile --bs 4k,64k --runtime 2s --ramp 500ms --baseline file:... --compare replicas --name
old-profile`` on a ``vmio dstore up`` cluster; ``tests/data/dstore/profile-before-43.json`` is the JSON it
printed then, and ``profile-before-43.txt`` the text of the same options (another run: its figures differ,
its lines do not). Figures differ run to run, so the golden is the document's shape and keys; here, from the
same store, the figures must agree too.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from vmio.cli import main

from conftest import DSTORE_GOLDEN_JSON, json_shape

DATA = Path(__file__).parent / "data"
FIXTURE = DATA / "stores" / "dstore-profile-v9.db"
GOLDEN_JSON = DSTORE_GOLDEN_JSON
GOLDEN_TEXT = DATA / "dstore" / "profile-before-43.txt"


def masked(text: str) -> list[str]:
    """The text's lines with every number masked (figures differ run to run; their places do not)."""
    return [re.sub(r"\d+(\.\d+)?", "N", re.sub(r" +", " ", line)) for line in text.splitlines()]


@pytest.fixture
def old_store(tmp_path: Path) -> Path:
    db = tmp_path / "old.db"
    shutil.copy(FIXTURE, db)
    return db


def test_an_old_profile_reads_back_as_it_was_printed(
    old_store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    golden = json.loads(GOLDEN_JSON.read_text())
    assert main(["dstore", "show", "old-profile", "--db", str(old_store), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert json_shape(shown) == json_shape(golden)  # the same keys, in the same order, the same lists
    # from the same stored points, the same figures and verdicts as the old vmio computed from fio's output
    assert _close(shown, golden)
    assert main(["dstore", "show", "old-profile", "--db", str(old_store)]) == 0
    text = capsys.readouterr().out
    assert masked(text) == masked(GOLDEN_TEXT.read_text())
    assert "64k" in text and "vs base" in text


def _close(a: object, b: object) -> bool:
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(_close(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) or isinstance(b, float):
        return isinstance(a, int | float) and isinstance(b, int | float) and a == pytest.approx(b, rel=1e-9)
    return a == b


def test_the_verdicts_follow_the_criteria_from_the_stored_figures(
    old_store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The verdicts are read from the stored points: judged again under other criteria, they follow them."""
    from vmio.dstore import commands
    from vmio.dstore.profile import Criteria, verdict
    from vmio.store import Store

    strict = Criteria(ideal_ms=1.0, acceptable_ms=5.0, min_iops_host=2000.0)
    with Store(str(old_store), readonly=True) as store:
        result = commands.stored(store, "old-profile", strict)
    golden = json.loads(GOLDEN_JSON.read_text())
    for point, was in zip(result.base.points, golden["points"], strict=True):
        assert point.iops == pytest.approx(was["iops"], rel=1e-9)
        assert point.verdict == verdict(was["mean_lat_ms"], was["iops"], strict) == "fails"
    assert [p.verdict for p in result.baseline[1].points] == [  # type: ignore[index]
        verdict(p["mean_lat_ms"], p["iops"], strict) for p in golden["baseline"]["points"]
    ]


def test_an_old_profile_reads_with_show_and_report(
    old_store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    golden = json.loads(GOLDEN_JSON.read_text())
    assert main(["show", "old-profile", "--db", str(old_store), "--json"]) == 0
    rows = {(r["target"], r["bs"]): r for r in json.loads(capsys.readouterr().out)}
    assert sorted(rows) == [
        (t, bs) for t in ("host-file", "host-librbd", "host-librbd-size2") for bs in (4096, 65536)
    ]
    for target, points in (("host-librbd", golden["points"]), ("host-file", golden["baseline"]["points"]),
                           ("host-librbd-size2", golden["compare"]["other"]["points"])):  # fmt: skip
        for p in points:
            row = rows[(target, p["bs"])]
            assert row["read_iops"] + row["write_iops"] == pytest.approx(p["iops"], rel=1e-6)
            assert row["dstore"]["verdict"] == p["verdict"]
    assert main(["report", "old-profile", "--db", str(old_store), "-o", str(tmp_path / "r.html")]) == 0
    page = (tmp_path / "r.html").read_text()
    assert "host-librbd-size2" in page and "randrw" in page


def test_a_campaign_that_is_no_profile_is_named(old_store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["dstore", "show", "nope", "--db", str(old_store)]) == 2
    err = capsys.readouterr().err
    assert "nope" in err and err.count("\n") == 1

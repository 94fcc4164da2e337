"""Several campaigns on one page (``vmio report A B [C...] -o page.html``), the first as the reference.

The campaigns' points are drawn together: each target becomes ``CAMPAIGN:TARGET`` (and each point
``CAMPAIGN:KEY``), so every section of the one-campaign page (IOPS and latency against offered load,
percentile curves, ...) shows the campaigns' curves side by side, the reference campaign's first target as
the baseline. Section ``#campaigns`` lists the campaigns; ``#welch`` holds each later campaign against
the reference, point by point, with Welch's verdict (as ``vmio compare A B``).
"""

from __future__ import annotations

import dataclasses
import html
import sqlite3

from vmio.report.compare import before_after
from vmio.report.compare_text import before_after_parts
from vmio.report.data import CampaignData, Row
from vmio.spec.model import Target, Workload
from vmio.stats.histogram import Histogram
from vmio.store.packed import SampleRow


def merge(datas: list[CampaignData]) -> CampaignData:
    """One ``CampaignData`` holding every campaign's points, targets and points named ``CAMPAIGN:...``."""
    rows: list[Row] = []
    order: list[str] = []
    runs: dict[str, sqlite3.Row] = {}
    targets: dict[str, Target] = {}
    samples: dict[str, list[SampleRow]] = {}
    oplat: dict[str, list[sqlite3.Row]] = {}
    hists: dict[str, dict[str, Histogram]] = {}
    logs: dict[str, list[tuple[int, str, Histogram]]] = {}
    specs: dict[str, Workload] = {}
    for d in datas:

        def key(point: str, name: str = d.name) -> str:
            return f"{name}:{point}"

        rows.extend(
            dataclasses.replace(row, point_key=key(row.point), target=key(row.target)) for row in d.rows
        )
        runs.update({key(k): v for k, v in d.runs.items()})
        targets.update({key(t): spec for t, spec in d.targets.items()})
        order += [w for w in d.workloads() if w not in order]
        samples.update({key(k): v for k, v in d.samples.items()})
        oplat.update({key(k): v for k, v in d.oplat.items()})
        hists.update({key(k): v for k, v in d.hists.items()})
        logs.update({key(k): v for k, v in d.hist_log.items()})
        for name, spec in d.workload_specs.items():
            specs.setdefault(name, spec)
    title = " vs ".join(d.name for d in datas)
    return CampaignData(title, rows, runs, targets, order, samples, oplat, hists, logs, datas[0].sla, specs)


def reference_target(datas: list[CampaignData], baseline: str | None) -> str | None:
    """The baseline of the merged page: ``--baseline`` of the reference campaign, else its first host
    target (else its first target)."""
    first = datas[0]
    names = first.target_names()
    if baseline is None:
        hosts = [t for t in names if getattr(first.targets.get(t), "kind", "host") == "host"]
        picked = hosts or names
        if not picked:
            return None
        baseline = picked[0]
    return f"{first.name}:{baseline}"


def campaigns_html(datas: list[CampaignData]) -> str:
    """Section ``#campaigns``: each campaign, its points and targets; the first is the reference."""
    e = html.escape
    items = "".join(
        f'<li data-campaign="{e(d.name)}">{e(d.name)}{" (reference)" if i == 0 else ""}: '
        f"{len(d.done())} of {len(d.rows)} points done; targets {e(', '.join(d.target_names()))}</li>"
        for i, d in enumerate(datas)
    )
    return (
        '<section id="campaigns"><h2>Which campaigns are side by side?</h2><p>Each target is drawn as '
        "CAMPAIGN:TARGET; the first campaign is the reference (its first target the baseline, in black), the "
        "others are compared with it point by point below (#welch).</p>"
        f"<ol>{items}</ol></section>"
    )


def welch_html(datas: list[CampaignData]) -> str:
    """Section ``#welch``: each later campaign against the reference, every paired figure with its
    difference of means, 95% interval (Welch's t over repetitions) and verdict."""
    e = html.escape
    out = ['<section id="welch"><h2>Did anything change against the reference? (Welch, per point)</h2>']
    for other in datas[1:]:
        result = before_after(datas[0], other)
        title, lines, tail = before_after_parts(result)
        out.append(f'<h3 id="welch-{e(other.name)}">{e(datas[0].name)} → {e(other.name)}</h3>')
        out.append(f"<p>{e(title.strip())}</p>".replace("\n", "<br>"))
        out.extend(f'<p class="no">{e(warning)}</p>' for warning in result.warnings)
        if lines:
            head, *body = lines
            out.append('<table class="welch"><tr>' + "".join(f"<th>{e(h)}</th>" for h in head) + "</tr>")
            for change, cells in zip(result.changes, body, strict=True):
                worse = "worse" in change.verdict
                out.append(
                    f'<tr data-metric="{e(change.metric)}" data-ddir="{e(change.ddir)}">'
                    + "".join(f"<td>{e(c)}</td>" for c in cells[:-1])
                    + f'<td class="verdict{" no" if worse else ""}">{e(cells[-1])}</td></tr>'
                )
            out.append("</table>")
        else:
            out.append("<p>no common points</p>")
        if tail:
            out.append(f"<p>{e(tail.strip())}</p>".replace("\n", "<br>"))
    out.append("</section>")
    return "".join(out)

"""``DIR/index.html``: the paper's claims beside vmio's figures, one self-contained page.

Readable at 1,400 px: text wraps and is left-aligned, numbers are right-aligned, nothing is wider than the
page; every claim's reason is shown whatever its verdict; the paper's figures are redrawn as inline SVG from
vmio's measurements with the paper's stated values overlaid.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence

from vmio.reproduce.figure import FigureJson, svg
from vmio.reproduce.result import BeyondRow, ClaimRow, Reproduction, verdict

STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 1320px; padding: 0 1em; color: #222; }
table { border-collapse: collapse; margin: 1em 0; width: 100%; table-layout: auto; }
th, td { border: 1px solid #ccc; padding: .3em .5em; vertical-align: top; text-align: left;
         overflow-wrap: break-word; }
th { background: #f3f3f3; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.num .small { white-space: normal; display: inline-block; max-width: 10em; }
td.tol { white-space: nowrap; }
table.claims td.claim { width: 30%; }
table.claims td.why { width: 30%; }
tr.agree td.verdict { background: #dff3df; }
tr.disagree td.verdict { background: #f8dcdc; }
tr.cannot_tell td.verdict { background: #fff3c4; }
tr.not_judged td.verdict, tr.setup td.verdict, tr.absent td.verdict { background: #eee; }
.small { color: #555; font-size: 90%; }
figure { margin: 1.5em 0; max-width: 100%; }
svg.figure { max-width: 100%; height: auto; }
figcaption { max-width: 60em; }
"""

SHOWN = {
    "agree": "agrees",
    "disagree": "disagrees",
    "cannot_tell": "cannot tell",
    "not_judged": "not judged",
    "setup": "setup (not judged)",
    "absent": "absent (not tested here)",
}


def render(rep: Reproduction) -> str:
    p = rep.paper
    rows = rep.claim_rows()
    n = rep.counts()
    parts = [
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>{_e(p.id)}: vmio beside the paper</title><style>{STYLE}</style></head><body>",
        f"<h1 id='{_e(p.id)}'>{_e(p.title)}</h1>",
        f"<p><span lang='ja'>{_e(p.title_original)}</span><br>{_e(', '.join(p.authors))} ({p.year}). "
        f"Id <code>{_e(p.id)}</code>; see docs/references.md.</p>",
        f"<p class='small'>Scale: {_e(rep.scale)}. Accelerator: {_e(rep.accel or 'no guest ran')}. "
        f"Host: {_e(_host_line(rep.host))}.</p>",
        f"<p id='counts'>Result claims: {n['agree']} agree, {n['disagree']} disagree, {n['cannot_tell']} the "
        f"repetitions cannot tell, {n['not_judged']} not judged; {n['setup']} setup claims (the paper's own "
        f"settings) shown for reference and {n['absent']} absent (findings vmio cannot test here), not "
        "counted.</p>",
    ]
    if rep.notes:
        parts.append("<h2 id='notes'>How vmio reads the paper</h2>")
        parts += [f"<p>{_e(n)}</p>" for n in rep.notes]
    parts += ["<h2 id='claims'>Claims</h2>", _claims_table(rows)]
    if rep.figures:
        parts.append("<h2 id='figures'>Figures</h2>")
        parts += [_figure(f.json()) for f in rep.figures]
    if rep.beyond:
        parts += [
            "<h2 id='beyond'>Beyond the paper</h2>",
            "<p>What-ifs the paper did not measure; no paper value stands beside them.</p>",
            _beyond(rep.beyond),
        ]
    if rep.fitted:
        parts += ["<h2 id='fitted'>Fitted parameters</h2>", _table(rep.fitted)]
    for name, table in rep.details.items():
        if isinstance(table, list) and table and isinstance(table[0], dict):
            parts += [f"<h2 id='{_e(name)}'>{_e(name)}</h2>", _table(table)]
    if rep.campaigns:
        parts.append("<h2 id='campaigns'>Campaigns stored</h2><ul>")
        parts += [f"<li><code>{_e(c)}</code> (vmio show {_e(c)} --ops)</li>" for c in rep.campaigns]
        parts.append("</ul>")
    if rep.failures:
        parts.append("<h2 id='failures'>Failures</h2><ul>")
        parts += [f"<li>{_e(f)}</li>" for f in rep.failures]
        parts.append("</ul>")
    if rep.retried:
        parts.append("<h2 id='retried'>Points measured on a second try</h2><ul>")
        parts += [f"<li>{_e(f)} (first try)</li>" for f in rep.retried]
        parts.append("</ul>")
    parts.append("</body></html>\n")
    return "\n".join(parts)


def _claims_table(claims: list[ClaimRow]) -> str:
    head = (
        "<tr><th>claim</th><th>paper</th><th>vmio</th><th>repetitions, spread (95 % interval)</th>"
        "<th>tolerance</th><th>verdict</th><th>why</th></tr>"
    )
    rows = []
    for c in claims:
        v = verdict(c)
        spread, ci = c["spread"], c["interval"]
        lines = [f"n={c['repetitions']}"] if c["repetitions"] else []
        if spread:
            lines.append(f"{_g(spread['min'])} .. {_g(spread['max'])}")
        if ci and ci["lo"] is not None:
            lines.append(f"({_g(ci['lo'])} .. {_g(ci['hi'])})")
        measured = "" if c["measured"] is None else _g(c["measured"])
        tol = c["tolerance"]
        stat = f"<br><span class='small'>statistic: {_e(c['statistic'])}</span>" if c["statistic"] else ""
        kind = f" <span class='small'>[{_e(c['kind'])}]</span>" if c["kind"] != "result" else ""
        sizes = ", ".join(_size(b) for b in c["bs"])
        kind += f"<br><span class='small'>block sizes: {sizes}</span>" if sizes else ""
        rows.append(
            f"<tr class='{v}' id='claim-{_e(c['id'])}'><td class='claim'><b>{_e(c['id'])}</b>{kind}<br>"
            f"{_e(c['text'])}<br><span class='small'>{_e(c['source'])}</span>{stat}</td>"
            f"<td class='num'>{_g(c['paper_value'])}<br><span class='small'>{_e(c['unit'])}</span></td>"
            f"<td class='num'>{measured}</td><td class='num'>{'<br>'.join(lines)}</td>"
            f"<td class='tol'>{_e(tol['kind'])} {tol['value']:g}</td>"
            f"<td class='verdict' data-agrees='{_json(c['agrees'])}' data-stable='{_json(c['stable'])}'>"
            f"{SHOWN[v]}</td><td class='why'>{_e(c['why'] or '')}</td></tr>"
        )
    return f"<table class='claims'>{head}{''.join(rows)}</table>"


def _figure(fig: FigureJson) -> str:
    names = "; ".join(
        f"{s['name']} ({'the paper' if s['kind'] == 'paper' else 'vmio'}"
        + (f", claim {s['claim']}" if s["claim"] else "")
        + ")"
        for s in fig["series"]
    )
    marks = "; ".join(f"{m['label']} (the paper, {m['axis']} = {m['value']:g})" for m in fig["marks"])
    return (
        f"<figure id='figure-{_e(fig['id'])}'><figcaption><b>{_e(fig['title'])}</b><br>"
        f"<span class='small'>From: {_e(fig['source'])}<br>x: {_e(fig['x'])}; y: {_e(fig['y'])}<br>"
        f"Series: {_e(names)}" + (f"<br>Paper's values: {_e(marks)}" if marks else "") + "</span>"
        f"</figcaption>{svg(fig)}</figure>"
    )


def _beyond(rows: list[BeyondRow]) -> str:
    head = "<tr><th>what-if</th><th>vmio</th><th>repetitions, spread</th><th>note</th></tr>"
    body = []
    for b in rows:
        spread = b["spread"]
        reps = f"n={len(b['values'])}" + (f"<br>{_g(spread['min'])} .. {_g(spread['max'])}" if spread else "")
        measured = "" if b["measured"] is None else f"{_g(b['measured'])} {_e(b['unit'])}"
        body.append(
            f"<tr id='beyond-{_e(b['id'])}'><td><b>{_e(b['id'])}</b><br>{_e(b['text'])}<br>"
            f"<span class='small'>statistic: {_e(b['statistic'])}</span></td><td class='num'>{measured}</td>"
            f"<td class='num'>{reps}</td><td>{_e(b['note'])}</td></tr>"
        )
    return f"<table class='beyond'>{head}{''.join(body)}</table>"


def _table(rows: Sequence[Mapping[str, object]]) -> str:
    keys = list(rows[0])
    head = "".join(f"<th>{_e(k)}</th>" for k in keys)
    body = "".join("<tr>" + "".join(_cell(r.get(k)) for k in keys) + "</tr>" for r in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _cell(v: object) -> str:
    numeric = isinstance(v, int | float) and not isinstance(v, bool)
    return f"<td class='num'>{_e(_fmt(v))}</td>" if numeric else f"<td>{_e(_fmt(v))}</td>"


def _fmt(v: object) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    if isinstance(v, list):
        return ", ".join(_fmt(x) for x in v)
    return "" if v is None else str(v)


def _size(b: int) -> str:
    return f"{b >> 20}M" if b >= 1 << 20 and not b % (1 << 20) else f"{b >> 10}K" if not b % 1024 else str(b)


def _g(v: float | None) -> str:
    return "" if v is None else f"{v:.4g}"


def _json(v: bool | None) -> str:
    return "null" if v is None else str(v).lower()


def _host_line(host: Mapping[str, object]) -> str:
    keys = ("hostname", "kernel", "cpu_model", "cores", "fio_version", "vmio_version")
    return ", ".join(f"{k} {host[k]}" for k in keys if host.get(k) is not None)


def _e(text: str) -> str:
    return html.escape(text, quote=True)

"""``DIR/index.html``: the paper's claims beside vmio's figures, one self-contained page."""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence

from vmio.reproduce.result import ClaimRow, Reproduction

STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 78em; color: #222; }
table { border-collapse: collapse; margin: 1em 0; }
th, td { border: 1px solid #ccc; padding: .3em .6em; vertical-align: top; text-align: left; }
th { background: #f3f3f3; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tr.agree td.verdict { background: #dff3df; }
tr.disagree td.verdict { background: #f8dcdc; }
tr.unjudged td.verdict { background: #eee; }
.small { color: #555; font-size: 90%; }
"""


def render(rep: Reproduction) -> str:
    p = rep.paper
    parts = [
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>{_e(p.id)}: vmio beside the paper</title><style>{STYLE}</style></head><body>",
        f"<h1 id='{_e(p.id)}'>{_e(p.title)}</h1>",
        f"<p><span lang='ja'>{_e(p.title_original)}</span><br>{_e(', '.join(p.authors))} ({p.year}). "
        f"Id <code>{_e(p.id)}</code>; see docs/references.md.</p>",
        f"<p class='small'>Scale: {_e(rep.scale)}. Accelerator: {_e(rep.accel or 'no guest ran')}. "
        f"Host: {_e(_host_line(rep.host))}.</p>",
        "<h2 id='claims'>Claims</h2>",
        _claims_table(rep.claim_rows()),
    ]
    if rep.fitted:
        parts += ["<h2 id='fitted'>Fitted parameters</h2>", _table(rep.fitted)]
    for name, rows in rep.details.items():
        if isinstance(rows, list) and rows and isinstance(rows[0], dict):
            parts += [f"<h2 id='{_e(name)}'>{_e(name)}</h2>", _table(rows)]
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
    head = "<tr><th>claim</th><th>paper</th><th>vmio</th><th>spread</th><th>tolerance</th><th>agrees</th><th>why</th></tr>"
    rows = []
    for c in claims:
        verdict = {True: "agree", False: "disagree", None: "unjudged"}[c["agrees"]]
        spread = c["spread"]
        spread_text = f"{spread['min']:.4g} .. {spread['max']:.4g} (n={spread['n']})" if spread else ""
        measured = "" if c["measured"] is None else f"{c['measured']:.4g}"
        tol = c["tolerance"]
        rows.append(
            f"<tr class='{verdict}' id='claim-{_e(c['id'])}'><td><b>{_e(c['id'])}</b><br>{_e(c['text'])}"
            f"<br><span class='small'>{_e(c['source'])}</span></td>"
            f"<td class='num'>{c['paper_value']:.4g} {_e(c['unit'])}</td><td class='num'>{measured}</td>"
            f"<td class='num'>{spread_text}</td><td>{_e(tol['kind'])} {tol['value']:g}</td>"
            f"<td class='verdict'>{_e(str(c['agrees']).lower() if c['agrees'] is not None else 'null')}</td>"
            f"<td>{_e(c['why'] or '')}</td></tr>"
        )
    return f"<table>{head}{''.join(rows)}</table>"


def _table(rows: Sequence[Mapping[str, object]]) -> str:
    keys = list(rows[0])
    head = "".join(f"<th>{_e(k)}</th>" for k in keys)
    body = "".join(
        "<tr>" + "".join(f"<td class='num'>{_e(_fmt(r.get(k)))}</td>" for k in keys) + "</tr>" for r in rows
    )
    return f"<table><tr>{head}</tr>{body}</table>"


def _fmt(v: object) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    if isinstance(v, list):
        return ", ".join(_fmt(x) for x in v)
    return "" if v is None else str(v)


def _host_line(host: Mapping[str, object]) -> str:
    keys = ("hostname", "kernel", "cpu_model", "cores", "fio_version", "vmio_version")
    return ", ".join(f"{k} {host[k]}" for k in keys if host.get(k) is not None)


def _e(text: str) -> str:
    return html.escape(text, quote=True)

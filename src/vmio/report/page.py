"""The report: one self-contained HTML file (inline CSS and SVG, no scripts, nothing fetched) and PNGs."""

from __future__ import annotations

import functools
import html
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from vmio.errors import InputError
from vmio.report import (
    answer,
    curves,
    drawing,
    plots_latency,
    plots_layers,
    plots_load,
    plots_percentiles,
    plots_run,
    plots_sweep,
    seed000,
    side_by_side,
    sla,
)
from vmio.report.data import CampaignData, Row, tcg_note
from vmio.report.figure import Plot, to_png
from vmio.report.summary_table import (
    ACHIEVED,
    SummaryRow,
    knee_text,
    rates_text,
    ratio_text,
    spread_text,
    summarize,
)
from vmio.spec.model import Workload
from vmio.store.rows import gc_paused
from vmio.system import files
from vmio.system.output_paths import all_or_none
from vmio.units import format_size, human_bytes

SECTIONS: tuple[tuple[str, str, Callable[[CampaignData, str | None], list[Plot]]], ...] = (
    ("curves", "How do IOPS and latency move along each swept axis? (one line per target)",
     curves.curve_plots),
    ("iops", "How many IOPS does each target achieve as the offered load rises?", plots_load.iops_plots),
    ("depth", "How do IOPS and latency change with queue depth and jobs?", plots_sweep.sweep_plots),
    ("latency-vs-iops", "Where does latency turn up as IOPS rise? (p50 and p99 against achieved IOPS)",
     plots_percentiles.knee_plots),
    ("latency-distribution", "How is latency distributed at each load? (percentile curves)",
     plots_percentiles.distribution_plots),
    ("latency-over-time", "Does latency hold steady within a run? (percentiles each second)",
     plots_percentiles.over_time_plots),
    ("layers", "Where does each I/O's time go? (mean per layer, stacked; reads and writes apart)",
     plots_layers.layer_plots),
    ("busy-cpu", "Is the device or the host CPU the limit? (busy % and CPU against offered load)",
     plots_load.busy_cpu_plots),
    ("per-operation-latency", "How long does each operation take beside co-running load?",
     plots_latency.per_operation_plots),
    ("over-time", "Do IOPS, busy % and CPU hold steady within a run?", plots_run.over_time_plots),
    ("qemu-threads", "Which QEMU threads use the CPU?", plots_run.qemu_thread_plots),
)  # fmt: skip
# with build(drawn=True): the order in which two processes take sections to build and draw, costliest first
# (measured on the demo when matplotlib drew every panel: the 42 panels of #over-time were a third of the
# work; drawn by report.chart, every section of the demo takes a few ms); the others follow
COSTLIEST = ("over-time", "qemu-threads", "latency-over-time", "latency-distribution", "curves", "busy-cpu")
# folded under the page's appendix (<details>): figures per second or per thread, and the categorical view
# of IOPS per offered load that #curves draws on a numeric axis
APPENDIX = ("iops", "latency-over-time", "over-time", "qemu-threads")
CSS = """
body { font-family: system-ui, sans-serif; margin: 1.5em auto; max-width: 1400px; color: #222; padding: 0 1em; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; border-bottom: 1px solid #ccc; margin-top: 2em; }
table { border-collapse: collapse; font-size: 0.85em; margin: 0.5em 0; }
th, td { border: 1px solid #ccc; padding: 0.2em 0.5em; text-align: left; vertical-align: top; }
th { background: #f0f0f0; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
figure { margin: 0.5em 0.5em 0.5em 0; border: 1px solid #ddd; padding: 0.5em; display: inline-block;
         vertical-align: top; max-width: calc(100% - 1.6em); }
figure svg { max-width: 100%; height: auto; display: block; }
ul.words { columns: 2; font-size: 0.9em; margin: 0.3em 0; padding-left: 1.2em; } ul.words li { break-inside: avoid; }
table.answer td { white-space: nowrap; } table.answer td:last-child { white-space: normal; }
details#appendix > summary { cursor: pointer; } details#appendix > summary h2 { display: inline; }
p.note { font-size: 0.85em; color: #444; }
nav.toc ol { columns: 2; font-size: 0.9em; }
figcaption { font-weight: 600; margin-bottom: 0.3em; }
figure.plot > figcaption { width: 0; min-width: 100%; } p.labels { font-size: 0.8em; color: #555; }
pre { background: #f7f7f7; padding: 0.5em; overflow-x: auto; font-size: 0.8em; } .no { color: #b00; }
"""


@dataclass
class Section:
    id: str
    title: str
    plots: list[Plot]


@dataclass
class Report:
    data: CampaignData
    baseline: str | None
    summary: list[SummaryRow]
    sections: list[Section]
    knees: list[sla.Knee] = field(default_factory=list)  # with the spec's [campaign] sla
    seed: list[seed000.SeedRow] = field(default_factory=list)  # hitachi-nvme-2016's configurations matched
    campaigns: list[CampaignData] = field(default_factory=list)  # several side by side: each, reference first
    answers: list[tuple[str, list[answer.AnswerRow]]] = field(default_factory=list)  # per campaign

    @property
    def plots(self) -> list[Plot]:
        return [p for s in self.sections for p in s.plots]

    def section(self, section_id: str) -> Section | None:
        return next((s for s in self.sections if s.id == section_id), None)


def default_baseline(data: CampaignData) -> str | None:
    """The first host target, else the first target."""
    names = data.target_names()
    hosts = [t for t in names if data.kind(t) == "host"]
    first = hosts or names
    return first[0] if first else None


def build(
    data: CampaignData, baseline: str | None = None, drawn: bool = False, limits: answer.Limits | None = None
) -> Report:
    """The report's sections and tables; with ``drawn``, its figures drawn too (in two processes when two
    CPUs are free: then only their SVGs are kept, and no PNG can be made of them). ``limits``: what
    ``vmio diagnose`` names as each point's limit (by campaign and point key), for ``#answer``."""
    if baseline is not None and baseline not in data.target_names():
        known = ", ".join(data.target_names())
        raise InputError(
            f"--baseline {baseline!r} is not a target of campaign {data.name!r}; targets: {known}"
        )
    base = baseline or default_baseline(data)
    summary = summarize(data, base) if base else []
    makers = [functools.partial(_plots, make, data, base) for _, _, make in SECTIONS]
    order = [[sid for sid, _, _ in SECTIONS].index(sid) for sid in COSTLIEST]
    # figures are many thousands of artists in cycles: the collector walking them was 12 % of the drawing
    with gc_paused():
        built = drawing.built(makers, order, worth_forking(data)) if drawn else [make() for make in makers]
    sections = [Section(sid, title, plots) for (sid, title, _), plots in zip(SECTIONS, built, strict=True)]
    knees = sla.knees(data, data.sla) if data.sla else []
    seed = seed000.rows(data, seed000.bare_target(data, base))
    report = Report(data, base, summary, [s for s in sections if s.plots], knees, seed)
    report.answers = [(data.name, answer.rows_of(data, summary, knees, limits or {}))]
    return report


def worth_forking(data: CampaignData) -> bool:
    """Whether a second process should share the drawing: only for matplotlib's figures, the per-operation
    box plots of a campaign that stored its operations. ``report.chart`` draws every other section in a few
    ms; for a report of charts alone the fork cost more than it saved (benchmarks/store_scale.py)."""
    return bool(data.oplat)


def _plots(
    make: Callable[[CampaignData, str | None], list[Plot]], data: CampaignData, base: str | None
) -> list[Plot]:
    return [p for p in make(data, base) if p.series]


def build_many(
    datas: list[CampaignData],
    baseline: str | None = None,
    drawn: bool = False,
    limits: answer.Limits | None = None,
) -> Report:
    """Several campaigns side by side, the first as the reference (``baseline``: one of its targets)."""
    if len(datas) == 1:
        return build(datas[0], baseline, drawn, limits)
    if baseline is not None and baseline not in datas[0].target_names():
        raise InputError(
            f"--baseline {baseline!r} is not a target of the reference campaign {datas[0].name!r}; "
            f"targets: {', '.join(datas[0].target_names())}"
        )
    merged = side_by_side.merge(datas)
    report = build(merged, side_by_side.reference_target(datas, baseline), drawn)
    report.campaigns = datas
    report.answers = [(d.name, _answer_rows(d, baseline, limits or {})) for d in datas]
    report.seed = []  # hitachi-nvme-2016's table compares one campaign's targets with the paper's
    return report


def _answer_rows(data: CampaignData, baseline: str | None, limits: answer.Limits) -> list[answer.AnswerRow]:
    """One campaign's rows of ``#answer`` on a page of several: against its own baseline target (the
    reference's when it has one of that name, else its default)."""
    base = baseline if baseline in data.target_names() else default_baseline(data)
    summary = summarize(data, base) if base else []
    knees = sla.knees(data, data.sla) if data.sla else []
    return answer.rows_of(data, summary, knees, limits)


def write(report: Report, out: Path, png_dir: Path | None = None) -> list[Path]:
    """Write the HTML (atomically) and, with ``png_dir``, one PNG per plot; return the paths."""
    written: list[Path] = []
    with all_or_none(written), gc_paused():  # the page and every PNG, or none of them; gc_paused: see build
        written.append(atomic_write(out, render(report).encode()))
        if png_dir is not None:
            for p in report.plots:  # each file recorded as soon as it is written, for all_or_none
                written.append(atomic_write(png_dir / f"{p.id}.png", to_png(p)))  # noqa: PERF401
    return written


def atomic_write(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    return files.write_atomic(path, data)


def render(report: Report) -> str:
    data = report.data
    e = html.escape
    svgs = drawing.svgs(report.plots)  # drawing is most of the time: two processes when two CPUs are free
    parts = [
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">',
        f"<title>vmio report: {e(data.name)}</title><style>{CSS}</style></head><body>",
        f"<h1>vmio report: {'campaigns' if report.campaigns else 'campaign'} {e(data.name)}</h1>",
        answer.section_html(  # several campaigns: each against its own baseline target
            report.answers,
            "baseline" if report.campaigns else report.baseline,
            _bound(report),
            _answer_note(report),
        ),
        side_by_side.campaigns_html(report.campaigns) if report.campaigns else "",
        _toc(report),
        _failures(data),
        _guest_warnings(data),
        _coarse_clocks(data),
    ]
    main = [s for s in report.sections if s.id not in APPENDIX]
    folded = [s for s in report.sections if s.id in APPENDIX]
    parts += [_section(sec, svgs) for sec in main]
    parts += [
        side_by_side.welch_html(report.campaigns) if report.campaigns else "",
        _seed_table(report),
        _sweeps(report),
        '<h2 id="setup">What was measured, and on what host?</h2>',
        _facts(data),
        _steady_precondition(data),
        '<details id="appendix"><summary><h2>Appendix: offered rates met, figures per second and per '
        "thread, IOPS per offered load</h2></summary>",
        '<h3 id="offered-rates">Offered rates met, per target</h3>',
        _summary_note(report),
        _summary_table(report),
        *(_section(sec, svgs) for sec in folded),
        "</details>",
    ]
    parts.append(
        f'<p class="labels">made by vmio on {time.strftime("%Y-%m-%d %H:%M:%S %Z")}</p></body></html>\n'
    )
    return "\n".join(parts)


def _section(sec: Section, svgs: Mapping[str, str]) -> str:
    e = html.escape
    figures = "".join(_figure(p, svgs[p.id]) for p in sec.plots)
    return f'<section id="{e(sec.id)}"><h2>{e(sec.title)}</h2><div class="figures">{figures}</div></section>'


def _bound(report: Report) -> str | None:
    bound = report.data.sla
    return f"{bound.metric} <= {bound.bound_ms:g} ms" if bound else None


def _answer_note(report: Report) -> str:
    return (
        f"Medians over repetitions [min-max]; IOPS per direction at the highest offered load; an offered rate is "
        f"achieved at {ACHIEVED:.0%} of it or more; the knee is the lowest rate not achieved (none: every rate "
        "was); latencies at the knee, or at the highest load without one; the limit is the one vmio diagnose "
        "names at the highest load. Every rate per target: the appendix."
    )


def _summary_note(report: Report) -> str:
    return (
        f"<p>Medians over repetitions [min-max]; baseline {html.escape(report.baseline or '-')}; an offered rate "
        f"is achieved at {ACHIEVED:.0%} of it or more; the knee is the lowest rate not achieved.</p>"
    )


def _toc(report: Report) -> str:
    items = ['<li><a href="#campaigns">Campaigns side by side</a></li>'] if report.campaigns else []
    items.append('<li><a href="#answer">Answer</a> (<a href="#summary">its table</a>)</li>')
    main = [s for s in report.sections if s.id not in APPENDIX]
    items += [f'<li><a href="#{html.escape(s.id)}">{html.escape(s.title)}</a></li>' for s in main]
    if report.campaigns:
        items.append('<li><a href="#welch">Against the reference (Welch)</a></li>')
    if report.seed:
        items.append(
            '<li><a href="#hitachi-nvme-2016">hitachi-nvme-2016 as it ran, beside this campaign</a></li>'
        )
    items.append('<li><a href="#setup">Host and tools</a></li>')
    if _conditioned(report.data):
        items.append(f'<li><a href="#steady-state">{html.escape(STEADY_TITLE)}</a></li>')
    items.append('<li><a href="#appendix">Appendix</a>: offered rates met; ' + ", ".join(
        f'<a href="#{html.escape(s.id)}">{html.escape(s.id)}</a>' for s in report.sections if s.id in APPENDIX
    ) + "</li>")  # fmt: skip
    return f'<nav class="toc"><h2 id="contents">Contents</h2><ol>{"".join(items)}</ol></nav>'


def _facts(data: CampaignData) -> str:
    rows = data.done() or data.rows
    facts = rows[0].host_facts if rows else {}
    keep = ("hostname", "kernel", "cpu_model", "cores", "memory_bytes", "fio_version", "vmio_version")
    memory = facts.get("memory_bytes")
    shown = {
        **facts,
        "memory_bytes": human_bytes(memory) if isinstance(memory, int | float) and memory else None,
    }
    cells = "".join(
        f"<tr><th>{html.escape(k.removesuffix('_bytes'))}</th><td>{html.escape(str(shown.get(k)))}</td></tr>"
        for k in keep
    )
    count = f"{len(data.done())} of {len(data.rows)} points done"
    return (
        f'<p>{html.escape(count)}; host facts of the first point:</p><table class="facts">{cells}</table>'
        + _storage(data)
        + _settles(data)
    )


def _settles(data: CampaignData) -> str:
    """Repeat-until-stable (``until_spread``): how many repetitions each point took and whether it settled."""
    if not data.settles:
        return ""
    rows = "".join(
        f"<tr><td>{html.escape(point)}</td><td class='num'>{taken}</td>"
        f"<td{'' if settled else ' class=no'}>{'settled' if settled else 'did NOT settle'}</td>"
        f"<td class='num'>{'-' if spread is None else f'{spread * 100:.1f}%'}</td></tr>"
        for point, (taken, settled, spread) in sorted(data.settles.items())
    )
    return (
        "<p id='until-stable'>Repeat until stable: each point's repetitions and whether its IOPS spread (the "
        "half-width of the 95 % interval of the mean) came within <code>until_spread</code>:</p>"
        "<table><tr><th>point</th><th>repetitions</th><th>settled</th><th>spread</th></tr>"
        + rows
        + "</table>"
    )


def _storage(data: CampaignData) -> str:
    """Per target, the storage its first done point recorded: each path's filesystem and mount options,
    the devices it goes through and the disks under them (model, firmware, rotational, scheduler,
    ``nr_requests``, logical block size); an rbd image's pool and cluster; a remote path's disks as fio
    named them. Points from before vmio recorded storage show none."""
    e = html.escape
    out = []
    for target in data.target_names():
        row = next((r for r in data.done() if r.target == target and r.host_facts.get("storage")), None)
        storage = row.host_facts.get("storage") if row else None
        entries = storage if isinstance(storage, list) else []
        out += [
            f"<tr><td>{e(target)}</td>" + "".join(f"<td>{e(c)}</td>" for c in _storage_cells(entry))
            for entry in entries
        ]
    if not out:
        return ""
    head = ("target", "path", "filesystem · mount options", "through", "disk · model · firmware",
            "rotational", "scheduler", "nr_requests", "logical block")  # fmt: skip
    return (
        '<table class="storage"><tr>' + "".join(f"<th>{e(h)}</th>" for h in head) + "</tr>" + "".join(out)
        + "</table>"
    )  # fmt: skip


def _storage_cells(entry: object) -> list[str]:
    """One path's cells of the storage table."""
    if not isinstance(entry, Mapping):
        return ["-"] * 8
    path = str(entry.get("path") or "-")
    if "pool" in entry:  # an rbd image
        return [path, "-", f"cluster {entry.get('cluster_id') or 'unknown'}", "-", "-", "-", "-", "-"]
    if "fio_disks" in entry:  # a remote path: what fio there named
        named = entry.get("fio_disks")
        shown = ", ".join(map(str, named)) if isinstance(named, list) else "unknown"
        return [f"{entry.get('host')}:{path}", "-", "-", f"{shown} (fio's disk_util)", "-", "-", "-", "-"]
    fs = " · ".join(str(entry[k]) for k in ("filesystem", "mount_options") if entry.get(k)) or "-"
    chain = entry.get("chain")
    through = " → ".join(map(str, chain)) if isinstance(chain, list) and chain else "-"
    disks = [d for d in entry.get("disks") or [] if isinstance(d, Mapping)]

    def each(key: str, show: Callable[[object], str] = str) -> str:
        return ", ".join("-" if d.get(key) is None else show(d.get(key)) for d in disks) or "unknown"

    named = ", ".join(
        " · ".join(str(d[k]) for k in ("disk", "model", "firmware") if d.get(k)) for d in disks
    ) or ("unknown" if entry.get("disks") == "unknown" else "-")
    rotational = each("rotational", lambda v: "yes" if v else "no")
    return [
        path,
        fs,
        through,
        named,
        rotational,
        each("scheduler"),
        each("nr_requests"),
        each("logical_block_size"),
    ]


STEADY_TITLE = "Did each point reach steady state, and what did preconditioning write first?"


def _conditioned(data: CampaignData) -> list[Row]:
    """The points that asked for steady state or followed their target's preconditioning."""
    return [r for r in data.rows if r.steady or r.precondition]


def _steady_precondition(data: CampaignData) -> str:
    """Per point: the steady-state criterion, whether fio found it held and when (fio then stopped the job),
    and the preconditioning that ran before the target's first point (bytes fio wrote, seconds it took)."""
    rows = _conditioned(data)
    if not rows:
        return ""
    e = html.escape
    head = (
        "point",
        "status",
        "steady criterion",
        "reached",
        "at s",
        "jobs",
        "preconditioned size",
        "sequential fill written",
        "random writes written",
        "precondition s",
    )
    out = [
        f'<section id="steady-state"><h2>{e(STEADY_TITLE)}</h2>',
        "<p>Steady state: fio's steadystate criterion over the measured jobs (the workload's runtime is the "
        "maximum); preconditioning (SNIA PTS): a sequential fill, then random writes of twice the size, once "
        "before the target's first point.</p>",
        '<table class="steady"><tr>',
        *(f"<th>{e(h)}</th>" for h in head),
        "</tr>",
    ]
    for r in rows:
        steady: Mapping[str, object] = r.steady or {}
        pre: Mapping[str, object] = r.precondition or {}
        reached = steady.get("reached")
        cells = [
            _cell("point", r.point),
            _cell("status", r.status),
            _cell("criterion", steady.get("criterion")),
            _cell(
                "reached",
                reached,
                "-" if reached is None else ("yes" if reached else "no"),
                "" if reached is None else ("yes" if reached else "no"),
            ),  # fmt: skip
            _cell("at_s", steady.get("at_s"), num=True),
            _cell("jobs", steady.get("jobs"), num=True),
            _cell("size", pre.get("size"), _bytes(pre.get("size")), num=True),
            _cell("fill_bytes", pre.get("fill_bytes"), _bytes(pre.get("fill_bytes")), num=True),
            _cell("random_bytes", pre.get("random_bytes"), _bytes(pre.get("random_bytes")), num=True),
            _cell("seconds", pre.get("seconds"), num=True),
        ]
        out.append(f'<tr data-point="{e(str(r.point))}">{"".join(cells)}</tr>')
    out.append("</table></section>")
    return "".join(out)


def _cell(key: str, value: object, text: str | None = None, css: str = "", num: bool = False) -> str:
    """A cell with the stored value in ``data-value`` (JSON) beside its shown text."""
    shown = (
        text
        if text is not None
        else ("-" if value is None else f"{value:g}" if isinstance(value, float) else str(value))
    )
    classes = " ".join(c for c in (css, "num" if num else "") if c)
    attr = f' class="{classes}"' if classes else ""
    raw = html.escape(json.dumps(value))
    return f'<td data-key="{key}" data-value="{raw}"{attr}>{html.escape(shown)}</td>'


def _bytes(value: object) -> str | None:
    return format_size(value) if isinstance(value, int) and not isinstance(value, bool) else None


def _summary_table(report: Report) -> str:
    head: tuple[str, ...] = (
        "workload",
        "bs",
        "load",
        "target",
        "IOPS at max [min-max]",
        f"vs {report.baseline}",
        "knee",
        "offered rates (achieved IOPS)",
    )
    bound = report.data.sla
    if bound:
        head += (f"IOPS at {bound.metric} <= {bound.bound_ms:g} ms",)
    out = ['<table class="summary"><tr>', *(f"<th>{html.escape(h)}</th>" for h in head), "</tr>"]
    for r in report.summary:
        rates = ", ".join(
            f'{x.offered} <span class="{"yes" if x.ok else "no"}">{"yes" if x.ok else "no"}</span> '
            f"({x.achieved.median:.0f})"
            for x in r.rates
        ) or html.escape(rates_text(r))
        cells = (r.workload, format_size(r.bs), str(r.load_processes), r.label or r.target, spread_text(r.saturation, 0),
                 ratio_text(r), knee_text(r))  # fmt: skip
        extra = f'<td class="sla">{html.escape(_knee_cell(report, r))}</td>' if bound else ""
        out.append(
            "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells) + f"<td>{rates}</td>{extra}</tr>"
        )
    out.append("</table>")
    if note := tcg_note(r.label for r in report.summary):
        out.append(f'<p class="note">{html.escape(note.strip())}</p>')
    return "".join(out)


def _seed_table(report: Report) -> str:
    """hitachi-nvme-2016's figures beside the measured ones, each row with its accelerator and build."""
    found = report.seed
    if not found:
        return ""
    e = html.escape
    tcg = "tcg" in seed000.accelerators(found)
    note = (
        f"<p>Each of the paper's configurations (hitachi-nvme-2016, docs/references.md: {e(seed000.SEED_SETUP)}) beside the targets of this campaign "
        "that have its shape; ratios are IOPS over Bare's at the top of each 4 KiB random sweep (here: the "
        "highest median over the offered loads). The paper's N is 16; here N is the fio processes column."
        + (f" <strong>{e(seed000.TCG_NOTE)}</strong>" if tcg else "")
        + "</p>"
    )
    head = (
        "hitachi-nvme-2016 configuration",
        "paper figure",
        "target",
        "accelerator · build",
        "fio processes",
        "read vs Bare: paper (KVM)",
        "read vs Bare: here",
        "write vs Bare: paper (KVM)",
        "write vs Bare: here",
    )
    out = [
        '<h3 id="hitachi-nvme-2016"><a id="seed-000"></a>hitachi-nvme-2016 as it ran, beside this campaign</h3>',
        note,
        '<table class="seed000"><tr>',
        *(f"<th>{e(h)}</th>" for h in head),
        "</tr>",
    ]
    for r in found:
        c = r.config
        cells = (
            c.term,
            c.figure,
            r.target,
            r.setup,
            str(r.fio),
            seed_cell(c.read_ratio, c.read_iops, c.approx),
            here_cell(r.read),
            seed_cell(c.write_ratio, c.write_iops, c.approx),
            here_cell(r.write),
        )
        out.append("<tr>" + "".join(f"<td>{e(x)}</td>" for x in cells) + "</tr>")
    out.append("</table>")
    return "".join(out)


def seed_cell(ratio: float | None, iops: float | None, approx: bool) -> str:
    if ratio is None:
        return "-"
    text = f"≈{ratio:.1f}" if approx else f"{ratio:.2f}"
    return text + (f" ({iops / 1e3:.0f}k IOPS)" if iops is not None else "")


def here_cell(m: seed000.Measured) -> str:
    if m.iops is None:
        return "-"
    ratio = "-" if m.ratio is None else f"{m.ratio:.2f}"
    return f"{ratio} ({m.iops:.0f} IOPS)"


def _knee_cell(report: Report, r: SummaryRow) -> str:
    """The summary row's SLA knee per direction: IOPS, "(never crossed)" or "-" when over from the start."""
    mine = [
        k
        for k in report.knees
        if (k.target, k.workload, k.bs, k.load_processes) == (r.target, r.workload, r.bs, r.load_processes)
    ]
    cells = []
    for k in mine:
        value = "-" if k.iops is None else f"{k.iops:.0f}"
        cells.append(f"{k.ddir} {value}" + ("" if k.crossed else " (never crossed)"))
    return "; ".join(cells) or "-"


def _guest_warnings(data: CampaignData) -> str:
    """Points whose guest kernel reported disk trouble (I/O timeouts, errors): their figures need care."""
    warned = [r for r in data.rows if r.guest_io_warnings]
    if not warned:
        return ""
    items = "".join(
        f"<li>{html.escape(r.point)}: {r.guest_io_warnings} guest kernel disk warnings</li>" for r in warned
    )
    return (
        "<h2>Guest disk warnings</h2><p>The guest kernel reported I/O timeouts or errors during these points "
        "(see each run's log in the store); their figures include the stalls.</p>"
        f'<ul class="failed">{items}</ul>'
    )


def _coarse_clocks(data: CampaignData) -> str:
    """Points whose traced guest measured off a clock that steps by the kernel's tick (docs/layers.md, "The
    guest's clock"): their percentiles (fio's, the guest block layer's) are multiples of a step."""
    noted = [
        (r.point, layer, note)
        for r in data.rows
        for layer, entry in (r.layers or {}).items()
        if isinstance(entry, dict) and isinstance(note := entry.get("clock"), str)
    ]
    if not noted:
        return ""
    items = "".join(
        f"<li>{html.escape(point)}, {layer}: {html.escape(note)}</li>" for point, layer, note in noted
    )
    return (
        "<h2>Coarse guest clocks</h2><p>These points' guests counted time in the kernel's ticks (no usable "
        "TSC): their latency percentiles read 0 below a tick and are multiples of it; their means are not "
        f'biased.</p><ul class="failed">{items}</ul>'
    )


def _sweep_said(spec: Workload) -> list[str]:
    """What a workload's spec says of its sweeps: queue depths, job counts, shares, arrivals, stop_at."""
    sweeps = (("iodepth", spec.iodepth_sweep), ("numjobs", spec.numjobs_sweep))
    said = [f"{k} = {list(v)}" for k, v in sweeps if v]
    if any(isinstance(o, str) for o in spec.offered_iops):
        loads = ["max" if o is None else o for o in spec.offered_iops]
        said.append(f"offered_iops = {loads} (shares of the max point's achieved IOPS)")
    if spec.arrivals != "uniform":
        said.append(f"arrivals = {spec.arrivals}")
    if spec.stop_at is not None:
        said.append(f"stop_at {spec.stop_at}")
    return said


def _sweeps(report: Report) -> str:
    """Section ``#sweeps``: the workloads that sweep queue depth or jobs, offer shares of the max point,
    space their I/Os as Poisson arrivals or stop at a latency, and where each sweep stopped and why."""
    datas = report.campaigns or [report.data]
    e = html.escape
    items, stops = [], []
    for d in datas:
        prefix = f"{d.name}: " if report.campaigns else ""
        for name, spec in d.workload_specs.items():
            said = _sweep_said(spec)
            if said:
                items.append(f"<li>{e(prefix + name)}: {e('; '.join(said))}</li>")
        stops += [_stop_item(s, prefix) for s in d.stops]
    if not items and not stops:
        return ""
    out = '<section id="sweeps"><h2>How were the sweeps run, and where did they stop?</h2>'
    out += f"<ul>{''.join(items)}</ul>" if items else ""
    return out + (f'<ul class="stops">{"".join(stops)}</ul>' if stops else "") + "</section>"


def _stop_item(stop: Mapping[str, object], prefix: str) -> str:
    """One stopped sweep of ``#sweeps``: where it stopped, why, and the points it did not run."""
    e = html.escape
    not_run = stop["not_run"]
    skipped = ", ".join(str(k) for k in not_run) if isinstance(not_run, list) else ""
    point = e(str(stop["point"]))
    return (
        f'<li data-point="{point}">{e(prefix)}sweep {e(str(stop["sweep"]))} stopped at '
        f"{point}: {e(str(stop['why']))}; not run: {e(skipped or 'none')}</li>"
    )


def _failures(data: CampaignData) -> str:
    failed = [r for r in data.rows if r.status != "done"]
    if not failed:
        return ""
    items = "".join(f"<li>{html.escape(r.point)}: {html.escape(str(r.error))}</li>" for r in failed)
    return f'<h2>Failed points</h2><ul class="failed">{items}</ul>'


def _figure(plot: Plot, svg: str) -> str:
    e = html.escape
    series = e(json.dumps(plot.series_ids()))
    values = e(json.dumps(plot.values, separators=(",", ":")))
    return (
        f'<figure class="plot" id="{e(plot.id)}" data-series="{series}" data-values="{values}">'
        f"<figcaption>{e(plot.title)}</figcaption>\n{svg}</figure>"
    )

"""The workload part of a ``[[vm]]`` table → a :mod:`vmio.membal.workloads` object."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from vmio.errors import TraceError
from vmio.membal import workloads as w
from vmio.membal.specfields import Where, get_float, get_int, get_pages, get_str, need_table

TRACE_FORMATS = ("cloudphysics-csv",)

# workload → the fields it takes (besides name, workload, rate, floor)
WORKLOADS: dict[str, tuple[str, ...]] = {
    "uniform": ("pages",),
    "zipf": ("pages", "alpha"),
    "scan": ("pages", "run"),
    "loop": ("pages",),
    "phases": ("phases",),
    "trace": ("path", "format"),
    "web-normal": ("content", "file", "common", "common_share"),
    "web-burst": ("content", "file", "hot", "factor", "burst_every", "burst_length"),
    "nfs-images": ("images", "boot"),
}

Parser = Callable[[Where, Mapping[str, Any], int, Path], w.Workload]


def parse_workload(where: Where, t: Mapping[str, Any], kind: str, page: int, base: Path) -> w.Workload:
    return _PARSERS[kind](where, t, page, base)


def _uniform(where: Where, t: Mapping[str, Any], page: int, base: Path) -> w.Workload:
    return w.Uniform(get_pages(where, t, "pages", page))


def _zipf(where: Where, t: Mapping[str, Any], page: int, base: Path) -> w.Workload:
    pages = get_pages(where, t, "pages", page, high=1 << 24)
    return w.Zipf(pages, get_float(where, t, "alpha", 1.0, low=0.0, high=5.0))


def _scan(where: Where, t: Mapping[str, Any], page: int, base: Path) -> w.Workload:
    return w.Scan(get_pages(where, t, "pages", page), get_int(where, t, "run", 64, low=1, high=1 << 20))


def _loop(where: Where, t: Mapping[str, Any], page: int, base: Path) -> w.Workload:
    return w.Loop(get_pages(where, t, "pages", page))


def _trace(where: Where, t: Mapping[str, Any], page: int, base: Path) -> w.Workload:
    fmt = get_str(where, t, "format", TRACE_FORMATS[0], choices=TRACE_FORMATS)
    path = base / get_str(where, t, "path")
    try:
        return w.Trace.load(str(path), fmt, page)
    except TraceError as exc:
        line = where.src.line(where.table, where.index or 0, "path")
        raise TraceError(f"{where.src.path}:{line}: {where.label}.path: {exc}") from None


def _web_normal(where: Where, t: Mapping[str, Any], page: int, base: Path) -> w.Workload:
    file = get_pages(where, t, "file", page, "32k", high=1 << 16)
    content = get_pages(where, t, "content", page)
    common = get_pages(where, t, "common", page, 0, high=content) if "common" in t else 0
    share = get_float(where, t, "common_share", 0.5 if common else 0.0, low=0.0, high=1.0)
    return w.WebNormal(content, file, common, share)


def _web_burst(where: Where, t: Mapping[str, Any], page: int, base: Path) -> w.Workload:
    content = get_pages(where, t, "content", page)
    every = get_int(where, t, "burst_every", 4000, low=1, high=10**9)
    return w.WebBurst(
        content_pages=content,
        hot_pages=get_pages(where, t, "hot", page, max(1, content // 20), high=content),
        factor=get_float(where, t, "factor", 100.0, low=1.0, high=1e6),
        burst_every=every,
        burst_length=get_int(where, t, "burst_length", every // 2, low=0, high=every),
        file_pages=get_pages(where, t, "file", page, "32k", high=1 << 16),
    )


def _nfs_images(where: Where, t: Mapping[str, Any], page: int, base: Path) -> w.Workload:
    return w.NfsImages(get_int(where, t, "images", 4, low=1, high=1 << 16), get_pages(where, t, "boot", page))


def _phases(where: Where, t: Mapping[str, Any], page: int, base: Path) -> w.Workload:
    value = t.get("phases")
    accepted = "use a list of tables like {workload = 'zipf', pages = 1000, alpha = 1.0, length = 50000}"
    if not isinstance(value, list) or not value:
        raise where.error("phases", value, accepted)
    phases = []
    for i, item in enumerate(value):
        sub = Where(where.src, where.table, where.index, f"{where.label}.phases[{i}]", anchor="phases")
        if not isinstance(item, dict):
            raise sub.error(None, item, accepted)
        kind = get_str(sub, item, "workload", choices=tuple(k for k in WORKLOADS if k != "phases"))
        need_table(sub, item, {"workload", "length"} | set(WORKLOADS[kind]))
        phases.append(
            (_PARSERS[kind](sub, item, page, base), get_int(sub, item, "length", low=1, high=10**9))
        )
    return w.Phases(tuple(phases))


_PARSERS: dict[str, Parser] = {
    "uniform": _uniform,
    "zipf": _zipf,
    "scan": _scan,
    "loop": _loop,
    "phases": _phases,
    "trace": _trace,
    "web-normal": _web_normal,
    "web-burst": _web_burst,
    "nfs-images": _nfs_images,
}

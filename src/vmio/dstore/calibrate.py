"""Fitting the store model to a measured profile, and asking it what-if questions.

The topology (replicas, devices, write path, network, stripe) is taken as known; the fit finds the
per-device service time and bandwidth that reproduce the measured IOPS (and so, by Little's law, the mean
latency) at the chosen block sizes. A straight-line fit of 1/IOPS against block size gives the start; a
log-spaced grid refined three times around the best point gives the answer. The p99/mean ratio is the
median of the measured ones.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from vmio.dstore.model import Prediction, StoreParams, predict, solve
from vmio.dstore.profile import Point, Profile
from vmio.errors import InputError
from vmio.units import parse_size

LOOPBACK_BW = 5e9
GRID = 21


@dataclass(frozen=True)
class Fit:
    """A fitted model and how well it matches the points it was fitted to."""

    params: StoreParams
    outstanding: int
    read_frac: float
    fit_bs: list[int]
    rms_log_error: float


def parse_network(text: str) -> float:
    """Bytes per second from a link speed in bits: ``10G``, ``25G``, ``100M``, ``1.5G``; or ``loopback``."""
    if text.strip().lower() == "loopback":
        return LOOPBACK_BW
    value = text.strip().upper().removesuffix("BPS").removesuffix("BIT/S").removesuffix("B")
    scale = {"K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}.get(value[-1:])
    number = value[:-1] if scale else value
    try:
        bits = float(number) * (scale or 1.0)
    except ValueError:
        raise InputError(
            f"--network {text!r} is not a link speed; use bits per second such as '10G', "
            "'25G', '100M' or 'loopback'"
        ) from None
    if bits <= 0:
        raise InputError(f"--network {text!r} must be a positive speed")
    return bits / 8.0


def fit_profile(profile: Profile, base: StoreParams, fit_bs: Sequence[int] | None = None) -> Fit:
    """Fit ``base``'s device service time and bandwidth to ``profile`` at ``fit_bs`` (default: all)."""
    points = _chosen(profile.points, fit_bs)
    n = int(profile.setup.get("iodepth", 50))
    read_frac = float(profile.setup.get("rwmixread", 30)) / 100.0
    op0, bw0 = _line_start(points, base, read_frac)
    best = (op0, bw0)
    span = 8.0
    for _ in range(4):
        best = _grid_step(points, base, n, read_frac, best, span)
        span = span**0.35
    ratios = [p.p99_lat_ms / p.mean_lat_ms for p in points if p.mean_lat_ms > 0 and p.p99_lat_ms > 0]
    p99 = float(np.median(ratios)) if ratios else base.p99_factor
    params = base.with_(dev_op_s=best[0], dev_bw=best[1], p99_factor=max(1.0, p99))
    err = _errors(points, params, n, read_frac)
    return Fit(params, n, read_frac, [p.bs for p in points], float(np.sqrt(np.mean(np.square(err)))))


def _chosen(points: list[Point], fit_bs: Sequence[int] | None) -> list[Point]:
    if fit_bs is None:
        return list(points)
    by_bs = {p.bs: p for p in points}
    missing = [bs for bs in fit_bs if bs not in by_bs]
    if missing:
        raise InputError(f"--fit-bs {missing!r} not in the profile, which has {sorted(by_bs)!r}")
    if not fit_bs:
        raise InputError("--fit-bs is empty; give at least one block size")
    return [by_bs[bs] for bs in fit_bs]


def _line_start(points: list[Point], base: StoreParams, r: float) -> tuple[float, float]:
    """Start values from 1/IOPS ≈ a + c·bs on the busiest resource, the devices."""
    copies = (r + (1 - r) * base.replicas) / base.devices
    bs = np.array([p.bs for p in points], dtype=np.float64)
    inv = np.array([1.0 / p.iops for p in points])
    if len(points) > 1 and np.ptp(bs) > 0:
        c, a = np.polyfit(bs, inv, 1, w=1.0 / inv)
    else:
        a, c = inv[0] * 0.8, inv[0] * 0.2 / bs[0]
    a, c = max(float(a), 1e-7), max(float(c), 1e-13)
    return a / copies, copies / c


def _grid_step(
    points: list[Point], base: StoreParams, n: int, r: float, centre: tuple[float, float], span: float
) -> tuple[float, float]:
    factors = np.exp(np.linspace(-np.log(span), np.log(span), GRID))
    grid_ops, grid_bws = np.meshgrid(centre[0] * factors, centre[1] * factors, indexing="ij")
    ops, bws = grid_ops.ravel(), grid_bws.ravel()
    cost = np.zeros_like(ops)
    for p in points:
        x, _ = solve(base, p.bs, n, r, dev_op_s=ops, dev_bw=bws)
        cost += np.square(np.log(x / p.iops))
    i = int(np.argmin(cost))
    return float(ops[i]), float(bws[i])


def _errors(points: list[Point], params: StoreParams, n: int, r: float) -> list[float]:
    preds = predict(params, [p.bs for p in points], n, r)
    return [float(np.log(q.iops / p.iops)) for p, q in zip(points, preds, strict=True)]


def what_if(
    fit: Fit,
    bs_list: list[int],
    *,
    replicas: int | None = None,
    stripe: int | None = None,
    net_bw: float | None = None,
    write_path: str | None = None,
    cache_share: float | None = None,
    outstanding: int | None = None,
) -> list[Prediction]:
    """Predictions of the fitted model with some of its topology changed."""
    asked: dict[str, object] = {
        "replicas": replicas,
        "stripe": stripe,
        "net_bw": net_bw,
        "write_path": write_path,
        "cache_share": cache_share,
    }
    changes = {key: value for key, value in asked.items() if value is not None}
    params = fit.params.with_(**changes)
    return predict(params, bs_list, outstanding or fit.outstanding, fit.read_frac)


def size_list(values: Sequence[str]) -> list[int]:
    """Block sizes from strings, as the CLI gives them."""
    try:
        return [parse_size(v) for v in values]
    except ValueError as exc:
        raise InputError(str(exc)) from exc

"""Student's t quantile for any real ``df > 0``, without scipy.

The t distribution's tail is a regularized incomplete beta function: for ``t >= 0``,
``P(T > t) = I_x(df/2, 1/2) / 2`` with ``x = df / (df + t^2)``. ``incomplete_beta`` evaluates ``I_x(a, b)``
by its continued fraction (modified Lentz; DLMF 8.17.22), and ``t_quantile`` inverts it by bisection in
``t`` to double precision (tests/test_student.py holds it to scipy within 1e-9 relative).
"""

from __future__ import annotations

import math

_EPS = 1e-16
_TINY = 1e-300
_MAX_TERMS = 10_000


def incomplete_beta(x: float, a: float, b: float) -> float:
    """The regularized incomplete beta function ``I_x(a, b)`` for ``0 <= x <= 1``, ``a, b > 0``."""
    if not 0.0 <= x <= 1.0 or a <= 0 or b <= 0:
        raise ValueError(f"incomplete_beta needs 0 <= x <= 1 and a, b > 0, got x={x}, a={a}, b={b}")
    return _incomplete_beta(x, 1.0 - x, a, b)


def _incomplete_beta(x: float, y: float, a: float, b: float) -> float:
    """``I_x(a, b)`` given ``y = 1 - x`` too, so that neither loses digits to the subtraction."""
    if x == 0.0 or y == 0.0:
        return 0.0 if x == 0.0 else 1.0
    if x > (a + 1) / (a + b + 2):  # the fraction converges fast below this point: use the symmetry
        return 1.0 - _incomplete_beta(y, x, b, a)
    log_front = a * math.log(x) + b * math.log(y) - _log_beta(a, b)
    return math.exp(log_front) * _beta_fraction(x, a, b) / a


def _log_beta(a: float, b: float) -> float:
    return math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)


def _beta_fraction(x: float, a: float, b: float) -> float:
    """The continued fraction of ``I_x(a, b)``'s DLMF 8.17.22, by the modified Lentz method."""
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1)
    d = 1.0 / (d if abs(d) > _TINY else _TINY)
    value = d
    for m in range(1, _MAX_TERMS):
        for numerator in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > _TINY else _TINY)
            c = 1.0 + numerator / c
            c = c if abs(c) > _TINY else _TINY
            value *= c * d
        if abs(c * d - 1.0) < _EPS:
            return value
    return value  # not reached for the arguments t_quantile passes (a = df/2, b = 1/2)


def t_quantile(p: float, df: float) -> float:
    """The ``p`` quantile of Student's t with ``df`` degrees of freedom (``0 < p < 1``, ``df > 0``)."""
    if not 0.0 < p < 1.0 or not df > 0:
        raise ValueError(f"t_quantile needs 0 < p < 1 and df > 0, got p={p}, df={df}")
    if p == 0.5:
        return 0.0
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    # Bisect on whichever of P(|T| > t) (decreasing in t) and P(|T| < t) (increasing) is the smaller at the
    # quantile, so the comparison keeps its digits; above(t) says the quantile lies above t.
    if p > 0.75:
        target = 2.0 * (1.0 - p)

        def above(t: float) -> bool:
            return _two_tail(t, df) > target
    else:
        target = 2.0 * p - 1.0

        def above(t: float) -> bool:
            return _centre(t, df) < target

    lo, hi = 1.0, 1.0
    while above(hi):
        lo, hi = hi, hi * 2.0
    while lo > 0.0 and not above(lo):
        lo, hi = lo / 2.0, lo
    while hi - lo > _EPS * hi:  # above(lo) and not above(hi)
        mid = (lo + hi) / 2.0
        if mid in (lo, hi):
            break
        if above(mid):
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2.0


def _split(t: float, df: float) -> tuple[float, float]:
    """``x = df / (df + t^2)`` and ``1 - x``, each computed without the subtraction."""
    t2 = t * t
    return df / (df + t2), t2 / (df + t2)


def _two_tail(t: float, df: float) -> float:
    """``P(|T| > t)`` for ``t >= 0``: ``I_x(df/2, 1/2)``."""
    x, y = _split(t, df)
    return _incomplete_beta(x, y, df / 2.0, 0.5)


def _centre(t: float, df: float) -> float:
    """``P(|T| < t)`` for ``t >= 0``: ``I_{1-x}(1/2, df/2)``."""
    x, y = _split(t, df)
    return _incomplete_beta(y, x, 0.5, df / 2.0)

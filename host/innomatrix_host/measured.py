"""Which intervals are measured: the one rule the host's summaries, the adaptive trial and the
report's frame all apply.

A driver's interval reported at t covers (t - interval, t] of its run; it is measured when it
starts at or after the warmup, so no warmup second leaks into a figure. Times are floats: a
micro-second of slack keeps 10.000000001 from falling on the wrong side.
"""

from __future__ import annotations

EPSILON_S = 1e-6


def first_measured_t(warmup_s: float, interval_s: float) -> float:
    """The earliest interval time that is measured (a caller compares `t >= first_measured_t(...)`,
    one interval at a time or a whole array at once)."""
    if interval_s <= 0:
        raise ValueError(f"report_interval_s must be positive, got {interval_s}")
    return warmup_s + interval_s - EPSILON_S

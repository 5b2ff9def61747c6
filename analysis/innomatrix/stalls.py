"""Why a trial stalled: for each stall episode (measured intervals that did next to nothing,
innomatrix_host.sysbench.stall_flags), what coincided with it in the same intervals, by rules
that are data (`RULES`, thresholds named in README) — or "no cause seen", never a guess.

Each rule looks at one interval's figures from the collectors (the frame aligns them to the
driver's intervals) and says what it saw there, with the figure; an episode's causes are the rules
that fired in any of its intervals, each with its most extreme figure. A rule whose figures the
trial does not have (a server without a checkpoint age, a trial without iostat) is silent, and a
stall whose intervals no rule explains says so.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from innomatrix_host import flags as host_flags

NO_CAUSE = "no cause seen"
# Checkpoint age at this share of the redo capacity or more: InnoDB flushes in a hurry near it
# (MariaDB's async point is 7/8 of the log's usable size, its sync point 15/16 of it; MySQL's are of
# the same order), and a write stalls on the flushing.
CHECKPOINT_SHARE = 0.75
# A device's request wait at this many times its median over the trial's measured intervals, and at
# least AWAIT_FLOOR_MS: an fsync burst or the device's own pause.
AWAIT_FACTOR, AWAIT_FLOOR_MS = 4.0, 5.0
# CPU saturated in an interval by the CPU-bound flag's own rule for a whole trial: vmstat idle and
# iowait both below its floor.
CPU_IDLE_PCT = host_flags.CPU_FLOOR_PCT


@dataclass(frozen=True)
class Figures:
    """A trial's per-interval figures, aligned to its measured driver intervals (NaN: not measured
    there), and what the server keeps of redo (None: not known)."""

    series: Mapping[str, np.ndarray]
    redo_capacity_bytes: int | None

    def at(self, metric: str, index: int) -> float:
        values = self.series.get(metric)
        return float(values[index]) if values is not None and index < len(values) else math.nan

    def median(self, metric: str) -> float:
        values = self.series.get(metric)
        if values is None or not np.isfinite(values).any():
            return math.nan
        return float(np.nanmedian(values))


@dataclass(frozen=True)
class Rule:
    """`seen(figures, interval)`: the figure that fired the rule there (larger: more extreme), or None."""

    cause: str
    unit: str
    seen: Callable[[Figures, int], float | None]


def _checkpoint(figures: Figures, index: int) -> float | None:
    age = figures.at("status.checkpoint_age", index)
    if not figures.redo_capacity_bytes or math.isnan(age):
        return None
    share = age / figures.redo_capacity_bytes
    return 100 * share if share >= CHECKPOINT_SHARE else None


def _positive(metric: str) -> Callable[[Figures, int], float | None]:
    def seen(figures: Figures, index: int) -> float | None:
        value = figures.at(metric, index)
        return value if value > 0 else None
    return seen


def _await(figures: Figures, index: int) -> float | None:
    worst = None
    for metric in ("iostat.r_await", "iostat.w_await"):
        value, usual = figures.at(metric, index), figures.median(metric)
        if not math.isnan(value) and not math.isnan(usual) and value >= max(AWAIT_FACTOR * usual, AWAIT_FLOOR_MS):
            worst = value if worst is None else max(worst, value)
    return worst


def _cpu(figures: Figures, index: int) -> float | None:
    idle, iowait = figures.at("vmstat.id", index), figures.at("vmstat.wa", index)
    return 100 - idle - iowait if idle < CPU_IDLE_PCT and iowait < CPU_IDLE_PCT else None


RULES = (
    Rule(f"checkpoint age at {CHECKPOINT_SHARE:.0%} of the redo capacity or more", "% of it", _checkpoint),
    Rule("free-page waits (Innodb_buffer_pool_wait_free)", "/s", _positive("status.Innodb_buffer_pool_wait_free")),
    Rule("redo log waits (Innodb_log_waits)", "/s", _positive("status.Innodb_log_waits")),
    Rule(f"device wait at {AWAIT_FACTOR:g}× its median or more", "ms", _await),
    Rule(f"CPU saturated (idle and iowait below {CPU_IDLE_PCT:g} %)", "% busy", _cpu),
)
METRICS = ("status.checkpoint_age", "status.Innodb_buffer_pool_wait_free", "status.Innodb_log_waits",
           "iostat.r_await", "iostat.w_await", "vmstat.id", "vmstat.wa")


def explain(runs: Sequence[tuple[int, int]], times: Sequence[float], figures: Figures) -> list[str]:
    """One line per stall episode ((first interval, length), as innomatrix_host.sysbench.episodes
    gives them): when (the driver's interval ends, seconds since it started) and what coincided."""
    lines = []
    for start, length in runs:
        causes = []
        for rule in RULES:
            seen = [value for index in range(start, start + length)
                    if (value := rule.seen(figures, index)) is not None]
            if seen:
                causes.append(f"{rule.cause}: {max(seen):.3g} {rule.unit}")
        first, last = times[start], times[start + length - 1]
        span = f"{first:g} s" if length == 1 else f"{first:g}–{last:g} s"
        lines.append(f"stall at {span}: {', '.join(causes) if causes else NO_CAUSE}")
    return lines

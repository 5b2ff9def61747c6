"""Why a trial stalled: for each stall episode (measured intervals that did next to nothing,
innomatrix_host.sysbench.stall_flags), what coincided with it in the same intervals, by rules
that are data (`RULES`, thresholds named in README) — or "no cause seen", never a guess. One
definition: the host applies it to a trial just run (trial.json's stalls flag, from the files it
wrote: innomatrix_host.collected.stall_figures) and the report to what it loads (summary.csv's
stall_causes, from its frame). Plain Python: the host has no numpy; a numpy array is a sequence.

Each rule looks at one interval's figures from the collectors (the frame aligns them to the
driver's intervals) and says what it saw there, with the figure; an episode's causes are the rules
that fired in any of its intervals, each with its most extreme figure. A rule whose figures the
trial does not have (a server without a checkpoint age, a trial without iostat) is silent, and a
stall whose intervals no rule explains says so.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

NO_CAUSE = "no cause seen"
# A device's request wait at this many times its median over the trial's measured intervals, and at
# least AWAIT_FLOOR_MS: an fsync burst or the device's own pause.
AWAIT_FACTOR, AWAIT_FLOOR_MS = 4.0, 5.0
# Below this idle and this iowait share (vmstat, % of all CPUs), the CPUs were the bottleneck: the
# CPU-bound flag's rule for a whole trial's means (innomatrix_host.flags.resources), and a stall's
# "CPU saturated" in one interval.
CPU_FLOOR_PCT = 5.0
# History list growth: the undo logs not yet purged rose in one interval by at least HISTORY_FLOOR
# and by HISTORY_FACTOR times the trial's median change an interval (purge fell behind; old row
# versions pile up and every read walks further).
HISTORY_FACTOR, HISTORY_FLOOR = 4.0, 1000.0
MIB = 2 ** 20
# A server warning belongs to a stall when stamped within the stall's intervals, give or take this:
# MariaDB stamps whole seconds.
WARNING_SLACK_S = 1.0


@dataclass(frozen=True)
class Figures:
    """A trial's per-interval figures, aligned to its measured driver intervals (NaN: not measured
    there), and the checkpoint ages at which its server flushes in a hurry (async) and makes writers
    wait (sync), as the server computed them (flush_points.txt; None: not known)."""

    series: Mapping[str, Sequence[float]]
    async_bytes: int | None = None
    sync_bytes: int | None = None
    # The server's [Warning] and [ERROR] lines: (seconds since the driver started, text).
    server_warnings: Sequence[tuple[float, str]] = ()
    # Each metric's median and median change, found once: a rule asks at every stalled interval.
    _medians: dict[tuple[str, str], float] = field(default_factory=dict, init=False, compare=False, repr=False)

    def at(self, metric: str, index: int) -> float:
        values = self.series.get(metric)
        return float(values[index]) if values is not None and 0 <= index < len(values) else math.nan

    def values(self, metric: str) -> list[float]:
        found = self.series.get(metric)
        return [] if found is None else [float(value) for value in found]

    def median(self, metric: str) -> float:
        if ("level", metric) not in self._medians:
            self._medians["level", metric] = _median(self.values(metric))
        return self._medians["level", metric]

    def median_change(self, metric: str) -> float:
        if ("change", metric) not in self._medians:
            values = self.values(metric)
            self._medians["change", metric] = _median([abs(later - earlier) for earlier, later in zip(values, values[1:])])
        return self._medians["change", metric]


def _median(values: Sequence[float]) -> float:
    known = [float(value) for value in values if not math.isnan(value)]
    return statistics.median(known) if known else math.nan


@dataclass(frozen=True)
class Rule:
    """`seen(figures, interval)`: the figure that fired the rule there (larger: more extreme), or None."""

    cause: str
    unit: str
    seen: Callable[[Figures, int], float | None]


def _age_past(point: str) -> Callable[[Figures, int], float | None]:
    """Checkpoint age (MiB) at or past the async point and short of the sync one, or past the sync
    point: one cause an interval, the graver."""
    def seen(figures: Figures, index: int) -> float | None:
        age = figures.at("status.checkpoint_age", index)
        low = figures.async_bytes if point == "async" else figures.sync_bytes
        high = figures.sync_bytes if point == "async" else None
        if low is None or math.isnan(age) or age < low or (high is not None and age >= high):
            return None
        return age / MIB
    return seen


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
    return 100 - idle - iowait if idle < CPU_FLOOR_PCT and iowait < CPU_FLOOR_PCT else None


def _history(figures: Figures, index: int) -> float | None:
    rise = figures.at("status.Innodb_history_list_length", index) - figures.at("status.Innodb_history_list_length", index - 1)
    usual = figures.median_change("status.Innodb_history_list_length")
    if math.isnan(rise) or math.isnan(usual) or rise < max(HISTORY_FACTOR * usual, HISTORY_FLOOR):
        return None
    return rise


RULES = (
    Rule("checkpoint age past the sync flush point (writers wait for flushing)", "MiB", _age_past("sync")),
    Rule("checkpoint age past the async flush point (hurried flushing)", "MiB", _age_past("async")),
    Rule("free-page waits (Innodb_buffer_pool_wait_free)", "/s", _positive("status.Innodb_buffer_pool_wait_free")),
    Rule("redo log waits (Innodb_log_waits)", "/s", _positive("status.Innodb_log_waits")),
    Rule(f"device wait at {AWAIT_FACTOR:g}× its median or more", "ms", _await),
    Rule(f"CPU saturated (idle and iowait below {CPU_FLOOR_PCT:g} %)", "% busy", _cpu),
    Rule(f"history list growth (purge behind: {HISTORY_FLOOR:g} or more and {HISTORY_FACTOR:g}× the usual change "
         "in an interval)", "undo logs", _history),
)
METRICS = ("status.checkpoint_age", "status.Innodb_buffer_pool_wait_free", "status.Innodb_log_waits",
           "iostat.r_await", "iostat.w_await", "vmstat.id", "vmstat.wa", "status.Innodb_history_list_length")


def _warnings_in(figures: Figures, first_end: float, last_end: float, interval_s: float) -> str | None:
    said = [text for t, text in figures.server_warnings
            if first_end - interval_s - WARNING_SLACK_S < t <= last_end + WARNING_SLACK_S]
    if not said:
        return None
    more = f" (and {len(said) - 1} more)" if len(said) > 1 else ""
    return f'the server\'s error log: "{said[0].replace(";", ",")}"{more}'  # "; " separates episodes


def explain(runs: Sequence[tuple[int, int]], times: Sequence[float], figures: Figures,
            interval_s: float = 1.0) -> list[str]:
    """One line per stall episode ((first interval, length), as innomatrix_host.sysbench.episodes
    gives them): when (the driver's interval ends, seconds since it started) and what coincided —
    the rules' causes, then the first line the server's error log wrote in those seconds."""
    lines = []
    for start, length in runs:
        causes = []
        for rule in RULES:
            seen = [value for index in range(start, start + length)
                    if (value := rule.seen(figures, index)) is not None]
            if seen:
                causes.append(f"{rule.cause}: {max(seen):.3g} {rule.unit}")
        first, last = times[start], times[start + length - 1]
        if said := _warnings_in(figures, first, last, interval_s):
            causes.append(said)
        span = f"{first:g} s" if length == 1 else f"{first:g}–{last:g} s"
        lines.append(f"stall at {span}: {', '.join(causes) if causes else NO_CAUSE}")
    return lines

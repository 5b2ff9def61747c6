"""When a trial's throughput has settled, and when it has been measured well enough: the rules
the trial applies live on the benchmark host (warmup=auto, duration=auto) and the report applies
after the fact (the steady-state table), in one place.

This file is also shipped to benchmark hosts as an Ansible ``module_utils`` file (through a
symlink), so it depends on the standard library only and never imports from ``innomatrix``.

Steady state (SNIA PTS style): throughput is averaged into rounds of whole intervals; a window of
``window`` consecutive rounds is steady when its range (max - min) is within ``range_limit`` of
its mean and the least-squares line's excursion across it (|slope| x (rounds - 1)) within
``slope_limit`` of its mean.

Precision (duration=auto): the 95 % confidence interval of the measured median throughput by
batch medians. The measured intervals are cut into ``BATCHES`` consecutive batches of at least a
round each; the batch medians are close to independent even though neighbouring intervals are not
(a checkpoint burst spans several seconds), so Student's t over them gives the interval. A block
bootstrap would say much the same at a thousand times the CPU, every round, on the host under
test; batch medians cost one sort per round.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import asdict, dataclass, field
from typing import Any

ROUND_INTERVALS = 10   # the seeds' 10 s rounds at a 1 s report interval
WINDOW_ROUNDS = 5
RANGE_LIMIT = 0.20
SLOPE_LIMIT = 0.10
BATCHES = 10
# Student's t, two-sided 95 %, BATCHES - 1 = 9 degrees of freedom (tests check it against scipy).
T95_BATCHES = 2.262157162798205
PRECISION = 0.01

_EPSILON = 1e-9


def window_is_steady(rounds: list[float], range_limit: float = RANGE_LIMIT, slope_limit: float = SLOPE_LIMIT) -> bool:
    """The SNIA test of one window of round averages."""
    n = len(rounds)
    if n < 2:
        return False
    mean = math.fsum(rounds) / n
    if mean <= 0:
        return False
    x_mean = (n - 1) / 2
    slope = (math.fsum((x - x_mean) * (y - mean) for x, y in enumerate(rounds))
             / math.fsum((x - x_mean) ** 2 for x in range(n)))
    return max(rounds) - min(rounds) <= range_limit * mean and abs(slope) * (n - 1) <= slope_limit * mean


def round_index(t: float, round_s: float) -> int:
    """The round an interval reported at t falls in: round k covers (k x round_s, (k + 1) x round_s]."""
    return math.ceil(t / round_s - _EPSILON) - 1


def round_averages(times: list[float], values: list[float], round_s: float, per_round: int) -> list[float | None]:
    """Average throughput per round, None for a round without all its `per_round` intervals."""
    sums: dict[int, float] = {}
    counts: dict[int, int] = {}
    for t, value in zip(times, values):
        k = round_index(t, round_s)
        if k >= 0:
            sums[k] = sums.get(k, 0.0) + value
            counts[k] = counts.get(k, 0) + 1
    rounds = max(counts) + 1 if counts else 0
    return [sums[k] / per_round if counts.get(k) == per_round else None for k in range(rounds)]


def round_intervals(report_interval_s: float, span_s: float, rounds: int = WINDOW_ROUNDS) -> int:
    """Intervals per round: ROUND_INTERVALS, or one when `span_s` holds fewer than `rounds` such
    rounds (a short trial still gets a test, on single intervals)."""
    if span_s < rounds * ROUND_INTERVALS * report_interval_s:
        return 1
    return ROUND_INTERVALS


def first_steady_window(averages: list[float | None], window: int = WINDOW_ROUNDS, range_limit: float = RANGE_LIMIT,
                        slope_limit: float = SLOPE_LIMIT) -> int | None:
    """The first round of the first steady window (complete rounds only), or None."""
    for k in range(len(averages) - window + 1):
        rounds = averages[k:k + window]
        if None not in rounds and window_is_steady(rounds, range_limit, slope_limit):  # type: ignore[arg-type]
            return k
    return None


def batch_median_interval(values: list[float], batches: int = BATCHES) -> tuple[float, float]:
    """The median of `values` and the half-width of its 95 % interval from `batches` batch medians."""
    n = len(values)
    if n < batches:
        raise ValueError(f"{n} values cannot make {batches} batches")
    medians = [statistics.median(values[i * n // batches:(i + 1) * n // batches]) for i in range(batches)]
    return statistics.median(values), T95_BATCHES * statistics.stdev(medians) / math.sqrt(batches)


@dataclass(frozen=True)
class Rules:
    """How one trial decides its warmup and duration: `warmup_s` and `duration_s` are the fixed
    times, or, with warmup_auto / duration_auto, the caps (warmup_max, duration_max)."""

    report_interval_s: float
    warmup_s: float                      # fixed warmup, or warmup_max
    duration_s: float                    # fixed duration, or duration_max
    warmup_auto: bool = False
    duration_auto: bool = False
    duration_min_s: float = 0.0
    precision: float = PRECISION

    @property
    def per_round(self) -> int:
        return round_intervals(self.report_interval_s, self.warmup_s)

    @property
    def round_s(self) -> float:
        return self.per_round * self.report_interval_s

    @property
    def batch_intervals(self) -> int:
        """The fewest intervals in a batch: a round's worth, so that neighbours' correlation stays
        inside batches; single intervals when duration_max cannot hold BATCHES such rounds."""
        return round_intervals(self.report_interval_s, self.duration_s, BATCHES)

    @classmethod
    def of_cell(cls, cell: dict[str, Any]) -> "Rules":
        auto = cell.get("auto") or {}
        return cls(report_interval_s=float(cell["report_interval"]), warmup_s=float(cell["warmup"]),
                   duration_s=float(cell["duration"]), warmup_auto=bool(auto.get("warmup")),
                   duration_auto=bool(auto.get("duration")), duration_min_s=float(auto.get("duration_min", 0)),
                   precision=float(auto.get("precision", PRECISION)))


@dataclass
class Watcher:
    """Fed the driver's intervals as they arrive; says when measuring starts and when it may stop.

    `measure_start_s` is decided at the end of the first steady window (warmup=auto) or at the cap;
    `end_s` once the interval of the median is within ± precision (duration=auto, never before
    duration_min), or at measure start + the duration (fixed, or the cap). The same object replays
    a recorded trial offline (bench/adaptive.py): what it decides does not depend on wall time.
    """

    rules: Rules
    times: list[float] = field(default_factory=list)
    values: list[float] = field(default_factory=list)
    measure_start_s: float | None = None
    warmup_decided_by: str | None = None
    windows_tested: int = 0
    end_s: float | None = None
    ended_by: str | None = None
    half_width: float | None = None
    checks: int = 0

    def __post_init__(self) -> None:
        if not self.rules.warmup_auto:
            self.measure_start_s, self.warmup_decided_by = self.rules.warmup_s, "fixed"

    def feed(self, t: float, throughput: float) -> bool:
        """Take one interval (reported at t s, covering the interval before it); True once the trial may stop."""
        if self.end_s is not None:
            return True
        self.times.append(t)
        self.values.append(throughput)
        if self.measure_start_s is None:
            self._watch_warmup(t)
        if self.measure_start_s is not None:
            self._watch_duration(t)
        return self.end_s is not None

    def _watch_warmup(self, t: float) -> None:
        rules = self.rules
        k = round_index(t, rules.round_s)
        if t >= (k + 1) * rules.round_s - _EPSILON and k + 1 >= WINDOW_ROUNDS:  # round k is complete
            averages = round_averages(self.times, self.values, rules.round_s, rules.per_round)
            window = averages[k + 1 - WINDOW_ROUNDS:k + 1]
            if None not in window:
                self.windows_tested += 1
                if window_is_steady(window):  # type: ignore[arg-type]
                    self.measure_start_s, self.warmup_decided_by = (k + 1) * rules.round_s, "steady"
                    return
        if t >= rules.warmup_s - _EPSILON:
            self.measure_start_s, self.warmup_decided_by = rules.warmup_s, "max"

    def measured(self) -> list[float]:
        start, interval = self.measure_start_s, self.rules.report_interval_s
        return [v for t, v in zip(self.times, self.values) if start is not None and t - interval >= start - _EPSILON]

    def _watch_duration(self, t: float) -> None:
        rules = self.rules
        measured_s = t - (self.measure_start_s or 0.0)
        if measured_s >= rules.duration_s - _EPSILON:
            self.end_s, self.ended_by = t, ("max" if rules.duration_auto else "duration")
            return
        if not rules.duration_auto or measured_s < rules.duration_min_s - _EPSILON:
            return
        values = self.measured()
        batch = rules.batch_intervals
        if len(values) < BATCHES * batch or len(values) % batch:  # test once a round, on whole rounds
            return
        self.checks += 1
        median, half = batch_median_interval(values)
        self.half_width = half / median if median > 0 else None
        if self.half_width is not None and self.half_width <= rules.precision:
            self.end_s, self.ended_by = t, "precision"

    def conclude(self, stopped_driver: bool) -> dict[str, Any]:
        """The decisions once the driver has ended, as trial.json keeps them (durations.adaptive).

        A driver the trial did not stop either reached its --time (sysbench may leave its last
        interval unprinted): the caps decided (`max`, or `duration` for a fixed duration); or it
        ended early on its own (`driver`): what it measured is what there is."""
        decided = self.record()
        rules, last = self.rules, (self.times[-1] if self.times else 0.0)
        if decided["measure_start_s"] is None:
            reached = last >= rules.warmup_s - rules.report_interval_s
            decided.update(measure_start_s=rules.warmup_s, warmup_decided_by="max" if reached else "driver")
        if decided["ended_by"] is None:
            planned_end = decided["measure_start_s"] + rules.duration_s
            if last >= planned_end - rules.report_interval_s:
                decided.update(end_s=planned_end, ended_by="max" if rules.duration_auto else "duration")
            else:
                decided.update(end_s=max(last, decided["measure_start_s"]), ended_by="driver")
        decided.update(stopped_driver=stopped_driver, planned_s=rules.warmup_s + rules.duration_s)
        return decided

    def record(self) -> dict[str, Any]:
        """The decisions taken so far."""
        return {
            "rules": asdict(self.rules),
            "round_s": self.rules.round_s,
            "measure_start_s": self.measure_start_s,
            "warmup_decided_by": self.warmup_decided_by,
            "windows_tested": self.windows_tested,
            "end_s": self.end_s,
            "ended_by": self.ended_by,
            "precision_reached": self.half_width,
            "precision_checks": self.checks,
        }


def replay(times: list[float], values: list[float], rules: Rules) -> Watcher:
    """The decisions a trial with `rules` would have taken on a recorded series."""
    watcher = Watcher(rules)
    for t, value in zip(times, values):
        if watcher.feed(t, value):
            break
    return watcher

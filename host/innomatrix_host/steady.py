"""When a trial's throughput has settled, and when it has been measured well enough: the rules
the trial applies live on the benchmark host (warmup=auto, duration=auto) and the report applies
after the fact (the steady-state table), in one place.

Part of innomatrix_host: the same file runs on the host and in the report.

Steady state (SNIA PTS style): throughput is averaged into rounds of whole intervals; a window of
``window`` consecutive rounds is steady when its range (max - min) is within ``range_limit`` of
its mean and the least-squares line's excursion across it (|slope| x (rounds - 1)) within
``slope_limit`` of its mean.

Precision (duration=auto): the confidence interval of the measured median throughput by batch
medians. The measured intervals are cut into ``BATCHES`` consecutive batches; neighbouring
intervals are correlated (a checkpoint burst spans several seconds), so each batch must span
several times the correlation's reach, measured on the series itself (``correlation_reach``: the
lag-1 autocorrelation, corrected for its small-sample bias and taken at its upper bound); then the
batch medians are close to independent and Student's t over them gives the interval. With too few
intervals for ten such batches the rule does not claim any precision. A trial looks at its
interval repeatedly and stops at the first narrow enough; that, and batch medians spreading a
little less than the median of all, is why the interval uses t's 99 % point (``T_STOP``) and looks
again only once the measured part has grown by a quarter (``LOOK_GROWTH``): on AR(1) series the
stop then keeps its promise (tests/unit/test_adaptive.py; README, "Adaptive warmup and
duration"). A block bootstrap would cost a thousand times the CPU, every look, on the host under
test; batch medians cost one sort per look.
"""

from __future__ import annotations

import math
import random
import statistics
from dataclasses import asdict, dataclass, field
from typing import Any

from .measured import first_measured_t

ROUND_INTERVALS = 10   # the seeds' 10 s rounds at a 1 s report interval
WINDOW_ROUNDS = 5
RANGE_LIMIT = 0.20
SLOPE_LIMIT = 0.10
BATCHES = 10
# Student's t at 0.995 (a two-sided 99 % point), BATCHES - 1 = 9 degrees of freedom (tests check it
# against scipy): what makes the stop's 95 % promise hold under repeated looks (module docstring).
T_STOP = 3.2498355415921263
# A batch spans at least this many times the correlation's reach.
BATCH_REACH = 3
# After a look, the next waits until the measured part is this much longer.
LOOK_GROWTH = 1.25
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
    """The median of `values` and the half-width of its interval (T_STOP) from `batches` batch medians."""
    n = len(values)
    if n < batches:
        raise ValueError(f"{n} values cannot make {batches} batches")
    medians = [statistics.median(values[i * n // batches:(i + 1) * n // batches]) for i in range(batches)]
    return statistics.median(values), T_STOP * statistics.stdev(medians) / math.sqrt(batches)


def correlation_reach(values: list[float]) -> float:
    """How many intervals the series' correlation spans: (1 + r) / (1 - r), the integrated
    autocorrelation time of a lag-1 process, for r the lag-1 autocorrelation corrected for its bias
    (it reads low by about (1 + 3r) / n) and raised to its upper bound (two standard errors): a
    short series that happens to look uncorrelated must not be believed."""
    n = len(values)
    mean = math.fsum(values) / n
    spread = math.fsum((v - mean) ** 2 for v in values)
    r = math.fsum((a - mean) * (b - mean) for a, b in zip(values, values[1:])) / spread if spread else 0.0
    r += (1 + 3 * r) / n
    r += 2 * math.sqrt(max(0.0, 1 - r * r) / n)
    r = min(max(r, 0.0), 0.995)
    return (1 + r) / (1 - r)


def precision_interval(values: list[float], min_batch: int = 1) -> tuple[float, float] | None:
    """The median and the half-width of its interval from BATCHES batch medians, each batch at
    least `min_batch` intervals and BATCH_REACH times the correlation's reach; None when the values
    are too few for that (no precision can be claimed from them)."""
    batch = max(min_batch, math.ceil(BATCH_REACH * correlation_reach(values)))
    if len(values) < BATCHES * batch:
        return None
    return batch_median_interval(values)


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
        """The fewest intervals in a batch: a round's worth, single intervals when duration_max
        cannot hold BATCHES such rounds (the measured correlation may ask for more)."""
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
    last_look: int = 0

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
        if self.measure_start_s is None:
            return []
        first = first_measured_t(self.measure_start_s, self.rules.report_interval_s)
        return [v for t, v in zip(self.times, self.values) if t >= first]

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
        # On whole rounds, once there are ten batches, and again only when a quarter longer.
        if len(values) < max(BATCHES * batch, LOOK_GROWTH * self.last_look) or len(values) % batch:
            return
        self.checks += 1
        self.last_look = len(values)
        found = precision_interval(values, batch)
        self.half_width = found[1] / found[0] if found is not None and found[0] > 0 else None
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


@dataclass(frozen=True)
class CoverageCell:
    """How often the duration rule stopped on precision, and was right, on `series` simulated plateaus."""

    phi: float
    length: int
    precision: float
    series: int
    stops: int              # stopped on precision
    within_precision: int   # of those, the median within `precision` of the true one
    inside_interval: int    # of those, the true median inside the interval reported


def coverage(phis: tuple[float, ...], lengths: tuple[int, ...], precisions: tuple[float, ...], series: int,
             seed: int, spread: float = 0.05) -> list[CoverageCell]:
    """The duration rule's promise, measured: AR(1) plateaus around 1000 (intervals spreading by
    `spread`, lag-1 correlation phi), each replayed through a Watcher with a fixed warmup of 0,
    `length` intervals at most, duration_min 10 and `precision`; what it decided against the truth.
    (tests/unit/test_adaptive.py checks it; bench/adaptive.py coverage prints it.)"""
    rng = random.Random(seed)
    cells = []
    for phi in phis:
        for length in lengths:
            for precision in precisions:
                rules = Rules(report_interval_s=1, warmup_s=0, duration_s=length, duration_auto=True,
                              duration_min_s=10, precision=precision)
                stops = within = inside = 0
                for _ in range(series):
                    state, values = rng.gauss(0, spread), []
                    for _ in range(length):
                        state = phi * state + rng.gauss(0, spread * math.sqrt(1 - phi * phi))
                        values.append(1000.0 * (1 + state))
                    decided = replay(list(range(1, length + 1)), values, rules)
                    if decided.ended_by != "precision":
                        continue
                    median = statistics.median(decided.measured())
                    stops += 1
                    within += abs(median - 1000.0) <= precision * median
                    inside += abs(median - 1000.0) <= (decided.half_width or 0.0) * median
                cells.append(CoverageCell(phi, length, precision, series, stops, within, inside))
    return cells

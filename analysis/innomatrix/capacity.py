"""Capacity at a latency SLA: what a run's rates say about it, how sure, and when two differ.

A configuration's capacity is the highest rate it carries with the SLA's percentile within the
limit. The rates run bracket it: a rate met says the capacity is at or above it, a rate missed
that it is below. Which side of the limit a rate lies on is itself measured, with a few trials of
a finite number of events each, so both are judged as sure or not:

- **a trial** (`trial_side`) surely meets the SLA when so few of its events are beyond the limit
  that a trial whose true percentile sat at the limit (each event beyond it with probability
  1 − p/100) would show that few less than 5 % of the time (one-sided binomial test); it surely
  misses it when so many are beyond it that such a trial would show that many less than 5 % of the
  time, or when it saturated (it fell behind the rate offered: the latency it would have had is not
  even measured). A trial of too few events can never surely meet a high percentile: 24 events
  hold no p99 (their "p99" is their slowest), and a trial needs `fewest_events` (299 for p99) with
  none beyond the limit. Such a rate is **too few events** unless its trials surely missed.
- **a rate** is met (missed) when every ok trial surely met (missed) it, and at least MIN_TRIALS
  ran; otherwise unsure.

(The point capacity, from the merged histogram's percentile, can lie outside the sure bracket:
it is an estimate, the bracket what the trials make sure of.)

Two capacities differ only when one configuration surely meets a rate the other surely misses
(its bracket lies wholly above the other's). Latency grows with the rate, so each end of the
bracket stands on every trial beyond it: the capacity is at least a rate when every trial at it
and below surely met the SLA (a rate of too few events to tell says nothing either way, and is
passed over), and below a rate when every trial at it and above surely missed (`bracket`). Rates
closer together than the trials' own spread thus add no chances of a lucky end, and a false
"differs" between two identical configurations needs one's trials all surely met and the other's
all surely missed at one rate (tests/unit/test_capacity.py measures both cases by simulation).
Between two runs, each run also moves as a whole (the host's noise floor, `innomatrix noise`,
measures how far): the bracket ratio must then clear that drift's 95 % interval as well, and
without both floors there is no verdict.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from scipy.special import bdtr, bdtrc
from scipy.stats import t as student_t

from innomatrix import stats
from innomatrix_host import sysbench as sysbench_log

MET, MISSED, UNSURE, TOO_FEW = "met", "missed", "unsure", "too few events"
MIN_TRIALS = 3
# How surely a trial lies on its side of the limit: the one-sided binomial test's level.
SURE_LEVEL = 0.05
# A bracket with no end: its lowest rate not surely met and its highest not surely missed.
NOTHING_SURE = ("no sure end on a side: its lowest rate not surely met, its highest not surely missed (trials "
                f"disagree, too few events, or fewer than {MIN_TRIALS} trials at a rate): capacity unknown")


def fewest_events(percentile: float, level: float = SURE_LEVEL) -> int | None:
    """The fewest events a trial needs to surely meet the SLA at `percentile`, with none beyond the
    limit: (p/100)ⁿ < level. None for p100 (no trial surely meets a maximum)."""
    within = percentile / 100
    if not 0 < within < 1:
        return None
    return math.floor(math.log(level) / math.log(within)) + 1


def trial_side(histogram: Sequence[tuple[float, int]] | None, saturated: bool, percentile: float, sla_ms: float,
               level: float = SURE_LEVEL) -> str:
    """Which side of the SLA one trial surely lies on, from its latency histogram ((ms, events)
    buckets; None: none kept) and whether it fell behind: MET, MISSED, UNSURE, or TOO_FEW (not
    surely missed, and too few events to surely meet it whatever they were)."""
    if saturated:
        return MISSED
    if not histogram:
        return UNSURE
    events = sum(count for _, count in histogram)
    beyond = sum(count for value, count in histogram if value > sla_ms)
    allowed = 1 - percentile / 100  # the share of events a trial right at the limit has beyond it
    # bdtrc(k, n, p): P(more than k of n beyond); bdtr(k, n, p): P(k or fewer)
    if beyond and float(bdtrc(beyond - 1, events, allowed)) < level:
        return MISSED
    if float(bdtr(beyond, events, allowed)) < level:
        return MET
    fewest = fewest_events(percentile, level)
    return TOO_FEW if fewest is None or events < fewest else UNSURE


def point_met(histograms: Sequence[Sequence[tuple[float, int]]], saturated: bool, percentile: float,
              sla_ms: float) -> tuple[bool, float | None]:
    """Whether a rate's trials, taken together, met the SLA: the percentile of their merged
    histogram (every measured event, never an average of percentiles) within the limit, and no
    trial fell behind; with that percentile (None: no event kept). A point estimate: `outcome`
    says how sure it is."""
    merged = sysbench_log.merge_histograms([list(histogram) for histogram in histograms])
    at_sla = sysbench_log.histogram_percentile(merged, percentile) if merged else None
    return at_sla is not None and at_sla <= sla_ms and not saturated, at_sla


def outcome(sides: Sequence[str]) -> str:
    """Which side of the SLA a rate surely lies on, from its ok trials' sides (`trial_side`)."""
    if len(sides) >= MIN_TRIALS and len(set(sides)) == 1 and sides[0] in (MET, MISSED):
        return sides[0]
    if TOO_FEW in sides and MISSED not in sides and UNSURE not in sides:
        return TOO_FEW
    return UNSURE


@dataclass(frozen=True)
class Bracket:
    """Where a configuration's capacity lies, as far as its rates can tell: at or above `met`
    (None: no rate surely met) and below `missed` (None: no rate surely missed)."""

    met: int | None
    missed: int | None

    def describe(self) -> str:
        low = f"≥ {self.met}" if self.met is not None else ""
        high = f"< {self.missed}" if self.missed is not None else ""
        return " and ".join(part for part in (low, high) if part) or "unknown"


UNKNOWN_BRACKET = Bracket(None, None)


def bracket(rates: Sequence[int], outcomes: Sequence[str]) -> Bracket:
    """The highest rate surely met with every rate below it surely met too, and the lowest rate
    surely missed with every rate above it surely missed too: latency grows with the rate, so
    each end stands on all the trials beyond it, not on the few of one rate (rates closer together
    than the trials' spread would otherwise each add their chance of a lucky end). A rate of too
    few events to tell (TOO_FEW) is passed over by the met end: its trials could not have met it."""
    ordered = sorted(zip(rates, outcomes))
    met = missed = None
    for rate, seen in ordered:
        if seen == TOO_FEW:
            continue
        if seen != MET:
            break
        met = rate
    for rate, seen in reversed(ordered):
        if seen != MISSED:
            break
        missed = rate
    return Bracket(met, missed)


def run_drift(floor_a: stats.HostFloor | None, floor_b: stats.HostFloor | None,
              confidence: float = 0.95) -> float | None:
    """The half-width (log scale) of the interval two runs' own movements put around a ratio of
    their capacities: each run moves as a whole by its host's floor. None without both floors.
    One floor serving both sides is one estimate, with its own degrees of freedom.

    The floor is measured on closed-loop throughput; it stands in for the capacity's own drift on
    the assumption that a run whose server does x % more or less work a second carries x % more
    or less load at the same latency. A floor of fixed-rate runs would measure it directly; none
    is kept yet."""
    if floor_a is None or floor_b is None:
        return None
    parts: dict[stats.HostFloor, list[float]] = {}
    for floor in (floor_a, floor_b):
        parts.setdefault(floor, [0.0, float(floor.df)])[0] += floor.sd_log ** 2
    variance, df = stats.combined(parts.values())
    if variance == 0:
        return 0.0
    return float(student_t.ppf(0.5 + confidence / 2, df)) * math.sqrt(variance)


def verdict(a: Bracket, b: Bracket, capacity_a: int | None, capacity_b: int | None,
            drift: float | None = 0.0, across_runs: bool = False) -> stats.Verdict:
    """A ÷ B of two capacities: the ratio of their point capacities (the highest rate met by the
    merged percentile), the interval their brackets allow (widened by `drift`, the runs' own
    movement, between two runs), and the verdict. Between runs without `drift`, no verdict."""
    ratio = capacity_a / capacity_b if capacity_a and capacity_b else float("nan")
    if a == UNKNOWN_BRACKET or b == UNKNOWN_BRACKET:
        return stats.Verdict(ratio, float("nan"), float("nan"), NOTHING_SURE)
    low = a.met / b.missed if a.met is not None and b.missed is not None else 0.0
    high = a.missed / b.met if a.missed is not None and b.met is not None else math.inf
    if across_runs and drift is None:
        return stats.Verdict(ratio, low, high, stats.DRIFT_UNKNOWN, stats.FROM_TRIALS)
    widen = math.exp(drift or 0.0)
    low, high = low / widen, high * widen
    source = stats.FROM_DRIFT if across_runs else stats.FROM_TRIALS
    # A bound of exactly 1 still separates them: a rate one surely meets, the other surely misses.
    found = stats.DIFFERS if low >= 1 or high <= 1 else stats.SAME
    return stats.Verdict(ratio, low, high, found, source)

"""Capacity at a latency SLA: what a run's rates say about it, how sure, and when two differ.

A configuration's capacity is the highest rate it carries with the SLA's percentile within the
limit. The rates run bracket it: a rate met says the capacity is at or above it, a rate missed
that it is below. Which side of the limit a rate lies on is itself measured, with a few trials:
at a rate near the capacity one trial meets the SLA and the next misses it. So each trial meets
the rate (its own percentile within the limit) or misses it (beyond it, or the trial saturated:
it fell behind the rate offered, and the latency it would have had is not even measured), and a
rate counts for the bracket only when its trials agree:

- **met**: every ok trial met it; **missed**: every ok trial missed it;
- **unsure**: they disagree, a trial has no histogram, or there are fewer than MIN_TRIALS.

(The merged histogram's percentile, which gives the point capacity, can differ from every
trial's own: sysbench rounds the rank within each histogram.)

Two capacities differ only when one configuration surely meets a rate the other surely misses
(its bracket lies wholly above the other's). Why every trial and MIN_TRIALS = 3: at a rate whose
true percentile sits exactly at the limit each trial lands on either side with probability ½, so
n trials all on one side of it happen with probability ½ⁿ each way; a false "differs" between
two identical configurations at that rate needs one all met and the other all missed: 2 × ¼ⁿ =
3 % at n = 3 (12.5 % at n = 2). Latency grows with the rate, so each end of the bracket stands
on every trial beyond it: the capacity is at least a rate when every trial at it and below met
the SLA, and below a rate when every trial at it and above missed (`bracket`). Rates closer
together than the trials' own spread thus add no chances of a lucky end (tests/unit/test_capacity.py
measures both cases). Between two runs,
each run also moves as a whole (the host's noise floor, `innomatrix noise`, measures how far):
the bracket ratio must then clear that drift's 95 % interval as well, and without both floors
there is no verdict.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from scipy.stats import t as student_t

from innomatrix import stats

MET, MISSED, UNSURE = "met", "missed", "unsure"
MIN_TRIALS = 3
# A bracket with no end: its lowest rate not surely met and its highest not surely missed.
NOTHING_SURE = ("no sure end on a side: its lowest rate not surely met, its highest not surely missed (trials "
                f"disagree, or fewer than {MIN_TRIALS} at a rate): capacity unknown")


def outcome(trials: Sequence[tuple[float | None, bool]], sla_ms: float) -> str:
    """Which side of the SLA a rate surely lies on, from each ok trial's own percentile (ms; None:
    no histogram) and whether it saturated."""
    if len(trials) < MIN_TRIALS:
        return UNSURE
    sides = {MISSED if saturated else None if value is None else MET if value <= sla_ms else MISSED
             for value, saturated in trials}
    return sides.pop() if len(sides) == 1 and None not in sides else UNSURE


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
    than the trials' spread would otherwise each add their chance of a lucky end)."""
    ordered = sorted(zip(rates, outcomes))
    met = missed = None
    for rate, seen in ordered:
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

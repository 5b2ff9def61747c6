"""Statistics over the tidy frame: per-trial summaries, validity flags, steady state, A/B ratios.

Everything here is a pure function of arrays or of the frame's tables; nothing reads files.
`cells` gives one row per trial (a cell of the plan, repeat included, as measured; README's
glossary); tables that pool a configuration's repeats do so from these rows.

Definitions (the thresholds are `Thresholds`, shown in the report):
- measured: intervals after the warmup (the frame's `measured` column).
- stall: a measured interval whose throughput is at most `stall_fraction` of the trial's median
  (zero throughput always counts); an episode is a run of consecutive stall intervals.
- error rate: sysbench's ignored errors (deadlocks, ...) per transaction; flagged only above
  `error_ratio`, because under pareto a few per minute are normal.
- buffer pool holds the dataset: mean device reads below `reads_per_s` (the device is not read).
- CPU-bound: vmstat idle and iowait both below `cpu_floor_pct`.
- bytes per transaction: InnoDB's (Innodb_data_written + Innodb_os_log_written) and the device's
  (iostat wkB/s) per transaction; write amplification = device / InnoDB.
- steady state (SNIA PTS style): throughput averaged into rounds; a window of `ss_window` rounds
  is steady when max - min <= `ss_range` of the window mean and the least-squares line's excursion
  across the window (|slope| x (rounds - 1)) <= `ss_slope` of the mean.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import t as student_t

from innomatrix_host import cache_status
from innomatrix_host import flags as host_flags
from innomatrix_host import settings, steady
from innomatrix import layout
from innomatrix_host import stalls as stall_causes
from innomatrix.frame import NOT_APPLICABLE, Frame
from innomatrix_host import sysbench as sysbench_log

THROUGHPUT = "driver.throughput"


@dataclass(frozen=True)
class Thresholds:
    stall_fraction: float = sysbench_log.STALL_FRACTION
    error_ratio: float = 0.01
    reads_per_s: float = host_flags.READS_PER_S
    cpu_floor_pct: float = host_flags.CPU_FLOOR_PCT
    short_tolerance_intervals: int = 1
    ss_round_intervals: int = steady.ROUND_INTERVALS
    ss_window: int = steady.WINDOW_ROUNDS
    ss_range: float = steady.RANGE_LIMIT
    ss_slope: float = steady.SLOPE_LIMIT
    confidence: float = 0.95
    # A latency SLA for fixed-rate trials: the percentile of the merged histograms and its limit.
    sla_percentile: float = 99.0
    sla_ms: float = 10.0

    def describe(self) -> dict[str, Any]:
        return asdict(self)


DEFAULTS = Thresholds()


# --- small pure functions -------------------------------------------------------------------

def cov(values: np.ndarray) -> float:
    """Coefficient of variation: sample standard deviation / mean (NaN for < 2 values or mean 0)."""
    values = np.asarray(values, dtype=np.float64)
    if len(values) < 2 or np.mean(values) == 0:
        return float("nan")
    return float(np.std(values, ddof=1) / np.mean(values))


def stall_mask(throughput: np.ndarray, fraction: float, other_work: np.ndarray | None = None) -> np.ndarray:
    """The stall intervals, as the host's trial summary judges them (sysbench.stall_flags)."""
    throughput = np.asarray(throughput, dtype=np.float64)
    other = np.asarray(other_work, dtype=np.float64).tolist() if other_work is not None else None
    return np.array(sysbench_log.stall_flags(throughput.tolist(), other, fraction), dtype=bool)


def episodes(mask: np.ndarray) -> list[tuple[int, int]]:
    """Runs of True as (first index, length) (innomatrix_host.sysbench.episodes)."""
    return sysbench_log.episodes(np.asarray(mask, dtype=bool).tolist())


@dataclass(frozen=True)
class SteadyState:
    round_s: float
    rounds: int
    first_s: float | None        # start of the first steady window, seconds after the driver started
    at_measure_start: bool | None  # the first window after the warmup is steady
    saveable_s: float            # warmup that could have been skipped: warmup - first_s when positive


def steady_state(t: np.ndarray, throughput: np.ndarray, interval_s: float, warmup_s: float,
                 th: Thresholds = DEFAULTS, round_s: float | None = None) -> SteadyState:
    """When the throughput first settled, over the whole run (warmup included), in rounds.

    A round is `ss_round_intervals` intervals (the seeds' 10 s at a 1 s interval), shortened to
    one interval when the measured part holds fewer than `ss_window` rounds; a trial that decided
    its own warmup (warmup=auto) is judged in the rounds it used (`round_s`), so the report finds
    the window the host found. Round k covers (k x round_s, (k + 1) x round_s] of the driver's
    clock; only complete rounds count.
    """
    t = np.asarray(t, dtype=np.float64)
    throughput = np.asarray(throughput, dtype=np.float64)
    measured_s = float(t.max() - warmup_s) if t.size else 0.0
    per_round = th.ss_round_intervals
    if round_s is not None:
        per_round = max(1, round(round_s / interval_s))
    elif measured_s < th.ss_window * per_round * interval_s:
        per_round = 1
    round_s = per_round * interval_s
    averages = steady.round_averages(t.tolist(), throughput.tolist(), round_s, per_round)
    first = steady.first_steady_window(averages, th.ss_window, th.ss_range, th.ss_slope)
    first_measured_round = math.ceil(warmup_s / round_s - 1e-9)
    window = averages[first_measured_round:first_measured_round + th.ss_window]
    at_start = (steady.window_is_steady(window, th.ss_range, th.ss_slope)  # type: ignore[arg-type]
                if len(window) == th.ss_window and None not in window else None)
    first_s = first * round_s if first is not None else None
    saveable = max(0.0, warmup_s - first_s) if first_s is not None else 0.0
    return SteadyState(round_s=round_s, rounds=sum(v is not None for v in averages), first_s=first_s,
                       at_measure_start=at_start, saveable_s=saveable)


# What a comparison says of one configuration.
DIFFERS, SAME = "differs", "no difference"
UNKNOWN = "1 trial on a side: run-to-run variance unknown"
NO_SPREAD = "identical trial medians: run-to-run variance unknown"
DRIFT_UNKNOWN = "two runs: run-to-run drift not measured"
NOTHING_DONE = "a trial's median throughput is 0: no ratio"
# Where a comparison's interval came from: the trials themselves, the hosts' noise floors (for a
# side of one trial), or the trials with each run's drift from the floors (two runs compared).
FROM_TRIALS, FROM_FLOORS, FROM_DRIFT = "trials", "host noise floor", "trials + run drift (host noise floor)"
# The storage layout a floor is measured on: the plain device.
PLAIN = layout.PLAIN


@dataclass(frozen=True)
class Verdict:
    ratio: float
    low: float
    high: float
    verdict: str
    source: str = ""     # FROM_TRIALS, FROM_FLOORS or FROM_DRIFT; "" without an interval
    steps_share: float = 0.0  # of the interval's variance, what the medians' steps make (between_runs)

    @property
    def differs(self) -> bool:
        return self.verdict == DIFFERS


@dataclass(frozen=True)
class HostFloor:
    """A host's run-to-run noise on one device, measured by `innomatrix noise`: the spread of the
    trial medians (log scale) of configurations repeated across two or more runs, kept in the
    host's host.json. It judges only what it measured: the same host and device, workload, server
    (flavor and release series) and storage layout (`key`)."""

    host: str
    device: str          # the device identity it was measured on (host.json's device.identity)
    sd_log: float        # pooled standard deviation of the log trial medians
    df: int              # its degrees of freedom: runs - 1 (how far a whole run moves is known from the runs only)
    trials: int
    run: str             # the run it was measured from
    measured: str        # when `innomatrix noise` recorded it (UTC, ISO 8601)
    workload: str = ""
    server: str = ""     # server_label(): "mariadb 10.11", "mysql 9.7"; "-" for fileio
    layout: str = PLAIN

    @property
    def cov(self) -> float:
        return log_cov(self.sd_log)

    @property
    def key(self) -> tuple[str, str, str, str]:
        return (self.host, self.workload, self.server, self.layout)

    def describe(self) -> str:
        return f"{self.names()}: CoV {self.cov:.1%} from {self.trials} trials (run {self.run})"

    def names(self) -> str:
        """What it was measured on: host, workload, server, and the layout when not the plain device."""
        return f"{self.host} ({self.workload}, {self.server}{'' if self.layout == PLAIN else ', ' + self.layout})"


def server_label(flavor: object, version: object) -> str:
    """A server as a floor tells them apart: its flavor and release series ("mariadb 10.11")."""
    if not isinstance(flavor, str) or not flavor:
        return NOT_APPLICABLE  # fileio runs no server
    series = ".".join(str(version).split("-")[0].split(".")[:2]) if isinstance(version, str) else "?"
    return f"{flavor} {series}"


# A percentile of merged histograms gets an interval from this many trials on. A bootstrap over
# few trials is narrow: simulated (trials varying 10 % in level, tests/unit/test_fixed_rate_report.py), its
# nominal 95 % interval held the true p99 66 % of the time from 3 trials, 85 % from 5, 88 % from 8.
PERCENTILE_INTERVAL_MIN_TRIALS = 5


def merged_percentile(histograms: list[list[tuple[float, int]]], percentile: float, confidence: float = 0.95,
                      resamples: int = 2000, seed: int = 0) -> tuple[float | None, float | None, float | None]:
    """A percentile of the trials' merged latency histograms (sysbench.merge_histograms: every
    measured event counts once) and its bootstrap interval over trials: the trials are resampled
    with replacement (a trial is the unit that varies run to run), merged, and the percentile read
    as sysbench reads it (first bucket whose running count reaches round(total × p / 100)).
    (estimate, low, high); no interval below PERCENTILE_INTERVAL_MIN_TRIALS trials, nothing from
    no events. The seed makes a report the same each time it is drawn."""
    merged = sysbench_log.merge_histograms(histograms)
    estimate = sysbench_log.histogram_percentile(merged, percentile) if merged else None
    if estimate is None or len(histograms) < PERCENTILE_INTERVAL_MIN_TRIALS:
        return estimate, None, None
    values = np.array([value for value, _ in merged])
    column = {value: index for index, value in enumerate(values)}
    counts = np.zeros((len(histograms), len(values)))
    for row, histogram in enumerate(histograms):
        for value, events in histogram:
            counts[row, column[value]] += events
    draws = np.random.default_rng(seed).integers(0, len(histograms), size=(resamples, len(histograms)))
    weights = np.stack([np.bincount(draw, minlength=len(histograms)) for draw in draws])
    running = np.cumsum(weights @ counts, axis=1)
    targets = np.floor(running[:, -1] * percentile / 100 + 0.5)
    found = running >= np.maximum(targets, 1)[:, None]
    picked = values[np.argmax(found, axis=1)][running[:, -1] > 0]
    tail = (1 - confidence) / 2
    return estimate, float(np.quantile(picked, tail)), float(np.quantile(picked, 1 - tail))


def between_runs(a_medians: np.ndarray, b_medians: np.ndarray, confidence: float = 0.95,
                 floors: tuple[HostFloor | None, HostFloor | None] | None = None,
                 across_runs: bool = False,
                 steps: tuple[np.ndarray | None, np.ndarray | None] | None = None) -> Verdict:
    """A/B from each side's trial medians, with an interval that knows run-to-run variance.

    The trials are the independent units: a restart, a restore, the page cache, a neighbour or
    the device's garbage collection move a whole trial, so intervals within one trial say
    nothing about how far the next trial may land. Each trial counts by its median throughput
    (robust to stalls within the run); run-to-run variation is multiplicative, so the sides are
    compared on the log scale: the ratio is exp(mean log a - mean log b) (the ratio of the
    geometric means of the trial medians; with one trial a side, of the medians) and its
    interval is Welch's t interval for that difference, which stays honest with the 2-5
    repeats a matrix affords, where a bootstrap over so few trials is far too narrow.

    `floors` (each side's host floor, measured beforehand by repeating configurations in
    several runs) only ever add what the trials cannot show:
    - a side of 1 trial holds no estimate of its spread: the floor's stands in for it (no floor:
      no verdict); a side of 2 or more trials keeps its own;
    - `across_runs` (the two sides come from two runs): the trials of one run share that run's
      offset (two unchanged runs of the demo moved by 8 %), which their spread cannot show; each
      side adds its floor's variance once, for its run. Without both floors the interval of the
      trials is given, and no verdict.
    `steps` (each trial's throughput_step, aligned with its medians) add what the trials' own
    figures cannot show either: a median moves in whole steps (one transaction in an interval), so
    where the rate is a few steps a second, trials and floors alike read the same step over and
    over and their spread is near nothing, while the next trial may read one step more. Each trial
    adds half its step (relative to its median: a median that flips between two steps spreads by
    half a step) as a known variance, of infinite degrees of freedom; `steps_share` says how much of
    the interval's variance that is (more than half: a longer report interval, with finer steps,
    narrows it most).
    Variance parts with their degrees of freedom combine by Welch-Satterthwaite; one floor that
    serves several parts is one estimate, counted once with its own degrees of freedom.
    """
    a_linear, b_linear = np.asarray(a_medians, dtype=np.float64), np.asarray(b_medians, dtype=np.float64)
    if a_linear.size == 0 or b_linear.size == 0:
        return Verdict(float("nan"), float("nan"), float("nan"), "")
    if (a_linear == 0).any() or (b_linear == 0).any():
        # A trial whose median interval committed nothing (a disk slower than one transaction a
        # report interval, or stalled for most of the trial): it has no logarithm to average.
        return Verdict(float("nan"), float("nan"), float("nan"), NOTHING_DONE)
    a, b = np.log(a_linear), np.log(b_linear)
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        return Verdict(float("nan"), float("nan"), float("nan"), "")
    difference = float(a.mean() - b.mean())
    ratio = math.exp(difference)
    sides = list(zip((a, b), floors or (None, None)))
    parts: dict[object, list[float]] = {}  # who estimates a variance -> [variance, degrees of freedom]
    for index, (logs, floor) in enumerate(sides):
        if logs.size >= 2:
            parts[("trials", index)] = [float(logs.var(ddof=1)) / logs.size, logs.size - 1.0]
        elif floor is not None:
            parts.setdefault(floor, [0.0, float(floor.df)])[0] += floor.sd_log ** 2 / logs.size
        else:
            return Verdict(ratio, float("nan"), float("nan"), UNKNOWN)
    source = FROM_FLOORS if any(isinstance(who, HostFloor) for who in parts) else FROM_TRIALS
    drift_known = across_runs and all(floor is not None for _, floor in sides)
    if drift_known:
        for _, floor in sides:
            parts.setdefault(floor, [0.0, float(floor.df)])[0] += floor.sd_log ** 2
        source = FROM_DRIFT
    for index, (logs, side_steps) in enumerate(zip((a, b), steps or (None, None))):
        if side_steps is not None:
            if len(side_steps) != logs.size:
                raise ValueError(f"{len(side_steps)} steps for {logs.size} trial medians")
            relative = 0.5 * np.asarray(side_steps, dtype=np.float64) / np.exp(logs)
            if np.isfinite(relative).all():  # a unit without a known step (NaN) adds nothing
                parts[("steps", index)] = [float((relative ** 2).sum()) / logs.size ** 2, math.inf]
    variance, df = combined(parts.values())
    if variance == 0:
        # Every trial gave the same median: that says nothing about the next one.
        return Verdict(ratio, float("nan"), float("nan"), NO_SPREAD)
    half = float(student_t.ppf(0.5 + confidence / 2, df)) * math.sqrt(variance)
    low, high = math.exp(difference - half), math.exp(difference + half)
    steps_share = sum(value for who, (value, _) in parts.items() if isinstance(who, tuple) and who[0] == "steps") / variance
    if across_runs and not drift_known:
        return Verdict(ratio, low, high, DRIFT_UNKNOWN, source, steps_share)
    return Verdict(ratio, low, high, DIFFERS if low > 1 or high < 1 else SAME, source, steps_share)


def combined(parts: Iterable[Sequence[float]]) -> tuple[float, float]:
    """The sum of independent variance estimates, each given with its degrees of freedom, and the
    degrees of freedom of the sum by Welch-Satterthwaite (NaN for a sum of nothing but zeros).
    One estimate that serves several terms is one part: add its terms before, count it once. A
    part known exactly (a median's step) has infinite degrees of freedom."""
    parts = [(float(value), float(degrees)) for value, degrees in parts]
    variance = sum(value for value, _ in parts)
    if variance == 0:
        return 0.0, float("nan")
    estimated = sum(value ** 2 / degrees for value, degrees in parts if value > 0)
    return variance, variance ** 2 / estimated if estimated > 0 else math.inf


@dataclass(frozen=True)
class NoiseFloor:
    """Run-to-run noise of a set of runs: what a comparison of them can and cannot see."""

    sd_log: float            # of the log trial medians within a configuration, pooled (NaN: no repeats)
    configurations: int      # configurations with 2 or more ok trials, which it is pooled over
    repeats: int             # the fewest ok trials a configuration has, on either side
    detectable: float        # ratio - 1 beyond which a difference shows at those repeats (NaN: none)
    coarsest_step: float = float("nan")  # the largest step a configuration's medians move in, ÷ the median

    @property
    def cov(self) -> float:
        return log_cov(self.sd_log)


def log_cov(sd_log: float) -> float:
    """The coefficient of variation of lognormal values whose logarithms spread by `sd_log`."""
    return math.sqrt(math.exp(sd_log ** 2) - 1) if not math.isnan(sd_log) else float("nan")


def minimum_detectable_effect(sd_log: float, repeats: int, confidence: float = 0.95, df: int | None = None,
                              step: float = 0.0) -> float:
    """The difference (as ratio - 1) that run-to-run noise alone keeps inside the interval of a
    comparison with `repeats` trials a side: its half-width. The spread comes from the trials
    themselves (NaN with fewer than 2 repeats), or, given its degrees of freedom `df`, from a host
    floor measured beforehand (then 1 repeat a side has an answer too). `step`: the step the
    medians move in, relative to them; each trial adds half of it, as between_runs does."""
    if repeats < 1 or math.isnan(sd_log) or (df is None and repeats < 2) or df == 0:
        return float("nan")
    degrees = df if df is not None else 2 * repeats - 2
    parts = [(2 * sd_log ** 2 / repeats, float(degrees))]
    if step > 0:
        parts.append((2 * (step / 2) ** 2 / repeats, math.inf))
    variance, degrees = combined(parts)
    if variance == 0:
        return 0.0
    return math.exp(float(student_t.ppf(0.5 + confidence / 2, degrees)) * math.sqrt(variance)) - 1


def pooled_spread(cells_table: pd.DataFrame) -> tuple[float, int, int, int]:
    """The pooled standard deviation of the log trial medians of every configuration (and host)
    with 2 or more ok trials, its degrees of freedom, how many configurations it pools, and how
    many trials they hold."""
    squares, degrees, configurations, trials = 0.0, 0, 0, 0
    ok = cells_table[cells_table["status"] == "ok"]
    for _, group in ok.groupby(list(MATCH) + ["host"], sort=False):
        logs = np.log(group["throughput_median"].dropna().to_numpy(dtype=np.float64))
        if logs.size >= 2:
            squares += float(((logs - logs.mean()) ** 2).sum())
            degrees += logs.size - 1
            configurations += 1
            trials += logs.size
    return (math.sqrt(squares / degrees) if degrees else float("nan")), degrees, configurations, trials


def noise_floor(*cells_tables: pd.DataFrame, confidence: float = 0.95) -> NoiseFloor:
    """Pooled run-to-run spread of the trial medians (log scale) over every configuration with 2
    or more ok trials, and the smallest difference the fewest repeats can detect."""
    squares, degrees, configurations, fewest, coarsest = 0.0, 0, 0, None, float("nan")
    for table in cells_tables:
        coarsest = np.fmax(coarsest, coarsest_step(table))
        sd_log, df, pooled, _ = pooled_spread(table)
        if df:
            squares, degrees, configurations = squares + sd_log ** 2 * df, degrees + df, configurations + pooled
        ok = table[table["status"] == "ok"]
        counts = ok.groupby(list(MATCH) + ["host"], sort=False)["throughput_median"].count()
        if len(counts):
            fewest = int(counts.min()) if fewest is None else min(fewest, int(counts.min()))
    sd_log = math.sqrt(squares / degrees) if degrees else float("nan")
    repeats = fewest or 0
    return NoiseFloor(sd_log, configurations, repeats, minimum_detectable_effect(sd_log, repeats, confidence),
                      float(coarsest))


def steps_matter(step: float, sd_log: float) -> bool:
    """Half a step (relative to the median) is more than the spread: the step, not the noise, sets
    what a comparison can show (a floor whose trials read one step again and again has near none)."""
    return not (math.isnan(step) or math.isnan(sd_log)) and step / 2 > sd_log


def coarsest_step(cells_table: pd.DataFrame) -> float:
    """The largest step (stats.throughput_step) a configuration's ok trial medians move in, as a
    fraction of them: per configuration the median over its trials; NaN where none is known."""
    if "throughput_step" not in cells_table:
        return float("nan")
    ok = cells_table[(cells_table["status"] == "ok") & (cells_table["throughput_median"] > 0)]
    relative = ok.assign(relative=ok["throughput_step"] / ok["throughput_median"]).groupby(
        list(MATCH) + ["host"], sort=False)["relative"].median()
    return float(relative.max()) if relative.notna().any() else float("nan")


# --- per cell --------------------------------------------------------------------------------

CELL_METRICS = tuple(dict.fromkeys((
    THROUGHPUT, "driver.tps", "driver.lat_ms", "driver.err_s", "driver.reconn_s", "driver.fsyncs_s",
    "vmstat.us", "vmstat.sy", "vmstat.wa", "vmstat.id",
    "iostat.r/s", "iostat.w/s", "iostat.rkB/s", "iostat.wkB/s", "iostat.r_await", "iostat.w_await", "iostat.util",
    "status.Innodb_data_written", "status.Innodb_os_log_written", "status.Innodb_data_fsyncs",
    "status.checkpoint_age",
    "cache.read_hits", "cache.read_misses", "cache.write_hits", "cache.write_misses", "cache.dirty_mib",
    *stall_causes.METRICS,  # every figure a stall rule reads (a rule without its figures is silent)
)))
DIMENSIONS = ("host", "layout", "members", "filesystem", "workload", "variant", "bp_size", "bp_bytes", "subtest", "block_size", "block_bytes",
              "threads", "rate", "repeat")


def cells(frame: Frame, th: Thresholds = DEFAULTS) -> pd.DataFrame:
    """One row per trial: the figures, the validity flags and their reasons, the steady state."""
    measured = frame.measured(CELL_METRICS)
    by_trial = {str(k): g for k, g in measured.groupby("trial", observed=True)}
    throughput_all = frame.intervals[(frame.intervals["metric"] == THROUGHPUT).to_numpy()]
    whole_run = {str(k): g for k, g in throughput_all.groupby("trial", observed=True)}
    rows = []
    for trial, meta in frame.trials.iterrows():
        rows.append(cell_row(str(trial), meta, by_trial.get(str(trial)), whole_run.get(str(trial)), th))
    table = pd.DataFrame(rows)
    return table


def _series(rows: pd.DataFrame | None, metric: str) -> np.ndarray:
    if rows is None:
        return np.array([], dtype=np.float64)
    picked = rows[(rows["metric"] == metric).to_numpy()].sort_values("t")
    return picked["value"].to_numpy(dtype=np.float64)


def _mean(values: np.ndarray) -> float:
    values = values[~np.isnan(values)]
    return float(values.mean()) if values.size else float("nan")


def _series_t(rows: pd.DataFrame | None, metric: str) -> np.ndarray:
    """The times of `_series(rows, metric)`'s values."""
    if rows is None:
        return np.array([], dtype=np.float64)
    return np.sort(rows.loc[(rows["metric"] == metric).to_numpy(), "t"].to_numpy(dtype=np.float64))


def _aligned(rows: pd.DataFrame | None, metrics: Sequence[str]) -> dict[str, np.ndarray]:
    """Each metric's values at the throughput's intervals (the frame puts every collector's samples
    on the driver's clock), NaN where it has none."""
    times = _series_t(rows, THROUGHPUT)
    found = {}
    for metric in metrics:
        picked = rows[(rows["metric"] == metric).to_numpy()] if rows is not None else None
        if picked is None or picked.empty:
            continue
        by_t = dict(zip(picked["t"].to_numpy(dtype=np.float64), picked["value"].to_numpy(dtype=np.float64)))
        found[metric] = np.array([by_t.get(t, np.nan) for t in times])
    return found


def redo_capacity(meta: pd.Series) -> int | None:
    """The redo a trial's server kept, in bytes (settings.redo_capacity of its variables.txt)."""
    return settings.redo_capacity({name: meta.get(f"setting.{name}") for name in settings.IO_SETTINGS})


def flush_points(meta: pd.Series) -> tuple[int | None, int | None]:
    """The checkpoint ages (bytes) at which a trial's server flushed in a hurry (async) and made
    writers wait (sync), as it said at the trial's start (flush_points.txt); None: not said."""
    def known(value: object) -> int | None:
        return int(value) if isinstance(value, (int, float, np.integer, np.floating)) and not pd.isna(value) else None
    return known(meta.get("flush_async_bytes")), known(meta.get("flush_sync_bytes"))


def cache_figures(rows: pd.DataFrame | None) -> dict[str, float]:
    """A flash cache's figures over the measured intervals (cache.log's growth between samples):
    the read and write hit ratios and the read hit ratio of each half of the window
    (cache_status.window_ratios, as the host computes them), and the dirty data at the end. NaN
    where the trial has no cache.log or the cache was asked nothing."""
    hits = _series(rows, "cache.read_hits")
    if not hits.size:
        return dict.fromkeys(CACHE_FIGURES, float("nan"))
    growth = [np.nan_to_num(series).tolist() for series in (
        hits, _series(rows, "cache.read_misses"), _series(rows, "cache.write_hits"), _series(rows, "cache.write_misses"))]
    found = cache_status.window_ratios(*growth)
    dirty = _series(rows, "cache.dirty_mib")
    first, second = found["read_hit_ratio_halves"]
    return {name: float("nan") if value is None else value for name, value in (
        ("cache_read_hit_ratio", found["read_hit_ratio"]), ("cache_write_hit_ratio", found["write_hit_ratio"]),
        ("cache_dirty_mib_end", float(dirty[-1]) if dirty.size else None),
        ("cache_read_hit_ratio_first_half", first), ("cache_read_hit_ratio_second_half", second))}


def flash_figures(meta: pd.Series, whole: pd.DataFrame | None) -> dict[str, Any]:
    """What the disks' own counters (NVMe SMART data units) say the driver's whole run wrote to them,
    per transaction of that run, warmup included (the counters are read just before the driver
    starts and just after it ends), and what the kernel sent those disks over the same span (NaN
    where unknown); NaN, with `flash_unread` saying why, where no disk could say
    (a loop device, a virtio disk) or the run counted no transactions (fileio)."""
    written, sent = meta.get("flash_written_bytes"), meta.get("flash_sent_bytes")
    found = {"flash_mib_written": float("nan"), "flash_mib_sent": float("nan"), "flash_bytes_per_trx": float("nan"),
             "flash_disks": meta.get("flash_disks") or "", "flash_unread": meta.get("flash_unread") or ""}
    if written is None or pd.isna(written):
        return found
    found["flash_mib_written"] = float(written) / 2 ** 20
    if sent is not None and not pd.isna(sent):
        found["flash_mib_sent"] = float(sent) / 2 ** 20
    values = whole["value"].to_numpy(dtype=np.float64) if whole is not None else np.array([])
    values = values[~np.isnan(values)]
    ri = float(meta["report_interval_s"])
    run_trx = transactions_per_s(meta["throughput_unit"], values.sum(), values.sum()) * ri if values.size else float("nan")
    if run_trx > 0:
        found["flash_bytes_per_trx"] = float(written) / run_trx
    return found


CACHE_FIGURES = ("cache_read_hit_ratio", "cache_write_hit_ratio", "cache_dirty_mib_end",
                 "cache_read_hit_ratio_first_half", "cache_read_hit_ratio_second_half")


def _max(values: np.ndarray) -> float:
    values = values[~np.isnan(values)]
    return float(values.max()) if values.size else float("nan")


def _figure(value: float | None) -> float:
    """A figure of nothing (None) as the tables show it: NaN."""
    return float("nan") if value is None else float(value)


def _median(values: np.ndarray) -> float:
    values = values[~np.isnan(values)]
    return float(np.median(values)) if values.size else float("nan")


# The last digit the drivers print an interval's rate to (sysbench: 2 decimals).
PRINTED_STEP = 0.01


def throughput_step(unit: object, report_interval_s: float, block_bytes: float) -> float:
    """The smallest step a trial's median throughput moves by: one transaction in a report interval
    (sysbench OLTP), one New-Order (tpcc-mysql's tpmC), one block (fileio's MiB/s), or the printed
    last digit where that is coarser; NaN for a unit it does not know. At 4 tps and 1 s intervals
    a step is a quarter of the figure."""
    if unit == "tps":
        per_interval = 1.0
    elif unit == "tpmC":
        per_interval = 60.0
    elif unit == "MiB/s":
        per_interval = float(block_bytes) / 2 ** 20
    else:
        return float("nan")
    return max(per_interval / float(report_interval_s), PRINTED_STEP)


def transactions_per_s(unit: object, tps: Any, throughput: Any) -> Any:
    """The transactions a second a cost is per (a trial's means, or an interval's figures): sysbench
    OLTP's tps; tpcc-mysql's New-Orders (tpmC ÷ 60, each carrying its share of the other transaction
    types); NaN for fileio."""
    if unit == "tps":
        return tps
    if unit == "tpmC":
        return throughput / 60
    return float("nan")


def cell_row(trial: str, meta: pd.Series, rows: pd.DataFrame | None, whole: pd.DataFrame | None,
             th: Thresholds) -> dict[str, Any]:
    ri = float(meta["report_interval_s"])
    tput = _series(rows, THROUGHPUT)
    n = int(tput.size)
    fsyncs = _series(rows, "driver.fsyncs_s")
    lat = _series(rows, "driver.lat_ms")
    err = _series(rows, "driver.err_s")
    # The host's definitions (innomatrix_host.sysbench.trial_figures), on the intervals as loaded.
    figures = sysbench_log.trial_figures(
        tput.tolist(), [None if np.isnan(value) else value for value in lat.tolist()],
        err[~np.isnan(err)].tolist(), fsyncs.tolist() if fsyncs.size == n else None,
        fraction=th.stall_fraction)
    stalls = np.array(figures["stalls"], dtype=bool)
    runs = episodes(stalls)
    causes = stall_causes.explain(
        runs, _series_t(rows, THROUGHPUT).tolist(),
        stall_causes.Figures(_aligned(rows, stall_causes.METRICS), *flush_points(meta),
                             server_warnings=meta.get("server_warnings") or ()), ri)
    reconn = _series(rows, "driver.reconn_s")
    tps = _series(rows, "driver.tps")
    trx_per_s = transactions_per_s(meta["throughput_unit"], _mean(tps), _mean(tput))
    innodb_bps = _mean(_series(rows, "status.Innodb_data_written")) + _mean(_series(rows, "status.Innodb_os_log_written"))
    device_bps = _mean(_series(rows, "iostat.wkB/s")) * 1024

    def per_trx(per_s: float) -> float:
        return per_s / trx_per_s if trx_per_s > 0 else float("nan")
    row: dict[str, Any] = {"trial": trial}
    row.update({name: meta[name] for name in DIMENSIONS})
    row.update({
        "status": meta["status"],
        "saturated": bool(meta.get("saturated", False)),
        "server": server_label(meta.get("server_flavor"), meta.get("server_version")),
        "device_model": meta.get("device_model", ""),
        "unit": meta["throughput_unit"],
        "intervals_measured": n,
        "measured_s": n * ri,
        "measured_asked_s": meta["measured_asked_s"],
        "warmup_s": meta["warmup_s"],
        "warmup_decided_by": meta.get("warmup_decided_by", "fixed"),
        "ended_by": meta.get("ended_by", "fixed"),
        "planned_s": meta.get("planned_s", float("nan")),
        "throughput_median": _figure(figures["throughput_median"]),
        "throughput_step": throughput_step(meta["throughput_unit"], ri, meta["block_bytes"]),
        "throughput_mean": _mean(tput),
        "throughput_std": float(np.std(tput, ddof=1)) if n > 1 else float("nan"),
        "throughput_cov": cov(tput),
        "latency_pct": meta["latency_pct"],
        "latency_ms_median": _figure(figures["latency_median"]),
        "stall_intervals": int(stalls.sum()),
        "stall_episodes": len(runs),
        "stall_longest_s": max((length for _, length in runs), default=0) * ri,
        "stall_causes": "; ".join(causes),
        "errors_per_s": _figure(figures["errors_per_s_mean"]),
        "errors_per_trx": float(err.sum() / tps.sum()) if tps.size and tps.sum() > 0 and err.size == tps.size else float("nan"),
        "reconnects": float(reconn.sum() * ri) if reconn.size else float("nan"),
        "cpu_us": _mean(_series(rows, "vmstat.us")),
        "cpu_sy": _mean(_series(rows, "vmstat.sy")),
        "cpu_wa": _mean(_series(rows, "vmstat.wa")),
        "cpu_id": _mean(_series(rows, "vmstat.id")),
        "dev_r_s": _mean(_series(rows, "iostat.r/s")),
        "dev_w_s": _mean(_series(rows, "iostat.w/s")),
        "dev_read_mb_s": _mean(_series(rows, "iostat.rkB/s")) / 1024,
        "dev_write_mb_s": _mean(_series(rows, "iostat.wkB/s")) / 1024,
        "dev_r_await_ms": _mean(_series(rows, "iostat.r_await")),
        "dev_w_await_ms": _mean(_series(rows, "iostat.w_await")),
        "dev_util_pct": _mean(_series(rows, "iostat.util")),
        "trx_per_s": trx_per_s,
        "innodb_bytes_per_trx": per_trx(innodb_bps),
        "device_bytes_per_trx": per_trx(device_bps),
        # What a transaction costs the device and the server (the measured intervals' means, ÷ trx_per_s).
        "dev_reads_per_trx": per_trx(_mean(_series(rows, "iostat.r/s"))),
        "dev_kib_read_per_trx": per_trx(_mean(_series(rows, "iostat.rkB/s"))),
        "dev_kib_written_per_trx": per_trx(device_bps / 1024),
        "redo_bytes_per_trx": per_trx(_mean(_series(rows, "status.Innodb_os_log_written"))),
        "fsyncs_per_trx": per_trx(_mean(_series(rows, "status.Innodb_data_fsyncs"))),
        "write_amplification": device_bps / innodb_bps if innodb_bps and innodb_bps > 0 else float("nan"),
        # How far the checkpoint trailed the redo at worst while measuring (frame.CHECKPOINT_AGE).
        "checkpoint_age_max_mib": _max(_series(rows, "status.checkpoint_age")) / 2 ** 20,
        **cache_figures(rows),
        # A flash cache's state when the trial began (warm, cold) and the blocks it held then.
        "cache_start": meta.get("cache_start") or "",
        "cache_blocks_at_start": meta.get("cache_blocks_at_start"),
        **flash_figures(meta, whole),
        # fileio: the whole run's percentiles from sysbench's latency histogram (trial.json).
        "fileio_run_p95_ms": meta["fileio_run_p95_ms"],
        "fileio_run_p99_ms": meta["fileio_run_p99_ms"],
    })
    whole_t = whole["t"].to_numpy(dtype=np.float64) if whole is not None else np.array([])
    whole_v = whole["value"].to_numpy(dtype=np.float64) if whole is not None else np.array([])
    if whole_t.size:
        decided_round = meta.get("adaptive_round_s")
        ss = steady_state(whole_t, whole_v, ri, float(meta["warmup_s"]), th,
                          None if decided_round is None or pd.isna(decided_round) else float(decided_round))
        row.update({"ss_round_s": ss.round_s, "ss_first_s": ss.first_s, "ss_at_measure_start": ss.at_measure_start,
                    "ss_warmup_saveable_s": ss.saveable_s})
    else:
        row.update({"ss_round_s": float("nan"), "ss_first_s": None, "ss_at_measure_start": None,
                    "ss_warmup_saveable_s": 0.0})
    reasons = flags(row, meta, th, figures["stalls"])
    row["flagged"] = bool(reasons)
    row["flags"] = "; ".join(reasons)
    return row


# What the driver itself flagged in trial.json (tpcc-mysql's judgement, kept as a mark).
DRIVER_FLAGS = {
    "response_time_ng": "tpcc response-time check [NG] (tpcc-mysql runs without think time)",
    "sql_errors": "tpcc SQL errors (statements retried)",
    "new_orders_after_last_interval": "tpcc counted New-Orders after its last interval line",
}


def flags(row: dict[str, Any], meta: pd.Series, th: Thresholds, stalled: list[bool]) -> list[str]:
    """Why a cell's figures should not be taken at face value; empty when there is no reason.
    What the host can know too (stalls, resources, server settings) is innomatrix_host.flags'."""
    reasons = []
    if meta["status"] != "ok":
        reasons.append(f"trial {meta['status']}" + (f": {meta['reasons']}" if meta["reasons"] else ""))
    if meta.get("fatal"):
        reasons.append(f"driver FATAL: {meta['fatal']}")
    elif meta["status"] == "ok" and not meta.get("driver_complete", True):
        reasons.append(sysbench_log.INCOMPLETE_LOG)
    if meta["status"] == "ok" and meta.get("driver_breaks"):
        reasons.append(f"driver.log intervals out of step: {meta['driver_breaks']}")
    for flag in filter(None, str(meta.get("driver_flags") or "").split("; ")):
        if flag != "stall_intervals":  # the report finds stalls itself, below
            reasons.append(DRIVER_FLAGS.get(flag, f"driver: {flag}"))
    if row["intervals_measured"] == 0:
        reasons.append("no interval measured after the warmup")
    reasons += [found["text"] for found in [host_flags.stalls(stalled, float(meta["report_interval_s"]))] if found]
    if row["reconnects"] and row["reconnects"] > 0:
        reasons.append(f"reconnects: {row['reconnects']:g}")
    if row["errors_per_trx"] > th.error_ratio:
        reasons.append(f"errors: {row['errors_per_trx']:.2%} of transactions (above {th.error_ratio:.0%})")
    asked = row["measured_asked_s"]
    if asked is not None and not pd.isna(asked) and row["intervals_measured"] > 0:
        short = asked - row["measured_s"]
        if short > th.short_tolerance_intervals * float(meta["report_interval_s"]) + 1e-9:
            reasons.append(f"short: {row['measured_s']:g} s measured of {asked:g} s asked")
    reasons += [found["text"] for found in host_flags.resources(meta["workload"], row["dev_r_s"], row["cpu_id"],
                                                                row["cpu_wa"], th.reads_per_s, th.cpu_floor_pct)]
    reasons += [found["text"] for found in [host_flags.cache_warming(row["cache_read_hit_ratio_first_half"],
                                                                     row["cache_read_hit_ratio_second_half"])] if found]
    if meta.get("iostat_truncated"):
        reasons.append("iostat.json cut short (read up to its last complete sample)")
    if meta.get("server_flags"):
        reasons.append(meta["server_flags"])
    reasons += [mark for mark in str(meta.get("marks") or "").split("; ") if mark]
    recorded = meta.get("recorded_median")
    if (meta["status"] == "ok" and not meta.get("driver_breaks") and recorded is not None and not pd.isna(recorded)
            and row["intervals_measured"] > 0
            and not math.isclose(recorded, row["throughput_median"], rel_tol=1e-9, abs_tol=1e-9)):
        reasons.append(f"trial.json's median {recorded:g} is not its driver.log's {row['throughput_median']:g}: "
                       "one of them was changed after the trial")
    return reasons


# --- comparing two runs, or the hosts of one run -----------------------------------------------

MATCH = ("layout", "members", "filesystem", "workload", "variant", "bp_size", "subtest", "block_size", "threads", "rate")


def name_part(key: str, value: Any) -> str | None:
    """How one dimension reads in a configuration's name (xfs/oltp/A/64M/2/rate400); None leaves it
    out: a dimension that does not apply to the cell, or a closed-loop cell's rate (names from
    before rates existed stay as they were)."""
    if str(value) == NOT_APPLICABLE or (key == "rate" and not value):
        return None
    return f"rate{value}" if key == "rate" else str(value)
# What a comparison says of each configuration, after the columns that name it.
COMPARED = ("a_median", "b_median", "unit", "ratio", "ci_low", "ci_high", "differs", "verdict", "interval_from",
            "steps_share", "a_trials", "b_trials", "a_flags", "b_flags", "only_in", "bp_bytes", "block_bytes")
# (host, workload, server, layout) -> the noise floor measured for it on the device a run used.
Floors = dict[tuple[str, str, str, str], HostFloor]


def _side_floor(floors: Floors | None, info: dict[str, Any]) -> HostFloor | None:
    """The floor of what one side's trials ran: one host, one workload, one server."""
    hosts, servers = info.get("hosts", []), info.get("servers", [])
    if not floors or len(hosts) != 1 or len(servers) != 1:
        return None
    # A floor judges the storage it was measured on: the plain device, or one layout over its members.
    layouts = info.get("layouts", [])
    if len(layouts) != 1:
        return None
    return floors.get((hosts[0], info["workload"], servers[0], layouts[0]))


def compare(cells_a: pd.DataFrame, cells_b: pd.DataFrame, th: Thresholds = DEFAULTS,
            floors_a: Floors | None = None, floors_b: Floors | None = None, across_runs: bool = False,
            match: tuple[str, ...] = MATCH) -> pd.DataFrame:
    """Ratio A/B of median throughput per matching configuration, from its trials (between_runs).

    Configurations match on `match` (filesystem, workload, variant and buffer pool, or fileio
    sub-test and block size, and threads), and also on host when both sides have the same hosts
    (two devices on two hosts compare across hosts).
    `verdict` says `differs` only when the interval excludes 1. A side of 1 trial is judged by
    the noise floor of what it ran (`floors_a`, `floors_b`, see `_side_floor`), else there is no
    verdict; `across_runs` (two runs) adds each run's drift from the floors (between_runs).
    """
    keys = list(match)
    if set(cells_a["host"]) == set(cells_b["host"]):
        keys = ["host", *keys]
    trials_a = _trial_medians(cells_a, keys)
    trials_b = _trial_medians(cells_b, keys)
    rows = []
    for key in set(trials_a) | set(trials_b):
        row = dict(zip(keys, key))
        in_a, in_b = key in trials_a, key in trials_b
        a_medians, a_info = trials_a.get(key, (np.array([]), {}))
        b_medians, b_info = trials_b.get(key, (np.array([]), {}))
        floors = (_side_floor(floors_a, a_info), _side_floor(floors_b, b_info))
        verdict = between_runs(a_medians, b_medians, th.confidence, floors, across_runs,
                               steps=(a_info.get("steps"), b_info.get("steps")))
        row.update({
            "a_median": _median(a_medians) if in_a else float("nan"),
            "b_median": _median(b_medians) if in_b else float("nan"),
            "unit": a_info.get("unit") or b_info.get("unit"),
            "ratio": verdict.ratio, "ci_low": verdict.low, "ci_high": verdict.high,
            "differs": verdict.differs, "verdict": verdict.verdict, "interval_from": verdict.source,
            "steps_share": verdict.steps_share if not math.isnan(verdict.low) else float("nan"),
            "a_trials": a_medians.size, "b_trials": b_medians.size,
            "a_flags": a_info.get("flags", ""), "b_flags": b_info.get("flags", ""),
            "only_in": "" if in_a and in_b else ("A" if in_a else "B"),
            "bp_bytes": a_info.get("bp_bytes", b_info.get("bp_bytes")),
            "block_bytes": a_info.get("block_bytes", b_info.get("block_bytes")),
        })
        rows.append(row)
    if not rows:
        return pd.DataFrame(columns=[*keys, *COMPARED])
    by_size = {"bp_size": "bp_bytes", "block_size": "block_bytes"}  # 64M before 1G, not after
    order = [by_size.get(key, key) for key in keys]
    return pd.DataFrame(rows).sort_values(order, kind="stable").reset_index(drop=True)


def compare_within(cells_table: pd.DataFrame, by: str, th: Thresholds = DEFAULTS,
                   floors: Floors | None = None) -> pd.DataFrame:
    """Within one run, every pair of the values of `by` (hosts, filesystems): `compare` of one's
    rows against the other's, configurations matched on MATCH without `by` (and on host when
    both sides ran on the same hosts).

    The question is the one between two runs (does A's median throughput differ from B's beyond
    what run-to-run noise moves?), so the rule is the same (between_runs over each side's ok
    trial medians; a side of 1 trial judged by its floor, else no verdict); within one run there
    is no run drift to add. Pairs come in sorted order, the first as A (`<by>_a`, `<by>_b` lead
    each row); fewer than two values give an empty table.
    """
    # In the column's own order (4 members before 12), then as text, as the sides are picked by.
    values = [str(value) for value in sorted(cells_table[by].unique())]
    match = tuple(key for key in MATCH if key != by)
    side = {value: cells_table[cells_table[by].astype(str) == value] for value in values}
    parts = []
    for a, b in itertools.combinations(values, 2):
        parts.append(compare(side[a], side[b], th, floors, floors, match=match).assign(**{f"{by}_a": a, f"{by}_b": b}))
    keys = ["host"] if by != "host" else []
    columns = [f"{by}_a", f"{by}_b", *keys, *match, *COMPARED]
    if not parts:
        return pd.DataFrame(columns=columns)
    return pd.concat(parts, ignore_index=True).reindex(columns=columns)


def compare_hosts(cells_table: pd.DataFrame, th: Thresholds = DEFAULTS, floors: Floors | None = None) -> pd.DataFrame:
    """Host A / host B per configuration within one run (compare_within by host)."""
    return compare_within(cells_table, "host", th, floors)


def _trial_medians(cells_table: pd.DataFrame, keys: list[str]) -> dict[tuple, tuple[np.ndarray, dict[str, Any]]]:
    """Each configuration's trial medians, and its flags and the medians' steps.

    Only trials that finished `ok` count: a failed or invalid trial's figures are not a
    measurement of the configuration (its flags still say it exists).
    """
    out: dict[tuple, tuple[np.ndarray, dict[str, Any]]] = {}
    for key, group in cells_table.groupby(keys, sort=True):
        key = key if isinstance(key, tuple) else (key,)
        ok = group[group["status"] == "ok"]
        medians = ok["throughput_median"].to_numpy(dtype=np.float64)
        steps = ok["throughput_step"].to_numpy(dtype=np.float64) if "throughput_step" in ok else None
        flagged = [f"{trial}: {text}" for trial, text in zip(group["trial"], group["flags"]) if text]
        counted = ~np.isnan(medians)
        out[key] = (medians[counted],
                    {"flags": " | ".join(flagged), "unit": group["unit"].iloc[0],
                     "steps": steps[counted] if steps is not None else None,
                     "hosts": sorted({str(host) for host in group["host"]}),
                     "layouts": sorted({str(name) for name in group["layout"]}),
                     "workload": str(group["workload"].iloc[0]),
                     "servers": sorted({str(server) for server in group["server"]}),
                     "bp_bytes": int(group["bp_bytes"].iloc[0]), "block_bytes": int(group["block_bytes"].iloc[0])})
    return out

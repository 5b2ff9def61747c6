"""The report's figures as PNG bytes, drawn from the frame and the tables — never from raw logs.

matplotlib is used through its object interface on the Agg canvas (no pyplot, no display, no
global state), so plotting works the same on a headless host and in tests.
"""

from __future__ import annotations

import io
import math
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

import numpy as np
import matplotlib.ticker
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from innomatrix import stats
from innomatrix.frame import Frame
from innomatrix.report.tables import COMPARE_KEYS, Table, rate_configurations
from innomatrix.stats import DEFAULTS, Thresholds, flush_points, name_part, redo_capacity
from innomatrix_host.flush_points import FLUSH_TYPE_METRICS, METRIC_PREFIX

GROUP = ("host", "filesystem", "workload", "threads")
CPU_PANELS = (("vmstat.us", "user %", 1.0, 100.0), ("vmstat.sy", "system %", 1.0, 100.0),
              ("vmstat.wa", "iowait %", 1.0, 100.0), ("vmstat.id", "idle %", 1.0, 100.0))
# (metric, axis label, scale, top of the axis or None)
IO_PANELS = (("iostat.r/s", "reads/s", 1.0, None), ("iostat.w/s", "writes/s", 1.0, None),
             ("iostat.rkB/s", "read MB/s", 1 / 1024, None), ("iostat.wkB/s", "write MB/s", 1 / 1024, None),
             ("iostat.w_await", "write await (ms)", 1.0, None), ("iostat.util", "util %", 1.0, 100.0))
# InnoDB's flushing, from the status sampler: how far the checkpoint trails the redo (the dashed
# lines: where the server starts flushing in a hurry (async), where writers wait for it (sync), and
# the redo it keeps, which the age must never reach), what is dirty, what is flushed, how fast
# redo is written (the LSN's rate) and how far purge is behind.
CHECKPOINT_PANEL = ("status.checkpoint_age", "checkpoint age (MiB)", 1 / 2 ** 20, None)
# The pages flushed split by flush type (INNODB_METRICS, host.flush_points.FLUSH_TYPE_METRICS).
FLUSH_LIST, FLUSH_LRU = (METRIC_PREFIX + name for name in FLUSH_TYPE_METRICS)
FLUSHING_PANELS = (CHECKPOINT_PANEL,
                   ("status.dirty_pct", "dirty pages (% of the pool)", 1.0, 100.0),
                   ("status.Innodb_buffer_pool_pages_flushed", "pages flushed/s", 1.0, None),
                   (f"status.{FLUSH_LIST}", "of which flush list/s", 1.0, None),
                   (f"status.{FLUSH_LRU}", "of which LRU/s", 1.0, None),
                   ("status.Innodb_os_log_written", "redo written (MiB/s)", 1 / 2 ** 20, None),
                   ("status.Innodb_history_list_length", "history length", 1.0, None))
# What each interval cost per transaction (the cost table's figures, report/costs.py, over time):
# (COST + the interval's figure a second, or COST + "cpu_us", axis label, scale, top).
COST = "per_trx:"
COST_PANELS = ((COST + "cpu_us", "CPU µs / trx", 1.0, None), (COST + "iostat.r/s", "device reads / trx", 1.0, None),
               (COST + "iostat.wkB/s", "KiB written / trx", 1.0, None),
               (COST + "status.Innodb_os_log_written", "redo bytes / trx", 1.0, None),
               (COST + "status.Innodb_data_fsyncs", "fsyncs / trx", 1.0, None))
# A flash cache's own counters (cache.log, on a cache layout only): how much of what was asked it
# held, how full and how dirty it is, and what it moved in and out, each sampling interval.
CACHE_PANELS = (("cache.read_hit_ratio", "read hit ratio", 1.0, 1.0),
                ("cache.read_hits", "read hits / interval", 1.0, None),
                ("cache.read_misses", "read misses / interval", 1.0, None),
                ("cache.write_hits", "write hits / interval", 1.0, None),
                ("cache.dirty_mib", "dirty (MiB)", 1.0, None),
                ("cache.used_pct", "in use %", 1.0, 100.0),
                ("cache.promotions", "promotions / interval", 1.0, None))
DPI = 90
KINDS = ("throughput", "latency_", "cpu_", "io_", "innodb_", "costs_", "cache_", "bars_")  # file name prefixes of the report's figures
JITTER_INTERVALS = 10  # the seeds' second jitter graph: means over 10 intervals (10 s at a 1 s interval)


@dataclass
class Plot:
    name: str      # file stem under plots/
    title: str
    group: str     # the section it belongs to in the report
    png: bytes


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_")


def _png(figure: Figure) -> bytes:
    FigureCanvasAgg(figure)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=DPI)
    return buffer.getvalue()


class Series:
    """The frame's rows split once by metric and trial, so every figure is a lookup."""

    def __init__(self, frame: Frame, metrics: set[str]):
        rows = frame.intervals[frame.intervals["metric"].isin(sorted(metrics)).to_numpy()]
        self._data: dict[tuple[str, str], tuple[np.ndarray, np.ndarray]] = {}
        for (metric, trial), group in rows.groupby(["metric", "trial"], observed=True, sort=False):
            ordered = group.sort_values("t")
            self._data[(str(metric), str(trial))] = (ordered["t"].to_numpy(), ordered["value"].to_numpy())

    def get(self, metric: str, trial: str) -> tuple[np.ndarray, np.ndarray] | None:
        return self._data.get((metric, trial))


def _on(t: np.ndarray, found: tuple[np.ndarray, np.ndarray] | None) -> np.ndarray:
    """A series' values at the times `t` (NaN where it has none)."""
    if found is None:
        return np.full(len(t), np.nan)
    by_t = dict(zip(found[0].tolist(), found[1].tolist()))
    return np.array([by_t.get(moment, np.nan) for moment in t.tolist()], dtype=np.float64)


class PerTransaction:
    """The cost panels' series: an interval's figure a second ÷ the transactions it did a second
    (stats.transactions_per_s), and CPU µs from vmstat us + sy × the host's vCPUs (host.json; none
    when unknown). An interval of less than one transaction a second has no cost: a stall's would
    be its whole second's work over next to nothing."""

    NEEDS = {"driver.tps", "driver.throughput", "vmstat.us", "vmstat.sy"} | {
        spec[0].removeprefix(COST) for spec in COST_PANELS if spec[0] != COST + "cpu_us"}

    def __init__(self, series: Series, trials: pd.DataFrame, vcpus: Mapping[str, int | None]):
        self.series, self.trials, self.vcpus = series, trials, vcpus

    def get(self, metric: str, trial: str) -> tuple[np.ndarray, np.ndarray] | None:
        unit = self.trials.at[trial, "throughput_unit"]
        done = self.series.get("driver.tps" if unit == "tps" else "driver.throughput", trial)
        if done is None or unit not in ("tps", "tpmC"):
            return None
        t, per_s = done[0], stats.transactions_per_s(unit, done[1], done[1])
        name = metric.removeprefix(COST)
        if name == "cpu_us":
            cores = self.vcpus.get(str(self.trials.at[trial, "host"]))
            if not cores:
                return None
            spent = (_on(t, self.series.get("vmstat.us", trial)) + _on(t, self.series.get("vmstat.sy", trial))) \
                / 100 * cores * 1e6
        else:
            spent = _on(t, self.series.get(name, trial))
        if np.isnan(spent).all():
            return None
        with np.errstate(divide="ignore", invalid="ignore"):
            return t, np.where(per_s >= 1, spent / per_s, np.nan)


def groups(cells: pd.DataFrame) -> Iterator[tuple[str, pd.DataFrame]]:
    for key, block in cells.groupby(list(GROUP), sort=True):
        host, filesystem, workload, threads = key
        yield f"{host}/{filesystem}/{workload}/t{threads}", block.sort_values(["variant", "bp_bytes", "subtest", "block_bytes", "repeat"])


def _label(row: pd.Series) -> str:
    if row["workload"] == "fileio":
        return f"{row['subtest']} bs-{row['block_size']} r{row['repeat']}"
    return f"{row['variant']} bp-{row['bp_size']} r{row['repeat']}"


def _shade_warmup(axes: object, warmups: list[float]) -> None:
    for warmup in sorted(set(warmups)):
        if warmup > 0:
            axes.axvspan(0, warmup, color="0.85", alpha=0.6, lw=0, zorder=0)  # type: ignore[attr-defined]


def _colors(n: int) -> list[tuple[float, float, float, float]]:
    from matplotlib import colormaps
    cmap = colormaps["tab10" if n <= 10 else "tab20"]
    return [cmap(i % cmap.N) for i in range(n)]


def window_means(t: np.ndarray, v: np.ndarray, width: float) -> tuple[np.ndarray, np.ndarray]:
    """Means over windows (k × width, (k + 1) × width], placed at the window's end (the seeds' 10 s jitter)."""
    index = np.ceil(t / width - 1e-9).astype(np.int64)
    keys, inverse = np.unique(index, return_inverse=True)
    return keys * width, np.bincount(inverse, weights=v) / np.bincount(inverse)


def broken_at_gaps(t: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A line with a NaN point wherever a sample is missing (a step longer than 1.5 × the usual
    one), so the figure shows the gap instead of drawing across it: never interpolated."""
    t, v = np.asarray(t, dtype=np.float64), np.asarray(v, dtype=np.float64)
    steps = np.diff(t)
    usual = steps[np.isfinite(steps) & (steps > 0)]
    if usual.size < 2:
        return t, v
    after = np.flatnonzero(steps > 1.5 * np.median(usual)) + 1
    return np.insert(t, after, t[after - 1] + steps[after - 1] / 2), np.insert(v, after, np.nan)


def time_series(series: Series, name: str, block: pd.DataFrame, metric: str, ylabel: str, title: str,
                width: float | None = None) -> bytes | None:
    """One line per trial; with `width`, the means of windows of that many seconds instead of every interval."""
    figure = Figure(figsize=(10, 3.6))
    figure.subplots_adjust(left=0.08, right=0.98, top=0.9, bottom=0.14)
    axes = figure.add_subplot()
    drawn = False
    for color, (_, row) in zip(_colors(len(block)), block.iterrows()):
        found = series.get(metric, row["trial"])
        if found is None:
            continue
        t, v = broken_at_gaps(*found) if width is None else window_means(*found, width)
        axes.plot(t, v, lw=0.9, color=color, label=_label(row))
        drawn = True
    if not drawn:
        return None
    _shade_warmup(axes, list(block["warmup_s"]))
    axes.set_title(f"{title} — {name} (grey: warmup, not measured)", fontsize=10)
    axes.set_xlabel("seconds since the driver started")
    axes.set_ylabel(ylabel)
    axes.set_ylim(bottom=0)
    axes.grid(alpha=0.3)
    axes.legend(fontsize=7, ncol=4, loc="lower right")
    return _png(figure)


def panels(series: Series | PerTransaction, name: str, block: pd.DataFrame, specs: tuple, title: str,
           lines: dict[str, list[tuple[float, str]]] | None = None) -> bytes | None:
    """One panel per (metric, label, scale, top) of `specs`, one line per trial; `lines`: levels to
    draw dashed across a metric's panel, with their labels (already scaled)."""
    height = 1.7 * len(specs) + 0.9
    figure = Figure(figsize=(10, height))
    figure.subplots_adjust(left=0.08, right=0.98, top=1 - 0.45 / height, bottom=0.5 / height, hspace=0.12)
    axes_list = figure.subplots(len(specs), 1, sharex=True, squeeze=False)[:, 0]
    with_lines = []
    colors = _colors(len(block))
    for axes, spec in zip(axes_list, specs):
        metric, ylabel, scale, top = spec
        for color, (_, row) in zip(colors, block.iterrows()):
            found = series.get(metric, row["trial"])
            if found is None:
                continue
            t, v = broken_at_gaps(*found)
            axes.plot(t, v * scale, lw=0.8, color=color, label=_label(row))
            if not with_lines or with_lines[-1] is not axes:
                with_lines.append(axes)
        if not with_lines or with_lines[-1] is not axes:  # a server that does not show it: say so, not a blank
            axes.text(0.5, 0.5, "not in these trials' logs", transform=axes.transAxes, ha="center", va="center",
                      fontsize=8, color="0.4")
        for level, label in (lines or {}).get(metric, []):
            axes.axhline(level, color="0.3", lw=0.8, ls="--")
            axes.annotate(label, (0.005, level), xycoords=("axes fraction", "data"), fontsize=7, va="bottom")
        _shade_warmup(axes, list(block["warmup_s"]))
        axes.set_ylim(bottom=0, top=top)
        axes.set_ylabel(ylabel, fontsize=8)
        axes.grid(alpha=0.3)
    if not with_lines:
        return None
    axes_list[0].set_title(f"{title} — {name}", fontsize=10)
    with_lines[0].legend(fontsize=7, ncol=4, loc="upper right")
    axes_list[-1].set_xlabel("seconds since the driver started")
    return _png(figure)


def _redo_lines(frame: Frame, block: pd.DataFrame) -> list[tuple[float, str]]:
    """The redo capacity of each server the block's trials ran (stats.redo_capacity) and the flush
    points it computed for it (stats.flush_points: async, sync), in MiB."""
    found: dict[float, str] = {}
    for _, meta in frame.trials.loc[block["trial"]].iterrows():
        async_bytes, sync_bytes = flush_points(meta)
        for size, what in ((redo_capacity(meta), "redo capacity"), (async_bytes, "async flush point"),
                           (sync_bytes, "sync flush point")):
            if size:
                found.setdefault(size / 2 ** 20, f"{what} {size / 2 ** 20:.4g} MiB")
    return sorted(found.items())


def bars(table: Table, row_key: str, title: str) -> list[Plot]:
    """Grouped bars of a pivot table: one figure per group, one bar cluster per buffer pool."""
    data = table.data
    bp_columns = [c for c in data.columns if str(c).startswith("bp-")]
    group_keys = [c for c in data.columns if c not in bp_columns and c not in (row_key, "unit")]
    plots = []
    for key, block in data.groupby(group_keys, sort=True):
        block = block[~block[row_key].astype(str).str.contains("/")]  # ratio rows are not bars
        if block.empty:
            continue
        labels = dict(zip(group_keys, key if isinstance(key, tuple) else (key,)))
        name = "/".join(f"t{v}" if k == "threads" else str(v) for k, v in labels.items())
        figure = Figure(figsize=(6, 3.2))
        figure.subplots_adjust(left=0.13, right=0.98, top=0.9, bottom=0.1)
        axes = figure.add_subplot()
        width = 0.8 / len(block)
        x = np.arange(len(bp_columns))
        for i, (color, (_, row)) in enumerate(zip(_colors(len(block)), block.iterrows())):
            values = row[bp_columns].to_numpy(dtype=np.float64)
            axes.bar(x + i * width - 0.4 + width / 2, np.nan_to_num(values), width, color=color,
                     label=str(row[row_key]))
        axes.set_xticks(x, bp_columns)
        axes.set_ylabel(f"median {data['unit'].iloc[0]}")
        axes.set_title(f"{title} — {name}", fontsize=9)
        axes.legend(fontsize=8)
        axes.grid(axis="y", alpha=0.3)
        plots.append(Plot(f"bars_{table.name}_{slug(name)}", f"{title} — {name}", "tables", _png(figure)))
    return plots


def latency_by_rate(table: Table, th: Thresholds = DEFAULTS) -> list[Plot]:
    """Latency against offered load, one figure per configuration of the fixed-rate table: p50, p95
    and p99 of the merged histograms at each rate (log scale: a saturated rate's queue time dwarfs
    the rest), saturated rates drawn as red crosses, the SLA's limit as a dashed line."""
    plots = []
    for labels, block in rate_configurations(table):
        name = "/".join(f"t{v}" if k == "threads" else f"m{v}" if k == "members" else str(v)
                        for k, v in labels.items() if str(v) != "-")
        figure = Figure(figsize=(6, 3.4))
        figure.subplots_adjust(left=0.12, right=0.98, top=0.9, bottom=0.14)
        axes = figure.add_subplot()
        rate = block["rate"].to_numpy(dtype=np.float64)
        saturated = block["saturated"].to_numpy() > 0
        for pct, color in (("50", "tab:blue"), ("95", "tab:orange"), ("99", "tab:green")):
            values = block[f"p{pct}_ms"].to_numpy(dtype=np.float64)
            axes.plot(rate, values, "o-", color=color, label=f"p{pct}")
            axes.plot(rate[saturated], values[saturated], "x", color="tab:red", markersize=10, mew=2)
        if saturated.any():
            axes.plot([], [], "x", color="tab:red", markersize=10, mew=2, label="saturated")
        axes.axhline(th.sla_ms, color="black", lw=1, ls="--", label=f"SLA: p{th.sla_percentile:g} ≤ {th.sla_ms:g} ms")
        axes.set_yscale("log")
        axes.set_xlabel("offered rate (transactions/s)")
        axes.set_ylabel("latency (ms), merged histograms")
        axes.set_title(f"Latency vs offered load — {name}", fontsize=9)
        axes.legend(fontsize=8)
        axes.grid(alpha=0.3, which="both")
        plots.append(Plot(f"latency_by_rate_{slug(name)}", f"Latency vs offered load — {name}", "tables",
                          _png(figure)))
    return plots


# Ratios marked on a forest plot's axis (and their inverses), as far as its intervals reach.
FOREST_STEPS = (1.05, 1.1, 1.25, 1.5, 2.0, 3.0, 5.0, 10.0, 100.0)


def compare_forest(comparison: pd.DataFrame, name_a: str, name_b: str) -> Plot | None:
    """Each configuration's ratio A/B as a point with its 95 % interval, on a log axis centred on 1
    (a forest plot): a 5 % difference and its interval stay visible, where bars from 0 hid them.
    Red: differs; grey: no difference; a hollow point: no verdict (no interval, or drift not measured)."""
    both = comparison[(comparison["only_in"] == "") & comparison["ratio"].notna()]
    if both.empty:
        return None
    keys = [c for c in COMPARE_KEYS if c in both]
    labels = ["/".join(part for k in keys if (part := name_part(k, row[k])) is not None) for _, row in both.iterrows()]
    ratio = both["ratio"].to_numpy(dtype=np.float64)
    low = both["ci_low"].to_numpy(dtype=np.float64)
    high = both["ci_high"].to_numpy(dtype=np.float64)
    judged = np.isin(both["verdict"].to_numpy(dtype=object), ["differs", "no difference"])
    reach = np.nanmax(np.abs(np.log(np.concatenate([ratio, low[~np.isnan(low)], high[~np.isnan(high)]]))))
    reach = max(float(reach) * 1.15, math.log(1.1))
    height = 0.35 * len(both) + 1.6
    figure = Figure(figsize=(10, height))
    figure.subplots_adjust(left=0.3, right=0.98, top=1 - 0.2 / height, bottom=0.7 / height)
    axes = figure.add_subplot()
    y = np.arange(len(both))
    for index, (r, lo, hi, differs, has_verdict) in enumerate(zip(ratio, low, high, both["differs"], judged)):
        color = "tab:red" if differs else "tab:gray"
        if not math.isnan(lo):
            axes.plot([lo, hi], [index, index], color=color, lw=2 if has_verdict else 1,
                      ls="-" if has_verdict else ":")
        axes.plot([r], [index], "o", color=color, markerfacecolor=color if has_verdict else "white", markersize=6)
    axes.axvline(1.0, color="black", lw=1)
    axes.set_xscale("log")
    axes.set_xlim(math.exp(-reach), math.exp(reach))
    steps = [step for step in FOREST_STEPS if math.log(step) <= reach]
    axes.xaxis.set_major_locator(matplotlib.ticker.FixedLocator(sorted({1.0, *steps, *(1 / step for step in steps)})))
    axes.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda value, _: f"{value:.3g}"))
    axes.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
    axes.set_yticks(y, labels, fontsize=7)
    axes.invert_yaxis()
    axes.set_xlabel(f"median throughput {name_a} / {name_b}, log scale (lines: 95 % interval; red: differs; "
                    "hollow: no verdict)")
    axes.grid(axis="x", alpha=0.3, which="both")
    return Plot("compare_ratios", f"A/B ratios: {name_a} / {name_b}", "compare", _png(figure))


def report_plots(frame: Frame, cells: pd.DataFrame, tables: list[Table], th: Thresholds = DEFAULTS,
                 vcpus: Mapping[str, int | None] | None = None) -> list[Plot]:
    """`vcpus`: each host's (report/costs.vcpus_of), for CPU µs per transaction; none: not drawn."""
    metrics = {"driver.throughput", "driver.lat_ms", *PerTransaction.NEEDS} | {
        spec[0] for spec in (*CPU_PANELS, *IO_PANELS, *FLUSHING_PANELS, *CACHE_PANELS)}
    series = Series(frame, metrics)
    costs = PerTransaction(series, frame.trials, vcpus or {})
    plots: list[Plot] = []
    for name, block in groups(cells):
        unit = str(block["unit"].dropna().iloc[0]) if block["unit"].notna().any() else "throughput"
        pct = block["latency_pct"].dropna()
        pct_label = f"p{pct.iloc[0]:g}" if len(pct) else "percentile"
        interval = float(frame.trials.loc[block["trial"], "report_interval_s"].max())
        longest = float(frame.trials.loc[block["trial"], "driver_last_t"].max())
        width = JITTER_INTERVALS * interval
        figures = [
            ("throughput", f"Throughput ({unit})", time_series(series, name, block, "driver.throughput", unit,
                                                               "Throughput per interval")),
            ("throughput10", f"Throughput ({unit}), {width:g} s means",
             time_series(series, name, block, "driver.throughput", unit, f"Throughput, {width:g} s means", width)
             if longest >= 5 * width else None),
            ("latency", f"Latency {pct_label}", time_series(series, name, block, "driver.lat_ms",
                                                            f"{pct_label} latency (ms)", "Latency per interval")),
            ("cpu", "vmstat CPU", panels(series, name, block, CPU_PANELS, "vmstat CPU")),
            ("io", "iostat device", panels(series, name, block, IO_PANELS, "iostat device")),
            ("innodb", "InnoDB flushing", panels(series, name, block, FLUSHING_PANELS, "InnoDB flushing (status, each "
                                                 "interval)", {CHECKPOINT_PANEL[0]: _redo_lines(frame, block)})),
            ("costs", "Cost per transaction",
             panels(costs, name, block, COST_PANELS, "Cost per transaction (each interval)")
             if (block["workload"] != "fileio").any() else None),
            # Only where a trial of the group ran on a cache: no figure is made for the rest.
            ("cache", "Flash cache", panels(series, name, block, CACHE_PANELS, "Flash cache (its own counters, each "
                                            "interval)")
             if any(series.get(CACHE_PANELS[0][0], trial) is not None for trial in block["trial"]) else None),
        ]
        for kind, title, png in figures:
            if png is not None:
                plots.append(Plot(f"{kind}_{slug(name)}", f"{title} — {name}", name, png))
    for table in tables:
        if table.name == "variant_by_bp":
            plots += bars(table, "variant", "Median throughput by variant")
        elif table.name == "fs_by_bp":
            plots += bars(table, "filesystem", "Median throughput by filesystem")
        elif table.name == "fixed_rate":
            plots += latency_by_rate(table, th)
    return plots

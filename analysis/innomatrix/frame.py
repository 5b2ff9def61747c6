"""A results tree as one tidy long table: one row per interval per metric per trial.

`load(run_dir)` reads every trial directory (`tree.trial_dirs`) and returns a `Frame`:

- `intervals`: columns `trial` (the trial's path under the run), `t` (seconds since the driver
  started, on the driver's interval grid), `metric` (`driver.tps`, `vmstat.wa`, `iostat.util`,
  `status.Innodb_os_log_written`, ...), `value`, and `measured` (the interval lies after the
  warmup and within the driver's run).
- `trials`: one row per trial, indexed by `trial`: the cell's dimensions, times, durations,
  status and reasons, driver totals, and the notes of what was dropped or assumed on the way.

The clock: sysbench's interval reported at `t` covers (t - interval, t] after `times.started`.
A collector sample stamped at wall time W covers the interval before W, so it lands on
t = round((W - started + resolution / 2) / interval) * interval; the half resolution centres
stamps cut to whole seconds. If two samples of one collector land on one t (a late stamp), the
first is kept and a note says how many were dropped. vmstat and iostat's first reports (averages
since boot) are not samples and are dropped by their parsers.

Metrics: driver figures as sysbench prints them, plus `driver.throughput` (tps, or read + write
MiB/s for fileio); every vmstat column; iostat's CPU (`iostat.cpu_*`) and device columns;
from status.log the counters in `STATUS_COUNTERS` as rates per second (delta over the time
between samples) and the gauges in `STATUS_GAUGES` as levels; on a flash cache, from cache.log
its counters' growth between samples and its levels (`cache.read_hits`, `cache.read_hit_ratio`,
`cache.dirty_mib`: innomatrix.parse.cache).

A tree is untrusted input (people share them): it is walked and its files opened by
`innomatrix.tree` (no symlink, device or FIFO; no log larger than its trial could write), every
trial.json is checked by `innomatrix.record`, every collector value against `innomatrix.bounds`,
and the driver's log against its record (threads, interval, percentile). What cannot be true is
an error naming the file (and line); what is true but makes a figure doubtful (a counter that
went back when the server restarted, a clock set back, a collector that stopped early, a
summary in trial.json that its log no longer gives) marks the trial (`marks`, shown as flags).
"""

from __future__ import annotations

import math
import multiprocessing
import os
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from innomatrix import bounds, layout, record, tree
from innomatrix_host import flags as host_flags
from innomatrix_host import flush_points, mycnf, server_log, settings
from innomatrix.parse import ParseError, Samples, cache, iostat, status, vmstat
from innomatrix.parse.fast_sysbench import DriverOutput, parse_output_columns
from innomatrix_host import sysbench, tpcc
from innomatrix_host.measured import EPSILON_S, first_measured_t

STATUS_COUNTERS = (
    "Innodb_data_written", "Innodb_os_log_written", "Innodb_data_read", "Innodb_data_reads",
    "Innodb_data_writes", "Innodb_data_fsyncs", "Innodb_pages_read", "Innodb_pages_written",
    "Innodb_buffer_pool_reads", "Innodb_buffer_pool_read_requests", "Innodb_buffer_pool_write_requests",
    "Innodb_buffer_pool_wait_free", "Innodb_buffer_pool_pages_flushed", "Innodb_log_waits",
    "Innodb_dblwr_pages_written", "Innodb_row_lock_waits", "Innodb_deadlocks", "Innodb_rows_read",
    "Innodb_rows_inserted", "Innodb_rows_updated", "Innodb_rows_deleted", "Com_commit", "Com_rollback",
    "Questions", "Bytes_received", "Bytes_sent",
    *(flush_points.METRIC_PREFIX + name for name in flush_points.FLUSH_TYPE_METRICS),
)
STATUS_GAUGES = (
    "Innodb_buffer_pool_pages_data", "Innodb_buffer_pool_pages_dirty", "Innodb_buffer_pool_pages_free",
    "Innodb_buffer_pool_pages_total",
    "Innodb_checkpoint_age", "Innodb_history_list_length", "Threads_running", "Threads_connected",
    *("Innodb_redo_log_current_lsn", "Innodb_redo_log_checkpoint_lsn"),
)
# How far the checkpoint trails the redo written, in bytes, on every server: MariaDB says so
# (Innodb_checkpoint_age); MySQL 8.0.30+ has no such variable but shows both LSNs in the same
# SHOW GLOBAL STATUS the sampler reads each second, so their difference is exact and costs no query.
CHECKPOINT_AGE = "status.checkpoint_age"
# Dirty pages as a share of the buffer pool's pages (% ; the seeds' innodb_max_dirty_pages_pct is one).
DIRTY_PCT = "status.dirty_pct"

TRIAL_FILES = ("driver.log", "vmstat.log", "iostat.json", "status.log")
PARALLEL_FROM = 16
NOT_APPLICABLE = layout.NOT_APPLICABLE
_QUARTER_HOUR_S = server_log.QUARTER_HOUR_S  # local stamps are placed by whole quarter-hours
# A collector starts just before the driver and stops just after it: a sample this far outside the
# trial (beyond one interval) is not of this trial. Within the measured window, a collector may
# miss this much at either end (a late first sample, an early stop) before the trial is marked.
_CLOCK_SLACK_S = 5.0


# A results tree that cannot be loaded (the message names the file): every error of the tree's
# reader, of trial.json's checks (record.RecordError) and of the frame's own.
FrameError = tree.TreeError


@dataclass
class Frame:
    run_dir: Path
    trials: pd.DataFrame
    intervals: pd.DataFrame
    # A fixed-rate trial's latency histogram of its measured events (sysbench --histogram=on after
    # a checkpoint at the warmup), by trial: merged per configuration, never averaged.
    histograms: dict[str, list[tuple[float, int]]] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.run_dir.name

    def measured(self, metrics: list[str] | tuple[str, ...] | None = None) -> pd.DataFrame:
        """The measured rows (after the warmup), optionally of some metrics only."""
        rows = self.intervals[self.intervals["measured"].to_numpy()]
        if metrics is not None:
            rows = rows[rows["metric"].isin(metrics).to_numpy()]
        return rows

    def wide(self, metrics: list[str] | tuple[str, ...], measured_only: bool = True) -> pd.DataFrame:
        """Rows (trial, t), one column per metric; NaN where a collector has no sample."""
        rows = self.measured(metrics) if measured_only else self.intervals[self.intervals["metric"].isin(metrics)]
        table = rows.pivot_table(index=["trial", "t"], columns="metric", values="value", observed=True,
                                 aggfunc="first")
        table.columns = [str(c) for c in table.columns]
        return table.reindex(columns=list(metrics))


@dataclass
class TrialData:
    """What one trial directory holds, before it joins the frame."""

    meta: dict[str, Any]
    histogram: list[tuple[float, int]] | None = None
    t: list[np.ndarray] = field(default_factory=list)
    names: list[str] = field(default_factory=list)
    values: list[np.ndarray] = field(default_factory=list)

    def add(self, t: np.ndarray, name: str, values: np.ndarray) -> None:
        self.t.append(t)
        self.names.append(name)
        self.values.append(np.asarray(values, dtype=np.float64))


Progress = Callable[[int, int, str], None]


def load(run_dir: str | Path, progress: Progress | None = None, workers: int | None = None) -> Frame:
    """Every trial of a run as one Frame; raises FrameError or ParseError naming the file.

    Trials are parsed in `workers` processes (default: one per CPU, up to 8, for runs of at least
    `PARALLEL_FROM` trials; below that, starting processes costs more than it saves).
    """
    run = Path(run_dir)
    root = tree.run_root(run)
    directories = tree.trial_dirs(root)
    if not directories:
        raise FrameError(f"{run}: no trial directories ({layout.TRIAL_SHAPE})")
    if workers is None:
        workers = min(os.cpu_count() or 1, 8) if len(directories) >= PARALLEL_FROM else 1
    loaded = []
    if workers <= 1:
        for index, directory in enumerate(directories, start=1):
            loaded.append(load_trial(directory, root))
            if progress is not None:
                progress(index, len(directories), directory.relative_to(root).as_posix())
        return assemble(run, loaded)
    # forkserver: the parent may hold pyarrow's threads, which fork would copy in an unknown state.
    # The server imports this module once and forks each worker from it ready to parse, instead of
    # each worker importing numpy, pandas and pyarrow itself (a second or more per pool).
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([__name__])
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        for index, trial in enumerate(pool.map(load_trial, directories, [root] * len(directories)), start=1):
            loaded.append(trial)
            if progress is not None:
                progress(index, len(directories), trial.meta["trial"])
    return assemble(run, loaded)


def assemble(run: Path, loaded: list[TrialData]) -> Frame:
    """Write every trial's arrays once into the long table's columns (categorical codes for names)."""
    _refuse_copies(run, loaded)
    metric_names = sorted({name for trial in loaded for name in trial.names})
    code_of = {name: code for code, name in enumerate(metric_names)}
    rows = sum(len(t) for trial in loaded for t in trial.t)
    trial_codes = np.empty(rows, dtype=_codes_dtype(len(loaded)))
    t_column = np.empty(rows, dtype=np.float64)
    metric_codes = np.empty(rows, dtype=_codes_dtype(len(metric_names)))
    value_column = np.empty(rows, dtype=np.float64)
    measured_column = np.empty(rows, dtype=bool)
    end = 0
    for code, trial in enumerate(loaded):
        warmup = trial.meta["warmup_s"]
        interval = trial.meta["report_interval_s"]
        last = trial.meta["driver_last_t"]
        trial_start = end
        for t, name, values in zip(trial.t, trial.names, trial.values):
            start, end = end, end + len(t)
            t_column[start:end] = t
            metric_codes[start:end] = code_of[name]
            value_column[start:end] = values
            measured_column[start:end] = (t >= first_measured_t(warmup, interval)) & (t <= last + EPSILON_S)
        trial_codes[trial_start:end] = code
    trial_ids = [trial.meta["trial"] for trial in loaded]
    # copy=False: pandas would otherwise copy every column and stack t with value, doubling the time.
    intervals = pd.DataFrame({
        "trial": pd.Categorical.from_codes(trial_codes, categories=pd.Index(trial_ids)),
        "t": t_column,
        "metric": pd.Categorical.from_codes(metric_codes, categories=pd.Index(metric_names)),
        "value": value_column,
        "measured": measured_column,
    }, copy=False)
    trials = pd.DataFrame([trial.meta for trial in loaded]).set_index("trial")
    histograms = {trial.meta["trial"]: trial.histogram for trial in loaded if trial.histogram is not None}
    return Frame(run_dir=run, trials=trials, intervals=intervals, histograms=histograms)


def _refuse_copies(run: Path, loaded: list[TrialData]) -> None:
    """A cell's key names one cell of one host: two directories with one key hold one trial twice."""
    seen: dict[tuple[str, str], str] = {}
    for trial in loaded:
        key = trial.meta["key"]
        if not key:
            continue
        first = seen.setdefault((trial.meta["host"], key), trial.meta["trial"])
        if first != trial.meta["trial"]:
            raise FrameError(f"{run}: {first} and {trial.meta['trial']} hold one trial (key {key}): one is a copy; "
                             "remove it or move it out of the run")


def _codes_dtype(categories: int) -> type[np.signedinteger]:
    """The integer type pandas keeps categorical codes in; codes in any other would be copied into it."""
    for dtype in (np.int8, np.int16, np.int32):
        if categories < np.iinfo(dtype).max:
            return dtype
    return np.int64


def load_trial(directory: Path, run: Path) -> TrialData:
    """One trial directory: trial.json for the cell and the clock, then each file that exists.

    `run` is the run's real path (tree.run_root): every file is read through innomatrix.tree.
    """
    trial_json = directory / layout.TRIAL_FILE
    meta = record.meta(tree.read_json(trial_json), directory.relative_to(run).as_posix(), trial_json)
    data = TrialData(meta=meta)
    notes: list[str] = []
    seconds, interval = _span_s(meta), meta["report_interval_s"] or record.INTERVAL_S[0]
    log = directory / "driver.log"
    if os.path.lexists(log):
        text = tree.read_log(log, seconds, interval).decode(errors="replace")
        (_tpcc_driver if meta["workload"] == "tpcc" else _driver)(log, text, data, notes)
        if text and not text.endswith("\n"):  # a driver ends its every line; its last one here is cut
            meta["marks"].append(f"driver.log ends in the middle of line {text.count(chr(10)) + 1} (cut short)")
    else:
        notes.append("driver: no driver.log")
    if meta["report_interval_s"] is None:
        raise FrameError(f"{trial_json}: no report interval (durations.report_interval_s, --report-interval "
                         "in driver.command, or two driver intervals)")
    started = meta["started"]
    device = meta.pop("_device")
    readers: dict[str, tuple[str, Callable[[Path, bytes], Samples]]] = {
        "vmstat": ("vmstat.log", lambda path, raw: vmstat.read(path, raw)),
        "iostat": ("iostat.json", lambda path, raw: iostat.read(path, device, raw)),
        "status": ("status.log", lambda path, raw: status.read(path, STATUS_COUNTERS + STATUS_GAUGES, raw)),
        # A flash cache's own counters (a trial on a cache layout has them; no other trial does).
        "cache": ("cache.log", lambda path, raw: cache.read(path, raw)),
    }
    for source, (name, reader) in readers.items():
        path = directory / name
        if not os.path.lexists(path):
            if source != "cache":
                notes.append(f"{source}: no {name}")
            continue
        raw = tree.read_log(path, seconds, meta["report_interval_s"])
        samples = reader(path, raw)
        if source != "iostat" and raw and not raw.endswith(b"\n"):
            # vmstat and the status sampler end their every line; a last line without its line break
            # was cut, and may have lost digits of its last value while still reading as a number.
            # (iostat's JSON cut short is read up to its last whole entry, and marked.)
            raise ParseError(path, "cut short: the last line has no line break", raw.count(b"\n") + 1)
        notes.extend(samples.notes)
        meta["marks"].extend(samples.marks)
        if isinstance(samples, iostat.IostatSamples):
            meta["iostat_truncated"] = samples.truncated
            meta["iostat_device"] = samples.device
        if len(samples) == 0:
            continue
        times = _to_utc(samples, started, notes, source)
        if isinstance(samples, status.StatusSamples):
            _status(samples, times, path, raw, meta, data, notes)
            continue
        t, keep = _align(times, samples.resolution_s, started, meta["report_interval_s"], notes, source)
        _on_the_trials_clock(t, path, meta)
        for metric, values in samples.metrics.items():
            data.add(t, f"{source}.{metric}", values[keep])
    meta.update(_server_settings(directory, notes, meta["flush_points_unread"]))
    meta["server_warnings"] = _server_warnings(directory, meta, notes)
    meta["notes"] = "; ".join(notes)
    meta["marks"] = "; ".join(meta["marks"])
    return data


def _span_s(meta: dict[str, Any]) -> float:
    """How long the trial ran, by its record: what bounds the size of its logs (tree.read_log)."""
    if meta["ended"] is not None:
        return (meta["ended"] - meta["started"]).total_seconds()
    planned = meta["planned_s"]
    return 0.0 if planned is None or math.isnan(planned) else float(planned)


def _on_the_trials_clock(t: np.ndarray, path: Path, meta: dict[str, Any]) -> None:
    """A collector's samples (`t`, seconds after the driver started) must lie within the trial,
    and should cover its measured window; a sample outside the trial means the log is another
    trial's or the record's times were changed (an error), a window not covered marks the trial."""
    interval = meta["report_interval_s"]
    slack = interval + _CLOCK_SLACK_S
    span = _span_s(meta) if meta["ended"] is not None else None
    outside = (t < -slack) | ((t > span + slack) if span is not None else False)
    if outside.any():
        when = float(t[np.argmax(outside)])
        raise record.RecordError(
            f"{path}: a sample at {when:+g} s from the driver's start, outside the trial (0 to "
            f"{'?' if span is None else f'{span:g}'} s by trial.json's times): the log is another trial's, or "
            "trial.json's times were changed")
    first, last = meta["warmup_s"] + interval, meta["driver_last_t"]
    if meta["status"] != "ok" or last < first:
        return  # nothing measured: nothing to cover
    inside = t[(t >= first_measured_t(meta["warmup_s"], interval)) & (t <= last + EPSILON_S)]
    if inside.size == 0:
        # A window no longer than the slack may fall between two samples (vmstat's time stamps are
        # whole seconds, and a busy host wakes its collectors late): its collector figures are
        # left blank, not marked, as a late first sample would be in a longer window.
        if last - first > _CLOCK_SLACK_S:
            meta["marks"].append(f"{path.name}: no sample in the measured window ({first:g} to {last:g} s)")
    elif inside.min() > first + _CLOCK_SLACK_S or inside.max() < last - _CLOCK_SLACK_S:
        meta["marks"].append(f"{path.name} covers {inside.min():g} to {inside.max():g} s of the measured window "
                             f"({first:g} to {last:g} s): the collector started late or stopped early")


def _server_settings(directory: Path, notes: list[str], flush_points_unread: str = "") -> dict[str, Any]:
    """The I/O settings the server ran with (`setting.<name>`, from variables.txt), and what its
    flags say of them against the trial's my.cnf (`server_flags`: innomatrix_host.flags.server, the
    definition the host applied; trial.json's flags are not read back). Trials from before
    variables.txt have none; trials from before flush_points.txt have no flush points
    (`flush_async_bytes`, `flush_sync_bytes`)."""
    found: dict[str, Any] = {f"setting.{name}": None for name in settings.IO_SETTINGS}
    found.update(server_flags="", flush_async_bytes=None, flush_sync_bytes=None)
    points = directory / "flush_points.txt"
    if flush_points_unread:
        notes.append(f"flush_points.txt: none, the server would not give them ({flush_points_unread[:200]})")
    if os.path.lexists(points):
        try:
            parsed = flush_points.parse(tree.read_text(points))
        except flush_points.FlushPointsError as exc:
            raise ParseError(points, str(exc), exc.line) from None
        found.update(flush_async_bytes=parsed.async_bytes, flush_sync_bytes=parsed.sync_bytes)
    variables, cnf = directory / "variables.txt", directory / "my.cnf"
    if not os.path.lexists(variables):
        return found
    running = settings.effective(tree.read_text(variables))
    found.update({f"setting.{name}": value for name, value in running.items()})
    try:
        wanted = settings.asked(tree.read_text(cnf), str(cnf)) if os.path.lexists(cnf) else {}
    except mycnf.MyCnfError as exc:
        notes.append(f"my.cnf: {exc}")
        wanted = {}
    found["server_flags"] = "; ".join(flag["text"] for flag in host_flags.server(wanted, running))
    return found


def _server_warnings(directory: Path, meta: dict[str, Any], notes: list[str]) -> tuple[tuple[float, str], ...]:
    """What the server warned of during the trial (mysqld.err's [Warning] and [ERROR] lines), each
    at its seconds since the driver started (innomatrix_host.server_log.placed: MariaDB's local
    stamps by the nearest quarter-hour offset)."""
    path = directory / "mysqld.err"
    if not os.path.lexists(path):
        return ()
    # The error log is the server's: a trial may fill it beyond the report's need, never stop it.
    found = server_log.from_head(*tree.read_head(path, server_log.MOST_BYTES))
    at_t, offset = server_log.placed(found, meta["started"].to_pydatetime(), _span_s(meta) + _CLOCK_SLACK_S)
    if offset is None:
        notes.append("mysqld.err: its stamps lie more than a day's zones from the trial's start: not placed")
    elif offset:
        notes.append(f"mysqld.err: local stamps read as UTC{offset.total_seconds() / 3600:+g} h")
    if found.cut:
        notes.append(f"mysqld.err: only its first {server_log.MOST_LINES} warnings or "
                     f"{server_log.MOST_BYTES >> 20} MiB read")
    return tuple(at_t)


_OLTP_METRICS = ("threads", "tps", "qps", "reads_s", "writes_s", "other_s", "err_s", "reconn_s", "lat_ms")
_FILEIO_METRICS = ("read_mib_s", "write_mib_s", "fsyncs_s", "lat_ms")


def _unreadable(path: Path, meta: dict[str, Any], notes: list[str], exc: ValueError) -> None:
    """A damaged driver log stops the report, naming file and line, unless its trial already ended
    failed or invalid: a driver killed mid-output leaves a cut log, and the trial says why."""
    if meta["status"] == "ok":
        raise ParseError(path, str(exc)) from None
    notes.append(f"driver: {path.name} cannot be read ({exc}); the trial is {meta['status']}")


def _driver(path: Path, text: str, data: TrialData, notes: list[str]) -> None:
    meta = data.meta
    try:
        output = parse_output_columns(text)
    except ValueError as exc:
        _unreadable(path, meta, notes, exc)
        return
    summary = output.summary
    meta["fatal"] = "; ".join(output.fatal[:3])
    meta["driver_complete"] = output.complete or meta["stopped_driver"]
    meta["driver_breaks"] = "; ".join(output.breaks[:3])
    meta["driver_total_time_s"] = summary.get("total_time_s")
    meta["driver_transactions"] = summary.get("transactions")
    meta["driver_ignored_errors"] = summary.get("ignored_errors")
    meta["driver_reconnects"] = summary.get("reconnects")
    _banner_agrees(path, output.header, meta)
    if meta["rate"]:
        _saturation(output, meta)
        data.histogram = output.histogram
    if not output.kinds:
        notes.append("driver: no interval lines")
        return
    if len(output.kinds) > 1:
        raise ParseError(path, f"mixes interval kinds {output.kinds}")
    kind = output.kinds[0]
    t = output.columns["t"]
    # A second printed twice (the reporting thread woke late): the first one stands.
    advancing = np.concatenate([[True], np.diff(t) > 0])
    t = t[advancing]
    _interval_agrees(path, t, meta)
    meta["driver_last_t"] = float(t.max())
    pcts = output.columns["lat_pct"][~np.isnan(output.columns["lat_pct"])]
    meta["latency_pct"] = float(pcts[0]) if pcts.size else None  # one percentile: parse_output_columns checks it
    _agree(path, "latency percentile", meta["latency_pct"], [("driver.command --percentile",
                                                               meta["command_options"].get("percentile")),
                                                              ("trial.json summary.latency_pct", meta["recorded_pct"])])
    if kind == "oltp" and (over := output.columns["threads"] > meta["threads"]).any():
        first = int(np.argmax(over))
        raise record.RecordError(f"{path}: interval [{output.columns['t'][first]:g}s] ran "
                                 f"{output.columns['threads'][first]:g} threads, the trial {meta['threads']}: "
                                 "the log of another trial?")
    names = _OLTP_METRICS if kind == "oltp" else _FILEIO_METRICS
    columns = {name: output.columns[name][advancing] for name in names}
    if kind == "oltp":
        columns["throughput"] = columns["tps"]
        meta["throughput_unit"] = "tps"
    else:
        columns["throughput"] = columns["read_mib_s"] + columns["write_mib_s"]
        meta["throughput_unit"] = "MiB/s"
    meta["driver_kind"] = kind
    for name, values in columns.items():
        data.add(t, f"driver.{name}", values)


def _saturation(output: DriverOutput, meta: dict[str, Any]) -> None:
    """A fixed-rate trial that fell behind its arrivals is marked, by the rule the host flags it with."""
    oltp = output.kinds == ["oltp"]
    intervals = [{"t": t, "tps": tps} for t, tps in zip(output.columns["t"].tolist(), output.columns["tps"].tolist())] \
        if oltp else []
    figures = sysbench.rate_figures(intervals, output.queue, output.fatal, meta["rate"], meta["warmup_s"],
                                    meta["report_interval_s"] or record.INTERVAL_S[0])
    if found := host_flags.saturated(figures):
        meta["saturated"] = True
        meta["marks"].append(found["text"])


def _agree(path: Path, what: str, found: float | None, told: list[tuple[str, float | None]]) -> None:
    """What the driver's log shows (`found`) against what the record says of it; None is not said."""
    if found is None:
        return
    for source, value in told:
        if value is not None and abs(value - found) > 1e-6:
            raise record.RecordError(f"{path}: {what} {found:g} in the log, {value:g} in {source}: the log of "
                                     "another trial, or a changed record")


def _banner_agrees(path: Path, header: dict[str, Any], meta: dict[str, Any]) -> None:
    """sysbench's banner ran the trial's threads at its report interval."""
    _agree(path, "threads (its banner)", header.get("threads"), [("the trial's cell", meta["threads"])])
    _agree(path, "rate (its banner)", header.get("rate"), [("the trial's cell", meta["rate"])])
    _agree(path, "report interval (its banner)", header.get("report_interval_s"),
           [("trial.json", meta["report_interval_s"])])
    if meta["report_interval_s"] is None and header.get("report_interval_s"):
        meta["report_interval_s"] = _interval_within(path, header["report_interval_s"])


def _interval_agrees(path: Path, t: np.ndarray, meta: dict[str, Any]) -> None:
    """The log's intervals step by the trial's report interval (or give it, for a record without one)."""
    if len(t) < 2:
        return
    step = float(np.median(np.diff(t)))
    if meta["report_interval_s"] is None:
        meta["report_interval_s"] = _interval_within(path, step)
    _agree(path, "report interval (its interval lines)", step, [("trial.json", meta["report_interval_s"])])


def _interval_within(path: Path, interval: float) -> float:
    low, high = record.INTERVAL_S
    if not low <= interval <= high:
        raise record.RecordError(f"{path}: reports every {interval:g} s, outside {low:g}–{high:g} s")
    return interval


def _tpcc_driver(path: Path, text: str, data: TrialData, notes: list[str]) -> None:
    """tpcc_start's output: New-Orders per interval as tpmC, and their p95 and p99 latency.

    Its interval times count from MEASURING START, which follows the driver's start within its
    connection set-up (the trial runs with no ramp-up): the driver's clock, like sysbench's.
    """
    meta = data.meta
    try:
        parsed = tpcc.parse_output(text, stopped=meta["stopped_driver"])
    except ValueError as exc:
        _unreadable(path, meta, notes, exc)
        return
    meta["fatal"] = "; ".join(fatal["text"] for fatal in parsed["fatal"][:3])
    meta["driver_kind"] = "tpcc"
    meta["throughput_unit"] = "tpmC"
    _agree(path, "connections (its <Parameters>)", parsed["parameters"].get("connections"),
           [("the trial's cell", meta["threads"])])
    if parsed["interval_s"]:
        _agree(path, "report interval (its interval lines)", float(parsed["interval_s"]),
               [("trial.json", meta["report_interval_s"])])
        meta["report_interval_s"] = meta["report_interval_s"] or _interval_within(path, float(parsed["interval_s"]))
    intervals = parsed["intervals"]
    if not intervals:
        notes.append("driver: no interval lines")
        return
    t = np.array([row["t"] for row in intervals], dtype=np.float64)
    meta["driver_last_t"] = float(t.max())
    meta["latency_pct"] = 95.0
    new_orders = np.array([row["new_order_count"] for row in intervals], dtype=np.float64)
    data.add(t, "driver.new_orders", new_orders)
    data.add(t, "driver.throughput", new_orders * 60 / meta["report_interval_s"])
    for name, field_name in (("lat_ms", "p95_ms"), ("p99_ms", "p99_ms")):
        data.add(t, f"driver.{name}", np.array([np.nan if row[field_name] is None else row[field_name]
                                                 for row in intervals], dtype=np.float64))


def _utc64(moment: pd.Timestamp) -> np.datetime64:
    """A UTC timestamp as numpy datetime64[ms], the collectors' unit."""
    return moment.tz_convert("UTC").tz_localize(None).to_datetime64().astype("datetime64[ms]")


def _to_utc(samples: Samples, started: pd.Timestamp, notes: list[str], source: str) -> np.ndarray:
    """Sample times as UTC datetime64[ms]; local stamps are placed by the nearest quarter-hour offset."""
    times = samples.times.astype("datetime64[ms]")
    if samples.zone == "UTC":
        return times
    start = _utc64(started)
    gap_s = (times[0] - start) / np.timedelta64(1, "s")
    offset_s = round(gap_s / _QUARTER_HOUR_S) * _QUARTER_HOUR_S
    notes.append(f"{source}: zone {samples.zone} read as UTC{offset_s / 3600:+g} h (its first sample is "
                 "nearest the driver's start that way)")
    return times - np.timedelta64(int(offset_s * 1000), "ms")


def _align(times: np.ndarray, resolution_s: float, started: pd.Timestamp, interval: float,
           notes: list[str], source: str) -> tuple[np.ndarray, np.ndarray]:
    """Each sample's t on the driver's grid, and which samples to keep (first of any duplicates)."""
    start = _utc64(started)
    offset_s = (times - start) / np.timedelta64(1, "s") + resolution_s / 2
    t = np.round(offset_s / interval) * interval
    _, first = np.unique(t, return_index=True)
    keep = np.sort(first)
    if len(keep) < len(t):
        notes.append(f"{source}: {len(t) - len(keep)} samples fell on an interval already taken and were dropped")
    return t[keep], keep


def _status(samples: status.StatusSamples, times: np.ndarray, path: Path, raw: bytes, meta: dict[str, Any],
            data: TrialData, notes: list[str]) -> None:
    """Counters as rates per second between samples, gauges as levels; the first sample only anchors.

    A counter that goes back (the server restarted mid-trial: its counters start again from 0)
    has no rate across that sample, and the trial is marked; a rate or a level no server shows is
    an error naming the line (bounds.status_rate, bounds.status_level)."""
    if len(times) < 2:
        notes.append("status: fewer than two samples, no rates")
        return
    seconds = np.diff(times) / np.timedelta64(1, "s")
    t, keep = _align(times[1:], samples.resolution_s, meta["started"], meta["report_interval_s"], notes, "status")
    _on_the_trials_clock(t, path, meta)
    levels: dict[str, np.ndarray] = {}
    if meta["flush_types_unread"]:
        notes.append(f"pages flushed by type: none drawn, the sampler did not read them all along "
                     f"({meta['flush_types_unread'][:200]})")
    for name, deltas in samples.metrics.items():
        if meta["flush_types_unread"] and name.startswith(flush_points.METRIC_PREFIX):
            continue  # an unlisted counter reads as one that did not move: none, rather than zeros
        if name in STATUS_GAUGES:
            base = samples.absolute.get(name, float("nan"))
            values = (base + np.cumsum(deltas))[1:]
            bound = bounds.status_level(name)
            what = "level"
        else:
            values = deltas[1:] / seconds
            went_back = values < 0
            if went_back.any():
                first = int(np.argmax(went_back))
                meta["marks"].append(f"{path.name}: {name} went back at {times[first + 1]} (the server restarted?): "
                                     f"no rate across {int(went_back.sum())} sample(s)")
                values = np.where(went_back, np.nan, values)
            bound = bounds.status_rate(name)
            what = "rate"
        known = np.flatnonzero(~np.isnan(values))  # a gauge without its first value has no level
        bad = bound.first_outside(values[known])
        if bad is not None:
            at = known[bad]
            raise ParseError(path, f"{name} {what} {values[at]:g} at {times[at + 1]} is not one a server shows "
                                   f"({bound.describe()})", _status_line(raw, times[at + 1], name))
        data.add(t, f"status.{name}", values[keep])
        if what == "level":
            levels[name] = values[keep]
    _dirty_share(levels, t, path, meta, data)
    age = _checkpoint_age(levels)
    if age is not None:
        behind = age < 0
        if behind.any():
            meta["marks"].append(f"{path.name}: the checkpoint LSN is ahead of the current LSN in {int(behind.sum())} "
                                 "sample(s): no checkpoint age there")
        age = np.where(behind, np.nan, age)
        # Two LSNs each within bounds can still be far apart: the age a server could show, or the line.
        known = np.flatnonzero(~np.isnan(age))
        bound = bounds.status_level("Innodb_checkpoint_age")
        bad = bound.first_outside(age[known])
        if bad is not None:
            at = known[bad]
            moment = times[1:][keep][at]
            raise ParseError(path, f"checkpoint age {age[at]:g} (current LSN − checkpoint LSN) at {moment} is not one "
                                   f"a server shows ({bound.describe()})",
                             _status_line(raw, moment, "Innodb_redo_log_current_lsn"))
        data.add(t, CHECKPOINT_AGE, age)


def _dirty_share(levels: dict[str, np.ndarray], t: np.ndarray, path: Path, meta: dict[str, Any],
                 data: TrialData) -> None:
    """Dirty pages as a % of the buffer pool's pages; more dirty pages than the pool has is no
    share a server shows: no share there, and the trial is marked."""
    dirty, total = levels.get("Innodb_buffer_pool_pages_dirty"), levels.get("Innodb_buffer_pool_pages_total")
    if dirty is None or total is None:
        return
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where(total > 0, 100 * dirty / total, np.nan)
    over = share > 100
    if over.any():
        meta["marks"].append(f"{path.name}: more dirty pages than the buffer pool has in {int(over.sum())} "
                             "sample(s): no dirty share there")
    data.add(t, DIRTY_PCT, np.where(over, np.nan, share))


def _checkpoint_age(levels: dict[str, np.ndarray]) -> np.ndarray | None:
    """Checkpoint age per sample, from the server's own gauge or its two LSNs; None without either."""
    if "Innodb_checkpoint_age" in levels:
        return levels["Innodb_checkpoint_age"]
    current, checkpoint = levels.get("Innodb_redo_log_current_lsn"), levels.get("Innodb_redo_log_checkpoint_lsn")
    if current is None or checkpoint is None:
        return None
    return current - checkpoint


def _status_line(raw: bytes, moment: np.datetime64, name: str) -> int | None:
    """The line of status.log that holds `name` at `moment` (the trial module writes milliseconds)."""
    row = f"{np.datetime_as_string(moment, unit='ms')}Z\t{name}\t".encode()
    position = raw.find(row)
    return raw.count(b"\n", 0, position) + 1 if position >= 0 else None

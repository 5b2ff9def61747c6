"""A results tree as one tidy long table: one row per interval per metric per trial.

`load(run_dir)` reads every trial directory (`layout.trial_dirs`) and returns a `Frame`:

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
between samples) and the gauges in `STATUS_GAUGES` as levels.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import re
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from innomatrix import layout, mycnf, settings
from innomatrix.knobs import KnobError, parse_size
from innomatrix.parse import ParseError, Samples, iostat, status, tpcc, vmstat
from innomatrix.parse.fast_sysbench import parse_output_columns

STATUS_COUNTERS = (
    "Innodb_data_written", "Innodb_os_log_written", "Innodb_data_read", "Innodb_data_reads",
    "Innodb_data_writes", "Innodb_data_fsyncs", "Innodb_pages_read", "Innodb_pages_written",
    "Innodb_buffer_pool_reads", "Innodb_buffer_pool_read_requests", "Innodb_buffer_pool_write_requests",
    "Innodb_buffer_pool_wait_free", "Innodb_buffer_pool_pages_flushed", "Innodb_log_waits",
    "Innodb_dblwr_pages_written", "Innodb_row_lock_waits", "Innodb_deadlocks", "Innodb_rows_read",
    "Innodb_rows_inserted", "Innodb_rows_updated", "Innodb_rows_deleted", "Com_commit", "Com_rollback",
    "Questions", "Bytes_received", "Bytes_sent",
)
STATUS_GAUGES = (
    "Innodb_buffer_pool_pages_data", "Innodb_buffer_pool_pages_dirty", "Innodb_buffer_pool_pages_free",
    "Innodb_checkpoint_age", "Innodb_history_list_length", "Threads_running", "Threads_connected",
)

TRIAL_FILES = ("driver.log", "vmstat.log", "iostat.json", "status.log")
PARALLEL_FROM = 16
_EPSILON_S = 1e-6
NOT_APPLICABLE = layout.NOT_APPLICABLE
_REPORT_INTERVAL = re.compile(r"--report-interval[= ](\d+(?:\.\d+)?)")
_QUARTER_HOUR_S = 900


class FrameError(ValueError):
    """A results tree that cannot be loaded; the message names the file."""


@dataclass
class Frame:
    run_dir: Path
    trials: pd.DataFrame
    intervals: pd.DataFrame

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
    if not run.is_dir():
        raise FrameError(f"{run}: no such results directory")
    directories = layout.trial_dirs(run)
    if not directories:
        raise FrameError(f"{run}: no trial directories ({layout.TRIAL_SHAPE})")
    if workers is None:
        workers = min(os.cpu_count() or 1, 8) if len(directories) >= PARALLEL_FROM else 1
    loaded = []
    if workers <= 1:
        for index, directory in enumerate(directories, start=1):
            loaded.append(load_trial(directory, run))
            if progress is not None:
                progress(index, len(directories), directory.relative_to(run).as_posix())
        return assemble(run, loaded)
    # forkserver: the parent may hold pyarrow's threads, which fork would copy in an unknown state.
    # The server imports this module once and forks each worker from it ready to parse, instead of
    # each worker importing numpy, pandas and pyarrow itself (a second or more per pool).
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([__name__])
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        for index, trial in enumerate(pool.map(load_trial, directories, [run] * len(directories)), start=1):
            loaded.append(trial)
            if progress is not None:
                progress(index, len(directories), trial.meta["trial"])
    return assemble(run, loaded)


def assemble(run: Path, loaded: list[TrialData]) -> Frame:
    """Write every trial's arrays once into the long table's columns (categorical codes for names)."""
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
            measured_column[start:end] = (t - interval >= warmup - _EPSILON_S) & (t <= last + _EPSILON_S)
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
    return Frame(run_dir=run, trials=trials, intervals=intervals)


def _codes_dtype(categories: int) -> type[np.signedinteger]:
    """The integer type pandas keeps categorical codes in; codes in any other would be copied into it."""
    for dtype in (np.int8, np.int16, np.int32):
        if categories < np.iinfo(dtype).max:
            return dtype
    return np.int64


def load_trial(directory: Path, run: Path) -> TrialData:
    """One trial directory: trial.json for the cell and the clock, then each file that exists."""
    trial_json = directory / layout.TRIAL_FILE
    try:
        record = json.loads(trial_json.read_text())
    except (OSError, ValueError) as exc:
        raise FrameError(f"{trial_json}: cannot be read as JSON ({exc})") from None
    if not isinstance(record, dict):
        raise FrameError(f"{trial_json}: not a JSON object")
    trial_id = directory.relative_to(run).as_posix()
    try:
        meta = _meta(record, trial_id, trial_json)
    except FrameError:
        raise
    except (TypeError, ValueError, AttributeError) as exc:  # a field of the wrong kind: "abc" for seconds
        raise FrameError(f"{trial_json}: a field cannot be read ({exc})") from None
    data = TrialData(meta=meta)
    notes: list[str] = []
    (_tpcc_driver if meta["workload"] == "tpcc" else _driver)(directory / "driver.log", data, notes)
    if meta["report_interval_s"] is None:
        raise FrameError(f"{trial_json}: no report interval (durations.report_interval_s, --report-interval "
                         "in driver.command, or two driver intervals)")
    started = meta["started"]
    device = meta.pop("_device")
    readers: dict[str, tuple[str, Callable[[Path], Samples]]] = {
        "vmstat": ("vmstat.log", vmstat.read),
        "iostat": ("iostat.json", lambda path: iostat.read(path, device)),
        "status": ("status.log", lambda path: status.read(path, STATUS_COUNTERS + STATUS_GAUGES)),
    }
    for source, (name, reader) in readers.items():
        path = directory / name
        if not path.exists():
            notes.append(f"{source}: no {name}")
            continue
        samples = reader(path)
        notes.extend(samples.notes)
        if isinstance(samples, iostat.IostatSamples):
            meta["iostat_truncated"] = samples.truncated
            meta["iostat_device"] = samples.device
        if len(samples) == 0:
            continue
        times = _to_utc(samples, started, notes, source)
        if isinstance(samples, status.StatusSamples):
            _status(samples, times, started, meta, data, notes)
            continue
        t, keep = _align(times, samples.resolution_s, started, meta["report_interval_s"], notes, source)
        for metric, values in samples.metrics.items():
            data.add(t, f"{source}.{metric}", values[keep])
    meta.update(_server_settings(directory, notes))
    meta["notes"] = "; ".join(notes)
    return data


def _server_settings(directory: Path, notes: list[str]) -> dict[str, Any]:
    """The I/O settings the server ran with (`setting.<name>`, from variables.txt), and those it
    ran otherwise than the trial's my.cnf asked. Trials from before variables.txt have none."""
    found: dict[str, Any] = {f"setting.{name}": None for name in settings.IO_SETTINGS}
    found.update(settings_not_applied="", native_aio_off=False)
    variables, cnf = directory / "variables.txt", directory / "my.cnf"
    if not variables.exists():
        return found
    running = settings.effective(variables.read_text(errors="replace"))
    found.update({f"setting.{name}": value for name, value in running.items()})
    found["native_aio_off"] = settings.native_aio_off(running)
    try:
        wanted = settings.asked(cnf.read_text(errors="replace"), str(cnf)) if cnf.exists() else {}
    except mycnf.MyCnfError as exc:
        notes.append(f"my.cnf: {exc}")
        wanted = {}
    found["settings_not_applied"] = "; ".join(settings.not_applied(wanted, running))
    return found


def _meta(record: dict[str, Any], trial_id: str, trial_json: Path) -> dict[str, Any]:
    where = layout.parse(trial_id)
    if where is None:
        raise FrameError(f"{trial_json}: not in a trial directory of a results tree (see innomatrix.layout)")
    cell = record.get("cell") or {}

    def told(name: str) -> Any:
        """What trial.json says of the cell, else what its path says."""
        return where[name] if cell.get(name) is None else cell[name]

    times = record.get("times") or {}
    durations = record.get("durations") or {}
    driver = record.get("driver") or {}
    server = record.get("server") or {}
    device = record.get("device") or {}
    if not times.get("started"):
        raise FrameError(f"{trial_json}: no times.started: the intervals cannot be placed on a clock")
    started = _timestamp(times["started"], trial_json, "times.started")
    measure_start = _timestamp(times["measure_start"], trial_json, "times.measure_start") if times.get("measure_start") else None
    warmup = durations.get("warmup_s")
    if warmup is None:
        warmup = (measure_start - started).total_seconds() if measure_start is not None else 0.0
    interval = durations.get("report_interval_s")
    if interval is None and (match := _REPORT_INTERVAL.search(driver.get("command") or "")):
        interval = float(match[1])
    workload = str(told("workload"))
    # A fileio cell has a sub-test and a block size; a server cell a variant and a buffer pool.
    # Trees from before `subtest` kept a fileio cell's sub-test in `variant`: its path has it.
    is_fileio = workload == layout.FILEIO
    variant = NOT_APPLICABLE if is_fileio else str(told("variant"))
    subtest = str(cell.get("subtest") or where["subtest"]) if is_fileio else NOT_APPLICABLE
    bp_size = NOT_APPLICABLE if is_fileio else str(told("bp_size"))
    block_size = str(told("block_size")) if is_fileio else NOT_APPLICABLE
    fileio = record.get("fileio") or {}
    return {
        "trial": trial_id,
        "host": str(told("host")),
        "filesystem": str(told("filesystem")),
        "workload": workload,
        "variant": variant,
        "subtest": subtest,
        "bp_size": bp_size,
        "bp_bytes": _bytes(bp_size),
        "block_size": block_size,
        "block_bytes": _bytes(block_size),
        "threads": int(told("threads")),
        "repeat": int(told("repeat")),
        "status": str(record.get("status", "unknown")),
        "reasons": "; ".join(map(str, record.get("reasons") or [])),
        "key": record.get("key"),
        "started": started,
        "measure_start": measure_start,
        "ended": _timestamp(times["ended"], trial_json, "times.ended") if times.get("ended") else None,
        "warmup_s": float(warmup),
        "measured_asked_s": float(durations["measured_s"]) if durations.get("measured_s") is not None else None,
        "report_interval_s": float(interval) if interval is not None else None,
        "driver_version": driver.get("version"),
        "command": driver.get("command"),
        "server_flavor": server.get("flavor"),
        "server_version": server.get("version"),
        "_device": Path(device["path"]).name if device.get("path") else None,
        "throughput_unit": None,
        "latency_pct": None,
        "driver_last_t": float("-inf"),
        "driver_total_time_s": None,
        "driver_transactions": None,
        "driver_ignored_errors": None,
        "driver_reconnects": None,
        "driver_kind": None,
        "fatal": "",
        "driver_complete": True,
        "driver_breaks": "",
        "driver_flags": "; ".join(map(str, record.get("flags") or [])),
        "fileio_run_p95_ms": fileio.get("run_latency_p95_ms"),
        "fileio_run_p99_ms": fileio.get("run_latency_p99_ms"),
        "iostat_truncated": False,
        "iostat_device": "",
        **_adaptive(durations, float(warmup)),
    }


def _adaptive(durations: dict[str, Any], warmup: float) -> dict[str, Any]:
    """How the trial's warmup and duration were decided: fixed, or by the trial (warmup=auto:
    steady / max; duration=auto: precision / max) within the time it was given (planned_s)."""
    decided = durations.get("adaptive") or {}
    rules = decided.get("rules") or {}
    measured = durations.get("measured_s")
    if not decided:
        planned = warmup + float(measured) if measured is not None else float("nan")
        return {"warmup_decided_by": "fixed", "ended_by": "fixed", "planned_s": planned, "adaptive_round_s": None,
                "stopped_driver": False}
    return {
        "warmup_decided_by": str(decided.get("warmup_decided_by") or "?"),
        "ended_by": str(decided.get("ended_by") or "?"),
        "planned_s": float(decided.get("planned_s") or float("nan")),
        "adaptive_round_s": float(decided["round_s"]) if rules.get("warmup_auto") and decided.get("round_s") else None,
        # The trial stopped its driver once it had measured enough: sysbench prints no summary then.
        "stopped_driver": bool(decided.get("stopped_driver")),
    }


def _bytes(label: str) -> int:
    """A size label in bytes; -1 where there is none."""
    try:
        return parse_size("size", label)
    except KnobError:
        return -1


def _timestamp(text: str, path: Path, what: str) -> pd.Timestamp:
    try:
        stamp = pd.Timestamp(text)
    except ValueError:
        raise FrameError(f"{path}: {what} {text!r} is not an ISO 8601 time") from None
    return stamp.tz_localize("UTC") if stamp.tzinfo is None else stamp.tz_convert("UTC")


_OLTP_METRICS = ("threads", "tps", "qps", "reads_s", "writes_s", "other_s", "err_s", "reconn_s", "lat_ms")
_FILEIO_METRICS = ("read_mib_s", "write_mib_s", "fsyncs_s", "lat_ms")


def _unreadable(path: Path, meta: dict[str, Any], notes: list[str], exc: ValueError) -> None:
    """A damaged driver log stops the report, naming file and line, unless its trial already ended
    failed or invalid: a driver killed mid-output leaves a cut log, and the trial says why."""
    if meta["status"] == "ok":
        raise ParseError(path, str(exc)) from None
    notes.append(f"driver: {path.name} cannot be read ({exc}); the trial is {meta['status']}")


def _driver(path: Path, data: TrialData, notes: list[str]) -> None:
    meta = data.meta
    if not path.exists():
        notes.append("driver: no driver.log")
        return
    try:
        output = parse_output_columns(path.read_text(errors="replace"))
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
    if meta["report_interval_s"] is None and len(t) > 1:
        meta["report_interval_s"] = float(np.median(np.diff(t)))
    meta["driver_last_t"] = float(t.max())
    pcts = set(output.columns["lat_pct"][~np.isnan(output.columns["lat_pct"])].tolist())
    meta["latency_pct"] = pcts.pop() if len(pcts) == 1 else None
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


def _tpcc_driver(path: Path, data: TrialData, notes: list[str]) -> None:
    """tpcc_start's output: New-Orders per interval as tpmC, and their p95 and p99 latency.

    Its interval times count from MEASURING START, which follows the driver's start within its
    connection set-up (the trial runs with no ramp-up): the driver's clock, like sysbench's.
    """
    meta = data.meta
    if not path.exists():
        notes.append("driver: no driver.log")
        return
    try:
        parsed = tpcc.parse_output(path.read_text(errors="replace"), stopped=meta["stopped_driver"])
    except ValueError as exc:
        _unreadable(path, meta, notes, exc)
        return
    meta["fatal"] = "; ".join(fatal["text"] for fatal in parsed["fatal"][:3])
    meta["driver_kind"] = "tpcc"
    meta["throughput_unit"] = "tpmC"
    intervals = parsed["intervals"]
    if not intervals:
        notes.append("driver: no interval lines")
        return
    interval = float(parsed["interval_s"] or meta["report_interval_s"] or 0) or None
    meta["report_interval_s"] = meta["report_interval_s"] or interval
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


def _status(samples: status.StatusSamples, times: np.ndarray, started: pd.Timestamp, meta: dict[str, Any],
            data: TrialData, notes: list[str]) -> None:
    """Counters as rates per second between samples, gauges as levels; the first sample only anchors."""
    if len(times) < 2:
        notes.append("status: fewer than two samples, no rates")
        return
    seconds = np.diff(times) / np.timedelta64(1, "s")
    t, keep = _align(times[1:], samples.resolution_s, started, meta["report_interval_s"], notes, "status")
    for name, deltas in samples.metrics.items():
        if name in STATUS_GAUGES:
            base = samples.absolute.get(name, float("nan"))
            values = (base + np.cumsum(deltas))[1:]
        else:
            values = deltas[1:] / seconds
        data.add(t, f"status.{name}", values[keep])


"""The collectors' means over a trial's measured window, read on the host right after the trial,
for the flags trial.json carries (innomatrix_host.flags).

The report reads the same files with its own hardened readers; both place a sample as the
report's frame does: a sample stamped T (whole seconds, UTC) closes the second before it, so it
sits at t = round((T - started + 0.5) / interval) * interval on the driver's clock, and it is
measured when that t is (measured.first_measured_t) and not past the driver's last interval.
This reader trusts what this host just wrote: a file it cannot read gives no means (no flag),
never an error that would cost the trial.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import re
import statistics
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from . import cache_status, flush_points, server_log, stalls
from .layouts import BCACHE, CACHE_TYPES, LV, VG
from .measured import EPSILON_S, first_measured_t

# vmstat and iostat stamp their samples in whole seconds, the status sampler in milliseconds.
RESOLUTION_S, STATUS_RESOLUTION_S = 1.0, 0.001
# The sampler writes whole numbers (its deltas may be negative); anything else is no figure.
_WHOLE = re.compile(r"-?[0-9]{1,20}")
# What the stall rules read of status.log: gauges as levels, counters as rates a second.
STALL_GAUGES = ("Innodb_checkpoint_age", "Innodb_redo_log_current_lsn", "Innodb_redo_log_checkpoint_lsn",
                "Innodb_history_list_length")
STALL_COUNTERS = ("Innodb_buffer_pool_wait_free", "Innodb_log_waits")


def kernel_name(device: Mapping[str, Any]) -> str:
    """The name the kernel, and so iostat, knows the device under test by (vda, md0, dm-1).

    The user may name it by any path that resolves to it (/dev/disk/by-id/…, a symlink); the probe
    records the kernel's name beside it. A trial.json written before it did names only the path."""
    name = device.get("name")
    return name if isinstance(name, str) and name else Path(str(device.get("path") or "")).name


def watched_devices(device: Mapping[str, Any]) -> list[str]:
    """What iostat watches for a trial: the device under test by the kernel's name and, on a
    layout, each of its members (the layout's figures are the array's; the members' say how the
    load spread)."""
    return [kernel_name(device), *member_names(device)]


def member_names(device: Mapping[str, Any]) -> list[str]:
    """The kernel's names of a layout's members as it read them back; none for a plain device."""
    layout = device.get("layout") if isinstance(device.get("layout"), Mapping) else {}
    members = (layout.get("read_back") or {}).get("members") or []
    return [m["name"] for m in members if isinstance(m, Mapping) and m.get("name")]


def cache_source(device: Mapping[str, Any]) -> tuple[str, str] | None:
    """Where the flash cache a trial runs on says its counters (its cache.log): ("dm", the
    device-mapper name) for dm-cache and dm-writecache, ("bcache", the bcache device's kernel name);
    None when the device under test is no cache."""
    layout = device.get("layout") if isinstance(device.get("layout"), Mapping) else {}
    read_back = layout.get("read_back") if isinstance(layout.get("read_back"), Mapping) else {}
    if read_back.get("target") in CACHE_TYPES:
        return "dm", f"{VG}-{LV}"
    if read_back.get("target") == BCACHE and read_back.get("name"):
        return BCACHE, str(read_back["name"])
    return None


def cache_samples(text: str) -> tuple[list[tuple[dt.datetime, dict[str, Any]]], str | None]:
    """cache.log as the host reads it: each sample's time and counters, and why the reading ended
    early (the cache failed, or a counter fell: it was made anew), if it did. A line it cannot
    read is left out (the report reads the file again, and names any such line)."""
    samples: list[tuple[dt.datetime, dict[str, Any]]] = []
    for number, line in enumerate(text.splitlines()[1:], start=2):
        try:
            stamp_text, status = cache_status.sample_line(line)
            if status.startswith(cache_status.ERROR_PREFIX):
                continue
            counters = cache_status.parse_status(status)
            if samples and (fell := cache_status.went_back(samples[-1][1], counters)):
                raise cache_status.CacheFailed(fell)
            samples.append((dt.datetime.fromisoformat(stamp_text.replace("Z", "+00:00")), counters))
        except cache_status.CacheFailed as exc:
            return samples, f"cache.log:{number}: {exc}"
        except ValueError:
            continue
    return samples, None


def cache_summary(window: "Window", samples: list[tuple[dt.datetime, dict[str, Any]]]) -> dict[str, Any] | None:
    """What trial.json says of the cache over the measured window, placed as the report's frame
    places cache.log (innomatrix.parse.cache: each sample's growth since the one before, at its
    millisecond stamp, the first of any two on one interval kept): the counters when measuring
    began (the sample before the first measured one) and at the end, the read and write hit
    ratios and the read hit ratio of each half of the window (cache_status.window_ratios, as the
    report computes them; innomatrix_host.flags.cache_warming judges the halves), and the dirty
    data at the end. None without a measured sample."""
    seen: set[float] = set()
    measured: list[tuple[dict[str, Any], dict[str, Any]]] = []  # (the sample before, the sample)
    for (_, before), (stamp, counters) in zip(samples, samples[1:]):
        t = window.t(stamp, STATUS_RESOLUTION_S)
        if t in seen:
            continue
        seen.add(t)
        if window.first <= t <= window.last:
            measured.append((before, counters))
    if not measured:
        return None
    # A counter the cache does not keep (bcache's write hits) grows by nothing: its ratio is None.
    growth = {name: [after[name] - before[name] for before, after in measured
                     if after.get(name) is not None and before.get(name) is not None]
              for name in ("read_hits", "read_misses", "write_hits", "write_misses")}
    end = measured[-1][1]
    return {"target": end["target"], "mode": end["mode"], "at_measure_start": measured[0][0], "at_end": end,
            **cache_status.window_ratios(growth["read_hits"], growth["read_misses"], growth["write_hits"],
                                         growth["write_misses"]),
            "dirty_bytes_end": end.get("dirty_bytes")}


def text(path: Path) -> str:
    """A file this trial wrote, or nothing when it wrote none."""
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


class Window:
    """The measured part of a trial on the driver's clock."""

    def __init__(self, started: dt.datetime, warmup_s: float, interval_s: float, last_t: float):
        self.started, self.interval_s = started, interval_s
        self.first, self.last = first_measured_t(warmup_s, interval_s), last_t + EPSILON_S

    def t(self, stamp: dt.datetime, resolution_s: float = RESOLUTION_S) -> float:
        offset = (stamp - self.started).total_seconds() + resolution_s / 2
        return round(offset / self.interval_s) * self.interval_s

    def means(self, samples: list[tuple[dt.datetime, dict[str, float]]]) -> dict[str, float]:
        """Each figure's mean over the samples in the window, the first sample of any t only."""
        seen: set[float] = set()
        kept: dict[str, list[float]] = {}
        for stamp, values in samples:
            t = self.t(stamp)
            if t in seen:
                continue
            seen.add(t)
            if self.first <= t <= self.last:
                for name, value in values.items():
                    kept.setdefault(name, []).append(value)
        return {name: statistics.fmean(values) for name, values in kept.items()}


def vmstat_samples(text: str) -> list[tuple[dt.datetime, dict[str, float]]]:
    """`vmstat -n -t` in UTC: the columns from its header, the first line (since boot) left out."""
    lines = text.splitlines()
    if len(lines) < 3 or lines[1].split()[-1:] != ["UTC"]:
        return []
    columns = lines[1].split()[:-1]
    samples = []
    for line in lines[3:]:
        fields = line.split()
        if len(fields) != len(columns) + 2:
            continue
        try:
            stamp = dt.datetime.fromisoformat(f"{fields[-2]}T{fields[-1]}+00:00")
            samples.append((stamp, {name: float(value) for name, value in zip(columns, fields)}))
        except ValueError:
            continue
    return samples


def iostat_samples(text: str, device: str) -> list[tuple[dt.datetime, dict[str, float]]]:
    """`iostat -o JSON -t -x -k DEVICE`: the device's figures at each time stamp."""
    try:
        statistics_ = json.loads(text)["sysstat"]["hosts"][0]["statistics"]
        samples = []
        for entry in statistics_:
            stamp = dt.datetime.strptime(entry["timestamp"], "%Y-%m-%dT%H:%M:%S%z")
            for disk in entry.get("disk", []):
                if isinstance(disk, dict) and disk.get("disk_device") == device:
                    samples.append((stamp, {name: float(value) for name, value in disk.items()
                                            if isinstance(value, (int, float))}))
        return samples
    except (ValueError, KeyError, IndexError, TypeError, AttributeError):
        return []


def status_samples(text: str) -> list[tuple[dt.datetime, dict[str, float]]]:
    """status.log (runtime.StatusSampler) as the stall rules read it: at each sample after the first,
    the STALL_GAUGES' levels, the STALL_COUNTERS' rates a second since the sample before, and the
    checkpoint age (MariaDB's gauge, or MySQL's current LSN − checkpoint LSN). A sample the server
    did not answer has none; the next one's rates span the gap."""
    rows: dict[str, list[tuple[str, float, str]]] = {}
    for line in text.splitlines()[1:]:
        fields = line.split("\t")
        if len(fields) != 4 or fields[3] not in ("absolute", "delta"):
            continue
        values = rows.setdefault(fields[0], [])
        if (fields[1] in STALL_GAUGES or fields[1] in STALL_COUNTERS) and _WHOLE.fullmatch(fields[2]):
            values.append((fields[1], float(int(fields[2])), fields[3]))
    levels: dict[str, float] = {}
    samples, before = [], None
    for stamp_text, values in rows.items():
        try:
            stamp = dt.datetime.fromisoformat(stamp_text.replace("Z", "+00:00"))
        except ValueError:
            continue
        changes = {name: value for name, value, _ in values}
        if before is None:
            levels.update({name: value for name, value in changes.items() if name in STALL_GAUGES})
            before = stamp
            continue
        for name in STALL_GAUGES:
            if name in changes and name in levels:
                levels[name] += changes[name]
        seconds = (stamp - before).total_seconds()
        before = stamp
        if seconds <= 0:  # a clock stepped back: the levels move on, no figures at this sample
            continue
        figures = {name: level for name, level in levels.items()}
        figures.update({name: changes.get(name, 0.0) / seconds for name in STALL_COUNTERS})
        age = levels.get("Innodb_checkpoint_age")
        if age is None and "Innodb_redo_log_current_lsn" in levels and "Innodb_redo_log_checkpoint_lsn" in levels:
            age = levels["Innodb_redo_log_current_lsn"] - levels["Innodb_redo_log_checkpoint_lsn"]
        if age is not None and age >= 0:
            figures["checkpoint_age"] = age
        samples.append((stamp, figures))
    return samples


def stall_figures(directory: Path, trial: Mapping[str, Any], times: list[float]) -> stalls.Figures:
    """What the stall rules read of a trial just run, at its measured intervals' `times` (seconds
    since the driver started), each collector's sample placed as the report's frame places it (the
    first of any two on one interval kept): vmstat, iostat of the device under test, status.log,
    flush_points.txt and mysqld.err."""
    started = dt.datetime.fromisoformat(trial["times"]["started"].replace("Z", "+00:00"))
    interval = trial["durations"]["report_interval_s"]
    placed: dict[str, dict[float, float]] = {}

    def place(samples: list[tuple[dt.datetime, dict[str, float]]], source: str, resolution_s: float) -> None:
        seen: set[float] = set()
        for stamp, values in samples:
            t = round(((stamp - started).total_seconds() + resolution_s / 2) / interval) * interval
            if t not in seen:
                seen.add(t)
                for name, value in values.items():
                    placed.setdefault(f"{source}.{name}", {})[t] = value
    place(vmstat_samples(text(directory / "vmstat.log")), "vmstat", RESOLUTION_S)
    place(iostat_samples(text(directory / "iostat.json"), kernel_name(trial["device"])), "iostat", RESOLUTION_S)
    place(status_samples(text(directory / "status.log")), "status", STATUS_RESOLUTION_S)
    series = {metric: [placed.get(metric, {}).get(t, math.nan) for t in times] for metric in stalls.METRICS}
    try:
        points = flush_points.parse(text(directory / "flush_points.txt"))
    except flush_points.FlushPointsError:
        points = flush_points.FlushPoints(None, None)
    span_s = (times[-1] if times else 0.0) + interval
    warned, _ = server_log.placed(server_log.read_head(directory / "mysqld.err"), started, span_s)
    return stalls.Figures(series, points.async_bytes, points.sync_bytes, warned)


def smart_devices(device: Mapping[str, Any]) -> list[str]:
    """The disks whose own counters (SMART) a trial reads before and after its driver: on a layout
    each member the kernel read back (an md or dm device has no SMART of its own), else the device
    under test."""
    names = member_names(device)
    return [f"/dev/{name}" for name in names] if names else [str(device.get("path") or "")]

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
import statistics
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .measured import EPSILON_S, first_measured_t

# vmstat and iostat stamp their samples in whole seconds.
RESOLUTION_S = 1.0


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
    layout = device.get("layout") if isinstance(device.get("layout"), Mapping) else {}
    members = (layout.get("read_back") or {}).get("members") or []
    return [kernel_name(device), *(m["name"] for m in members if isinstance(m, Mapping) and m.get("name"))]


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

    def t(self, stamp: dt.datetime) -> float:
        offset = (stamp - self.started).total_seconds() + RESOLUTION_S / 2
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

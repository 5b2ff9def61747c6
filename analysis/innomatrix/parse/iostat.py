"""Parse sysstat's `iostat -o JSON -t -x -k DEVICE INTERVAL` document into timed samples.

The first statistics entry is iostat's average since boot, not a sample of the trial: it is
dropped. CPU figures become `cpu_<name>` (cpu_user, cpu_iowait, ...), the device's figures keep
sysstat's names (`r/s`, `w/s`, `rkB/s`, `wkB/s`, `r_await`, `aqu-sz`, `util`, ...), which change
between sysstat versions; `-m` megabyte columns are turned into the kB ones.

A document cut short (iostat killed before it closed its brackets) is read up to its last
complete statistics entry and says so in `truncated` and in a note naming the line where it
breaks off; damage anywhere but at the end is an error naming the line.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from innomatrix.parse import ParseError, Samples, line_of

_STATISTICS = re.compile(r'"statistics"\s*:\s*\[')
_ISO = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:([+-])(\d\d):?(\d\d)|Z)?$")
_MB_TO_KB = {"rMB/s": "rkB/s", "wMB/s": "wkB/s", "dMB/s": "dkB/s"}


@dataclass
class IostatSamples(Samples):
    truncated: bool = False
    device: str = ""


def read(path: str | Path, device: str | None = None) -> IostatSamples:
    path = Path(path)
    return parse(path.read_text(errors="replace"), path, device)


def parse(text: str, path: str | Path = "iostat.json", device: str | None = None) -> IostatSamples:
    """`device` picks the disk when the document holds several (default: the first one)."""
    truncated_at: int | None = None
    try:
        document = json.loads(text)
        entries = _entries(document, path)
    except json.JSONDecodeError as exc:
        entries, truncated_at = _salvage(text, exc, path)
    samples = _samples(entries, text, path, device)
    if truncated_at is not None:
        samples.truncated = True
        samples.notes.append(f"iostat: {path} is cut short at line {truncated_at}; "
                             f"read its {len(samples)} complete samples")
    return samples


def _entries(document: Any, path: str | Path) -> list[dict[str, Any]]:
    try:
        hosts = document["sysstat"]["hosts"]
        statistics = hosts[0]["statistics"]
    except (KeyError, IndexError, TypeError):
        raise ParseError(path, "not an `iostat -o JSON` document (no sysstat.hosts[0].statistics)") from None
    if not isinstance(statistics, list):
        raise ParseError(path, "sysstat.hosts[0].statistics is not a list")
    return statistics


def _salvage(text: str, exc: json.JSONDecodeError, path: str | Path) -> tuple[list[dict[str, Any]], int]:
    """The complete entries of a document that stops early; an error if it is damaged earlier."""
    last_line = len(text.rstrip().splitlines())
    if exc.lineno < last_line:
        raise ParseError(path, f"corrupt JSON: {exc.msg}", exc.lineno) from None
    start = _STATISTICS.search(text)
    if start is None:
        raise ParseError(path, f"cut short before any statistics: {exc.msg}", exc.lineno) from None
    decoder = json.JSONDecoder()
    entries: list[dict[str, Any]] = []
    position = start.end()
    while True:
        while position < len(text) and text[position] in " \t\r\n,":
            position += 1
        if position >= len(text) or text[position] == "]":
            break
        try:
            entry, position = decoder.raw_decode(text, position)
        except json.JSONDecodeError:
            break  # the cut-off entry
        entries.append(entry)
    return entries, exc.lineno


def _samples(entries: list[dict[str, Any]], text: str, path: str | Path, device: str | None) -> IostatSamples:
    entries = entries[1:]  # the first entry is the average since boot
    try:
        stamps = [entry["timestamp"] for entry in entries]
        cpus = [entry.get("avg-cpu") or {} for entry in entries]
        disk_lists = [entry["disk"] for entry in entries]
    except (KeyError, TypeError, AttributeError):
        bad = next(e for e in entries if not isinstance(e, dict) or "timestamp" not in e or "disk" not in e)
        raise ParseError(path, "a statistics entry has no timestamp or disk list", _line_near(text, bad)) from None
    chosen = device or (disk_lists[0][0].get("disk_device", "") if disk_lists and disk_lists[0] else "")
    disks = []
    for entry, disk_list in zip(entries, disk_lists):
        disk = _pick(disk_list, chosen)
        if disk is None:
            raise ParseError(path, f"no disk {chosen!r} in the entry of {entry['timestamp']}", _line_near(text, entry))
        disks.append(disk)
    columns: dict[str, list[Any]] = {}
    for prefix, rows in (("cpu_", cpus), ("", disks)):
        if not rows:
            continue
        names = list(rows[0])
        first = rows[0].keys()
        for row, entry in zip(rows, entries):
            if row.keys() != first:
                raise ParseError(path, f"the entry of {entry['timestamp']} has other fields than the first",
                                 _line_near(text, entry))
        for name in names:
            if name != "disk_device":
                columns[prefix + name] = [row[name] for row in rows]
    metrics: dict[str, np.ndarray] = {}
    for name, values in columns.items():
        try:
            array = np.asarray(values, dtype=np.float64)
        except (TypeError, ValueError):
            raise ParseError(path, f"{name}: not a number in every entry") from None
        if name in _MB_TO_KB:
            name, array = _MB_TO_KB[name], array * 1024
        metrics[name] = array
    return IostatSamples(times=_times(stamps, text, path), resolution_s=1.0, metrics=metrics,
                         notes=["iostat: first entry (average since boot) dropped"], device=chosen)


def _pick(disks: list[dict[str, Any]], name: str) -> dict[str, Any] | None:
    for disk in disks:
        if disk.get("disk_device") == name:
            return disk
    return None


def _times(stamps: list[str], text: str, path: str | Path) -> np.ndarray:
    """ISO 8601 stamps (S_TIME_FORMAT=ISO) with any fixed offset, as UTC datetime64[ms]."""
    offsets: dict[str, np.timedelta64] = {}
    local = []
    shift = []
    for stamp in stamps:
        suffix = stamp[19:] if isinstance(stamp, str) else None
        if suffix not in offsets:
            match = _ISO.match(stamp) if isinstance(stamp, str) else None
            if match is None:
                raise ParseError(path, f"time stamp {stamp!r} is not ISO 8601 (iostat needs S_TIME_FORMAT=ISO)",
                                 line_of(text, max(0, text.find(str(stamp)))))
            sign = -1 if match[2] == "-" else 1
            minutes = sign * (int(match[3]) * 60 + int(match[4])) if match[2] else 0
            offsets[suffix] = np.timedelta64(minutes, "m")
        local.append(stamp[:19])
        shift.append(offsets[suffix])
    try:
        times = np.array(local, dtype="datetime64[s]")
    except ValueError:
        bad = next(s for s in local if not _ISO.match(s))
        raise ParseError(path, f"time stamp {bad!r} is not ISO 8601", line_of(text, max(0, text.find(bad)))) from None
    return (times - np.array(shift, dtype="timedelta64[m]")).astype("datetime64[ms]")


def _line_near(text: str, entry: Any) -> int | None:
    stamp = entry.get("timestamp") if isinstance(entry, dict) else None
    position = text.find(f'"{stamp}"') if stamp else -1
    return line_of(text, position) if position >= 0 else None

"""Parse sysstat's `iostat -o JSON -t -x -k DEVICE INTERVAL` document into timed samples.

The first statistics entry is iostat's average since boot, not a sample of the trial: it is
dropped. CPU figures become `cpu_<name>` (cpu_user, cpu_iowait, ...), the device's figures keep
sysstat's names (`r/s`, `w/s`, `rkB/s`, `wkB/s`, `r_await`, `aqu-sz`, `util`, ...), which change
between sysstat versions; `-m` megabyte columns are turned into the kB ones.

A document cut short (iostat killed before it closed its brackets) is read up to its last
complete statistics entry and says so in `truncated` and in a note naming the line where it
breaks off; damage anywhere but at the end is an error naming the line.

`read` first tries Arrow's JSON parser, which reads the plain document iostat writes (whole, every
entry with the same fields) in a third of the time `json` takes, and leaves anything else to
`parse`, the exact reader, so both give the same samples and the same errors.

Every value is checked against its bound (`innomatrix.bounds`): one iostat cannot print (a
negative rate, a percentage above 100, NaN, a number too large for a float) is an error naming the
line of its entry. Time stamps that go back (the clock was set back) are kept and marked. iostat
does print a util above 100 % (busy time and interval come from two clocks): just over is read as
100 %, further over leaves the trial without util, marked.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyarrow import json as arrow_json

from innomatrix import bounds
from innomatrix.parse import ParseError, Samples, as_datetimes, line_of
from innomatrix.parse.vmstat import clock_marks

_STATISTICS = re.compile(r'"statistics"\s*:\s*\[')
_ISO = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:([+-])(\d\d):?(\d\d)|Z)?$")
_MB_TO_KB = {"rMB/s": "rkB/s", "wMB/s": "wkB/s", "dMB/s": "dkB/s"}
# Time stamps stay text, for `_times` to check and place; Arrow infers the rest.
_STAMPS_AS_TEXT = pa.schema([("sysstat", pa.struct([("hosts", pa.list_(pa.struct([
    ("statistics", pa.list_(pa.struct([("timestamp", pa.string())]))),
])))]))])
_LARGEST_ARROW_BLOCK = 2**31 - 1


@dataclass
class IostatSamples(Samples):
    truncated: bool = False
    device: str = ""


def read(path: str | Path, device: str | None = None, data: bytes | None = None) -> IostatSamples:
    """`data`: the file's bytes, when the caller read them (a results tree is read by innomatrix.tree)."""
    path = Path(path)
    data = path.read_bytes() if data is None else data
    try:
        text = data.decode()
    except UnicodeDecodeError:
        return parse(data.decode(errors="replace"), path, device)
    fast = _fast_samples(data, text, path, device)
    return fast if fast is not None else parse(text, path, device)


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
    boot = entries[0].get("timestamp") if entries and isinstance(entries[0], dict) else None
    entries = entries[1:]  # the first entry is the average since boot
    try:
        stamps = [entry["timestamp"] for entry in entries]
        cpus = [entry.get("avg-cpu") or {} for entry in entries]
        disk_lists = [entry["disk"] for entry in entries]
    except (KeyError, TypeError, AttributeError):
        bad = next(e for e in entries if not isinstance(e, dict) or "timestamp" not in e or "disk" not in e)
        raise ParseError(path, "a statistics entry has no timestamp or disk list", _line_near(text, bad)) from None
    for entry, disk_list in zip(entries, disk_lists):
        if not isinstance(disk_list, list) or not all(isinstance(disk, dict) for disk in disk_list):
            raise ParseError(path, f"the disk list of the entry of {entry['timestamp']} holds other than disks",
                             _line_near(text, entry))
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
    return _checked(IostatSamples(times=_times(stamps, text, path), resolution_s=1.0, metrics=metrics,
                                  notes=["iostat: first entry (average since boot) dropped"], device=chosen),
                    stamps, boot, text, path)


def _fast_samples(data: bytes, text: str, path: str | Path, device: str | None) -> IostatSamples | None:
    """What `parse` gives for a whole, plain document, read by Arrow; None for any other, for `parse`.

    Plain: one host's statistics, each entry after the first with a time stamp, the same CPU fields
    and the picked disk with the same fields, every value a number. Arrow cannot say in what order
    an entry's fields came, which names the metrics, so the first sample is also read with `json`:
    its fields give the order, and its values must match Arrow's.
    """
    if len(data) >= _LARGEST_ARROW_BLOCK:
        return None
    try:
        table = arrow_json.read_json(
            pa.py_buffer(data), read_options=arrow_json.ReadOptions(use_threads=False, block_size=len(data) + 1),
            parse_options=arrow_json.ParseOptions(explicit_schema=_STAMPS_AS_TEXT, newlines_in_values=True,
                                                  unexpected_field_behavior="infer"))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    if table.num_rows != 1:
        return None
    hosts = pc.list_flatten(pc.struct_field(table.column("sysstat").chunk(0), "hosts"))
    if len(hosts) == 0 or not hosts.is_valid()[0].as_py():
        return None
    every_entry = pc.list_flatten(pc.struct_field(hosts, "statistics")[:1])
    entries = every_entry[1:]
    first = _first_sample(text)
    if len(entries) == 0 or entries.null_count or first is None or entries[0].as_py() != first:
        return None
    first_cpu, first_disks = first.get("avg-cpu"), first.get("disk")
    if not (isinstance(first_cpu, dict) and first_cpu and isinstance(first_disks, list) and first_disks
            and all(isinstance(disk, dict) for disk in first_disks)):
        return None
    chosen = device or first_disks[0].get("disk_device", "")
    first_disk = _pick(first_disks, chosen)
    disks = _chosen_disks(entries, chosen) if first_disk is not None else None
    stamps = pc.struct_field(entries, "timestamp")
    if disks is None or stamps.null_count:
        return None
    metrics: dict[str, np.ndarray] = {}
    for prefix, rows, names in (("cpu_", pc.struct_field(entries, "avg-cpu"), list(first_cpu)),
                                ("", disks, [name for name in first_disk if name != "disk_device"])):
        columns = _number_columns(rows, names, also_present={"disk_device"} if prefix == "" else set())
        if columns is None:
            return None
        for name, array in columns.items():
            if name in _MB_TO_KB:
                name, array = _MB_TO_KB[name], array * 1024
            metrics[prefix + name] = array
    texts = stamps.to_pylist()
    return _checked(IostatSamples(times=_times(texts, text, path), resolution_s=1.0, metrics=metrics,
                                  notes=["iostat: first entry (average since boot) dropped"], device=chosen),
                    texts, every_entry[0]["timestamp"].as_py(), text, path)


def _checked(samples: IostatSamples, stamps: list[str], boot: Any, text: str, path: str | Path) -> IostatSamples:
    """The samples once every value is within its bound, with a mark if their times go back: the
    since-boot entry's time counts too (an entry put before it is a document put out of order)."""
    for name, values in samples.metrics.items():
        bound = bounds.iostat(name)
        bad = bound.first_outside(values)
        if bad is not None:
            raise ParseError(path, f"{name} {values[bad]:g} is not a value iostat prints ({bound.describe()})",
                             _line_near(text, {"timestamp": stamps[bad]}))
    _mark_util_over_the_interval(samples, stamps, text, path)
    stamps = [boot, *stamps] if isinstance(boot, str) else stamps
    times = np.concatenate([_times([boot], text, path), samples.times]) if isinstance(boot, str) else samples.times
    if (np.diff(times) < np.timedelta64(0, "ms")).any():  # rare: only then find the entries' lines
        lines = np.array([_line_near(text, {"timestamp": stamp}) or 0 for stamp in stamps])
        samples.marks = clock_marks(times, lines, path)
    return samples


def _mark_util_over_the_interval(samples: IostatSamples, stamps: list[str], text: str, path: str | Path) -> None:
    """iostat divides the kernel's busy time by its own interval and does not cap the share. Just over
    100 % is the two clocks' resolution: read as 100 %. Beyond it the kernel's busy count is no share
    of the interval (dm volumes, a counter that went back): the trial has no util, and is marked."""
    util = samples.metrics.get("util")
    if util is None:
        return
    full = bounds.UTIL_SHARE.high
    over = util > full + bounds.UTIL_CLOCKS_RESOLUTION
    if over.any():
        first = int(np.argmax(over))
        line = _line_near(text, {"timestamp": stamps[first]})
        samples.marks.append(f"{Path(path).name}{f':{line}' if line else ''}: util {util[first]:g} % "
                             f"({int(over.sum())} sample(s) above {full + bounds.UTIL_CLOCKS_RESOLUTION:g} %): "
                             "the kernel's busy time is no share of the interval here, no util for this trial")
        samples.metrics["util"] = np.full_like(util, np.nan)
        return
    just_over = util > full
    if just_over.any():
        samples.notes.append(f"iostat: util up to {util.max():g} % in {int(just_over.sum())} sample(s) read as "
                             f"{full:g} % (the resolution of the two clocks it divides)")
        samples.metrics["util"] = np.minimum(util, full)


def _first_sample(text: str) -> dict[str, Any] | None:
    """The statistics entry after the since-boot one, decoded by `json`; None if it is not there."""
    start = _STATISTICS.search(text)
    if start is None:
        return None
    decoder = json.JSONDecoder()
    position = start.end()
    entry: Any = None
    for _ in range(2):
        while position < len(text) and text[position] in " \t\r\n,":
            position += 1
        try:
            entry, position = decoder.raw_decode(text, position)
        except json.JSONDecodeError:
            return None
    return entry if isinstance(entry, dict) else None


def _chosen_disks(entries: pa.StructArray, chosen: str) -> pa.StructArray | None:
    """Each entry's first disk named `chosen` (what `_pick` takes); None if an entry has none."""
    lists = pc.struct_field(entries, "disk")
    if lists.null_count:
        return None
    flat = pc.list_flatten(lists)
    if not pa.types.is_struct(flat.type) or flat.type.get_field_index("disk_device") < 0:
        return None
    named = pc.equal(pc.struct_field(flat, "disk_device"), chosen).fill_null(False).to_numpy(zero_copy_only=False)
    entry_of = pc.list_parent_indices(lists).to_numpy()
    matches = np.flatnonzero(named)
    entries_with_it, first_match = np.unique(entry_of[matches], return_index=True)
    if len(entries_with_it) != len(entries):
        return None
    return flat.take(matches[first_match])


def _number_columns(rows: pa.StructArray, names: list[str], also_present: set[str]) -> dict[str, np.ndarray] | None:
    """`names` as float arrays, if every row has exactly these fields (plus `also_present`), all numbers."""
    if (not pa.types.is_struct(rows.type) or rows.null_count
            or {field.name for field in rows.type} != set(names) | also_present):
        return None
    columns = {}
    for name in names:
        column = pc.struct_field(rows, name)
        if column.null_count or not (pa.types.is_floating(column.type) or pa.types.is_integer(column.type)):
            return None
        columns[name] = column.to_numpy().astype(np.float64)
    return columns


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
        times = as_datetimes(local, "s")
    except ValueError:
        bad = next(s for s in local if not _readable_time(s))
        raise ParseError(path, f"time stamp {bad!r} is not a date and time", line_of(text, max(0, text.find(bad)))) from None
    return (times - np.array(shift, dtype="timedelta64[m]")).astype("datetime64[ms]")


def _readable_time(stamp: str) -> bool:
    try:
        as_datetimes([stamp], "s")
    except ValueError:
        return False
    return True


def _line_near(text: str, entry: Any) -> int | None:
    stamp = entry.get("timestamp") if isinstance(entry, dict) else None
    position = text.find(f'"{stamp}"') if stamp else -1
    return line_of(text, position) if position >= 0 else None

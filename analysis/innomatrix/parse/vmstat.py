"""Parse `vmstat -n -t INTERVAL` output (procps) into timed samples.

The first data line is vmstat's average since boot, not a sample of the trial: it is dropped.
Columns are taken from the header, so procps versions that add one (`gu` in 4.x) or `-w` wide
output read the same. The time stamp is the last two fields (date and time, whole seconds) in the
zone the header names; anything but UTC is passed on in `Samples.zone` for the caller to place.

`read` splits and converts all lines at once with Arrow when the output is plain (ASCII, one
header throughout, every data line complete, plain numbers) and leaves anything else to `parse`,
the exact reader, so both give the same samples and the same errors.

Every value is checked against its bound (`innomatrix.bounds`): one vmstat cannot print (a negative
count, a percentage above 100, inf) is an error naming the line. A time stamp earlier than the
one before (the clock was set back) is kept and marked (`Samples.marks`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from innomatrix import bounds
from innomatrix.parse import ParseError, Samples, as_datetimes

UTC_NAMES = {"UTC", "GMT", "UCT", "Z", "Etc/UTC"}
# Beside "\n", " " and "\t", what str.splitlines breaks lines at or str.split splits at in ASCII text.
_OTHER_LINE_BREAKS_AND_SPACES = "\r\x0b\x0c\x1c\x1d\x1e\x1f"
_HEADER_LINE = r"^[ \t]*(?:procs|r)(?:[ \t]|$)"


def read(path: str | Path, data: bytes | None = None) -> Samples:
    """`data`: the file's bytes, when the caller read them (a results tree is read by innomatrix.tree)."""
    path = Path(path)
    text = (path.read_bytes() if data is None else data).decode(errors="replace")
    fast = _fast_samples(text, path)
    return fast if fast is not None else parse(text, path)


def parse(text: str, path: str | Path = "vmstat.log") -> Samples:
    lines = text.splitlines()
    columns: list[str] | None = None
    zone = ""
    stamped = False
    rows: list[list[str]] = []
    numbers: list[int] = []
    for number, line in enumerate(lines, start=1):
        fields = line.split()
        if not fields:
            continue
        if fields[0] == "procs":
            if "timestamp" not in line:
                raise ParseError(path, "no time stamp column: run vmstat with -t", number)
            stamped = True
            continue
        if fields[0] == "r":
            header, zone = fields[:-1], fields[-1]
            if columns is not None and header != columns:
                raise ParseError(path, f"the header changed from {' '.join(columns)}", number)
            columns = header
            continue
        if columns is None:
            raise ParseError(path, "data before the column header (is this `vmstat -n -t` output?)", number)
        if len(fields) != len(columns) + 2:
            raise ParseError(path, f"expected {len(columns)} numbers and a date and time, "
                                   f"got {len(fields)} fields (truncated or not `vmstat -t`): {line!r}", number)
        rows.append(fields)
        numbers.append(number)
    if columns is None:
        raise ParseError(path, "no vmstat header (empty or not `vmstat -n -t` output)", 1 if lines else None)
    if not stamped:
        raise ParseError(path, "no `procs ... timestamp` banner: run vmstat with -n -t", 1)
    width = len(columns)
    try:
        values = np.array([row[:width] for row in rows], dtype=np.float64).reshape(len(rows), width)
    except ValueError:
        values = _locate_bad_number(rows, numbers, width, path)
    stamps = [f"{row[width]}T{row[width + 1]}" for row in rows]
    try:
        times = as_datetimes(stamps, "s").astype("datetime64[ms]")
    except ValueError:
        times = _locate_bad_time(stamps, numbers, path)
    return _samples(columns, zone, values, times, np.array(numbers), path)


def _fast_samples(text: str, path: str | Path = "vmstat.log") -> Samples | None:
    """What `parse` gives for plain output, read by Arrow; None for any other, for `parse`."""
    if not text.isascii() or any(character in text for character in _OTHER_LINE_BREAKS_AND_SPACES):
        return None
    lines = pa.array(text.split("\n"), pa.string())
    trimmed = pc.ascii_trim_whitespace(lines)  # Arrow splits "" off the ends, str.split() does not
    blank = pc.equal(trimmed, "").to_numpy(zero_copy_only=False)
    fields = pc.ascii_split_whitespace(trimmed)
    counts = pc.list_value_length(fields).to_numpy()
    is_header = pc.match_substring_regex(lines, _HEADER_LINE).to_numpy(zero_copy_only=False)
    columns: list[str] | None = None
    zone = ""
    stamped = False
    first_header = 0
    for number in np.flatnonzero(is_header):
        line = lines[number].as_py()
        header = line.split()
        if header[0] == "procs":
            if "timestamp" not in line:
                return None
            stamped = True
        elif columns is None:
            columns, zone, first_header = header[:-1], header[-1], number
        elif header[:-1] == columns:
            zone = header[-1]
        else:
            return None
    data = np.flatnonzero(~blank & ~is_header)
    if columns is None or not stamped or len(data) < 2 or data[0] < first_header:
        return None
    width = len(columns)
    if (counts[data] != width + 2).any():
        return None
    flat = pc.list_flatten(fields.take(data))
    starts = np.arange(len(data))[:, None] * (width + 2)
    try:
        # Arrow reads fewer number forms than numpy (not 1_000), each to the same float.
        values = flat.take((starts + np.arange(width)).ravel()).cast(pa.float64())
    except pa.ArrowInvalid:
        return None
    stamps = pc.binary_join_element_wise(flat.take(starts[:, 0] + width), flat.take(starts[:, 0] + width + 1), "T")
    try:
        times = as_datetimes(stamps.to_numpy(zero_copy_only=False), "s").astype("datetime64[ms]")
    except ValueError:
        return None
    values = values.to_numpy(zero_copy_only=False, writable=True).reshape(len(data), width)
    return _samples(columns, zone, values, times, data + 1, path)


def _samples(columns: list[str], zone: str, values: np.ndarray, times: np.ndarray, lines: np.ndarray,
             path: str | Path) -> Samples:
    """The samples of every data row but the first (vmstat's average since boot), once every
    value is within its bound; `lines`: each row's line number. The first row's time still
    counts for the clock: a since-boot line that is not first is a file put out of order."""
    marks = clock_marks(times, lines, path)
    values, times, lines = values[1:], times[1:], lines[1:]
    for i, name in enumerate(columns):
        bound = bounds.vmstat(name)
        bad = bound.first_outside(values[:, i])
        if bad is not None:
            raise ParseError(path, f"{name} {values[bad, i]:g} is not a value vmstat prints "
                                   f"({bound.describe()})", int(lines[bad]))
    notes = ["vmstat: first line (average since boot) dropped"]
    utc = zone in UTC_NAMES
    if not utc:
        notes.append(f"vmstat: time stamps are in zone {zone}, not UTC")
    return Samples(times=times, resolution_s=1.0, metrics={name: values[:, i] for i, name in enumerate(columns)},
                   notes=notes, zone="UTC" if utc else zone, marks=marks)


def clock_marks(times: np.ndarray, lines: np.ndarray, path: str | Path) -> list[str]:
    """A mark for a collector whose time stamps go back (the clock was set back mid-trial): its
    samples are still placed by their stamps, so some land on the wrong interval."""
    back = np.flatnonzero(np.diff(times) < np.timedelta64(0, "ms"))
    if not back.size:
        return []
    first = int(back[0]) + 1
    return [f"{Path(path).name}:{int(lines[first])}: time goes back from {times[first - 1]} to {times[first]} "
            f"({back.size} time{'s' if back.size > 1 else ''}): the clock was set back, samples may sit on "
            "the wrong interval"]


def _locate_bad_number(rows: list[list[str]], numbers: list[int], width: int, path: str | Path) -> np.ndarray:
    for row, number in zip(rows, numbers):
        for value in row[:width]:
            try:
                float(value)
            except ValueError:
                raise ParseError(path, f"not a number: {value!r}", number) from None
    raise ParseError(path, "unreadable numbers")  # pragma: no cover - the loop finds it


def _locate_bad_time(stamps: list[str], numbers: list[int], path: str | Path) -> np.ndarray:
    for stamp, number in zip(stamps, numbers):
        try:
            as_datetimes([stamp], "s")
        except ValueError:
            raise ParseError(path, f"not a date and time: {stamp.replace('T', ' ')!r}", number) from None
    raise ParseError(path, "unreadable time stamps")  # pragma: no cover

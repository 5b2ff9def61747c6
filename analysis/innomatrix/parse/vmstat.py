"""Parse `vmstat -n -t INTERVAL` output (procps) into timed samples.

The first data line is vmstat's average since boot, not a sample of the trial: it is dropped.
Columns are taken from the header, so procps versions that add one (`gu` in 4.x) or `-w` wide
output read the same. The time stamp is the last two fields (date and time, whole seconds) in the
zone the header names; anything but UTC is passed on in `Samples.zone` for the caller to place.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from innomatrix.parse import ParseError, Samples

UTC_NAMES = {"UTC", "GMT", "UCT", "Z", "Etc/UTC"}


def read(path: str | Path) -> Samples:
    path = Path(path)
    return parse(path.read_text(errors="replace"), path)


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
    rows, numbers = rows[1:], numbers[1:]  # the first line is the average since boot
    width = len(columns)
    try:
        values = np.array([row[:width] for row in rows], dtype=np.float64).reshape(len(rows), width)
    except ValueError:
        values = _locate_bad_number(rows, numbers, width, path)
    stamps = [f"{row[width]}T{row[width + 1]}" for row in rows]
    try:
        times = np.array(stamps, dtype="datetime64[s]").astype("datetime64[ms]")
    except ValueError:
        times = _locate_bad_time(stamps, numbers, path)
    notes = ["vmstat: first line (average since boot) dropped"]
    utc = zone in UTC_NAMES
    if not utc:
        notes.append(f"vmstat: time stamps are in zone {zone}, not UTC")
    return Samples(times=times, resolution_s=1.0, metrics={name: values[:, i] for i, name in enumerate(columns)},
                   notes=notes, zone="UTC" if utc else zone)


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
            np.datetime64(stamp, "s")
        except ValueError:
            raise ParseError(path, f"not a date and time: {stamp.replace('T', ' ')!r}", number) from None
    raise ParseError(path, "unreadable time stamps")  # pragma: no cover

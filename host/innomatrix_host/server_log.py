"""Read a trial's mysqld.err for what the server warned of while it ran: each line it stamped at
[Warning] or [ERROR], with its time.

MySQL stamps ISO 8601 with its zone (`2026-11-27T21:25:05.432058Z`, or an offset under
log_timestamps=SYSTEM); MariaDB stamps its host's local time in whole seconds (`2026-11-28  0:41:53`)
and names no zone. The error log is the server's free text, not a collector's figures: a line that
does not read as a stamped line (a continuation, a damaged one, a date no calendar has) is passed
over, never an error; what is kept is shown as the server wrote it, cut to MESSAGE_CHARS.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from pathlib import Path

SEVERE = ("warning", "error")
MESSAGE_CHARS = 120
# Enough for any trial's own warnings; an error log that warns more is read this far, and says so.
MOST_LINES, MOST_BYTES = 10_000, 4 * 2 ** 20
_MYSQL = re.compile(r"(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?)(Z|[+-]\d{2}:\d{2}) +\d+ +\[(\w+)\] +(.*)")
_MARIADB = re.compile(r"(\d{4}-\d{2}-\d{2}) +(\d{1,2}:\d{2}:\d{2}) +\d+ +\[(\w+)\] +(.*)")


@dataclass(frozen=True)
class Warned:
    """One [Warning] or [ERROR] line: when (aware UTC when the server named its zone, else naive
    local time) and what it said."""

    at: dt.datetime
    text: str


@dataclass(frozen=True)
class ServerLog:
    first: dt.datetime | None  # the first stamped line of any severity: the server's start
    warned: tuple[Warned, ...]
    cut: bool                  # more than MOST_LINES warnings or MOST_BYTES: the rest were not read


def _stamp(line: str) -> tuple[dt.datetime, str, str] | None:
    try:
        if found := _MYSQL.fullmatch(line):
            stamp, zone, severity, message = found.groups()
            when = dt.datetime.fromisoformat(stamp[:26] + ("+00:00" if zone == "Z" else zone))
            return when.astimezone(dt.timezone.utc), severity, message
        if found := _MARIADB.fullmatch(line):
            day, clock, severity, message = found.groups()
            return dt.datetime.fromisoformat(f"{day}T{int(clock.split(':')[0]):02d}:{clock.split(':', 1)[1]}"), severity, message
    except (ValueError, OverflowError):  # month 13, hour 25, year 9999 past UTC: not a line a server stamped
        return None
    return None


def read(text: str) -> ServerLog:
    first, warned = None, []
    for line in text.splitlines():
        stamped = _stamp(line.rstrip("\r"))
        if stamped is None:
            continue
        when, severity, message = stamped
        first = first or when
        if severity.lower() in SEVERE:
            if len(warned) == MOST_LINES:
                return ServerLog(first, tuple(warned), True)
            shown = "".join(ch if ch.isprintable() else "?" for ch in f"[{severity}] {message}")
            warned.append(Warned(when, shown[:MESSAGE_CHARS]))
    return ServerLog(first, tuple(warned), False)


def from_head(data: bytes, more: bool) -> ServerLog:
    """What read() finds in the first bytes of a log; `more`: the log holds more (the last line
    of these bytes, likely cut, is dropped, and the result says it was cut)."""
    text = data.decode(errors="replace")
    if more:
        text = text[:text.rfind("\n") + 1]
    found = read(text)
    return ServerLog(found.first, found.warned, found.cut or more)


def read_head(path: Path) -> ServerLog:
    """The first MOST_BYTES of a log this host just wrote (none: nothing warned)."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(MOST_BYTES + 1)
    except OSError:
        return ServerLog(None, (), False)
    return from_head(data[:MOST_BYTES], len(data) > MOST_BYTES)


# Local stamps carry no zone: they are placed by the offset, in whole quarter-hours (every zone's),
# that puts the log's first line (the server's start, less than the start timeout before the
# driver's) nearest the driver's start — as the report places local collector stamps. No zone is
# further from UTC than MOST_OFFSET: a larger one is no zone, and nothing is placed.
QUARTER_HOUR_S = 900
MOST_OFFSET = dt.timedelta(hours=14)


def placed(found: ServerLog, started: dt.datetime,
           span_s: float) -> tuple[list[tuple[float, str]], dt.timedelta | None]:
    """The warnings at their seconds since `started` (the driver's start, aware UTC), those within
    (0, span_s] only, and the offset read off local stamps (zero for stamps with a zone; None, and
    no warning placed, when the first line lies further from the start than any zone)."""
    start = started.astimezone(dt.timezone.utc).replace(tzinfo=None)
    offset = dt.timedelta(0)
    if found.first is not None and found.first.tzinfo is None:
        gap_s = (found.first - start).total_seconds()
        offset = dt.timedelta(seconds=round(gap_s / QUARTER_HOUR_S) * QUARTER_HOUR_S)
        if abs(offset) > MOST_OFFSET:
            return [], None
    at_t = []
    for line in found.warned:
        try:
            moment = line.at - offset if line.at.tzinfo is None else line.at.astimezone(dt.timezone.utc).replace(tzinfo=None)
        except OverflowError:  # a stamp at the calendar's edge: no moment of this trial
            continue
        t = (moment - start).total_seconds()
        if 0 < t <= span_s:
            at_t.append((t, line.text))
    return at_t, offset

"""Parse a trial's cache.log (the flash cache's `dmsetup status`, or a bcache's sysfs in one line,
each second, written on the host by innomatrix_host.runtime.CacheSampler) into timed samples.

Each status line is read by innomatrix_host.cache_status.parse_status, the one definition the host
reads it with too. At each sample after the first, the counters' growth since the sample before
(read_hits, read_misses, write_hits, write_misses, promotions, demotions, in that span), the
span's read hit ratio, and the levels: the share of the cache in use (used_pct) and its dirty data
(dirty_mib: dm-cache and bcache). A `#error` line (the read failed that second) is noted and skipped; the
next sample's growth spans the gap.

A cache that failed (dm-cache `Fail`, a writecache error) or was made anew (a counter fell) is
true of the trial: the trial is marked with the line, and has no cache figures (its growth would
read as a clean, wrong figure). Anything else is an error naming the line: a status line cut or
damaged, a number no counter holds, a time stamp that is not UTC ISO 8601 or does not move forward
(a duplicated or reordered sample).
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from innomatrix.parse import ParseError, Samples, as_datetimes
from innomatrix_host import cache_status
from innomatrix_host.cache_status import CacheFailed, CacheStatusError
from innomatrix_host.collected import STATUS_RESOLUTION_S

# How the sampler stamps a sample (runtime.iso): UTC, milliseconds.
_STAMP = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]{1,6})?Z")
METRICS = (*cache_status.GROWING, "read_hit_ratio", "used_pct", "dirty_mib")


def read(path: str | Path, data: bytes | None = None) -> Samples:
    """`data`: the file's bytes, when the caller read them (a results tree is read by innomatrix.tree)."""
    path = Path(path)
    return parse((path.read_bytes() if data is None else data).decode(errors="replace"), path)


def parse(text: str, path: str | Path = "cache.log") -> Samples:
    lines = text.splitlines()
    if not lines or lines[0] != cache_status.HEADER:
        raise ParseError(path, f"no `{cache_status.HEADER.replace(chr(9), '<TAB>')}` header: not a cache.log", 1)
    stamps: list[np.datetime64] = []
    rows: list[dict[str, float]] = []
    notes: list[str] = []
    before: dict | None = None
    last_stamp: np.datetime64 | None = None
    for number, line in enumerate(lines[1:], start=2):
        try:
            stamp_text, status = cache_status.sample_line(line)
            stamp = _stamp(stamp_text)
            if last_stamp is not None and stamp <= last_stamp:
                raise CacheStatusError(f"time {stamp_text} does not follow {last_stamp} (a sample repeated or out "
                                       "of order)")
            last_stamp = stamp
            if status.startswith(cache_status.ERROR_PREFIX):
                notes.append(f"cache: no status read at {stamp_text} ({status[len(cache_status.ERROR_PREFIX):][:120]})")
                continue
            counters = cache_status.parse_status(status)
            if before is not None and (fell := cache_status.went_back(before, counters)):
                raise CacheFailed(fell)
        except CacheFailed as exc:
            mark = f"{Path(path).name}:{number}: {exc}: the trial has no cache figures"
            return Samples(np.array([], dtype="datetime64[ms]"), STATUS_RESOLUTION_S,
                           {name: np.array([], dtype=np.float64) for name in METRICS}, notes, marks=[mark])
        except CacheStatusError as exc:
            raise ParseError(path, str(exc), number) from None
        if before is not None:
            rows.append(_figures(before, counters))
            stamps.append(stamp)
        before = counters
    times = np.array(stamps, dtype="datetime64[ms]")
    metrics = {name: np.array([row[name] for row in rows], dtype=np.float64) for name in METRICS}
    return Samples(times, STATUS_RESOLUTION_S, metrics, notes)


def _stamp(text: str) -> np.datetime64:
    if not _STAMP.fullmatch(text):
        raise CacheStatusError(f"time {text[:40]!r} is not UTC ISO 8601 (2026-11-28T19:53:00.752Z)")
    try:
        return as_datetimes([text[:-1]], "ms")[0]
    except ValueError:
        raise CacheStatusError(f"time {text[:40]!r} is not a date and time") from None


def _figures(before: dict, after: dict) -> dict[str, float]:
    def grown(name: str) -> float:
        return float("nan") if after[name] is None or before[name] is None else float(after[name] - before[name])
    row = {name: grown(name) for name in cache_status.GROWING}
    ratio = cache_status.hit_ratio(row["read_hits"], row["read_misses"])
    row["read_hit_ratio"] = float("nan") if ratio is None else ratio
    row["used_pct"] = 100.0 * after["used_blocks"] / after["total_blocks"]
    row["dirty_mib"] = float("nan") if after["dirty_bytes"] is None else after["dirty_bytes"] / 2**20
    return row

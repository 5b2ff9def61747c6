"""A flash cache's own counters, as the kernel prints them: `dmsetup status` of a dm-cache or a
dm-writecache device, read each second beside vmstat and iostat into the trial's cache.log.

cache.log is a header line (`time<TAB>status`) and then a line a sample: the UTC time (ISO 8601,
milliseconds, Z) and the status line as dmsetup printed it, or `#error <why>` where it failed.

Both targets are read into the same counters, so a report reads any cache alike:
read_hits, read_misses, write_hits, write_misses (since the cache was made, as the target counts
them: dm-cache counts I/O requests, dm-writecache 4 KiB blocks; their ratios compare, their counts
do not), used_blocks and total_blocks, and where the target says so dirty_blocks (not yet written
back), block_bytes, promotions and demotions (blocks moved into and out of the cache). A write hit
is a write the cache took: dm-cache's write hits; for dm-writecache, which takes every write into
a block it holds or allocates, all but those that went around it (its only write misses).
dm-writecache does not count dirty blocks, only those being written back (writeback_blocks).

Standard library only: it runs on the benchmark host (the trial's summary), and the report reads
the same lines with the same function.
"""

from __future__ import annotations

import re
from typing import Any

HEADER = "time\tstatus"
ERROR_PREFIX = "#error "
# A counter as the kernel prints it: ASCII digits, at most 20 (an unsigned 64-bit number).
_COUNT = re.compile(r"[0-9]{1,20}")
SECTOR_BYTES = 512
# The counters that only grow while the cache exists: one that falls was reset (the cache made anew).
GROWING = ("read_hits", "read_misses", "write_hits", "write_misses", "promotions", "demotions")


class CacheStatusError(ValueError):
    """A status line that is not a cache's, or is cut or damaged: one line saying what is wrong."""


class CacheFailed(CacheStatusError):
    """A status line that says the cache failed (dm-cache `Fail`, a writecache error) or was made
    anew (a counter fell): true of the trial, so it is marked, and its cache figures are none."""


def _count(text: str, what: str) -> int:
    if not _COUNT.fullmatch(text):
        raise CacheStatusError(f"{what} is {text[:40]!r}, not a count")
    return int(text)


def _pair(text: str, what: str) -> tuple[int, int]:
    used, _, total = text.partition("/")
    return _count(used, f"{what} used"), _count(total, f"{what} total")


def parse_status(line: str) -> dict[str, Any]:
    """One `dmsetup status` line of a dm-cache or dm-writecache device (with its start and length),
    as the counters above; CacheStatusError for anything else."""
    fields = line.split()
    if len(fields) < 3:
        raise CacheStatusError("not a device-mapper status line (start, length, target)")
    target = fields[2]
    if target == "cache":
        return _dm_cache(fields[3:])
    if target == "writecache":
        return _dm_writecache(fields[3:])
    raise CacheStatusError(f"a {target[:40]!r} target, not a cache (dm-cache or dm-writecache)")


def _dm_cache(fields: list[str]) -> dict[str, Any]:
    # <metadata block size> <used>/<total metadata blocks> <cache block size> <used>/<total cache
    # blocks> <read hits> <read misses> <write hits> <write misses> <demotions> <promotions>
    # <dirty> <#features> <feature>* <#core args> <core arg>* <policy> <#policy args> <arg>*
    # <metadata mode> <needs_check>: the kernel's device-mapper cache documentation.
    if len(fields) == 1 and fields[0] == "Fail":
        raise CacheFailed("the cache device reports Fail")
    if len(fields) < 12:
        raise CacheStatusError(f"a dm-cache status line cut short ({len(fields)} fields after the target, "
                               "at least 12 expected)")
    used, total = _pair(fields[3], "cache blocks")
    names = ("read_hits", "read_misses", "write_hits", "write_misses", "demotions", "promotions", "dirty_blocks")
    counters: dict[str, Any] = {name: _count(value, name) for name, value in zip(names, fields[4:11])}
    block_sectors = _count(fields[2], "cache block size")
    if total == 0 or used > total or counters["dirty_blocks"] > total:
        raise CacheStatusError(f"cache blocks {used}/{total} with {counters['dirty_blocks']} dirty: not a cache's")
    features = _count(fields[11], "feature count")
    named = fields[12:12 + features]
    mode = next((f for f in named if f in ("writeback", "writethrough", "passthrough")), "writethrough")
    return {"target": "cache", "mode": mode, "block_bytes": block_sectors * SECTOR_BYTES,
            "used_blocks": used, "total_blocks": total, "writeback_blocks": None, **counters,
            "needs_check": fields[-1] == "needs_check"}


def _dm_writecache(fields: list[str]) -> dict[str, Any]:
    # <error> <#blocks> <#free blocks> <#blocks under writeback>, then since Linux 5.15 <#read
    # blocks> <#read hits> <#write blocks> <#write hits uncommitted> <#write hits committed>
    # <#writes around> <#writes allocated> <#writes blocked on freelist> <#flushes> <#discards>.
    if len(fields) < 14:
        raise CacheStatusError(f"a dm-writecache status line without its counters ({len(fields)} fields after "
                               "the target, 14 expected: Linux 5.15 or later)")
    if fields[0] != "0":
        raise CacheFailed(f"the writecache reports error {fields[0][:40]}")
    total, free, writeback = (_count(fields[i], name) for i, name in ((1, "blocks"), (2, "free blocks"),
                                                                       (3, "blocks under writeback")))
    reads, read_hits, writes, around = (
        _count(fields[i], name) for i, name in ((4, "read blocks"), (5, "read hits"), (6, "write blocks"),
                                                (9, "writes around")))
    if total == 0 or free > total or read_hits > reads or around > writes:
        raise CacheStatusError(f"writecache blocks {free} free of {total}, read hits {read_hits} of {reads}, "
                               f"writes around {around} of {writes}: not a writecache's")
    return {"target": "writecache", "mode": "writeback", "block_bytes": None,
            "used_blocks": total - free, "total_blocks": total, "writeback_blocks": writeback,
            "read_hits": read_hits, "read_misses": reads - read_hits,
            "write_hits": writes - around, "write_misses": around,
            "demotions": None, "promotions": None, "dirty_blocks": None, "needs_check": False}


def sample_line(text: str) -> tuple[str, str]:
    """A cache.log line's time stamp and what follows it (a status line, or `#error …`)."""
    stamp, tab, rest = text.partition("\t")
    if not tab:
        raise CacheStatusError("no tab between the time and the status")
    return stamp, rest


def hit_ratio(hits: float, misses: float) -> float | None:
    """hits ÷ (hits + misses), None where nothing was asked of the cache."""
    return hits / (hits + misses) if hits + misses > 0 else None


def window_ratios(read_hits: list[float], read_misses: list[float], write_hits: list[float],
                  write_misses: list[float]) -> dict[str, Any]:
    """The measured window's figures from its intervals' growth, in order (the host and the report
    both call this): the read and write hit ratios, and the read hit ratio of each half of the
    window (the first half holds the middle interval of an odd count)."""
    split = (len(read_hits) - 1) // 2 + 1
    return {"read_hit_ratio": hit_ratio(sum(read_hits), sum(read_misses)),
            "write_hit_ratio": hit_ratio(sum(write_hits), sum(write_misses)),
            "read_hit_ratio_halves": [hit_ratio(sum(read_hits[:split]), sum(read_misses[:split])),
                                      hit_ratio(sum(read_hits[split:]), sum(read_misses[split:]))]}


def went_back(before: dict[str, Any], after: dict[str, Any]) -> str | None:
    """The first counter that fell between two samples (the cache was made anew between them), or None."""
    for name in GROWING:
        if before.get(name) is not None and after.get(name) is not None and after[name] < before[name]:
            return f"{name} fell from {before[name]} to {after[name]} (the cache was reset)"
    return None

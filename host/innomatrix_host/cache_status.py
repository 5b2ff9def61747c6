"""A flash cache's own counters, as the kernel prints them: `dmsetup status` of a dm-cache or a
dm-writecache device, or a bcache device's sysfs (bcache_line), read each second beside vmstat and
iostat into the trial's cache.log.

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
dirty_bytes is the dirty data in bytes where the cache says (dm-cache's dirty blocks × its block;
bcache's dirty_data), None where it does not.

bcache counts hits and misses on reads only (its writes are not looked up): its write_hits and
write_misses are None. A read that bypassed the cache (sequential_cutoff, a congested cache) is
still answered from it when it holds the data: its bypass hits and misses are read hits and
misses. Its blocks are its buckets: used_blocks those holding clean or dirty data (priority_stats
gives whole per cents of them, so a used count is good to 1 % of the buckets). Its hits and
misses move in steps: the kernel folds them into stats_total on a timer, 22 times in 5 minutes
(drivers/md/bcache/stats.c), so a sample's growth is the reads of the 13.6 s before a step, or
nothing; dirty_data and priority_stats are read live.

Standard library only: it runs on the benchmark host (the trial's summary), and the report reads
the same lines with the same function.
"""

from __future__ import annotations

import re
from collections.abc import Callable
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
    or a bcache device's line (bcache_line), as the counters above; CacheStatusError for anything else."""
    fields = line.split()
    if fields[:1] == [BCACHE]:
        return _bcache(fields[1:])
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
            "dirty_bytes": counters["dirty_blocks"] * block_sectors * SECTOR_BYTES,
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
            "demotions": None, "promotions": None, "dirty_blocks": None, "dirty_bytes": None, "needs_check": False}


# --- bcache: its sysfs, read into one line ---------------------------------------------------------

BCACHE = "bcache"
# What a bcache line holds, in order: the backing device's files (/sys/block/bcacheN/bcache/), then
# its cache set's one cache device's (…/cache/cache0/): its bucket count and size, and priority_stats'
# shares of the buckets.
BCACHE_COUNTS = ("cache_hits", "cache_misses", "cache_bypass_hits", "cache_bypass_misses")
BCACHE_FILES = (("mode", "cache_mode"), ("state", "state"), ("dirty_data", "dirty_data"),
                *((name, f"stats_total/{name}") for name in BCACHE_COUNTS),
                ("buckets", "cache/cache0/nbuckets"), ("bucket_size", "cache/cache0/bucket_size"))
BCACHE_SHARES = ("unused_pct", "clean_pct", "dirty_pct", "metadata_pct")
BCACHE_KEYS = (*(key for key, _ in BCACHE_FILES), *BCACHE_SHARES)
BCACHE_STATES = ("clean", "dirty", "no cache", "inconsistent")
BCACHE_MODES = ("writethrough", "writeback", "writearound", "none")
# The kernel's human-readable sizes (bch_hprint): one decimal of a power-of-1024 unit.
_HPRINT = re.compile(r"([0-9]{1,4})\.([0-9])([kMGTPEZY])")
_UNITS = "kMGTPEZY"
_PRIORITY = re.compile(r"(Unused|Clean|Dirty|Metadata):\s+([0-9]{1,3})%")


def bcache_line(read: Callable[[str], str]) -> str:
    """A bcache device's counters as one cache.log status: `bcache key=value …` (BCACHE_KEYS), from
    `read`, which gives a file below the device's sysfs directory (/sys/block/bcacheN/bcache/) by
    its relative path. The cache mode is the bracketed one; a state or a size has its spaces made
    underscores, so that each value is one word."""
    values = {key: " ".join(read(leaf).split()) for key, leaf in BCACHE_FILES}
    modes = re.findall(r"\[([a-z]+)\]", values["mode"])
    values["mode"] = modes[0] if len(modes) == 1 else values["mode"]
    shares = dict(_PRIORITY.findall(read("cache/cache0/priority_stats")))
    values.update({f"{name.lower()}_pct": share for name, share in shares.items()})
    return " ".join([BCACHE, *(f"{key}={values.get(key, '').replace(' ', '_')}" for key in BCACHE_KEYS)])


def hprint_bytes(text: str, what: str) -> int:
    """A size as bcache prints it (bch_hprint: "0.0k", "6.1M", "1.2G") in bytes, at the low end of
    the tenth of its unit the kernel rounded it down to: "6.1M" is 6.1 MiB, and less than 6.2."""
    found = _HPRINT.fullmatch(text)
    if not found:
        raise CacheStatusError(f"{what} is {text[:40]!r}, not a size as bcache prints it (6.1M)")
    whole, tenth, unit = found.groups()
    scale = 1024 ** (_UNITS.index(unit) + 1)
    return (int(whole) * 10 + int(tenth)) * scale // 10


def _bcache(fields: list[str]) -> dict[str, Any]:
    values: dict[str, str] = {}
    for field in fields:
        key, equals, value = field.partition("=")
        if not equals or key not in BCACHE_KEYS or key in values:
            raise CacheStatusError(f"a bcache line with {field[:40]!r}: not one of its fields, or twice")
        values[key] = value
    missing = [key for key in BCACHE_KEYS if not values.get(key)]
    if missing:
        raise CacheStatusError(f"a bcache line without {', '.join(missing)} (cut short, or no cache attached)")
    state = values["state"].replace("_", " ")
    if state == "inconsistent":
        raise CacheFailed("bcache reports its backing device inconsistent")
    if state not in BCACHE_STATES or values["mode"] not in BCACHE_MODES:
        raise CacheStatusError(f"bcache state {state[:40]!r}, mode {values['mode'][:40]!r}: not a bcache's")
    if state == "no cache":
        raise CacheFailed("bcache reports no cache attached to the backing device")
    counts = {name: _count(values[name], name) for name in (*BCACHE_COUNTS, "buckets")}
    shares = {name: _count(values[name], name) for name in BCACHE_SHARES}
    if counts["buckets"] == 0 or sum(shares.values()) > 100:
        raise CacheStatusError(f"{counts['buckets']} buckets, shares {shares}: not a bcache's")
    used = counts["buckets"] * min(100, shares["clean_pct"] + shares["dirty_pct"]) // 100
    return {"target": BCACHE, "mode": values["mode"], "block_bytes": hprint_bytes(values["bucket_size"], "bucket_size"),
            "used_blocks": used, "total_blocks": counts["buckets"], "writeback_blocks": None,
            "read_hits": counts["cache_hits"] + counts["cache_bypass_hits"],
            "read_misses": counts["cache_misses"] + counts["cache_bypass_misses"],
            "write_hits": None, "write_misses": None, "demotions": None, "promotions": None,
            "dirty_blocks": None, "dirty_bytes": hprint_bytes(values["dirty_data"], "dirty_data"),
            "needs_check": False}


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

"""What a collector can print: the named bounds every vmstat, iostat and status value is checked against.

A value outside its bound (negative where the tool counts, a percentage above 100, a rate no
hardware reaches, NaN or infinity) is not a measurement: the file was damaged, and the report
stops with one line naming the file and its line, as it does for a damaged driver log. The bounds
are wide on purpose (a discard request may span a whole device; sysstat does not cap %util), so
no real log is refused; they are there to keep `1e309`, `-5` and a counter that jumps by 10^18
out of the tables.

What a collector may honestly show and still mislead (a counter that goes back because the
server restarted, a clock stepped back, a collector that stopped early) is not an error: the
frame marks the trial with the reason (see frame.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from innomatrix_host.flush_points import MOST_BYTES as MOST_REDO_BYTES


@dataclass(frozen=True)
class Bound:
    low: float
    high: float
    unit: str

    def first_outside(self, values: np.ndarray) -> int | None:
        """Index of the first value that is not finite or lies outside [low, high]; None if all are in."""
        values = np.asarray(values, dtype=np.float64)
        bad = ~((values >= self.low) & (values <= self.high))  # NaN compares False: it is outside
        return int(np.argmax(bad)) if bad.any() else None

    def describe(self) -> str:
        return f"{self.low:g}–{self.high:g} {self.unit}".rstrip()


PERCENT = Bound(0, 100, "%")
MEMORY_KIB = Bound(0, 2 ** 40, "KiB")       # a PiB of memory
PER_SECOND = Bound(0, 1e10, "per second")
REQUESTS_PER_SECOND = Bound(0, 1e9, "requests/s")
KB_PER_SECOND = Bound(0, 1e10, "kB/s")      # 10 TB/s
MILLISECONDS = Bound(0, 1e7, "ms")          # under three hours a request
ANY_COUNT = Bound(0, 1e15, "")

VMSTAT = {
    **dict.fromkeys(("r", "b"), Bound(0, 1e7, "processes")),
    **dict.fromkeys(("swpd", "free", "buff", "cache", "inact", "active"), MEMORY_KIB),
    **dict.fromkeys(("si", "so"), KB_PER_SECOND),
    **dict.fromkeys(("bi", "bo"), Bound(0, 1e10, "blocks/s")),
    **dict.fromkeys(("in", "cs"), PER_SECOND),
    **dict.fromkeys(("us", "sy", "id", "wa", "st", "gu"), PERCENT),
}
IOSTAT = {
    **dict.fromkeys(("r/s", "w/s", "d/s", "f/s", "rrqm/s", "wrqm/s", "drqm/s"), REQUESTS_PER_SECOND),
    **dict.fromkeys(("rkB/s", "wkB/s", "dkB/s"), KB_PER_SECOND),
    **dict.fromkeys(("rrqm", "wrqm", "drqm"), PERCENT),
    **dict.fromkeys(("r_await", "w_await", "d_await", "f_await", "svctm"), MILLISECONDS),
    **dict.fromkeys(("rareq-sz", "wareq-sz"), Bound(0, 1e7, "kB")),
    "dareq-sz": Bound(0, 1e12, "kB"),                # a discard may span the whole device
    "aqu-sz": Bound(0, 1e7, "requests"),
    # Busy time ÷ the interval, from two clocks, and sysstat does not cap it: above 100 % is a real
    # reading (221 % from a dm-cache volume in a TCG guest; a 32-bit busy count that goes back by one
    # reads as 4.3e8 % over a second), kept as a mark by the iostat parser (`UTIL_SHARE`).
    "util": Bound(0, 1e10, "%"),
}
# The share of the interval a device can have been busy, and by how much two clocks counting in
# jiffies (4 ms at HZ=250) and centiseconds can overshoot it in a one-second sample: iostat's util
# within that is read as 100 %; beyond it the kernel's busy count is no share of the interval, and
# the trial has no util and is marked.
UTIL_SHARE = PERCENT
UTIL_CLOCKS_RESOLUTION = 2.0  # points of %
# Bytes of redo: a checkpoint age (a PiB of redo is far beyond any server's, as for a flush point).
REDO_BYTES = Bound(0, MOST_REDO_BYTES, "bytes")
# Status counters are read as rates, gauges as levels.
STATUS_RATES = {
    **dict.fromkeys(("Innodb_data_written", "Innodb_os_log_written", "Innodb_data_read", "Bytes_received",
                     "Bytes_sent"), Bound(0, 1e12, "bytes/s")),
}
STATUS_LEVELS = {
    "Innodb_checkpoint_age": REDO_BYTES,
    **dict.fromkeys(("Innodb_redo_log_current_lsn", "Innodb_redo_log_checkpoint_lsn"), Bound(0, 2 ** 63, "LSN")),
    **dict.fromkeys(("Threads_running", "Threads_connected"), Bound(0, 1e7, "threads")),
}


def vmstat(column: str) -> Bound:
    return VMSTAT.get(column, ANY_COUNT)


def iostat(column: str) -> Bound:
    """sysstat's device columns by name; `cpu_*` are avg-cpu's percentages."""
    return PERCENT if column.startswith("cpu_") else IOSTAT.get(column, ANY_COUNT)


def status_rate(variable: str) -> Bound:
    return STATUS_RATES.get(variable, PER_SECOND)


def status_level(variable: str) -> Bound:
    return STATUS_LEVELS.get(variable, ANY_COUNT)

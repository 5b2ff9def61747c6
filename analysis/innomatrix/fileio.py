"""The raw-device workload: sysbench fileio sub-tests as matrix cells, before MySQL is involved.

The posts measured the device alone in four ways; each is a sub-test here and each of its
(block size, threads) points is one cell with a key, resumable like any other:
- async random write and random read at the InnoDB page size, with O_DIRECT, for hours at a
  report interval, to expose stalls (they use the matrix's warmup, duration and `threads`);
- a synchronous random-read thread sweep 1, 2, 4 … `fileio_threads_max`, for p95 and p99;
- JDevelopment's block-size × threads table, random read and random write;
- sequential read and write.
Everything here is pure: the fileio spec in (innomatrix.plan checks the knobs), cell parameters out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# The posts' layout: 64 files, fsync off, O_DIRECT (the device, not the page cache, is measured).
FILE_NUM = 64
EXTRA_FLAGS = "direct"
# Sequential bandwidth is measured with large requests from one thread, like dd.
SEQUENTIAL_BLOCK_BYTES = 1 << 20


@dataclass(frozen=True)
class SubTest:
    mode: str  # sysbench --file-test-mode
    io_mode: str  # sysbench --file-io-mode
    threads: str  # where the thread counts come from: matrix | sweep | table | one
    blocks: str  # where the block sizes come from: page | table | sequential
    long: bool  # timed by warmup/duration (stall hunting) rather than fileio_step_duration


SUBTESTS: dict[str, SubTest] = {
    "async-rndwr": SubTest("rndwr", "async", threads="matrix", blocks="page", long=True),
    "async-rndrd": SubTest("rndrd", "async", threads="matrix", blocks="page", long=True),
    "sync-rndrd": SubTest("rndrd", "sync", threads="sweep", blocks="page", long=False),
    "table-rndrd": SubTest("rndrd", "sync", threads="table", blocks="table", long=False),
    "table-rndwr": SubTest("rndwr", "sync", threads="table", blocks="table", long=False),
    "seqrd": SubTest("seqrd", "sync", threads="one", blocks="sequential", long=False),
    "seqwr": SubTest("seqwr", "sync", threads="one", blocks="sequential", long=False),
}


def sweep(threads_max: int) -> list[int]:
    """1, 2, 4 … up to threads_max, and threads_max itself when it is not a power of two."""
    counts, n = [], 1
    while n < threads_max:
        counts.append(n)
        n *= 2
    return [*counts, threads_max]


def points(test: str, fileio: dict[str, Any], matrix_threads: list[int]) -> list[tuple[int, int]]:
    """The (block bytes, threads) cells of one sub-test, in the order they run."""
    sub = SUBTESTS[test]
    blocks = {
        "page": [fileio["block_size"]],
        "table": fileio["block_sizes"],
        "sequential": [SEQUENTIAL_BLOCK_BYTES],
    }[sub.blocks]
    threads = {
        "matrix": matrix_threads,
        "sweep": sweep(fileio["threads_max"]),
        "table": fileio["table_threads"],
        "one": [1],
    }[sub.threads]
    return [(block, n) for block in blocks for n in threads]


def timing(test: str, fileio: dict[str, Any], warmup: int, duration: int, report_interval: int) -> dict[str, int]:
    """Long sub-tests hunt stalls over the matrix's warmup and duration; the sweeps are short steps."""
    if SUBTESTS[test].long:
        return {"warmup": warmup, "duration": duration, "report_interval": report_interval}
    step = fileio["step_duration"]
    # The plan refuses a step shorter than two report intervals.
    return {"warmup": 0, "duration": step, "report_interval": report_interval}


def driver_options(test: str, block_bytes: int, fileio: dict[str, Any]) -> dict[str, Any]:
    """What the trial hands sysbench for this cell (the cell carries it; the key hashes it)."""
    sub = SUBTESTS[test]
    return {
        "test": test,
        "mode": sub.mode,
        "io_mode": sub.io_mode,
        "block_bytes": block_bytes,
        "total_size": fileio["total_size"],
        "file_num": fileio["file_num"],
        "extra_flags": EXTRA_FLAGS,
        "fsync_freq": 0,
    }


def space_needed(fileio: dict[str, Any]) -> int:
    """The test files plus a tenth of headroom (the filesystem's own metadata); seqwr writes a
    second set of its own beside them (it would truncate the prepared ones)."""
    sets = 2 if "seqwr" in fileio["tests"] else 1
    return int(sets * fileio["total_size"] * 1.1)

"""A results tree read as untrusted input: what the report, compare, noise and the plan may open.

People share results (a colleague's tarball, a CI artifact, a tree copied off a host whose disk
filled), so nothing in a tree is taken on trust:
- A tree the suite wrote holds directories and regular files only. `trial_dirs` walks it without
  following anything and refuses a symlink, a device, a FIFO or a socket anywhere in it, naming
  it: through a symlink a report would read a file outside the tree (and publish it in its HTML)
  or write its output over one.
- Every file is opened without following a symlink and without blocking, must be a regular file,
  and is refused before it is read when it is larger than its limit (`read_bytes`): a trial's
  logs are bounded by what its duration could have written (`LogBudget`), so a 2 GB sparse
  `driver.log` beside a 40-second trial costs nothing to refuse.
- JSON is read without NaN, Infinity or numbers too large for a float (`read_json`): no tool
  of the suite writes them, and they would come out as `nan` or `inf` in the tables.
"""

from __future__ import annotations

import errno
import json
import math
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from innomatrix import layout


class TreeError(ValueError):
    """A results tree, or a file in it, that is not read; the message names the path and says why."""


# A tree the suite wrote has none of these; each is named by what it is, for the error.
_SPECIAL = ((stat.S_ISLNK, "a symlink"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
            (stat.S_ISBLK, "a block device"), (stat.S_ISCHR, "a character device"))
KIB, MIB = 1 << 10, 1 << 20
# Files whose size does not grow with the trial's duration (a cell's record and the server's
# settings; host.json gains a few KiB per session).
JSON_LIMIT = 4 * MIB
TEXT_LIMIT = 4 * MIB
HOST_JSON_LIMIT = 64 * MIB


def run_root(run_dir: str | Path) -> Path:
    """The run directory as a real path (the name given may be a symlink, as `results/` often is)."""
    run = Path(run_dir)
    if not run.is_dir():
        raise TreeError(f"{run}: no such results directory")
    return Path(os.path.realpath(run))


def _kind(mode: int) -> str | None:
    return next((what for test, what in _SPECIAL if test(mode)), None)


def refuse_special(path: Path, mode: int) -> None:
    what = _kind(mode)
    if what is None:
        return
    target = f" (to {os.readlink(path)})" if stat.S_ISLNK(mode) else ""
    raise TreeError(f"{path}: {what}{target}; a results tree written by innomatrix holds only directories and "
                    "regular files, and nothing outside the tree is read: replace it with a copy of what it "
                    "stands for, or remove it")


def trial_dirs(run: Path) -> list[Path]:
    """Every trial directory of a run (layout.parse names its cell, it holds trial.json), in path order.

    The whole run is walked, nothing followed: anything but a directory or a regular file refuses
    the tree (see the module's docstring); hidden directories (a cell being written) and earlier
    attempts moved aside (`r1.ok-…`) are walked but are not trials.
    """
    found: list[Path] = []
    pending = [run]
    while pending:
        directory = pending.pop()
        try:
            entries = list(os.scandir(directory))
        except OSError as exc:
            raise TreeError(f"{directory}: cannot be listed ({exc.strerror})") from None
        holds_trial = False
        for entry in entries:
            path = Path(entry.path)
            mode = entry.stat(follow_symlinks=False).st_mode
            refuse_special(path, mode)
            if stat.S_ISDIR(mode):
                pending.append(path)
            elif entry.name == layout.TRIAL_FILE:
                holds_trial = True
        if holds_trial and layout.parse(directory.relative_to(run).as_posix()) is not None:
            found.append(directory)
    return sorted(found)


def _open_regular(path: Path) -> BinaryIO:
    """A regular file opened without following a symlink or blocking on a FIFO. A device is never
    opened: opening some (a tape) does something."""
    try:
        refuse_special(path, os.lstat(path).st_mode)
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            refuse_special(path, os.lstat(path).st_mode)
        raise TreeError(f"{path}: cannot be opened ({exc.strerror})") from None
    # What was opened is looked at before it is wrapped: a directory opens, and fdopen then raises.
    try:
        info = os.fstat(fd)
    except OSError as exc:
        os.close(fd)
        raise TreeError(f"{path}: cannot be read ({exc.strerror})") from None
    if stat.S_ISREG(info.st_mode):
        return os.fdopen(fd, "rb")
    os.close(fd)
    refuse_special(path, info.st_mode)
    raise TreeError(f"{path}: not a regular file")


def read_head(path: Path, limit: int) -> tuple[bytes, bool]:
    """A regular file's first `limit` bytes (opened as read_bytes opens it), and whether it holds more:
    for a log a trial may honestly fill beyond what the report needs of it (a server's error log)."""
    with _open_regular(path) as handle:
        data = handle.read(limit + 1)
    return data[:limit], len(data) > limit


def read_bytes(path: Path, limit: int, why: str = "") -> bytes:
    """A regular file's bytes, opened without following a symlink or blocking on a FIFO; a file
    larger than `limit` is refused unread (`why` says where the limit comes from). A device is
    never opened: opening some (a tape) does something."""
    with _open_regular(path) as handle:
        info = os.fstat(handle.fileno())
        if info.st_size > limit:
            raise TreeError(f"{path}: {_size(info.st_size)}, more than {_size(limit)}{why}: refused unread "
                            "(a damaged or foreign file)")
        data = handle.read(info.st_size + 1)  # one byte more: a file still growing is seen to grow
    if len(data) > limit:
        raise TreeError(f"{path}: more than {_size(limit)}{why}: refused")
    return data


def read_text(path: Path, limit: int = TEXT_LIMIT, why: str = "") -> str:
    return read_bytes(path, limit, why).decode(errors="replace")


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number innomatrix writes")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text[:24]} is too large for a number")
    return value


def loads(text: str | bytes) -> Any:
    """JSON without NaN, Infinity or a number that overflows a float; raises ValueError."""
    return json.loads(text, parse_constant=_no_constant, parse_float=_finite)


def read_json(path: Path, limit: int = JSON_LIMIT) -> Any:
    """A JSON file of the tree, as `loads` reads it; TreeError names the file and the fault."""
    data = read_bytes(path, limit)
    try:
        return loads(data)
    except ValueError as exc:  # JSONDecodeError is one: its message has the line and column
        raise TreeError(f"{path}: cannot be read as JSON ({exc})") from None


def _size(size: int) -> str:
    for unit, scale in (("GB", 1 << 30), ("MB", MIB), ("KB", KIB)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{size} bytes"


@dataclass(frozen=True)
class LogBudget:
    """The most bytes a log of one trial can honestly hold: a fixed part (headers, the driver's
    final summary and histogram, the first full status sample) and a part per sample, ten times
    over. A real log is far below it; a file above it did not come from this trial."""

    fixed: int
    per_sample: int

    def limit(self, seconds: float, interval_s: float) -> int:
        samples = seconds / interval_s + 10
        return int(10 * (self.fixed + self.per_sample * samples))


# Per file of a trial directory. sysbench's longest interval line is under 200 bytes, tpcc_start's
# under 150, vmstat's under 200; iostat's entry for one disk and the CPU is under 1 KiB (8 allows
# a handful of disks); a status sample lists the ~100 variables that moved, a few KiB.
BUDGETS = {
    "driver.log": LogBudget(fixed=128 * KIB, per_sample=256),
    "vmstat.log": LogBudget(fixed=4 * KIB, per_sample=256),
    "iostat.json": LogBudget(fixed=8 * KIB, per_sample=8 * KIB),
    "status.log": LogBudget(fixed=256 * KIB, per_sample=16 * KIB),
    # A dm-cache status line with its policy's arguments is under 400 bytes, an error line under 300.
    "cache.log": LogBudget(fixed=4 * KIB, per_sample=1 * KIB),
}
# Collectors start before the driver and stop after it; a trial's record may lack its end time.
SLACK_S = 600.0


def read_log(path: Path, seconds: float, interval_s: float) -> bytes:
    """A trial's log, refused unread when larger than its trial of `seconds` could have written."""
    limit = BUDGETS[path.name].limit(seconds + SLACK_S, interval_s)
    return read_bytes(path, limit, f", what a trial of {seconds:g} s at {interval_s:g}-s intervals can write")

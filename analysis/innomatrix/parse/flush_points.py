"""Parse a trial's flush_points.txt: the redo ages at which its server starts flushing dirty pages
ahead of the checkpoint (the async point) and makes writers wait for that flushing (the sync
point), as the server computed them for its redo capacity at the trial's start.

The host writes it right after SHOW GLOBAL VARIABLES (innomatrix_host.runtime.Server.flush_points):
`name TAB bytes` per line, from INNODB_METRICS (`log_max_modified_age_async` on both servers,
`log_max_modified_age_sync` on MySQL) and SHOW GLOBAL STATUS (`Innodb_checkpoint_max_age`, MariaDB's
sync point). Other lines are not ours to read and are passed over; a value that is no byte count a
server has, or an async point beyond the sync one, is an error naming the file and the line.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from innomatrix.bounds import REDO_BYTES
from innomatrix.parse import ParseError

ASYNC = "log_max_modified_age_async"
SYNC_NAMES = ("log_max_modified_age_sync", "Innodb_checkpoint_max_age")


@dataclass(frozen=True)
class FlushPoints:
    """Bytes of checkpoint age; None where the server did not say."""

    async_bytes: int | None
    sync_bytes: int | None


def parse(path: str | Path, text: str) -> FlushPoints:
    found: dict[str, tuple[int, int]] = {}
    for number, line in enumerate(text.splitlines(), 1):
        name, tab, value = line.partition("\t")
        if not tab or name not in (ASYNC, *SYNC_NAMES):
            continue
        if name in found:
            raise ParseError(path, f"{name} is listed twice (first on line {found[name][1]})", number)
        if not value.strip().isascii() or not value.strip().isdigit() or len(value.strip()) > 20:
            raise ParseError(path, f"{name} is {value[:24]!r}, not a byte count", number)
        size = int(value)
        if REDO_BYTES.first_outside([size]) is not None or size == 0:
            raise ParseError(path, f"{name} = {size} lies outside 1–{REDO_BYTES.high:g} bytes: no server "
                             "computes such a flush point", number)
        found[name] = (size, number)
    async_at = found.get(ASYNC)
    sync_at = next((found[name] for name in SYNC_NAMES if name in found), None)
    if async_at and sync_at and async_at[0] > sync_at[0]:
        raise ParseError(path, f"the async flush point ({async_at[0]}) lies beyond the sync one ({sync_at[0]}): "
                         "no server computes them so", async_at[1])
    return FlushPoints(async_at[0] if async_at else None, sync_at[0] if sync_at else None)

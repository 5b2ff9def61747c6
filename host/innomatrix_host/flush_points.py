"""Where InnoDB's flushing is read from. A trial's flush_points.txt: the checkpoint ages at which its server starts flushing dirty pages
ahead of the checkpoint (the async point) and makes writers wait for that flushing (the sync
point), as the server computed them for its redo capacity at the trial's start.

The trial writes it right after SHOW GLOBAL VARIABLES (runtime.Server.flush_points): `name TAB
bytes` per line, from INNODB_METRICS (`log_max_modified_age_async` on both servers,
`log_max_modified_age_sync` on MySQL) and SHOW GLOBAL STATUS (`Innodb_checkpoint_max_age`, MariaDB's
sync point). Other lines are not ours to read and are passed over; a value that is no byte count a
server has, an async point beyond the sync one, one point without the other, or a file cut short
is a FlushPointsError naming the line (the report makes it a one-line error naming the file; the
host gives no flushing cause).
"""

from __future__ import annotations

from dataclasses import dataclass

# Pages written by flush type, from INNODB_METRICS on MariaDB and MySQL alike (SHOW GLOBAL STATUS
# has no split on MySQL, and MariaDB's LRU count there is one of these): pages written by flush-list
# batches (flushing for the checkpoint) and by LRU batches (writing pages out to free buffers).
# Both are shares of Innodb_buffer_pool_pages_flushed.
FLUSH_TYPE_METRICS = ("buffer_flush_batch_total_pages", "buffer_LRU_batch_flush_total_pages")
# How StatusSampler names them in status.log, beside the status variables.
METRIC_PREFIX = "innodb_metrics."

ASYNC = "log_max_modified_age_async"
SYNC_NAMES = ("log_max_modified_age_sync", "Innodb_checkpoint_max_age")
# A PiB of redo: beyond any server's.
MOST_BYTES = 2 ** 50


class FlushPointsError(ValueError):
    def __init__(self, message: str, line: int):
        super().__init__(message)
        self.line = line


@dataclass(frozen=True)
class FlushPoints:
    """Bytes of checkpoint age; None where the server did not say."""

    async_bytes: int | None
    sync_bytes: int | None


def parse(text: str) -> FlushPoints:
    if text and not text.endswith("\n"):  # the client ends every row: a last one without its end was cut
        raise FlushPointsError("cut short: the last line has no line break", text.count("\n") + 1)
    found: dict[str, tuple[int, int]] = {}
    for number, line in enumerate(text.splitlines(), 1):
        name, tab, value = line.partition("\t")
        if not tab or name not in (ASYNC, *SYNC_NAMES):
            continue
        if name in found:
            raise FlushPointsError(f"{name} is listed twice (first on line {found[name][1]})", number)
        digits = value.strip()
        if not digits.isascii() or not digits.isdigit() or len(digits) > 20:
            raise FlushPointsError(f"{name} is {value[:24]!r}, not a byte count", number)
        size = int(digits)
        if not 0 < size <= MOST_BYTES:
            raise FlushPointsError(f"{name} = {size} lies outside 1–{MOST_BYTES:g} bytes: no server computes such "
                                   "a flush point", number)
        found[name] = (size, number)
    async_at = found.get(ASYNC)
    # INNODB_METRICS' sync point where the server has it; MariaDB has none there, and its
    # Innodb_checkpoint_max_age is its sync point (Percona Server's, a larger age, is not).
    sync_at = next((found[name] for name in SYNC_NAMES if name in found), None)
    if bool(async_at) != bool(sync_at):  # one client call writes both, or nothing
        lone = async_at or sync_at
        raise FlushPointsError(f"the {'async' if async_at else 'sync'} flush point without the "
                               f"{'sync' if async_at else 'async'} one: the file was cut or edited", lone[1])
    if async_at and sync_at and async_at[0] > sync_at[0]:
        raise FlushPointsError(f"the async flush point ({async_at[0]}) lies beyond the sync one ({sync_at[0]}): "
                               "no server computes them so", async_at[1])
    return FlushPoints(async_at[0] if async_at else None, sync_at[0] if sync_at else None)

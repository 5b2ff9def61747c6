"""The server settings that shape InnoDB I/O: what a trial's my.cnf asked for and what the running
server reported (`variables.txt`, SHOW GLOBAL VARIABLES right after every trial's server start).
The trial compares them on the host (its flags in trial.json) and the report by the same rules.

"Variant A" is not one configuration across servers: what a variant leaves unset takes the
server's default, and defaults move (MySQL 8.4 raised innodb_io_capacity from 200 to 10000). So
the report compares what servers *ran*, not what they were told, and a trial that runs without
what it asked for — a value the server changed, native AIO turned off — is flagged.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from .mycnf import SizeError, parse_cnf, parse_size

# Read from the running server; the names both MariaDB and MySQL use where they differ.
IO_SETTINGS = (
    "innodb_flush_method", "innodb_use_native_aio", "innodb_io_capacity", "innodb_io_capacity_max",
    "innodb_doublewrite", "innodb_flush_neighbors", "innodb_log_file_size", "innodb_log_files_in_group",
    "innodb_redo_log_capacity", "innodb_buffer_pool_size", "innodb_buffer_pool_instances",
    "innodb_read_io_threads", "innodb_write_io_threads", "innodb_page_cleaners", "innodb_lru_scan_depth",
    "innodb_adaptive_hash_index", "innodb_change_buffering", "innodb_flush_log_at_trx_commit",
    "sync_binlog", "log_bin", "tmpdir",
)
# Asked and run are compared only where the option's value and the variable's mean the same:
# log_bin's option is a file name, its variable ON/OFF; tmpdir is the suite's own, not the variant's.
NOT_COMPARED = frozenset({"log_bin", "tmpdir"})
_SIZED = re.compile(r"_(size|capacity)$")
_TRUE, _FALSE = {"on", "1", "true", "yes"}, {"off", "0", "false", "no"}


def effective(variables_text: str) -> dict[str, str]:
    """The I/O settings from SHOW GLOBAL VARIABLES output (name TAB value per line)."""
    found = {}
    for line in variables_text.splitlines():
        name, tab, value = line.partition("\t")
        if tab and name in IO_SETTINGS:
            found[name] = value.strip()
    return found


def asked(mycnf_text: str, source: str = "my.cnf") -> dict[str, str | None]:
    """The I/O settings a trial's my.cnf sets (server groups, later wins); MyCnfError when it cannot be read."""
    return {name: value for name, value in parse_cnf(mycnf_text, source).items() if name in IO_SETTINGS}


def canonical(name: str, value: str | None) -> str:
    """One spelling per value: sizes in bytes, booleans ON/OFF, words in lower case."""
    text = (value or "").strip().strip("'\"")
    if _SIZED.search(name):
        try:
            return str(parse_size(name, text))
        except SizeError:
            return text.lower()
    lowered = text.lower()
    if value is None or lowered in _TRUE:  # a bare option name switches it on
        return "ON"
    if lowered in _FALSE:
        return "OFF"
    return lowered


def not_applied(wanted: Mapping[str, str | None], running: Mapping[str, str]) -> list[str]:
    """`name: asked X, ran Y` for every I/O setting the server runs with another value."""
    return [
        f"{name}: asked {wanted[name] if wanted[name] is not None else 'ON'}, ran {running[name]}"
        for name in IO_SETTINGS
        if name in wanted and name in running and name not in NOT_COMPARED
        and canonical(name, wanted[name]) != canonical(name, running[name])
    ]


def native_aio_off(running: Mapping[str, str]) -> bool:
    """The server says it runs without native AIO; one that does not say is not called off."""
    return "innodb_use_native_aio" in running and canonical("innodb_use_native_aio", running["innodb_use_native_aio"]) == "OFF"


def redo_capacity(running: Mapping[str, str | None]) -> int | None:
    """The bytes of redo a server keeps, from its running variables: MySQL 8.0.30+ sizes it as one
    capacity (innodb_redo_log_capacity); older MySQL and MariaDB as file size × files (MariaDB
    10.6+ has one file and no count). None when the server did not say."""
    def size(name: str) -> int | None:
        value = running.get(name)
        try:
            return parse_size(name, value) if value not in (None, "") else None
        except SizeError:
            return None
    capacity = size("innodb_redo_log_capacity")
    if capacity:
        return capacity
    file_size = size("innodb_log_file_size")
    try:
        count = int(str(running.get("innodb_log_files_in_group")))
    except ValueError:
        count = 1  # not said (MariaDB 10.6+), or not a count
    return file_size * (count if 0 < count < 1000 else 1) if file_size else None


"""Where a results tree keeps what: the one module that builds the paths of a run and reads them back.

    <run>/run.json                                    every session that wrote to the run
    <run>/<host>/host.json, smart.json                the host's sessions, the device's wear
    <run>/<host>/<fs>/<workload>/dataset-<key>/       the logs of a dataset load
    <run>/<host>/<fs>/<workload>/<variant>/bp-<size>/t<threads>/r<repeat>/trial.json   oltp, tpcc
    <run>/<host>/<fs>/fileio/<subtest>/bs-<size>/t<threads>/r<repeat>/trial.json       fileio
    <run>/<host>/<layout>-m<N>/<fs>/…                  the same, on a layout over N members

A server cell is placed by its my.cnf variant and buffer pool; a fileio cell, which runs no
server, by its sub-test and block size. A cell on the plain device (one device, as always) has
no layout directory; one on a storage layout (md RAID, an LVM stripe) sits under its layout and
member count. Anything else under a run (an earlier attempt moved
aside, the temporary directory of an interrupted cell) is not a trial. innomatrix.tree walks a
run and finds its trial directories by these shapes.
"""

from __future__ import annotations

import re
from typing import Any

TRIAL_FILE = "trial.json"
HOST_FILE = "host.json"
# How a trial directory looks, said in errors about a tree that has none.
TRIAL_SHAPE = ("<host>/[<layout>-m<N>/]<fs>/<workload>/<variant>/bp-<size>/t<N>/r<N>/trial.json; "
               "fileio: <subtest>/bs-<size>")
# The value of a field that does not apply to a cell (a fileio cell's variant, a server cell's
# block size): a string, never None, which pandas' groupby would drop.
NOT_APPLICABLE = "-"
FILEIO = "fileio"
# The one device of a host, with no layout built over it.
PLAIN = "plain"

# The plain device has no layout directory: a `plain-m<N>/` is no trial's.
_TRIAL_DIR = re.compile(
    r"^(?P<host>[^/]+)/(?:(?!plain-m)(?P<layout>[a-z0-9]+(?:-[a-z0-9]+)*)-m(?P<members>[1-9]\d{0,3})/)?(?P<filesystem>[^/]+)/(?P<workload>[^/]+)/(?P<group>[^/]+)"
    r"/(?P<kind>bp|bs)-(?P<size>[^/]+)/t(?P<threads>\d+)(?:-rate(?P<rate>[1-9]\d{0,6}))?/r(?P<repeat>\d+)$"
)


class LayoutError(ValueError):
    """A cell that cannot be placed in a results tree."""


def storage_dir(layout: str, members: int) -> list[str]:
    """The directory a layout's cells sit under: none for the plain device."""
    return [] if layout == PLAIN else [f"{layout}-m{int(members)}"]


def cell_path(cell: dict[str, Any]) -> str:
    """<host>/[<layout>-m<N>/]<fs>/<workload>/…/t<threads>[-rate<R>]/r<repeat> for a cell with
    host, layout, members, filesystem, workload, threads, repeat, either variant and bp_size (a
    server cell) or subtest and block_size (a fileio cell), and a fixed-rate cell's rate (sysbench
    --rate; none or 0: closed-loop)."""
    if cell["workload"] == FILEIO:
        group, size = cell["subtest"], f"bs-{cell['block_size']}"
    else:
        group, size = cell["variant"], f"bp-{cell['bp_size']}"
    parts = [str(cell["host"]), *storage_dir(cell.get("layout", PLAIN), cell.get("members", 1)),
             str(cell["filesystem"]), str(cell["workload"]), str(group), size]
    for part in parts:
        if not part or "/" in part or part in {".", ".."}:
            raise LayoutError(f"{part!r} cannot name a directory of a results tree")
    rate = int(cell.get("rate") or 0)
    load = f"t{int(cell['threads'])}" + (f"-rate{rate}" if rate else "")
    path = "/".join([*parts, load, f"r{int(cell['repeat'])}"])
    if not _TRIAL_DIR.match(path):
        raise LayoutError(f"{path}: not the shape of a trial directory")
    return path


def dataset_path(host: str, filesystem: str, workload: str, key: str, layout: str = PLAIN, members: int = 1) -> str:
    """Where the logs of one dataset load are kept, beside the cells that use it."""
    return "/".join([host, *storage_dir(layout, members), filesystem, workload, f"dataset-{key}"])


def parse(relative: str) -> dict[str, Any] | None:
    """The cell a trial directory (relative to its run) stands for, or None when the path is not one.

    Every field is set: the ones that do not apply to the cell's kind read NOT_APPLICABLE."""
    match = _TRIAL_DIR.match(relative)
    if match is None:
        return None
    fileio = match["kind"] == "bs"
    return {
        "host": match["host"],
        "layout": match["layout"] or PLAIN,
        "members": int(match["members"] or 1),
        "filesystem": match["filesystem"],
        "workload": match["workload"],
        "variant": NOT_APPLICABLE if fileio else match["group"],
        "bp_size": NOT_APPLICABLE if fileio else match["size"],
        "subtest": match["group"] if fileio else NOT_APPLICABLE,
        "block_size": match["size"] if fileio else NOT_APPLICABLE,
        "threads": int(match["threads"]),
        "rate": int(match["rate"] or 0),
        "repeat": int(match["repeat"]),
    }

"""`innomatrix noise RUN [RUN ...]`: a host's run-to-run noise floor, recorded where later runs find it.

A comparison with one trial a side has no spread of its own to judge a difference by. The floor
gives it one: run one configuration several times on a host, in two or more runs, and `noise`
pools the spread of each configuration's trial medians across the runs, per host, workload,
server and storage (the plain device, or a layout over its members: a throttled disk and a cache
in front of it move differently), and writes each floor into each run's <host>/host.json under
`noise_floors`, with the device it was measured on (a layout's: its members). A later report or
compare finds, for what each side of a comparison ran (host and device or members, workload,
server flavor and release series, layout), the newest floor of exactly that among the runs
beside it (the same results directory): it judges 1-trial sides, and the drift of whole runs
when two runs are compared. A floor judges nothing else: an OLTP floor says little of tpcc, and
MariaDB's says nothing of MySQL.

A run moves as a whole too (three unchanged runs of the demo here read 589, 535 and 504 tps in
one cell, each the mean of 3 trials that agreed within 6 %), and how far is known only from the
runs: the floor's degrees of freedom are runs - 1, not trials - configurations. Two runs give
an honest but wide interval; five give a useful one.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path
from typing import Any

import pandas as pd

from innomatrix import layout, stats, tree
from innomatrix.record import Fields

NOISE_KEY = "noise_floors"
# Fewer trials of one configuration than this give a spread too rough to judge others by.
MIN_TRIALS = 3


class NoiseError(ValueError):
    """A run that cannot give a noise floor, or a host.json it cannot be kept in; says why."""


def device_of(run: Path, host: str, layout_name: str = stats.PLAIN) -> str:
    """What `layout_name`'s cells of `host` ran on in `run`, as the host's latest session there
    (host.json) names it: the plain device's identity, or for a layout its members' identities in
    the host's order (`members:<identity>,<identity>`): a layout's floor belongs to its disks."""
    path = run / host / layout.HOST_FILE
    if not os.path.lexists(path):
        raise NoiseError(f"{path}: missing; the noise floor belongs to a host and a device, and it names both")
    try:
        session = tree.read_json(path, tree.HOST_JSON_LIMIT)["sessions"][-1]
        if layout_name == stats.PLAIN:
            identity = session["device"]["identity"]
        else:
            identities = [member["identity"] for member in session["members"]]
            if not identities or not all(isinstance(one, str) and one for one in identities):
                raise NoiseError(f"{path}: the latest session names no members, or a member without its identity "
                                 f"({layout_name}'s floor belongs to its disks)")
            identity = "members:" + ",".join(identities)
    except tree.TreeError as exc:
        raise NoiseError(str(exc)) from None
    except (KeyError, IndexError, TypeError) as exc:
        raise NoiseError(f"{path}: no device identity in its latest session ({exc.__class__.__name__}: {exc})") from None
    if not isinstance(identity, str) or not identity:
        raise NoiseError(f"{path}: the latest session names no device")
    return identity


def measure(runs: list[Path], cells: pd.DataFrame, now: dt.datetime) -> tuple[list[stats.HostFloor], list[str]]:
    """Each host's floors from the ok trials of `runs` (`cells`: their cells tables together, with
    the run of each in `run`), one per workload and server it ran: each configuration's trials
    pooled across the runs, configurations with 2 or more trials pooled, at least one of them with
    MIN_TRIALS, in two runs or more, all on one device. Also what a host that got a floor ran too
    little of for another (`db1: oltp on mariadb 10.11 (lvm-cache-writeback): ok in 1 run(s), …`)."""
    floors, unmeasured = [], []
    names = "+".join(run.name for run in runs)
    by_name = {run.name: run for run in runs}
    for host in sorted(str(h) for h in cells["host"].unique()):
        mine = cells[cells["host"].astype(str) == host]
        ran = [run for run in runs if (run / host).is_dir()]
        if len(ran) < 2:
            raise NoiseError(f"{names}: {host} ran in {len(ran)} of these runs; a floor needs two or more (a whole run "
                             "moves too): run the configuration again under another run_name and pass both")
        most = _most_trials(mine)
        if most < MIN_TRIALS:
            raise NoiseError(f"{names}: {host} has no configuration with {MIN_TRIALS} trials that ended ok (at most "
                             f"{most}); run one configuration with repeats=3 or more in two or more runs, then innomatrix "
                             "noise on all of them")
        lacking, before = [], len(floors)
        # A floor per storage: the plain device's, and each layout's over its members (other disks).
        for layout_name, on_storage in mine.groupby("layout", sort=True):
            layout_name = str(layout_name)
            devices = {run: device_of(by_name[run], host, layout_name) for run in sorted(set(on_storage["run"]))}
            if len(set(devices.values())) != 1:
                raise NoiseError(f"{host} ran {_storage(layout_name)}on more than one device in these runs ("
                                 f"{', '.join(f'{device} in {run}' for run, device in devices.items())}): a floor belongs "
                                 "to one device")
            for (workload, server), measured in on_storage.groupby(["workload", "server"], sort=True):
                runs_here = sorted(set(measured.loc[measured["status"] == "ok", "run"]))
                if len(runs_here) < 2 or _most_trials(measured) < MIN_TRIALS:
                    # what it ran too little of gets no floor; the lines say which it got
                    ran = workload if server == stats.NOT_APPLICABLE else f"{workload} on {server}"  # fileio: no server
                    lacking.append(f"{ran}{_on(layout_name)}: ok in {len(runs_here)} run(s), at most "
                                   f"{_most_trials(measured)} trials of one configuration")
                    continue
                sd_log, _, _, trials = stats.pooled_spread(measured)
                floors.append(stats.HostFloor(
                    host=host, device=next(iter(devices.values())), sd_log=sd_log, df=len(runs_here) - 1,
                    trials=trials, run="+".join(runs_here), measured=now.strftime("%Y-%m-%dT%H:%M:%SZ"),
                    workload=str(workload), server=str(server), layout=layout_name))
        if len(floors) == before:
            raise NoiseError(f"{names}: {host} has no workload and server with {MIN_TRIALS} ok trials of one "
                             f"configuration in two or more runs ({'; '.join(lacking)}); run one configuration "
                             "with repeats=3 or more in two or more runs, then innomatrix noise on all of them")
        unmeasured += [f"{host}: {entry}" for entry in lacking]
    return floors, unmeasured


def _storage(layout_name: str) -> str:
    return "" if layout_name == stats.PLAIN else f"{layout_name} "


def _on(layout_name: str) -> str:
    return "" if layout_name == stats.PLAIN else f" ({layout_name})"


def _most_trials(cells: pd.DataFrame) -> int:
    ok = cells[cells["status"] == "ok"]
    return int(ok.groupby(list(stats.MATCH), sort=False)["throughput_median"].count().max()) if len(ok) else 0


def record(run: Path, floor: stats.HostFloor, measured_on: list[str]) -> tuple[Path, dict[str, Any] | None]:
    """Write the floor into the host's host.json (atomically, every session and every other floor
    kept); returns the path and the floor of the same device, workload, server and layout it
    replaced, if any."""
    path = run / floor.host / layout.HOST_FILE
    host_record = tree.read_json(path, tree.HOST_JSON_LIMIT)
    kept = host_record.get(NOISE_KEY) if isinstance(host_record.get(NOISE_KEY), list) else []
    entry = {
        "device": floor.device, "workload": floor.workload, "server": floor.server, "layout": floor.layout,
        "sd_log": floor.sd_log, "df": floor.df, "trials": floor.trials, "cov": floor.cov, "run": floor.run,
        "measured": floor.measured, "configurations": measured_on,
    }
    same = ("device", "workload", "server", "layout")
    replaced = next((old for old in kept if isinstance(old, dict) and all(old.get(k) == entry[k] for k in same)), None)
    host_record[NOISE_KEY] = [old for old in kept if old is not replaced] + [entry]
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_text(json.dumps(host_record, indent=2, sort_keys=True) + "\n")
    tmp.rename(path)
    return path, replaced


# What `noise` can have measured: a CoV of the trial medians far beyond 100 % (sd_log 2 is 730 %)
# is no floor of a benchmark host, and would overflow the interval's arithmetic.
SD_LOG = (0.0, 2.0)


def _floors_in(path: Path) -> list[stats.HostFloor]:
    """The floors a host.json holds (none where it cannot be read as JSON). A floor whose figures
    `noise` cannot have written is an error naming the file, not a verdict. A floor of the one
    kind kept before floors named their workload and server (`noise_floor`) judges nothing now."""
    try:
        found = tree.read_json(path, tree.HOST_JSON_LIMIT)
    except tree.TreeError:
        return []
    if not isinstance(found, dict) or found.get(NOISE_KEY) is None:
        return []
    fields = Fields(found, path)
    if not isinstance(found[NOISE_KEY], list):
        raise fields.fail(f"{NOISE_KEY} is not a list")
    def required(value: Any, name: str) -> Any:
        if value is None:  # a floor without its spread or degrees of freedom judges nothing
            raise fields.fail(f"{name} is missing")
        return value

    floors = []
    for index in range(len(found[NOISE_KEY])):
        at = f"{NOISE_KEY}.{index}"
        floors.append(stats.HostFloor(
            host=path.parent.name, device=fields.text(f"{at}.device") or "",
            sd_log=required(fields.number(f"{at}.sd_log", *SD_LOG), f"{at}.sd_log"),
            df=required(fields.integer(f"{at}.df", 1, 100_000), f"{at}.df"),
            trials=required(fields.integer(f"{at}.trials", 2, 10_000_000), f"{at}.trials"),
            run=fields.text(f"{at}.run") or "",
            measured=fields.text(f"{at}.measured") or "", workload=fields.text(f"{at}.workload") or "",
            server=fields.text(f"{at}.server") or "", layout=fields.text(f"{at}.layout") or stats.PLAIN))
    return floors


def _beside(run: Path, host: str) -> list[Path]:
    """The host.json of `host` in every run of the results directory that holds `run`: real
    directories only, so a symlink there leads nowhere outside the results."""
    paths = []
    for entry in sorted(os.scandir(run.parent), key=lambda entry: entry.name):
        host_dir = Path(entry.path) / host
        if entry.is_dir(follow_symlinks=False) and host_dir.is_dir() and not host_dir.is_symlink() and \
                (host_dir / layout.HOST_FILE).is_file():
            paths.append(host_dir / layout.HOST_FILE)
    return paths


def floors_for(run: Path, hosts: list[str]) -> stats.Floors:
    """(host, workload, server, layout) -> the newest floor recorded for it on the device (a
    layout's: the members) the host used in `run`, among the runs of the same results directory
    (`run` included)."""
    floors: stats.Floors = {}
    for host in hosts:
        devices: dict[str, str | None] = {}
        for path in _beside(run, host):
            for floor in _floors_in(path):
                if floor.layout not in devices:
                    try:
                        devices[floor.layout] = device_of(run, host, floor.layout)
                    except NoiseError:
                        devices[floor.layout] = None
                if floor.device == devices[floor.layout] and (
                        floor.key not in floors or floor.measured > floors[floor.key].measured):
                    floors[floor.key] = floor
    return floors


def _measured_by(cells: pd.DataFrame, floor: stats.HostFloor) -> pd.DataFrame:
    """The ok cells a floor was measured from."""
    return cells[(cells["host"].astype(str) == floor.host) & (cells["workload"] == floor.workload)
                 & (cells["server"] == floor.server) & (cells["status"] == "ok") & (cells["layout"] == floor.layout)]


def relative_step(cells: pd.DataFrame, floor: stats.HostFloor) -> float:
    """The step its trials' medians move in (stats.throughput_step), as a fraction of the median:
    the median over the floor's trials; NaN where unknown."""
    ok = _measured_by(cells, floor)
    if "throughput_step" not in ok:
        return float("nan")
    ok = ok[ok["throughput_median"] > 0]
    return float((ok["throughput_step"] / ok["throughput_median"]).median()) if len(ok) else float("nan")


def configurations(cells: pd.DataFrame, floor: stats.HostFloor) -> list[str]:
    """The configurations (filesystem/workload/variant/bp_size/threads) a floor pools."""
    ok = _measured_by(cells, floor)
    keys = [key for key in stats.MATCH if key not in ("layout", "members")]
    counts = ok.groupby(keys, sort=True)["throughput_median"].count()
    return ["/".join(part for name, value in zip(keys, key) if (part := stats.name_part(name, value)) is not None)
            for key, count in counts.items() if count >= 2]

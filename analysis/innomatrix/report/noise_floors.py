"""`innomatrix noise RUN [RUN ...]`: a host's run-to-run noise floor, recorded where later runs find it.

A comparison with one trial a side has no spread of its own to judge a difference by. The floor
gives it one: run one configuration several times on a host, in two or more runs, and `noise`
pools the spread of each configuration's trial medians across the runs, per host, and writes it
into each run's <host>/host.json under `noise_floor`, with the device it was measured on. A
later report or compare finds, for each host of its runs, the newest floor of the same host and
device among the runs beside it (the same results directory), and judges 1-trial sides by it.

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

NOISE_KEY = "noise_floor"
# Fewer trials of one configuration than this give a spread too rough to judge others by.
MIN_TRIALS = 3


class NoiseError(ValueError):
    """A run that cannot give a noise floor, or a host.json it cannot be kept in; says why."""


def device_of(run: Path, host: str) -> str:
    """The device identity of the host's latest session in `run` (host.json)."""
    path = run / host / layout.HOST_FILE
    if not os.path.lexists(path):
        raise NoiseError(f"{path}: missing; the noise floor belongs to a host and a device, and it names both")
    try:
        identity = tree.read_json(path, tree.HOST_JSON_LIMIT)["sessions"][-1]["device"]["identity"]
    except tree.TreeError as exc:
        raise NoiseError(str(exc)) from None
    except (KeyError, IndexError, TypeError) as exc:
        raise NoiseError(f"{path}: no device identity in its latest session ({exc.__class__.__name__}: {exc})") from None
    if not isinstance(identity, str) or not identity:
        raise NoiseError(f"{path}: the latest session names no device")
    return identity


def measure(runs: list[Path], cells: pd.DataFrame, now: dt.datetime) -> list[stats.HostFloor]:
    """Each host's floor from the ok trials of `runs` (`cells`: their cells tables together): each
    configuration's trials pooled across the runs, configurations with 2 or more trials pooled,
    at least one of them with MIN_TRIALS, all on one device."""
    floors = []
    names = "+".join(run.name for run in runs)
    for host in sorted(str(h) for h in cells["host"].unique()):
        mine = cells[cells["host"].astype(str) == host]
        ok = mine[mine["status"] == "ok"]
        most = int(ok.groupby(list(stats.MATCH), sort=False)["throughput_median"].count().max()) if len(ok) else 0
        ran = [run for run in runs if (run / host).is_dir()]
        if len(ran) < 2:
            raise NoiseError(f"{names}: {host} ran in {len(ran)} of these runs; a floor needs two or more (a whole run "
                             "moves too): run the configuration again under another run_name and pass both")
        if most < MIN_TRIALS:
            raise NoiseError(f"{names}: {host} has no configuration with {MIN_TRIALS} trials that ended ok (at most "
                             f"{most}); run one configuration with repeats=3 or more in two or more runs, then innomatrix "
                             "noise on all of them")
        devices = {run.name: device_of(run, host) for run in ran}
        if len(set(devices.values())) != 1:
            raise NoiseError(f"{host} ran on more than one device in these runs ("
                             f"{', '.join(f'{device} in {run}' for run, device in devices.items())}): a floor belongs "
                             "to one device")
        sd_log, _, _, trials = stats.pooled_spread(mine)
        floors.append(stats.HostFloor(host=host, device=next(iter(devices.values())), sd_log=sd_log, df=len(ran) - 1,
                                      trials=trials, run=names, measured=now.strftime("%Y-%m-%dT%H:%M:%SZ")))
    return floors


def record(run: Path, floor: stats.HostFloor, measured_on: list[str]) -> tuple[Path, dict[str, Any] | None]:
    """Write the floor into the host's host.json (atomically, every session kept); returns the
    path and the floor it replaced, if any."""
    path = run / floor.host / layout.HOST_FILE
    host_record = tree.read_json(path, tree.HOST_JSON_LIMIT)
    replaced = host_record.get(NOISE_KEY)
    host_record[NOISE_KEY] = {
        "device": floor.device, "sd_log": floor.sd_log, "df": floor.df, "trials": floor.trials,
        "cov": floor.cov, "run": floor.run, "measured": floor.measured, "configurations": measured_on,
    }
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_text(json.dumps(host_record, indent=2, sort_keys=True) + "\n")
    tmp.rename(path)
    return path, replaced


# What `noise` can have measured: a CoV of the trial medians far beyond 100 % (sd_log 2 is 730 %)
# is no floor of a benchmark host, and would overflow the interval's arithmetic.
SD_LOG = (0.0, 2.0)


def _floor_in(path: Path) -> stats.HostFloor | None:
    """The floor a host.json holds, or None where it holds none (or cannot be read as JSON). A
    floor whose figures `noise` cannot have written is an error naming the file, not a verdict."""
    try:
        found = tree.read_json(path, tree.HOST_JSON_LIMIT)
    except tree.TreeError:
        return None
    if not isinstance(found, dict) or found.get(NOISE_KEY) is None:
        return None
    fields = Fields(found, path)
    return stats.HostFloor(
        host=path.parent.name, device=fields.text(f"{NOISE_KEY}.device") or "",
        sd_log=fields.number(f"{NOISE_KEY}.sd_log", *SD_LOG), df=fields.integer(f"{NOISE_KEY}.df", 1, 100_000),
        trials=fields.integer(f"{NOISE_KEY}.trials", 2, 10_000_000), run=fields.text(f"{NOISE_KEY}.run") or "",
        measured=fields.text(f"{NOISE_KEY}.measured") or "")


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
    """host -> the newest floor recorded for that host and the device it used in `run`, among the
    runs of the same results directory (`run` included); hosts without one are left out."""
    floors: stats.Floors = {}
    for host in hosts:
        try:
            device = device_of(run, host)
        except NoiseError:
            continue
        candidates = [floor for path in _beside(run, host)
                      if (floor := _floor_in(path)) is not None and floor.device == device]
        if candidates:
            floors[host] = max(candidates, key=lambda floor: floor.measured)
    return floors


def configurations(cells: pd.DataFrame, host: str) -> list[str]:
    """The configurations (filesystem/workload/variant/bp_size/threads) a host's floor pools."""
    ok = cells[(cells["host"].astype(str) == host) & (cells["status"] == "ok")]
    counts = ok.groupby(list(stats.MATCH), sort=True)["throughput_median"].count()
    return ["/".join(str(part) for part in key if part != layout.NOT_APPLICABLE)
            for key, count in counts.items() if count >= 2]

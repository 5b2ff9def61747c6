"""`innomatrix noise RUN`: a host's run-to-run noise floor, recorded where later runs find it.

A comparison with one trial a side has no spread of its own to judge a difference by. The floor
gives it one: run one configuration several times on a host (a run made with repeats=5 or more),
and `noise` pools the spread of the trial medians per host and writes it into that run's
<host>/host.json under `noise_floor`, with the device it was measured on. A later report or
compare finds, for each host of its runs, the newest floor of the same host and device among
the runs beside it (the same results directory), and judges 1-trial sides against it.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import os
from pathlib import Path
from typing import Any

import pandas as pd

from innomatrix import layout, stats

NOISE_KEY = "noise_floor"
# Fewer trials of one configuration than this give a spread too rough to judge others by.
MIN_TRIALS = 3


class NoiseError(ValueError):
    """A run that cannot give a noise floor, or a host.json it cannot be kept in; says why."""


def device_of(run: Path, host: str) -> str:
    """The device identity of the host's latest session in `run` (host.json)."""
    path = run / host / layout.HOST_FILE
    try:
        record = json.loads(path.read_text())
        identity = record["sessions"][-1]["device"]["identity"]
    except FileNotFoundError:
        raise NoiseError(f"{path}: missing; the noise floor belongs to a host and a device, and it names both") from None
    except (OSError, ValueError, KeyError, IndexError, TypeError) as exc:
        raise NoiseError(f"{path}: no device identity in its latest session ({exc.__class__.__name__}: {exc})") from None
    if not isinstance(identity, str) or not identity:
        raise NoiseError(f"{path}: the latest session names no device")
    return identity


def measure(run: Path, cells: pd.DataFrame, now: dt.datetime) -> list[stats.HostFloor]:
    """Each host's floor from the run's ok trials: configurations with 2 or more trials pooled,
    at least one of them with MIN_TRIALS."""
    floors = []
    for host in sorted(str(h) for h in cells["host"].unique()):
        mine = cells[cells["host"].astype(str) == host]
        ok = mine[mine["status"] == "ok"]
        most = int(ok.groupby(list(stats.MATCH), sort=False)["throughput_median"].count().max()) if len(ok) else 0
        if most < MIN_TRIALS:
            raise NoiseError(f"{run}: {host} has no configuration with {MIN_TRIALS} trials that ended ok (at most "
                             f"{most}); run one configuration with repeats=5 or more, then innomatrix noise on that run")
        sd_log, df, _, trials = stats.pooled_spread(mine)
        floors.append(stats.HostFloor(host=host, device=device_of(run, host), sd_log=sd_log, df=df, trials=trials,
                                      run=run.name, measured=now.strftime("%Y-%m-%dT%H:%M:%SZ")))
    return floors


def record(run: Path, floor: stats.HostFloor, measured_on: list[str]) -> tuple[Path, dict[str, Any] | None]:
    """Write the floor into the host's host.json (atomically, every session kept); returns the
    path and the floor it replaced, if any."""
    path = run / floor.host / layout.HOST_FILE
    host_record = json.loads(path.read_text())
    replaced = host_record.get(NOISE_KEY)
    host_record[NOISE_KEY] = {
        "device": floor.device, "sd_log": floor.sd_log, "df": floor.df, "trials": floor.trials,
        "cov": floor.cov, "run": floor.run, "measured": floor.measured, "configurations": measured_on,
    }
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_text(json.dumps(host_record, indent=2, sort_keys=True) + "\n")
    tmp.rename(path)
    return path, replaced


def _floor_in(path: Path) -> stats.HostFloor | None:
    """The floor a host.json holds, or None: one that is absent or unreadable is not a floor."""
    try:
        found = json.loads(path.read_text()).get(NOISE_KEY)
        floor = stats.HostFloor(host=path.parent.name, device=str(found["device"]), sd_log=float(found["sd_log"]),
                                df=int(found["df"]), trials=int(found["trials"]), run=str(found["run"]),
                                measured=str(found["measured"]))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    return floor if floor.df > 0 and math.isfinite(floor.sd_log) and floor.sd_log >= 0 else None


def floors_for(run: Path, hosts: list[str]) -> stats.Floors:
    """host -> the newest floor recorded for that host and the device it used in `run`, among the
    runs of the same results directory (`run` included); hosts without one are left out."""
    floors: stats.Floors = {}
    for host in hosts:
        try:
            device = device_of(run, host)
        except NoiseError:
            continue
        candidates = [floor for path in run.parent.glob(f"*/{host}/{layout.HOST_FILE}")
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

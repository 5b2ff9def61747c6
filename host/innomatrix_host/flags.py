"""Why a trial's figures should not be taken at face value, each with its evidence: the one
definition the trial applies on the host (trial.json's `flags`, the end-of-play line) and the
report applies to what it loads (its flags column).

A flag is a dict: `flag` (a stable name), `label` (a few words for the end-of-play line), `text`
(one line with the figures) and `evidence` (the figures themselves). A figure that is unknown
(None or NaN: a collector that recorded nothing) raises no flag.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from . import collected, settings, stalls as stall_rules
from .stalls import CPU_FLOOR_PCT  # the CPU-bound flag's floor, one with a stall's "CPU saturated"
from .sysbench import episodes

# Below this mean of device reads per second over the measured window, the buffer pool holds the
# dataset: the trial measured memory, not the device.
READS_PER_S = 1.0


def _flag(name: str, label: str, text: str, **evidence: Any) -> dict[str, Any]:
    return {"flag": name, "label": label, "text": text, "evidence": evidence}


def _known(value: float | None) -> bool:
    return value is not None and not math.isnan(value)


def stalls(stalled: list[bool], interval_s: float, causes: list[str] | None = None) -> dict[str, Any] | None:
    """Measured intervals that did (next to) nothing (sysbench.stall_flags judges each); `causes`:
    each episode with what coincided with it (innomatrix_host.stalls.explain), when known."""
    runs = episodes(stalled)
    if not runs:
        return None
    count, longest_s = sum(length for _, length in runs), max(length for _, length in runs) * interval_s
    evidence: dict[str, Any] = {"intervals": count, "episodes": len(runs), "longest_s": longest_s}
    if causes is not None:
        evidence["causes"] = causes
    return _flag("stalls", "stalls", f"stalls: {count} intervals in {len(runs)} episodes (longest {longest_s:g} s)",
                 **evidence)


def saturated(figures: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A fixed-rate trial that fell behind its arrivals (sysbench.rate_figures says why): its
    latency grows with its length and its throughput is what the server could do, not the rate.
    Its reasons are joined by commas: a report joins a trial's flags with semicolons."""
    if not figures or not figures.get("saturated"):
        return None
    return _flag("saturated", "saturated", f"saturated at {figures['offered_tps']:g}/s: {', '.join(figures['reasons'])}",
                 offered_tps=figures["offered_tps"], achieved_tps=figures["achieved_tps"],
                 queue_length_end=figures["queue_length_end"], reasons=list(figures["reasons"]))


def resources(workload: str, device_reads_s: float | None, idle_pct: float | None, iowait_pct: float | None,
              reads_floor: float = READS_PER_S, cpu_floor: float = CPU_FLOOR_PCT) -> list[dict[str, Any]]:
    """What the measured window's means say the trial was bound by, if not the device.

    Raw-device cells have no buffer pool, and write tests read nothing on purpose; an I/O benchmark
    that keeps the CPU busy is still measuring the device: fileio cells get neither flag."""
    if workload == "fileio":
        return []
    found = []
    if _known(device_reads_s) and device_reads_s < reads_floor:
        found.append(_flag("buffer_pool_holds_dataset", "buffer pool holds the dataset",
                           f"buffer pool holds the dataset: device reads {device_reads_s:.2g}/s",
                           device_reads_s=device_reads_s, below=reads_floor))
    if _known(idle_pct) and _known(iowait_pct) and idle_pct < cpu_floor and iowait_pct < cpu_floor:
        found.append(_flag("cpu_bound", "CPU-bound", f"CPU-bound: idle {idle_pct:.0f} %, iowait {iowait_pct:.0f} %",
                           idle_pct=idle_pct, iowait_pct=iowait_pct, below=cpu_floor))
    return found


# A cache whose read hit ratio rose by more than this from the measured window's first half to its
# second was still warming while it was measured: its figures are of a cache on its way to what it
# holds, not of one in use (the seeds ran 7200-s trials for this).
WARMING_RISE = 0.05


def cache_warming(first_half: float | None, second_half: float | None) -> dict[str, Any] | None:
    """A flash cache still filling while the trial was measured (its read hit ratio by half)."""
    if not (_known(first_half) and _known(second_half)) or second_half - first_half <= WARMING_RISE:
        return None
    return _flag("cache_warming", "cache warming",
                 f"cache warming: read hit ratio {first_half:.2f} in the measured window's first half, "
                 f"{second_half:.2f} in its second", first_half=first_half, second_half=second_half, rise_above=WARMING_RISE)


def server(asked: Mapping[str, str | None], running: Mapping[str, str]) -> list[dict[str, Any]]:
    """A storage benchmark without native AIO, or with a setting the server changed, measures
    another configuration than the one named."""
    found = []
    if settings.native_aio_off(running):
        found.append(_flag("native_aio_off", "native AIO off",
                           "native AIO off: the server ran innodb_use_native_aio=OFF (see its mysqld.err)",
                           innodb_use_native_aio=running["innodb_use_native_aio"]))
    differences = settings.not_applied(asked, running)
    if differences:
        found.append(_flag("settings_not_applied", "settings not applied",
                           f"server ran without what my.cnf asked: {'; '.join(differences)}", differences=differences))
    return found


def labels(found: list[dict[str, Any]]) -> str:
    """`flagged: a, b` for an end-of-play line, or nothing."""
    return f"flagged: {', '.join(flag['label'] for flag in found)}" if found else ""


def of_trial(directory: Path, trial: Mapping[str, Any], stalled: list[bool] | None,
             last_t: float | None, measured_t: list[float] | None = None) -> list[dict[str, Any]]:
    """The flags of a trial just run, from its directory (my.cnf, variables.txt, vmstat.log,
    iostat.json, and for its stalls' causes status.log, flush_points.txt and mysqld.err) and its
    trial.json so far: `stalled` is its measured intervals' stalls, `measured_t` their times and
    `last_t` its driver's last interval (None: the log could not be read).
    What cannot be read raises no flag here; the report reads it again. In the report's order."""
    found = []
    durations, workload = trial["durations"], trial["cell"]["workload"]
    found += [flag for flag in [saturated(trial.get("rate"))] if flag]
    if stalled is not None and (trial.get("summary") or {}).get("intervals_measured"):
        causes = None
        if measured_t is not None and len(measured_t) == len(stalled) and any(stalled) \
                and (trial.get("times") or {}).get("started"):
            # The causes are the stalls flag's evidence: what goes wrong finding them costs that
            # evidence alone (said in its place), never the trial's other flags.
            try:
                causes = stall_rules.explain(episodes(stalled), measured_t,
                                             collected.stall_figures(directory, trial, measured_t),
                                             durations["report_interval_s"])
            except (OSError, ValueError, OverflowError) as exc:
                causes = [f"causes not read on the host ({type(exc).__name__}: {exc}); the report reads them again"]
        found += [stall for stall in [stalls(stalled, durations["report_interval_s"], causes)] if stall]
    started = (trial.get("times") or {}).get("started")
    if last_t is not None and started:
        window = collected.Window(dt.datetime.fromisoformat(started.replace("Z", "+00:00")), durations["warmup_s"],
                                  durations["report_interval_s"], last_t)
        vmstat = window.means(collected.vmstat_samples(collected.text(directory / "vmstat.log")))
        device = collected.kernel_name(trial["device"])
        iostat = window.means(collected.iostat_samples(collected.text(directory / "iostat.json"), device))
        found += resources(workload, iostat.get("r/s"), vmstat.get("id"), vmstat.get("wa"))
    halves = (trial.get("cache") or {}).get("read_hit_ratio_halves") or [None, None]
    found += [flag for flag in [cache_warming(*halves)] if flag]
    variables = collected.text(directory / "variables.txt")
    if variables:
        try:
            asked = settings.asked(collected.text(directory / "my.cnf"))
        except ValueError:  # MyCnfError: the report says why, as a note
            asked = {}
        found += server(asked, settings.effective(variables))
    return found

"""The report's tables, built from the per-cell table (stats.cells) — never from raw logs.

Each `Table` has `data` (numbers, written as CSV) and `display` (text, the same shape, with
flagged cells marked `*`, written as Markdown and shown in the HTML). A configuration's figure is
the median of its repeats' medians; a configuration is marked when any of its trials is flagged.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from innomatrix import capacity, layout, stats
from innomatrix_host import layouts as storage_layouts
from innomatrix.stats import FROM_DRIFT, FROM_FLOORS, MATCH, HostFloor, NoiseFloor

FLAG_MARK = "*"
# How a verdict says it leans on a host's noise floor (stats.between_runs); from the trials alone it says nothing.
SOURCE_SHOWN = {FROM_FLOORS: "host noise floor", FROM_DRIFT: "host noise floor: run drift"}
# A verdict's interval is "mostly steps" where the medians' steps (stats.between_runs) are more than this
# share of its variance.
MOSTLY_STEPS = 0.5
# The columns that name a configuration in a comparison, in the order they are shown
# (host_a and host_b: the pair of hosts of one run compared by stats.compare_hosts).
COMPARE_KEYS = ("host_a", "host_b", "layout_a", "layout_b", "members_a", "members_b", "filesystem_a", "filesystem_b", "host", *MATCH)


@dataclass
class Table:
    name: str
    title: str
    data: pd.DataFrame
    display: pd.DataFrame
    notes: list[str] = field(default_factory=list)

    def write(self, directory: Path) -> list[Path]:
        directory.mkdir(parents=True, exist_ok=True)
        csv_path = directory / f"{self.name}.csv"
        md_path = directory / f"{self.name}.md"
        self.data.to_csv(csv_path, index=False)
        md_path.write_text(f"## {self.title}\n\n{markdown(self.display)}\n" +
                           "".join(f"\n{note}\n" for note in self.notes))
        return [csv_path, md_path]


def fmt(value: object, digits: int = 1) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if isinstance(value, bool):
        return "yes" if value else ""
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    return str(value)


def markdown(frame: pd.DataFrame) -> str:
    """A GitHub-style pipe table; numbers right-aligned."""
    header = [str(c) for c in frame.columns]
    rows = [[str(v).replace("|", "\\|") for v in row] for row in frame.itertuples(index=False)]
    numeric = [all(_looks_numeric(row[i]) for row in rows) and rows != [] for i in range(len(header))]
    lines = ["| " + " | ".join(header) + " |",
             "|" + "|".join("---:" if numeric[i] else "---" for i in range(len(header))) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def truthy(value: object) -> bool:
    """A flag cell that may be missing (NaN) or a numpy bool."""
    return value is not None and not pd.isna(value) and bool(value)  # type: ignore[call-overload]


def _looks_numeric(text: str) -> bool:
    stripped = text.rstrip(FLAG_MARK).replace(",", "").replace("–", "")
    try:
        float(stripped or "0")
    except ValueError:
        return False
    return True


def _bp_order(cells: pd.DataFrame) -> list[str]:
    sizes = cells[["bp_size", "bp_bytes"]].drop_duplicates().sort_values(["bp_bytes", "bp_size"])
    return [f"bp-{size}" for size in sizes["bp_size"]]


def _pivot(cells: pd.DataFrame, groups: list[str], rows: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Median of the repeats' medians per (groups, rows, bp), and whether any trial there is flagged."""
    keyed = cells.assign(bp=["bp-" + s for s in cells["bp_size"]])
    keys = [*groups, rows, "bp"]
    median = keyed.groupby(keys, sort=False)["throughput_median"].median().unstack("bp")
    flagged = keyed.groupby(keys, sort=False)["flagged"].any().unstack("bp")
    order = [bp for bp in _bp_order(cells) if bp in median.columns]
    median, flagged = median.reindex(columns=order), flagged.reindex(columns=order)
    median = median.sort_index()
    flagged = flagged.reindex(median.index)
    return median, flagged


def _display(median: pd.DataFrame, flagged: pd.DataFrame) -> pd.DataFrame:
    text = median.copy().astype(object)
    for column in median.columns:
        text[column] = [fmt(v) + (FLAG_MARK if truthy(f) else "") for v, f in zip(median[column], flagged[column])]
    return text


def _flag_note(cells: pd.DataFrame) -> list[str]:
    flagged = cells[cells["flagged"]]
    if flagged.empty:
        return []
    return [f"{FLAG_MARK} flagged (shown, not dropped): " + grouped_flags(zip(flagged["trial"], flagged["flags"]))]


# How many trials a footnote names for one kind of flag before it counts the rest.
NAMED_TRIALS = 6


def grouped_flags(flags_by_trial: Iterable[tuple[str, str]]) -> str:
    """Flags grouped by kind (the text before its first colon: "stalls", "buffer pool holds the
    dataset"), each with the trials it covers, so twelve trials flagged alike read as one line;
    each trial's own figures are in the table of every trial."""
    trials_of: dict[str, list[str]] = {}
    for trial, flags in flags_by_trial:
        for flag in filter(None, str(flags).split("; ")):
            trials_of.setdefault(flag.split(":", 1)[0].strip(), []).append(str(trial))
    parts = []
    for kind, trials in trials_of.items():
        named = ", ".join(dict.fromkeys(trials[:NAMED_TRIALS]))
        more = f" and {len(trials) - NAMED_TRIALS} more" if len(trials) > NAMED_TRIALS else ""
        parts.append(f"{kind} ({len(trials)} trial{'s' if len(trials) != 1 else ''}: {named}{more})")
    return "; ".join(parts)


def _unit(cells: pd.DataFrame) -> str:
    units = sorted({str(u) for u in cells["unit"].dropna()})
    return "/".join(units) or "throughput"


def storage_keys(cells: pd.DataFrame) -> list[str]:
    """The layout and its member count as keys of a table, where the run has a layout beside the
    plain device; a run on plain devices alone reads as it always did."""
    return ["layout", "members"] if "layout" in cells and (cells["layout"] != layout.PLAIN).any() else []


def server_cells(cells: pd.DataFrame) -> pd.DataFrame:
    """The cells that ran a server; fileio cells have no variant or buffer pool and get their own tables."""
    return cells[cells["workload"] != "fileio"]


def layout_by_members(cells: pd.DataFrame) -> Table | None:
    """Median throughput against member count per layout (seed 001's figures: bandwidth and IOPS
    versus the number of SSDs per RAID level), each beside its ratio to the layout's fewest
    members; fileio in MiB/s and IOPS. None without a layout other than plain."""
    table = cells[cells["layout"] != layout.PLAIN]
    if table.empty:
        return None
    table = table.assign(iops=table["throughput_median"] * (1 << 20) / table["block_bytes"].where(table["block_bytes"] > 0))
    groups = ["host", "layout", "filesystem", "workload", "variant", "bp_size", "subtest", "block_size", "threads"]
    by_members = table.groupby([*groups, "members"], sort=True)
    median = by_members["throughput_median"].median().unstack("members")
    iops = by_members["iops"].median().unstack("members")
    flagged = by_members["flagged"].any().unstack("members").fillna(False)
    # Each row's own fewest members: a RAID5 starts at 3 where a RAID0 starts at 1.
    fewest_members = median.notna().idxmax(axis=1)
    fewest = median.bfill(axis=1).iloc[:, 0]
    data = pd.concat({"median": median, "iops": iops, "ratio": median.div(fewest, axis=0)}, axis=1)
    data.columns = [f"{kind}_m{members}" for kind, members in data.columns]
    data = data.reset_index()
    data.insert(len(groups), "unit", [_unit(table[table["workload"] == w]) for w in data["workload"]])
    display = pd.DataFrame(
        {f"m{members}": [fmt(m, 1) + (f" ({fmt(i, 0)} IOPS)" if not pd.isna(i) else "")
                         + (f" ×{fmt(r, 2)}" if members != first and not pd.isna(m) else "")
                         + (f" {FLAG_MARK}" if truthy(f) else "")
                         for m, i, r, f, first in zip(median[members], iops[members], median[members] / fewest,
                                                      flagged[members], fewest_members)]
         for members in median.columns},
        index=median.index).reset_index()
    display.insert(len(groups), "unit", data["unit"])
    shown = [c for c in display.columns if not (display[c].astype(str) == layout.NOT_APPLICABLE).all()]
    return Table("layout_by_members", "Median throughput by member count, per layout (×: to the fewest members)",
                 data, display[shown], _flag_note(table))


def cache_layouts(cells: pd.DataFrame) -> Table | None:
    """Seed 000's table: median throughput over the backing device alone, the cache device alone and
    each cache in front of the backing device, per buffer pool, with what the cache's own counters
    said (medians of the trials' read and write hit ratios and of their dirty data at the end). The
    ratios between the layouts, with their intervals and verdicts, are the layout-vs-layout table's.
    None when no trial ran on a layout of the cache family."""
    family = [name for name, params in storage_layouts.LAYOUTS.items()
              if params.get("fixed_members") == len(storage_layouts.CACHE_ROLES)]
    table = cells[cells["layout"].isin(family)]
    if table.empty:
        return None
    groups = ["host", "layout", "filesystem", "workload", "variant", "bp_size", "subtest", "block_size", "threads"]
    data = table.groupby(groups, sort=True).agg(
        trials=("trial", "size"), throughput_median=("throughput_median", "median"),
        cache_read_hit_ratio=("cache_read_hit_ratio", "median"), cache_write_hit_ratio=("cache_write_hit_ratio", "median"),
        cache_dirty_mib_end=("cache_dirty_mib_end", "median"), cache_start=("cache_start", "first"),
        cache_blocks_at_start=("cache_blocks_at_start", "median"), flagged=("flagged", "any")).reset_index()
    data.insert(len(groups), "unit", [_unit(table[table["workload"] == w]) for w in data["workload"]])
    display = data[[*groups, "unit", "trials"]].copy()
    display["median"] = [fmt(v) + (f" {FLAG_MARK}" if truthy(f) else "")
                         for v, f in zip(data["throughput_median"], data["flagged"])]
    display["start"] = [str(v) or layout.NOT_APPLICABLE for v in data["cache_start"]]
    display["blocks cached at start"] = [fmt(v, 0) for v in data["cache_blocks_at_start"]]
    display["read hit ratio"] = [fmt(v, 3) for v in data["cache_read_hit_ratio"]]
    display["write hit ratio"] = [fmt(v, 3) for v in data["cache_write_hit_ratio"]]
    display["dirty at end (MiB)"] = [fmt(v, 1) for v in data["cache_dirty_mib_end"]]
    shown = [c for c in display.columns if not (display[c].astype(str) == layout.NOT_APPLICABLE).all()]
    notes = ["A cache layout's members: the backing device first, the cache device second (the host's devices "
             "in that order). Hit ratios and dirty data: the cache's own counters (dmsetup status; a bcache's "
             "sysfs) over the measured window, – where the layout has no cache (a device alone) or the cache "
             "does not count it (dm-writecache keeps no dirty count, bcache no write hits). Start: the cache as each trial found it, warm (as the load, "
             "the trials before and the trial's restore of the datadir left it) or cold (made anew, empty, "
             "before the trial's server started: the trial measures it filling); the blocks it held then, "
             "median of the trials.", *_flag_note(table)]
    return Table("cache_layouts", "Flash cache: median throughput over the backing device, the cache device and "
                 "each cache in front of the backing device", data, display[shown], notes)


def bytes_to_flash(cells: pd.DataFrame) -> Table | None:
    """The write amplification of each trial at three levels, per transaction: what InnoDB wrote
    (its data and redo), what the block layer sent the device under test (iostat), both over the
    measured window, and what the disks' own counters (NVMe SMART data units) say they were sent
    over the driver's whole run. None unless some trial's disks could say; where a disk could not,
    the note says why (a loop device, a virtio disk have no such counters), never a 0."""
    counted = cells[cells["flash_mib_written"].notna()]
    if counted.empty:
        return None
    columns = ["trial", "innodb_bytes_per_trx", "device_bytes_per_trx", "flash_bytes_per_trx", "flash_mib_written",
               "flash_mib_sent", "flash_disks", "flash_unread"]
    data = counted[columns].reset_index(drop=True)
    display = pd.DataFrame({
        "trial": data["trial"],
        "InnoDB (B/trx)": [fmt(v, 0) for v in data["innodb_bytes_per_trx"]],
        "block layer (B/trx)": [fmt(v, 0) for v in data["device_bytes_per_trx"]],
        "flash (B/trx)": [fmt(v, 0) for v in data["flash_bytes_per_trx"]],
        "flash written (MiB)": [fmt(v, 1) for v in data["flash_mib_written"]],
        "kernel sent them (MiB)": [fmt(v, 1) for v in data["flash_mib_sent"]],
        "disks counted": data["flash_disks"],
    })
    notes = ["InnoDB and block layer: the measured window; flash: the disks' own counters (NVMe SMART data units "
             "of 512 000 bytes) read just before the driver started and just after it ended, so the whole run, "
             "warmup included. On a layout, the sum over the members that could say.",
             "Kernel sent them: the sectors the kernel wrote to those same disks over the same span (their "
             "/sys/class/block stat files); the flash's count should match it to a data unit or so. More "
             "written than sent is the disk's own doing, or its counters misread."]
    # Every trial's disks that could not say, the trials left out of the table too.
    unread = sorted({reason for text in cells["flash_unread"] for reason in str(text).split("; ") if reason})
    if unread:
        notes.append("Not counted: " + "; ".join(unread[:10]) + (f" and {len(unread) - 10} more" if len(unread) > 10 else ""))
    return Table("bytes_to_flash", "Bytes written per transaction: InnoDB, the block layer and the flash's own count",
                 data, display, notes)


# The percentiles of a fixed-rate configuration's merged latency histogram.
RATE_PERCENTILES = (50, 95, 99, 99.9)


def closed_loop(cells: pd.DataFrame) -> pd.DataFrame:
    """The closed-loop cells (threads as fast as they go), which every throughput table and verdict
    is about; a fixed-rate cell's throughput is its offered rate, and has a table of its own."""
    return cells[cells["rate"] == 0] if "rate" in cells else cells


def fixed_rate(cells: pd.DataFrame, histograms: dict[str, list[tuple[float, int]]],
               th: stats.Thresholds = stats.DEFAULTS, fleet: bool = False) -> Table | None:
    """Each fixed-rate configuration: the rate offered, the median tps achieved, and p50 … p99.9
    from the merged latency histograms of its ok trials (sysbench.merge_histograms: all their
    measured events, never an average of percentiles); a saturated trial is marked and counted.
    `fleet`: each configuration like hosts ran (fleet_cells), every host's trials merged as one, at
    the rates every one of them ran, up to the first one a host lacks. None without such cells."""
    table = cells[cells["rate"] > 0] if "rate" in cells else cells.iloc[0:0]
    fleet_notes: list[str] = []
    if fleet:
        table, left = fleet_cells(table, histograms)
        if table.empty and left:  # nothing merged, and why: said all the same
            why = pd.DataFrame({"left out of the fleet's merge": left})
            return Table("fixed_rate_fleet", "Fixed-rate trials of like hosts: none merged", why, why)
        fleet_notes = [f"{FLEET_NOTE} {'; '.join(left)}."] if left else []
    if table.empty:
        return None
    hosts = ["device_model", "hosts"] if fleet else ["host"]
    groups = [*hosts, *_rate_configuration(table), "rate"]
    rows = []
    for key, group in table.groupby(groups, sort=True):
        ok = group[group["status"] == "ok"]
        kept = [histograms[trial] for trial in ok["trial"] if trial in histograms]
        fell_behind = ok["saturated"]
        saturated = int(group["saturated"].sum())
        row = dict(zip(groups, key))
        row.update(trials=len(ok), achieved_tps_median=ok["throughput_median"].median(), saturated=saturated,
                   events=sum(events for histogram in kept for _, events in histogram),
                   flagged=bool(group["flagged"].any()))
        for pct in RATE_PERCENTILES:
            row[f"p{pct:g}_ms"], row[f"p{pct:g}_low_ms"], row[f"p{pct:g}_high_ms"] = stats.merged_percentile(kept, pct)
        # Met: the SLA percentile of every event within the limit (read off the merge, without a
        # bootstrap), and no trial that fell behind.
        row["meets_sla"], _ = capacity.point_met(kept, bool(saturated), th.sla_percentile, th.sla_ms)
        # Surely met or missed: every trial surely on the same side (what a verdict between capacities needs).
        row["sla_outcome"] = capacity.outcome([capacity.trial_side(histograms.get(trial), bool(behind),
                                                                   th.sla_percentile, th.sla_ms)
                                               for trial, behind in zip(ok["trial"], fell_behind)])
        rows.append(row)
    data = pd.DataFrame(rows)
    display = data[groups].copy()
    display["achieved tps"] = [fmt(value, 1) + (f" {FLAG_MARK}" if flagged else "")
                               for value, flagged in zip(data["achieved_tps_median"], data["flagged"])]
    for pct in RATE_PERCENTILES:
        display[f"p{pct:g} ms"] = [fmt(value, 3) + ("" if pd.isna(low) else f" ({fmt(low, 3)}–{fmt(high, 3)})")
                                   for value, low, high in zip(data[f"p{pct:g}_ms"], data[f"p{pct:g}_low_ms"],
                                                               data[f"p{pct:g}_high_ms"])]
    display[f"p{th.sla_percentile:g} ≤ {th.sla_ms:g} ms"] = ["yes" if met else "no" for met in data["meets_sla"]]
    display["every trial"] = data["sla_outcome"]
    display["trials"] = data["trials"]
    display["saturated"] = [f"{count} of {trials}" if count else "" for count, trials in zip(data["saturated"],
                                                                                          data["trials"])]
    shown = [c for c in display.columns if not (display[c].astype(str) == layout.NOT_APPLICABLE).all()]
    notes = [f"Percentiles: of the merged histograms of a configuration's ok trials (every measured event once); "
             f"from {stats.PERCENTILE_INTERVAL_MIN_TRIALS} trials on, with a 95 % bootstrap interval over trials, "
             "which is narrow with few trials (see README).",
             f"Every trial: met (missed) when each ok trial surely meets (misses) p{th.sla_percentile:g} ≤ "
             f"{th.sla_ms:g} ms: so few (many) of its events beyond the limit that a trial right at it would show "
             f"that few (many) less than {capacity.SURE_LEVEL:.0%} of the time; a trial that saturated misses it. "
             f"{_fewest_events_note(th.sla_percentile)} Unsure when the trials disagree or with fewer than "
             f"{capacity.MIN_TRIALS} trials. Only these decide a verdict between capacities."]
    if fleet:
        return Table("fixed_rate_fleet", "Fixed-rate trials of the configurations like hosts ran (one device model, "
                     "one server), every host's trials merged: achieved tps and latency percentiles (ms, every "
                     "measured event of them all)", data, display[shown], fleet_notes + notes + _flag_note(table))
    return Table("fixed_rate", "Fixed-rate trials: achieved tps and latency percentiles of the merged histograms "
                 "(ms, every measured event of the configuration's trials)", data, display[shown],
                 notes + _flag_note(table))


def fleet_cells(fixed: pd.DataFrame, histograms: dict[str, list[tuple[float, int]]]) -> tuple[pd.DataFrame, list[str]]:
    """The fixed-rate cells a fleet's merge may take, with a `hosts` column, and what it left out
    (a line each).

    Hosts are alike when their trials name one device model and one server (a host whose device the
    record cannot name, or whose trials name two, is never alike). Of a configuration two or more
    like hosts ran, the rates merged are those every one of them has an ok trial with a histogram
    at, up to the first rate one of them lacks: a merge at one rate of some hosts and at the next of
    others draws a capacity no one fleet has, and a capacity read over a rate left out would jump it."""
    empty = fixed.iloc[0:0].assign(hosts=pd.Series(dtype=object))
    if fixed.empty or "device_model" not in fixed or fixed["host"].nunique() < 2:
        return empty, []
    configuration = _rate_configuration(fixed)
    fixed = fixed.reset_index(drop=True).assign(device_model=lambda f: f["device_model"].fillna("").astype(str))
    kept, left = [], []
    usable = (fixed["status"] == "ok") & fixed["trial"].isin(list(histograms))
    for key, ran in fixed.groupby(configuration, sort=True):
        if ran["host"].nunique() < 2:
            continue
        named = ", ".join(f"{column}={part}" for column, part in zip(configuration, key if isinstance(key, tuple) else (key,)))
        models = ran.groupby("host", sort=True)["device_model"].unique()
        unnamed = [str(host) for host, names in models.items() if len(names) == 1 and names[0] == ""]
        mixed = [f"{host} ({' / '.join(name or 'none' for name in sorted(names))})"
                 for host, names in models.items() if len(names) > 1]
        if unnamed:
            left.append(f"{named}: {', '.join(unnamed)} left out, no device model recorded")
        if mixed:
            left.append(f"{named}: {', '.join(mixed)} left out, its trials name more than one device model")
        alike_hosts = {host: names[0] for host, names in models.items() if len(names) == 1 and names[0] != ""}
        by_model: dict[str, list[str]] = {}
        for host, model in alike_hosts.items():
            by_model.setdefault(model, []).append(str(host))
        if len(by_model) > 1:
            each = "; ".join(f"{model}: {', '.join(hosts)}" for model, hosts in sorted(by_model.items()))
            merged = [model for model, hosts in sorted(by_model.items()) if len(hosts) > 1]
            alone = [f"{hosts[0]} ({model})" for model, hosts in sorted(by_model.items()) if len(hosts) == 1]
            what = ([f"the hosts of {' and of '.join(merged)} merged apart"] if merged else []) + (
                [f"{', '.join(alone)} not merged, alone on its model"] if alone else [])
            left.append(f"{named}: unlike devices ({each}): {'; '.join(what)} (`compare --by host` divides them)")
        for model, hosts in sorted(by_model.items()):
            if len(hosts) < 2:
                continue
            alike = ran[ran["host"].astype(str).isin(hosts)]
            for rate, at in alike.groupby("rate", sort=True):
                with_events = set(map(str, at.loc[usable.loc[at.index], "host"]))
                if with_events != set(hosts):
                    missing = ", ".join(h for h in hosts if h not in with_events)
                    left.append(f"{named}, {model}: {rate:g}/s and every rate above it left out, {missing} without an "
                                f"ok trial with a histogram at {rate:g}/s")
                    break
                kept.append(at.assign(hosts=", ".join(hosts)))
    return (pd.concat(kept) if kept else empty), left


FLEET_NOTE = "Left out of the fleet's merge:"


def _rate_configuration(cells: pd.DataFrame) -> list[str]:
    """What names a fixed-rate configuration, the host and the rate aside. The server names the
    floor a verdict between runs is judged by (a host runs one in a run)."""
    return [*storage_keys(cells), "filesystem", "workload", *(["server"] if "server" in cells else []),
            "variant", "bp_size", "threads"]


def _fewest_events_note(percentile: float) -> str:
    fewest = capacity.fewest_events(percentile)
    if fewest is None:
        return f"No trial surely meets a p{percentile:g} (a maximum): too few events, whatever it ran."
    return (f"A trial needs at least {fewest} events, none beyond the limit, to surely meet a p{percentile:g}: "
            "a rate whose trials hold fewer is \"too few events\" (a longer duration or a higher rate gives more).")


def rate_configurations(fixed: Table) -> Iterator[tuple[dict[str, Any], pd.DataFrame]]:
    """The configurations of the fixed-rate table, each as its naming columns and its rows by rate."""
    keys = [c for c in fixed.data.columns if c in ("host", "device_model", "hosts", "layout", "members", "filesystem",
                                                    "workload", "server", "variant", "bp_size", "threads")]
    for key, block in fixed.data.groupby(keys, sort=True):
        yield dict(zip(keys, key if isinstance(key, tuple) else (key,))), block.sort_values("rate")


def capacity_at_sla(fixed: Table | None, th: stats.Thresholds = stats.DEFAULTS) -> Table | None:
    """Per configuration, the highest rate run that meets the SLA with every lower rate meeting it too
    (the capacity, as far as the rates run can tell it), the bracket its trials make sure of
    (capacity.bracket), and the lowest rate at which a trial saturated. A rate that saturated never
    counts as met. None without fixed-rate cells."""
    if fixed is None or "rate" not in fixed.data:  # none, or a fleet's "none merged" and why
        return None
    rows = []
    for labels, block in rate_configurations(fixed):
        met = block["meets_sla"].to_numpy(dtype=bool)
        held = int(np.argmin(met)) if not met.all() else len(met)  # the rates met before the first miss
        saturating = block.loc[block["saturated"] > 0, "rate"]
        sure = capacity.bracket([int(rate) for rate in block["rate"]], list(block["sla_outcome"]))
        rows.append({**labels,
                     "capacity_tps": int(block["rate"].iloc[held - 1]) if held else None,
                     "first_missed_tps": int(block["rate"].iloc[held]) if held < len(met) else None,
                     "surely_met_tps": sure.met, "surely_missed_tps": sure.missed,
                     "saturates_at_tps": int(saturating.min()) if len(saturating) else None,
                     "rates_run": len(block)})
    rates = ("capacity_tps", "first_missed_tps", "surely_met_tps", "surely_missed_tps", "saturates_at_tps")
    table = pd.DataFrame(rows).astype(dict.fromkeys(rates, "Int64"))  # a rate or nothing, never 200.0 or NaN
    display = table[list(labels)].copy()
    label = f"p{th.sla_percentile:g} ≤ {th.sla_ms:g} ms"
    for column, title, none in zip(("capacity_tps", "first_missed_tps"), (f"capacity at {label} (tps)",
                                                                          "first rate missed"),
                                   ("below every rate run", "none (run higher rates)")):
        display[title] = [none if pd.isna(value) else str(value) for value in table[column]]
    display["sure (every trial)"] = [bracket_of(row).describe() for _, row in table.iterrows()]
    display["saturates at"] = ["–" if pd.isna(value) else str(value) for value in table["saturates_at_tps"]]
    name, title = (("capacity_at_sla_fleet", f"Capacity at {label} of like hosts, every host's trials merged")
                   if fixed.name == "fixed_rate_fleet" else
                   ("capacity_at_sla", f"Capacity at {label}: the highest rate run that meets it"))
    return Table(name, title, table, display,
                 [note for note in fixed.notes if note.startswith(FLEET_NOTE)] +
                 ["From the rates run (listed in `rates`, or found by the capacity search, rates=auto): the "
                  "capacity lies between it and the first rate missed. "
                  f"Sure: at or above the highest rate every trial surely met, with every rate below it (rates of "
                  f"too few events passed over), and below the lowest rate every trial surely missed, with every "
                  f"rate above it (at least {capacity.MIN_TRIALS} trials a rate); verdicts between capacities stand "
                  "on these alone."])


def bracket_of(row: pd.Series | dict[str, Any]) -> capacity.Bracket:
    """A capacity_at_sla row's sure bracket."""
    return capacity.Bracket(*(None if pd.isna(row[column]) else int(row[column])
                              for column in ("surely_met_tps", "surely_missed_tps")))


def _capacity_of(row: pd.Series | dict[str, Any]) -> int | None:
    return None if pd.isna(row["capacity_tps"]) else int(row["capacity_tps"])


# What a capacity comparison within a run may vary: one of these, the others the same.
CAPACITY_VARIED = ("layout", "members", "filesystem", "variant", "bp_size", "threads")


def capacity_within(capacities: Table | None, th: stats.Thresholds = stats.DEFAULTS) -> Table | None:
    """Capacity A ÷ B for every pair of configurations of one host that differ in one setting
    (filesystem, variant, buffer pool, layout, members or threads): the ratio, the interval their sure
    brackets allow, and the verdict (capacity.verdict). Hosts are not compared here: each host's run
    moves by its own drift. None with fewer than two configurations."""
    if capacities is None or len(capacities.data) < 2:
        return None
    data = capacities.data
    labels = [c for c in data.columns if c in CAPACITY_SETTINGS]
    rows = []
    for i, j in ((i, j) for i in range(len(data)) for j in range(i + 1, len(data))):
        a, b = data.iloc[i], data.iloc[j]
        varied = [c for c in labels if a[c] != b[c]]
        if len(varied) != 1 or varied[0] not in CAPACITY_VARIED:
            continue
        found = capacity.verdict(bracket_of(a), bracket_of(b), _capacity_of(a), _capacity_of(b))
        rows.append(_capacity_row({c: a[c] for c in labels if c != varied[0]}, varied[0], a[varied[0]], b[varied[0]],
                                  a, b, found))
    return _capacity_table("capacity_compare", f"Capacity at p{th.sla_percentile:g} ≤ {th.sla_ms:g} ms, "
                           "configuration A ÷ B within the run", rows)


def capacity_between(capacities_a: Table | None, capacities_b: Table | None, name_a: str, name_b: str,
                     floors_a: stats.Floors, floors_b: stats.Floors,
                     th: stats.Thresholds = stats.DEFAULTS) -> Table | None:
    """Capacity RUN_A ÷ RUN_B for each configuration both runs ran at fixed rates: each run also
    moves as a whole, so the interval is widened by the hosts' drift (their noise floors, each of
    the server its run ran) and there is no verdict without them. None when no configuration matches."""
    if capacities_a is None or capacities_b is None:
        return None
    side_a, side_b = _settings(capacities_a.data), _settings(capacities_b.data)
    b_rows = {tuple(row[c] for c in CAPACITY_SETTINGS): row for _, row in side_b.iterrows()}
    rows = []
    for _, a in side_a.iterrows():
        key = tuple(a[c] for c in CAPACITY_SETTINGS)
        if key not in b_rows:
            continue
        b = b_rows[key]
        drift = capacity.run_drift(_floor(floors_a, a), _floor(floors_b, b), th.confidence)
        found = capacity.verdict(bracket_of(a), bracket_of(b), _capacity_of(a), _capacity_of(b), drift,
                                 across_runs=True)
        rows.append(_capacity_row(dict(zip(CAPACITY_SETTINGS, key)), "run", name_a, name_b, a, b, found))
    return _capacity_table("capacity_compare", f"Capacity at p{th.sla_percentile:g} ≤ {th.sla_ms:g} ms, "
                           f"{name_a} ÷ {name_b}", rows)


# What names a configuration between two runs: everything but the server (comparing servers is a use).
CAPACITY_SETTINGS = ("host", "workload", *CAPACITY_VARIED)


def capacity_hosts(capacities: Table | None, floors: stats.Floors,
                   th: stats.Thresholds = stats.DEFAULTS) -> Table | None:
    """Capacity host A ÷ host B for each configuration two hosts of one run both ran at fixed
    rates (device A ÷ device B, in a fleet of a device a host): each host moves as a whole by its
    own drift, as two runs do, so the interval is widened by both hosts' floors and there is no
    verdict without them. None when no two hosts ran one configuration."""
    if capacities is None:
        return None
    settings = [column for column in CAPACITY_SETTINGS if column != "host"]
    groups: dict[tuple[Any, ...], list[pd.Series]] = {}
    for _, row in _settings(capacities.data).iterrows():
        groups.setdefault(tuple(row[c] for c in settings), []).append(row)
    rows = []
    for key, group in groups.items():
        ordered = sorted(group, key=lambda row: str(row["host"]))
        for i, j in ((i, j) for i in range(len(ordered)) for j in range(i + 1, len(ordered))):
            a, b = ordered[i], ordered[j]
            drift = capacity.run_drift(_floor(floors, a), _floor(floors, b), th.confidence)
            found = capacity.verdict(bracket_of(a), bracket_of(b), _capacity_of(a), _capacity_of(b), drift,
                                     across_runs=True)
            row = _capacity_row(dict(zip(settings, key)), "host", a["host"], b["host"], a, b, found)
            if "server" in a:  # hosts may run different servers: each side's is named, beside the hosts
                items = list(row.items())
                at = [name for name, _ in items].index("b") + 1
                row = dict([*items[:at], ("server_a", a["server"]), ("server_b", b["server"]), *items[at:]])
            rows.append(row)
    return _capacity_table("capacity_compare", f"Capacity at p{th.sla_percentile:g} ≤ {th.sla_ms:g} ms, "
                           "host A ÷ host B", rows)


def _settings(data: pd.DataFrame) -> pd.DataFrame:
    """A capacity table with every setting a column: a run on plain devices alone has no layout
    and members columns (storage_keys), and reads as the plain device, one member."""
    return data.assign(**{column: default for column, default in (("layout", layout.PLAIN), ("members", 1))
                          if column not in data})


def _floor(floors: stats.Floors, row: pd.Series) -> HostFloor | None:
    """The floor of the row's host, workload, server and layout (floors are of closed-loop throughput)."""
    if "server" not in row:
        return None
    return floors.get((str(row["host"]), str(row["workload"]), str(row["server"]), str(row["layout"])))


def _capacity_row(same: dict[str, Any], by: str, value_a: Any, value_b: Any, a: pd.Series, b: pd.Series,
                  found: stats.Verdict) -> dict[str, Any]:
    return {**same, "by": by, "a": value_a, "b": value_b, "capacity_a_tps": _capacity_of(a),
            "capacity_b_tps": _capacity_of(b), "sure_a": bracket_of(a).describe(), "sure_b": bracket_of(b).describe(),
            "ratio": found.ratio, "ci_low": found.low, "ci_high": found.high, "verdict": found.verdict,
            "interval_from": found.source}


def _capacity_table(name: str, title: str, rows: list[dict[str, Any]]) -> Table | None:
    if not rows:
        return None
    data = pd.DataFrame(rows).astype({"capacity_a_tps": "Int64", "capacity_b_tps": "Int64"})  # a rate or nothing
    display = data.drop(columns=["ratio", "ci_low", "ci_high", "interval_from"]).astype(object)
    for column in ("capacity_a_tps", "capacity_b_tps"):
        display[column] = ["–" if pd.isna(value) else str(value) for value in data[column]]
    display.insert(display.columns.get_loc("verdict"), "A ÷ B", [
        f"{fmt(ratio, 2)} ({fmt(low, 2)}–{'∞' if math.isinf(high) else fmt(high, 2)})"
        for ratio, low, high in zip(data["ratio"], data["ci_low"], data["ci_high"])])
    return Table(name, title, data, display,
                 ["A ÷ B: of the capacities (the highest rate each met by its merged histograms); the interval is "
                  "what the sure brackets allow (the rate one surely meets ÷ the one the other surely misses), "
                  "widened by each run's drift between two runs, and the ratio can lie outside it where the merged "
                  "percentile and every trial's disagree. Differs: one surely meets a rate the other surely misses. "
                  "Each row is one such test: of many rows, a few may differ by chance (README)."])


def variant_by_bp(cells: pd.DataFrame) -> Table | None:
    """Median throughput, my.cnf variant × buffer pool, per host, filesystem, workload and threads.

    A trial with no measured interval stays in (as – and marked): nothing is dropped silently.
    """
    table = server_cells(cells)
    if table.empty:
        return None
    groups = ["host", *storage_keys(table), "filesystem", "workload", "threads"]
    median, flagged = _pivot(table, groups, "variant")
    data = median.reset_index()
    data.insert(len(groups) + 1, "unit", _unit(table))
    display = _display(median, flagged).reset_index()
    return Table("variant_by_bp", f"Median throughput ({_unit(table)}): variant × buffer pool", data, display,
                 _flag_note(table))


def fs_by_bp(cells: pd.DataFrame) -> Table | None:
    """Median throughput, filesystem × buffer pool (the P320h table); how each pair of
    filesystems compares, with its interval and verdict, is `within_table(..., "filesystem")`."""
    table = server_cells(cells)
    if table.empty or table["filesystem"].nunique() < 2:
        return None
    groups = ["host", *storage_keys(table), "workload", "variant", "threads"]
    median, flagged = _pivot(table, groups, "filesystem")
    data = median.reset_index()
    data.insert(len(groups) + 1, "unit", _unit(table))
    display = _display(median, flagged).reset_index()
    return Table("fs_by_bp", f"Median throughput ({_unit(table)}): filesystem × buffer pool", data, display,
                 _flag_note(table))


def _fileio_cells(cells: pd.DataFrame, tests: tuple[str, ...] | None = None) -> pd.DataFrame:
    table = cells[cells["workload"] == "fileio"]
    if tests is not None:
        table = table[table["subtest"].isin(tests)]
    table = table.assign(iops_median=table["throughput_median"] * (1 << 20) / table["block_bytes"])
    return table.sort_values(["host", *storage_keys(table), "filesystem", "subtest", "block_bytes", "threads", "repeat"])


def fileio(cells: pd.DataFrame) -> Table | None:
    """Every sysbench fileio cell: MiB/s and IOPS (median, stddev and CoV of the intervals),
    the interval p95 and the whole run's p95 and p99 (from sysbench's latency histogram)."""
    table = _fileio_cells(cells)
    if table.empty:
        return None
    columns = ["host", *storage_keys(table), "filesystem", "subtest", "block_size", "threads", "repeat",
               "throughput_median", "iops_median",
               "throughput_std", "throughput_cov", "latency_ms_median", "fileio_run_p95_ms", "fileio_run_p99_ms",
               "stall_intervals", "flags"]
    data = table[columns].rename(columns={"subtest": "test", "throughput_median": "mib_s_median",
                                          "throughput_std": "mib_s_std", "throughput_cov": "cov",
                                          "latency_ms_median": "p95_ms_median", "fileio_run_p95_ms": "run_p95_ms",
                                          "fileio_run_p99_ms": "run_p99_ms"})
    display = data.copy().astype(object)
    for column in ("mib_s_median", "mib_s_std", "p95_ms_median", "run_p95_ms", "run_p99_ms"):
        display[column] = [fmt(v, 2) for v in data[column]]
    display["iops_median"] = [fmt(v, 0) for v in data["iops_median"]]
    display["cov"] = [fmt(v * 100, 1) + " %" if not pd.isna(v) else "–" for v in data["cov"]]
    return Table("fileio", "sysbench fileio: every cell", data.reset_index(drop=True), display.reset_index(drop=True))


def fileio_blocks(cells: pd.DataFrame) -> Table | None:
    """The block-size × threads table (JDevelopment's): IOPS and MiB/s for every block size at
    every thread count, random read and random write. Every cell is shown: the collapses at
    some block sizes are the finding, not noise to average away."""
    table = _fileio_cells(cells, ("table-rndrd", "table-rndwr"))
    if table.empty:
        return None
    groups = ["host", *storage_keys(table), "filesystem", "subtest", "block_size"]
    order = {label: size for label, size in zip(table["block_size"], table["block_bytes"])}
    medians = table.groupby([*groups, "threads"], sort=False)[["iops_median", "throughput_median"]].median()
    flagged = table.groupby([*groups, "threads"], sort=False)["flagged"].any()
    iops = medians["iops_median"].unstack("threads")
    mib = medians["throughput_median"].unstack("threads")
    marks = flagged.unstack("threads").fillna(False)
    index = sorted(iops.index, key=lambda key: (*key[:-1], order[key[-1]]))
    iops, mib, marks = iops.loc[index], mib.loc[index], marks.loc[index]
    data = pd.concat({"iops": iops, "mib_s": mib}, axis=1)
    data.columns = [f"{kind}_t{threads}" for kind, threads in data.columns]
    display = pd.DataFrame(
        {f"t{threads}": [f"{fmt(i, 0)} IOPS / {fmt(m, 1)} MiB/s" + (f" {FLAG_MARK}" if mark else "")
                         for i, m, mark in zip(iops[threads], mib[threads], marks[threads])]
         for threads in iops.columns},
        index=iops.index,
    )
    return Table("fileio_blocks", "sysbench fileio: block size × threads (random read and write)",
                 data.reset_index().rename(columns={"subtest": "test"}),
                 display.reset_index().rename(columns={"subtest": "test"}), _flag_note(table))


def fileio_sweep(cells: pd.DataFrame) -> Table | None:
    """The synchronous random-read thread sweep: where throughput peaks, and what p95 and p99
    response times cost at each thread count."""
    table = _fileio_cells(cells, ("sync-rndrd",))
    if table.empty:
        return None
    keys = ["host", *storage_keys(table), "filesystem", "block_size", "threads"]
    columns = [*keys, "throughput_median", "iops_median", "fileio_run_p95_ms", "fileio_run_p99_ms", "flags"]
    data = table[columns].groupby(keys, sort=False).agg(
        {"throughput_median": "median", "iops_median": "median", "fileio_run_p95_ms": "median",
         "fileio_run_p99_ms": "median", "flags": lambda f: "; ".join(x for x in f if x)}).reset_index()
    data = data.rename(columns={"throughput_median": "mib_s", "iops_median": "iops", "fileio_run_p95_ms": "p95_ms",
                                "fileio_run_p99_ms": "p99_ms"})
    display = data.copy().astype(object)
    display["mib_s"] = [fmt(v, 1) for v in data["mib_s"]]
    display["iops"] = [fmt(v, 0) for v in data["iops"]]
    for column in ("p95_ms", "p99_ms"):
        display[column] = [fmt(v, 3) for v in data[column]]
    return Table("fileio_sweep", "sysbench fileio: synchronous random read, thread sweep", data, display)


SUMMARY_COLUMNS = (
    "trial", "status", "unit", "throughput_median", "throughput_step", "throughput_mean", "throughput_std", "throughput_cov",
    "latency_pct", "latency_ms_median", "intervals_measured", "stall_intervals", "stall_episodes", "stall_causes",
    "errors_per_s", "errors_per_trx", "reconnects", "cpu_us", "cpu_sy", "cpu_wa", "cpu_id",
    "dev_r_s", "dev_w_s", "dev_read_mb_s", "dev_write_mb_s", "dev_r_await_ms", "dev_w_await_ms", "dev_util_pct",
    "innodb_bytes_per_trx", "device_bytes_per_trx", "write_amplification", "trx_per_s",
    "flash_bytes_per_trx", "flash_mib_written", "flash_mib_sent", "flash_disks", "flash_unread", "cache_start", "cache_blocks_at_start",
    "dev_reads_per_trx", "dev_kib_read_per_trx", "dev_kib_written_per_trx", "redo_bytes_per_trx", "fsyncs_per_trx",
    "checkpoint_age_max_mib", "ss_first_s", "ss_at_measure_start", "ss_warmup_saveable_s", "flagged", "flags",
)


def settings_drift(trials: pd.DataFrame, cells: pd.DataFrame, th: stats.Thresholds = stats.DEFAULTS,
                   floors: stats.Floors | None = None) -> Table | None:
    """Per variant, the I/O settings whose running values differ between the servers of the run
    (a server is a host with its flavor and version), beside each server's median throughput and
    its ratio to the first server's, with the interval and verdict of a comparison within one run:
    a variant leaves most settings to the server's defaults, and defaults differ between servers.

    `trials` is the frame's trial table (setting.* columns from each trial's variables.txt).
    None when the run has fewer than two servers, or no trial recorded its settings.
    """
    setting_columns = [c for c in trials.columns if c.startswith("setting.")]
    # The trials of `cells` alone: closed-loop ones (a fixed-rate trial's throughput is its offered rate).
    every = trials[trials["workload"] != "fileio"]
    ran = every[every.index.isin(cells["trial"])]
    if ran.empty or not setting_columns or ran[setting_columns].isna().all().all():
        return None
    server = (ran["host"].astype(str) + " · " + ran["server_flavor"].fillna("?").astype(str) + " "
              + ran["server_version"].fillna("?").astype(str))
    servers = sorted(server.unique())
    if len(servers) < 2:
        return None
    by_trial = cells.set_index("trial")
    throughput = by_trial["throughput_median"]
    unit = _unit(cells[cells["trial"].isin(ran.index)])
    rows = []
    for variant, block in ran.groupby("variant", sort=True):
        by_server = {name: block[server.loc[block.index] == name] for name in servers}
        rows.append({"variant": variant, "setting": f"median throughput ({unit})",
                     **{name: fmt(float(throughput.reindex(part.index).median())) if len(part) else "–"
                        for name, part in by_server.items()}})
        reference = by_trial.loc[by_server[servers[0]].index].reset_index()
        rows.append({"variant": variant, "setting": f"throughput ÷ {servers[0]}", servers[0]: "1",
                     **{name: _ratios(stats.compare(by_trial.loc[part.index].reset_index(), reference, th, floors,
                                                    floors))
                        for name, part in by_server.items() if name != servers[0]}})
        for column in setting_columns:
            values = {name: " / ".join(sorted(part[column].dropna().astype(str).unique())) or "–"
                      for name, part in by_server.items()}
            if len(set(values.values())) > 1:
                rows.append({"variant": variant, "setting": column.removeprefix("setting."), **values})
    data = pd.DataFrame(rows, columns=["variant", "setting", *servers]).fillna("–")
    rate_only = sorted(set(every["host"].astype(str)) - set(ran["host"].astype(str)))
    return Table("settings_drift", "Settings that differ between servers, per variant (as the servers ran them)",
                 data, data.copy(), ["Values read from each trial's server at its start (variables.txt); "
                                     "a setting no variant sets takes each server's own default. The ratio to the "
                                     "first server is per matching configuration (filesystem, buffer pool, "
                                     "threads), with its 95 % interval and verdict as in the host-vs-host table."]
                 + ([f"Closed-loop trials only: {', '.join(rate_only)} ran fixed-rate trials alone, not compared "
                     "here."] if rate_only else []))


def ratio_text(ratio: float, low: float, high: float, verdict: str) -> str:
    """A ratio as the suite prints one: never without its interval and verdict, or the reason it has none."""
    if pd.isna(ratio):
        return "–"
    interval = f" ({low:.3f}–{high:.3f})" if not pd.isna(low) else ""
    return f"{ratio:.3f}×{interval} {verdict}"


def _ratios(comparison: pd.DataFrame) -> str:
    """Each matching configuration's ratio in one cell, named by what tells them apart."""
    both = comparison[comparison["only_in"] == ""]
    if both.empty:
        return "–"
    varying = [key for key in ("layout", "members", "filesystem", "bp_size", "subtest", "block_size", "threads")
               if key in both and both[key].nunique() > 1]
    return "; ".join(("/".join(str(row[key]) for key in varying) + ": " if varying else "")
                     + ratio_text(row["ratio"], row["ci_low"], row["ci_high"], row["verdict"])
                     for _, row in both.iterrows())


def cells_table(cells: pd.DataFrame) -> Table:
    """Every trial with its main figures and flags (summary.csv has every column)."""
    columns = ["trial", "status", "throughput_median", "unit", "throughput_cov", "latency_ms_median",
               "stall_intervals", "errors_per_s", "cpu_id", "cpu_wa", "dev_r_s", "dev_w_s", "dev_util_pct",
               "write_amplification", "flags"]
    data = cells[columns]
    display = data.copy().astype(object)
    for column in columns:
        if column in ("trial", "status", "unit", "flags"):
            display[column] = [fmt(v) for v in data[column]]  # a trial without intervals has no unit: –
            continue
        digits = {"write_amplification": 2, "errors_per_s": 2, "stall_intervals": 0}.get(column, 1)
        display[column] = [fmt(float(v), digits) if column != "throughput_cov" or pd.isna(v)
                           else f"{float(v) * 100:.1f} %" for v in data[column]]
    return Table("cells", "Every trial (measured intervals only)", data, display)


def steady_table(cells: pd.DataFrame) -> Table:
    """Per trial: when its throughput settled, and how its warmup and duration were decided
    (fixed, or by the trial: warmup=auto, duration=auto) against the time it was given."""
    columns = ["trial", "ss_round_s", "ss_first_s", "warmup_s", "warmup_decided_by", "measured_s", "ended_by",
               "planned_s", "ss_at_measure_start", "ss_warmup_saveable_s"]
    data = cells[columns]
    display = pd.DataFrame({
        "trial": data["trial"],
        "round (s)": [fmt(v, 0) for v in data["ss_round_s"]],
        "steady from (s)": [fmt(v, 0) if v is not None else "never" for v in data["ss_first_s"]],
        "warmup (s)": [fmt(v, 0) for v in data["warmup_s"]],
        "warmup by": data["warmup_decided_by"],
        "measured (s)": [fmt(v, 0) for v in data["measured_s"]],
        "ended by": data["ended_by"],
        "given (s)": [fmt(v, 0) for v in data["planned_s"]],
        "steady at measure start": ["–" if v is None or pd.isna(v) else ("yes" if truthy(v) else "no")
                                    for v in data["ss_at_measure_start"]],
        "warmup that could be saved (s)": [fmt(v, 0) for v in data["ss_warmup_saveable_s"]],
    })
    line = adaptive_line(cells)
    return Table("steady_state", "Steady state (SNIA-style, on throughput rounds) and how each trial's time was decided",
                 data, display, [line] if line else [])


def adaptive_line(cells: pd.DataFrame) -> str | None:
    """The time the adaptive trials (warmup=auto or duration=auto) saved of the time they were
    given (warmup_max + duration_max), or None when every trial ran fixed times."""
    adaptive = cells[(cells["warmup_decided_by"] != "fixed") | (cells["ended_by"] != "fixed")]
    if adaptive.empty:
        return None
    given = float(adaptive["planned_s"].sum())
    used = float((adaptive["warmup_s"] + adaptive["measured_s"]).sum())
    share = (given - used) / given if given > 0 else float("nan")
    # Hours as the seeds' matrices run; minutes for a run too short to show in hours.
    scale, unit, digits = (3600, "h", 2) if given >= 3600 else (60, "min", 1)
    return (f"adaptive: {(given - used) / scale:.{digits}f} {unit} saved of {given / scale:.{digits}f} {unit} "
            f"({share:.0%}) over {len(adaptive)} trial{'s' if len(adaptive) != 1 else ''}")


def noise_note(floor: NoiseFloor, host_floors: Iterable[HostFloor] = ()) -> str:
    """One line on what run-to-run noise lets a comparison of these runs see: from their own
    repeats, and from the hosts' noise floors (`innomatrix noise`) where there are none."""
    host_floors = list(dict.fromkeys(host_floors))  # one line per floor, though both sides share it
    if floor.configurations:
        line = (f"noise floor: run-to-run CoV of the trial medians {floor.cov:.1%} (pooled over "
                f"{floor.configurations} configuration{'s' if floor.configurations != 1 else ''})")
        if floor.repeats >= 2:
            line += f"; at {floor.repeats} trials a side, a difference within ±{floor.detectable:.1%} cannot show"
            if stats.steps_matter(floor.coarsest_step, floor.sd_log):
                line += (f" (±{stats.minimum_detectable_effect(floor.sd_log, floor.repeats, step=floor.coarsest_step):.1%}"
                         f" where the trial medians move in steps of {floor.coarsest_step:.1%})")
        elif not host_floors:
            line += "; with 1 trial on a side a configuration gets no verdict"
    elif host_floors:
        line = "noise floor: no configuration has 2 trials that ended ok"
    else:
        return ("noise floor: unknown (no configuration has 2 trials that ended ok: run with repeats=3 or more, "
                "or measure the host's floor once with innomatrix noise)")
    if host_floors:
        line += ("; host floors (innomatrix noise), which judge 1 trial a side and the drift between runs: " + "; ".join(
            f"{measured.describe()}, a difference within "
            f"±{stats.minimum_detectable_effect(measured.sd_log, 1, df=measured.df):.1%} cannot show"
            + (f" (±{stats.minimum_detectable_effect(measured.sd_log, 1, df=measured.df, step=floor.coarsest_step):.1%}"
               f" where the trial medians move in steps of {floor.coarsest_step:.1%})"
               if stats.steps_matter(floor.coarsest_step, measured.sd_log) else "")
            for measured in host_floors))
    return line


def compare_table(comparison: pd.DataFrame, name_a: str, name_b: str, floor: NoiseFloor,
                  host_floors: Iterable[HostFloor] = (), across_runs: bool = False) -> Table:
    """Ratio A/B per configuration (stats.compare) for display; `across_runs`: A and B are two
    runs named `name_a` and `name_b` (else two values of a column within one run)."""
    plain = all((comparison[c] == layout.PLAIN).all() for c in ("layout", "layout_a", "layout_b") if c in comparison)
    keys = [c for c in COMPARE_KEYS if c in comparison and not (plain and c in ("layout", "members"))]
    columns = [*keys, "unit", "a_median", "b_median", "ratio", "ci_low", "ci_high", "differs", "verdict", "interval_from",
               "steps_share", "a_trials", "b_trials", "only_in", "a_flags", "b_flags"]
    data = comparison[columns]
    display = pd.DataFrame({key: data[key] for key in keys})
    display["unit"] = data["unit"]
    display[f"A ({name_a})"] = [fmt(v) + (FLAG_MARK if f else "") for v, f in zip(data["a_median"], data["a_flags"])]
    display[f"B ({name_b})"] = [fmt(v) + (FLAG_MARK if f else "") for v, f in zip(data["b_median"], data["b_flags"])]
    display["A/B"] = [fmt(v, 3) for v in data["ratio"]]
    display["95 % CI"] = [f"{fmt(lo, 3)} – {fmt(hi, 3)}" if not pd.isna(lo) else "–"
                          for lo, hi in zip(data["ci_low"], data["ci_high"])]
    display["trials"] = [f"{a}/{b}" for a, b in zip(data["a_trials"], data["b_trials"])]
    display["verdict"] = [_verdict_shown(verdict, source, share)
                          for verdict, source, share in zip(data["verdict"], data["interval_from"], data["steps_share"])]
    notes = [("A and B: the median of each configuration's trial medians (trials that ended ok). A/B = ratio of "
              "the geometric means of the trial medians; 95 % CI: Welch's t interval on their logarithms, so it "
              "measures run-to-run "
              "variance (trials, not intervals, are the independent units); `differs` only when it excludes 1, "
              "and with 1 trial on a side a verdict only from the hosts' noise floors (marked), else none."),
             noise_note(floor, host_floors)]
    if (data["steps_share"] > MOSTLY_STEPS).any():
        notes.append("mostly steps: more than half the interval is the step a trial's median moves by (one "
                     "transaction, New-Order or block per report interval, at rates of a few a second); a longer "
                     "report interval makes the steps finer and the interval narrower.")
    # Between runs, each trial by its run's name too: the two runs' trials have the same paths in their runs.
    flagged = dict.fromkeys(f"{name}/{entry}" if across_runs else entry for row in data.itertuples()
                            for name, text in ((name_a, row.a_flags), (name_b, row.b_flags)) if text
                            for entry in str(text).split(" | "))
    if flagged:
        notes.append(f"{FLAG_MARK} flagged: " + grouped_flags(entry.split(": ", 1) for entry in flagged))
    only = data[data["only_in"] != ""]
    if not only.empty:
        notes.append("without a match: " + "; ".join(
            f"{'/'.join(str(row[k]) for k in keys)} only in {row['only_in']}" for _, row in only.iterrows()))
    return Table("compare", f"Ratio A/B of median throughput: {name_a} / {name_b}", data, display, notes)


def host_compare_table(comparison: pd.DataFrame, floor: NoiseFloor, host_floors: Iterable[HostFloor] = ()) -> Table:
    """The host-vs-host table of one run (stats.compare_hosts): the compare table, A and B named on each row."""
    return within_table(comparison, "host", floor, host_floors)


# What each within-run comparison is called, by the column it pairs: (table name, title).
WITHIN = {"host": ("host_compare", "Host vs host: ratio A/B of median throughput within the run"),
          "members": ("members_compare", "Member count vs member count, per layout: ratio A/B of median throughput "
                                         "within the run"),
          "layout": ("layout_compare", "Layout vs layout (e.g. mdadm / LVM over the same members): ratio A/B of "
                                       "median throughput within the run"),
          "filesystem": ("fs_compare", "Filesystem vs filesystem: ratio A/B of median throughput within the run")}


# The within-run comparisons whose sides are passes of their own (never interleaved), by what a pass is.
PASS_APART = {"filesystem": "filesystem", "layout": "layout", "members": "member count"}


def _verdict_shown(verdict: str, source: str, steps_share: float) -> str:
    """A verdict with where its interval came from, when not from the trials alone."""
    said = [SOURCE_SHOWN[source]] if source in SOURCE_SHOWN else []
    said += ["mostly steps"] if steps_share > MOSTLY_STEPS else []
    return f"{verdict} ({'; '.join(said)})" if said else verdict


def within_table(comparison: pd.DataFrame, by: str, floor: NoiseFloor, host_floors: Iterable[HostFloor] = ()) -> Table:
    """A comparison of pairs within one run (stats.compare_within): the compare table, A and B named on each row."""
    table = compare_table(comparison, f"{by}_a", f"{by}_b", floor, host_floors)
    name, title = WITHIN[by]
    notes = [*table.notes, f"Every pair of {by}s, in sorted order: the first of the pair is A."]
    if by in PASS_APART:
        notes.append(f"Each {PASS_APART[by]} is a pass of its own ({'a layout build, ' if by != 'filesystem' else ''}"
                     "a mkfs and a load apart), its trials back to back: drift between the passes is in the trials' "
                     "spread only as far as it moves them, so trials that agree closely make even a small difference "
                     "between passes `differs`; read the ratio for its size.")
    return dataclasses.replace(table, name=name, notes=notes, title=title)


# What the Hosts table shows of a host.json session (roles/matrix/tasks/record.yml writes it):
# column → the path to it in the session.
HOST_FIELDS = (
    ("started", ("started",)), ("kernel", ("kernel",)), ("distribution", ("distribution",)), ("cpu", ("cpu",)),
    ("vcpus", ("vcpus",)), ("memory_mb", ("memory_mb",)), ("device", ("device", "identity")),
    ("device_bytes", ("device", "size_bytes")), ("rotational", ("device", "rotational")),
    ("scheduler", ("device", "scheduler")), ("read_ahead_kb", ("device", "read_ahead_kb")),
    ("server_flavor", ("server", "flavor")), ("server_version", ("server", "version")), ("driver", ("driver",)),
)


def _field(session: dict[str, Any], path: tuple[str, ...]) -> Any:
    """A field of a session, None when any step is missing or not an object, or the value is empty
    (a fact Ansible could not gather templates as an empty string)."""
    value: Any = session
    for step in path:
        value = value.get(step) if isinstance(value, dict) else None
    return None if value is None or value == "" or isinstance(value, (dict, list)) else value


def _number(value: Any) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError, OverflowError):
        return None


def _gib(value: Any, scale: float) -> str:
    number = _number(value)
    return fmt(number * scale / (1 << 30)) + " GiB" if number is not None else fmt(value)


def _active_scheduler(value: Any) -> str:
    """sysfs lists the schedulers with the active one in brackets: `[none] mq-deadline` → none."""
    text = fmt(value)
    start, end = text.find("["), text.find("]")
    return text[start + 1:end] if 0 <= start < end else text


# The numbers of a session, within what any machine has (host.json is read from trees people share).
HOST_NUMBERS = {"vcpus": (1, 1e6), "memory_mb": (1, 2 ** 40), "device_bytes": (0, 2 ** 64), "read_ahead_kb": (0, 2 ** 32)}
_LONGEST_TEXT = 120


def _clipped(value: Any) -> Any:
    """A text of a session cut to what a table cell can show."""
    return value[:_LONGEST_TEXT - 1] + "…" if isinstance(value, str) and len(value) > _LONGEST_TEXT else value


HOST_DISPLAY = ("host", "sessions", "started", "kernel", "distribution", "cpu", "vcpus", "memory", "device", "size",
                "rotational", "scheduler", "read-ahead (KiB)", "server", "driver")


def hosts_table(sessions: dict[str, dict[str, Any]], notes: list[str]) -> Table:
    """One row per host: its latest host.json session (kernel, CPU, memory, device, server, driver).

    `sessions` maps each host to that session with `sessions` (how many host.json holds) added,
    or to {} when there is none; a field the session lacks shows –, and `notes` say why a host
    has no session. A host-vs-host ratio means little without what differs between the hosts.
    """
    rows = []
    notes = list(notes)
    for host, session in sorted(sessions.items()):
        fields = {name: _field(session, path) for name, path in HOST_FIELDS}
        for name, (low, high) in HOST_NUMBERS.items():
            number = _number(fields[name])
            if fields[name] is not None and (number is None or not low <= number <= high):
                notes.append(f"{host}: host.json's {name} {str(fields[name])[:24]} is not a plausible value "
                             f"({low:g}–{high:g}): not shown")
                fields[name] = None
        fields = {name: _clipped(value) for name, value in fields.items()}
        rows.append({"host": host, "sessions": session.get("sessions", 0), **fields})
    data = pd.DataFrame(rows, columns=["host", "sessions", *(name for name, _ in HOST_FIELDS)])
    # Shown from the rows, not from `data`, where pandas turns a missing number into NaN and 2 into 2.0.
    display = pd.DataFrame([{
        "host": row["host"],
        "sessions": str(row["sessions"]),
        **{name: fmt(row[name]) for name in ("started", "kernel", "distribution", "cpu", "vcpus")},
        "memory": _gib(row["memory_mb"], 1 << 20),
        "device": fmt(row["device"]),
        "size": _gib(row["device_bytes"], 1),
        "rotational": "–" if row["rotational"] is None else ("yes" if str(row["rotational"]) == "True" else "no"),
        "scheduler": _active_scheduler(row["scheduler"]),
        "read-ahead (KiB)": fmt(row["read_ahead_kb"]),
        "server": " ".join(fmt(row[name]) for name in ("server_flavor", "server_version"))
        if row["server_flavor"] is not None or row["server_version"] is not None else "–",
        "driver": fmt(row["driver"]),
    } for row in rows], columns=HOST_DISPLAY)
    return Table("hosts", "Hosts (each host's latest host.json session)", data, display, notes)

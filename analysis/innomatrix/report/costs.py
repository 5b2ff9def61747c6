"""What a transaction costs the host (mdcallag's hardware-efficiency view): CPU, device reads and
bytes, redo and fsyncs per transaction, per configuration and between two runs. A throughput
ratio says which configuration is faster; these say why: "A does 1.9× the tps because it needs
0.4× the reads per transaction at the same buffer pool".

Each trial's cost is its measured intervals' mean of a resource a second ÷ its transactions a
second (stats.cell_row, summary.csv); a configuration's is the median over its ok trials. CPU
needs the host's vCPU count, from its host.json (vmstat's us + sy are shares of every CPU), so it
is a figure of these tables, not of a trial's own files."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from innomatrix import stats
from innomatrix.report.tables import Table, fmt, server_cells, storage_keys

# (column, what it is per transaction, digits shown)
COSTS = (
    ("cpu_us_per_trx", "CPU µs", 0),
    ("dev_reads_per_trx", "device reads", 2),
    ("dev_kib_read_per_trx", "KiB read", 1),
    ("dev_kib_written_per_trx", "KiB written", 1),
    ("redo_bytes_per_trx", "redo bytes", 0),
    ("fsyncs_per_trx", "fsyncs", 2),
)
# A host has at least one CPU and fewer than this many.
_MOST_VCPUS = 1_000_000

NOTES = [
    "Per transaction: sysbench OLTP's, or tpcc-mysql's New-Order (tpmC ÷ 60, carrying its share of the "
    "other transaction types). Each trial's cost is the mean of a resource a second over its measured "
    "intervals ÷ its mean transactions a second; a configuration's is the median over its trials that ended ok.",
    "CPU µs: vmstat us + sy × the host's vCPUs (host.json) ÷ transactions a second: the whole host, the driver "
    "(which runs on it) included. Device: iostat of the device under test (the array, on a layout). "
    "Redo bytes: Innodb_os_log_written; fsyncs: Innodb_data_fsyncs.",
]


def vcpus_of(sessions: Mapping[str, Mapping[str, Any]]) -> dict[str, int | None]:
    """Each host's vCPU count from its host.json session (report.host_sessions); None when the
    session has none, or one no machine has."""
    found: dict[str, int | None] = {}
    for host, session in sessions.items():
        value = session.get("vcpus")
        try:
            number = int(value) if not isinstance(value, bool) and float(value) == int(value) else None
        except (TypeError, ValueError, OverflowError):
            number = None
        found[host] = number if number is not None and 1 <= number < _MOST_VCPUS else None
    return found


def _with_cpu(cells: pd.DataFrame, vcpus: Mapping[str, int | None]) -> pd.DataFrame:
    """The cells with `cpu_us_per_trx`: NaN where the host's vCPUs are unknown."""
    cores = cells["host"].astype(str).map(lambda host: vcpus.get(host) or np.nan).astype(np.float64)
    busy = (cells["cpu_us"] + cells["cpu_sy"]) / 100 * cores
    per_s = cells["trx_per_s"].where(cells["trx_per_s"] > 0)
    return cells.assign(cpu_us_per_trx=busy * 1e6 / per_s)


# A configuration of a server workload, as `stats.compare` matches it (bp_bytes orders 64M before 1G).
CONFIGURATION = ("layout", "members", "filesystem", "workload", "variant", "bp_bytes", "bp_size", "threads")


def _shown(keys: list[str], cells: pd.DataFrame) -> list[str]:
    """The keys a table shows: not bp_bytes (bp_size says it), nor the storage of a plain-only run."""
    return [key for key in keys if key != "bp_bytes" and (key not in ("layout", "members") or key in storage_keys(cells))]


def _measured(cells: pd.DataFrame, vcpus: Mapping[str, int | None]) -> pd.DataFrame:
    """The trials a cost is taken from (ok, of a server workload, with transactions counted),
    with the CPU a transaction cost them."""
    table = server_cells(cells)
    return _with_cpu(table[(table["status"] == "ok") & (table["trx_per_s"] > 0)], vcpus)


def _cpu_note(cells: pd.DataFrame, vcpus: Mapping[str, int | None], run: str = "") -> list[str]:
    unknown = sorted({str(host) for host in cells["host"]} - {host for host, count in vcpus.items() if count})
    where = f"{run}: " if run else ""
    return [f"{where}CPU µs unknown (–) for {', '.join(unknown)}: no vCPU count in its host.json"] if unknown else []


def _medians(cells: pd.DataFrame, groups: list[str]) -> pd.DataFrame:
    columns = ["trx_per_s", *(column for column, _, _ in COSTS)]
    data = cells.groupby(groups, sort=True)[columns].median()
    data.insert(0, "trials", cells.groupby(groups, sort=True)["trial"].count())
    return data.reset_index()


def cost_table(cells: pd.DataFrame, vcpus: Mapping[str, int | None]) -> Table | None:
    """Per configuration: its median transactions a second and what a transaction costs, CPU by
    each host's `vcpus`. None without a trial of a server workload that ended ok."""
    table = _measured(cells, vcpus)
    if table.empty:
        return None
    groups = ["host", *CONFIGURATION]
    data = _medians(table, groups)
    display = data[_shown(groups, table)].copy().astype(object)
    display["trials"] = data["trials"]
    display["trx/s"] = [fmt(v, 1) for v in data["trx_per_s"]]
    for column, label, digits in COSTS:
        display[label] = [fmt(v, digits) for v in data[column]]
    return Table("cost_per_trx", "What a transaction costs: CPU, device and redo per transaction (medians of trials)",
                 data, display, [*NOTES, *_cpu_note(table, vcpus)])


# Why a cost has no ratio between runs: one side spent none of it (every read cached), or its
# host's vCPUs are unknown (CPU).
NONE_SPENT = "a cost of 0 on a side: no ratio"
NOT_KNOWN = "unknown on a side: no ratio"


def cost_compare(cells_a: pd.DataFrame, cells_b: pd.DataFrame, name_a: str, name_b: str,
                 vcpus_a: Mapping[str, int | None], vcpus_b: Mapping[str, int | None]) -> Table | None:
    """Run A ÷ run B of each cost, per configuration both ran (matched as `compare` matches them,
    on host too when both ran the same hosts), a row per configuration and cost.

    The ratio and its interval are the throughput comparison's (stats.between_runs over the
    trials' costs), and so is the rule between two runs: a run moves as a whole, which its trials
    cannot show, and no floor of a cost's drift is kept, so there is no verdict. These explain a
    throughput ratio (where its difference comes from); the throughput comparison judges it.
    None when no configuration is in both."""
    a, b = _measured(cells_a, vcpus_a), _measured(cells_b, vcpus_b)
    if a.empty or b.empty:
        return None
    # On host too when both runs ran the same hosts, decided on every cell as `stats.compare` does.
    keys = [*(["host"] if set(cells_a["host"]) == set(cells_b["host"]) else []), *CONFIGURATION]
    trials_b = dict(iter(b.groupby(keys, sort=True)))
    rows = []
    for key, side_a in a.groupby(keys, sort=True):
        side_b = trials_b.get(key)
        if side_b is None:
            continue
        for column, label, _ in COSTS:
            values_a, values_b = (side[column].dropna().to_numpy(dtype=np.float64) for side in (side_a, side_b))
            row = {**dict(zip(keys, key)), "cost": label, "a_median": _median(values_a),
                   "b_median": _median(values_b), "a_trials": values_a.size, "b_trials": values_b.size}
            if not values_a.size or not values_b.size:
                row.update(ratio=float("nan"), ci_low=float("nan"), ci_high=float("nan"), verdict=NOT_KNOWN)
            elif (values_a <= 0).any() or (values_b <= 0).any():
                row.update(ratio=float("nan"), ci_low=float("nan"), ci_high=float("nan"), verdict=NONE_SPENT)
            else:
                found = stats.between_runs(values_a, values_b, across_runs=True)
                row.update(ratio=found.ratio, ci_low=found.low, ci_high=found.high, verdict=found.verdict)
            rows.append(row)
    if not rows:
        return None
    data = pd.DataFrame(rows)
    digits = {label: places for _, label, places in COSTS}
    display = data[_shown(keys, pd.concat([a, b]))].copy().astype(object)
    display["per transaction"] = data["cost"]
    display[f"A ({name_a})"] = [fmt(v, digits[c]) for v, c in zip(data["a_median"], data["cost"])]
    display[f"B ({name_b})"] = [fmt(v, digits[c]) for v, c in zip(data["b_median"], data["cost"])]
    display["A/B"] = [fmt(v, 3) for v in data["ratio"]]
    display["95 % CI"] = [f"{fmt(lo, 3)} – {fmt(hi, 3)}" if not pd.isna(lo) else "–"
                          for lo, hi in zip(data["ci_low"], data["ci_high"])]
    display["verdict"] = data["verdict"]
    display["trials"] = [f"{x}/{y}" for x, y in zip(data["a_trials"], data["b_trials"])]
    notes = [f"A = {name_a}, B = {name_b}: the medians of each side's trial costs; A/B the ratio of their geometric "
             "means with Welch's interval over the trials, as for throughput. No verdict between two runs: no floor "
             "of a cost's run-to-run drift is kept; the throughput comparison judges, these say where its "
             "difference comes from.", *NOTES, *_cpu_note(a, vcpus_a, name_a), *_cpu_note(b, vcpus_b, name_b)]
    return Table("cost_compare", f"What a transaction costs, {name_a} ÷ {name_b}", data, display, notes)


def _median(values: np.ndarray) -> float:
    return float(np.median(values)) if values.size else float("nan")

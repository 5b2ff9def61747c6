"""`innomatrix report` and `innomatrix compare`: load a run into the frame, compute, write.

What `report RUN` writes (into RUN unless told otherwise):
    summary.csv  cells.parquet  intervals.parquet  report.html  plots/*.png  tables/*.csv  tables/*.md
What `compare RUN_A RUN_B` writes (into RUN_A/compare-<name of RUN_B> unless told otherwise):
    compare.csv  compare.md  compare.html  plots/compare_ratios.png
What `noise RUN [RUN ...]` writes: each host's noise floor into each RUN/<host>/host.json (report/noise_floors.py).
What `compare RUN --by host` writes (into RUN/compare-hosts unless told otherwise):
    host_compare.csv  host_compare.md  hosts.csv  hosts.md  host_compare.html  plots/host_compare_ratios.png
A report of a run of two or more hosts adds tables/hosts.* and tables/host_compare.*, from the
same functions.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from innomatrix import frame as frames
from innomatrix import layout, stats, tree
from innomatrix.report import costs, html, plots, tables
from innomatrix.report import noise_floors

Say = Callable[[str], None]
INTERVAL_DIMENSIONS = ("host", "layout", "members", "filesystem", "workload", "variant", "bp_size", "subtest", "block_size", "threads", "rate",
                       "repeat")


class ReportError(ValueError):
    """A run that cannot give what was asked of it (host vs host with one host); the message says why."""


@dataclass
class Written:
    out_dir: Path
    html: Path
    files: list[Path] = field(default_factory=list)
    cells: pd.DataFrame | None = None
    lines: list[str] = field(default_factory=list)  # what the command prints


class _Progress:
    """Loading messages at most once a second, and the last one always."""

    def __init__(self, say: Say | None, what: str):
        self.say, self.what, self.last, self.started = say, what, 0.0, time.monotonic()

    def __call__(self, done: int, total: int, trial: str) -> None:
        now = time.monotonic()
        if self.say is not None and (now - self.last >= 1.0 or done == total):
            self.last = now
            self.say(f"{self.what}: loaded {done}/{total} trials ({now - self.started:.1f} s) {trial}")


def load(run_dir: Path, say: Say | None = None) -> frames.Frame:
    return frames.load(run_dir, progress=_Progress(say, run_dir.name))


def report(run_dir: str | Path, out_dir: str | Path | None = None, say: Say | None = None,
           thresholds: stats.Thresholds = stats.DEFAULTS) -> Written:
    run = Path(run_dir)
    out = Path(out_dir) if out_dir is not None else run
    frame = load(run, say)
    if say:
        say(f"{run.name}: statistics for {len(frame.trials)} trials ({len(frame.intervals):,} interval rows)")
    every_cell = stats.cells(frame, thresholds)
    # Throughput tables, verdicts and floors are about closed-loop cells; fixed-rate ones have theirs.
    cells = tables.closed_loop(every_cell)
    fixed = tables.fixed_rate(every_cell, frame.histograms, thresholds)
    capacities = tables.capacity_at_sla(fixed, thresholds)
    # A configuration like hosts ran at fixed rates: one distribution of all their events as well.
    fleet = tables.fixed_rate(every_cell, frame.histograms, thresholds, fleet=True)
    host_floors = noise_floors.floors_for(run, _hosts(cells))
    vcpus = _vcpus(run, cells)
    by_fs = _within(cells, "filesystem", thresholds, host_floors)
    by_layout = _within(cells, "layout", thresholds, host_floors)
    by_members = _within(cells[cells["layout"] != layout.PLAIN], "members", thresholds, host_floors)
    built = [t for t in (tables.layout_by_members(cells), by_members.table if by_members else None,
                         by_layout.table if by_layout else None, tables.cache_layouts(cells), tables.bytes_to_flash(cells),
                         tables.variant_by_bp(cells), costs.cost_table(cells, vcpus), tables.fs_by_bp(cells),
                         by_fs.table if by_fs else None,
                         fixed, capacities, tables.capacity_within(capacities, thresholds),
                         fleet, tables.capacity_at_sla(fleet, thresholds),
                         tables.fileio_blocks(cells), tables.fileio_sweep(cells), tables.fileio(cells),
                         tables.settings_drift(frame.trials, cells, thresholds, host_floors))
             if t is not None]
    steady = tables.steady_table(cells)
    per_trial = tables.cells_table(every_cell)
    # Host vs host only where there are hosts to compare; a one-host run's report is as it was.
    by_host = _host_tables(run, cells, thresholds, host_floors) if len(_hosts(cells)) >= 2 else None
    if say:
        say(f"{run.name}: drawing figures")
    figures = plots.report_plots(frame, cells, built, thresholds, vcpus)
    out.mkdir(parents=True, exist_ok=True)
    written = Written(out_dir=out, html=out / "report.html", cells=every_cell)
    written.files += _write_frames(frame, every_cell, out)
    for table in [*built, *(by_host.both if by_host else ()), steady, per_trial]:
        written.files += table.write(out / "tables")
    written.files += _write_plots(figures, out / "plots")
    notes = {str(trial): str(note) for trial, note in frame.trials["notes"].items()}
    written.html.write_text(html.report_document(run.name, run, every_cell, built, steady, per_trial, figures, notes,
                                                 thresholds.describe(), by_host.both if by_host else None))
    written.files.append(written.html)
    flagged = int(every_cell["flagged"].sum())
    written.lines = [f"{len(every_cell)} trial{'' if len(every_cell) == 1 else 's'}, {flagged} flagged"]
    floor = stats.noise_floor(cells, confidence=thresholds.confidence)
    if floor.configurations or host_floors:
        written.lines.append(tables.noise_note(floor, host_floors.values()))
    written.lines += steady.notes
    for within in (by_members, by_layout, by_fs):
        if within is not None:
            written.lines += within.verdicts()
    written.lines.append("")
    for table in built:
        written.lines += [f"{table.title}", tables.markdown(table.display), ""]
    if by_host is not None:
        written.lines += [_verdict_line(by_host.comparison, _hosts(cells)), *by_host.lines(), ""]
    written.lines.append(f"report: {written.html}")
    return written


def compare(run_a: str | Path, run_b: str | Path, out_dir: str | Path | None = None, say: Say | None = None,
            thresholds: stats.Thresholds = stats.DEFAULTS) -> Written:
    a, b = Path(run_a), Path(run_b)
    out = Path(out_dir) if out_dir is not None else a / f"compare-{b.name}"
    frame_a, frame_b = load(a, say), load(b, say)
    every_a, every_b = (stats.cells(frame, thresholds) for frame in (frame_a, frame_b))
    # Between runs, closed-loop throughput as everywhere: a fixed-rate cell's throughput is its offered rate.
    cells_a, cells_b = tables.closed_loop(every_a), tables.closed_loop(every_b)
    floors_a, floors_b = noise_floors.floors_for(a, _hosts(cells_a)), noise_floors.floors_for(b, _hosts(cells_b))
    comparison = stats.compare(cells_a, cells_b, thresholds, floors_a, floors_b, across_runs=True)
    floor = stats.noise_floor(cells_a, cells_b, confidence=thresholds.confidence)
    host_floors = [*floors_a.values(), *floors_b.values()]
    table = tables.compare_table(comparison, a.name, b.name, floor, host_floors, across_runs=True)
    # Fixed-rate cells: their capacities at the SLA, run A ÷ run B.
    capacities = tables.capacity_between(
        *(tables.capacity_at_sla(tables.fixed_rate(every, frame.histograms, thresholds), thresholds)
          for every, frame in ((every_a, frame_a), (every_b, frame_b))),
        a.name, b.name, floors_a, floors_b, thresholds)
    cost_ratios = costs.cost_compare(cells_a, cells_b, a.name, b.name, _vcpus(a, cells_a), _vcpus(b, cells_b))
    figure = plots.compare_forest(comparison, a.name, b.name)
    out.mkdir(parents=True, exist_ok=True)
    written = Written(out_dir=out, html=out / "compare.html", cells=comparison)
    written.files += table.write(out)
    for extra in (capacities, cost_ratios):
        if extra is not None:
            written.files += extra.write(out)
    if figure is not None:
        written.files += _write_plots([figure], out / "plots", prune=False)
    written.html.write_text(html.compare_document(a.name, b.name, table, figure, thresholds.describe(), capacities,
                                                 cost_ratios))
    written.files.append(written.html)
    written.lines = [_verdict_line(comparison), tables.noise_note(floor, host_floors), "",
                     tables.markdown(table.display), "", *table.notes, ""]
    for extra in (capacities, cost_ratios):
        if extra is not None:
            written.lines += [extra.title, tables.markdown(extra.display), *extra.notes, ""]
    written.lines.append(f"compare: {written.html}")
    return written


def compare_hosts(run_dir: str | Path, out_dir: str | Path | None = None, say: Say | None = None,
                  thresholds: stats.Thresholds = stats.DEFAULTS) -> Written:
    """`compare RUN --by host`: every pair of the run's hosts, by the rule `compare` judges two runs by."""
    run = Path(run_dir)
    out = Path(out_dir) if out_dir is not None else run / "compare-hosts"
    frame = load(run, say)
    every_cell = stats.cells(frame, thresholds)
    # Hosts are compared on closed-loop throughput, as in the report: a fixed-rate cell's is its offered rate.
    cells = tables.closed_loop(every_cell)
    hosts = _hosts(cells)
    if len(hosts) < 2:
        raise ReportError(f"{run}: only {', '.join(hosts) or 'no host'} ran trials here; "
                          "--by host compares two or more hosts of one run")
    by_host = _host_tables(run, cells, thresholds, noise_floors.floors_for(run, hosts))
    comparison = by_host.comparison
    floor = stats.noise_floor(cells, confidence=thresholds.confidence)
    figure = plots.compare_forest(comparison, "host_a", "host_b")
    if figure is not None:
        figure = dataclasses.replace(figure, name="host_compare_ratios", title=f"Host vs host ratios: {run.name}")
    # Hosts that ran different servers ran different defaults: what differed stands beside the ratios.
    drift = tables.settings_drift(frame.trials, cells, thresholds, by_host.floors)
    # Fixed-rate cells: their capacities at the SLA, host A ÷ host B.
    fixed = tables.fixed_rate(every_cell, frame.histograms, thresholds)
    capacities = tables.capacity_hosts(tables.capacity_at_sla(fixed, thresholds), by_host.floors, thresholds)
    out.mkdir(parents=True, exist_ok=True)
    written = Written(out_dir=out, html=out / "host_compare.html", cells=comparison)
    for table in (*by_host.both, *([drift] if drift else []), *([capacities] if capacities else [])):
        written.files += table.write(out)
    if figure is not None:
        written.files += _write_plots([figure], out / "plots", prune=False)
    written.html.write_text(html.host_compare_document(run.name, by_host.compare, figure, by_host.hosts,
                                                       thresholds.describe(), drift, capacities))
    written.files.append(written.html)
    written.lines = [_verdict_line(comparison, hosts), tables.noise_note(floor, by_host.floors.values()), "",
                     *by_host.lines(), ""]
    for extra in (drift, capacities):
        if extra is not None:
            written.lines += [extra.title, tables.markdown(extra.display), *extra.notes, ""]
    written.lines.append(f"compare: {written.html}")
    return written


@dataclass
class Recorded:
    """What `noise` found and kept: the floors, and the lines the command prints."""

    floors: list[stats.HostFloor]
    lines: list[str] = field(default_factory=list)


def noise(*run_dirs: str | Path, say: Say | None = None, thresholds: stats.Thresholds = stats.DEFAULTS,
          now: dt.datetime | None = None) -> Recorded:
    """Each host's run-to-run noise floor from runs of repeated configurations, kept in the
    host.json of each run it was measured from."""
    runs = [Path(run_dir) for run_dir in run_dirs]
    # Closed-loop cells only: a fixed-rate cell's throughput is the rate it was offered, which
    # barely moves from run to run and would make the floor look quieter than the host is.
    cells = pd.concat([tables.closed_loop(stats.cells(load(run, say), thresholds)).assign(run=run.name)
                       for run in runs], ignore_index=True)
    try:
        floors, unmeasured = noise_floors.measure(runs, cells, now or dt.datetime.now(dt.timezone.utc))
        recorded = Recorded(floors)
        for floor in floors:
            measured_on = noise_floors.configurations(cells, floor)
            # 1 trial a side is judged by this floor; 3 and 5 by their own trials, at this spread.
            effects = ", ".join(
                f"{r} trial{'s' if r > 1 else ''} a side ±{effect:.1%}" for r, effect in (
                    (1, stats.minimum_detectable_effect(floor.sd_log, 1, thresholds.confidence, floor.df)),
                    *((r, stats.minimum_detectable_effect(floor.sd_log, r, thresholds.confidence)) for r in (3, 5))))
            recorded.lines += [
                f"{floor.names()}: run-to-run CoV of the trial medians {floor.cov:.1%} "
                f"from {floor.trials} trials of {', '.join(measured_on)} in {floor.df + 1} runs on {floor.device}",
                f"  a difference within this cannot show: {effects}",
            ]
            step = noise_floors.relative_step(cells, floor)
            if stats.steps_matter(step, floor.sd_log):
                # A floor of medians that read the same step again and again: what a verdict of one
                # trial a side can see is set by the step (stats.between_runs), not by the floor.
                within = stats.minimum_detectable_effect(floor.sd_log, 1, thresholds.confidence, floor.df, step)
                recorded.lines.append(f"  its trial medians move in steps of {step:.1%} of the median (one transaction "
                                      f"or block an interval), coarser than the floor: each verdict adds half a step a "
                                      f"trial, and 1 trial a side cannot show a difference within ±{within:.1%}")
            for run in runs:
                if not (run / floor.host).is_dir():
                    continue
                path, replaced = noise_floors.record(run, floor, measured_on)
                recorded.lines.append(f"  recorded in {path}" + (
                    f" (replacing the floor measured {replaced.get('measured')})" if isinstance(replaced, dict) else ""))
    except (noise_floors.NoiseError, OSError, ValueError) as exc:
        raise ReportError(str(exc)) from None
    # What got no floor, beside what did: a user who passed runs of two layouts learns why one has none.
    recorded.lines += [f"no floor for {entry}; a floor needs {noise_floors.MIN_TRIALS} ok trials of one configuration "
                       "in two or more runs" for entry in unmeasured]
    recorded.lines.append("Runs beside these in the same results directory, on the same host and device, now judge "
                          "configurations with 1 trial a side against it.")
    return recorded


@dataclass
class Within:
    """Pairs of one dimension of a run (its filesystems) compared: the table, and the verdict lines."""

    by: str
    comparison: pd.DataFrame
    table: tables.Table

    def verdicts(self) -> list[str]:
        """`verdict: …` lines (the play prints them after the cells): how many pairs differ, and
        each configuration that has a verdict, with its interval."""
        lines = [f"verdict: {self.by} vs {self.by}: {_verdict_line(self.comparison)}"]
        keys = [key for key in ("host", *stats.MATCH) if key in self.comparison and key != self.by]
        for _, row in self.comparison.iterrows():
            if row["verdict"] in (stats.DIFFERS, stats.SAME):
                # The plain device needs no naming; a layout is named with its member count (m2).
                plain = self.by != "layout" and row.get("layout", layout.PLAIN) == layout.PLAIN
                name = "/".join(f"m{row[key]}" if key == "members" else part for key in keys
                                if (part := stats.name_part(key, row[key])) is not None
                                and not (plain and key in ("layout", "members")))
                a, b = (("m" if self.by == "members" else "") + str(row[f"{self.by}_{side}"]) for side in "ab")
                lines.append(f"verdict: {a} / {b}, {name}: "
                             + tables.ratio_text(row["ratio"], row["ci_low"], row["ci_high"], row["verdict"]))
        return lines


def _within(cells: pd.DataFrame, by: str, thresholds: stats.Thresholds, floors: stats.Floors) -> Within | None:
    """The pairs of `by` of a run compared, where there are two or more: filesystems over the
    server cells; layouts (mdadm ÷ LVM over the same members, the seed's comparison) and member
    counts (a layout over 4 members ÷ over 1) over every cell, fileio's too."""
    compared = cells if by in ("layout", "members") else tables.server_cells(cells)
    if compared[by].nunique() < 2:
        return None
    comparison = stats.compare_within(compared, by, thresholds, floors)
    return Within(by, comparison, tables.within_table(
        comparison, by, stats.noise_floor(compared, confidence=thresholds.confidence), floors.values()))


def _verdict_line(comparison: pd.DataFrame, hosts: list[str] | None = None) -> str:
    """What a comparison found, in one line; for host vs host, which hosts it paired."""
    matched = int((comparison["only_in"] == "").sum()) if len(comparison) else 0
    differs = int(comparison["differs"].sum()) if len(comparison) else 0
    no_verdict = [stats.UNKNOWN, stats.NO_SPREAD, stats.DRIFT_UNKNOWN, stats.NOTHING_DONE]
    withheld = comparison[comparison["verdict"].isin(no_verdict)] if len(comparison) else comparison
    headline = f"{matched} matching configurations, {differs} differ (95 % CI excludes 1)"
    if len(withheld):
        headline += f", {len(withheld)} without a verdict ({'; '.join(sorted(set(withheld['verdict'])))})"
    if hosts is None:
        return headline
    if len(hosts) == 2:
        return f"host vs host {hosts[0]} / {hosts[1]}: {headline}"
    return f"host vs host, {len(hosts) * (len(hosts) - 1) // 2} pairs of {', '.join(hosts)}: {headline}"


def _hosts(cells: pd.DataFrame) -> list[str]:
    return sorted(str(host) for host in cells["host"].unique())


@dataclass
class HostTables:
    """What a run of several hosts adds: the host-vs-host comparison, its table, the Hosts table."""

    comparison: pd.DataFrame
    compare: tables.Table
    hosts: tables.Table
    floors: stats.Floors

    @property
    def both(self) -> tuple[tables.Table, tables.Table]:
        """In the order they are written and shown: what the hosts are, then how they compare."""
        return self.hosts, self.compare

    def lines(self) -> list[str]:
        """Both tables as the commands print them."""
        return [tables.markdown(self.compare.display), "", *self.compare.notes, "", self.hosts.title,
                tables.markdown(self.hosts.display), *self.hosts.notes]


def _host_tables(run: Path, cells: pd.DataFrame, thresholds: stats.Thresholds, floors: stats.Floors) -> HostTables:
    """Both host tables from the one cells table, judged by the hosts' floors (and each host's
    host.json for the Hosts table)."""
    comparison = stats.compare_hosts(cells, thresholds, floors)
    floor = stats.noise_floor(cells, confidence=thresholds.confidence)
    sessions, notes = host_sessions(run, _hosts(cells))
    return HostTables(comparison, tables.host_compare_table(comparison, floor, floors.values()),
                      tables.hosts_table(sessions, notes), floors)


def _vcpus(run: Path, cells: pd.DataFrame) -> dict[str, int | None]:
    """Each host's vCPUs, from its host.json (None where it cannot say)."""
    sessions, _ = host_sessions(run, _hosts(cells))
    return costs.vcpus_of(sessions)


def host_sessions(run: Path, hosts: list[str]) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """Each host's latest host.json session with `sessions` (how many it holds) added, and notes.

    host.json keeps every session that worked on the run, appended; the last is what the host
    was when it last ran cells. A host.json that is missing, unreadable or without a session
    gives the host an empty row and a note: the report is still worth having without it.
    """
    found: dict[str, dict[str, Any]] = {}
    notes: list[str] = []
    for host in hosts:
        path = run / host / layout.HOST_FILE
        found[host] = {}
        if not os.path.lexists(path):
            notes.append(f"{host}: no {layout.HOST_FILE} (the run was recorded without it)")
            continue
        try:
            record = tree.read_json(path, tree.HOST_JSON_LIMIT)
        except tree.TreeError as exc:
            notes.append(f"{host}: {layout.HOST_FILE} cannot be read ({str(exc).removeprefix(f'{path}: ')})")
            continue
        sessions = record.get("sessions") if isinstance(record, dict) else None
        if not isinstance(sessions, list) or not sessions or not isinstance(sessions[-1], dict):
            notes.append(f"{host}: {layout.HOST_FILE} holds no session")
            continue
        found[host] = {**sessions[-1], "sessions": len(sessions)}
    return found, notes


def _write_frames(frame: frames.Frame, cells: pd.DataFrame, out: Path) -> list[Path]:
    summary = out / "summary.csv"
    columns = ["trial", *[c for c in stats.DIMENSIONS if c != "bp_bytes"],
               *[c for c in tables.SUMMARY_COLUMNS if c != "trial"]]
    cells[columns].to_csv(summary, index=False)
    cells_path = out / "cells.parquet"
    pq.write_table(pa.Table.from_pandas(cells, preserve_index=False), cells_path)
    intervals_path = out / "intervals.parquet"
    pq.write_table(_intervals_table(frame), intervals_path)
    return [summary, cells_path, intervals_path]


def _intervals_table(frame: frames.Frame) -> pa.Table:
    """The long table with each trial's dimensions as dictionary columns (cheap in Parquet)."""
    intervals = frame.intervals
    trial_codes = intervals["trial"].cat.codes.to_numpy()
    columns: dict[str, pa.Array] = {}
    order = list(intervals["trial"].cat.categories)
    for name in INTERVAL_DIMENSIONS:
        per_trial = frame.trials.loc[order, name].to_numpy()
        values, codes = np.unique(per_trial.astype(str) if per_trial.dtype == object else per_trial,
                                  return_inverse=True)
        columns[name] = pa.DictionaryArray.from_arrays(pa.array(codes[trial_codes].astype(np.int32)), pa.array(values))
    columns["trial"] = pa.DictionaryArray.from_arrays(pa.array(trial_codes.astype(np.int32)), pa.array(order))
    columns["t"] = pa.array(intervals["t"].to_numpy())
    metric = intervals["metric"]
    columns["metric"] = pa.DictionaryArray.from_arrays(pa.array(metric.cat.codes.to_numpy().astype(np.int32)),
                                                       pa.array([str(c) for c in metric.cat.categories]))
    columns["value"] = pa.array(intervals["value"].to_numpy())
    columns["measured"] = pa.array(intervals["measured"].to_numpy())
    return pa.table(columns)


def _write_plots(figures: list[plots.Plot], directory: Path, prune: bool = True) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for figure in figures:
        path = directory / f"{figure.name}.png"
        path.write_bytes(figure.png)
        paths.append(path)
    if prune:  # an earlier report's figures of groups that are gone
        kept = {path.name for path in paths}
        for stale in directory.glob("*.png"):
            if stale.name not in kept and stale.name.startswith(plots.KINDS):
                stale.unlink()
    return paths

"""`innomatrix report` and `innomatrix compare`: load a run into the frame, compute, write.

What `report RUN` writes (into RUN unless told otherwise):
    summary.csv  cells.parquet  intervals.parquet  report.html  plots/*.png  tables/*.csv  tables/*.md
What `compare RUN_A RUN_B` writes (into RUN_A/compare-<name of RUN_B> unless told otherwise):
    compare.csv  compare.md  compare.html  plots/compare_ratios.png
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from innomatrix import frame as frames
from innomatrix import stats
from innomatrix.report import html, plots, tables

Say = Callable[[str], None]
INTERVAL_DIMENSIONS = ("host", "filesystem", "workload", "variant", "bp_size", "subtest", "block_size", "threads", "repeat")


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
    cells = stats.cells(frame, thresholds)
    built = [t for t in (tables.variant_by_bp(cells), tables.fs_by_bp(cells), tables.fileio_blocks(cells),
                         tables.fileio_sweep(cells), tables.fileio(cells), tables.settings_drift(frame.trials, cells))
             if t is not None]
    steady = tables.steady_table(cells)
    per_trial = tables.cells_table(cells)
    if say:
        say(f"{run.name}: drawing figures")
    figures = plots.report_plots(frame, cells, built)
    out.mkdir(parents=True, exist_ok=True)
    written = Written(out_dir=out, html=out / "report.html", cells=cells)
    written.files += _write_frames(frame, cells, out)
    for table in [*built, steady, per_trial]:
        written.files += table.write(out / "tables")
    written.files += _write_plots(figures, out / "plots")
    notes = {str(trial): str(note) for trial, note in frame.trials["notes"].items()}
    written.html.write_text(html.report_document(run.name, run, cells, built, steady, per_trial, figures, notes,
                                                 thresholds.describe()))
    written.files.append(written.html)
    flagged = int(cells["flagged"].sum())
    written.lines = [f"{len(cells)} trial{'' if len(cells) == 1 else 's'}, {flagged} flagged"]
    floor = stats.noise_floor(cells, confidence=thresholds.confidence)
    if floor.configurations:
        written.lines.append(tables.noise_note(floor))
    written.lines.append("")
    for table in built:
        written.lines += [f"{table.title}", tables.markdown(table.display), ""]
    written.lines.append(f"report: {written.html}")
    return written


def compare(run_a: str | Path, run_b: str | Path, out_dir: str | Path | None = None, say: Say | None = None,
            thresholds: stats.Thresholds = stats.DEFAULTS) -> Written:
    a, b = Path(run_a), Path(run_b)
    out = Path(out_dir) if out_dir is not None else a / f"compare-{b.name}"
    frame_a, frame_b = load(a, say), load(b, say)
    cells_a, cells_b = stats.cells(frame_a, thresholds), stats.cells(frame_b, thresholds)
    comparison = stats.compare(cells_a, cells_b, thresholds)
    floor = stats.noise_floor(cells_a, cells_b, confidence=thresholds.confidence)
    table = tables.compare_table(comparison, a.name, b.name, floor)
    figure = plots.compare_bars(comparison, a.name, b.name)
    out.mkdir(parents=True, exist_ok=True)
    written = Written(out_dir=out, html=out / "compare.html", cells=comparison)
    written.files += table.write(out)
    if figure is not None:
        written.files += _write_plots([figure], out / "plots", prune=False)
    written.html.write_text(html.compare_document(a.name, b.name, table, figure, thresholds.describe()))
    written.files.append(written.html)
    matched = int((comparison["only_in"] == "").sum()) if len(comparison) else 0
    differs = int(comparison["differs"].sum()) if len(comparison) else 0
    withheld = comparison[comparison["verdict"].isin([stats.UNKNOWN, stats.NO_SPREAD])] if len(comparison) else comparison
    headline = f"{matched} matching configurations, {differs} differ (95 % CI excludes 1)"
    if len(withheld):
        headline += f", {len(withheld)} without a verdict ({'; '.join(sorted(set(withheld['verdict'])))})"
    written.lines = [headline, tables.noise_note(floor), "",
                     tables.markdown(table.display), "", *table.notes, "", f"compare: {written.html}"]
    return written


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

"""Stalls explained (#33): each stall episode with what coincided with it in its own intervals,
by the rules of innomatrix.stalls, or "no cause seen". Known answers: a real trial doctored to stall
in two places, with free-page waits and a device wait spike in the seconds of one and nothing in the
other's; and the rules one by one on figures made for them."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pandas as pd
from innomatrix import frame, stalls, stats
from innomatrix_host.sysbench import episodes
from innomatrix.report import html

DEMO = Path(__file__).resolve().parents[1] / "fixtures" / "report" / "real-demo"
TRIAL = "localhost/xfs/oltp/A/bp-16M/t4/r1"


def _figures(**series: list[float]) -> stalls.Figures:
    return stalls.Figures({name.replace("__", "."): np.array(values, dtype=float) for name, values in series.items()},
                          redo_capacity_bytes=100 << 20)


def test_each_rule_names_what_it_saw_and_a_stall_nothing_explains_says_so() -> None:
    stalled = [False, True, True, False, False, True, False, False]
    times = [float(t) for t in range(11, 19)]
    figures = _figures(**{"status__checkpoint_age": [10 << 20, 80 << 20, 90 << 20, 10 << 20, 0, 0, 0, 0],
                          "status__Innodb_buffer_pool_wait_free": [0, 0, 12, 0, 0, 0, 0, 0],
                          "iostat__w_await": [2, 2, 30, 2, 2, 3, 2, 2],
                          "vmstat__id": [50] * 8, "vmstat__wa": [10] * 8})
    first, second = stalls.explain(episodes(stalled), times, figures)
    assert first.startswith("stall at 12–13 s: ")
    assert "checkpoint age at 75% of the redo capacity or more: 90 % of it" in first
    assert "free-page waits (Innodb_buffer_pool_wait_free): 12 /s" in first
    assert "device wait at 4× its median or more: 30 ms" in first
    assert "CPU" not in first and "redo log waits" not in first
    assert second == "stall at 16 s: no cause seen"


def test_a_rule_without_its_figures_is_silent_and_the_device_wait_needs_its_floor() -> None:
    stalled = [False, True, False, False]
    # No checkpoint age and no capacity: nothing said of either; an await of 4 ms is 4× a 1 ms median,
    # below the 5 ms floor; CPU at 98 % busy is saturated.
    figures = stalls.Figures({"iostat.r_await": np.array([1.0, 4.0, 1.0, 1.0]),
                              "vmstat.id": np.array([40.0, 1.0, 40.0, 40.0]), "vmstat.wa": np.array([0.0, 1.0, 0, 0])},
                             redo_capacity_bytes=None)
    [line] = stalls.explain(episodes(stalled), [1.0, 2.0, 3.0, 4.0], figures)
    assert line == "stall at 2 s: CPU saturated (idle and iowait below 5 %): 98 % busy"
    assert stalls.explain(episodes([False, False]), [1.0, 2.0], figures) == []
    # idle 1 % with iowait 30 %: waiting on the device, not CPU-bound (the CPU-bound flag's rule)
    waiting = stalls.Figures({"vmstat.id": np.array([1.0]), "vmstat.wa": np.array([30.0])}, None)
    assert stalls.explain([(0, 1)], [1.0], waiting) == ["stall at 1 s: no cause seen"]


def _doctor(run: Path) -> tuple[float, float]:
    """Two stalls in the trial's measured intervals (throughput 0 in its driver.log), free-page waits
    in the status.log at the first; returns their times."""
    driver = run / TRIAL / "driver.log"
    lines = driver.read_text().splitlines(keepends=True)
    interval_lines = [i for i, line in enumerate(lines) if line.startswith("[ ") and " tps: " in line]
    picked = (interval_lines[-8], interval_lines[-4])
    times = []
    for index in picked:
        line = lines[index]
        times.append(float(line[2:line.index("s ]")]))
        head, rest = line.split(" tps: ", 1)
        lines[index] = head + " tps: 0.00" + rest[rest.index(" "):]
    driver.write_text("".join(lines))
    return times[0], times[1]


def test_a_real_trial_doctored_to_stall_has_each_stall_explained_or_not(tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(DEMO, run)
    first, second = _doctor(run)
    # Free-page waits at the first stall's second: the status sample the frame puts on that interval.
    loaded = frame.load(run)
    rows = loaded.intervals[(loaded.intervals["trial"] == TRIAL).to_numpy()
                            & (loaded.intervals["metric"] == "status.Com_commit").to_numpy()]
    assert first in set(rows["t"])
    status = run / TRIAL / "status.log"
    stamp = _status_stamp_at(status, loaded, first)
    lines = status.read_text().splitlines(keepends=True)
    last = max(index for index, line in enumerate(lines) if line.startswith(stamp + "\t"))
    lines.insert(last + 1, f"{stamp}\tInnodb_buffer_pool_wait_free\t25\tdelta\n")
    status.write_text("".join(lines))
    cells = stats.cells(frame.load(run)).set_index("trial")
    causes = cells.loc[TRIAL, "stall_causes"].split("; ")
    assert len(causes) == 2 and cells.loc[TRIAL, "stall_episodes"] == 2, causes
    assert causes[0].startswith(f"stall at {first:g} s: ") and "free-page waits" in causes[0], causes
    assert causes[1] == f"stall at {second:g} s: no cause seen", causes
    # The report's validity section lists them under the trial's flags, one line an episode.
    shown = html.flags_html(cells.reset_index())
    assert f"<li>stall at {second:g} s: no cause seen</li>" in shown and "free-page waits" in shown, shown


def _status_stamp_at(status: Path, loaded: frame.Frame, t: float) -> str:
    """The time stamp of status.log's sample the frame aligned to the driver's interval ending at t."""
    stamps = sorted({line.split("\t")[0] for line in status.read_text().splitlines()[1:]})
    started = pd.Timestamp(loaded.trials.loc[TRIAL, "started"])
    offsets = [(pd.Timestamp(stamp) - started).total_seconds() for stamp in stamps]
    return stamps[int(np.argmin([abs(offset - t) for offset in offsets]))]

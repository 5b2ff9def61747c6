"""Stalls explained (#33): each stall episode with what coincided with it in its own intervals,
by the rules of innomatrix_host.stalls, or "no cause seen". Known answers: a real trial doctored to stall
in two places, with free-page waits and a device wait spike in the seconds of one and nothing in the
other's; and the rules one by one on figures made for them."""

from __future__ import annotations

import datetime as dt
import json
import re
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from innomatrix import frame, stats
from innomatrix_host.sysbench import episodes
from innomatrix_host import collected, flags, server_log, stalls
from trial_module import trial_module
from innomatrix.report import html

DEMO = Path(__file__).resolve().parents[1] / "fixtures" / "report" / "real-demo"
TRIAL = "localhost/xfs/oltp/A/bp-16M/t4/r1"


def _figures(**series: list[float]) -> stalls.Figures:
    return stalls.Figures({name.replace("__", "."): np.array(values, dtype=float) for name, values in series.items()},
                          async_bytes=70 << 20, sync_bytes=80 << 20)


def test_each_rule_names_what_it_saw_and_a_stall_nothing_explains_says_so() -> None:
    stalled = [False, True, True, False, False, True, False, False]
    times = [float(t) for t in range(11, 19)]
    figures = _figures(**{"status__checkpoint_age": [10 << 20, 80 << 20, 90 << 20, 10 << 20, 0, 0, 0, 0],
                          "status__Innodb_buffer_pool_wait_free": [0, 0, 12, 0, 0, 0, 0, 0],
                          "iostat__w_await": [2, 2, 30, 2, 2, 3, 2, 2],
                          "vmstat__id": [50] * 8, "vmstat__wa": [10] * 8})
    first, second = stalls.explain(episodes(stalled), times, figures)
    assert first.startswith("stall at 12–13 s: ")
    assert "checkpoint age past the sync flush point (writers wait for flushing): 90 MiB" in first
    assert "async flush point" not in first  # 80 MiB is at the sync point: the graver cause only
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
                             async_bytes=None, sync_bytes=None)
    [line] = stalls.explain(episodes(stalled), [1.0, 2.0, 3.0, 4.0], figures)
    assert line == "stall at 2 s: CPU saturated (idle and iowait below 5 %): 98 % busy"
    assert stalls.explain(episodes([False, False]), [1.0, 2.0], figures) == []
    # idle 1 % with iowait 30 %: waiting on the device, not CPU-bound (the CPU-bound flag's rule)
    waiting = stalls.Figures({"vmstat.id": np.array([1.0]), "vmstat.wa": np.array([30.0])})
    assert stalls.explain([(0, 1)], [1.0], waiting) == ["stall at 1 s: no cause seen"]


def test_checkpoint_age_between_the_flush_points_is_hurried_flushing_and_history_growth_needs_both_bars() -> None:
    # Ages in MiB against async 70 and sync 80: 69.9 neither, 70 async, 79.9 async, 80 sync.
    ages = [69.9, 70.0, 79.9, 80.0]
    figures = _figures(status__checkpoint_age=[age * 2 ** 20 for age in ages])
    lines = stalls.explain([(0, 1), (1, 1), (2, 1), (3, 1)], [1.0, 2.0, 3.0, 4.0], figures)
    assert lines == ["stall at 1 s: no cause seen",
                     "stall at 2 s: checkpoint age past the async flush point (hurried flushing): 70 MiB",
                     "stall at 3 s: checkpoint age past the async flush point (hurried flushing): 79.9 MiB",
                     "stall at 4 s: checkpoint age past the sync flush point (writers wait for flushing): 80 MiB"]
    # Without the server's flush points the age says nothing (never a share guessed from the capacity).
    unknown = stalls.Figures({"status.checkpoint_age": np.array([99.0 * 2 ** 20])})
    assert stalls.explain([(0, 1)], [1.0], unknown) == ["stall at 1 s: no cause seen"]
    # History length: usual change 100 an interval; a rise of 1500 fires (≥ 1000 and ≥ 4×100), a rise
    # of 900 does not (below the floor), nor a fall, nor the first interval (no interval before it).
    history = _figures(status__Innodb_history_list_length=[5000, 5100, 5000, 6500, 6600, 7500, 6000, 6100])
    fired = stalls.explain([(0, 1), (3, 1), (5, 1), (6, 1)], [float(t) for t in range(1, 9)], history)
    assert fired == ["stall at 1 s: no cause seen",
                     "stall at 4 s: history list growth (purge behind: 1000 or more and 4× the usual change in an "
                     "interval): 1.5e+03 undo logs",
                     "stall at 6 s: no cause seen", "stall at 7 s: no cause seen"]


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
    # The host, at the trial's end, gives its stalls flag the same causes from the files it wrote.
    assert _host_causes(run / TRIAL) == causes
    # With flush points that put every second past the async point, a warning in the second stall's
    # second, and history growth at the first: host and report still say one thing.
    (run / TRIAL / "flush_points.txt").write_text("log_max_modified_age_async\t1\nInnodb_checkpoint_max_age\t9999999999\n")
    started = _started(run)
    with (run / TRIAL / "mysqld.err").open("a") as log:
        moment = started + dt.timedelta(seconds=second - 0.5)
        log.write(f"{moment:%Y-%m-%d} {moment.hour:2d}:{moment:%M:%S} 0 [ERROR] InnoDB: fsync() returned EIO\n")
    lines = status.read_text().splitlines(keepends=True)
    history = [index for index, line in enumerate(lines) if line.startswith(f"{stamp}\tInnodb_history_list_length\t")]
    if history:  # the sample's own change, 50000 more
        fields = lines[history[0]].split("\t")
        lines[history[0]] = "\t".join([fields[0], fields[1], str(int(fields[2]) + 50000), fields[3]])
    else:
        last = max(index for index, line in enumerate(lines) if line.startswith(stamp + "\t"))
        lines.insert(last + 1, f"{stamp}\tInnodb_history_list_length\t50000\tdelta\n")
    status.write_text("".join(lines))
    causes = stats.cells(frame.load(run)).set_index("trial").loc[TRIAL, "stall_causes"].split("; ")
    assert "checkpoint age past the async flush point" in causes[0] and "history list growth" in causes[0], causes
    assert causes[1].startswith(f"stall at {second:g} s: checkpoint age past the async flush point (hurried flushing): ")
    assert causes[1].endswith('the server\'s error log: "[ERROR] InnoDB: fsync() returned EIO"'), causes
    assert _host_causes(run / TRIAL) == causes


def test_causes_the_host_cannot_read_cost_the_stalls_flag_its_causes_alone(tmp_path: Path, monkeypatch) -> None:
    run = tmp_path / "run"
    shutil.copytree(DEMO, run)
    _doctor(run)

    def broken(*_: object) -> None:
        raise ValueError("a stamp past the calendar")

    monkeypatch.setattr(collected, "stall_figures", broken)
    assert _host_causes(run / TRIAL) == [
        "causes not read on the host (ValueError: a stamp past the calendar); the report reads them again"]


def _host_causes(directory: Path) -> list[str]:
    """The causes the trial module gives its stalls flag in trial.json, as it does at the trial's end:
    its driver's summary (summarise_driver), then innomatrix_host.flags.of_trial."""
    trial = json.loads((directory / "trial.json").read_text())
    durations = trial["durations"]
    cell = {"workload": "oltp", "warmup": durations["warmup_s"], "report_interval": durations["report_interval_s"]}
    measured = trial_module.summarise_driver(directory, cell, trial)
    found = flags.of_trial(directory, trial, measured.stalled, measured.last_t, measured.times)
    [stall] = [flag for flag in found if flag["flag"] == "stalls"]
    return stall["evidence"]["causes"]


def _status_stamp_at(status: Path, loaded: frame.Frame, t: float) -> str:
    """The time stamp of status.log's sample the frame aligned to the driver's interval ending at t."""
    stamps = sorted({line.split("\t")[0] for line in status.read_text().splitlines()[1:]})
    started = pd.Timestamp(loaded.trials.loc[TRIAL, "started"])
    offsets = [(pd.Timestamp(stamp) - started).total_seconds() for stamp in stamps]
    return stamps[int(np.argmin([abs(offset - t) for offset in offsets]))]


def _started(run: Path) -> dt.datetime:
    return frame.load(run).trials.loc[TRIAL, "started"].to_pydatetime().replace(tzinfo=None)


@pytest.mark.parametrize("local_hours", [0, 1, -5])
def test_what_the_server_warned_of_in_a_stalls_seconds_is_among_its_causes(tmp_path: Path, local_hours: int) -> None:
    """The real MariaDB trial's mysqld.err (local stamps, no zone), with a warning written at the first
    stall's second and a note (not a warning) at the second's; the whole log stamped as a host at
    UTC+local_hours would stamp it: the warning is placed on its stall all the same."""
    run = tmp_path / "run"
    shutil.copytree(DEMO, run)
    first, second = _doctor(run)
    started, shift = _started(run), dt.timedelta(hours=local_hours)
    log = run / TRIAL / "mysqld.err"
    stamp = re.compile(r"^(\d{4}-\d{2}-\d{2}) +(\d{1,2}:\d{2}:\d{2})")

    def local(moment: dt.datetime) -> str:
        return f"{moment:%Y-%m-%d} {moment.hour:2d}:{moment:%M:%S}"
    shifted = [stamp.sub(lambda m: local(dt.datetime.fromisoformat(f"{m[1]}T{int(m[2][:-6]):02d}{m[2][-6:]}") + shift),
                         line) for line in log.read_text().splitlines(keepends=True)]
    warning = "[Warning] InnoDB: A long wait (12 seconds) was observed for dict_sys.latch; a test"
    shifted += [f"{local(started + shift + dt.timedelta(seconds=first - 0.5))} 0 {warning}\n",
                f"{local(started + shift + dt.timedelta(seconds=second - 0.5))} 0 [Note] InnoDB: nothing wrong\n"]
    log.write_text("".join(shifted))
    loaded = frame.load(run)
    causes = stats.cells(loaded).set_index("trial").loc[TRIAL, "stall_causes"].split("; ")
    assert causes[0] == (f"stall at {first:g} s: the server's error log: "
                         '"[Warning] InnoDB: A long wait (12 seconds) was observed for dict_sys.latch, a test"'), causes
    assert causes[1] == f"stall at {second:g} s: no cause seen", causes
    assert ("local stamps read as UTC" in loaded.trials.loc[TRIAL, "notes"]) == (local_hours != 0)


def test_the_error_log_reader_takes_both_servers_stamps_and_passes_over_what_is_no_stamped_line() -> None:
    text = ("2026-11-27T21:25:05.432058Z 0 [Warning] [MY-010139] [Server] Changed limits: max_open_files\n"
            "2026-11-27T22:25:06.1+01:00 0 [ERROR] [MY-012592] [InnoDB] Operating system error number 28\n"
            "2026-11-27T21:25:07.000000Z 0 [System] [MY-010116] [Server] starting\n"
            "2026-11-28  0:41:53 0 [Warning] Aborted connection 5 to db: 'sbtest'\n"
            "2026-13-28  0:41:53 0 [Warning] a month no calendar has\n"
            f"{'9' * 400}-11-28  0:41:53 0 [Warning] a year of 400 digits\n"
            "   continuation of a message\n"
            "2026-11-28  0:41:54 0 [Warning] \x1b[31mcolour\x00\n")
    found = server_log.read(text)
    assert found.first == dt.datetime(2026, 11, 27, 21, 25, 5, 432058, tzinfo=dt.timezone.utc)
    assert [(w.at.isoformat(), w.text) for w in found.warned] == [
        ("2026-11-27T21:25:05.432058+00:00", "[Warning] [MY-010139] [Server] Changed limits: max_open_files"),
        ("2026-11-27T21:25:06.100000+00:00", "[ERROR] [MY-012592] [InnoDB] Operating system error number 28"),
        ("2026-11-28T00:41:53", "[Warning] Aborted connection 5 to db: 'sbtest'"),
        ("2026-11-28T00:41:54", "[Warning] ?[31mcolour?"),
    ]
    assert not found.cut


def test_the_hosts_status_reader_takes_whole_numbers_and_passes_over_the_rest() -> None:
    from innomatrix_host import collected
    text = ("time\tvariable\tvalue\tkind\n"
            "2026-11-28T00:00:00.000Z\tInnodb_history_list_length\t100\tabsolute\n"
            "2026-11-28T00:00:00.000Z\tInnodb_log_waits\t7\tabsolute\n"
            "2026-11-28T00:00:01.000Z\tInnodb_history_list_length\t-40\tdelta\n"
            "2026-11-28T00:00:01.000Z\tInnodb_log_waits\t--5\tdelta\n"
            "2026-11-28T00:00:02.000Z\tInnodb_log_waits\t1e400\tdelta\n"
            "2026-11-28T00:00:02.000Z\tInnodb_buffer_pool_wait_free\t" + "9" * 400 + "\tdelta\n"
            "2026-11-28T00:00:03.000Z\tInnodb_log_waits\t4\tdelta\n")
    samples = collected.status_samples(text)
    assert [figures for _, figures in samples] == [
        {"Innodb_history_list_length": 60.0, "Innodb_buffer_pool_wait_free": 0.0, "Innodb_log_waits": 0.0},
        {"Innodb_history_list_length": 60.0, "Innodb_buffer_pool_wait_free": 0.0, "Innodb_log_waits": 0.0},
        {"Innodb_history_list_length": 60.0, "Innodb_buffer_pool_wait_free": 0.0, "Innodb_log_waits": 4.0},
    ]

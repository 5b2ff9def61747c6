"""`innomatrix report` and `innomatrix compare` through the CLI, on small fixture trees."""

from __future__ import annotations

import json

import re
import subprocess
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest
from innomatrix import cli, frame
from trees import Trial, host_json, matrix_run, real_tiny, report_run, steady, write_trial

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / ".venv" / "bin" / "innomatrix"


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    return report_run(tmp_path_factory)


def test_report_writes_every_output_into_the_run(run):
    for name in ("summary.csv", "cells.parquet", "intervals.parquet", "report.html"):
        assert (run / name).stat().st_size > 0, name
    tables = sorted(p.name for p in (run / "tables").iterdir())
    assert tables == sorted(f"{t}.{ext}" for t in ("variant_by_bp", "cost_per_trx", "fs_by_bp", "fs_compare",
                                                   "steady_state", "cells")
                            for ext in ("csv", "md"))
    pngs = sorted(p.name for p in (run / "plots").glob("*.png"))
    # per (host, fs, workload, threads) group: throughput (every interval and 10 s means), latency, cpu, io;
    # plus one bar chart per table group
    assert len([p for p in pngs if p.startswith(("throughput", "latency_", "cpu_", "io_"))]) == 2 * 5
    assert len([p for p in pngs if p.startswith("bars_")]) == 2 + 2
    html = (run / "report.html").read_text()
    assert html.count('src="data:image/png;base64,') == len(pngs)
    assert not re.search(r'(src|href)="(https?:|file:|//)', html)  # nothing outside the file


def test_summary_and_parquet_hold_one_row_per_trial_and_the_tidy_frame(run):
    summary = pd.read_csv(run / "summary.csv")
    assert len(summary) == 5 and summary["trial"].is_unique
    cells = pd.read_parquet(run / "cells.parquet")
    assert set(summary["trial"]) == set(cells["trial"])
    intervals = pq.read_table(run / "intervals.parquet").to_pandas()
    assert {"trial", "t", "metric", "value", "measured", "filesystem", "bp_size", "variant"} <= set(intervals.columns)
    assert len(intervals) == len(frame.load(run).intervals)
    xfs = intervals[(intervals["filesystem"] == "xfs") & (intervals["metric"] == "driver.tps")]
    assert xfs["trial"].nunique() == 3


def test_tables_have_the_constructed_answers_and_flagged_cells_marked(run):
    fs = pd.read_csv(run / "tables" / "fs_by_bp.csv")
    assert list(fs.columns).index("bp-64M") < list(fs.columns).index("bp-256M")  # by size, not by name
    assert sorted(fs["filesystem"]) == ["ext4", "xfs", "xfs"]  # medians only: how they compare is fs_compare
    pairs = pd.read_csv(run / "tables" / "fs_compare.csv").set_index(["variant", "bp_size"])
    assert (pairs["filesystem_a"] == "ext4").all() and (pairs["filesystem_b"] == "xfs").all()
    assert pairs.loc[("A", "64M"), "ratio"] == pytest.approx(1.4, abs=0.02)
    assert pairs.loc[("A", "256M"), "ratio"] == pytest.approx(1.4, abs=0.02)
    # One trial a side, no floor: the ratio is shown with the reason it has no verdict.
    assert set(pairs.loc[pairs["only_in"].isna(), "verdict"]) == {"1 trial on a side: run-to-run variance unknown"}
    markdown = (run / "tables" / "variant_by_bp.md").read_text()
    row_c = next(line for line in markdown.splitlines() if "| xfs | oltp | 2 | C |" in line)
    bp_64m, bp_256m = (cell.strip() for cell in row_c.split("|")[6:8])
    assert bp_64m.endswith("*") and bp_256m == "–"  # the stalled cell is marked (C ran at 64M only) ...
    assert "stalls (1 trial: localhost/xfs/oltp/C/bp-64M/t2/r1)" in markdown  # ... with why, by kind of flag,
    every_trial = (run / "tables" / "cells.md").read_text()  # and the figures in the table of every trial
    assert "stalls: 3 intervals in 1 episodes (longest 3 s)" in every_trial
    summary = pd.read_csv(run / "summary.csv").set_index("trial")
    assert summary["flagged"].sum() == 1


def test_report_cli_prints_the_tables_and_the_path_and_progress_on_stderr(tmp_path, capsys):
    tiny = real_tiny(tmp_path)
    out = tmp_path / "elsewhere"
    assert cli.main(["report", str(tiny), "--out", str(out)]) == 0
    stdout, stderr = capsys.readouterr()
    assert stdout.splitlines()[0] == "1 trial, 1 flagged"
    assert "| localhost | xfs | oltp | 2 | A | 701.9* |" in stdout
    assert stdout.rstrip().endswith(f"report: {out / 'report.html'}")
    assert "innomatrix: tiny: loaded 1/1 trials" in stderr
    assert (out / "report.html").exists() and not (tiny / "report.html").exists()


def test_two_runs_get_no_verdict_from_their_trials_and_one_from_the_hosts_floor(tmp_path, capsys):
    # Three repeats a side with 3 % run-to-run spread; only xfs/256M is really 1.2 × faster on A.
    results = tmp_path / "results"
    a = matrix_run(results / "device-a", seed=0, stall=False, repeats=3, run_to_run=0.03)
    b = matrix_run(results / "device-b", seed=100, stall=False, scale={("xfs", "256M"): 1 / 1.2}, repeats=3,
                   run_to_run=0.03)
    assert cli.main(["compare", str(a), str(b)]) == 0
    stdout, _ = capsys.readouterr()
    # Each run may have moved as a whole, which the trials of one run cannot show: no verdict.
    assert stdout.splitlines()[0] == ("5 matching configurations, 0 differ (95 % CI excludes 1), 5 without a verdict "
                                      "(two runs: run-to-run drift not measured)")
    assert re.fullmatch(r"noise floor: run-to-run CoV of the trial medians \d\.\d% \(pooled over 10 configurations\); "
                        r"at 3 trials a side, a difference within ±\d+\.\d% cannot show", stdout.splitlines()[1])
    table = pd.read_csv(a / "compare-device-b" / "compare.csv")
    assert not table["differs"].any() and (table["interval_from"] == "trials").all()
    faster = table[(table["filesystem"] == "xfs") & (table["bp_size"] == "256M")]
    assert faster["ci_low"].item() > 1  # the trials' interval is shown; it is not a verdict

    # The host's floor, from five unchanged runs of the same matrix, gives each run its drift.
    noise = [matrix_run(results / f"noise-{index}", seed=10 * index, stall=False, repeats=3, run_to_run=0.03)
             for index in range(1, 6)]
    for run in (a, b, *noise):
        host_json(run)
    assert cli.main(["noise", *map(str, noise)]) == 0
    capsys.readouterr()
    assert cli.main(["compare", str(a), str(b)]) == 0
    stdout, _ = capsys.readouterr()
    assert stdout.splitlines()[0] == "5 matching configurations, 1 differ (95 % CI excludes 1)"
    out = a / "compare-device-b"
    table = pd.read_csv(out / "compare.csv")
    differs = table[table["differs"]]
    assert differs[["filesystem", "bp_size"]].values.tolist() == [["xfs", "256M"]]
    assert differs["ratio"].item() == pytest.approx(1.2, abs=0.06)
    assert differs["ci_low"].item() < 1.2 < differs["ci_high"].item()
    assert (table["interval_from"] == "trials + run drift (host noise floor)").all()
    assert table["verdict"].tolist() == ["differs" if d else "no difference" for d in table["differs"]]
    assert (table.loc[~table["differs"], "ci_low"] < 1).all() and (table.loc[~table["differs"], "ci_high"] > 1).all()
    assert (out / "compare.md").exists() and (out / "plots" / "compare_ratios.png").exists()
    assert 'src="data:image/png;base64,' in (out / "compare.html").read_text()


def test_compare_gives_no_verdict_with_one_trial_a_side(tmp_path, capsys):
    # Within one trial the intervals agree to a few percent, but a single trial says nothing of
    # where the next run would land: a 1.2 × difference is shown, and not judged.
    a = matrix_run(tmp_path / "one-a", seed=0, stall=False)
    b = matrix_run(tmp_path / "one-b", seed=100, stall=False, scale={("xfs", "256M"): 1 / 1.2})
    assert cli.main(["compare", str(a), str(b)]) == 0
    stdout, _ = capsys.readouterr()
    assert stdout.splitlines()[0] == ("5 matching configurations, 0 differ (95 % CI excludes 1), 5 without a verdict "
                                      "(1 trial on a side: run-to-run variance unknown)")
    assert stdout.splitlines()[1] == ("noise floor: unknown (no configuration has 2 trials that ended ok: run with "
                                      "repeats=3 or more, or measure the host's floor once with innomatrix noise)")
    table = pd.read_csv(a / "compare-one-b" / "compare.csv")
    assert not table["differs"].any() and table["ci_low"].isna().all()
    assert table.loc[table["bp_size"] == "256M", "ratio"].max() == pytest.approx(1.2, abs=0.03)


@pytest.mark.parametrize(("damage", "expected"), [
    ("status-cut", r"^innomatrix: \S+/status\.log:\d+: expected time, variable, value and kind"),
    ("iostat-corrupt", r"^innomatrix: \S+/iostat\.json:29: corrupt JSON"),
    ("vmstat-cut", r"^innomatrix: \S+/vmstat\.log:10: expected 17 numbers"),
    ("absent", r"^innomatrix: \S+/absent: no such results directory$"),
    ("driver-absurd", r"^innomatrix: \S+/driver\.log: line 14: absurd number 10000000000000000000\.\.\."),
    ("driver-repeated", r"^innomatrix: \S+/driver\.log: line 15: interval \[2s\] after \[2s\]: repeated"),
])
def test_damaged_input_is_one_line_naming_the_file_and_exit_2(tmp_path, capsys, damage, expected):
    tiny = real_tiny(tmp_path)
    trial = tiny / "localhost/xfs/oltp/A/bp-64M/t2/r1"
    if damage == "status-cut":
        text = (trial / "status.log").read_text()
        (trial / "status.log").write_text(text[: text.rindex("\tdelta")])
    elif damage == "iostat-corrupt":
        text = (trial / "iostat.json").read_text()
        (trial / "iostat.json").write_text(text.replace('"w/s": 1758.00', '"w/s": 17x58.00'))
    elif damage == "vmstat-cut":
        text = (trial / "vmstat.log").read_text()
        (trial / "vmstat.log").write_text(text[:-12])
    elif damage.startswith("driver-"):
        lines = (trial / "driver.log").read_text().splitlines(keepends=True)
        second = next(i for i, line in enumerate(lines) if line.startswith("[ 2s ]"))
        if damage == "driver-absurd":
            lines[second] = lines[second].replace("tps: 770.99", "tps: 1" + "0" * 400)
        else:
            lines.insert(second, lines[second])
        (trial / "driver.log").write_text("".join(lines))
    target = tiny / "absent" if damage == "absent" else tiny
    assert cli.main(["report", str(target)]) == 2
    stdout, stderr = capsys.readouterr()
    assert stdout == ""
    assert len(stderr.strip().splitlines()) == 1, stderr  # the error alone, no traceback
    assert re.search(expected, stderr.strip().splitlines()[-1]), stderr


def test_a_damaged_log_of_a_trial_that_failed_anyway_does_not_stop_the_report(tmp_path, capsys):
    # A driver killed mid-output leaves a cut log; its trial already says why it failed.
    tiny = real_tiny(tmp_path)
    trial = tiny / "localhost/xfs/oltp/A/bp-64M/t2/r1"
    record = json.loads((trial / "trial.json").read_text())
    (trial / "trial.json").write_text(json.dumps({**record, "status": "failed", "reasons": ["sysbench was killed"]}))
    text = (trial / "driver.log").read_text()
    (trial / "driver.log").write_text(text.replace("tps: 770.99", "tps: 1" + "0" * 400))
    assert cli.main(["report", str(tiny)]) == 0
    summary = pd.read_csv(tiny / "summary.csv")
    assert summary["status"].item() == "failed" and "sysbench was killed" in summary["flags"].item()


def test_a_lost_interval_is_read_and_flagged(tmp_path, capsys):
    tiny = real_tiny(tmp_path)
    log = tiny / "localhost/xfs/oltp/A/bp-64M/t2/r1/driver.log"
    log.write_text("".join(line for line in log.read_text().splitlines(keepends=True) if not line.startswith("[ 2s ]")))
    assert cli.main(["report", str(tiny)]) == 0
    flags = pd.read_csv(tiny / "summary.csv")["flags"].item()
    assert "driver.log intervals out of step: line 14: interval [3s] after [1s]: 1 interval(s) of 1 s missing" in flags


def test_a_truncated_iostat_json_is_read_and_flagged(tmp_path, capsys):
    tiny = real_tiny(tmp_path)
    log = tiny / "localhost/xfs/oltp/A/bp-64M/t2/r1/iostat.json"
    text = log.read_text()
    log.write_text(text[: text.rindex("]") - 40])
    assert cli.main(["report", str(tiny)]) == 0
    summary = pd.read_csv(tiny / "summary.csv")
    assert "iostat.json cut short" in summary["flags"].item()
    capsys.readouterr()


def test_the_console_script_prints_no_traceback(tmp_path):
    if not SCRIPT.exists():
        pytest.skip(f"{SCRIPT} not installed (make venv)")
    done = subprocess.run([str(SCRIPT), "report", str(tmp_path)], capture_output=True, text=True, timeout=60,
                          check=False)
    assert done.returncode == 2
    assert done.stderr == f"innomatrix: {tmp_path}: no trial directories " \
                          "(<host>/[<layout>-m<N>/]<fs>/<workload>/<variant>/bp-<size>/t<N>/r<N>/trial.json; fileio: <subtest>/bs-<size>)\n"
    assert done.stdout == ""


def test_a_failed_trial_without_intervals_stays_in_the_tables_marked(tmp_path, capsys):
    run = tmp_path / "run"
    write_trial(run, Trial(tps=steady(30), bp_size="64M", warmup_s=5))
    write_trial(run, Trial(tps=steady(30), bp_size="256M", warmup_s=5, status="failed",
                           reasons=["server died during the trial"], files=()))
    assert cli.main(["report", str(run)]) == 0
    capsys.readouterr()
    row = (run / "tables" / "variant_by_bp.md").read_text().splitlines()[4]
    bp_64m, bp_256m = (cell.strip() for cell in row.split("|")[6:8])
    assert float(bp_64m.replace(",", "")) > 0 and bp_256m == "–*"  # the failed one: no figure, marked
    flags = pd.read_csv(run / "summary.csv").set_index("bp_size")["flags"]
    assert flags["256M"] == "trial failed: server died during the trial; no interval measured after the warmup"


def test_a_footnote_groups_the_flags_by_kind_with_the_trials_they_cover():
    from innomatrix.report import tables

    flagged = [(f"h/xfs/oltp/A/bp-16M/t4/r{repeat}", f"buffer pool holds the dataset: device reads {repeat / 10:.2g}/s")
               for repeat in range(1, 13)] + [("h/xfs/oltp/A/bp-32M/t4/r1", "stalls: 2 intervals in 1 episodes (longest "
                                               "2 s); buffer pool holds the dataset: device reads 0.3/s")]
    note = tables.grouped_flags(flagged)
    assert note == ("buffer pool holds the dataset (13 trials: h/xfs/oltp/A/bp-16M/t4/r1, h/xfs/oltp/A/bp-16M/t4/r2, "
                    "h/xfs/oltp/A/bp-16M/t4/r3, h/xfs/oltp/A/bp-16M/t4/r4, h/xfs/oltp/A/bp-16M/t4/r5, "
                    "h/xfs/oltp/A/bp-16M/t4/r6 and 7 more); stalls (1 trial: h/xfs/oltp/A/bp-32M/t4/r1)")


@pytest.mark.parametrize("sla", [["--sla-ms", "0"], ["--sla-percentile", "120"], ["--sla-ms", "nan"]])
def test_an_sla_that_cannot_be_met_or_missed_is_refused_in_one_line(tmp_path, capsys, sla):
    tiny = real_tiny(tmp_path)
    assert cli.main(["report", str(tiny), *sla]) == 2
    _, stderr = capsys.readouterr()
    assert stderr.startswith("innomatrix: --sla-percentile ") and stderr.count("\n") == 1
    assert not (tiny / "report.html").exists()
    # compare judges capacities by the same SLA, and refuses it alike
    assert cli.main(["compare", str(tiny), str(tiny), *sla]) == 2
    _, stderr = capsys.readouterr()
    assert stderr.startswith("innomatrix: --sla-percentile ") and stderr.count("\n") == 1
    assert not (tiny / f"compare-{tiny.name}").exists()


def test_compare_by_host_judges_capacities_by_the_sla_given_and_refuses_a_bad_one(tmp_path, capsys):
    tiny = real_tiny(tmp_path)
    assert cli.main(["compare", str(tiny), "--by", "host", "--sla-ms", "0"]) == 2
    _, stderr = capsys.readouterr()
    assert stderr.startswith("innomatrix: --sla-percentile 99 --sla-ms 0: ") and stderr.count("\n") == 1
    # An SLA it can use is taken (host A ÷ host B capacities); this run has one host to compare.
    assert cli.main(["compare", str(tiny), "--by", "host", "--sla-ms", "50"]) == 2
    _, stderr = capsys.readouterr()
    assert stderr.splitlines()[-1].endswith("only localhost ran trials here; --by host compares two or more hosts "
                                            "of one run")
    assert not (tiny / "compare-hosts").exists()


def test_a_comparisons_flagged_trials_are_named_with_their_run(tmp_path, capsys):
    # The two runs' trials have the same paths within their runs: named without the run, four
    # flagged trials read as two (the bench's A/A said "stalls (4 trials: …r1, …r2, …r3)").
    a, b = (matrix_run(tmp_path / name, repeats=2) for name in ("stalled-a", "stalled-b"))
    assert cli.main(["compare", str(a), str(b)]) == 0
    out, _ = capsys.readouterr()
    [note] = [line for line in out.splitlines() if line.startswith("* flagged: ")]
    trials = [f"{run}/localhost/xfs/oltp/C/bp-64M/t2/r{repeat}" for run in ("stalled-a", "stalled-b") for repeat in (1, 2)]
    assert note.startswith(f"* flagged: stalls (4 trials: {', '.join(trials)})"), note
    # Within one run the paths are the run's own: named as they are, never by the column compared.
    assert cli.main(["report", str(a)]) == 0
    within = (a / "tables" / "fs_compare.md").read_text()
    assert "* flagged: stalls (2 trials: localhost/xfs/oltp/C/bp-64M/t2/r1, localhost/xfs/oltp/C/bp-64M/t2/r2)" in within

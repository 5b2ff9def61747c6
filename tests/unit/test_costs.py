"""What a transaction costs (issue #33, mdcallag's view): known answers written into synthetic
trees (bench/synth.py: vmstat, iostat and SHOW GLOBAL STATUS with set costs per transaction), the
report's table and compare's ratios with their interval and no verdict between two runs."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from innomatrix import cli
from synth import Trial, steady, write_trial

# Per transaction at 1000 tps on 2 vCPUs: us + sy = 70 % → 1400 µs; 120 reads/s of 16 KiB → 0.12
# reads and 1.92 KiB; 6 KiB written; Innodb_os_log_written half of 3000 bytes; 0.5 fsyncs.
KNOWN = {"CPU µs": 1400, "device reads": 0.12, "KiB read": 1.92, "KiB written": 6.0, "redo bytes": 1500,
         "fsyncs": 0.5}


def run_of(root, name: str, reads_s: float = 120.0, vcpus: object = 2, repeats: int = 3, level: float = 1000.0):
    run = root / name
    for repeat in range(1, repeats + 1):
        write_trial(run, Trial(tps=steady(30, level, 0.01, seed=repeat), repeat=repeat, warmup_s=5, seed=repeat,
                               device_reads_s=reads_s, fsyncs_per_trx=0.5))
    if vcpus is not None:
        (run / "localhost" / "host.json").write_text(json.dumps({"sessions": [{"vcpus": vcpus}]}))
    return run


def test_the_report_shows_what_a_transaction_costs(tmp_path):
    run = run_of(tmp_path, "run")
    assert cli.main(["report", str(run)]) == 0
    [row] = pd.read_csv(run / "tables" / "cost_per_trx.csv").to_dict("records")
    assert row["trials"] == 3 and row["trx_per_s"] == pytest.approx(1000, rel=0.01)
    found = {"CPU µs": row["cpu_us_per_trx"], "device reads": row["dev_reads_per_trx"],
             "KiB read": row["dev_kib_read_per_trx"], "KiB written": row["dev_kib_written_per_trx"],
             "redo bytes": row["redo_bytes_per_trx"], "fsyncs": row["fsyncs_per_trx"]}
    assert found == {name: pytest.approx(value, rel=0.03) for name, value in KNOWN.items()}
    # Each trial's own, in summary.csv (all but CPU, which needs the host's vCPUs).
    summary = pd.read_csv(run / "summary.csv")
    assert summary["dev_reads_per_trx"].tolist() == pytest.approx([0.12] * 3, rel=0.03)
    assert "What a transaction costs" in (run / "report.html").read_text()


@pytest.mark.parametrize("vcpus", [None, 0, "two", 10 ** 9, True])
def test_without_a_vcpu_count_a_machine_can_have_cpu_is_unknown_and_said(tmp_path, vcpus):
    run = run_of(tmp_path, "run", vcpus=vcpus)
    if vcpus is None:
        (run / "localhost" / "host.json").unlink(missing_ok=True)
    assert cli.main(["report", str(run)]) == 0
    [row] = pd.read_csv(run / "tables" / "cost_per_trx.csv").to_dict("records")
    assert math.isnan(row["cpu_us_per_trx"]) and row["dev_reads_per_trx"] == pytest.approx(0.12, rel=0.03)
    text = (run / "tables" / "cost_per_trx.md").read_text()
    assert "CPU µs unknown (–) for localhost: no vCPU count in its host.json" in text


def test_compare_gives_each_costs_ratio_with_its_interval_and_no_verdict_between_runs(tmp_path, capsys):
    # B reads three times what A reads a transaction; everything else the same.
    a, b = run_of(tmp_path, "a"), run_of(tmp_path, "b", reads_s=360.0)
    assert cli.main(["compare", str(a), str(b)]) == 0
    rows = pd.read_csv(a / "compare-b" / "cost_compare.csv").set_index("cost")
    reads = rows.loc["device reads"]
    assert reads["ratio"] == pytest.approx(1 / 3, rel=0.03) and reads["ci_high"] < 1
    assert reads["verdict"] == "two runs: run-to-run drift not measured"
    same = rows.loc["KiB written"]
    assert same["ratio"] == pytest.approx(1, rel=0.03) and same["ci_low"] <= 1 <= same["ci_high"]
    assert set(rows["verdict"]) == {"two runs: run-to-run drift not measured"}
    assert "What a transaction costs, a ÷ b" in capsys.readouterr().out


def test_a_cost_of_nothing_on_a_side_has_no_ratio(tmp_path):
    a, b = run_of(tmp_path, "a"), run_of(tmp_path, "b", reads_s=0.0)
    assert cli.main(["compare", str(a), str(b)]) == 0
    rows = pd.read_csv(a / "compare-b" / "cost_compare.csv").set_index("cost")
    assert rows.loc["device reads", "verdict"] == "a cost of 0 on a side: no ratio"
    assert math.isnan(rows.loc["device reads", "ratio"])


def test_runs_are_matched_on_layout_and_host_as_compare_matches_them(tmp_path):
    # A ran the plain device alone; B also ran md-raid0 over 2 members, reading 3× a transaction
    # there: only the plain device is in both, with its 3 trials a side.
    a, b = run_of(tmp_path, "a"), run_of(tmp_path, "b")
    for repeat in (1, 2, 3):
        write_trial(b, Trial(tps=steady(30, 1000.0, 0.01, seed=repeat), layout="md-raid0", members=2, repeat=repeat,
                             warmup_s=5, seed=repeat, device_reads_s=360.0, fsyncs_per_trx=0.5))
    assert cli.main(["compare", str(a), str(b)]) == 0
    reads = pd.read_csv(a / "compare-b" / "cost_compare.csv").set_index("cost").loc["device reads"]
    assert (reads["layout"], reads["a_trials"], reads["b_trials"]) == ("plain", 3, 3)
    assert reads["ratio"] == pytest.approx(1, rel=0.03)


def test_hosts_stay_apart_when_one_hosts_trials_all_failed_in_a_run(tmp_path):
    runs = {}
    for name, db2_status in (("a", "ok"), ("b", "failed")):
        run = runs[name] = tmp_path / name
        for host, reads, status in (("db1", 120.0, "ok"), ("db2", 480.0, db2_status)):
            for repeat in (1, 2):
                write_trial(run, Trial(tps=steady(30, 1000.0, 0.01, seed=repeat), host=host, repeat=repeat,
                                       warmup_s=5, seed=repeat, device_reads_s=reads, status=status,
                                       reasons=("sysbench exited 1",) if status != "ok" else ()))
    assert cli.main(["compare", str(runs["a"]), str(runs["b"])]) == 0
    rows = pd.read_csv(runs["a"] / "compare-b" / "cost_compare.csv")
    reads = rows[rows["cost"] == "device reads"].set_index("host")
    # db1 against db1 only (db2 has no ok trial in b): not db1 and db2 of a lumped together.
    assert list(reads.index) == ["db1"] and reads.loc["db1", "ratio"] == pytest.approx(1, rel=0.03)


def test_cpu_with_its_vcpus_unknown_on_a_side_says_so(tmp_path):
    a, b = run_of(tmp_path, "a"), run_of(tmp_path, "b", vcpus="many")
    assert cli.main(["compare", str(a), str(b)]) == 0
    rows = pd.read_csv(a / "compare-b" / "cost_compare.csv").set_index("cost")
    assert rows.loc["CPU µs", "verdict"] == "unknown on a side: no ratio"
    assert "b: CPU µs unknown (–) for localhost" in (a / "compare-b" / "cost_compare.md").read_text()


def test_each_measured_interval_has_the_cost_the_table_gives_and_a_stalled_one_has_none(tmp_path):
    """The cost panels' series: per interval, the same known answers as the table's; an interval of
    no transactions (a stall) has no cost, never its second's work over nothing."""
    from innomatrix import frame, stats
    from innomatrix.report import plots
    run = run_of(tmp_path, "run", repeats=1)
    loaded = frame.load(run)
    [trial] = loaded.trials.index
    series = plots.Series(loaded, plots.PerTransaction.NEEDS)
    costs = plots.PerTransaction(series, loaded.trials, {"localhost": 2})
    measured = loaded.trials.at[trial, "warmup_s"]
    for (metric, label, _, _), (name, value) in zip(plots.COST_PANELS, [
            ("CPU µs", 1400), ("device reads", 0.12), ("KiB written", 6.0), ("redo bytes", 1500), ("fsyncs", 0.5)]):
        t, per_trx = costs.get(metric, trial)
        after = per_trx[(t > measured + 1) & ~pd.isna(per_trx)]
        assert len(after) >= 20 and after == pytest.approx([value] * len(after), rel=0.05), (label, after)
    # Without the host's vCPUs, no CPU series (the other costs are the host's own figures).
    assert plots.PerTransaction(series, loaded.trials, {}).get(plots.COST + "cpu_us", trial) is None
    # An interval with no transactions: no cost there.
    tps_t, _ = series.get("driver.tps", trial)
    stalled = plots.PerTransaction(_Zeroed(series, tps_t[-3]), loaded.trials, {"localhost": 2})
    t, reads = stalled.get(plots.COST + "iostat.r/s", trial)
    assert pd.isna(reads[t == tps_t[-3]]).all() and not pd.isna(reads[t == tps_t[-4]]).any()
    cells = stats.cells(loaded)
    assert any(plot.name.startswith("costs_") for plot in plots.report_plots(loaded, cells, [], vcpus={"localhost": 2}))


class _Zeroed:
    """A Series whose driver figures are 0 at one interval: a stall."""

    def __init__(self, series, at):
        self.series, self.at = series, at

    def get(self, metric, trial):
        found = self.series.get(metric, trial)
        if found is None or not metric.startswith("driver."):
            return found
        return found[0], np.array([0.0 if t == self.at else v for t, v in zip(*found)])

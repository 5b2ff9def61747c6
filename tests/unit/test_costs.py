"""What a transaction costs (issue #33, mdcallag's view): known answers written into synthetic
trees (bench/synth.py: vmstat, iostat and SHOW GLOBAL STATUS with set costs per transaction), the
report's table and compare's ratios with their interval and no verdict between two runs."""

from __future__ import annotations

import json
import math

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

"""One definition per measure: the host's trial summary (innomatrix_host.sysbench.summarize, in trial.json
and the end-of-play lines) and the report's tables (stats.cells) read the same intervals the same
way: stalls, the median throughput, the median latency outside stalls, the error rate."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from innomatrix import frame, stats
from innomatrix_host import sysbench
from synth import Trial, steady, write_trial

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def _both(tmp_path, trial: Trial) -> tuple[dict, dict]:
    run = tmp_path / "run"
    write_trial(run, trial)
    report = stats.cells(frame.load(run)).iloc[0].to_dict()
    parsed = sysbench.parse_output((run / trial.path / "driver.log").read_text())
    host = sysbench.summarize(parsed["intervals"], trial.warmup_s, trial.report_interval)
    return host, report


def _trial() -> Trial:
    # The case: [1000, 1000, 5, 1000, 1000] held 0 stalls on the host and 1 in the report.
    tps = steady(40, 1000.0, 0.03, seed=4)
    tps[12], tps[20:23] = 5.0, [0.0, 0.0, 0.0]
    errs = [0.0] * 40
    errs[15], errs[30] = 4.0, 2.0
    return Trial(tps=tps, warmup_s=5, err_s=errs)


def test_host_summary_and_report_agree_on_every_shared_measure(tmp_path) -> None:
    host, report = _both(tmp_path, _trial())
    assert host["stall_intervals"] == report["stall_intervals"] == 4
    assert host["intervals_measured"] == report["intervals_measured"] == 35
    assert host["throughput_median"] == pytest.approx(report["throughput_median"])
    assert host["latency_p95_ms_median"] == pytest.approx(report["latency_ms_median"])
    assert host["errors_per_s_mean"] == pytest.approx(report["errors_per_s"])


def test_a_changed_definition_changes_both(tmp_path, monkeypatch) -> None:
    def every_interval_is_a_stall(throughputs, other_work=None, fraction=sysbench.STALL_FRACTION):
        return [True] * len(throughputs)

    monkeypatch.setattr(sysbench, "stall_flags", every_interval_is_a_stall)
    host, report = _both(tmp_path, _trial())
    assert host["stall_intervals"] == report["stall_intervals"] == 35
    assert host["latency_p95_ms_median"] is None and report["latency_ms_median"] != report["latency_ms_median"]


def _tpcc_both(tmp_path) -> tuple[dict, dict]:
    """A real tpcc_start log with one interval of 3 New-Orders among ~600, summarized by the host
    and by the report."""
    from innomatrix_host import tpcc

    text = (FIXTURES / "tpcc" / "tpcc_start-2wh-4c.log").read_text()
    assert "  15, trx: 588," in text
    text = text.replace("  15, trx: 588,", "  15, trx: 3,", 1)
    directory = tmp_path / "run" / "db1/xfs/tpcc/A/bp-64M/t4/r1"
    directory.mkdir(parents=True)
    (directory / "driver.log").write_text(text)
    (directory / "trial.json").write_text(json.dumps({
        "schema": 1, "key": "k" * 16, "status": "ok", "reasons": [],
        "cell": {"host": "db1", "filesystem": "xfs", "workload": "tpcc", "variant": "A", "bp_size": "64M",
                 "threads": 4, "repeat": 1},
        "times": {"started": "2026-11-22T06:00:00Z", "measure_start": "2026-11-22T06:00:00Z",
                  "ended": "2026-11-22T06:00:30Z"},
        "durations": {"warmup_s": 0, "measured_s": 30, "report_interval_s": 5},
    }))
    report = stats.cells(frame.load(tmp_path / "run", workers=1)).iloc[0].to_dict()
    return tpcc.summarize(tpcc.parse_output(text), 0, 5), report


def test_tpcc_host_summary_and_report_agree_on_stalls_and_medians(tmp_path) -> None:
    """tpcc: an interval of 3 New-Orders among ~600 is a stall in the report; the host once
    counted only intervals with none (0 stalls here), so the two disagreed on the same trial."""
    host, report = _tpcc_both(tmp_path)
    assert host["stall_intervals"] == report["stall_intervals"] == 1
    assert host["intervals_measured"] == report["intervals_measured"] == 6
    assert host["throughput_median"] == pytest.approx(report["throughput_median"])
    assert host["latency_p95_ms_median"] == pytest.approx(report["latency_ms_median"])


def test_one_function_gives_both_their_figures(tmp_path, monkeypatch) -> None:
    """The median, the latency outside stalls and the error rate come from one function,
    sysbench.trial_figures, on the host and in the report: change it, and both change."""
    real = sysbench.trial_figures

    def shifted(*args, **kwargs):
        figures = real(*args, **kwargs)
        return {**figures, "throughput_median": 42.0, "latency_median": 4.2, "errors_per_s_mean": 0.42}

    monkeypatch.setattr(sysbench, "trial_figures", shifted)
    host, report = _both(tmp_path, _trial())
    assert host["throughput_median"] == report["throughput_median"] == 42.0
    assert host["latency_p95_ms_median"] == report["latency_ms_median"] == 4.2
    assert host["errors_per_s_mean"] == report["errors_per_s"] == 0.42


def test_one_function_gives_tpcc_both_their_figures(tmp_path, monkeypatch) -> None:
    """tpcc too: its host summary takes the median New-Order rate, the stalls and the p95 median
    outside them from sysbench.trial_figures, as the report does."""
    real = sysbench.trial_figures

    def shifted(*args, **kwargs):
        figures = real(*args, **kwargs)
        return {**figures, "throughput_median": 42.0, "latency_median": 4.2,
                "stalls": [True] + list(figures["stalls"][1:])}

    monkeypatch.setattr(sysbench, "trial_figures", shifted)
    host, report = _tpcc_both(tmp_path)
    assert host["throughput_median"] == report["throughput_median"] == 42.0
    assert host["latency_p95_ms_median"] == report["latency_ms_median"] == 4.2
    assert host["stall_intervals"] == report["stall_intervals"] == 2

"""host/modules/innomatrix_trial.py on a fixed-rate cell: the driver's options, and what a run that
sysbench stopped on its full event queue becomes (a saturated trial, not a failed or cut one).
The logs are real sysbench 1.0.20 runs (tests/fixtures/sysbench/oltp); the driver that exits is a
real process."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from innomatrix_host import flags
from trial_module import trial_module

ROOT = Path(__file__).resolve().parents[2]

FIXTURES = ROOT / "tests" / "fixtures" / "sysbench" / "oltp"
QUEUE_FULL = FIXTURES / "1.0.20-oltp_read_write-t4-rate30000-p99-histogram-queue-full.txt"
SUSTAINED = FIXTURES / "1.0.20-oltp_read_write-t4-rate400-p99-histogram-checkpoint3.txt"


def _cell(rate: int, warmup: int = 2) -> dict:
    return {"rate": rate, "warmup": warmup, "duration": 6, "report_interval": 1, "workload": "oltp",
            "oltp": {"rand_type": "pareto", "percentile": 99}}


def _trial(warmup: int = 2) -> dict:
    return {"status": "ok", "reasons": [], "times": {}, "cell": {"workload": "oltp"},
            "durations": {"warmup_s": warmup, "measured_s": 6, "report_interval_s": 1}}


def test_a_fixed_rate_cell_asks_for_its_rate_and_a_histogram_of_its_measured_events() -> None:
    assert trial_module.at_a_rate(_cell(400, warmup=10)) == ["--rate=400", "--histogram=on", "--report-checkpoints=10"]
    assert trial_module.at_a_rate(_cell(400, warmup=0)) == ["--rate=400", "--histogram=on"]
    assert trial_module.at_a_rate(_cell(0)) == []
    assert "--rate=400" in trial_module.driver_extra(_cell(400)) and trial_module.driver_extra(_cell(0))[-1] == "run"


def test_sysbench_stopped_by_its_full_queue_is_a_saturated_trial(tmp_path: Path) -> None:
    shutil.copy(QUEUE_FULL, tmp_path / "driver.log")
    driver = subprocess.Popen(["sh", "-c", "exit 1"])  # sysbench exits 1 after the FATAL line
    trial = _trial()
    trial_module.wait_for_driver(driver, _cell(30000), tmp_path, trial)
    trial_module.summarise_driver(tmp_path, _cell(30000), trial)
    assert trial["status"] == "ok" and trial["rate"]["saturated"]
    assert trial["rate"]["reasons"][0].startswith("sysbench's event queue filled up")
    assert trial["reasons"][0].startswith("FATAL: The event queue is full")
    [saturated] = [flag for flag in flags.of_trial(tmp_path, trial, None, None) if flag["flag"] == "saturated"]
    assert saturated["evidence"]["offered_tps"] == 30000


def test_the_same_exit_of_a_closed_loop_driver_still_fails_its_trial(tmp_path: Path) -> None:
    shutil.copy(QUEUE_FULL, tmp_path / "driver.log")
    driver = subprocess.Popen(["sh", "-c", "exit 1"])
    with pytest.raises(trial_module.TrialError, match="exited 1"):
        trial_module.wait_for_driver(driver, _cell(0), tmp_path, _trial())
    (tmp_path / "driver.log").write_text(SUSTAINED.read_text().replace("FATAL", "fatal"))
    failing = subprocess.Popen(["sh", "-c", "exit 1"])
    with pytest.raises(trial_module.TrialError, match="exited 1"):  # a rate cell whose driver failed for another reason
        trial_module.wait_for_driver(failing, _cell(400), tmp_path, _trial())


def test_a_sustained_rate_keeps_its_histogram_and_no_flag(tmp_path: Path) -> None:
    shutil.copy(SUSTAINED, tmp_path / "driver.log")
    trial = _trial(warmup=3)
    trial_module.summarise_driver(tmp_path, _cell(400, warmup=3), trial)
    assert trial["status"] == "ok" and not trial["rate"]["saturated"]
    assert sum(events for _, events in trial["latency_histogram"]) == trial["driver_summary"]["events"] == 1981
    assert not [flag for flag in flags.of_trial(tmp_path, trial, None, None) if flag["flag"] == "saturated"]

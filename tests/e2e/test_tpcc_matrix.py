"""tpcc-mysql as a workload of the matrix, end to end: built by the tpcc role from the source
tree TPCC_MYSQL_SRC names, loaded in parallel, run against real MariaDB on a loop device.

The upstream repository cannot be reached from CI here, so without TPCC_MYSQL_SRC these tests
skip, loudly. To run them: fetch Percona-Lab/tpcc-mysql anywhere and
    TPCC_MYSQL_SRC=/path/to/tpcc-mysql .venv/bin/pytest tests/e2e/test_tpcc_matrix.py
"""

from __future__ import annotations

import json
import os

import pytest
import yaml

from e2e_env import NEEDS_ROOT, ok

SOURCE = os.environ.get("TPCC_MYSQL_SRC", "")
pytestmark = [
    *NEEDS_ROOT,
    pytest.mark.skipif(
        not SOURCE,
        reason="TPCC-MYSQL END-TO-END TESTS SKIPPED: set TPCC_MYSQL_SRC to a tpcc-mysql source tree "
        "(github.com/Percona-Lab/tpcc-mysql is not reachable from CI here)",
    ),
]

TPCC_KNOBS = {
    "workloads": ["tpcc"],
    "filesystems": ["xfs"],
    "variants": ["A"],
    "bp_sizes": ["64M", "128M"],
    "threads": [2],
    "warmup": 4,
    "duration": 10,
    "report_interval": 2,
    "tpcc_warehouses": 2,
    "tpcc_load_jobs": 2,
}


def play(env, *extra: str):
    knobs = env.base / "tpcc-knobs.yml"
    knobs.write_text(yaml.safe_dump({**TPCC_KNOBS, "tpcc_mysql_src": SOURCE,
                                     "tpcc_src_dir": str(env.base / "tpcc-src"),
                                     "tpcc_build_dir": str(env.base / "tpcc-build")}))
    return env.play("-e", f"@{knobs}", "-e", "run_name=tpcc", *extra)  # a later run_name wins


def test_tpcc_cells_are_loaded_once_and_measured(env):
    done = play(env)
    ok(done)
    run_dir = env.results / "tpcc"
    trials = {str(p.parent.relative_to(run_dir)): json.loads(p.read_text())
              for p in run_dir.glob("*/*/tpcc/*/bp-*/t*/r[0-9]/trial.json")}
    assert sorted(trials) == ["localhost/xfs/tpcc/A/bp-128M/t2/r1", "localhost/xfs/tpcc/A/bp-64M/t2/r1"]
    for path, trial in trials.items():
        # [NG] in the response-time checks is a flag (no think time); anything else is a failure.
        assert trial["status"] == "ok", (path, trial["reasons"])
        assert trial["driver"]["name"] == "tpcc-mysql" and trial["driver"]["version"]
        assert "tpcc_start" in trial["driver"]["command"] and "-S" in trial["driver"]["command"]
        summary = trial["summary"]
        assert summary["throughput_unit"] == "tpmC" and summary["tpmc_measured"] > 0
        # The tool's TpmC is the whole run's New-Orders × 60 ÷ seconds, recomputed from the intervals.
        assert summary["tpmc_tool"] == pytest.approx(summary["tpmc_whole_run"], rel=0.01)
        assert summary["intervals_measured"] == TPCC_KNOBS["duration"] // TPCC_KNOBS["report_interval"]
        assert summary["latency_p95_ms_median"] > 0
        assert (run_dir / path / "status.log").stat().st_size > 0
    [dataset] = [json.loads(p.read_text()) for p in run_dir.glob("localhost/xfs/tpcc/dataset-*/dataset.json")]
    load = dataset["tpcc"]
    assert load["warehouses"] == 2 and load["jobs"] == 2 and load["warehouses_per_min"] > 0
    assert load["row_counts"]["stock"] == 200000 and load["row_counts"]["item"] == 100000
    assert {job["exit"] for job in load["loaders"]} == {0}
    assert dataset["tpcc_commit"]
    assert env.stray_processes() == []


def test_a_rerun_of_the_tpcc_matrix_runs_nothing(env):
    done = play(env)
    ok(done)
    assert "2 cells: 0 to run, 2 already finished" in done.stdout


def test_an_adaptive_tpcc_cell_stops_tpcc_start_and_keeps_every_interval(env):
    """warmup=auto duration=auto on tpcc: 2-s intervals, so single-interval rounds under these caps;
    precision=0.5 passes at the first test, so the trial stops tpcc_start itself."""
    done = play(env, "-e", "bp_sizes=64M", "-e", "run_name=tpcc-auto", "-e", "warmup=auto", "-e", "warmup_max=20",
                "-e", "duration=auto", "-e", "duration_min=10", "-e", "duration_max=30", "-e", "precision=0.5")
    ok(done)
    trial = json.loads((env.results / "tpcc-auto" / "localhost/xfs/tpcc/A/bp-64M/t2/r1/trial.json").read_text())
    assert trial["status"] == "ok", trial["reasons"]
    decided = trial["durations"]["adaptive"]
    assert decided["ended_by"] == "precision" and decided["stopped_driver"] and decided["round_s"] == 2
    assert decided["warmup_decided_by"] in ("steady", "max") and decided["measure_start_s"] % 2 == 0
    measured = trial["durations"]["measured_s"]
    assert measured == 20  # ten intervals of 2 s: the first test of the interval
    summary = trial["summary"]
    assert summary["final_tables"] is False and summary["tpmc_tool"] is None
    assert summary["intervals_measured"] == measured // 2 and summary["tpmc_measured"] > 0
    log = (env.results / "tpcc-auto" / "localhost/xfs/tpcc/A/bp-64M/t2/r1/driver.log").read_text()
    assert "<TpmC>" not in log and f"{int(decided['end_s']):4d}, trx:" in log
    assert env.stray_processes() == []

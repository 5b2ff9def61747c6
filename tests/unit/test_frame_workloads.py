"""tpcc and fileio trials in the tidy frame and the per-cell table, from real driver output."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from innomatrix import frame, stats
from innomatrix_host import flags

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
TPCC_LOG = FIXTURES / "tpcc" / "tpcc_start-2wh-4c.log"  # -i 5, -l 30: six intervals
FILEIO_LOG = FIXTURES / "sysbench" / "fileio" / "1.0.20-rndrd-sync-direct-16k-t8-p95-histogram.txt"


def trial(run: Path, path: str, driver_log: Path, *, before_subtest: bool = False, **record: Any) -> None:
    """A trial directory as the trial module writes it; `before_subtest`: as it wrote a fileio
    cell before it had a sub-test field (the sub-test in `variant`)."""
    directory = run / path
    directory.mkdir(parents=True)
    shutil.copy(driver_log, directory / "driver.log")
    host, fs, workload, group, size, threads, repeat = path.split("/")
    cell = {"host": host, "filesystem": fs, "workload": workload, "threads": int(threads[1:]), "repeat": int(repeat[1:])}
    if size.startswith("bp-"):
        cell.update(variant=group, bp_size=size[3:])
    else:
        cell.update({"variant" if before_subtest else "subtest": group, "block_size": size[3:]})
    warmup = record["durations"]["warmup_s"]
    (directory / "trial.json").write_text(json.dumps({
        "schema": 1, "key": path, "status": "ok", "reasons": [], "cell": cell,
        "times": {"started": "2026-11-22T06:00:00Z", "measure_start": f"2026-11-22T06:00:{warmup:02d}Z",
                  "ended": "2026-11-22T06:00:40Z"},
        **record,
    }))


@pytest.fixture(scope="module")
def loaded(tmp_path_factory: pytest.TempPathFactory) -> tuple[frame.Frame, Any]:
    run = tmp_path_factory.mktemp("run")
    trial(run, "db1/xfs/tpcc/A/bp-64M/t4/r1", TPCC_LOG, flags=["response_time_ng"],
          durations={"warmup_s": 10, "measured_s": 20, "report_interval_s": 5})
    # As the trial module writes it now: tpcc's own judgements apart from the host's flags.
    trial(run, "db1/xfs/tpcc/A/bp-64M/t4/r2", TPCC_LOG, driver_flags=["response_time_ng", "sql_errors"],
          flags=flags.server({}, {"innodb_use_native_aio": "OFF"}),
          durations={"warmup_s": 10, "measured_s": 20, "report_interval_s": 5})
    trial(run, "db1/xfs/fileio/sync-rndrd/bs-16K/t8/r1", FILEIO_LOG,
          durations={"warmup_s": 0, "measured_s": 2, "report_interval_s": 1},
          fileio={"run_latency_p95_ms": 0.34, "run_latency_p99_ms": 0.35})
    trial(run, "db1/xfs/fileio/sync-rndrd/bs-16K/t8/r2", FILEIO_LOG, before_subtest=True,
          durations={"warmup_s": 0, "measured_s": 2, "report_interval_s": 1})
    the_frame = frame.load(run, workers=1)
    return the_frame, stats.cells(the_frame).set_index("trial")


def test_tpcc_intervals_are_tpmc_on_the_driver_clock(loaded) -> None:
    the_frame, cells = loaded
    meta = the_frame.trials.loc["db1/xfs/tpcc/A/bp-64M/t4/r1"]
    assert (meta["throughput_unit"], meta["driver_kind"], meta["latency_pct"]) == ("tpmC", "tpcc", 95.0)
    assert (meta["bp_size"], meta["block_size"], meta["block_bytes"]) == ("64M", "-", -1)
    assert (meta["variant"], meta["subtest"]) == ("A", "-")
    rows = the_frame.intervals[(the_frame.intervals["trial"] == "db1/xfs/tpcc/A/bp-64M/t4/r1")
                               & (the_frame.intervals["metric"] == "driver.throughput")]
    assert list(rows["t"]) == [5.0, 10.0, 15.0, 20.0, 25.0, 30.0]
    # The first interval's 731 New-Orders in 5 s are 8772 tpmC; the warmup (10 s) is not measured.
    assert rows["value"].iloc[0] == pytest.approx(731 * 60 / 5)
    assert list(rows["measured"]) == [False, False, True, True, True, True]
    cell = cells.loc["db1/xfs/tpcc/A/bp-64M/t4/r1"]
    assert cell["intervals_measured"] == 4 and cell["unit"] == "tpmC"
    assert "tpcc response-time check [NG]" in cell["flags"]


def test_tpcc_judgements_are_read_beside_the_hosts_flags(loaded) -> None:
    """The host's flags in trial.json are not read back: the report finds them again from the logs
    (this trial has no variables.txt, so no native-AIO flag), by the same definitions."""
    _, cells = loaded
    cell = cells.loc["db1/xfs/tpcc/A/bp-64M/t4/r2"]
    assert "tpcc response-time check [NG]" in cell["flags"] and "tpcc SQL errors" in cell["flags"]
    assert "native AIO" not in cell["flags"]


def test_fileio_cells_carry_their_block_size_and_run_percentiles(loaded) -> None:
    the_frame, cells = loaded
    meta = the_frame.trials.loc["db1/xfs/fileio/sync-rndrd/bs-16K/t8/r1"]
    assert (meta["bp_size"], meta["bp_bytes"], meta["block_size"], meta["block_bytes"]) == ("-", -1, "16K", 16384)
    assert (meta["subtest"], meta["variant"]) == ("sync-rndrd", "-")
    cell = cells.loc["db1/xfs/fileio/sync-rndrd/bs-16K/t8/r1"]
    assert (cell["fileio_run_p95_ms"], cell["fileio_run_p99_ms"]) == (0.34, 0.35)
    assert cell["unit"] == "MiB/s" and cell["throughput_median"] > 0
    # No buffer pool, no CPU-bound judgement for the device alone.
    assert "buffer pool" not in cell["flags"] and "CPU-bound" not in cell["flags"]
    assert np.isnan(the_frame.trials.loc["db1/xfs/tpcc/A/bp-64M/t4/r1", "fileio_run_p95_ms"])


def test_a_fileio_trial_from_before_the_subtest_field_reads_as_a_new_one(loaded) -> None:
    """Trees written before fileio had its own fields kept the sub-test in `variant`."""
    the_frame, _ = loaded
    old = the_frame.trials.loc["db1/xfs/fileio/sync-rndrd/bs-16K/t8/r2"]
    new = the_frame.trials.loc["db1/xfs/fileio/sync-rndrd/bs-16K/t8/r1"]
    fields = ["workload", "variant", "bp_size", "subtest", "block_size", "block_bytes", "threads"]
    assert list(old[fields]) == list(new[fields])

"""Unit tests for innomatrix.results: what a results tree already holds."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from innomatrix import plan, results
from innomatrix_host import flags

CTX = plan.Context(
    host="db1",
    memory_bytes=16 << 30,
    device_id="nvme:SERIAL123",
    server_flavor="mariadb",
    server_version="10.11.19-MariaDB",
    driver_version="sysbench 1.0.20",
    variant_digests={"A": "a" * 64, "B": "b" * 64},
)
KNOBS: dict[str, Any] = {
    "filesystems": "ext4",
    "workloads": "oltp",
    "variants": "A,B",
    "bp_sizes": "64M",
    "threads": "4,16",
    "warmup": 10,
    "duration": 30,
    "oltp_tables": 4,
    "oltp_table_size": 50000,
}


def write_trial(run: Path, cell_path: str, payload: Any, *, raw: str | None = None) -> Path:
    directory = run / cell_path
    directory.mkdir(parents=True, exist_ok=True)
    text = raw if raw is not None else json.dumps(payload)
    (directory / "trial.json").write_text(text)
    return directory


def trial(key: str | None, status: str, **extra: Any) -> dict[str, Any]:
    return {"key": key, "status": status, "reasons": [], **extra}


# ---------------------------------------------------------------- finished


def test_finished_of_a_missing_run_is_empty(tmp_path: Path) -> None:
    assert results.finished(tmp_path / "nope") == {}
    assert results.finished(str(tmp_path / "nope")) == {}


def test_finished_of_a_file_is_empty(tmp_path: Path) -> None:
    (tmp_path / "run").write_text("not a directory")
    assert results.finished(tmp_path / "run") == {}


def test_finished_maps_cell_paths_to_key_and_status(tmp_path: Path) -> None:
    run = tmp_path / "main"
    write_trial(run, "db1/ext4/oltp/A/bp-64M/t4/r1", trial("k1", "ok", summary={"throughput_median": 1.0}))
    write_trial(run, "db1/ext4/oltp/A/bp-64M/t16/r1", trial("k2", "failed"))
    write_trial(run, "db1/ext4/oltp/B/bp-64M/t4/r1", {"status": "ok"})
    write_trial(run, "db1/ext4/oltp/B/bp-64M/t16/r1", None, raw='{"key": "k4", "status": ')
    write_trial(run, "db1/ext4/oltp/A/bp-64M/t4/r1.ok-20240101T000000", trial("old", "ok"))
    assert results.finished(str(run)) == {
        "db1/ext4/oltp/A/bp-64M/t4/r1": {"key": "k1", "status": "ok"},
        "db1/ext4/oltp/A/bp-64M/t16/r1": {"key": "k2", "status": "failed"},
        "db1/ext4/oltp/B/bp-64M/t4/r1": {"key": None, "status": "ok"},
        "db1/ext4/oltp/B/bp-64M/t16/r1": {"key": None, "status": "unreadable"},
    }


def test_finished_counts_a_non_utf8_trial_json_as_unreadable(tmp_path: Path) -> None:
    directory = tmp_path / "h/ext4/oltp/A/bp-64M/t4/r1"
    directory.mkdir(parents=True)
    (directory / "trial.json").write_bytes(b'{"key": "\xff\xfe", "status": "ok"}')
    assert results.finished(tmp_path) == {"h/ext4/oltp/A/bp-64M/t4/r1": {"key": None, "status": "unreadable"}}


@pytest.mark.parametrize("raw", ["[]", "null", '"ok"'])
def test_finished_counts_a_non_object_trial_json_as_unreadable(tmp_path: Path, raw: str) -> None:
    write_trial(tmp_path, "h/ext4/oltp/A/bp-64M/t4/r1", None, raw=raw)
    assert results.finished(tmp_path) == {"h/ext4/oltp/A/bp-64M/t4/r1": {"key": None, "status": "unreadable"}}


def test_finished_feeds_the_plan(tmp_path: Path) -> None:
    fresh = plan.expand(KNOBS, CTX, {})
    cells = fresh["cells"]
    write_trial(tmp_path, cells[0]["path"], trial(cells[0]["key"], "ok"))
    write_trial(tmp_path, cells[1]["path"], trial(cells[1]["key"], "failed"))
    write_trial(tmp_path, cells[2]["path"], None, raw="{")
    the_plan = plan.expand(KNOBS, CTX, results.finished(tmp_path))
    assert [c["state"] for c in the_plan["cells"]] == ["done", "todo", "todo", "todo"]
    write_trial(tmp_path, cells[3]["path"], trial("0000000000000000", "ok"))
    with pytest.raises(plan.PlanError) as exc:
        plan.expand(KNOBS, CTX, results.finished(tmp_path))
    assert str(exc.value).startswith(
        f"1 finished cell(s) were measured with other inputs (first: {cells[3]['path']} has key 0000000000000000, "
    )


# ---------------------------------------------------------------- outcomes


def test_outcomes_one_line_per_cell_and_the_failed_ones(tmp_path: Path) -> None:
    the_plan = plan.expand(KNOBS, CTX, {})
    ids = [c["id"] for c in the_plan["cells"]]
    assert ids == [
        "ext4/oltp/A/bp-64M/t4/r1",
        "ext4/oltp/A/bp-64M/t16/r1",
        "ext4/oltp/B/bp-64M/t4/r1",
        "ext4/oltp/B/bp-64M/t16/r1",
    ]
    paths = [c["path"] for c in the_plan["cells"]]
    write_trial(tmp_path, paths[0], trial("k", "ok", summary={
        "throughput_median": 1234.56, "throughput_unit": "tps", "latency_p95_ms_median": 12.345}))
    write_trial(tmp_path, paths[1], trial("k", "failed", reasons=["server did not start", "see mysqld.err"],
                                          summary={"throughput_median": None, "throughput_unit": "tps",
                                                   "latency_p95_ms_median": None}))
    write_trial(tmp_path, paths[2], trial("k", "failed", summary=None))
    # paths[3]: nothing recorded.
    out = results.outcomes(the_plan, str(tmp_path))
    assert out == {
        "lines": [
            f"{ids[0]:<40} {'1234.6 tps':>14} {'12.3 ms p95':>14}  ok",
            f"{ids[1]:<40} {'-':>14} {'-':>14}  failed (server did not start; see mysqld.err)",
            f"{ids[2]:<40} {'-':>14} {'-':>14}  failed (no reason recorded)",
            f"{ids[3]:<40} {'-':>14} {'-':>14}  missing (no trial.json was recorded)",
        ],
        "failed": [
            f"{ids[1]}: server did not start; see mysqld.err",
            f"{ids[2]}: no reason recorded",
            f"{ids[3]}: no trial.json was recorded",
        ],
    }
    assert out["lines"][0] == "ext4/oltp/A/bp-64M/t4/r1                     1234.6 tps    12.3 ms p95  ok"


def test_outcomes_of_an_unreadable_trial_json_says_so(tmp_path: Path) -> None:
    the_plan = plan.expand({**KNOBS, "variants": "A", "threads": 4}, CTX, {})
    write_trial(tmp_path, the_plan["cells"][0]["path"], None, raw="{not json")
    out = results.outcomes(the_plan, tmp_path)
    assert out["failed"] == ["ext4/oltp/A/bp-64M/t4/r1: trial.json cannot be read as JSON"]
    assert out["lines"][0].endswith("  unreadable (trial.json cannot be read as JSON)")


@pytest.mark.parametrize("damaged", [
    {"status": "ok", "summary": "x"},
    {"status": "ok", "summary": {"throughput_median": 10 ** 400, "throughput_unit": 7}},
    {"status": 3, "reasons": "not a list"},
    {"status": "ok", "durations": {"adaptive": {"end_s": "late", "measure_start_s": 2}}},
    {"status": "ok", "durations": {"adaptive": {"end_s": 20, "measure_start_s": 2}}},  # its deciders unsaid
    {"status": "ok", "durations": []},
])
def test_outcomes_of_a_damaged_trial_json_is_a_line_never_a_traceback(tmp_path: Path, damaged: dict) -> None:
    the_plan = plan.expand({**KNOBS, "variants": "A", "threads": 4}, CTX, {})
    write_trial(tmp_path, the_plan["cells"][0]["path"], None, raw=json.dumps(damaged))
    [line] = results.outcomes(the_plan, tmp_path)["lines"]
    assert line.startswith("ext4/oltp/A/bp-64M/t4/r1 ") and ("ok" in line or "unreadable (no reason recorded)" in line)


def test_outcomes_of_a_cell_without_trial_json_is_missing(tmp_path: Path) -> None:
    the_plan = plan.expand({**KNOBS, "variants": "A", "threads": 4}, CTX, {})
    out = results.outcomes(the_plan, tmp_path)
    assert out["failed"][0] == "ext4/oltp/A/bp-64M/t4/r1: no trial.json was recorded"
    assert out["lines"][0].endswith("  missing (no trial.json was recorded)")


def test_outcomes_without_a_unit_and_with_zero_throughput(tmp_path: Path) -> None:
    the_plan = plan.expand({**KNOBS, "variants": "A", "threads": 4}, CTX, {})
    write_trial(tmp_path, the_plan["cells"][0]["path"], trial("k", "ok", summary={
        "throughput_median": 0.0, "latency_p95_ms_median": 0.04}))
    out = results.outcomes(the_plan, tmp_path)
    assert out == {"lines": [f"{'ext4/oltp/A/bp-64M/t4/r1':<40} {'0.0 ':>14} {'0.0 ms p95':>14}  ok"], "failed": []}


def test_outcomes_reads_the_plans_cells_only(tmp_path: Path) -> None:
    the_plan = plan.expand({**KNOBS, "variants": "A", "threads": 4}, CTX, {})
    write_trial(tmp_path, the_plan["cells"][0]["path"], trial("k", "ok", summary={}))
    write_trial(tmp_path, "db1/ext4/oltp/Z/bp-64M/t4/r1", trial("k", "failed", reasons=["not in the plan"]))
    assert results.outcomes(the_plan, tmp_path) == {
        "lines": [f"{'ext4/oltp/A/bp-64M/t4/r1':<40} {'-':>14} {'-':>14}  ok"],
        "failed": [],
    }


@pytest.mark.parametrize("raw", ['{"key": "k"}', "[]"])
def test_outcomes_of_a_trial_json_without_a_status(tmp_path: Path, raw: str) -> None:
    the_plan = plan.expand({**KNOBS, "variants": "A", "threads": 4}, CTX, {})
    write_trial(tmp_path, the_plan["cells"][0]["path"], None, raw=raw)
    out = results.outcomes(the_plan, tmp_path)
    assert len(out["lines"]) == 1
    assert len(out["failed"]) == 1


def test_outcomes_show_what_the_host_flagged(tmp_path: Path) -> None:
    the_plan = plan.expand({**KNOBS, "variants": "A", "threads": 4}, CTX, {})
    raised = flags.server({}, {"innodb_use_native_aio": "OFF"}) + flags.resources("oltp", 0.2, 50.0, 1.0)
    write_trial(tmp_path, the_plan["cells"][0]["path"], {**trial("k", "ok", summary={}), "flags": raised})
    assert results.outcomes(the_plan, tmp_path)["lines"] == [
        f"{'ext4/oltp/A/bp-64M/t4/r1':<40} {'-':>14} {'-':>14}  ok, flagged: native AIO off, buffer pool holds the dataset"]


@pytest.mark.parametrize("recorded", [["response_time_ng"], [{"flag": "x"}], "native AIO off"])
def test_outcomes_pass_over_flags_that_are_not_the_hosts(tmp_path: Path, recorded: object) -> None:
    """tpcc's driver flags in a trial.json from before the host's, or anything else: no label to show."""
    the_plan = plan.expand({**KNOBS, "variants": "A", "threads": 4}, CTX, {})
    write_trial(tmp_path, the_plan["cells"][0]["path"], {**trial("k", "ok", summary={}), "flags": recorded})
    assert results.outcomes(the_plan, tmp_path)["lines"][0].endswith("  ok")

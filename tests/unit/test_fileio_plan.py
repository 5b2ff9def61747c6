"""The fileio workload in the plan: its sub-tests as cells, with keys, paths and timings."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from innomatrix import fileio, plan
from innomatrix.plan import KnobError
from test_plan import CTX, ctx, knobs

K, M, G = 1 << 10, 1 << 20, 1 << 30

FILEIO_KNOBS: dict[str, Any] = {
    "workloads": ["fileio"],
    "fileio_tests": list(fileio.SUBTESTS),
    "fileio_total_size": "256M",
    "fileio_block_size": "16K",
    "fileio_threads_max": 4,
    "fileio_block_sizes": ["4K", "64K"],
    "fileio_table_threads": [1, 4],
    "fileio_step_duration": 5,
}


def fileio_knobs(**changes: Any) -> dict[str, Any]:
    return knobs(**{**FILEIO_KNOBS, **changes})


def ids(the_plan: dict[str, Any]) -> list[str]:
    return [cell["id"] for cell in the_plan["cells"]]


def test_a_buffer_pool_past_memory_is_no_matter_where_no_server_runs() -> None:
    # fileio cells start no server: the default bp_sizes may exceed a small host's memory.
    spec = plan.normalise(fileio_knobs(bp_sizes="20G"), CTX)
    assert spec["bp_sizes"] == [20 << 30]
    with pytest.raises(plan.PlanError, match="20G is not smaller than the memory"):
        plan.normalise(fileio_knobs(workloads=["fileio", "oltp"], bp_sizes="20G"), CTX)


def test_sweep_doubles_up_to_the_maximum() -> None:
    assert fileio.sweep(1) == [1]
    assert fileio.sweep(4) == [1, 2, 4]
    assert fileio.sweep(256) == [1, 2, 4, 8, 16, 32, 64, 128, 256]
    assert fileio.sweep(40) == [1, 2, 4, 8, 16, 32, 40]


def test_every_sub_test_becomes_cells_in_order() -> None:
    the_plan = plan.expand(fileio_knobs(filesystems=["xfs"]), CTX, {})
    assert ids(the_plan) == [
        "xfs/fileio/async-rndwr/bs-16K/t4/r1",
        "xfs/fileio/async-rndrd/bs-16K/t4/r1",
        "xfs/fileio/sync-rndrd/bs-16K/t1/r1",
        "xfs/fileio/sync-rndrd/bs-16K/t2/r1",
        "xfs/fileio/sync-rndrd/bs-16K/t4/r1",
        "xfs/fileio/table-rndrd/bs-4K/t1/r1",
        "xfs/fileio/table-rndrd/bs-4K/t4/r1",
        "xfs/fileio/table-rndrd/bs-64K/t1/r1",
        "xfs/fileio/table-rndrd/bs-64K/t4/r1",
        "xfs/fileio/table-rndwr/bs-4K/t1/r1",
        "xfs/fileio/table-rndwr/bs-4K/t4/r1",
        "xfs/fileio/table-rndwr/bs-64K/t1/r1",
        "xfs/fileio/table-rndwr/bs-64K/t4/r1",
        "xfs/fileio/seqrd/bs-1M/t1/r1",
        "xfs/fileio/seqwr/bs-1M/t1/r1",
    ]
    # One dataset (the prepared files) per filesystem, shared by every cell.
    assert len(the_plan["passes"]) == 1
    assert [d["workload"] for d in the_plan["passes"][0]["datasets"]] == ["fileio"]


def test_a_cell_carries_what_sysbench_needs() -> None:
    cells = {c["id"]: c for c in plan.expand(fileio_knobs(filesystems=["ext4"]), CTX, {})["cells"]}
    async_write = cells["ext4/fileio/async-rndwr/bs-16K/t4/r1"]
    assert async_write["fileio"] == {
        "test": "async-rndwr", "mode": "rndwr", "io_mode": "async", "block_bytes": 16 * K,
        "total_size": 256 * M, "file_num": 64, "extra_flags": "direct", "fsync_freq": 0,
    }
    # The long tests hunt stalls over the matrix's warmup and duration; the steps are short.
    assert (async_write["warmup"], async_write["duration"], async_write["report_interval"]) == (10, 30, 1)
    step = cells["ext4/fileio/seqwr/bs-1M/t1/r1"]
    assert (step["warmup"], step["duration"], step["report_interval"]) == (0, 5, 1)
    assert step["fileio"]["mode"] == "seqwr" and step["fileio"]["block_bytes"] == M
    assert (step["subtest"], step["block_size"], step["variant"], step["bp_size"]) == ("seqwr", "1M", None, None)


def test_oltp_and_fileio_share_a_pass_with_a_dataset_each() -> None:
    the_plan = plan.expand(fileio_knobs(workloads=["oltp", "fileio"], filesystems=["ext4"],
                                        fileio_tests=["seqrd"]), CTX, {})
    assert ids(the_plan) == ["ext4/oltp/A/bp-64M/t4/r1", "ext4/oltp/B/bp-64M/t4/r1", "ext4/fileio/seqrd/bs-1M/t1/r1"]
    assert [d["workload"] for d in the_plan["passes"][0]["datasets"]] == ["oltp", "fileio"]
    oltp_only = plan.space_needed(plan.normalise(knobs(filesystems=["ext4"]), CTX))
    assert the_plan["device_bytes_needed"] == oltp_only + int(256 * M * 1.1)


def test_keys_change_with_what_changes_the_result() -> None:
    def key(**changes: Any) -> str:
        the_plan = plan.expand(fileio_knobs(filesystems=["ext4"], fileio_tests=["seqrd"], **changes), CTX, {})
        return the_plan["cells"][0]["key"]

    base = key()
    assert key() == base
    assert key(fileio_total_size="512M") != base
    assert key(fileio_step_duration=6) != base
    assert key(mount_options={"ext4": "barrier=0", "xfs": ""}) != base
    # The server is not involved in a raw-device cell: another server version keeps the key.
    server_changed = plan.expand(fileio_knobs(filesystems=["ext4"], fileio_tests=["seqrd"]),
                                 ctx(server_version="10.11.99"), {})
    assert server_changed["cells"][0]["key"] == base


def test_a_finished_fileio_cell_is_not_run_again() -> None:
    first = plan.expand(fileio_knobs(filesystems=["ext4"], fileio_tests=["seqrd", "seqwr"]), CTX, {})
    done = {first["cells"][0]["path"]: {"key": first["cells"][0]["key"], "status": "ok"}}
    again = plan.expand(fileio_knobs(filesystems=["ext4"], fileio_tests=["seqrd", "seqwr"]), CTX, done)
    assert [c["state"] for c in again["cells"]] == ["done", "todo"]
    assert again["counts"] == {"cells": 2, "todo": 1, "done": 1}


def test_fileio_knobs_are_only_read_when_fileio_runs() -> None:
    plain = knobs()
    assert "fileio_tests" not in plain
    assert plan.normalise(plain, CTX)["fileio"] is None


BAD_FILEIO = [
    ({"fileio_tests": "rndrw"}, "fileio_tests: unknown rndrw; accepted: " + ", ".join(fileio.SUBTESTS)),
    ({"fileio_tests": []}, "fileio_tests is empty; accepted: " + ", ".join(fileio.SUBTESTS)),
    ({"fileio_block_size": "1000"}, "fileio block size 1000 is not a multiple of 512 bytes; O_DIRECT needs whole sectors"),
    ({"fileio_block_sizes": "4K,4096"}, "fileio_block_sizes: 4K and 4096 are the same value; list each once"),
    ({"fileio_block_sizes": ""}, "fileio_block_sizes is empty; give at least one size, e.g. fileio_block_sizes=4K,16K"),
    ({"fileio_table_threads": "1,0"}, "fileio_table_threads='0' must be a whole number above zero"),
    ({"fileio_threads_max": 0}, "fileio_threads_max=0 must be a whole number above zero"),
    ({"fileio_step_duration": "soon"}, "fileio_step_duration='soon' is not a number; give a whole number above zero"),
    (
        {"fileio_total_size": "32M"},
        "fileio_total_size=32M is too small for 64 files of at least one 1M block each; give at least 64M",
    ),
]


def test_a_step_must_hold_two_report_intervals() -> None:
    with pytest.raises(plan.PlanError, match="^fileio_step_duration=3 holds fewer than two report intervals of 2 s"):
        plan.expand(fileio_knobs(fileio_step_duration=3, report_interval=2), CTX, {})
    assert plan.expand(fileio_knobs(fileio_step_duration=4, report_interval=2), CTX, {})["counts"]["cells"] == 30


@pytest.mark.parametrize(("changes", "message"), BAD_FILEIO, ids=[m for _, m in BAD_FILEIO])
def test_a_bad_fileio_knob_is_refused_with_one_line(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(KnobError) as exc:
        plan.expand(fileio_knobs(**changes), CTX, {})
    assert str(exc.value) == message


def test_seqwr_needs_room_for_its_own_files() -> None:
    with_seqwr = plan.expand(fileio_knobs(filesystems=["ext4"], fileio_tests=["seqrd", "seqwr"]), CTX, {})
    without = plan.expand(fileio_knobs(filesystems=["ext4"], fileio_tests=["seqrd"]), CTX, {})
    assert with_seqwr["device_bytes_needed"] == int(2 * 256 * M * 1.1)
    assert without["device_bytes_needed"] == int(256 * M * 1.1)


def test_fileio_cells_and_their_files_have_no_my_cnf() -> None:
    """Once the server is installed the plan renders my.cnf for server cells; the device alone
    runs without one, and its test files are made without one."""
    installed = dataclasses.replace(CTX, server_known_options=frozenset({"innodb_buffer_pool_size"}))
    the_plan = plan.expand(fileio_knobs(filesystems=["ext4"], fileio_tests=["seqrd"]), installed, {})
    assert {cell["mycnf"]["text"] for cell in the_plan["cells"]} == {""}
    assert [d["mycnf"] for d in the_plan["passes"][0]["datasets"]] == [""]

"""innomatrix.layout: the one place a results tree's paths are built and read back."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from innomatrix import layout

SERVER_CELL = {"host": "db1", "filesystem": "ext4", "workload": "oltp", "variant": "A", "bp_size": "64M",
               "threads": 4, "repeat": 2}
FILEIO_CELL = {"host": "db1", "filesystem": "xfs", "workload": "fileio", "subtest": "async-rndrd",
               "block_size": "16K", "threads": 8, "repeat": 1}


def write_trial(run: Path, cell_path: str, payload: Any) -> Path:
    directory = run / cell_path
    directory.mkdir(parents=True, exist_ok=True)
    (directory / layout.TRIAL_FILE).write_text(json.dumps(payload))
    return directory


def trial(key: str, status: str) -> dict[str, Any]:
    return {"key": key, "status": status, "reasons": []}


@pytest.mark.parametrize("cell, path", [
    (SERVER_CELL, "db1/ext4/oltp/A/bp-64M/t4/r2"),
    (FILEIO_CELL, "db1/xfs/fileio/async-rndrd/bs-16K/t8/r1"),
])
def test_a_cell_is_placed_and_read_back_with_its_own_fields(cell: dict[str, Any], path: str) -> None:
    assert layout.cell_path(cell) == path
    read = layout.parse(path)
    assert read is not None
    assert {name: read[name] for name in cell} == cell
    # The fields of the other kind of cell read as not applicable, never as a value.
    others = {"variant", "bp_size", "subtest", "block_size"} - set(cell)
    assert {read[name] for name in others} == {layout.NOT_APPLICABLE}


@pytest.mark.parametrize("change", [{"variant": "A/B"}, {"host": ""}, {"filesystem": ".."}, {"bp_size": "6/4M"}])
def test_a_cell_that_cannot_name_a_directory_is_refused(change: dict[str, str]) -> None:
    with pytest.raises(layout.LayoutError, match="results tree"):
        layout.cell_path({**SERVER_CELL, **change})


def test_a_dataset_keeps_its_logs_beside_its_cells() -> None:
    assert layout.dataset_path("db1", "xfs", "tpcc", "abc") == "db1/xfs/tpcc/dataset-abc"
    assert layout.parse("db1/xfs/tpcc/dataset-abc") is None


def test_trial_dirs_finds_only_real_trial_directories(tmp_path: Path) -> None:
    run = tmp_path / "main"
    wanted = [
        write_trial(run, "db1/ext4/fileio/seqwr/bs-1M/t1/r1", trial("k0", "ok")),
        write_trial(run, "db1/ext4/oltp/A/bp-64M/t4/r1", trial("k1", "ok")),
        write_trial(run, "db1/ext4/oltp/A/bp-64M/t4/r2", trial("k2", "failed")),
        write_trial(run, "db1/xfs/oltp/B/bp-1536M/t16/r1", trial("k3", "ok")),
    ]
    # An earlier attempt moved aside by publish(), and the temporary directory of an interrupted cell.
    write_trial(run, "db1/ext4/oltp/A/bp-64M/t4/r1.failed-20240101T000000", trial("old", "failed"))
    write_trial(run, "db1/ext4/oltp/A/bp-64M/t4/.r3.tmp-4242", trial("tmp", "ok"))
    # Not the trial layout: non-numeric threads/repeat, no bp- prefix, too shallow, too deep.
    write_trial(run, "db1/ext4/oltp/A/bp-64M/tfour/r1", trial("x", "ok"))
    write_trial(run, "db1/ext4/oltp/A/bp-64M/t4/rx", trial("x", "ok"))
    write_trial(run, "db1/ext4/oltp/A/64M/t4/r1", trial("x", "ok"))
    write_trial(run, "ext4/oltp/A/bp-64M/t4/r1", trial("x", "ok"))
    write_trial(run, "db1/ext4/oltp/A/bp-64M/t4/r1/extra", trial("x", "ok"))
    # A trial directory without trial.json (the module never published it) is not a trial.
    (run / "db1/ext4/oltp/B/bp-64M/t4/r1").mkdir(parents=True)
    assert layout.trial_dirs(run) == wanted


def test_trial_dirs_in_path_order(tmp_path: Path) -> None:
    for cell in ("h/xfs/oltp/A/bp-1G/t4/r1", "h/ext4/oltp/B/bp-1G/t4/r1", "h/ext4/oltp/A/bp-1G/t4/r2",
                 "h/ext4/oltp/A/bp-1G/t4/r10", "h/ext4/oltp/A/bp-1G/t4/r1"):
        write_trial(tmp_path, cell, trial("k", "ok"))
    assert [p.relative_to(tmp_path).as_posix() for p in layout.trial_dirs(tmp_path)] == [
        "h/ext4/oltp/A/bp-1G/t4/r1",
        "h/ext4/oltp/A/bp-1G/t4/r10",
        "h/ext4/oltp/A/bp-1G/t4/r2",
        "h/ext4/oltp/B/bp-1G/t4/r1",
        "h/xfs/oltp/A/bp-1G/t4/r1",
    ]


def test_trial_dirs_of_an_empty_run(tmp_path: Path) -> None:
    assert layout.trial_dirs(tmp_path) == []

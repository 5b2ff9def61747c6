"""innomatrix.layout: the one place a results tree's paths are built and read back."""

from __future__ import annotations

from typing import Any

import pytest

from innomatrix import layout

SERVER_CELL = {"host": "db1", "filesystem": "ext4", "workload": "oltp", "variant": "A", "bp_size": "64M",
               "threads": 4, "repeat": 2}
FILEIO_CELL = {"host": "db1", "filesystem": "xfs", "workload": "fileio", "subtest": "async-rndrd",
               "block_size": "16K", "threads": 8, "repeat": 1}


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
    # The plain device has no layout directory.
    assert layout.parse("db1/plain-m1/xfs/oltp/A/bp-1G/t4/r1") is None
    assert layout.parse("db1/md-raid0-m1/xfs/oltp/A/bp-1G/t4/r1")["layout"] == "md-raid0"

"""The fileio tables of the report, from a per-cell table built by hand (stats.cells' columns)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from innomatrix.report import tables

K, M = 1 << 10, 1 << 20


def cell(test: str, block: str, block_bytes: int, threads: int, mib_s: float, **extra: Any) -> dict[str, Any]:
    return {
        "trial": f"db1/xfs/fileio/{test}/bs-{block}/t{threads}/r1", "host": "db1", "filesystem": "xfs",
        "workload": "fileio", "subtest": test, "variant": "-", "bp_size": "-", "block_size": block, "block_bytes": block_bytes,
        "threads": threads, "repeat": 1, "unit": "MiB/s", "throughput_median": mib_s, "throughput_std": 1.0,
        "throughput_cov": 0.01, "latency_ms_median": 0.5, "fileio_run_p95_ms": 0.6, "fileio_run_p99_ms": 0.9,
        "stall_intervals": 0, "flagged": False, "flags": "", **extra,
    }


CELLS = pd.DataFrame([
    cell("table-rndrd", "64K", 64 * K, 1, 256.0),
    cell("table-rndrd", "4K", 4 * K, 1, 16.0),
    cell("table-rndrd", "4K", 4 * K, 10, 40.0, flagged=True, flags="stalls: 1 intervals in 1 episodes"),
    cell("table-rndrd", "64K", 64 * K, 10, 512.0),
    cell("sync-rndrd", "16K", 16 * K, 1, 80.0, fileio_run_p95_ms=0.3, fileio_run_p99_ms=0.4),
    cell("sync-rndrd", "16K", 16 * K, 2, 160.0),
    {**cell("A", "-", 1, 4, 0.0), "workload": "oltp", "unit": "tps", "subtest": "-", "bp_size": "64M", "block_size": "-"},
])


def test_the_block_size_table_has_iops_and_mib_s_for_every_block_size_and_thread_count() -> None:
    table = tables.fileio_blocks(CELLS)
    assert table is not None
    # Rows by block size in bytes (4K before 64K), columns per thread count; IOPS = MiB/s × 2^20 / block.
    assert list(table.display["block_size"]) == ["4K", "64K"]
    assert list(table.data.columns) == ["host", "filesystem", "test", "block_size", "iops_t1", "iops_t10",
                                        "mib_s_t1", "mib_s_t10"]
    first = table.data.iloc[0]
    assert (first["iops_t1"], first["iops_t10"], first["mib_s_t10"]) == (4096.0, 10240.0, 40.0)
    assert table.display.iloc[0]["t10"] == f"10,240 IOPS / 40.0 MiB/s {tables.FLAG_MARK}"
    assert table.display.iloc[1]["t1"] == "4,096 IOPS / 256.0 MiB/s"
    assert table.notes and "stalls" in table.notes[0]


def test_the_sweep_table_gives_p95_and_p99_per_thread_count() -> None:
    table = tables.fileio_sweep(CELLS)
    assert table is not None
    assert list(table.data["threads"]) == [1, 2]
    assert list(table.data["iops"]) == [5120.0, 10240.0]
    assert list(table.display["p95_ms"]) == ["0.300", "0.600"]
    assert list(table.display["p99_ms"]) == ["0.400", "0.900"]


def test_every_fileio_cell_is_listed_and_server_cells_are_not() -> None:
    table = tables.fileio(CELLS)
    assert table is not None and len(table.data) == 6
    assert set(table.data["test"]) == {"table-rndrd", "sync-rndrd"}


def test_no_fileio_cells_no_fileio_tables() -> None:
    server_only = CELLS[CELLS["workload"] != "fileio"]
    assert tables.fileio(server_only) is None
    assert tables.fileio_blocks(server_only) is None
    assert tables.fileio_sweep(server_only) is None

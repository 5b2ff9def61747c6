"""tpcc-mysql for real: build it from TPCC_MYSQL_SRC, load 2 warehouses with 2 loaders into a
private MariaDB, run tpcc_start for 20 s and parse what it printed.

TPCC_MYSQL_SRC names a tpcc-mysql source tree (e.g. a checkout of Percona-Lab/tpcc-mysql);
without it the test is skipped, because the tool is not packaged anywhere this suite can reach.
Needs root (mariadbd runs as mysql), MariaDB's server and client, make, a C compiler and
mysql_config (libmariadb-dev-compat). About two minutes on a 2-core machine.
"""

from __future__ import annotations

import functools
import os
import re
import secrets
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from e2e_env import private_mariadb
from innomatrix_host import tpcc as tpcc_parse
from innomatrix_host import tpcc_tool as tool

ROOT = Path(__file__).resolve().parents[2]
SOURCE = os.environ.get("TPCC_MYSQL_SRC")
PORT = 34991
WAREHOUSES, LOADERS = 2, 2
CONNECTIONS, RAMPUP_S, DURATION_S, INTERVAL_S, WARMUP_S = 4, 2, 20, 5, 5

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not SOURCE, reason="TPCC-MYSQL TEST SKIPPED: set TPCC_MYSQL_SRC to a tpcc-mysql source tree "
                                          "(e.g. a checkout of Percona-Lab/tpcc-mysql) to build and run it"),
    pytest.mark.skipif(os.geteuid() != 0, reason="TPCC-MYSQL TEST SKIPPED: it needs root (mariadbd runs as mysql)"),
]

OPTIONS = "[mysqld]\ninnodb_buffer_pool_size = 128M\ninnodb_log_file_size = 256M\ninnodb_flush_log_at_trx_commit = 2\n"


@pytest.fixture(scope="module")
def base() -> Iterator[Path]:
    # The tool's build and the load's logs (the server has a directory of its own: private_mariadb).
    directory = Path(tempfile.mkdtemp(prefix="innomatrix-tpcc-e2e-", dir="/var/tmp"))
    directory.chmod(0o755)
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture(scope="module")
def server() -> Iterator[object]:
    missing = [command for command in ("mariadbd", "mariadb-install-db", "mariadb", "make", "cc", "mysql_config")
               if shutil.which(command) is None]
    assert not missing, f"TPCC_MYSQL_SRC is set but these are missing: {missing}"
    with private_mariadb(OPTIONS, PORT, "innomatrix-tpcc-e2e-server-") as (mysqld, _):
        yield mysqld


@pytest.fixture(scope="module")
def built(base: Path) -> dict:
    return tool.build(Path(SOURCE), base / "build")


def test_build_records_where_the_tool_came_from(built: dict) -> None:
    assert Path(built["tpcc_load"]).is_file() and Path(built["tpcc_start"]).is_file()
    assert built["libs"].endswith("-lrt -lm")
    assert built["commit"] is None or re.fullmatch(r"[0-9a-f]{40}(-dirty)?", built["commit"])


def test_load_and_run(base: Path, server: object, built: dict) -> None:
    client = functools.partial(server.script, timeout=600)
    password = secrets.token_urlsafe(18)
    # The load's account has a password, which the logs must not show; the run's authenticates
    # by the socket (root, unix_socket), which needs none.
    client(f"CREATE USER tpcc@localhost IDENTIFIED BY '{password}';\nGRANT ALL ON tpcc.* TO tpcc@localhost;\n")
    bin_dir, logs = Path(built["bin_dir"]), base / "logs"
    loader = tool.Connection(socket=server.socket, user="tpcc", password=password)
    record = tool.load(bin_dir, loader, WAREHOUSES, LOADERS, logs, client, timeout_s=1200)
    print(f"\nload: {record['load_s']} s ({record['loaders_s']} s loading, {record['index_s']} s indexing), "
          f"{record['warehouses_per_min']} warehouses/min")
    assert record["row_counts"]["stock"] == 100000 * WAREHOUSES
    assert [job["exit"] for job in record["loaders"]] == [0] * 7

    driver = tool.Connection(socket=server.socket, user="root")
    argv = tool.start_argv(bin_dir, driver, WAREHOUSES, CONNECTIONS, RAMPUP_S, DURATION_S, INTERVAL_S)
    run = tool.LoggedProcess(argv, logs / "tpcc_start.log", driver.password)
    assert run.wait(timeout=RAMPUP_S + DURATION_S + 120) == 0

    parsed = tpcc_parse.parse_output((logs / "tpcc_start.log").read_text())
    summary = tpcc_parse.summarize(parsed, warmup_s=WARMUP_S, interval_s=INTERVAL_S)
    print(f"tpcc_start: {summary['tpmc_tool']} TpmC (tool), {summary['tpmc_measured']} after the warmup, "
          f"flags {summary['flags']}")
    assert parsed["parameters"]["warehouses"] == WAREHOUSES and parsed["parameters"]["connections"] == CONNECTIONS
    assert len(parsed["intervals"]) == DURATION_S // INTERVAL_S and parsed["measured_s"] == DURATION_S
    assert summary["status"] == "ok", summary["reasons"]
    assert summary["tpmc_tool"] > 0 and summary["tpmc_whole_run"] == pytest.approx(summary["tpmc_tool"], rel=0.01)
    assert summary["intervals_measured"] == (DURATION_S - WARMUP_S) // INTERVAL_S

    for log in logs.iterdir():
        assert password not in log.read_text(errors="replace"), log.name
    assert all(password not in job["command"] for job in record["loaders"])

"""The host code's conversation with a real server (innomatrix_host.runtime.Session, through
mysqlclient): typed rows, the server's own errors, a read that does not come back in time, an
account whose password holds quotes, and the status sampler (with the flush-type counters it reads)
across a connection the server ends.

A private MariaDB 10.11 (this machine's) in a directory of its own; about 15 s.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import MySQLdb
import pytest

from e2e_env import private_mariadb
from innomatrix_host import runtime
from innomatrix_host.flush_points import FLUSH_TYPE_METRICS, METRIC_PREFIX

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(os.geteuid() != 0, reason="SERVER SESSION TEST SKIPPED: it needs root (mariadbd runs as mysql)"),
]

PORT = 34993
OPTIONS = "[mysqld]\ninnodb_buffer_pool_size = 32M\nskip_networking\n"


@pytest.fixture(scope="module")
def server() -> Iterator[runtime.Server]:
    with private_mariadb(OPTIONS, PORT, "innomatrix-session-e2e-") as (mysqld, _):
        yield mysqld


def test_rows_come_typed(server: runtime.Server) -> None:
    assert server.query("SELECT 1, 'a', NULL, 2.5") == [(1, "a", None, 2.5)]
    assert server.query("DO 1") == []
    assert any(name == "Uptime" for name, _ in server.query("SHOW GLOBAL STATUS"))


def test_the_server_s_own_error_in_one_line_then_the_next_statement_connects_again(server: runtime.Server) -> None:
    with server.session(timeout=10) as session:
        with pytest.raises(runtime.TrialError, match=r"mysqld\.sock: error 1064: You have an error in your SQL syntax"):
            session.rows("SELEKT 1")
        assert session.connection is None
        assert session.rows("SELECT 2") == [(2,)]
        # What the driver raises beside its own errors (here a literal % beside parameters) is one too
        with pytest.raises(runtime.TrialError, match=r"mysqld\.sock: "):
            session.rows("SELECT '100%', %s", (1,))
        assert session.connection is None and session.rows("SELECT '100%%', %s", (1,)) == [("100%", 1)]


def test_an_answer_that_does_not_come_in_time_ends_the_connection(server: runtime.Server) -> None:
    started = time.monotonic()
    with server.session(timeout=1) as session:
        with pytest.raises(runtime.TrialError, match=r"error 2013: Lost connection"):
            session.rows("SELECT SLEEP(60)")
        waited = time.monotonic() - started
        assert session.rows("SELECT 3") == [(3,)]
    print(f"\na 60-s statement given 1 s: the read ended after {waited:.1f} s")
    assert waited < 30  # the statement's 60 s were not waited for


def test_an_account_whose_password_holds_quotes_logs_in_with_it(server: runtime.Server) -> None:
    credentials = {"user": "innomatrix", "password": "it's \\ a %s \"test\""}
    server.grant_bench_user(credentials)
    server.grant_bench_user(credentials)  # every start sets it again
    login = MySQLdb.connect(unix_socket=server.socket, user=credentials["user"], password=credentials["password"])
    try:
        cursor = login.cursor()
        cursor.execute("SELECT CURRENT_USER()")
        assert cursor.fetchall() == (("innomatrix@localhost",),)
    finally:
        login.close()


def test_a_sampler_whose_connection_is_killed_writes_the_gap_and_goes_on(server: runtime.Server, tmp_path: Path) -> None:
    server.count_flushes_by_type()
    sampler = runtime.StatusSampler(server, tmp_path / "status.log", 1)
    sampler.start()
    try:
        time.sleep(2.5)
        killed = sampler.session.connection.thread_id()
        server.query("KILL %s", (killed,))
        time.sleep(3.5)
    finally:
        sampler.stop()
    rows = [line.split("\t") for line in (tmp_path / "status.log").read_text().splitlines()[1:]]
    errors = [row for row in rows if row[1] == "#error"]
    uptimes = [row for row in rows if row[1] == "Uptime"]
    assert len(errors) == 1 and "error 20" in errors[0][2], rows[:3]
    assert uptimes[0][3] == "absolute" and [row[3] for row in uptimes[1:]] == ["delta"] * (len(uptimes) - 1)
    assert len(uptimes) >= 4 and any(row[0] > errors[0][0] for row in uptimes)  # sampled again after the gap
    by_type = {row[1]: row[3] for row in rows if row[1].startswith(METRIC_PREFIX)}
    assert by_type == {METRIC_PREFIX + name: "absolute" for name in FLUSH_TYPE_METRICS}  # an idle server flushes none

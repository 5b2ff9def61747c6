"""The target-side runtime (innomatrix_host.runtime): the pieces that need no server or device."""

from __future__ import annotations

import json
import stat
import sys

import pytest
from innomatrix_host import runtime

OLTP = {"tables": 4, "table_size": 1000}


def test_driver_never_ignores_all_errors_and_takes_credentials_from_a_file(tmp_path):
    argv = runtime.sysbench_argv(OLTP, tmp_path / "driver.cnf", 8, ["run"])
    assert not any(arg.startswith("--mysql-ignore-errors") for arg in argv)
    assert f"--config-file={tmp_path / 'driver.cnf'}" in argv
    assert not any("password" in arg or "--mysql-user" in arg for arg in argv)
    assert argv[-1] == "run" and "--threads=8" in argv


def test_driver_config_is_private(tmp_path):
    config = tmp_path / "driver.cnf"
    runtime.write_driver_config(config, "/run/s.sock", {"user": "innomatrix", "password": "s3cret"})
    assert stat.S_IMODE(config.stat().st_mode) == 0o600
    assert config.read_text().splitlines() == [
        "mysql-socket=/run/s.sock", "mysql-user=innomatrix", "mysql-password=s3cret"]


def test_publish_keeps_an_earlier_result_beside_the_new_one(tmp_path):
    final = tmp_path / "r1"
    final.mkdir()
    (final / "trial.json").write_text(json.dumps({"status": "failed"}))
    tmp = tmp_path / ".r1.tmp-1"
    tmp.mkdir()
    (tmp / "trial.json").write_text(json.dumps({"status": "ok"}))
    kept = runtime.publish(tmp, final)
    assert kept.startswith("r1.failed-")
    assert json.loads((final / "trial.json").read_text())["status"] == "ok"
    assert json.loads((tmp_path / kept / "trial.json").read_text())["status"] == "failed"
    assert not tmp.exists()


def test_publish_names_an_earlier_record_that_is_not_a_trial(tmp_path):
    final, tmp = tmp_path / "dataset-k", tmp_path / ".dataset-k.tmp-1"
    final.mkdir()
    tmp.mkdir()
    assert runtime.publish(tmp, final).startswith("dataset-k.earlier-")


# A stand-in for the mariadb/mysql client in batch mode (the session logic is what is tested
# here; the real client is exercised by every e2e trial's status.log): it answers each
# statement with one line, the sentinel SELECT with the sentinel, `hang` with nothing and
# `quit` by exiting with a message on stderr.
STAND_IN_CLIENT = r'''
import sys
import time
for line in sys.stdin:
    statement = line.strip().rstrip(";")
    if statement.startswith("SELECT '"):
        print(statement[len("SELECT '"):-1], flush=True)
    elif statement == "hang":
        time.sleep(60)
    elif statement == "quit":
        print("ERROR 2006: gone away", file=sys.stderr)
        sys.exit(1)
    else:
        print(f"Uptime\t{len(statement)}", flush=True)
'''


def stand_in_session(tmp_path):
    script = tmp_path / "client.py"
    script.write_text(STAND_IN_CLIENT)
    return runtime.ClientSession([sys.executable, str(script)])


def test_one_client_session_answers_statement_after_statement(tmp_path):
    session = stand_in_session(tmp_path)
    try:
        assert session.ask("SHOW GLOBAL STATUS", timeout=5) == ["Uptime\t18"]
        first = session.proc.pid
        assert session.ask("SHOW STATUS", timeout=5) == ["Uptime\t11"]
        assert session.proc.pid == first  # the same client, not one per statement
    finally:
        session.close()


def test_a_silent_or_ended_client_is_an_error_and_the_next_statement_reconnects(tmp_path):
    session = stand_in_session(tmp_path)
    try:
        with pytest.raises(runtime.TrialError, match="no answer within"):
            session.ask("hang", timeout=0.5)
        assert session.proc is None
        with pytest.raises(runtime.TrialError, match="ended: ERROR 2006: gone away"):
            session.ask("quit", timeout=5)
        assert session.ask("SHOW STATUS", timeout=5) == ["Uptime\t11"]
    finally:
        session.close()

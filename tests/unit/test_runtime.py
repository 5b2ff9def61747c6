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
def test_rows_are_written_as_the_client_prints_them_in_batch_mode():
    """variables.txt and flush_points.txt keep the client's form: trees from before the driver read alike."""
    rows = [("innodb_flush_method", "O_DIRECT"), ("innodb_io_capacity", 200), ("ssl_cipher", None),
            ("odd", "a\tb\nc\\d\0e"), (b"bytes", b"v")]
    assert runtime.batch_text(rows) == (
        "innodb_flush_method\tO_DIRECT\ninnodb_io_capacity\t200\nssl_cipher\tNULL\n"
        "odd\ta\\tb\\nc\\\\d\\0e\nbytes\tv\n")
    assert runtime.batch_text([]) == ""


def test_a_server_that_is_not_there_is_the_driver_s_error_in_one_line(tmp_path):
    """The real driver against a socket nobody listens on: a TrialError naming the socket and the
    client library's code, and the session closed, so the next statement connects again."""
    session = runtime.Session(str(tmp_path / "nobody.sock"), timeout=2)
    with pytest.raises(runtime.TrialError, match=r"nobody\.sock: error 2002: ") as caught:
        session.rows("SELECT 1")
    assert "\n" not in str(caught.value) and session.connection is None


def test_a_host_without_the_driver_is_told_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "MySQLdb", None)  # what `import` meets where it is not installed
    with pytest.raises(runtime.TrialError, match="python3-mysqldb"):
        runtime.Session("/nowhere.sock", timeout=1).rows("SELECT 1")


def test_an_error_without_a_code_is_still_one_line():
    assert runtime.describe_error(RuntimeError("two\n  lines")) == "two lines"
    assert runtime.describe_error(RuntimeError(2013, "Lost connection\nto server")) == "error 2013: Lost connection to server"


class StandInSession:
    """Rows as the driver hands them (a test double: no server runs in the unit tests; the real
    conversation is tests/e2e/test_server_session.py): text, bytes, numbers, NULL."""

    def __init__(self, metrics_fail: bool = False):
        self.metrics_fail, self.asked = metrics_fail, []

    def rows(self, sql: str, args: tuple = ()) -> list[tuple]:
        self.asked.append(sql.split()[0])
        if sql == "SHOW GLOBAL STATUS":
            return [("Uptime", "12"), (b"Innodb_pages_written", b"7"), ("Ssl_cipher", None), ("Rpl_status", "OFF"),
                    ("Innodb_buffer_pool_load_status", "Loaded"), ("Compression_ratio", "1.5"), ("Odd", "²")]
        if self.metrics_fail:
            raise runtime.TrialError("server on s.sock: error 1227: Access denied")
        return [(b"buffer_flush_batch_total_pages", 40), ("buffer_LRU_batch_flush_total_pages", 2)]


def test_a_sample_keeps_the_whole_numbers_and_names_the_flush_type_counters(tmp_path):
    sampler = runtime.StatusSampler.__new__(runtime.StatusSampler)
    sampler.session, sampler.metrics_unread = StandInSession(), ""
    assert sampler.sample() == {"Uptime": 12, "Innodb_pages_written": 7,
                                "innodb_metrics.buffer_flush_batch_total_pages": 40,
                                "innodb_metrics.buffer_LRU_batch_flush_total_pages": 2}


def test_flush_type_counters_that_cannot_be_read_leave_the_status_sample_whole_and_are_not_asked_again(tmp_path):
    sampler = runtime.StatusSampler.__new__(runtime.StatusSampler)
    sampler.session, sampler.metrics_unread = StandInSession(metrics_fail=True), ""
    assert sampler.sample() == {"Uptime": 12, "Innodb_pages_written": 7}
    assert sampler.metrics_unread == "server on s.sock: error 1227: Access denied"
    assert sampler.sample() == {"Uptime": 12, "Innodb_pages_written": 7}
    assert sampler.session.asked == ["SHOW", "SELECT", "SHOW"]

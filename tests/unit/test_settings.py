"""innomatrix.settings: what a trial asked of the server and what the server ran."""

from __future__ import annotations

from innomatrix import settings

# SHOW GLOBAL VARIABLES as MariaDB 10.11 printed it in a trial (abridged), and its my.cnf.
VARIABLES = """innodb_adaptive_hash_index\tOFF
innodb_buffer_pool_size\t16777216
innodb_doublewrite\tON
innodb_flush_log_at_trx_commit\t1
innodb_flush_method\tO_DIRECT
innodb_io_capacity\t200
innodb_log_file_size\t50331648
innodb_use_native_aio\tON
log_bin\tOFF
max_connections\t5000
tmpdir\t/tmp
"""
MYCNF = """# innomatrix variant A
[client]
innodb_io_capacity = 999
[mysqld]
innodb_buffer_pool_size = 16M
innodb_flush_method = O_DIRECT
innodb_doublewrite = 1
innodb_log_file_size = 48M
innodb_adaptive_hash_index
log_bin = mysql-bin
max_connections = 5000
"""


def test_the_running_values_of_the_io_settings() -> None:
    running = settings.effective(VARIABLES)
    assert running["innodb_buffer_pool_size"] == "16777216" and running["innodb_use_native_aio"] == "ON"
    assert "max_connections" not in running  # not an I/O setting


def test_what_the_server_groups_asked() -> None:
    wanted = settings.asked(MYCNF)
    assert wanted["innodb_buffer_pool_size"] == "16M"
    assert "innodb_io_capacity" not in wanted  # [client] is not the server's
    assert wanted["innodb_adaptive_hash_index"] is None  # a bare name switches it on


def test_the_same_value_in_other_spellings_is_applied() -> None:
    wanted = {"innodb_buffer_pool_size": "16M", "innodb_doublewrite": "1", "innodb_flush_method": "o_direct",
              "innodb_log_file_size": "48M", "log_bin": "mysql-bin"}
    assert settings.not_applied(wanted, settings.effective(VARIABLES)) == []


def test_a_value_the_server_changed_is_named() -> None:
    # The bare `innodb_adaptive_hash_index` asked for it ON; the server ran it OFF.
    assert settings.not_applied(settings.asked(MYCNF), settings.effective(VARIABLES)) == [
        "innodb_adaptive_hash_index: asked ON, ran OFF",
    ]
    assert settings.not_applied({"innodb_buffer_pool_size": "64M"}, {"innodb_buffer_pool_size": "134217728"}) == [
        "innodb_buffer_pool_size: asked 64M, ran 134217728",
    ]


def test_native_aio() -> None:
    assert not settings.native_aio_off(settings.effective(VARIABLES))
    assert settings.native_aio_off({"innodb_use_native_aio": "OFF"})
    assert not settings.native_aio_off({})  # a server that does not say is not called off

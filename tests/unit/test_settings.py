"""innomatrix_host.settings: what a trial asked of the server and what the server ran."""

from __future__ import annotations

import re

from innomatrix.report.tables import fmt
from innomatrix_host import settings

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


# ---------------------------------------------------------------- in the report


def _trial_with_settings(run, host: str, variables: str, cnf: str = "[mysqld]\n", variant: str = "A", seed: int = 1,
                         rate: int = 0):
    from synth import Trial, steady, write_trial

    directory = write_trial(run, Trial(tps=steady(30, 1000.0 if host == "db1" else 800.0, seed=seed), host=host,
                                       variant=variant, seed=seed, rate=rate))
    (directory / "variables.txt").write_text(variables)
    (directory / "my.cnf").write_text(cnf)
    return directory


def test_the_report_flags_a_server_that_ran_otherwise_and_shows_the_drift(tmp_path) -> None:
    from innomatrix import frame, stats
    from innomatrix.report import tables

    run = tmp_path / "run"
    asked = "[mysqld]\ninnodb_buffer_pool_size = 64M\ninnodb_flush_method = O_DIRECT\n"
    mariadb = "innodb_buffer_pool_size\t67108864\ninnodb_flush_method\tO_DIRECT\ninnodb_io_capacity\t200\n" \
              "innodb_use_native_aio\tON\n"
    mysql = "innodb_buffer_pool_size\t134217728\ninnodb_flush_method\tO_DIRECT\ninnodb_io_capacity\t10000\n" \
            "innodb_use_native_aio\tOFF\n"
    _trial_with_settings(run, "db1", mariadb, asked)
    _trial_with_settings(run, "db2", mysql, asked, seed=2)
    loaded = frame.load(run, workers=1)
    cells = stats.cells(loaded).set_index("trial")
    assert "native AIO" not in cells.loc["db1/xfs/oltp/A/bp-64M/t2/r1", "flags"]
    assert "server ran without" not in cells.loc["db1/xfs/oltp/A/bp-64M/t2/r1", "flags"]
    db2 = cells.loc["db2/xfs/oltp/A/bp-64M/t2/r1", "flags"]
    assert "native AIO off" in db2
    assert "server ran without what my.cnf asked: innodb_buffer_pool_size: asked 64M, ran 134217728" in db2

    drift = tables.settings_drift(loaded.trials, cells.reset_index())
    assert drift is not None
    rows = {row["setting"]: row for row in drift.data.to_dict("records")}
    db1, db2 = "db1 · mariadb 10.11.19-MariaDB-0+deb12u1", "db2 · mariadb 10.11.19-MariaDB-0+deb12u1"
    assert rows["innodb_io_capacity"][db1] == "200" and rows["innodb_io_capacity"][db2] == "10000"
    assert rows["innodb_use_native_aio"][db2] == "OFF"
    assert "innodb_flush_method" not in rows  # the same on both: not drift
    assert set(rows) == {"median throughput (tps)", f"throughput ÷ {db1}", "innodb_buffer_pool_size",
                         "innodb_io_capacity", "innodb_use_native_aio"}
    # The neighbour's throughput as a ratio to the first server's, never without its interval and
    # verdict or the reason it has none (one trial a side here).
    ratio = rows[f"throughput ÷ {db1}"]
    assert ratio[db1] == "1" and re.fullmatch(r"\d\.\d{3}× 1 trial on a side: run-to-run variance unknown", ratio[db2])


def test_the_drift_is_of_closed_loop_trials_beside_fixed_rate_ones(tmp_path) -> None:
    # Fixed-rate trials have no place in the throughput rows (their throughput is the rate offered):
    # two hosts that ran both were a traceback (a fixed-rate trial looked up among closed-loop cells).
    from innomatrix import frame, stats
    from innomatrix.report import tables

    run = tmp_path / "run"
    for host, seed in (("db1", 1), ("db2", 2)):
        _trial_with_settings(run, host, f"innodb_io_capacity\t{seed}00\n", seed=seed)
        _trial_with_settings(run, host, f"innodb_io_capacity\t{seed}00\n", seed=seed, rate=50)
    loaded = frame.load(run, workers=1)
    every_cell = stats.cells(loaded)
    drift = tables.settings_drift(loaded.trials, tables.closed_loop(every_cell))
    rows = {row["setting"]: row for row in drift.data.to_dict("records")}
    db1, db2 = "db1 · mariadb 10.11.19-MariaDB-0+deb12u1", "db2 · mariadb 10.11.19-MariaDB-0+deb12u1"
    closed = every_cell[every_cell["rate"] == 0].set_index("host")["throughput_median"]
    assert rows["median throughput (tps)"][db1] == fmt(closed["db1"]) and rows["innodb_io_capacity"][db2] == "200"
    assert not [note for note in drift.notes if "fixed-rate trials alone" in note]
    # a third host that ran fixed-rate trials alone is said, not dropped unsaid
    _trial_with_settings(run, "db3", "innodb_io_capacity\t300\n", seed=3, rate=50)
    loaded = frame.load(run, workers=1)
    drift = tables.settings_drift(loaded.trials, tables.closed_loop(stats.cells(loaded)))
    assert "Closed-loop trials only: db3 ran fixed-rate trials alone, not compared here." in drift.notes


def test_no_drift_table_for_one_server(tmp_path) -> None:
    from innomatrix import frame, stats
    from innomatrix.report import tables

    run = tmp_path / "run"
    _trial_with_settings(run, "db1", "innodb_io_capacity\t200\n")
    loaded = frame.load(run, workers=1)
    assert tables.settings_drift(loaded.trials, stats.cells(loaded)) is None

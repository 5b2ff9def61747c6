"""The async and sync flush points (#33): the checkpoint ages at which a server starts flushing in a
hurry and makes writers wait, read once a trial from the server itself (flush_points.txt) and drawn
on the checkpoint-age panel; the stall rules judge the age against them.

The texts below are what Server.FLUSH_POINTS_SQL printed here: MariaDB 10.11.19 with a 256M log
file (the demo fixture's server and redo) and MySQL 9.7.4 with innodb_redo_log_capacity=96M (the
MySQL fixture's)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from innomatrix import frame, stats
from innomatrix.parse import ParseError
from innomatrix_host import flush_points, server_log
from innomatrix.report import plots

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "report"
DEMO, DEMO_TRIAL = FIXTURES / "real-demo", "localhost/xfs/oltp/A/bp-16M/t4/r1"
MARIADB_256M = "log_max_modified_age_async\t189625606\nInnodb_checkpoint_max_age\t216714978\n"
MYSQL_96M = "log_max_modified_age_async\t78022656\nlog_max_modified_age_sync\t83595776\n"


def test_each_server_says_its_points_its_own_way() -> None:
    assert flush_points.parse(MARIADB_256M) == flush_points.FlushPoints(189625606, 216714978)
    assert flush_points.parse(MYSQL_96M) == flush_points.FlushPoints(78022656, 83595776)
    # MariaDB's async point is 7/8 of its sync point, by its own rule (margin - margin / 8).
    assert 216714978 - 216714978 // 8 == 189625606
    assert flush_points.parse("") == flush_points.FlushPoints(None, None)
    # A server with both (Percona Server's status has a max checkpoint age beyond its sync point):
    # INNODB_METRICS' sync point is the one.
    assert flush_points.parse(MYSQL_96M + "Innodb_checkpoint_max_age\t90000000\n") == \
        flush_points.FlushPoints(78022656, 83595776)


def test_the_sync_point_mariadb_states_is_the_one_its_status_log_shows_every_second() -> None:
    """The demo fixture's trial ran MariaDB 10.11 with the same 256M log: its sampled
    Innodb_checkpoint_max_age is the sync point the flush-points query reads."""
    rows = [line.split("\t") for line in (DEMO / DEMO_TRIAL / "status.log").read_text().splitlines()]
    sampled = {int(fields[2]) for fields in rows if len(fields) == 4 and fields[1] == "Innodb_checkpoint_max_age"}
    assert sampled == {flush_points.parse(MARIADB_256M).sync_bytes}


@pytest.mark.parametrize(("text", "line", "says"), [
    ("log_max_modified_age_async\t" + "9" * 400 + "\n", 1, "not a byte count"),
    ("x\ty\nlog_max_modified_age_async\t-5\n", 2, "not a byte count"),
    ("log_max_modified_age_async\t²\n", 1, "not a byte count"),
    ("log_max_modified_age_async\t0\n", 1, "no server computes such a flush point"),
    ("log_max_modified_age_async\t" + str(2 ** 51) + "\n", 1, "no server computes such a flush point"),
    (MYSQL_96M + "log_max_modified_age_sync\t83595776\n", 3, "listed twice (first on line 2)"),
    ("log_max_modified_age_async\t90000000\nInnodb_checkpoint_max_age\t80000000\n", 1, "lies beyond the sync one"),
    # Cut: 189625606 read as 18 would put every second past the async point.
    ("Innodb_checkpoint_max_age\t216714978\nlog_max_modified_age_async\t18", 2, "cut short"),
    ("log_max_modified_age_async\t1896\n", 1, "the async flush point without the sync one"),
    ("x\ty\nInnodb_checkpoint_max_age\t216714978\n", 2, "the sync flush point without the async one"),
])
def test_a_damaged_file_is_an_error_naming_its_line(text: str, line: int, says: str) -> None:
    with pytest.raises(flush_points.FlushPointsError) as caught:
        flush_points.parse(text)
    assert caught.value.line == line and says in str(caught.value) and "\n" not in str(caught.value)


def test_the_report_reads_them_draws_them_and_an_older_trial_has_none(tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(DEMO, run)
    (run / DEMO_TRIAL / "flush_points.txt").write_text(MARIADB_256M)
    loaded = frame.load(run)
    trials = loaded.trials
    assert stats.flush_points(trials.loc[DEMO_TRIAL]) == (189625606, 216714978)
    others = [trial for trial in trials.index if trial != DEMO_TRIAL]
    assert others and all(stats.flush_points(trials.loc[trial]) == (None, None) for trial in others)
    cells = stats.cells(loaded)
    lines = plots._redo_lines(loaded, cells[cells["trial"] == DEMO_TRIAL])
    assert lines == [(189625606 / 2 ** 20, "async flush point 180.8 MiB"),
                     (216714978 / 2 ** 20, "sync flush point 206.7 MiB"), (256.0, "redo capacity 256 MiB")]


def test_a_damaged_file_in_a_tree_stops_the_report_with_one_line(tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(DEMO, run)
    (run / DEMO_TRIAL / "flush_points.txt").write_text("log_max_modified_age_async\t1e309\n")
    with pytest.raises(ParseError, match=r"flush_points.txt:1: log_max_modified_age_async is '1e309', not a byte count"):
        frame.load(run)


def test_a_server_that_would_not_give_them_is_said_so(tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(DEMO, run)
    record = run / DEMO_TRIAL / "trial.json"
    trial = json.loads(record.read_text())
    trial["flush_points_unread"] = "mariadb exited 1: ERROR 1227 (42000): Access denied"
    record.write_text(json.dumps(trial))
    notes = frame.load(run).trials.loc[DEMO_TRIAL, "notes"]
    assert "flush_points.txt: none, the server would not give them (mariadb exited 1: ERROR 1227" in notes


def test_a_huge_or_hostile_error_log_never_stops_the_report(tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(DEMO, run)
    log = run / DEMO_TRIAL / "mysqld.err"
    with log.open("a") as out:
        out.write("9999-12-31T23:59:59.000000-01:00 0 [Warning] past the calendar's end\n")
        out.write("2026-11-26  8:41:30 0 [Note] InnoDB: a note\n" * 120_000)  # 5 MiB and more
    loaded = frame.load(run)
    assert "mysqld.err: only its first 10000 warnings or 4 MiB read" in loaded.trials.loc[DEMO_TRIAL, "notes"]
    assert server_log.read_head(log).cut  # the host reads as far, and no further
    # Read this far, a last line cut mid-way is dropped, not read as a shorter one.
    cut = server_log.from_head(b"2026-11-28  0:41:53 0 [Warning] whole\n2026-11-28  0:41:54 0 [Warning] cu", True)
    assert [w.text for w in cut.warned] == ["[Warning] whole"] and cut.cut
    log.write_text("0001-01-01  0:00:00 0 [Note] a first line in year 1\n"
                   "9999-12-31 23:59:59 0 [Warning] and one at the calendar's end\n")
    assert "not placed" in frame.load(run).trials.loc[DEMO_TRIAL, "notes"]

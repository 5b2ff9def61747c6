"""Checkpoint age on every server (#33): MariaDB's own gauge, and on MySQL 8.0.30+ (which has no
such variable) the difference of the two redo LSNs its SHOW GLOBAL STATUS shows. The known answer:
a real MariaDB trial's status.log, with its gauge taken away and its LSNs renamed as MySQL names
them, gives the same checkpoint age each second as the gauge did (MariaDB's gauge is that very
difference)."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from innomatrix import frame, stats
from innomatrix.parse import ParseError
from innomatrix.report import plots
from innomatrix_host import settings

DEMO = Path(__file__).resolve().parents[1] / "fixtures" / "report" / "real-demo"
TRIAL = "localhost/xfs/oltp/A/bp-16M/t4/r1"
AS_MYSQL = {"Innodb_lsn_current": "Innodb_redo_log_current_lsn",
            "Innodb_lsn_last_checkpoint": "Innodb_redo_log_checkpoint_lsn"}


def _as_mysql(run: Path, names: dict[str, str]) -> None:
    """The trial's status.log as MySQL writes it: no Innodb_checkpoint_age, the LSNs under `names`."""
    path = run / TRIAL / "status.log"
    lines = []
    for line in path.read_text().splitlines(keepends=True):
        fields = line.split("\t")
        if len(fields) == 4 and fields[1] == "Innodb_checkpoint_age":
            continue
        if len(fields) == 4 and fields[1] in names:
            fields[1] = names[fields[1]]
        lines.append("\t".join(fields))
    path.write_text("".join(lines))


def _ages(run: Path) -> tuple[np.ndarray, str]:
    loaded = frame.load(run)
    rows = loaded.intervals[(loaded.intervals["trial"] == TRIAL).to_numpy()
                            & (loaded.intervals["metric"] == frame.CHECKPOINT_AGE).to_numpy()].sort_values("t")
    cells = stats.cells(loaded).set_index("trial")
    return rows["value"].to_numpy(dtype=np.float64), str(cells.loc[TRIAL, "flags"])


def test_mysqls_two_lsns_give_the_checkpoint_age_mariadbs_gauge_gives(tmp_path: Path) -> None:
    gauge, _ = _ages(DEMO)
    assert gauge.size > 10 and np.nanmax(gauge) > 0
    run = tmp_path / "run"
    shutil.copytree(DEMO, run)
    _as_mysql(run, AS_MYSQL)
    assert "Innodb_checkpoint_age" not in (run / TRIAL / "status.log").read_text()
    derived, flags = _ages(run)
    np.testing.assert_array_equal(derived, gauge)
    cells = stats.cells(frame.load(run)).set_index("trial")
    assert cells.loc[TRIAL, "checkpoint_age_max_mib"] == pytest.approx(np.nanmax(gauge) / 2 ** 20)
    assert "checkpoint" not in flags


def test_a_checkpoint_ahead_of_the_redo_is_no_age_and_marks_the_trial(tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(DEMO, run)
    _as_mysql(run, {"Innodb_lsn_current": "Innodb_redo_log_checkpoint_lsn",
                    "Innodb_lsn_last_checkpoint": "Innodb_redo_log_current_lsn"})  # swapped: age < 0
    ages, flags = _ages(run)
    assert not (ages < 0).any() and np.isnan(ages).any()
    assert "the checkpoint LSN is ahead of the current LSN" in flags, flags


def test_a_trial_without_either_source_has_no_checkpoint_age(tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(DEMO, run)
    _as_mysql(run, {"Innodb_lsn_current": "Innodb_lsn_current"})  # the gauge gone, no MySQL LSNs
    ages, _ = _ages(run)
    assert ages.size == 0
    assert np.isnan(stats.cells(frame.load(run)).set_index("trial").loc[TRIAL, "checkpoint_age_max_mib"])


def test_the_redo_capacity_each_server_names_its_own_way() -> None:
    assert settings.redo_capacity({"innodb_redo_log_capacity": "100663296"}) == 96 << 20  # MySQL 8.0.30+
    assert settings.redo_capacity({"innodb_log_file_size": "268435456"}) == 256 << 20  # MariaDB 10.6+
    assert settings.redo_capacity({"innodb_log_file_size": "50331648", "innodb_log_files_in_group": "2"}) == 96 << 20
    assert settings.redo_capacity({"innodb_redo_log_capacity": "", "innodb_log_file_size": "1G"}) == 1 << 30
    assert settings.redo_capacity({}) is None
    assert settings.redo_capacity({"innodb_log_file_size": "lots"}) is None


def test_the_report_draws_the_flushing_panels_with_the_redo_capacity() -> None:
    loaded = frame.load(DEMO)
    cells = stats.cells(loaded)
    oltp = cells[cells["workload"] == "oltp"]
    assert plots._redo_lines(loaded, oltp) == [(256.0, "redo capacity 256 MiB")]
    drawn = [plot.name for plot in plots.report_plots(loaded, cells, [])]
    assert any(name.startswith("innodb_") for name in drawn), drawn


MYSQL = Path(__file__).resolve().parents[1] / "fixtures" / "report" / "real-mysql-9.7"


def test_a_real_mysql_9_7_trial_has_its_checkpoint_age_from_its_lsns() -> None:
    # Captured from tests/e2e/test_mysql_remote.py (variant A, 96M redo capacity, 4 s measured).
    loaded = frame.load(MYSQL)
    status = (MYSQL / "db-mysql/xfs/oltp/A/bp-64M/t2/r1/status.log").read_text()
    assert "Innodb_checkpoint_age" not in status and "Innodb_redo_log_checkpoint_lsn" in status
    ages = loaded.intervals[(loaded.intervals["metric"] == frame.CHECKPOINT_AGE).to_numpy()]["value"]
    assert len(ages) >= 5 and (ages > 0).all()
    [row] = stats.cells(loaded).to_dict("records")
    assert 1 < row["checkpoint_age_max_mib"] < 96, row["checkpoint_age_max_mib"]
    assert plots._redo_lines(loaded, stats.cells(loaded)) == [(96.0, "redo capacity 96 MiB")]


def test_lsns_too_far_apart_for_any_server_are_an_error_naming_the_line(tmp_path: Path) -> None:
    run = tmp_path / "mysql"
    shutil.copytree(MYSQL, run)
    status = run / "db-mysql/xfs/oltp/A/bp-64M/t2/r1/status.log"
    lines = status.read_text().splitlines(keepends=True)
    [first] = [i for i, line in enumerate(lines) if "\tInnodb_redo_log_current_lsn\t" in line and "absolute" in line]
    stamp, name, _, kind = lines[first].split("\t")
    lines[first] = "\t".join((stamp, name, str(2 ** 62), kind))  # each LSN within its bound, their difference not
    status.write_text("".join(lines))
    with pytest.raises(ParseError) as raised:
        frame.load(run)
    message = str(raised.value)
    assert str(status) in message and "checkpoint age" in message and "\n" not in message, message


def test_a_count_of_redo_files_that_is_no_count_counts_one() -> None:
    assert settings.redo_capacity({"innodb_log_file_size": "268435456", "innodb_log_files_in_group": "²"}) == 256 << 20
    assert settings.redo_capacity({"innodb_log_file_size": "268435456", "innodb_log_files_in_group": "0"}) == 256 << 20


def _metric(loaded: frame.Frame, metric: str) -> np.ndarray:
    rows = loaded.intervals[(loaded.intervals["trial"] == TRIAL).to_numpy()
                            & (loaded.intervals["metric"] == metric).to_numpy()].sort_values("t")
    return rows["value"].to_numpy(dtype=np.float64)


def test_dirty_pages_are_a_share_of_the_pool_and_more_than_the_pool_marks_the_trial(tmp_path: Path) -> None:
    loaded = frame.load(DEMO)
    dirty, share = _metric(loaded, "status.Innodb_buffer_pool_pages_dirty"), _metric(loaded, frame.DIRTY_PCT)
    # The demo's trial: a 16M pool of 1014 pages (its status says so once, at the first sample).
    assert len(share) == len(dirty) > 10 and np.allclose(share, 100 * dirty / 1014)
    assert 0 < share.max() <= 100
    run = tmp_path / "run"
    shutil.copytree(DEMO, run)
    path = run / TRIAL / "status.log"
    path.write_text(path.read_text().replace("\tInnodb_buffer_pool_pages_total\t1014\t", "\tInnodb_buffer_pool_pages_total\t3\t"))
    doctored = frame.load(run)
    assert np.isnan(_metric(doctored, frame.DIRTY_PCT)[dirty > 3]).all()
    assert "more dirty pages than the buffer pool has" in doctored.trials.loc[TRIAL, "marks"]


def test_a_sampler_that_failed_part_way_leaves_a_gap_in_its_line_never_a_bridge(tmp_path: Path) -> None:
    """The status sampler did not answer for three seconds (#error rows in place of its samples):
    the trial still reports, the frame has no figure there, and the panel's line breaks there."""
    run = tmp_path / "run"
    shutil.copytree(DEMO, run)
    path = run / TRIAL / "status.log"
    lines = path.read_text().splitlines(keepends=True)
    stamps = sorted({line.split("\t")[0] for line in lines[1:]})
    lost = set(stamps[8:11])
    kept = [line for line in lines if line.split("\t")[0] not in lost]
    kept += [f"{stamp}\t#error\tserver did not answer in 5 s\terror\n" for stamp in sorted(lost)]
    path.write_text(kept[0] + "".join(sorted(kept[1:], key=lambda line: line.split("\t")[0])))
    loaded = frame.load(run)
    t = loaded.intervals[(loaded.intervals["trial"] == TRIAL).to_numpy()
                         & (loaded.intervals["metric"] == "status.Innodb_buffer_pool_pages_flushed").to_numpy()]["t"]
    steps = np.diff(np.sort(t.to_numpy()))
    assert steps.max() == 4.0 and (steps == 1.0).sum() == len(steps) - 1  # three seconds missing, not filled
    drawn_t, drawn_v = plots.broken_at_gaps(np.sort(t.to_numpy()), np.ones(len(t)))
    assert len(drawn_t) == len(t) + 1 and np.isnan(drawn_v).sum() == 1  # one break, where the samples stop
    assert stats.cells(loaded).set_index("trial").loc[TRIAL, "status"] == "ok"


def test_pages_flushed_by_type_are_read_from_the_sampler_s_innodb_metrics_rows(tmp_path: Path) -> None:
    """The sampler writes INNODB_METRICS' flush-type counters into status.log under METRIC_PREFIX.
    MariaDB's LRU metric mirrors its Innodb_buffer_pool_pages_lru_flushed status: the real demo
    trial (written before the sampler read them), its LRU rows copied under the metric's name and a
    flush-list metric that never moved (a 16M pool: every page this trial flushed was by LRU)."""
    lru, listed = (plots.FLUSH_LRU, plots.FLUSH_LIST)
    run = tmp_path / "run"
    shutil.copytree(DEMO, run)
    path = run / TRIAL / "status.log"
    lines = path.read_text().splitlines(keepends=True)
    first = lines[1].split("\t")[0]
    added = [line.replace("\tInnodb_buffer_pool_pages_lru_flushed\t", f"\t{lru}\t") for line in lines
             if "\tInnodb_buffer_pool_pages_lru_flushed\t" in line] + [f"{first}\t{listed}\t0\tabsolute\n"]
    path.write_text(lines[0] + "".join(sorted(lines[1:] + added, key=lambda line: line.split("\t")[0])))
    loaded = frame.load(run)
    by_lru, flushed = _metric(loaded, f"status.{lru}"), _metric(loaded, "status.Innodb_buffer_pool_pages_flushed")
    assert len(by_lru) == len(flushed) > 10 and by_lru.sum() > 0
    np.testing.assert_array_equal(by_lru, flushed)  # all by LRU here, as the status said
    by_list = _metric(loaded, f"status.{listed}")
    assert len(by_list) == len(flushed) and (by_list == 0).all()
    assert {f"status.{lru}", f"status.{listed}"} <= {spec[0] for spec in plots.FLUSHING_PANELS}  # drawn under all flushed
    # A trial whose sampler stopped reading them part-way (or never could): none drawn, and said,
    # never the zeros an unlisted counter would read as.
    record = run / TRIAL / "trial.json"
    record.write_text(record.read_text().replace('"status": "ok"', '"flush_types_unread": "not read after a failed '
                                                 'read: error 2013", "status": "ok"', 1))
    unread = frame.load(run)
    assert len(_metric(unread, f"status.{lru}")) == len(_metric(unread, f"status.{listed}")) == 0
    assert len(_metric(unread, "status.Innodb_buffer_pool_pages_flushed")) == len(flushed)
    assert "pages flushed by type: none drawn, the sampler did not read them all along (not read after a failed " \
           "read: error 2013)" in unread.trials.loc[TRIAL, "notes"]

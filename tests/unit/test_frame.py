"""innomatrix.frame: a results tree as one long table, every collector on the driver's clock."""

from __future__ import annotations

import json
import pickle

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from innomatrix import frame, stats, tree
from innomatrix.parse import ParseError, fast_sysbench, iostat, status, vmstat
from trees import Trial, real_tiny, steady, write_trial


def wide(loaded: frame.Frame, metrics: list[str], measured_only: bool = False) -> pd.DataFrame:
    return loaded.wide(metrics, measured_only=measured_only)


def test_the_real_run_lines_up_status_and_iostat_with_the_driver(tmp_path):
    loaded = frame.load(real_tiny(tmp_path))
    assert list(loaded.trials.index) == ["localhost/xfs/oltp/A/bp-64M/t2/r1"]
    table = wide(loaded, ["driver.tps", "status.Com_commit", "iostat.w/s", "vmstat.us"]).droplevel("trial")
    assert table.index.tolist() == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]
    # Commits per second from SHOW GLOBAL STATUS match sysbench's tps in the same interval (same clock).
    np.testing.assert_allclose(table["status.Com_commit"], table["driver.tps"], rtol=0.05)
    # The slowest interval is the same one for the driver and the device.
    assert table["driver.tps"].idxmin() == table["iostat.w/s"].idxmin() == 7.0
    assert table["vmstat.us"].tolist() == [44, 35, 35, 41, 32, 41, 48]


def test_one_row_per_interval_per_metric_per_trial_and_measured_after_the_warmup(tmp_path):
    loaded = frame.load(real_tiny(tmp_path))
    rows = loaded.intervals
    assert list(rows.columns) == ["trial", "t", "metric", "value", "measured"]
    assert not rows.duplicated(["trial", "t", "metric"]).any()
    tps = rows[rows["metric"] == "driver.tps"]
    assert tps[tps["measured"]]["t"].tolist() == [3.0, 4.0, 5.0, 6.0, 7.0]  # warmup 2 s
    meta = loaded.trials.iloc[0]
    assert (meta["warmup_s"], meta["report_interval_s"], meta["throughput_unit"]) == (2.0, 1.0, "tps")
    assert meta["driver_transactions"] == 5398 and meta["driver_ignored_errors"] == 7


def test_second_stamps_land_on_the_interval_they_close(tmp_path):
    # synth writes iostat w/s = 2 × tps and vmstat bo = tps × 6 for the same interval, stamped in whole
    # seconds 20 ms before the driver's tick: only a correct alignment pairs them exactly.
    tps = steady(40, 1000.0, 0.2, seed=3)
    write_trial(tmp_path / "run", Trial(tps=tps, warmup_s=5, device_kb_per_trx=6.0))
    table = wide(frame.load(tmp_path / "run"), ["driver.tps", "iostat.w/s", "vmstat.bo"]).droplevel("trial")
    assert len(table) == 40
    np.testing.assert_allclose(table["iostat.w/s"], 2 * table["driver.tps"], atol=0.011)
    np.testing.assert_array_equal(table["vmstat.bo"], np.floor(table["driver.tps"] * 6))


def test_status_counters_are_rates_and_gauges_are_levels(tmp_path):
    write_trial(tmp_path / "run", Trial(tps=steady(60, 500.0, 0.0), warmup_s=5, innodb_bytes_per_trx=3000.0))
    table = wide(frame.load(tmp_path / "run"), ["status.Com_commit", "status.Innodb_os_log_written",
                                                "status.Innodb_buffer_pool_pages_dirty"]).droplevel("trial")
    np.testing.assert_allclose(table["status.Com_commit"], 500.0, rtol=0.011)  # 500 per ~1 s sample
    np.testing.assert_allclose(table["status.Innodb_os_log_written"], 500 * 1500, rtol=0.011)
    dirty = table["status.Innodb_buffer_pool_pages_dirty"]
    assert dirty.iloc[0] == 50 and dirty.iloc[1] == 100 and dirty.iloc[-1] == dirty.max()  # a level, not a rate


def test_local_time_vmstat_is_placed_by_its_quarter_hour_offset(tmp_path):
    run = tmp_path / "run"
    directory = write_trial(run, Trial(tps=steady(20, 800.0, 0.1), warmup_s=2))
    utc = frame.load(run)
    log = directory / "vmstat.log"
    lines = log.read_text().splitlines(keepends=True)
    shifted = [lines[0], lines[1].replace("UTC", "IST")]
    for line in lines[2:]:
        stamp = pd.Timestamp(line[-20:-1]) + pd.Timedelta(hours=5, minutes=30)
        shifted.append(line[:-20] + stamp.strftime("%Y-%m-%d %H:%M:%S") + "\n")
    log.write_text("".join(shifted))
    local = frame.load(run)
    pd.testing.assert_frame_equal(wide(local, ["vmstat.bo"]), wide(utc, ["vmstat.bo"]))
    assert "zone IST read as UTC+5.5 h" in local.trials.iloc[0]["notes"]


def test_missing_collectors_are_noted_and_the_driver_still_loads(tmp_path):
    write_trial(tmp_path / "run", Trial(tps=steady(10), files=("driver.log",)))
    loaded = frame.load(tmp_path / "run")
    assert set(loaded.intervals["metric"].astype(str)) == {f"driver.{m}" for m in (*frame._OLTP_METRICS, "throughput")}
    notes = loaded.trials.iloc[0]["notes"]
    assert "vmstat: no vmstat.log" in notes and "iostat: no iostat.json" in notes and "status: no status.log" in notes


def test_a_device_named_by_a_stable_path_is_read_from_iostat_by_its_kernel_name(tmp_path):
    # iostat knows the kernel's name (loop0 here), never /dev/disk/by-id/…: trial.json says both.
    directory = write_trial(tmp_path / "run", Trial(tps=steady(10)))
    record = json.loads((directory / "trial.json").read_text())
    record["device"] = {"path": "/dev/disk/by-id/virtio-im-m1", "name": "loop0"}
    (directory / "trial.json").write_text(json.dumps(record))
    loaded = frame.load(tmp_path / "run")
    assert loaded.trials.iloc[0]["iostat_device"] == "loop0"
    assert len(wide(loaded, ["iostat.w/s"])) == 10
    # Without the kernel's name (a tree from before it was recorded), the path's last part is all there is.
    del record["device"]["name"]
    (directory / "trial.json").write_text(json.dumps(record))
    with pytest.raises(ParseError, match="no disk 'virtio-im-m1'"):
        frame.load(tmp_path / "run")


@pytest.mark.parametrize("device, model", [
    ({"path": "/dev/nvme0n1", "model": "SAMSUNG MZQL23T8HCLS  "}, "SAMSUNG MZQL23T8HCLS"),
    ({"path": "/dev/loop0", "model": "", "identity": "loop:/var/lib/innomatrix/demo-disk.img"}, "loop device"),
    ({"path": "/dev/vda", "model": "", "identity": "serial:im-m1"}, ""),  # a virtio disk: no model to be alike by
    ({"path": "/dev/loop0"}, ""),  # a trial.json from before models were recorded
    # a layout: its members as the layout module read them back from the kernel
    ({"path": "/dev/md0", "layout": {"name": "md-raid0", "read_back": {"kind": "md", "members": [
        {"name": "nvme1n1", "model": "INTEL  B "}, {"name": "nvme0n1", "model": "INTEL A"}]}}}, "INTEL A + INTEL B"),
    ({"path": "/dev/md0", "layout": {"read_back": {"members": [{"model": "INTEL A"}, {"model": "  "}]}}}, ""),
    ({"path": "/dev/md0", "layout": {"read_back": {}}}, ""),  # no members read back: nothing to be alike by
    ({"path": "/dev/sda", "model": "X" * 5000 + "\nY"}, "X" * 80),  # a table cell, not a document
    # a SATA disk: the kernel's 16 characters, SMART's whole name where it lengthens them, else the kernel's
    ({"path": "/dev/sda", "model": "Samsung SSD 870 ", "smart": "Samsung SSD 870 EVO 1TB"}, "Samsung SSD 870 EVO 1TB"),
    ({"path": "/dev/sda", "model": "Samsung SSD 870 ", "smart": "Crucial MX500"}, "Samsung SSD 870"),
    ({"path": "/dev/sda", "model": "Samsung SSD 870 ", "smart": None}, "Samsung SSD 870"),
])
def test_the_device_model_is_what_like_hosts_share(tmp_path, device, model):
    directory = write_trial(tmp_path / "run", Trial(tps=steady(5), files=("driver.log",)))
    record = json.loads((directory / "trial.json").read_text())
    device = dict(device)
    if "smart" in device:
        record["smart"] = {"before": {"status": "ok", "wear": {"model": device.pop("smart")}}}
    record["device"] = device
    (directory / "trial.json").write_text(json.dumps(record))
    assert frame.load(tmp_path / "run").trials.iloc[0]["device_model"] == model


@pytest.mark.parametrize("members, said", [
    ("md0", r"device\.layout\.read_back\.members is 'md0', not a list"),
    ([{"model": 7}], r"device\.layout\.read_back\.members\.0\.model is 7, not text"),
    (["md0"], r"device\.layout\.read_back\.members\.0 is 'md0', not an object"),
    ({"smart": {"before": {"wear": {"model": 870}}}}, r"smart\.before\.wear\.model is 870, not text"),
    ({"smart": {"before": "ok"}}, r"smart\.before is 'ok', not an object")])
def test_a_damaged_device_model_is_an_error_naming_trial_json(tmp_path, members, said):
    directory = write_trial(tmp_path / "run", Trial(tps=steady(5), files=("driver.log",)))
    record = json.loads((directory / "trial.json").read_text())
    if isinstance(members, dict):  # a plain SATA disk whose SMART block is damaged
        record.update(members, device={"path": "/dev/sda", "model": "Samsung SSD 870"})
    else:
        record["device"] = {"path": "/dev/md0", "layout": {"read_back": {"members": members}}}
    (directory / "trial.json").write_text(json.dumps(record))
    with pytest.raises(frame.FrameError, match=rf"^{directory}/trial\.json: {said}"):
        frame.load(tmp_path / "run")


def test_a_trial_without_a_start_time_is_an_error_naming_its_trial_json(tmp_path):
    directory = write_trial(tmp_path / "run", Trial(tps=steady(5)))
    record = json.loads((directory / "trial.json").read_text())
    del record["times"]["started"]
    (directory / "trial.json").write_text(json.dumps(record))
    with pytest.raises(frame.FrameError, match=rf"^{directory}/trial\.json: no times\.started"):
        frame.load(tmp_path / "run")


def test_a_damaged_driver_line_is_an_error_naming_driver_log_and_the_line(tmp_path):
    directory = write_trial(tmp_path / "run", Trial(tps=steady(5)))
    log = directory / "driver.log"
    log.write_text(log.read_text().replace("[ 3s ] thds: 2 tps: ", "[ 3s ] thds: 2 tps: x"))
    with pytest.raises(ParseError, match=rf"^{log}: line 15: malformed sysbench interval line"):
        frame.load(tmp_path / "run")


def test_a_trial_moved_to_another_cells_directory_is_refused(tmp_path):
    directory = write_trial(tmp_path / "run", Trial(tps=steady(5), layout="md-raid0", members=4))
    record = json.loads((directory / "trial.json").read_text())
    record["cell"]["members"] = 2
    (directory / "trial.json").write_text(json.dumps(record))
    with pytest.raises(frame.FrameError, match=r"its cell does not match the directory .*members 2 \(its directory says 4\)"):
        frame.load(tmp_path / "run")
    # A trial from before layouts names none: it ran on a plain device, and cannot be a layout's.
    del record["cell"]["layout"], record["cell"]["members"]
    (directory / "trial.json").write_text(json.dumps(record))
    with pytest.raises(frame.FrameError, match=r"no layout \(its directory says 'md-raid0' over 4 members\)"):
        frame.load(tmp_path / "run")


def test_no_trials_is_an_error(tmp_path):
    with pytest.raises(frame.FrameError, match="no trial directories"):
        frame.load(tmp_path)
    with pytest.raises(frame.FrameError, match="no such results directory"):
        frame.load(tmp_path / "absent")


def test_loading_in_worker_processes_gives_the_same_frame(tmp_path):
    run = tmp_path / "run"
    for repeat in (1, 2, 3):
        write_trial(run, Trial(tps=steady(15, seed=repeat), repeat=repeat, seed=repeat))
    pd.testing.assert_frame_equal(frame.load(run, workers=2).intervals, frame.load(run, workers=1).intervals)


def test_errors_survive_the_trip_back_from_a_worker_process():
    error = pickle.loads(pickle.dumps(ParseError("r1/status.log", "expected the header", 1)))
    assert (type(error), str(error), error.line) == (ParseError, "r1/status.log:1: expected the header", 1)
    assert str(pickle.loads(pickle.dumps(frame.FrameError("x: no times.started")))) == "x: no times.started"


def _mixed_run(tmp_path):
    run = real_tiny(tmp_path)
    for repeat in (1, 2):
        write_trial(run, Trial(tps=steady(120, 900.0, 0.2, seed=repeat), repeat=repeat, seed=repeat, warmup_s=20,
                               threads=4 * repeat))
    return run


def test_the_fast_readers_give_the_frame_the_exact_readers_give(tmp_path, monkeypatch):
    run = _mixed_run(tmp_path)
    fast = frame.load(run, workers=1)

    def no_table(data, path):
        raise pa.ArrowInvalid("read exactly")

    monkeypatch.setattr(fast_sysbench, "_in_bulk", lambda text: None)
    monkeypatch.setattr(vmstat, "_fast_samples", lambda text, path: None)
    monkeypatch.setattr(iostat, "_fast_samples", lambda data, text, path, device: None)
    monkeypatch.setattr(status, "_fast_table", no_table)
    exact = frame.load(run, workers=1)
    pd.testing.assert_frame_equal(fast.intervals, exact.intervals)
    pd.testing.assert_frame_equal(fast.trials, exact.trials)


def test_the_long_table_is_every_trials_series_in_turn(tmp_path):
    run = _mixed_run(tmp_path)
    loaded = frame.load(run, workers=1)
    trials = [frame.load_trial(directory, run) for directory in tree.trial_dirs(run)]
    parts = []
    for trial in trials:
        meta = trial.meta
        for t, name, values in zip(trial.t, trial.names, trial.values):
            measured = (t - meta["report_interval_s"] >= meta["warmup_s"] - 1e-6) & (t <= meta["driver_last_t"] + 1e-6)
            parts.append(pd.DataFrame({"trial": meta["trial"], "t": t, "metric": name, "value": values,
                                       "measured": measured}))
    expected = pd.concat(parts, ignore_index=True)
    expected["trial"] = pd.Categorical(expected["trial"], categories=[trial.meta["trial"] for trial in trials])
    expected["metric"] = pd.Categorical(expected["metric"], categories=sorted(set(expected["metric"])))
    pd.testing.assert_frame_equal(loaded.intervals, expected)


def _without_collector_samples_after(trial_dir, keep: int) -> None:
    """Keep vmstat's header, its since-boot line and its first `keep` samples: it stopped early."""
    lines = (trial_dir / "vmstat.log").read_text().splitlines(keepends=True)
    (trial_dir / "vmstat.log").write_text("".join(lines[:3 + keep]))


@pytest.mark.parametrize(("intervals", "warmup_s", "marked"), [(20, 2, True), (4, 1, False)])
def test_a_measured_window_without_a_collector_sample_is_marked_when_it_is_longer_than_the_slack(
        tmp_path, intervals, warmup_s, marked) -> None:
    # 18 s measured and no vmstat sample in them: the collector stopped early, the trial is marked.
    # 3 s measured (fileio's sweep steps): whole-second time stamps on a busy host may fall either
    # side of so short a window; its CPU figures are blank, and the trial is not marked for it.
    trial = Trial(tps=steady(intervals, 1000.0, 0.02), warmup_s=warmup_s)
    write_trial(tmp_path / "run", trial)
    _without_collector_samples_after(tmp_path / "run" / trial.path, keep=1)
    marks = frame.load(tmp_path / "run", workers=1).trials["marks"].iloc[0]
    assert ("vmstat.log: no sample in the measured window" in marks) is marked, marks


def test_a_util_iostat_printed_far_above_the_interval_blanks_the_trials_util_and_flags_it(tmp_path) -> None:
    # The cells table: dev_util_pct blank rather than the mean of the samples that were not over, the
    # other device figures as they were, and the mark among the trial's flags.
    run = real_tiny(tmp_path)
    [trial] = frame.load(run).trials.index
    path = run / trial / "iostat.json"
    before = stats.cells(frame.load(run, workers=1)).iloc[0]
    path.write_text(path.read_text().replace('"util": 34.40}', '"util": 221.39}'))
    after = stats.cells(frame.load(run, workers=1)).iloc[0]
    assert before["dev_util_pct"] > 0 and pd.isna(after["dev_util_pct"])
    assert after["dev_w_s"] == before["dev_w_s"] and after["throughput_median"] == before["throughput_median"]
    assert "util" not in before["flags"] and after["flagged"]
    assert "iostat.json:26: util 221.39 % (1 sample(s) above 102 %)" in after["flags"], after["flags"]

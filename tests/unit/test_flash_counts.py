"""What the disks' own counters (NVMe SMART data units) say a trial wrote to them: the disks a trial
reads (collected.smart_devices), trial.json's `flash` read as untrusted (record), the figure per
transaction of the driver's whole run (stats.flash_figures) and the report's table of the three
levels (tables.bytes_to_flash). The reading itself is test_smart's; a real NVMe device's is the VM's."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from innomatrix import frame, record, report, stats
from innomatrix.report import tables
from innomatrix_host import collected
from synth import Trial, steady, write_trial
from trial_module import trial_module

WRITTEN = 300 * 512_000  # 300 data units
SENT = WRITTEN - 100_000  # what the kernel sent the NVMe: the disk rounds its count up to a unit
LOOP_REASON = "/dev/vdb: Unable to detect device type"


def test_a_trial_reads_each_member_of_a_layout_or_else_the_device() -> None:
    layout = {"path": "/dev/dm-3", "layout": {"read_back": {"members": [{"name": "vdb"}, {"name": "nvme0n1"}]}}}
    assert collected.smart_devices(layout) == ["/dev/vdb", "/dev/nvme0n1"]
    assert collected.watched_devices(layout) == ["dm-3", "vdb", "nvme0n1"]  # iostat: the volume and its members
    assert collected.smart_devices({"path": "/dev/nvme0n1", "layout": None}) == ["/dev/nvme0n1"]
    assert collected.smart_devices({"path": "/dev/md127", "layout": {"read_back": None}}) == ["/dev/md127"]


def with_flash(directory: Path, flash: object) -> None:
    path = directory / "trial.json"
    trial = json.loads(path.read_text())
    trial["flash"] = flash
    path.write_text(json.dumps(trial))


def flash_of(written: object = WRITTEN) -> dict:
    return {"from": "2026-11-22T02:43:50.500Z", "to": "2026-11-22T02:44:21.000Z",
            "disks": [{"device": "/dev/vdb", "unsupported": LOOP_REASON, "sent_bytes": 4096},
                      {"device": "/dev/nvme0n1", "written_bytes": written, "read_bytes": 0, "unit_bytes": 512_000,
                       "sent_bytes": SENT}]}


def flash_run(run: Path) -> Path:
    counted = write_trial(run, Trial(tps=steady(30, 40.0, 0.0, seed=1), layout="lvm-cache-writeback", members=2))
    with_flash(counted, flash_of())
    write_trial(run, Trial(tps=steady(30, 40.0, 0.0, seed=2), layout="lvm-cache-writeback", members=2, repeat=2,
                           seed=2))  # from before per-trial SMART: no `flash`
    return run


def test_flash_bytes_are_per_transaction_of_the_whole_run_and_never_a_zero_where_smart_cannot_say(tmp_path) -> None:
    cells = stats.cells(frame.load(flash_run(tmp_path / "run"))).set_index("repeat")
    counted, unread = cells.loc[1], cells.loc[2]
    # 30 intervals of 40 tps, warmup included: 1 200 transactions; the unsupported disk adds nothing.
    assert counted["flash_bytes_per_trx"] == pytest.approx(WRITTEN / 1200)
    assert counted["flash_mib_written"] == pytest.approx(WRITTEN / 2 ** 20)
    # what the kernel sent the disks that counted (the virtio disk's 4 KiB is not among them)
    assert counted["flash_mib_sent"] == pytest.approx(SENT / 2 ** 20)
    assert (counted["flash_disks"], counted["flash_unread"]) == ("/dev/nvme0n1", LOOP_REASON)
    assert math.isnan(unread["flash_bytes_per_trx"]) and math.isnan(unread["flash_mib_written"])
    table = tables.bytes_to_flash(cells.reset_index())
    assert table.data["trial"].tolist() == [counted["trial"]]
    assert table.display.iloc[0]["flash (B/trx)"] == f"{WRITTEN / 1200:,.0f}"
    assert table.display.iloc[0]["kernel sent them (MiB)"] == f"{SENT / 2 ** 20:,.1f}"
    assert any(LOOP_REASON in note for note in table.notes), table.notes
    written = report.report(tmp_path / "run")
    assert "bytes_to_flash.csv" in {path.name for path in written.files}
    assert "Bytes written per transaction: InnoDB, the block layer" in written.html.read_text()


def test_no_table_where_no_disk_could_say(tmp_path) -> None:
    run = tmp_path / "run"
    with_flash(write_trial(run, Trial(tps=steady(20, 40.0, 0.0))),
               {"from": "2026-11-22T02:43:50.500Z", "to": "2026-11-22T02:44:11.000Z",
                "disks": [{"device": "/dev/loop0", "unsupported": "/dev/loop0: Unable to detect device type"}]})
    cells = stats.cells(frame.load(run))
    assert math.isnan(cells.iloc[0]["flash_bytes_per_trx"])
    assert cells.iloc[0]["flash_unread"] == "/dev/loop0: Unable to detect device type"
    assert tables.bytes_to_flash(cells) is None


def test_the_transactions_are_counted_at_the_trials_report_interval(tmp_path) -> None:
    # 15 intervals of 2 s at 40 tps: 1 200 transactions, as 30 intervals of 1 s.
    with_flash(write_trial(tmp_path / "run", Trial(tps=steady(15, 40.0, 0.0), report_interval=2, warmup_s=4)), flash_of())
    [row] = stats.cells(frame.load(tmp_path / "run")).to_dict("records")
    assert row["flash_bytes_per_trx"] == pytest.approx(WRITTEN / 1200)


def test_namespaces_of_one_controller_are_counted_once(tmp_path) -> None:
    # An NVMe SMART log is the controller's: two of its namespaces as members report one total twice.
    shared = {"written_bytes": WRITTEN, "read_bytes": 0, "unit_bytes": 512_000, "serial": "S1"}
    flash = {**flash_of(), "disks": [{"device": "/dev/nvme0n1", **shared, "sent_bytes": 2 ** 20},
                                     {"device": "/dev/nvme0n2", **shared, "sent_bytes": 2 ** 21},
                                     {"device": "/dev/nvme1n1", **shared, "serial": "S2", "sent_bytes": 2 ** 22}]}
    with_flash(write_trial(tmp_path / "run", Trial(tps=steady(30, 40.0, 0.0))), flash)
    [row] = stats.cells(frame.load(tmp_path / "run")).to_dict("records")
    assert row["flash_mib_written"] == pytest.approx(2 * WRITTEN / 2 ** 20)
    # the controller's one count is of both its namespaces: what the kernel sent each adds up
    assert row["flash_mib_sent"] == pytest.approx(7)
    assert row["flash_disks"] == "/dev/nvme0n1, /dev/nvme1n1"
    assert row["flash_unread"] == "/dev/nvme0n2: counted with /dev/nvme0n1 (one controller, serial S1)"


def test_a_disk_without_the_kernels_count_leaves_the_sum_unknown_never_short(tmp_path) -> None:
    flash = flash_of()
    flash["disks"].append({"device": "/dev/nvme1n1", "written_bytes": WRITTEN, "read_bytes": 0, "unit_bytes": 512_000})
    with_flash(write_trial(tmp_path / "run", Trial(tps=steady(30, 40.0, 0.0))), flash)
    [row] = stats.cells(frame.load(tmp_path / "run")).to_dict("records")
    assert row["flash_mib_written"] == pytest.approx(2 * WRITTEN / 2 ** 20) and math.isnan(row["flash_mib_sent"])


def test_each_disk_is_read_by_its_own_count_and_the_kernels_at_the_same_moments(monkeypatch) -> None:
    # Stand-ins for the two readings (a real NVMe is the VM's; the kernel's on a loop device is test_smart's).
    smart_units, kernel_bytes = iter([1000, 1300]), iter([10 ** 9, 10 ** 9 + SENT])
    monkeypatch.setattr(trial_module, "snapshot", lambda disk: {"status": "ok", "wear": {
        "data_units_written_bytes": next(smart_units) * 512_000, "data_units_read_bytes": 0, "serial": "S1"}})
    monkeypatch.setattr(trial_module, "kernel_written_bytes", lambda disk: next(kernel_bytes))
    disks = trial_module.DiskCounters({"path": "/dev/nvme0n1"})
    disks.read_before()
    trial: dict = {}
    disks.record(trial)
    assert trial["flash"]["disks"] == [{"device": "/dev/nvme0n1", "serial": "S1", "written_bytes": WRITTEN,
                                        "read_bytes": 0, "unit_bytes": 512_000, "sent_bytes": SENT}]


def test_a_failed_closing_reading_is_recorded_and_never_raises(monkeypatch) -> None:
    # It runs in the trial's finally, before the server is stopped: a raise there would leave it running.
    disks = trial_module.DiskCounters({"path": "/dev/nvme0n1"})
    monkeypatch.setattr(trial_module, "snapshot", lambda disk: {"status": "unsupported", "reason": "no smartctl"})
    trial: dict = {}
    disks.record(trial)
    assert trial == {}  # the driver never started: nothing read, nothing recorded
    disks.read_before()

    def broken(disk):
        raise UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte")
    monkeypatch.setattr(trial_module, "snapshot", broken)
    disks.record(trial)
    [span] = trial["flash"]["disks"]
    assert span["device"] == "/dev/nvme0n1" and span["unsupported"].startswith("SMART not read: 'utf-8' codec")


@pytest.mark.parametrize(("flash", "refusal"), [
    ({"from": "2026-11-22T02:43:50.500Z"}, r"flash\.disks is None, not a list"),
    (flash_of(10 ** 400), r"flash\.disks\.1\.written_bytes is 1000000000000000000000000000000000000\.\.\., outside 0–1e\+15"),
    (flash_of(1.5), r"flash\.disks\.1\.written_bytes is 1\.5, not a whole number"),
    ({**flash_of(), "disks": [{"device": "/dev/nvme0n1", "written_bytes": 0, "sent_bytes": -512}]},
     r"flash\.disks\.0\.sent_bytes is -512, outside 0–1e\+15"),
    (flash_of("300"), r"flash\.disks\.1\.written_bytes is '300', not a number"),
    ({**flash_of(), "disks": "nvme0n1"}, r"flash\.disks is 'nvme0n1', not a list"),
    ({**flash_of(), "to": "2026-11-22T02:43:00.000Z"}, r"flash\.from and flash\.to .* not a span of time in order"),
    ({**flash_of(), "disks": [{"device": "/dev/nvme0n1"}]}, r"flash\.disks\.0 has neither written_bytes nor a reason"),
])
def test_a_damaged_flash_record_is_one_line_naming_the_file(tmp_path, flash, refusal) -> None:
    directory = write_trial(tmp_path / "run", Trial(tps=steady(20, 40.0, 0.0)))
    with_flash(directory, flash)
    with pytest.raises(record.RecordError, match=refusal) as refused:
        frame.load(tmp_path / "run")
    assert str(refused.value).startswith(str(directory / "trial.json")) and "\n" not in str(refused.value)

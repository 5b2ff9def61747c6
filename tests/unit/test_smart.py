"""Unit tests for innomatrix_host.smart (SMART / NVMe wear readings).

The loop-device JSON was captured from smartctl 7.3 on this machine; the SATA,
NVMe and nvme-cli documents are written to smartctl 7.3's and nvme-cli 2.3's
JSON formats (see tests/fixtures/smart/README.md). Drives like those cannot
exist here, so snapshot() is driven through FakeRun for them.
"""

import copy
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from innomatrix_host import smart

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "smart"


def _load(name: str) -> dict[str, Any]:
    return json.loads((FIXTURES / name).read_text())


def _completed(command: list[str], returncode: int, stdout: str, stderr: str = "") -> subprocess.CompletedProcess:
    return subprocess.CompletedProcess(command, returncode, stdout=stdout, stderr=stderr)


class FakeRun:
    """Test double for subprocess.run, standing in for drives this machine lacks.

    replies maps a program name ("smartctl", "nvme") to what running it
    yields: a (exit status, stdout) pair, or an exception to raise.
    """

    def __init__(self, replies: dict[str, tuple[int, str] | BaseException]) -> None:
        self.replies = replies
        self.calls: list[tuple[list[str], dict[str, Any]]] = []

    def __call__(self, command: list[str], **kwargs: Any) -> subprocess.CompletedProcess:
        self.calls.append((command, kwargs))
        reply = self.replies[command[0]]
        if isinstance(reply, BaseException):
            raise reply
        returncode, stdout = reply
        return _completed(command, returncode, stdout)


def _fixture_reply(name: str, returncode: int = 0) -> tuple[int, str]:
    return returncode, (FIXTURES / name).read_text()


# --- wear -------------------------------------------------------------------


def test_wear_intel_sata_ssd() -> None:
    assert smart.wear(_load("smartctl-7.3-intel-dc-s3700-sata.json")) == {
        "model": "INTEL SSDSC2BA200G3",
        "serial": "BTTV312000AB200GGN",
        "firmware": "5DV10250",
        "protocol": "ATA",
        "smart_passed": True,
        "temperature_c": 26,
        "power_on_hours": 18263,
        "power_cycles": 97,
        "media_wearout_indicator": 97,
        "media_wearout_indicator_raw": 0,
        # Listed twice by this drive (ids 170 and 232); the first is kept.
        "available_reservd_space": 100,
        "available_reservd_space_raw": 0,
        "reallocated_sector_ct": 100,
        "reallocated_sector_ct_raw": 0,
        "program_fail_count": 100,
        "program_fail_count_raw": 0,
        "erase_fail_count": 100,
        "erase_fail_count_raw": 0,
        "host_writes_32mib": 100,
        "host_writes_32mib_raw": 1187421,
    }


def test_wear_ata_takes_the_first_of_duplicate_attributes() -> None:
    document = _load("smartctl-7.3-intel-dc-s3700-sata.json")
    table = document["ata_smart_attributes"]["table"]
    by_id = {attribute["id"]: attribute for attribute in table}
    by_id[232]["value"] = 99
    by_id[241]["raw"]["value"] = 1
    readings = smart.wear(document)
    assert readings["available_reservd_space"] == 100  # id 170
    assert readings["host_writes_32mib_raw"] == 1187421  # id 225


def test_wear_nvme_ssd() -> None:
    assert smart.wear(_load("smartctl-7.3-nvme.json")) == {
        "model": "INTEL SSDPE2KX010T8",
        "serial": "PHLJ912300AB1P0FGN",
        "firmware": "VDV10131",
        "protocol": "NVMe",
        "smart_passed": True,
        "temperature_c": 33,
        "power_on_hours": 20412,
        "power_cycles": 58,
        "critical_warning": 0,
        "percentage_used": 3,
        "available_spare": 100,
        "available_spare_threshold": 10,
        "data_units_read": 158233112,
        "data_units_written": 296417245,
        "data_units_read_bytes": 158233112 * 512_000,
        "data_units_written_bytes": 296417245 * 512_000,
        "media_errors": 0,
        "num_err_log_entries": 0,
        "unsafe_shutdowns": 17,
    }


def test_wear_nvme_falls_back_to_the_log_for_unsafe_sized_counters() -> None:
    # smartctl drops the top-level power_on_time when the counter is too big for JSON.
    document = _load("smartctl-7.3-nvme.json")
    del document["power_on_time"]
    assert smart.wear(document)["power_on_hours"] == 20412


def test_wear_sas_ssd_percentage_used() -> None:
    sas = {
        "device": {"protocol": "SCSI"},
        "scsi_model_name": "INTEL SSD 910",
        "smart_status": {"passed": True},
        "scsi_percentage_used_endurance_indicator": 4,
        "scsi_grown_defect_list": 2,
    }
    readings = smart.wear(sas)
    assert readings["protocol"] == "SCSI"
    assert readings["percentage_used"] == 4
    assert readings["scsi_grown_defect_list"] == 2


def test_wear_endurance_used_of_newer_smartctl() -> None:
    assert smart.wear({"endurance_used": {"current_percent": 7}})["percentage_used"] == 7


def test_wear_of_loop_device_output_has_only_empty_identity() -> None:
    readings = smart.wear(_load("smartctl-7.3-loop-device.json"))
    assert readings == {
        "model": None,
        "serial": None,
        "firmware": None,
        "protocol": None,
        "smart_passed": None,
        "temperature_c": None,
        "power_on_hours": None,
        "power_cycles": None,
    }


def test_wear_ignores_malformed_sections() -> None:
    odd = {
        "device": ["not", "an", "object"],
        "ata_smart_attributes": {"table": [None, {"name": 5}, {"name": "Media_Wearout_Indicator", "value": "n/a"}]},
        "nvme_smart_health_information_log": "garbage",
        "power_cycle_count": True,
    }
    readings = smart.wear(odd)
    assert readings["protocol"] is None
    assert readings["power_cycles"] is None
    assert "media_wearout_indicator" not in readings


# --- nvme_wear ----------------------------------------------------------------


def test_nvme_wear_from_nvme_cli_matches_smartctl_for_the_same_drive() -> None:
    from_nvme_cli = smart.nvme_wear(_load("nvme-cli-2.3-smart-log.json"))
    from_smartctl = smart.wear(_load("smartctl-7.3-nvme.json"))
    assert from_nvme_cli == {key: from_smartctl[key] for key in from_nvme_cli}
    assert from_nvme_cli["temperature_c"] == 33  # 306 K
    assert from_nvme_cli["data_units_written_bytes"] == 296417245 * 512_000
    assert "serial" not in from_nvme_cli


def test_nvme_wear_reads_counters_as_numbers_or_plain_strings() -> None:
    log = {"percent_used": 5, "data_units_written": "1234", "media_errors": 0, "temperature": 300}
    assert smart.nvme_wear(log) == {
        "percentage_used": 5,
        "data_units_written": 1234,
        "data_units_written_bytes": 1234 * 512_000,
        "media_errors": 0,
        "temperature_c": 27,
    }


def test_nvme_wear_does_not_guess_at_other_digit_grouping() -> None:
    # A de_DE locale would print "296.417.245"; better absent than misread.
    readings = smart.nvme_wear({"data_units_written": "296.417.245"})
    assert "data_units_written" not in readings
    assert readings["temperature_c"] is None


# --- delta ------------------------------------------------------------------------


def test_delta_intel_run() -> None:
    before = _load("smartctl-7.3-intel-dc-s3700-sata.json")
    after = copy.deepcopy(before)
    attributes = {attribute["id"]: attribute for attribute in after["ata_smart_attributes"]["table"]}
    attributes[233]["value"] = 96
    attributes[225]["raw"]["value"] += 3200
    after["power_on_time"]["hours"] += 2
    after["temperature"]["current"] = 30
    assert smart.delta(smart.wear(before), smart.wear(after)) == {
        "media_wearout_indicator": -1,
        "host_writes_32mib_raw": 3200,
        "power_on_hours": 2,
        "temperature_c": 4,
    }


def test_delta_nvme_cli_readings_without_serial() -> None:
    before = smart.nvme_wear(_load("nvme-cli-2.3-smart-log.json"))
    after = dict(before, data_units_written=before["data_units_written"] + 10, percentage_used=4)
    after["data_units_written_bytes"] = after["data_units_written"] * 512_000
    assert smart.delta(before, after) == {
        "data_units_written": 10,
        "data_units_written_bytes": 5_120_000,
        "percentage_used": 1,
    }


def test_delta_skips_non_numbers_and_missing_readings() -> None:
    before = {"smart_passed": True, "model": "A", "temperature_c": None, "media_errors": 0}
    after = {"smart_passed": False, "model": "B", "temperature_c": 40}
    assert smart.delta(before, after) == {}


def test_delta_refuses_two_different_devices() -> None:
    with pytest.raises(ValueError, match="different devices"):
        smart.delta({"serial": "A", "media_errors": 0}, {"serial": "B", "media_errors": 1})


def _nvme_snapshot(data_units_written: int) -> dict[str, Any]:
    log = _load("nvme-cli-2.3-smart-log.json")
    log["data_units_written"] = data_units_written
    run = FakeRun({"smartctl": _fixture_reply("smartctl-7.3-nvme.json"), "nvme": (0, json.dumps(log))})
    return smart.snapshot("/dev/nvme0n1", run=run)


def test_snapshot_delta_of_two_readings_of_one_drive() -> None:
    changes = smart.snapshot_delta(_nvme_snapshot(1000), _nvme_snapshot(1010))
    assert changes == {"smartctl": {}, "nvme_cli": {"data_units_written": 10, "data_units_written_bytes": 5_120_000}}


def test_snapshot_delta_needs_two_ok_readings() -> None:
    unsupported = {"status": "unsupported", "device": "/dev/loop3", "reason": "Unable to detect device type"}
    assert smart.snapshot_delta(unsupported, unsupported) is None
    assert smart.snapshot_delta(_nvme_snapshot(1), unsupported) is None


def test_snapshot_delta_of_two_devices_says_so() -> None:
    before, after = _nvme_snapshot(1), _nvme_snapshot(1)
    after["wear"] = dict(after["wear"], serial="ANOTHER")
    assert "different devices" in smart.snapshot_delta(before, after)["error"]


# --- snapshot through FakeRun -------------------------------------------------------


def test_snapshot_without_smartctl() -> None:
    run = FakeRun({"smartctl": FileNotFoundError(2, "No such file or directory", "smartctl")})
    assert smart.snapshot("/dev/sdb", run=run) == {
        "status": "unsupported",
        "device": "/dev/sdb",
        "reason": "smartctl is not installed",
    }


def test_snapshot_of_loop_device_uses_smartctls_message() -> None:
    run = FakeRun({"smartctl": _fixture_reply("smartctl-7.3-loop-device.json", returncode=1)})
    assert smart.snapshot("/dev/loop13", run=run) == {
        "status": "unsupported",
        "device": "/dev/loop13",
        "reason": "/dev/loop13: Unable to detect device type",
    }


def test_snapshot_of_loop_device_forced_to_sat_has_no_message() -> None:
    run = FakeRun({"smartctl": _fixture_reply("smartctl-7.3-loop-device-sat.json", returncode=2)})
    result = smart.snapshot("/dev/loop13", run=run)
    assert result["status"] == "unsupported"
    assert result["reason"] == "smartctl could not open or identify /dev/loop13 (exit status 2)"


def test_snapshot_of_smartctl_too_old_for_json() -> None:
    old_output = (
        "smartctl 6.6 2016-05-31 r4324 [x86_64-linux-4.9.0] (local build)\n"
        "=======> UNRECOGNIZED OPTION: j\n"
    )
    run = FakeRun({"smartctl": (1, old_output)})
    result = smart.snapshot("/dev/sda", run=run)
    assert result["status"] == "unsupported"
    assert result["reason"] == (
        "smartctl printed no JSON object (exit status 1): smartctl 6.6 2016-05-31 r4324 [x86_64-linux-4.9.0] (local build)"
    )
    assert "\n" not in result["reason"]


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        (subprocess.TimeoutExpired(["smartctl"], 60), "smartctl did not answer within 60 s"),
        (PermissionError(13, "Permission denied"), "smartctl could not be run: [Errno 13] Permission denied"),
        ((-9, ""), "smartctl was killed by signal 9"),
        ((0, "[1, 2]"), "smartctl printed no JSON object (exit status 0): [1, 2]"),
    ],
)
def test_snapshot_never_raises(reply: tuple[int, str] | BaseException, reason: str) -> None:
    result = smart.snapshot("/dev/sda", run=FakeRun({"smartctl": reply}))
    assert result == {"status": "unsupported", "device": "/dev/sda", "reason": reason}


def test_snapshot_of_device_without_health_data() -> None:
    identity_only = {
        "smartctl": {"messages": [{"string": "Read SMART Data failed: Input/output error", "severity": "warning"}]},
        "device": {"name": "/dev/sdc", "protocol": "ATA"},
        "model_name": "USB bridge",
    }
    run = FakeRun({"smartctl": (4, json.dumps(identity_only))})
    assert smart.snapshot("/dev/sdc", run=run)["reason"] == (
        "smartctl read no SMART health data from /dev/sdc: Read SMART Data failed: Input/output error"
    )


def test_snapshot_of_intel_sata_ssd() -> None:
    run = FakeRun({"smartctl": _fixture_reply("smartctl-7.3-intel-dc-s3700-sata.json")})
    result = smart.snapshot("/dev/sdb", run=run)
    assert result == {
        "status": "ok",
        "device": "/dev/sdb",
        "smartctl_exit_status": 0,
        "smartctl_findings": [],
        "wear": smart.wear(_load("smartctl-7.3-intel-dc-s3700-sata.json")),
        "nvme_cli": None,
    }
    [(command, kwargs)] = run.calls
    assert command == ["smartctl", "-j", "-a", "/dev/sdb"]
    assert kwargs["timeout"] == 60
    assert kwargs["check"] is False
    assert kwargs["env"]["LC_ALL"] == "C"


def test_snapshot_keeps_health_findings_of_a_readable_drive() -> None:
    run = FakeRun({"smartctl": _fixture_reply("smartctl-7.3-intel-dc-s3700-sata.json", returncode=8 | 64)})
    result = smart.snapshot("/dev/sdb", run=run)
    assert result["status"] == "ok"
    assert result["smartctl_exit_status"] == 72
    assert result["smartctl_findings"] == [
        "SMART status check returned DISK FAILING",
        "the device error log contains errors",
    ]


def test_snapshot_of_nvme_ssd_asks_nvme_cli_too() -> None:
    run = FakeRun(
        {
            "smartctl": _fixture_reply("smartctl-7.3-nvme.json"),
            "nvme": _fixture_reply("nvme-cli-2.3-smart-log.json"),
        }
    )
    result = smart.snapshot("/dev/nvme0n1", run=run)
    assert result["status"] == "ok"
    assert result["wear"]["percentage_used"] == 3
    assert result["nvme_cli"] == {
        "status": "ok",
        "wear": smart.nvme_wear(_load("nvme-cli-2.3-smart-log.json")),
    }
    assert [command for command, _ in run.calls] == [
        ["smartctl", "-j", "-a", "/dev/nvme0n1"],
        ["nvme", "smart-log", "-o", "json", "/dev/nvme0n1"],
    ]


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        (FileNotFoundError(2, "No such file or directory", "nvme"), "nvme is not installed"),
        ((1, ""), "nvme printed no JSON object (exit status 1)"),
        ((22, "{}"), "nvme smart-log exit status 22"),
    ],
)
def test_snapshot_of_nvme_ssd_without_nvme_cli_is_still_ok(
    reply: tuple[int, str] | BaseException, reason: str
) -> None:
    run = FakeRun({"smartctl": _fixture_reply("smartctl-7.3-nvme.json"), "nvme": reply})
    result = smart.snapshot("/dev/nvme0n1", run=run)
    assert result["status"] == "ok"
    assert result["nvme_cli"] == {"status": "unsupported", "reason": reason}


# --- the real smartctl -------------------------------------------------------------------

needs_smartctl = pytest.mark.skipif(
    shutil.which("smartctl") is None,
    reason="smartctl is not installed here (apt-get install smartmontools to run this test)",
)


@needs_smartctl
def test_real_smartctl_on_a_missing_device() -> None:
    result = smart.snapshot("/dev/innomatrix-no-such-device")
    assert result["status"] == "unsupported"
    assert "Unable to detect device type" in result["reason"]


@pytest.fixture
def loop_device(tmp_path: Path) -> Iterator[str]:
    """A real loop device over a 16 MiB file, detached afterwards."""
    if os.geteuid() != 0 or shutil.which("losetup") is None:
        pytest.skip("attaching a loop device needs root and losetup")
    backing = tmp_path / "smart-loop.img"
    with backing.open("wb") as image:
        image.truncate(16 << 20)
    attach = subprocess.run(
        ["losetup", "--find", "--show", str(backing)], capture_output=True, text=True, check=False
    )
    if attach.returncode != 0:
        pytest.skip(f"no loop device available: {attach.stderr.strip()}")
    device = attach.stdout.strip()
    try:
        yield device
    finally:
        subprocess.run(["losetup", "-d", device], check=True)


@needs_smartctl
def test_real_smartctl_on_a_real_loop_device(loop_device: str) -> None:
    device = loop_device
    result = smart.snapshot(device)
    assert result == {
        "status": "unsupported",
        "device": device,
        "reason": f"{device}: Unable to detect device type",
    }


# --- data_units_span: what a trial sent each disk ---------------------------------


def _nvme_units(written: int, read: int) -> dict[str, Any]:
    """A snapshot of the fixture's NVMe drive (through FakeRun) with its data unit counters set."""
    output = _load("smartctl-7.3-nvme.json")
    output["nvme_smart_health_information_log"].update(data_units_written=written, data_units_read=read)
    run = FakeRun({"smartctl": (0, json.dumps(output)), "nvme": _fixture_reply("nvme-cli-2.3-smart-log.json")})
    return smart.snapshot("/dev/nvme0n1", run=run)


def test_data_units_span_is_the_growth_in_bytes() -> None:
    span = smart.data_units_span("/dev/nvme0n1", _nvme_units(1000, 50), _nvme_units(1203, 51))
    assert span == {"device": "/dev/nvme0n1", "serial": "PHLJ912300AB1P0FGN", "written_bytes": 203 * 512_000,
                    "read_bytes": 512_000, "unit_bytes": 512_000}


def test_data_units_span_of_a_disk_without_smart_says_why() -> None:
    loop = FakeRun({"smartctl": _fixture_reply("smartctl-7.3-loop-device.json", returncode=1)})
    reading = smart.snapshot("/dev/loop13", run=loop)
    assert smart.data_units_span("/dev/loop13", reading, reading) == {
        "device": "/dev/loop13", "unsupported": "/dev/loop13: Unable to detect device type"}
    # one good reading is not a span either
    assert "unsupported" in smart.data_units_span("/dev/nvme0n1", _nvme_units(1, 1), {"status": "unsupported"})


def test_data_units_span_of_a_sata_ssd_has_no_figure() -> None:
    # Its host-writes attribute counts in the vendor's units (32 MiB on Intel): not summed with NVMe's.
    run = FakeRun({"smartctl": _fixture_reply("smartctl-7.3-intel-dc-s3700-sata.json")})
    reading = smart.snapshot("/dev/sdb", run=run)
    span = smart.data_units_span("/dev/sdb", reading, reading)
    assert span == {"device": "/dev/sdb", "unsupported": "/dev/sdb reports no NVMe data units written (protocol ATA)"}


def test_data_units_span_whose_counters_fell_or_changed_disk_has_no_figure() -> None:
    fell = smart.data_units_span("/dev/nvme0n1", _nvme_units(1000, 50), _nvme_units(10, 50))
    assert fell["unsupported"] == "/dev/nvme0n1's data units written fell from 1000 to 10: the device was reset or replaced"
    other = _nvme_units(1200, 50)
    other["wear"] = dict(other["wear"], serial="ANOTHER")
    assert "different devices" in smart.data_units_span("/dev/nvme0n1", _nvme_units(1000, 50), other)["unsupported"]


# --- kernel_written_bytes: what the kernel sent a disk, the check on its own count ---------------


def test_the_kernel_counts_what_was_written_to_a_real_loop_device(loop_device: str) -> None:
    before = smart.kernel_written_bytes(loop_device)
    subprocess.run(["dd", "if=/dev/zero", f"of={loop_device}", "bs=64K", "count=48", "oflag=direct", "status=none"],
                   check=True)
    after = smart.kernel_written_bytes(loop_device)
    assert isinstance(before, int) and after == before + 48 * 65536, (before, after)
    assert smart.kernel_span(before, after) == {"sent_bytes": 48 * 65536}


@pytest.mark.parametrize("stat", ["", "1 2 3 4 5 6", "1 2 3 4 5 6 many 8", None])
def test_a_stat_file_missing_or_garbled_is_no_figure(tmp_path: Path, stat: str | None) -> None:
    if stat is not None:
        (tmp_path / "nvme0n1").mkdir()
        (tmp_path / "nvme0n1" / "stat").write_text(stat)
    assert smart.kernel_written_bytes("/dev/nvme0n1", sys_class_block=str(tmp_path)) is None


def test_a_kernel_span_needs_two_readings_in_order() -> None:
    assert smart.kernel_span(1024, 5120) == {"sent_bytes": 4096}
    # unknown at either end, or a count that fell (the disk went and came back): nothing, never 0
    assert smart.kernel_span(None, 5120) == smart.kernel_span(1024, None) == smart.kernel_span(5120, 1024) == {}

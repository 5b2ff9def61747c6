"""innomatrix.parse.iostat on the real iostat -o JSON -t -x -k document of this machine's tiny run."""

from __future__ import annotations

import json

import pytest
from innomatrix.parse import ParseError, iostat
from trees import REAL_TINY

REAL = REAL_TINY / "localhost/xfs/oltp/A/bp-64M/t2/r1/iostat.json"


def test_real_document_drops_the_since_boot_entry():
    samples = iostat.read(REAL)
    assert len(samples) == 7
    assert samples.device == "loop0"
    assert not samples.truncated
    assert samples.metrics["util"].tolist() == [34.8, 34.4, 27.2, 31.6, 24.0, 40.0, 38.4]
    assert samples.metrics["cpu_iowait"][0] == pytest.approx(8.38)
    assert samples.metrics["w/s"][1] == 1758.0
    assert str(samples.times[0]) == "2026-11-22T02:43:51.000"


def test_a_document_cut_before_its_closing_brackets_keeps_every_complete_entry():
    text = REAL.read_text()
    cut = text[: text.rindex("}") - 20]  # iostat killed before it closed the last entry and the document
    samples = iostat.parse(cut, "r/iostat.json")
    assert samples.truncated
    assert len(samples) == 6  # the last (cut) entry is gone, and the since-boot one
    assert samples.metrics["util"].tolist() == [34.8, 34.4, 27.2, 31.6, 24.0, 40.0]
    assert any("r/iostat.json is cut short at line" in note for note in samples.notes)


def test_a_document_missing_only_its_closing_brackets_keeps_all_entries():
    text = REAL.read_text()
    samples = iostat.parse(text[: text.rindex("]")], "r/iostat.json")
    assert samples.truncated and len(samples) == 7


def test_damage_in_the_middle_is_an_error_naming_the_line():
    text = REAL.read_text().replace('"w/s": 1758.00', '"w/s": 17x58.00')
    with pytest.raises(ParseError, match=r"^r/iostat\.json:29: corrupt JSON"):
        iostat.parse(text, "r/iostat.json")


def test_time_stamps_must_be_iso():
    text = REAL.read_text().replace("2026-11-22T02:43:53+0000", "11/22/26 02:43:53")
    with pytest.raises(ParseError, match=r"^i\.json:\d+: time stamp '11/22/26 02:43:53' is not ISO 8601"):
        iostat.parse(text, "i.json")


def _document(disks_per_entry):
    stats = [{"timestamp": f"2026-11-22T10:00:0{k}+0100", "avg-cpu": {"user": 1.0, "idle": 99.0}, "disk": disks}
             for k, disks in enumerate(disks_per_entry)]
    return json.dumps({"sysstat": {"hosts": [{"nodename": "x", "statistics": stats}]}})


def test_the_named_device_is_picked_and_megabytes_become_kilobytes():
    disks = [[{"disk_device": "sda", "rMB/s": 1.0, "util": 1.0}, {"disk_device": "nvme0n1", "rMB/s": 2.0, "util": 50.0}]
             for _ in range(3)]
    samples = iostat.parse(_document(disks), "i.json", device="nvme0n1")
    assert samples.device == "nvme0n1"
    assert samples.metrics["rkB/s"].tolist() == [2048.0, 2048.0]
    assert samples.metrics["util"].tolist() == [50.0, 50.0]
    assert str(samples.times[0]) == "2026-11-22T09:00:01.000"  # +0100 read as UTC


def test_a_missing_device_is_an_error():
    disks = [[{"disk_device": "sda", "util": 1.0}] for _ in range(3)]
    with pytest.raises(ParseError, match="no disk 'sdb'"):
        iostat.parse(_document(disks), "i.json", device="sdb")

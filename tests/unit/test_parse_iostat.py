"""innomatrix.parse.iostat on the real iostat -o JSON -t -x -k document of this machine's tiny run."""

from __future__ import annotations

import json

import numpy as np
import pytest
from innomatrix.parse import ParseError, iostat
from trees import REAL_TINY, Trial, steady, write_trial

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


def _with_util(tmp_path, util: str):
    """The real document with its second sample's util replaced (the entry of line 26)."""
    path = tmp_path / "iostat.json"
    path.write_text(REAL.read_text().replace('"util": 34.40}', f'"util": {util}}}'))
    return path


def test_a_util_far_above_the_interval_leaves_the_trial_without_util_and_marked(tmp_path):
    # iostat divides the kernel's busy time by its own interval and does not cap the share: a dm-cache
    # volume in a TCG guest printed 221.39 % (CI, 2026-12-02). A real reading, no error; but its busy
    # count is then no share of the interval in any sample: no util for the trial (the mean of the
    # others would leave out the busiest), the other figures kept, the trial marked.
    path = _with_util(tmp_path, "221.39")
    for samples in (iostat.read(path), iostat.parse(path.read_text(), path)):
        assert np.isnan(samples.metrics["util"]).all()
        assert samples.metrics["w/s"][1] == 1758.0
        assert samples.marks == ["iostat.json:26: util 221.39 % (1 sample(s) above 102 %): the kernel's busy "
                                 "time is no share of the interval here, no util for this trial"]
    assert iostat.read(REAL).marks == []


def test_a_util_just_over_the_interval_is_the_clocks_resolution_read_as_full(tmp_path):
    path = _with_util(tmp_path, "101.6")
    for samples in (iostat.read(path), iostat.parse(path.read_text(), path)):
        assert samples.metrics["util"].tolist() == [34.8, 100.0, 27.2, 31.6, 24.0, 40.0, 38.4]
        assert samples.marks == []
        assert "iostat: util up to 101.6 % in 1 sample(s) read as 100 % (the resolution of the two clocks it " \
               "divides)" in samples.notes


@pytest.mark.parametrize("util", ["-0.5", "2e10", "1e309", "NaN"])
def test_a_util_no_clock_can_give_is_an_error_naming_the_line(tmp_path, util):
    path = _with_util(tmp_path, util)
    with pytest.raises(ParseError, match=rf"^{path}:26: util .* is not a value iostat prints \(0–1e\+10 %\)"):
        iostat.read(path)


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


# `read` takes Arrow's reader for the plain document and `parse` for anything else; both must agree.


def assert_same(got, expected) -> None:
    assert list(got.metrics) == list(expected.metrics)
    for name in got.metrics:
        np.testing.assert_array_equal(got.metrics[name], expected.metrics[name], err_msg=name)
    np.testing.assert_array_equal(got.times, expected.times)
    assert (got.notes, got.device, got.truncated) == (expected.notes, expected.device, expected.truncated)


def assert_fast_and_exact_agree(path, device=None) -> None:
    data = path.read_bytes()
    fast = iostat._fast_samples(data, data.decode(), path, device)
    assert fast is not None
    assert_same(fast, iostat.parse(data.decode(), path, device))
    assert_same(iostat.read(path, device), fast)


def test_the_fast_and_the_exact_reader_agree_on_the_real_document():
    assert_fast_and_exact_agree(REAL)
    assert_fast_and_exact_agree(REAL, "loop0")


def test_the_fast_and_the_exact_reader_agree_on_an_hour_long_document(tmp_path):
    directory = write_trial(tmp_path / "run", Trial(tps=steady(3600, 1500.0, 0.3), files=("iostat.json",)))
    assert_fast_and_exact_agree(directory / "iostat.json")


@pytest.mark.parametrize("device", [None, "sda", "nvme0n1"])
def test_the_fast_and_the_exact_reader_agree_on_several_devices(tmp_path, device):
    disks = [[{"disk_device": "sda", "rMB/s": 1.5 * k, "r_await": k, "util": 1.0},
              {"disk_device": "nvme0n1", "rMB/s": 2.0, "r_await": 0.25, "util": 50.0 + k}] for k in range(4)]
    disks[2].reverse()  # the order of the devices may change from one entry to the next
    path = tmp_path / "i.json"
    path.write_text(_document(disks))
    assert_fast_and_exact_agree(path, device)


def test_the_first_samples_field_order_names_the_metrics_whatever_the_since_boot_entry_says(tmp_path):
    document = json.loads(_document([[{"disk_device": "sda", "r/s": 1.0, "util": 2.0}]] * 3))
    boot = document["sysstat"]["hosts"][0]["statistics"][0]
    boot["avg-cpu"] = {"idle": 99.0, "user": 1.0}
    boot["disk"] = [{"util": 2.0, "r/s": 1.0, "disk_device": "sda"}]
    path = tmp_path / "i.json"
    path.write_text(json.dumps(document))
    assert list(iostat.read(path).metrics) == ["cpu_user", "cpu_idle", "r/s", "util"]
    assert_fast_and_exact_agree(path)


def _unusual(kind: str) -> str:
    text = REAL.read_text()
    return {
        "cut short": text[: text.rindex("}") - 20],
        "damaged in the middle": text.replace('"w/s": 1758.00', '"w/s": 17x58.00'),
        "a field missing from one entry": text.replace('"w/s": 1758.00, ', "", 1),
        "a value that is text": text.replace('"w/s": 1758.00', '"w/s": "1758.00"'),
        "a value that is true": text.replace('"w/s": 1758.00', '"w/s": true'),
        "a value that is null": text.replace('"w/s": 1758.00', '"w/s": null'),
        "a time stamp that is not ISO": text.replace("2026-11-22T02:43:53+0000", "11/22/26 02:43:53"),
        "a duplicated key": text.replace('"w/s": 1758.00', '"w/s": 1.00, "w/s": 1758.00'),
        "Infinity": text.replace('"w/s": 1758.00', '"w/s": Infinity'),
    }[kind]


@pytest.mark.parametrize("kind", ["cut short", "damaged in the middle", "a field missing from one entry",
                                  "a value that is text", "a value that is true", "a value that is null",
                                  "a time stamp that is not ISO", "a duplicated key", "Infinity"])
def test_an_unusual_document_reads_as_the_exact_reader_reads_it(tmp_path, kind):
    path = tmp_path / "iostat.json"
    path.write_text(_unusual(kind))
    try:
        expected = iostat.parse(path.read_text(), path)
    except ParseError as error:
        with pytest.raises(ParseError) as caught:
            iostat.read(path)
        assert str(caught.value) == str(error)
        return
    assert_same(iostat.read(path), expected)


def test_bytes_that_are_not_utf8_read_as_the_exact_reader_reads_them(tmp_path):
    path = tmp_path / "iostat.json"
    path.write_bytes(REAL.read_bytes().replace(b'"nodename": "', b'"nodename": "\xff', 1))
    assert_same(iostat.read(path), iostat.parse(path.read_bytes().decode(errors="replace"), path))


def test_a_missing_device_is_an_error_from_either_reader(tmp_path):
    path = tmp_path / "i.json"
    path.write_text(_document([[{"disk_device": "sda", "util": 1.0}] for _ in range(3)]))
    with pytest.raises(ParseError, match="no disk 'sdb'"):
        iostat.read(path, device="sdb")

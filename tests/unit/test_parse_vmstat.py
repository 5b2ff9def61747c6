"""innomatrix.parse.vmstat on the real vmstat -n -t output of this machine's tiny run, and on damage."""

from __future__ import annotations

import numpy as np
import pytest
from innomatrix.parse import ParseError, vmstat
from trees import REAL_TINY

REAL = REAL_TINY / "localhost/xfs/oltp/A/bp-64M/t2/r1/vmstat.log"


def test_real_file_drops_the_since_boot_line_and_keeps_every_column():
    samples = vmstat.read(REAL)
    assert len(samples) == 7  # 8 data lines, the first is the average since boot
    assert samples.zone == "UTC"
    assert list(samples.metrics)[:4] == ["r", "b", "swpd", "free"]
    assert list(samples.metrics)[-5:] == ["us", "sy", "id", "wa", "st"]
    assert samples.metrics["us"].tolist() == [44, 35, 35, 41, 32, 41, 48]
    assert samples.metrics["wa"].tolist() == [8, 9, 7, 9, 5, 13, 9]
    assert str(samples.times[0]) == "2026-11-22T02:43:51.000"
    assert str(samples.times[-1]) == "2026-11-22T02:43:57.000"
    assert samples.resolution_s == 1.0


def test_a_truncated_last_line_names_the_file_and_line():
    text = REAL.read_text()
    cut = text[: text.rindex("41081") + 3]  # the last line loses its time stamp
    with pytest.raises(ParseError) as caught:
        vmstat.parse(cut, "run/vmstat.log")
    assert str(caught.value).startswith("run/vmstat.log:10: ")
    assert "truncated" in str(caught.value)


def test_a_damaged_number_names_its_line():
    lines = REAL.read_text().splitlines()
    lines[5] = lines[5].replace("9999", "99x9")
    with pytest.raises(ParseError, match=r"^v\.log:6: not a number: '99x9'"):
        vmstat.parse("\n".join(lines) + "\n", "v.log")


def test_without_time_stamps_it_says_to_use_t():
    text = "procs -----------memory---------- ---swap-- -----io---- -system-- ------cpu-----\n" \
           " r  b   swpd   free   buff  cache   si   so    bi    bo   in   cs us sy id wa st\n" \
           " 1  0      0 100 1 1 0 0 0 0 1 1 1 1 98 0 0\n"
    with pytest.raises(ParseError, match="vmstat with -t"):
        vmstat.parse(text, "v.log")


def test_local_time_is_passed_on_with_its_zone():
    text = REAL.read_text().replace("UTC\n", "CET\n", 1)
    samples = vmstat.parse(text, "v.log")
    assert samples.zone == "CET"
    assert any("CET" in note for note in samples.notes)


def test_a_repeated_identical_header_is_skipped():
    lines = REAL.read_text().splitlines(keepends=True)
    text = "".join(lines[:6] + lines[:2] + lines[6:])
    samples = vmstat.parse(text, "v.log")
    assert len(samples) == 7
    np.testing.assert_array_equal(samples.metrics["us"], vmstat.read(REAL).metrics["us"])

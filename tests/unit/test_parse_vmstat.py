"""innomatrix.parse.vmstat on the real vmstat -n -t output of this machine's tiny run, and on damage."""

from __future__ import annotations

import numpy as np
import pytest
from innomatrix.parse import ParseError, vmstat
from trees import REAL_TINY, Trial, steady, write_trial

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


# `read` splits plain output with Arrow and leaves anything else to `parse`; both must agree.


def assert_same(got, expected) -> None:
    assert list(got.metrics) == list(expected.metrics)
    for name in got.metrics:
        np.testing.assert_array_equal(got.metrics[name], expected.metrics[name], err_msg=name)
    np.testing.assert_array_equal(got.times, expected.times)
    assert (got.notes, got.zone, got.resolution_s) == (expected.notes, expected.zone, expected.resolution_s)


def _variant(kind: str) -> str:
    text = REAL.read_text()
    lines = text.splitlines(keepends=True)
    return {
        "real": text,
        "a repeated header": "".join(lines[:6] + lines[:2] + lines[6:]),
        "local time": text.replace("UTC\n", "CET\n", 1),
        "procps 4 adds gu": "".join([lines[0], lines[1].replace(" st ", " st gu ")]
                                    + [line.replace(" 2026-", " 0 2026-") for line in lines[2:]]),
        "wide output": text.replace(" ", "    "),
        "blank lines and no last line end": "\n" + text.replace("\n", "\n\n", 3).rstrip("\n"),
    }[kind]


@pytest.mark.parametrize("kind", ["real", "a repeated header", "local time", "procps 4 adds gu", "wide output",
                                  "blank lines and no last line end"])
def test_the_fast_and_the_exact_reader_agree(kind):
    text = _variant(kind)
    fast = vmstat._fast_samples(text)
    assert fast is not None
    assert_same(fast, vmstat.parse(text, "v.log"))


def test_the_fast_and_the_exact_reader_agree_on_an_hour_of_samples(tmp_path):
    directory = write_trial(tmp_path / "run", Trial(tps=steady(3600, 1500.0, 0.3), files=("vmstat.log",)))
    text = (directory / "vmstat.log").read_text()
    fast = vmstat._fast_samples(text)
    assert fast is not None and len(fast) == 3600
    assert_same(fast, vmstat.parse(text, "v.log"))


def _unusual(kind: str) -> str:
    text = REAL.read_text()
    lines = text.splitlines(keepends=True)
    return {
        "a damaged number": text.replace("9999", "99x9"),
        "a number numpy reads and Arrow does not": text.replace(" 9999 ", " 9_999 "),
        "a number Arrow reads and numpy does not": text.replace(" 9999 ", " 0x270F "),
        "a truncated last line": text[: text.rindex("41081") + 3],
        "a bad date": text.replace("2026-11-22 02:43:53", "2026-11-32 02:43:53"),
        "no -t": "".join(line.rsplit(None, 2)[0] + "\n" if i > 1 else line.replace("timestamp", "")
                         for i, line in enumerate(lines)),
        "data before the header": lines[3] + text,
        "another header": "".join(lines[:6] + [lines[1].replace(" st ", " st gu ")] + lines[6:]),
        "CRLF line ends": text.replace("\n", "\r\n"),
        "non-ASCII": text.replace("UTC\n", "MÉZ\n", 1),
        "only the since-boot line": "".join(lines[:3]),
    }[kind]


@pytest.mark.parametrize("kind", ["a damaged number", "a number numpy reads and Arrow does not",
                                  "a number Arrow reads and numpy does not", "a truncated last line", "a bad date",
                                  "no -t", "data before the header", "another header", "CRLF line ends", "non-ASCII",
                                  "only the since-boot line"])
def test_unusual_output_reads_as_the_exact_reader_reads_it(tmp_path, kind):
    assert vmstat._fast_samples(_unusual(kind)) is None
    path = tmp_path / "vmstat.log"
    path.write_text(_unusual(kind))
    try:
        expected = vmstat.parse(path.read_text(), path)
    except ParseError as error:
        with pytest.raises(ParseError) as caught:
            vmstat.read(path)
        assert str(caught.value) == str(error)
        return
    assert_same(vmstat.read(path), expected)

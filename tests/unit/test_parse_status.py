"""innomatrix.parse.status on the real status.log (SHOW GLOBAL STATUS deltas) of this machine's tiny run."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from innomatrix.parse import ParseError, status
from trees import REAL_TINY, Trial, steady, write_trial

REAL = REAL_TINY / "localhost/xfs/oltp/A/bp-64M/t2/r1/status.log"
WANTED = ["Com_commit", "Innodb_os_log_written", "Innodb_buffer_pool_pages_free", "Innodb_data_written"]


def test_real_file_gives_deltas_per_sample_and_the_first_absolute():
    samples = status.read(REAL, WANTED)
    assert len(samples) == 8
    assert samples.metrics["Com_commit"].tolist() == [0, 957, 774, 706, 769, 656, 976, 548]
    assert samples.metrics["Innodb_os_log_written"][1] == 1401880
    assert samples.absolute["Innodb_buffer_pool_pages_free"] == 3456
    level = samples.absolute["Innodb_buffer_pool_pages_free"] + np.cumsum(samples.metrics["Innodb_buffer_pool_pages_free"])
    assert level.tolist() == [3456, 3214, 3187, 3179, 3167, 3167, 3167, 3167]
    assert str(samples.times[1]) == "2026-11-22T02:43:51.780"


def test_the_fast_and_the_exact_reader_agree():
    fast = status.read(REAL)
    exact = status.parse(REAL.read_text(), REAL)
    assert list(fast.metrics) == list(exact.metrics)
    assert len(fast.metrics) > 500
    for name in fast.metrics:
        np.testing.assert_array_equal(fast.metrics[name], exact.metrics[name], err_msg=name)
    np.testing.assert_array_equal(fast.times, exact.times)


def test_a_sample_the_server_did_not_answer_is_noted_not_fatal(tmp_path):
    lines = REAL.read_text().splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if line.startswith("2026-11-22T02:43:53"))
    lines.insert(at, "2026-11-22T02:43:52.990Z\t#error\tserver did not answer in 5 s\terror\n")
    path = tmp_path / "status.log"
    path.write_text("".join(lines))
    samples = status.read(path, WANTED)
    assert samples.errors == ["2026-11-22T02:43:52.990Z server did not answer in 5 s"]
    assert samples.metrics["Com_commit"].tolist() == [0, 957, 774, 706, 769, 656, 976, 548]
    assert any("did not answer" in note for note in samples.notes)


def test_a_truncated_last_line_names_the_file_and_line(tmp_path):
    text = REAL.read_text()
    path = tmp_path / "status.log"
    path.write_text(text[: text.rindex("\tdelta")])  # cut inside the last row
    with pytest.raises(ParseError) as caught:
        status.read(path, WANTED)
    assert str(caught.value).startswith(f"{path}:{text.count(chr(10))}: expected time, variable, value and kind")


def test_a_non_integer_value_names_its_line(tmp_path):
    lines = REAL.read_text().splitlines(keepends=True)
    lines[600] = lines[600].replace("\tdelta", "").rsplit("\t", 1)[0] + "\t12.5\tdelta\n"
    path = tmp_path / "status.log"
    path.write_text("".join(lines))
    with pytest.raises(ParseError, match=rf"^{path}:601: .*not an integer: '12.5'"):
        status.read(path)


def test_the_header_is_required(tmp_path):
    path = tmp_path / "status.log"
    path.write_text("Variable_name\tValue\nUptime\t3\n")
    with pytest.raises(ParseError, match=r":1: expected the header"):
        status.read(path)


def assert_same(got, expected) -> None:
    assert list(got.metrics) == list(expected.metrics)
    for name in got.metrics:
        np.testing.assert_array_equal(got.metrics[name], expected.metrics[name], err_msg=name)
    assert list(got.absolute) == list(expected.absolute)
    np.testing.assert_array_equal(list(got.absolute.values()), list(expected.absolute.values()))
    np.testing.assert_array_equal(got.times, expected.times)
    assert (got.notes, got.errors) == (expected.notes, expected.errors)


def test_the_fast_and_the_exact_reader_agree_on_a_few_variables_in_the_order_of_the_file():
    fast = status.read(REAL, WANTED + ["Not_in_the_file"])
    assert list(fast.metrics) == ["Com_commit", "Innodb_buffer_pool_pages_free", "Innodb_data_written",
                                  "Innodb_os_log_written"]
    assert_same(fast, status.parse(REAL.read_text(), REAL, WANTED + ["Not_in_the_file"]))


def test_the_fast_and_the_exact_reader_agree_on_an_hour_of_samples(tmp_path):
    directory = write_trial(tmp_path / "run", Trial(tps=steady(3600, 1500.0, 0.3), files=("status.log",)))
    path = directory / "status.log"
    table = status._fast_table(path.read_bytes(), path)  # the fast reader by hand, so a silent fall back cannot pass this
    fast = status._from_columns(table, status._absolute_rows(table), path, set(WANTED), errors=[])
    assert len(fast) == 3601
    assert_same(fast, status.parse(path.read_text(), path, WANTED))
    assert_same(status.read(path, WANTED), fast)


def _rewritten(tmp_path, change) -> Path:
    lines = REAL.read_text().splitlines(keepends=True)
    path = tmp_path / "status.log"
    path.write_text("".join(change(lines)))
    return path


def _swap_two_samples(lines: list[str]) -> list[str]:
    second = [line for line in lines if line.startswith("2026-11-22T02:43:51")]
    third = [line for line in lines if line.startswith("2026-11-22T02:43:52")]
    rest = [line for line in lines if line not in second and line not in third]
    at = lines.index(second[0])
    return rest[:at] + third + second + rest[at:]


@pytest.mark.parametrize("change, message", [
    (_swap_two_samples, "sample times go backwards"),
    (lambda lines: [line.replace("2026-11-22T02:43:52.770Z", "2026-11-22T02:43:51.7800Z") for line in lines],
     "two samples share a time stamp"),
    (lambda lines: lines[:3] + [lines[3].replace("absolute", "delta")] + lines[4:600]
     + [lines[3].replace(lines[3][:24], lines[600][:24])] + lines[600:], "absolute rows after the first sample"),
])
def test_whole_file_errors_are_the_same_from_either_reader(tmp_path, change, message):
    path = _rewritten(tmp_path, change)
    with pytest.raises(ParseError, match=message) as exact:
        status.parse(path.read_text(), path)
    with pytest.raises(ParseError) as fast:
        status.read(path)
    assert str(fast.value) == str(exact.value)


@pytest.mark.parametrize("change, line, message", [
    (lambda lines: lines[:600] + [lines[600].replace("\tdelta", "\tdelt")] + lines[601:], 601,
     "expected time, variable, value and kind"),
    (lambda lines: lines[:600] + [lines[600].replace("T02:", " 02:")] + lines[601:], 601, "not an ISO 8601 UTC time"),
])
def test_a_bad_kind_or_time_names_its_line(tmp_path, change, line, message):
    path = _rewritten(tmp_path, change)
    with pytest.raises(ParseError, match=rf"^{path}:{line}: {message}"):
        status.read(path)


def test_bytes_that_are_not_utf8_read_as_the_exact_reader_reads_them(tmp_path):
    path = tmp_path / "status.log"
    path.write_bytes(REAL.read_bytes().replace(b"Innodb_mem_dictionary", b"Innodb_mem_dicti\xffnary"))
    expected = status.parse(path.read_bytes().decode(errors="replace"), path)
    assert "Innodb_mem_dicti\ufffdnary" in expected.metrics
    assert_same(status.read(path), expected)


def test_the_fast_reader_reads_a_real_mariadb_status_log_whole():
    """MariaDB shows wsrep_cluster_conf_id as 2^64 - 1, beyond Arrow's int64: read as numbers, every
    real status.log fell back to the exact reader (a fifth of the report's load time)."""
    from innomatrix.frame import STATUS_COUNTERS, STATUS_GAUGES

    path = Path(__file__).resolve().parents[1] / "fixtures/report/real-demo/localhost/xfs/oltp/A/bp-16M/t4/r1/status.log"
    assert "\twsrep_cluster_conf_id\t18446744073709551615\t" in path.read_text()
    wanted = STATUS_COUNTERS + STATUS_GAUGES
    table = status._fast_table(path.read_bytes(), path)
    fast = status._from_columns(table, status._absolute_rows(table), path, set(wanted), errors=[])
    assert_same(fast, status.parse(path.read_text(), path, wanted))
    assert len(fast) > 20 and fast.metrics["Innodb_data_written"].sum() > 0

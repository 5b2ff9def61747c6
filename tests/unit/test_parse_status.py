"""innomatrix.parse.status on the real status.log (SHOW GLOBAL STATUS deltas) of this machine's tiny run."""

from __future__ import annotations

import numpy as np
import pytest
from innomatrix.parse import ParseError, status
from trees import REAL_TINY

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

"""innomatrix.parse.fast_sysbench: what sysbench.parse_output reads, with the intervals read in bulk.

Every case compares with the straightforward reading, parse_output's interval dicts turned into
columns, and checks which path was taken: the bulk one for what sysbench prints, parse_output
whole for anything unusual, with the same result and the same errors either way.
"""

from __future__ import annotations

import re

from pathlib import Path

import numpy as np
import pytest
from innomatrix_host import sysbench
from innomatrix.parse.fast_sysbench import _from_output, _in_bulk, parse_output_columns
from trees import REAL_TINY, Trial, steady, write_trial

SYSBENCH_FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "sysbench"
FILEIO = sorted((SYSBENCH_FIXTURES / "fileio").glob("*.txt"))
OLTP_AT_A_RATE = sorted((SYSBENCH_FIXTURES / "oltp").glob("*.txt"))
REAL = REAL_TINY / "localhost/xfs/oltp/A/bp-64M/t2/r1/driver.log"

BANNER = """\
sysbench 1.0.20 (using system LuaJIT 2.1.0-beta3)

Running the test with following options:
Number of threads: 4
Report intermediate results every 1 second(s)

Threads started!

"""
OLTP = [
    "[ 1s ] thds: 4 tps: 330.85 qps: 6640.97 (r/w/o: 4652.89/1320.39/667.69) lat (ms,95%): 20.74 "
    "err/s: 0.00 reconn/s: 0.00",
    "[ 2s ] thds: 4 tps: 345.02 qps: 6897.40 (r/w/o: 4826.28/1381.08/690.04) lat (ms,95%): 20.00 "
    "err/s: 0.00 reconn/s: 0.00",
    "[ 3s ] thds: 4 tps: 0.00 qps: 0.00 (r/w/o: 0.00/0.00/0.00) lat (ms,95%): 0.00 err/s: 1.50 reconn/s: 0.25",
]
# sysbench 1.1 and some Lua reporters drop the colons after err/s and reconn/s; --percentile=0 drops lat.
OLTP_1_1 = ("[ 12s ] thds: 32 tps: 1210.40 qps: 24208.03 (r/w/o: 16945.62/4842.01/2420.40) lat (ms,99%): 45.79 "
            "err/s 0.50 reconn/s 0.25")
OLTP_NO_LATENCY = "[ 2s ] thds: 4 tps: 10.00 qps: 200.00 (r/w/o: 140.00/40.00/20.00) err/s: 0.00 reconn/s: 0.00"
SUMMARY_1_0_20 = """\
SQL statistics:
    transactions:                        6818   (340.65 per sec.)
    queries:                             136360 (6813.01 per sec.)
    ignored errors:                      3      (0.15 per sec.)
    reconnects:                          1      (0.05 per sec.)

General statistics:
    total time:                          20.0132s
    total number of events:              6818

Latency (ms):
         min:                                    3.71
         avg:                                   11.73
         max:                                  209.25
         95th percentile:                       20.37
         sum:                                79995.88
"""
SUMMARY_1_1 = """\
Throughput:
    events/s (eps):                      340.6500
    time elapsed:                        20.0132s
    total number of events:              6818

Latency (ms):
         min:                                    3.71
         99th percentile:                       24.83
"""
FATAL = "FATAL: mysql_stmt_execute() returned error 2013 (Lost connection to MySQL server during query)"


def straightforward(text: str):
    return _from_output(sysbench.parse_output(text))


def assert_same(got, expected) -> None:
    assert (got.kinds, got.summary, got.fatal, got.queue) == (expected.kinds, expected.summary, expected.fatal, expected.queue)
    assert list(got.columns) == list(expected.columns)
    for name in got.columns:
        np.testing.assert_array_equal(got.columns[name], expected.columns[name], err_msg=name)


def at(second: int, line: str) -> str:
    """An interval line moved to another time (the intervals of a log advance one step a line)."""
    return re.sub(r"^\[ *\d+s \]", f"[ {second}s ]", line)


def lines(*parts: str) -> str:
    return "\n".join(parts) + "\n"


IN_BULK = {
    "1.0.20 oltp with summary": BANNER + lines(*OLTP) + SUMMARY_1_0_20,
    "1.1 oltp, no colons, 99th percentile": (BANNER + lines(OLTP_1_1, OLTP_1_1.replace("[ 12s ]", "[ 13s ]"))
                                             + SUMMARY_1_1),
    "no latency part": BANNER + lines(OLTP_NO_LATENCY, OLTP_NO_LATENCY.replace("[ 2s ]", "[ 3s ]")),
    "a server that died": BANNER + lines(OLTP[0], FATAL, FATAL + " " + OLTP[1], OLTP[2]),
    "indented and stray intervals around the summary": (
        BANNER + lines(*OLTP[:2]) + "Latency (ms):\n" + lines("  " + OLTP[2], at(4, OLTP[0]), "         min:   1.00",
                                                              at(5, OLTP[1]))
        + "Latency (ms):\n" + lines(at(6, OLTP[2]), "         max:   2.00", "\t" + at(7, OLTP[0]),
                                    "         avg:   3.00")),
    "summary only": BANNER + SUMMARY_1_0_20,
    "nothing": "",
    "trailing spaces and a checkpoint line": (BANNER
                                              + lines(OLTP[0] + "  ", "[ 2s ] Checkpoint report:", "\t" + OLTP[1])),
}


@pytest.mark.parametrize("text", IN_BULK.values(), ids=IN_BULK.keys())
def test_sysbench_output_is_read_in_bulk_with_the_same_result(text):
    bulk = _in_bulk(text)
    assert bulk is not None
    assert_same(bulk, straightforward(text))


@pytest.mark.parametrize("path", [REAL, *FILEIO, *OLTP_AT_A_RATE], ids=lambda path: path.name)
def test_real_logs_are_read_in_bulk_with_the_same_result(path):
    text = path.read_text()
    bulk = _in_bulk(text)
    assert bulk is not None
    assert_same(bulk, straightforward(text))
    assert len(bulk.columns["t"]) == len(sysbench.parse_output(text)["intervals"]) > 0


def test_an_hour_long_synthetic_log_is_read_in_bulk_with_the_same_result(tmp_path):
    directory = write_trial(tmp_path / "run", Trial(tps=steady(3600, 1500.0, 0.3), files=("driver.log",)))
    text = (directory / "driver.log").read_text()
    bulk = _in_bulk(text)
    assert bulk is not None and len(bulk.columns["t"]) == 3600
    assert_same(bulk, straightforward(text))


ELSEWHERE = {
    "CRLF line ends": (BANNER + lines(*OLTP) + SUMMARY_1_0_20).replace("\n", "\r\n"),
    "non-ASCII text": BANNER.replace("options", "opções") + lines(*OLTP),
    "latency on some lines only": BANNER + lines(OLTP[0], OLTP_NO_LATENCY, OLTP[2]),
    "oltp and fileio intervals": BANNER + lines(OLTP[0], "[ 2s ] reads: 0.00 MiB/s writes: 1.09 MiB/s fsyncs: 1.00/s"),
    "a form feed between fields": BANNER + lines(OLTP[0], OLTP[1].replace(" tps:", "\x0ctps:")),
}


@pytest.mark.parametrize("text", ELSEWHERE.values(), ids=ELSEWHERE.keys())
def test_anything_unusual_goes_to_parse_output_whole(text):
    assert _in_bulk(text) is None
    assert_same(parse_output_columns(text), straightforward(text))


def test_mixed_kinds_are_reported_not_read():
    output = parse_output_columns(ELSEWHERE["oltp and fileio intervals"])
    assert output.kinds == ["fileio", "oltp"] and output.columns == {}


@pytest.mark.parametrize("text", [
    BANNER + lines(OLTP[0], OLTP[1].replace("tps: 345.02", "tps: x345.02"), OLTP[2]),
    BANNER + lines(*OLTP) + SUMMARY_1_0_20.replace("20.0132s", "20.0132"),
    BANNER + lines(*OLTP, "[ 4s ] reads: 0.00 MiB/s writes: nan MiB/s fsyncs: 1.00/s"),
], ids=["a malformed interval", "a malformed summary value", "a malformed fileio interval"])
def test_errors_are_parse_outputs_naming_the_line(text):
    with pytest.raises(ValueError) as expected:
        sysbench.parse_output(text)
    with pytest.raises(ValueError) as got:
        parse_output_columns(text)
    assert str(got.value) == str(expected.value) and "line " in str(got.value)


def test_a_missing_latency_is_nan_and_threads_are_numbers():
    output = parse_output_columns(BANNER + lines(OLTP_NO_LATENCY))
    assert np.isnan(output.columns["lat_ms"]).all() and np.isnan(output.columns["lat_pct"]).all()
    assert output.columns["threads"].tolist() == [4.0] and output.columns["t"].tolist() == [2.0]

"""Unit tests for innomatrix_host.sysbench (sysbench text output parser)."""

import pytest

from innomatrix_host import sysbench

OLTP_COLON = (
    "[ 6s ] thds: 16 tps: 650.51 qps: 12938.26 (r/w/o: 9046.18/2592.05/1300.03) "
    "lat (ms,95%): 40.37 err/s: 0.00 reconn/s: 0.00"
)
OLTP_NO_COLON = (
    "[ 12s ] thds: 32 tps: 1210.40 qps: 24208.03 (r/w/o: 16945.62/4842.01/2420.40) "
    "lat (ms,95%): 45.79 err/s 0.50 reconn/s 0.25"
)
OLTP_P99 = (
    "[ 30s ] thds: 8 tps: 402.00 qps: 8040.00 (r/w/o: 5628.00/1608.00/804.00) "
    "lat (ms,99%): 61.08 err/s: 0.00 reconn/s: 0.00"
)
OLTP_NO_LAT = (
    "[ 2s ] thds: 4 tps: 10.00 qps: 200.00 (r/w/o: 140.00/40.00/20.00) "
    "err/s: 0.00 reconn/s: 0.00"
)
OLTP_STALL = (
    "[ 7s ] thds: 16 tps: 0.00 qps: 0.00 (r/w/o: 0.00/0.00/0.00) "
    "lat (ms,95%): 0.00 err/s: 0.00 reconn/s: 0.00"
)
FILEIO = (
    "[ 1s ] reads: 0.00 MiB/s writes: 1.09 MiB/s fsyncs: 8829.31/s latency (ms,95%): 0.099"
)

SUMMARY_1_0_20 = """\
sysbench 1.0.20 (using system LuaJIT 2.1.0-beta3)

Running the test with following options:
Number of threads: 4
Report intermediate results every 1 second(s)
Initializing random number generator from current time


Initializing worker threads...

Threads started!

[ 1s ] thds: 4 tps: 330.85 qps: 6640.97 (r/w/o: 4652.89/1320.39/667.69) lat (ms,95%): 20.74 err/s: 0.00 reconn/s: 0.00
[ 2s ] thds: 4 tps: 345.02 qps: 6897.40 (r/w/o: 4826.28/1381.08/690.04) lat (ms,95%): 20.00 err/s: 0.00 reconn/s: 0.00
SQL statistics:
    queries performed:
        read:                            95452
        write:                           27272
        other:                           13636
        total:                           136360
    transactions:                        6818   (340.65 per sec.)
    queries:                             136360 (6813.01 per sec.)
    ignored errors:                      0      (0.00 per sec.)
    reconnects:                          0      (0.00 per sec.)

General statistics:
    total time:                          20.0132s
    total number of events:              6818

Latency (ms):
         min:                                    3.71
         avg:                                   11.73
         max:                                  209.25
         95th percentile:                       20.37
         sum:                                79995.88

Threads fairness:
    events (avg/stddev):           1704.5000/5.68
    execution time (avg/stddev):   19.9990/0.01

"""

SUMMARY_1_1 = """\
sysbench 1.1.0-df89d34 (using bundled LuaJIT 2.1.0-beta3)

Running the test with following options:
Number of threads: 4

Threads started!

Throughput:
    events/s (eps):                      340.6500
    time elapsed:                        20.0132s
    total number of events:              6818

Latency (ms):
         min:                                    3.71
         avg:                                   11.73
         max:                                  209.25
         99th percentile:                       24.83
         sum:                                79995.88

Threads fairness:
    events (avg/stddev):           1704.5000/5.68
    execution time (avg/stddev):   19.9990/0.01
"""

# What sysbench 1.0.20 fileio really prints: its "Throughput:" block holds
# MiB/s figures, not events/s, and "reads/s:" must not be read as anything.
SUMMARY_FILEIO_1_0_20 = """\
[ 1s ] reads: 705.12 MiB/s writes: 470.08 MiB/s fsyncs: 1502.25/s latency (ms,99%): 0.440

File operations:
    reads/s:                      46910.41
    writes/s:                     31273.72
    fsyncs/s:                     1563.87

Throughput:
    read, MiB/s:                  732.98
    written, MiB/s:               488.65

General statistics:
    total time:                          3.0011s
    total number of events:              239364

Latency (ms):
         min:                                    0.00
         avg:                                    0.01
         max:                                   15.37
         99th percentile:                        0.44
         sum:                                 2931.29
"""

DEAD_SERVER = """\
sysbench 1.0.20 (using system LuaJIT 2.1.0-beta3)

Initializing worker threads...

Threads started!

[ 1s ] thds: 2 tps: 120.00 qps: 2400.00 (r/w/o: 1680.00/480.00/240.00) lat (ms,95%): 18.28 err/s: 0.00 reconn/s: 0.00
FATAL: mysql_stmt_execute() returned error 2013 (Lost connection to MySQL server during query) for query 'COMMIT'
FATAL: `thread_run' function failed: /usr/share/sysbench/oltp_common.lua:405: SQL error, errno = 2013, state = 'HY000': Lost connection to MySQL server during query
"""


def _oltp(t: float, tps: float, lat_ms: float = 10.0, **extra: float) -> dict:
    """A parsed OLTP interval as parse_interval would return it."""
    line = (
        f"[ {t:g}s ] thds: 4 tps: {tps:.2f} qps: {tps * 20:.2f} "
        f"(r/w/o: {tps * 14:.2f}/{tps * 4:.2f}/{tps * 2:.2f}) lat (ms,95%): {lat_ms:.2f} "
        f"err/s: {extra.get('err_s', 0.0):.2f} reconn/s: {extra.get('reconn_s', 0.0):.2f}"
    )
    interval = sysbench.parse_interval(line)
    assert interval is not None
    return interval


# --- parse_interval -------------------------------------------------------


def test_oltp_interval_with_colons() -> None:
    assert sysbench.parse_interval(OLTP_COLON) == {
        "kind": "oltp",
        "t": 6.0,
        "threads": 16,
        "tps": 650.51,
        "qps": 12938.26,
        "reads_s": 9046.18,
        "writes_s": 2592.05,
        "other_s": 1300.03,
        "lat_ms": 40.37,
        "lat_pct": 95.0,
        "err_s": 0.0,
        "reconn_s": 0.0,
    }


def test_oltp_interval_without_colons_on_err_and_reconn() -> None:
    interval = sysbench.parse_interval(OLTP_NO_COLON)
    assert interval is not None
    assert interval["t"] == 12.0
    assert interval["threads"] == 32
    assert interval["tps"] == 1210.40
    assert interval["err_s"] == 0.50
    assert interval["reconn_s"] == 0.25
    assert interval["lat_ms"] == 45.79


def test_oltp_interval_99th_percentile() -> None:
    interval = sysbench.parse_interval(OLTP_P99)
    assert interval is not None
    assert interval["lat_pct"] == 99.0
    assert interval["lat_ms"] == 61.08


def test_oltp_interval_without_latency_part() -> None:
    interval = sysbench.parse_interval(OLTP_NO_LAT)
    assert interval is not None
    assert interval["tps"] == 10.0
    assert interval["lat_ms"] is None
    assert interval["lat_pct"] is None


def test_oltp_interval_zero_latency_is_zero_not_missing() -> None:
    interval = sysbench.parse_interval(OLTP_STALL)
    assert interval is not None
    assert interval["tps"] == 0.0
    assert interval["lat_ms"] == 0.0
    assert interval["lat_pct"] == 95.0


def test_fileio_interval() -> None:
    assert sysbench.parse_interval(FILEIO) == {
        "kind": "fileio",
        "t": 1.0,
        "read_mib_s": 0.0,
        "write_mib_s": 1.09,
        "fsyncs_s": 8829.31,
        "lat_ms": 0.099,
        "lat_pct": 95.0,
    }


@pytest.mark.parametrize(
    "line",
    [
        "",
        "sysbench 1.0.20 (using system LuaJIT 2.1.0-beta3)",
        "Initializing worker threads...",
        "Threads started!",
        "    transactions:                        6818   (340.65 per sec.)",
        "FATAL: mysql_stmt_execute() returned error 2013 (Lost connection to MySQL server)",
        # cpu/memory intervals are neither OLTP nor fileio
        "[ 1s ] thds: 1 eps: 4169.22 lat (ms,95%): 0.29",
    ],
)
def test_non_interval_lines_return_none(line: str) -> None:
    assert sysbench.parse_interval(line) is None


@pytest.mark.parametrize(
    "line",
    [
        OLTP_COLON.replace("650.51", "6x0.51"),
        OLTP_COLON.replace("40.37", "-nan"),
        FILEIO.replace("1.09", "1,09"),
    ],
)
def test_malformed_interval_raises(line: str) -> None:
    with pytest.raises(ValueError, match="malformed sysbench interval"):
        sysbench.parse_interval(line)


# --- parse_summary --------------------------------------------------------


def test_summary_1_0_20() -> None:
    summary = sysbench.parse_summary(SUMMARY_1_0_20)
    events_s = summary.pop("events_s")
    assert events_s == pytest.approx(6818 / 20.0132)
    assert summary == {
        "version": "1.0.20",
        "transactions": 6818,
        "tps": 340.65,
        "queries": 136360,
        "qps": 6813.01,
        "ignored_errors": 0,
        "ignored_errors_s": 0.0,
        "reconnects": 0,
        "reconnects_s": 0.0,
        "total_time_s": 20.0132,
        "events": 6818,
        "latency_min_ms": 3.71,
        "latency_avg_ms": 11.73,
        "latency_max_ms": 209.25,
        "latency_pct": 95.0,
        "latency_pct_ms": 20.37,
        "latency_sum_ms": 79995.88,
    }


def test_summary_1_1_throughput_block() -> None:
    assert sysbench.parse_summary(SUMMARY_1_1) == {
        "version": "1.1.0-df89d34",
        "events_s": 340.65,
        "total_time_s": 20.0132,
        "events": 6818,
        "latency_min_ms": 3.71,
        "latency_avg_ms": 11.73,
        "latency_max_ms": 209.25,
        "latency_pct": 99.0,
        "latency_pct_ms": 24.83,
        "latency_sum_ms": 79995.88,
    }


def test_summary_fileio_ignores_mib_throughput_lines() -> None:
    summary = sysbench.parse_summary(SUMMARY_FILEIO_1_0_20)
    assert "version" not in summary
    assert summary["total_time_s"] == 3.0011
    assert summary["events"] == 239364
    assert summary["events_s"] == pytest.approx(239364 / 3.0011)
    assert summary["latency_pct"] == 99.0
    assert summary["latency_pct_ms"] == 0.44
    assert "tps" not in summary


def test_summary_of_empty_or_fatal_output_is_empty() -> None:
    assert sysbench.parse_summary("") == {}
    assert sysbench.parse_summary(DEAD_SERVER) == {"version": "1.0.20"}


@pytest.mark.parametrize(
    ("good", "bad"),
    [
        ("6818   (340.65 per sec.)", "6818   (34O.65 per sec.)"),
        ("20.0132s", "20.01.32s"),
        ("11.73", "-nan"),
        ("20.37", "2O.37"),
    ],
)
def test_malformed_summary_number_raises_with_line(good: str, bad: str) -> None:
    broken = SUMMARY_1_0_20.replace(good, bad, 1)
    assert broken != SUMMARY_1_0_20
    bad_number, bad_line = next(
        (number, line)
        for number, line in enumerate(broken.splitlines(), start=1)
        if bad in line
    )
    with pytest.raises(ValueError) as excinfo:
        sysbench.parse_summary(broken)
    message = str(excinfo.value)
    assert f"line {bad_number}:" in message
    assert bad_line.strip() in message


# --- parse_output ---------------------------------------------------------


def test_parse_output_full_run() -> None:
    result = sysbench.parse_output(SUMMARY_1_0_20)
    assert result["version"] == "1.0.20"
    assert [interval["t"] for interval in result["intervals"]] == [1.0, 2.0]
    assert [interval["tps"] for interval in result["intervals"]] == [330.85, 345.02]
    assert result["summary"]["transactions"] == 6818
    assert result["fatal"] == []


def test_parse_output_collects_fatal_lines() -> None:
    result = sysbench.parse_output(DEAD_SERVER)
    assert len(result["intervals"]) == 1
    assert result["summary"] == {"version": "1.0.20"}
    assert result["fatal"] == [
        "FATAL: mysql_stmt_execute() returned error 2013 (Lost connection to MySQL server "
        "during query) for query 'COMMIT'",
        "FATAL: `thread_run' function failed: /usr/share/sysbench/oltp_common.lua:405: "
        "SQL error, errno = 2013, state = 'HY000': Lost connection to MySQL server during query",
    ]


def test_parse_output_malformed_interval_names_line() -> None:
    text = "Threads started!\n\n" + OLTP_COLON + "\n" + OLTP_COLON.replace("16", "x6", 1) + "\n"
    with pytest.raises(ValueError, match=r"^line 4: malformed sysbench interval line: .*x6"):
        sysbench.parse_output(text)


# --- summarize ------------------------------------------------------------


def test_summarize_warmup_boundary_report_interval_1() -> None:
    intervals = [_oltp(t, tps=100.0 * t, lat_ms=float(t)) for t in range(1, 8)]
    result = sysbench.summarize(intervals, warmup_s=3, report_interval_s=1)
    # t=3 covers (2s, 3s] -> warmup; t=4 covers (3s, 4s] -> measured.
    assert result["intervals_measured"] == 4
    assert result["throughput_median"] == pytest.approx(550.0)  # median of 400..700
    assert result["throughput_unit"] == "tps"
    assert result["latency_p95_ms_median"] == pytest.approx(5.5)
    assert result["latency_pct"] == 95.0
    assert result["stall_intervals"] == 0


def test_summarize_warmup_boundary_report_interval_2() -> None:
    intervals = [_oltp(t, tps=float(t)) for t in (2, 4, 6, 8, 10)]
    # warmup 4: t=4 covers (2s, 4s] -> out; t=6 covers (4s, 6s] -> in.
    result = sysbench.summarize(intervals, warmup_s=4, report_interval_s=2)
    assert result["intervals_measured"] == 3
    assert result["throughput_median"] == 8.0
    # warmup 3 is mid-interval: (2s, 4s] still contains warmup and is dropped.
    result = sysbench.summarize(intervals, warmup_s=3, report_interval_s=2)
    assert result["intervals_measured"] == 3


def test_summarize_tolerates_float_noise_at_boundary() -> None:
    warmup_s = 3 * 0.1 * 10  # 3.0000000000000004
    assert warmup_s > 3.0
    intervals = [_oltp(t, tps=1.0) for t in (3, 4, 5)]
    result = sysbench.summarize(intervals, warmup_s=warmup_s, report_interval_s=1)
    assert result["intervals_measured"] == 2


def test_summarize_counts_stalls_errors_and_reconnects() -> None:
    intervals = [
        _oltp(1, tps=500.0),
        _oltp(2, tps=500.0, err_s=3.0, reconn_s=1.0),
        _oltp(3, tps=0.0, lat_ms=0.0),
        _oltp(4, tps=0.0, lat_ms=0.0, reconn_s=0.5),
        _oltp(5, tps=400.0, lat_ms=30.0, err_s=1.0),
    ]
    result = sysbench.summarize(intervals, warmup_s=1, report_interval_s=1)
    assert result["intervals_measured"] == 4
    assert result["stall_intervals"] == 2
    assert result["throughput_median"] == 200.0  # median of 500, 0, 0, 400
    assert result["latency_p95_ms_median"] == 20.0  # median of 10 and 30: stalls carry no latency
    assert result["errors_per_s_mean"] == pytest.approx(1.0)  # (3 + 0 + 0 + 1) / 4
    assert result["reconnects_total_est"] == pytest.approx(1.5)


def test_summarize_reconnects_scale_with_report_interval() -> None:
    intervals = [_oltp(t, tps=10.0, reconn_s=0.5) for t in (5, 10, 15)]
    result = sysbench.summarize(intervals, warmup_s=0, report_interval_s=5)
    assert result["reconnects_total_est"] == pytest.approx(7.5)


def test_summarize_fileio() -> None:
    lines = [
        "[ 1s ] reads: 9.00 MiB/s writes: 9.00 MiB/s fsyncs: 10.00/s latency (ms,99%): 9.000",
        "[ 2s ] reads: 1.00 MiB/s writes: 2.00 MiB/s fsyncs: 10.00/s latency (ms,99%): 0.400",
        "[ 3s ] reads: 0.00 MiB/s writes: 0.00 MiB/s fsyncs: 50.00/s latency (ms,99%): 0.100",
        "[ 4s ] reads: 0.00 MiB/s writes: 0.00 MiB/s fsyncs: 0.00/s latency (ms,99%): 0.000",
        "[ 5s ] reads: 4.00 MiB/s writes: 4.00 MiB/s fsyncs: 10.00/s latency (ms,99%): 0.300",
    ]
    intervals = [sysbench.parse_interval(line) for line in lines]
    result = sysbench.summarize(intervals, warmup_s=1, report_interval_s=1)
    assert result["intervals_measured"] == 4
    assert result["throughput_unit"] == "MiB/s"
    assert result["throughput_median"] == 1.5  # median of 3, 0, 0, 8
    assert result["latency_p95_ms_median"] == pytest.approx(0.3)  # 0.4, 0.1, 0.3: the stall is left out
    assert result["latency_pct"] == 99.0
    # only t=4 did no I/O at all; t=3 still fsynced
    assert result["stall_intervals"] == 1
    assert result["errors_per_s_mean"] is None
    assert result["reconnects_total_est"] is None


def test_summarize_nothing_after_warmup() -> None:
    intervals = [_oltp(t, tps=100.0) for t in (1, 2, 3)]
    result = sysbench.summarize(intervals, warmup_s=3, report_interval_s=1)
    assert result["intervals_measured"] == 0
    assert result["throughput_median"] is None
    assert result["latency_p95_ms_median"] is None
    assert result["latency_pct"] is None
    assert result["stall_intervals"] == 0


def test_summarize_no_intervals_at_all() -> None:
    result = sysbench.summarize([], warmup_s=0, report_interval_s=1)
    assert result["intervals_measured"] == 0
    assert result["throughput_median"] is None
    assert result["throughput_unit"] is None


def test_summarize_ignores_missing_latency() -> None:
    intervals = [sysbench.parse_interval(OLTP_NO_LAT), _oltp(3, tps=20.0, lat_ms=7.0)]
    result = sysbench.summarize(intervals, warmup_s=0, report_interval_s=1)
    assert result["intervals_measured"] == 2
    assert result["throughput_median"] == 15.0
    assert result["latency_p95_ms_median"] == 7.0


def test_summarize_rejects_mixed_kinds() -> None:
    intervals = [_oltp(1, tps=1.0), sysbench.parse_interval(FILEIO)]
    with pytest.raises(ValueError, match="kinds"):
        sysbench.summarize(intervals, warmup_s=0, report_interval_s=1)


def test_summarize_rejects_non_positive_report_interval() -> None:
    with pytest.raises(ValueError, match="report_interval_s"):
        sysbench.summarize([_oltp(1, tps=1.0)], warmup_s=0, report_interval_s=0)

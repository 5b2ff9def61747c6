"""Unit tests for the fileio side of innomatrix_host.sysbench.

Most tests read real sysbench 1.0.20 output captured on this machine (see
tests/fixtures/sysbench/fileio/README.md); the 1.1 samples are hand-written
to the format in sysbench's source because 1.1 is not packaged.
"""

import re
from pathlib import Path

import pytest

from innomatrix_host import sysbench

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "sysbench" / "fileio"
ALL_OUTPUTS = sorted(FIXTURES.glob("*.txt"))
REAL_OUTPUTS = sorted(FIXTURES.glob("1.0.20-*.txt"))
MIB = 1 << 20

_BLOCK_SIZE_RE = re.compile(r"^Block size (?P<number>\d+)(?P<unit>B|KiB|MiB)$", re.MULTILINE)
_UNIT_BYTES = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20}


def _read(name: str) -> str:
    return (FIXTURES / name).read_text()


def _block_size(text: str) -> int:
    """The block size sysbench itself announced in the run's banner."""
    match = _BLOCK_SIZE_RE.search(text)
    assert match is not None, "fixture has no 'Block size' banner line"
    return int(match["number"]) * _UNIT_BYTES[match["unit"]]


def _fileio(t: float, read: float = 0.0, write: float = 0.0, fsyncs: float = 0.0) -> dict:
    """A parsed fileio interval as parse_interval returns it."""
    interval = sysbench.parse_interval(
        f"[ {t:g}s ] reads: {read:.2f} MiB/s writes: {write:.2f} MiB/s "
        f"fsyncs: {fsyncs:.2f}/s latency (ms,95%): 0.500"
    )
    assert interval is not None
    return interval


def test_fixtures_are_present() -> None:
    assert len(REAL_OUTPUTS) >= 10
    assert len(ALL_OUTPUTS) > len(REAL_OUTPUTS)


# --- parsing whole runs -----------------------------------------------------


@pytest.mark.parametrize("path", ALL_OUTPUTS, ids=lambda path: path.name)
def test_every_fixture_parses_into_fileio_intervals_and_a_summary(path: Path) -> None:
    parsed = sysbench.parse_output(path.read_text())
    assert parsed["fatal"] == []
    assert parsed["intervals"], "no interval lines"
    assert {interval["kind"] for interval in parsed["intervals"]} == {"fileio"}
    for name in ("read_iops", "write_iops", "fsyncs_s", "read_mib_s", "write_mib_s", "latency_pct_ms"):
        assert name in parsed["summary"], name
    assert parsed["version"] in ("1.0.20", "1.1.0-3ceba0b")


def test_summary_1_0_20_fileio_blocks() -> None:
    summary = sysbench.parse_summary(_read("1.0.20-rndwr-async-direct-16k-t1-p95.txt"))
    assert summary.pop("events_s") == pytest.approx(154578 / 3.2122)
    assert summary == {
        "version": "1.0.20",
        "read_iops": 0.0,
        "write_iops": 48116.46,
        "fsyncs_s": 19.92,
        "read_mib_s": 0.0,
        "write_mib_s": 751.82,
        "total_time_s": 3.2122,
        "events": 154578,
        "latency_min_ms": 0.0,
        "latency_avg_ms": 0.02,
        "latency_max_ms": 11.85,
        "latency_pct": 95.0,
        "latency_pct_ms": 0.01,
        "latency_sum_ms": 2953.6,
    }


def test_summary_1_1_fileio_throughput_block() -> None:
    summary = sysbench.parse_summary(_read("1.1-rndwr-async-direct-16k-t1-p95-handwritten.txt"))
    assert summary == {
        "version": "1.1.0-3ceba0b",
        "read_iops": 0.0,
        "read_mib_s": 0.0,
        "write_iops": 32082.75,
        "write_mib_s": 501.29,
        "fsyncs_s": 19.92,
        "latency_min_ms": 0.0,
        "latency_avg_ms": 0.03,
        "latency_max_ms": 1011.85,
        "latency_pct": 95.0,
        "latency_pct_ms": 0.01,
        "latency_sum_ms": 2953.6,
    }


def test_interval_lines_are_the_same_in_1_0_20_and_1_1() -> None:
    line = "[ 1s ] reads: 357.10 MiB/s writes: 0.00 MiB/s fsyncs: 0.00/s latency (ms,99%): 0.342"
    assert line in _read("1.0.20-rndrd-sync-direct-16k-t4-p99-histogram.txt").splitlines()
    assert line in _read("1.1-rndrd-sync-direct-16k-t4-p99-histogram-handwritten.txt").splitlines()
    assert sysbench.parse_interval(line) == {
        "kind": "fileio",
        "t": 1.0,
        "read_mib_s": 357.10,
        "write_mib_s": 0.0,
        "fsyncs_s": 0.0,
        "lat_ms": 0.342,
        "lat_pct": 99.0,
    }


def test_real_mixed_rw_run_reports_reads_writes_and_fsyncs() -> None:
    parsed = sysbench.parse_output(_read("1.0.20-rndrw-sync-direct-16k-t2-p95-fsync100.txt"))
    first = parsed["intervals"][0]
    assert (first["read_mib_s"], first["write_mib_s"], first["fsyncs_s"]) == (53.13, 35.41, 3577.87)
    summary = parsed["summary"]
    assert (summary["read_iops"], summary["write_iops"], summary["fsyncs_s"]) == (3325.22, 2216.81, 3569.0)


@pytest.mark.parametrize(
    ("label", "bad_value"),
    [
        ("reads/s", "4691O.41"),
        ("read, MiB/s", "-nan"),
    ],
)
def test_malformed_1_0_20_fileio_value_raises(label: str, bad_value: str) -> None:
    text = _read("1.0.20-rndwr-async-direct-16k-t1-p95.txt")
    broken = re.sub(rf"(    {re.escape(label)}:\s+)\S+", rf"\g<1>{bad_value}", text, count=1)
    assert broken != text
    with pytest.raises(ValueError, match=re.escape(label)):
        sysbench.parse_summary(broken)


def test_malformed_1_1_iops_line_raises() -> None:
    text = _read("1.1-rndwr-async-direct-16k-t1-p95-handwritten.txt")
    broken = text.replace("IOPS=32082.75 501.29 MiB/s", "IOPS=32082.75 MiB/s")
    assert broken != text
    with pytest.raises(ValueError, match="'write'"):
        sysbench.parse_summary(broken)


def test_fileio_labels_count_only_in_their_own_block() -> None:
    # OLTP's "queries performed: read: 95452" must not become read_iops.
    oltp = "SQL statistics:\n    queries performed:\n        read:      95452\n        write:     27272\n"
    assert sysbench.parse_summary(oltp) == {}


# --- MiB/s = IOPS x block size ------------------------------------------------


@pytest.mark.parametrize("path", REAL_OUTPUTS, ids=lambda path: path.name)
def test_real_summary_bandwidth_is_iops_times_block_size_within_1_percent(path: Path) -> None:
    text = path.read_text()
    block_size = _block_size(text)
    summary = sysbench.parse_summary(text)
    for iops_key, mib_key in (("read_iops", "read_mib_s"), ("write_iops", "write_mib_s")):
        from_iops = summary[iops_key] * block_size / MIB
        # 0.005 is half the last printed digit: rounding, not disagreement.
        assert abs(summary[mib_key] - from_iops) <= max(0.01 * from_iops, 0.005), iops_key
    parsed = sysbench.parse_output(text)
    result = sysbench.summarize_fileio(
        parsed["intervals"], parsed["summary"], 0, 1, block_size, parsed["histogram"]
    )
    assert result["bandwidth_matches_iops"] is True
    assert result["run_mib_s"] == pytest.approx(result["run_mib_s_from_iops"], rel=0.01, abs=0.01)


def test_bandwidth_check_flags_a_wrong_block_size() -> None:
    parsed = sysbench.parse_output(_read("1.0.20-rndrd-async-direct-16k-t1-p95.txt"))
    result = sysbench.summarize_fileio(parsed["intervals"], parsed["summary"], 0, 1, 4096)
    assert result["bandwidth_matches_iops"] is False
    assert result["run_mib_s"] == 568.85
    assert result["run_mib_s_from_iops"] == pytest.approx(36406.33 * 4096 / MIB)


def test_bandwidth_check_allows_two_decimal_rounding_at_tiny_rates() -> None:
    # 10 reads/s of 512 B is 0.0049 MiB/s, which sysbench prints as 0.00.
    summary = {"read_iops": 10.0, "write_iops": 0.0, "read_mib_s": 0.0, "write_mib_s": 0.0}
    result = sysbench.summarize_fileio([], summary, 0, 1, 512)
    assert result["bandwidth_matches_iops"] is True


def test_bandwidth_check_is_none_without_summary() -> None:
    result = sysbench.summarize_fileio([_fileio(1, read=5.0)], {}, 0, 1, 16384)
    assert result["run_iops"] is None
    assert result["run_mib_s"] is None
    assert result["run_mib_s_from_iops"] is None
    assert result["bandwidth_matches_iops"] is None


# --- histogram ----------------------------------------------------------------


def test_real_histogram_counts_every_event() -> None:
    text = _read("1.0.20-rndrd-sync-direct-16k-t4-p99-histogram.txt")
    histogram = sysbench.parse_histogram(text)
    assert histogram is not None
    assert len(histogram) == 239
    assert histogram[0] == (0.053, 1)
    assert histogram[-1] == (16.408, 4)
    assert sum(count for _, count in histogram) == sysbench.parse_summary(text)["events"] == 68991
    values = [value for value, _ in histogram]
    assert values == sorted(values)


@pytest.mark.parametrize(
    ("name", "percentile"),
    [
        ("1.0.20-rndrd-sync-direct-16k-t4-p99-histogram.txt", 99),
        ("1.0.20-rndrd-sync-direct-16k-t8-p95-histogram.txt", 95),
        ("1.1-rndrd-sync-direct-16k-t4-p99-histogram-handwritten.txt", 99),
    ],
)
def test_histogram_percentile_agrees_with_sysbench_summary(name: str, percentile: int) -> None:
    parsed = sysbench.parse_output(_read(name))
    assert parsed["summary"]["latency_pct"] == percentile
    from_histogram = sysbench.histogram_percentile(parsed["histogram"], percentile)
    # The summary prints the same bucket value to two decimals.
    assert from_histogram == pytest.approx(parsed["summary"]["latency_pct_ms"], abs=0.005)


def test_histogram_percentile_uses_sysbench_rounding_rule() -> None:
    histogram = [(1.0, 94), (2.0, 1), (3.0, 5)]
    # round(100 * 95 / 100) = 95 events: reached in the second bucket.
    assert sysbench.histogram_percentile(histogram, 95) == 2.0
    assert sysbench.histogram_percentile(histogram, 94) == 1.0
    assert sysbench.histogram_percentile(histogram, 100) == 3.0
    assert sysbench.histogram_percentile([], 95) is None


@pytest.mark.parametrize("percentile", [0, -1, 100.5])
def test_histogram_percentile_rejects_out_of_range(percentile: float) -> None:
    with pytest.raises(ValueError, match="percentile"):
        sysbench.histogram_percentile([(1.0, 1)], percentile)


def test_no_histogram_without_histogram_option() -> None:
    assert sysbench.parse_output(_read("1.0.20-rndrd-sync-direct-16k-t4-p99.txt"))["histogram"] is None


def test_histogram_title_without_events_is_empty() -> None:
    text = "Latency histogram (values are in milliseconds)\n \n\nFile operations:\n"
    assert sysbench.parse_histogram(text) == []


def test_malformed_histogram_row_raises_with_line() -> None:
    text = _read("1.0.20-rndrd-sync-direct-16k-t4-p99-histogram.txt")
    broken = text.replace("       0.055 |", "       0.O55 |", 1)
    assert broken != text
    with pytest.raises(ValueError, match=r"line \d+: malformed histogram row: .*0\.O55"):
        sysbench.parse_output(broken)


# --- summarize_fileio -----------------------------------------------------------


def test_summarize_fileio_interval_statistics_after_warmup() -> None:
    intervals = [
        _fileio(1, read=999.0),  # warmup
        _fileio(2, read=10.0, write=6.0),
        _fileio(3, read=20.0, write=4.0),
        _fileio(4, read=30.0, write=2.0),
    ]
    result = sysbench.summarize_fileio(intervals, {}, 1, 1, 16384)
    assert result["block_size_bytes"] == 16384
    assert result["intervals_measured"] == 3
    assert result["read_mib_s_median"] == 20.0
    assert result["read_mib_s_stddev"] == pytest.approx(10.0)
    assert result["write_mib_s_median"] == 4.0
    assert result["write_mib_s_stddev"] == pytest.approx(2.0)
    assert result["mib_s_median"] == 24.0  # 16, 24, 32
    assert result["mib_s_stddev"] == pytest.approx(8.0)
    # 24 MiB/s of 16 KiB requests is 24 * 64 = 1536 IOPS.
    assert result["iops_median"] == pytest.approx(1536.0)
    assert result["iops_stddev"] == pytest.approx(8.0 * 64)
    assert result["latency_pct"] == 95.0
    assert result["latency_ms_median"] == 0.5
    assert result["stall_intervals"] == 0
    assert result["longest_stall_s"] == 0


def test_summarize_fileio_finds_the_longest_stall() -> None:
    throughput = [50.0, 0.0, 0.0, 40.0, 0.0, 0.0, 0.0, 45.0]
    intervals = [_fileio(10 * (i + 1), write=mib) for i, mib in enumerate(throughput)]
    result = sysbench.summarize_fileio(intervals, {}, 0, 10, 16384)
    assert result["stall_intervals"] == 5
    assert result["longest_stall_s"] == 30
    assert result["mib_s_median"] == 0.0


def test_summarize_fileio_fsync_only_interval_is_not_a_stall() -> None:
    result = sysbench.summarize_fileio([_fileio(1, fsyncs=12.0)], {}, 0, 1, 16384)
    assert result["stall_intervals"] == 0


def test_summarize_fileio_single_interval_has_no_stddev() -> None:
    parsed = sysbench.parse_output(_read("1.0.20-rndwr-async-direct-16k-t1-p95-interval10.txt"))
    # Warmup 10 s at 10 s reports leaves only [ 20s ]; sysbench dropped [ 30s ].
    result = sysbench.summarize_fileio(parsed["intervals"], parsed["summary"], 10, 10, 16384)
    assert result["intervals_measured"] == 1
    assert result["write_mib_s_median"] == 439.67
    assert result["write_mib_s_stddev"] is None
    assert result["iops_stddev"] is None
    # The whole-run figures still include the warmup interval.
    assert result["run_write_mib_s"] == 554.97


def test_summarize_fileio_real_async_random_write() -> None:
    parsed = sysbench.parse_output(_read("1.0.20-rndwr-async-direct-16k-t1-p95.txt"))
    result = sysbench.summarize_fileio(parsed["intervals"], parsed["summary"], 0, 1, 16384)
    assert result["intervals_measured"] == 3
    assert result["write_mib_s_median"] == 751.99
    assert result["iops_median"] == pytest.approx(751.99 * 64)
    assert result["run_write_iops"] == 48116.46
    assert result["run_read_iops"] == 0.0
    assert result["run_fsyncs_s"] == 19.92
    assert result["run_iops"] == 48116.46
    assert result["run_latency_avg_ms"] == 0.02
    assert result["run_latency_max_ms"] == 11.85
    # Without a histogram only the percentile sysbench printed is known.
    assert result["run_latency_p95_ms"] == 0.01
    assert result["run_latency_p99_ms"] is None
    assert result["run_latency_source"] == "summary"


def test_summarize_fileio_p95_and_p99_from_one_histogram_run() -> None:
    parsed = sysbench.parse_output(_read("1.0.20-rndrd-sync-direct-16k-t4-p99-histogram.txt"))
    result = sysbench.summarize_fileio(
        parsed["intervals"], parsed["summary"], 0, 1, 16384, parsed["histogram"]
    )
    assert result["run_latency_source"] == "histogram"
    assert result["run_latency_p95_ms"] == 0.247
    assert result["run_latency_p99_ms"] == 0.348
    assert result["latency_pct"] == 99.0
    assert result["latency_ms_median"] == 0.342  # of 0.342, 0.312, 0.402


def test_summarize_fileio_1_1_stall_and_summary() -> None:
    parsed = sysbench.parse_output(_read("1.1-rndwr-async-direct-16k-t1-p95-handwritten.txt"))
    result = sysbench.summarize_fileio(parsed["intervals"], parsed["summary"], 0, 1, 16384)
    assert result["stall_intervals"] == 1
    assert result["longest_stall_s"] == 1
    assert result["latency_ms_median"] == pytest.approx(0.010)  # the stall's 0.000 is left out
    assert result["run_write_iops"] == 32082.75
    assert result["bandwidth_matches_iops"] is True


def test_summarize_fileio_rejects_oltp_intervals_and_bad_block_size() -> None:
    oltp = sysbench.parse_interval(
        "[ 1s ] thds: 1 tps: 1.00 qps: 20.00 (r/w/o: 14.00/4.00/2.00) "
        "lat (ms,95%): 1.00 err/s: 0.00 reconn/s: 0.00"
    )
    with pytest.raises(ValueError, match="fileio"):
        sysbench.summarize_fileio([oltp], {}, 0, 1, 16384)
    with pytest.raises(ValueError, match="block_size_bytes"):
        sysbench.summarize_fileio([_fileio(1, read=1.0)], {}, 0, 1, 0)


def test_summarize_fileio_nothing_measured() -> None:
    result = sysbench.summarize_fileio([_fileio(1, read=1.0)], {}, 5, 1, 16384)
    assert result["intervals_measured"] == 0
    assert result["mib_s_median"] is None
    assert result["iops_median"] is None
    assert result["latency_ms_median"] is None
    assert result["longest_stall_s"] == 0


def test_report_checkpoints_corrupt_the_next_fileio_interval_in_1_0_20() -> None:
    """Why run_* figures include the warmup: resetting them at the warmup with
    --report-checkpoints makes 1.0.20 print a near-zero interval right after the
    checkpoint, which would look like a stall."""
    parsed = sysbench.parse_output(_read("1.0.20-rndrd-sync-direct-16k-t2-p95-checkpoint2.txt"))
    reads = [interval["read_mib_s"] for interval in parsed["intervals"]]
    assert reads == [235.46, 0.12, 273.60]
    # The summary is the end-of-run one, which covers the 2 s since the checkpoint; the
    # checkpoint's own report (247.40 MiB/s, first in the log) is not taken for it.
    assert parsed["checkpoints"] == [2.0]
    assert parsed["summary"]["read_mib_s"] == 248.36
    assert parsed["summary"]["events"] == 31797

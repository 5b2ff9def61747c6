"""sysbench at a fixed rate (--rate): queue lines, checkpoints, saturation, and latency histograms
merged across trials. The logs are real sysbench 1.0.20 runs against MariaDB
(tests/fixtures/sysbench/oltp/README.md)."""

from __future__ import annotations

import math
import random
from pathlib import Path

import pytest
from innomatrix_host import sysbench

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "sysbench" / "oltp"
CHECKPOINT3 = "1.0.20-oltp_read_write-t4-rate400-p99-histogram-checkpoint3.txt"
REPEATS = [f"1.0.20-oltp_read_write-t4-rate600-p99-histogram-checkpoint2-repeat{n}.txt" for n in (1, 2, 3)]
SATURATED = "1.0.20-oltp_read_write-t4-rate5000-p99-histogram-saturated.txt"
QUEUE_FULL = "1.0.20-oltp_read_write-t4-rate30000-p99-histogram-queue-full.txt"
WITH_SUMMARY = [CHECKPOINT3, *REPEATS, SATURATED]


def _read(name: str) -> str:
    return (FIXTURES / name).read_text()


def _figures(name: str, warmup_s: float) -> dict:
    parsed = sysbench.parse_output(_read(name))
    return sysbench.rate_figures(parsed["intervals"], parsed["queue"], parsed["fatal"], parsed["header"]["rate"],
                                 warmup_s, parsed["header"]["report_interval_s"])


def test_the_banner_gives_the_offered_rate() -> None:
    assert sysbench.parse_output(_read(CHECKPOINT3))["header"] == {"threads": 4, "report_interval_s": 1.0, "rate": 400}


def test_queue_lines_are_read_beside_the_intervals() -> None:
    parsed = sysbench.parse_output(_read(SATURATED))
    assert [entry["t"] for entry in parsed["queue"]] == [interval["t"] for interval in parsed["intervals"]]
    assert [entry["queue_length"] for entry in parsed["queue"]] == [3783, 7570, 11437, 15007, 18823, 22428]
    assert {entry["concurrency"] for entry in parsed["queue"]} == {4}


def test_after_a_checkpoint_the_summary_and_histogram_are_the_final_ones() -> None:
    """The checkpoint's block (1202 transactions in 3 s) comes first in the log; the end-of-run one
    covers the 5 s after it, and so does the histogram."""
    parsed = sysbench.parse_output(_read(CHECKPOINT3))
    assert parsed["checkpoints"] == [3.0]
    assert parsed["summary"]["transactions"] == 1981
    assert parsed["summary"]["latency_pct_ms"] == 3.82
    assert sum(events for _, events in parsed["histogram"]) == 1981
    assert parsed["complete"] and parsed["version"] == "1.0.20"


@pytest.mark.parametrize("name", WITH_SUMMARY)
def test_the_histograms_p99_is_sysbenchs_own(name: str) -> None:
    """sysbench derives its summary's 99th percentile from the same histogram: a known answer for
    every real run, checkpoints or not."""
    parsed = sysbench.parse_output(_read(name))
    assert round(sysbench.histogram_percentile(parsed["histogram"], 99), 2) == parsed["summary"]["latency_pct_ms"]


def test_a_histogram_may_miss_the_events_in_flight_at_a_checkpoint_but_no_more() -> None:
    text = _read(REPEATS[2])
    parsed = sysbench.parse_output(text)
    assert parsed["summary"]["events"] - sum(events for _, events in parsed["histogram"]) == 1
    # Five events gone from a bucket is more than four threads had in flight.
    damaged = text.replace("       1.082 |***************                          23\n",
                           "       1.082 |***************                          18\n", 1)
    assert damaged != text
    with pytest.raises(ValueError, match=r"histogram counts \d+ events, the summary 3579 \(more than the 4 in flight"):
        sysbench.parse_output(damaged)


def test_a_log_cut_inside_a_checkpoint_block_has_no_summary() -> None:
    text = _read(CHECKPOINT3)
    cut = text[:text.index("Threads fairness:")]
    parsed = sysbench.parse_output(cut)
    assert parsed["summary"].get("transactions") is None and not parsed["complete"]


def test_a_fixed_rate_the_server_keeps_up_with_is_sustained() -> None:
    figures = _figures(CHECKPOINT3, warmup_s=3)
    assert figures["saturated"] is False and figures["reasons"] == []
    assert figures["offered_tps"] == 400 and 380 < figures["achieved_tps"] < 420
    assert figures["queue_length_max"] == 0


def test_a_rate_four_times_what_the_server_does_is_saturated_with_its_reasons() -> None:
    figures = _figures(SATURATED, warmup_s=2)
    assert figures["saturated"] is True
    assert figures["reasons"] == ["completed 1243.6 of the 5000 transactions/s offered (25%)",
                                  "the queue ended the trial holding 22428 transactions (4.5 s of arrivals)"]


def test_a_run_stopped_by_its_full_queue_is_saturated_not_a_clean_number() -> None:
    parsed = sysbench.parse_output(_read(QUEUE_FULL))
    assert not parsed["complete"] and parsed["summary"].get("transactions") is None
    figures = _figures(QUEUE_FULL, warmup_s=2)
    assert figures["saturated"] is True
    assert figures["reasons"][0].startswith("sysbench's event queue filled up and it stopped")


def test_poisson_noise_alone_is_not_a_shortfall() -> None:
    """Intervals whose counts are Poisson draws around the offered rate, as a server that keeps up
    completes them: judged sustained (the threshold is three standard deviations and 2 %)."""
    rng = random.Random(7)
    for _ in range(200):
        intervals = [{"kind": "oltp", "t": float(t), "tps": float(_poisson(rng, 50.0))} for t in range(1, 31)]
        figures = sysbench.rate_figures(intervals, [], [], 50, 0, 1)
        assert not figures["saturated"], figures


def test_a_shortfall_beyond_the_noise_is_caught() -> None:
    intervals = [{"kind": "oltp", "t": float(t), "tps": 45.0} for t in range(1, 61)]
    figures = sysbench.rate_figures(intervals, [], [], 50, 0, 1)
    assert figures["saturated"] and figures["reasons"] == ["completed 45.0 of the 50 transactions/s offered (90%)"]


def _poisson(rng: random.Random, mean: float) -> int:
    count, total = 0, rng.expovariate(1.0)
    while total < mean:
        count, total = count + 1, total + rng.expovariate(1.0)
    return count


def test_merged_histograms_add_every_repeats_events() -> None:
    histograms = [sysbench.parse_output(_read(name))["histogram"] for name in REPEATS]
    merged = sysbench.merge_histograms(histograms)
    assert sum(events for _, events in merged) == sum(events for histogram in histograms
                                                      for _, events in histogram) == 3539 + 3585 + 3578
    assert [value for value, _ in merged] == sorted({value for histogram in histograms for value, _ in histogram})
    p99 = [sysbench.histogram_percentile(histogram, 99) for histogram in histograms]
    assert p99 == [12.301, 9.56, 8.581]
    assert min(p99) <= sysbench.histogram_percentile(merged, 99) <= max(p99)


# sysbench 1.0.20's latency histogram (src/sb_logger.c, src/sb_histogram.c): 1024 buckets,
# log-spaced from 0.001 to 100 000 ms; an event goes to the nearest bucket in log scale, and a
# bucket prints as its value with three decimals.
_BUCKETS, _LOW, _HIGH = 1024, 1e-3, 1e5
_DEDUCT = math.log(_LOW)
_MULT = (_BUCKETS - 1) / (math.log(_HIGH) - _DEDUCT)


def _bucket(latency_ms: float) -> int:
    return min(_BUCKETS - 1, max(0, math.floor((math.log(latency_ms) - _DEDUCT) * _MULT + 0.5)))


def _as_printed(latencies: list[float]) -> str:
    counts: dict[int, int] = {}
    for latency in latencies:
        counts[_bucket(latency)] = counts.get(_bucket(latency), 0) + 1
    rows = [f"{math.exp(index / _MULT + _DEDUCT):12.3f} |{'*' * 3:<40} {counts[index]}" for index in sorted(counts)]
    return "\n".join(["Latency histogram (values are in milliseconds)",
                      "       value  ------------- distribution ------------- count", *rows, " ", ""])


@pytest.mark.parametrize("percentile", [50, 95, 99, 99.9])
def test_a_merged_percentile_is_the_percentile_of_all_events_to_the_buckets_resolution(percentile: float) -> None:
    """Three trials of different speeds (one with a slow tail), printed as sysbench prints its
    histogram: the merge's percentile is the bucket of the nearest-rank percentile of all their
    events together, exactly, which the median or mean of the trials' percentiles is not."""
    rng = random.Random(percentile)
    trials = [[rng.lognormvariate(math.log(2.0), 0.3) for _ in range(3000)],
              [rng.lognormvariate(math.log(2.5), 0.3) for _ in range(5000)],
              [rng.lognormvariate(math.log(2.0), 0.3) for _ in range(2900)] + [rng.uniform(50, 200) for _ in range(100)]]
    histograms = [sysbench.parse_histogram(_as_printed(trial)) for trial in trials]
    merged = sysbench.histogram_percentile(sysbench.merge_histograms(histograms), percentile)
    every_event = sorted(latency for trial in trials for latency in trial)
    rank = math.floor(len(every_event) * percentile / 100 + 0.5)
    exact = every_event[rank - 1]
    assert merged == round(math.exp(_bucket(exact) / _MULT + _DEDUCT), 3)
    assert abs(merged - exact) <= exact * (math.exp(0.5 / _MULT) - 1) + 0.0005


def test_a_histogram_bucket_below_the_one_before_is_refused_naming_its_line() -> None:
    text = _read(CHECKPOINT3).replace("       0.872 |***", "       0.800 |***", 1)
    with pytest.raises(ValueError, match=r"^line \d+: histogram bucket 0.8 ms after 0.856 ms: out of order"):
        sysbench.parse_output(text)


@pytest.mark.parametrize("line", ["[ 2s ] queue length: 12x, concurrency: 4",
                                  "[ 2s ] queue length: , concurrency: 4",
                                  "[ 2s ] queue length: 1" + "0" * 400 + ", concurrency: 4"])
def test_a_damaged_queue_line_is_an_error_naming_its_line(line: str) -> None:
    lines = _read(SATURATED).splitlines()
    index = lines.index("[ 2s ] queue length: 7570, concurrency: 4")
    lines[index] = line
    with pytest.raises(ValueError, match=rf"^line {index + 1}: "):
        sysbench.parse_output("\n".join(lines))


def test_a_queue_line_printed_twice_is_an_error_naming_its_line() -> None:
    lines = _read(SATURATED).splitlines()
    index = lines.index("[ 2s ] queue length: 7570, concurrency: 4")
    lines.insert(index + 1, lines[index])
    with pytest.raises(ValueError, match=rf"^line {index + 2}: queue line \[2s\] after \[2s\]: repeated"):
        sysbench.parse_output("\n".join(lines))

"""The report's fixed-rate table and figure: percentiles of merged histograms with a bootstrap
interval over trials (and what that interval is worth with few trials), saturated trials counted,
the latency-versus-load figure. Histograms are real sysbench 1.0.20 captures
(tests/fixtures/sysbench/oltp) or drawn into sysbench's own buckets."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
from innomatrix import frame, stats
from innomatrix.report import plots, tables
from innomatrix_host import sysbench
from synth import Trial, steady, write_trial

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "sysbench" / "oltp"
REPEATS = [sysbench.parse_output((FIXTURES / f"1.0.20-oltp_read_write-t4-rate600-p99-histogram-checkpoint2-repeat{n}.txt")
                                 .read_text())["histogram"] for n in (1, 2, 3)]
SATURATED = sysbench.parse_output((FIXTURES / "1.0.20-oltp_read_write-t4-rate5000-p99-histogram-saturated.txt")
                                  .read_text())["histogram"]

# sysbench 1.0.20's buckets (src/sb_logger.c, src/sb_histogram.c): 1024, log-spaced, 0.001–100 000 ms.
_DEDUCT = math.log(1e-3)
_MULT = 1023 / (math.log(1e5) - _DEDUCT)


def _histogram(latencies: np.ndarray) -> list[tuple[float, int]]:
    buckets = np.clip(np.floor((np.log(latencies) - _DEDUCT) * _MULT + 0.5).astype(int), 0, 1023)
    merged: dict[float, int] = {}
    for bucket, events in zip(*np.unique(buckets, return_counts=True)):
        value = round(math.exp(bucket / _MULT + _DEDUCT), 3)
        merged[value] = merged.get(value, 0) + int(events)
    return sorted(merged.items())


def test_the_estimate_is_the_merged_histograms_percentile_and_few_trials_get_no_interval() -> None:
    estimate, low, high = stats.merged_percentile(REPEATS, 99)
    assert estimate == sysbench.histogram_percentile(sysbench.merge_histograms(REPEATS), 99)
    assert (low, high) == (None, None)  # 3 trials: below PERCENTILE_INTERVAL_MIN_TRIALS
    assert stats.merged_percentile([], 99) == (None, None, None)


def test_identical_trials_leave_the_interval_no_width_and_a_seed_gives_the_same_interval() -> None:
    assert stats.merged_percentile([REPEATS[0]] * 5, 99) == (12.301, 12.301, 12.301)
    five = [*REPEATS, REPEATS[0], REPEATS[2]]
    first = stats.merged_percentile(five, 99)
    assert first == stats.merged_percentile(five, 99)
    estimate, low, high = first
    assert low <= estimate <= high and low >= 8.581 and high <= 12.301


def test_the_interval_over_five_trials_holds_the_true_p99_as_often_as_readme_says() -> None:
    """Trials whose level varies 10 % run to run, 3000 events each: the nominal 95 % interval from
    5 trials held the true p99 85 % of the time in this simulation (README and stats say so); it is
    narrow, and this keeps it from silently getting narrower."""
    rng = np.random.default_rng(1)
    population = np.exp(rng.normal(math.log(2), 0.1, 20000)[:, None] + rng.normal(0, 0.4, (20000, 200))).ravel()
    true_p99 = float(np.quantile(population, 0.99))
    held = 0
    for repeat in range(200):
        trials = [_histogram(np.exp(rng.normal(math.log(2) + rng.normal(0, 0.1), 0.4, 3000))) for _ in range(5)]
        _, low, high = stats.merged_percentile(trials, 99, resamples=500, seed=repeat)
        held += low <= true_p99 <= high
    assert 0.8 <= held / 200 <= 0.95


def _cells(rates: list[int], saturated: set[int]) -> pd.DataFrame:
    rows = []
    for rate in rates:
        for repeat in (1, 2, 3):
            rows.append({"host": "db1", "layout": "plain", "members": 1, "filesystem": "xfs", "workload": "oltp",
                         "variant": "A", "bp_size": "64M", "threads": 4, "rate": rate, "repeat": repeat, "status": "ok",
                         "trial": f"db1/xfs/oltp/A/bp-64M/t4-rate{rate}/r{repeat}", "throughput_median": rate * 0.99,
                         "flags": f"saturated at {rate}/s: completed …" if rate in saturated else "", "saturated": rate in saturated,
                         "flagged": rate in saturated})
    rows.append({**rows[0], "rate": 0, "trial": "db1/xfs/oltp/A/bp-64M/t4/r1", "throughput_median": 1200.0})
    return pd.DataFrame(rows)


def test_the_fixed_rate_table_merges_each_configurations_trials_and_counts_the_saturated() -> None:
    cells = _cells([600, 5000], {5000})
    histograms = {f"db1/xfs/oltp/A/bp-64M/t4-rate600/r{n}": histogram for n, histogram in zip((1, 2, 3), REPEATS)}
    histograms.update({f"db1/xfs/oltp/A/bp-64M/t4-rate5000/r{n}": SATURATED for n in (1, 2, 3)})
    table = tables.fixed_rate(cells, histograms)
    rows = table.data.set_index("rate")
    assert list(rows.index) == [600, 5000]  # the closed-loop cell is not in it
    assert rows.loc[600, "p99_ms"] == sysbench.histogram_percentile(sysbench.merge_histograms(REPEATS), 99)
    assert rows.loc[600, "events"] == 3539 + 3585 + 3578
    assert (rows.loc[600, "saturated"], rows.loc[5000, "saturated"]) == (0, 3)
    assert rows.loc[5000, "p50_ms"] > 100 * rows.loc[600, "p50_ms"]
    assert list(table.display["saturated"]) == ["", "3 of 3"]
    assert table.display["achieved tps"].iloc[1].endswith(tables.FLAG_MARK)
    assert tables.fixed_rate(tables.closed_loop(cells), histograms) is None
    [figure] = plots.latency_by_rate(table)
    assert figure.name == "latency_by_rate_db1_xfs_oltp_A_64M_t4" and figure.png.startswith(b"\x89PNG")


def _configuration(latency_by_rate: dict[int, float], saturated: set[int]) -> tables.Table:
    cells = _cells(sorted(latency_by_rate), saturated)
    histograms = {f"db1/xfs/oltp/A/bp-64M/t4-rate{rate}/r{n}": [(latency, 990), (latency * 1.5, 10)]
                  for rate, latency in latency_by_rate.items() for n in (1, 2, 3)}
    return tables.fixed_rate(cells, histograms, stats.Thresholds(sla_percentile=99, sla_ms=10))


def test_the_capacity_is_the_highest_rate_met_with_every_lower_one() -> None:
    fixed = _configuration({100: 2.0, 200: 4.0, 400: 30.0, 800: 3.0}, saturated={800})
    assert list(fixed.data["meets_sla"]) == [True, True, False, False]  # saturated: never met, whatever its p99
    assert list(fixed.display["p99 ≤ 10 ms"]) == ["yes", "yes", "no", "no"]
    [row] = tables.capacity_at_sla(fixed, stats.Thresholds(sla_ms=10)).data.to_dict("records")
    assert (row["capacity_tps"], row["first_missed_tps"], row["saturates_at_tps"]) == (200, 400, 800)


def test_a_capacity_below_or_above_every_rate_run_says_so() -> None:
    below = tables.capacity_at_sla(_configuration({100: 12.0, 200: 4.0}, saturated=set()))
    assert pd.isna(below.data["capacity_tps"].iloc[0]) and below.data["first_missed_tps"].iloc[0] == 100
    assert below.display.iloc[0]["capacity at p99 ≤ 10 ms (tps)"] == "below every rate run"
    above = tables.capacity_at_sla(_configuration({100: 2.0, 200: 4.0}, saturated=set()))
    assert above.data["capacity_tps"].iloc[0] == 200 and above.display.iloc[0]["first rate missed"].startswith("none")
    assert tables.capacity_at_sla(None) is None


def test_configurations_with_and_without_a_capacity_share_a_table_of_whole_rates() -> None:
    met = _configuration({100: 2.0, 200: 4.0}, saturated=set())
    missed = _configuration({100: 12.0, 200: 40.0}, saturated={200})
    both = tables.Table("fixed_rate", "", pd.concat([met.data, missed.data.assign(variant="B")]), met.display)
    capacity = tables.capacity_at_sla(both)
    assert capacity.display.iloc[:, -4:].values.tolist() == [["200", "none (run higher rates)", "≥ 200", "–"],
                                                             ["below every rate run", "100", "< 100", "200"]]
    assert capacity.data.to_csv(index=False).splitlines()[1:] == ["db1,xfs,oltp,A,64M,4,200,,200,,,2",
                                                                  "db1,xfs,oltp,B,64M,4,,100,,100,200,2"]


def test_a_trial_that_fell_behind_its_arrivals_is_saturated_in_the_cells_table(tmp_path) -> None:
    # The rule the host flags it by, on the driver.log as loaded: 100/s offered and about 100
    # done is within the rate; 1000/s offered and 500 done fell behind.
    for rate, level in ((100, 100.0), (1000, 500.0)):
        write_trial(tmp_path / "run", Trial(tps=steady(20, level, 0.01, seed=rate), rate=rate, warmup_s=2))
    cells = stats.cells(frame.load(tmp_path / "run")).set_index("rate")
    assert (bool(cells.loc[100, "saturated"]), bool(cells.loc[1000, "saturated"])) == (False, True)
    assert "saturated at 1000/s: completed" in cells.loc[1000, "flags"]

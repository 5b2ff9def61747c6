"""innomatrix.stats on constructed data whose answers are known."""

from __future__ import annotations

import math

import re

import numpy as np
import pytest
from innomatrix import frame, stats
from innomatrix_host import steady as steady_rules
from trees import Trial, steady, write_trial

TH = stats.Thresholds()


def test_cov_is_sample_standard_deviation_over_mean():
    assert stats.cov(np.array([1.0, 2.0, 3.0, 4.0])) == pytest.approx(1.2909944 / 2.5)
    assert np.isnan(stats.cov(np.array([5.0])))
    assert np.isnan(stats.cov(np.array([0.0, 0.0])))


def test_stalls_are_zero_or_near_zero_intervals_counted_in_episodes():
    tps = np.full(30, 1000.0)
    tps[[5, 6, 7]] = 0.0
    tps[20] = 4.0    # 0.4 % of the median: near zero
    tps[25] = 50.0   # 5 %: slow, not a stall
    mask = stats.stall_mask(tps, TH.stall_fraction)
    assert np.flatnonzero(mask).tolist() == [5, 6, 7, 20]
    assert stats.episodes(mask) == [(5, 3), (20, 1)]
    assert stats.episodes(np.zeros(4, bool)) == []
    assert stats.episodes(np.ones(3, bool)) == [(0, 3)]


@pytest.mark.parametrize(("rounds", "steady"), [
    ([100, 101, 99, 100, 100], True),
    ([100, 102, 104, 106, 108], True),    # range 7.7 %, slope excursion 7.7 %
    ([100, 103, 106, 109, 112], False),   # range 11 % (fine) but slope excursion 11 % > 10 %
    ([100, 125, 100, 125, 100], False),   # flat trend, range 23 % > 20 %
    ([0, 0, 0, 0, 0], False),
])
def test_snia_window(rounds, steady):
    assert steady_rules.window_is_steady([float(v) for v in rounds], TH.ss_range, TH.ss_slope) is steady


def test_steady_state_is_found_where_the_series_settles_and_the_saveable_warmup_follows():
    t = np.arange(1, 1201, dtype=float)                       # 1 s intervals, 10 s rounds
    tps = np.where(t <= 300, 200 + 2 * t, 1000.0) + 5 * np.sin(t)  # a climb, flat from 300 s on
    ss = stats.steady_state(t, tps, 1.0, warmup_s=600.0)
    assert ss.round_s == 10.0
    assert ss.first_s == 300.0            # the first window of 5 rounds wholly on the plateau
    assert ss.saveable_s == 300.0         # 600 s of warmup, steady from 300 s
    assert ss.at_measure_start is True


def test_steady_state_never_reached():
    t = np.arange(1, 601, dtype=float)
    tps = np.where((t // 10) % 2 == 0, 500.0, 1500.0)  # rounds alternate: never within 20 %
    ss = stats.steady_state(t, tps, 1.0, warmup_s=100.0)
    assert ss.first_s is None and ss.saveable_s == 0.0 and ss.at_measure_start is False


def test_steady_state_after_the_warmup_saves_nothing():
    t = np.arange(1, 601, dtype=float)
    tps = np.where(t <= 200, t * 5, 1000.0)  # rounds ... 877.5, 927.5, 977.5, then 1000
    ss = stats.steady_state(t, tps, 1.0, warmup_s=100.0)
    # The window from 180 s (927.5 ... 1000) is within 20 % and its slope excursion is 6.8 % of the
    # mean; the one from 170 s has an excursion of 13 %: the tolerance lets steady state start
    # just before the plateau, as SNIA's does.
    assert ss.first_s == 180.0 and ss.saveable_s == 0.0 and ss.at_measure_start is False


def _simulated_pairs(ratio: float, spread: float, repeats: int, pairs: int, seed: int) -> list[stats.Verdict]:
    """`pairs` comparisons of two configurations whose trial medians scatter lognormally by `spread`
    (run to run) around levels `ratio` apart."""
    rng = np.random.default_rng(seed)
    return [stats.between_runs(ratio * 1000 * np.exp(rng.normal(0, spread, repeats)),
                               1000 * np.exp(rng.normal(0, spread, repeats))) for _ in range(pairs)]


@pytest.mark.parametrize("repeats", [2, 3, 5])
def test_an_aa_comparison_says_no_difference_about_95_percent_of_the_time(repeats):
    # 15 % run-to-run spread, as measured on this 2-core machine: the verdict must not care.
    verdicts = _simulated_pairs(1.0, 0.15, repeats, 4000, seed=repeats)
    false_differences = sum(v.differs for v in verdicts) / len(verdicts)
    assert false_differences <= 0.06, false_differences
    # Not bought by never saying "differs": with 3 or more repeats the rate is the nominal 5 %
    # (Welch's interval is conservative with 2 a side).
    assert repeats == 2 or false_differences >= 0.035, false_differences
    assert {v.verdict for v in verdicts} == {stats.DIFFERS, stats.SAME}


def test_a_known_large_effect_is_detected_every_time_with_the_right_sign():
    for ratio in (1.5, 1 / 1.5):
        verdicts = _simulated_pairs(ratio, 0.05, 3, 1000, seed=11)
        assert all(v.differs for v in verdicts)
        assert all((v.ratio > 1) == (ratio > 1) for v in verdicts)
        covered = sum(v.low <= ratio <= v.high for v in verdicts) / len(verdicts)
        assert covered >= 0.93, covered


def test_one_trial_on_a_side_gives_a_ratio_and_no_verdict():
    verdict = stats.between_runs(np.array([1300.0]), np.array([1000.0, 1010.0, 990.0]))
    assert verdict.ratio == pytest.approx(1.3, rel=1e-3)
    assert verdict.verdict == stats.UNKNOWN and not verdict.differs
    assert np.isnan(verdict.low) and np.isnan(verdict.high)


def test_identical_trial_medians_give_no_verdict():
    # No spread at all is no estimate of run-to-run variance, not a certainty.
    verdict = stats.between_runs(np.array([1000.0, 1000.0]), np.array([999.0, 999.0]))
    assert verdict.verdict == stats.NO_SPREAD and not verdict.differs


def test_a_trial_median_of_zero_gives_no_ratio_and_says_why():
    # A disk at a transaction every other second reads 0 in its median second (a CI run, 75 IOPS).
    verdict = stats.between_runs(np.array([1.0, 1.5, 0.0]), np.array([10.35, 14.29, 7.0]))
    assert verdict.verdict == stats.NOTHING_DONE and not verdict.differs
    assert np.isnan(verdict.ratio) and np.isnan(verdict.low)


def test_the_verdict_is_symmetric_and_reads_trials_not_intervals():
    a, b = np.array([1000.0, 1100.0, 1050.0]), np.array([900.0, 950.0, 1000.0])
    ab, ba = stats.between_runs(a, b), stats.between_runs(b, a)
    assert ab.ratio == pytest.approx(1 / ba.ratio) and ab.low == pytest.approx(1 / ba.high)
    assert ab.verdict == ba.verdict


def _cells(tmp_path, *trials):
    run = tmp_path / "run"
    for trial in trials:
        write_trial(run, trial)
    loaded = frame.load(run)
    return loaded, stats.cells(loaded).set_index("trial")


def test_clean_cell_figures_and_no_flag(tmp_path):
    tps = steady(60, 1000.0, 0.05, seed=2)
    _, cells = _cells(tmp_path, Trial(tps=tps, warmup_s=10, device_kb_per_trx=6.0, innodb_bytes_per_trx=3000.0))
    row = cells.iloc[0]
    measured = np.array(tps[10:])
    assert row["intervals_measured"] == 50
    assert row["throughput_median"] == pytest.approx(np.median(measured))
    assert row["throughput_cov"] == pytest.approx(np.std(measured, ddof=1) / np.mean(measured))
    assert row["device_bytes_per_trx"] == pytest.approx(6 * 1024, rel=1e-3)
    assert row["innodb_bytes_per_trx"] == pytest.approx(3000, rel=0.02)
    assert row["write_amplification"] == pytest.approx(6 * 1024 / 3000, rel=0.02)
    assert row["cpu_id"] == 20 and row["cpu_wa"] == 10
    assert not row["flagged"] and row["flags"] == ""


def test_every_flag_with_its_reason(tmp_path):
    base = {"warmup_s": 5}
    stalled = steady(40, seed=1)
    stalled[10:13] = [0.0, 0.0, 0.0]
    stalled[30] = 0.0
    _, cells = _cells(
        tmp_path,
        Trial(tps=stalled, variant="S", **base),
        Trial(tps=steady(40), variant="R", reconn_s=[0.0] * 20 + [1.0] + [0.0] * 19, **base),
        Trial(tps=steady(40), variant="E", err_s=20.0, **base),        # 2 % of 1000 tps
        Trial(tps=steady(40), variant="e", err_s=2.0, **base),         # 0.2 %: reported, not flagged
        Trial(tps=steady(40), variant="H", measured_asked_s=60, **base),
        Trial(tps=steady(40), variant="B", device_reads_s=0.0, **base),
        Trial(tps=steady(40), variant="U", cpu=(70.0, 28.0, 2.0, 0.0), **base),
        Trial(tps=steady(40), variant="F", status="failed", reasons=["server died"], **base),
    )
    flags = {trial.split("/")[3]: text for trial, text in cells["flags"].items()}
    assert flags["S"] == "stalls: 4 intervals in 2 episodes (longest 3 s)"
    assert flags["R"] == "reconnects: 1"
    assert re.fullmatch(r"errors: 2\.0\d% of transactions \(above 1%\)", flags["E"])
    assert flags["e"] == ""
    assert cells.loc[cells.index.str.contains("/e/"), "errors_per_s"].item() == 2.0
    assert flags["H"] == "short: 35 s measured of 60 s asked"
    assert flags["B"] == "buffer pool holds the dataset: device reads 0/s"
    assert flags["U"] == "CPU-bound: idle 2 %, iowait 0 %"
    assert flags["F"] == "trial failed: server died"


def test_compare_matches_configurations_and_marks_only_real_differences(tmp_path):
    def run(name, level_by_bp, seed):
        for number, (bp, level) in enumerate(level_by_bp.items()):
            for repeat, drift in enumerate((0.98, 1.0, 1.02), start=1):
                trial_seed = seed + 10 * number + repeat
                write_trial(tmp_path / name, Trial(tps=steady(200, level * drift, 0.05, seed=trial_seed), bp_size=bp,
                                                   warmup_s=10, seed=trial_seed, repeat=repeat))
        loaded = frame.load(tmp_path / name)
        return stats.cells(loaded)

    a = run("a", {"64M": 1000.0, "256M": 1300.0, "1G": 900.0}, 10)
    b = run("b", {"64M": 1000.0, "256M": 1000.0, "4G": 900.0}, 50)
    table = stats.compare(a, b)
    rows = {row.bp_size: row for row in table.itertuples()}
    assert [row.bp_size for row in table.itertuples()] == ["64M", "256M", "1G", "4G"]  # by size
    assert not rows["64M"].differs and rows["64M"].ci_low < 1 < rows["64M"].ci_high
    assert rows["64M"].verdict == "no difference" and rows["64M"].a_trials == rows["64M"].b_trials == 3
    assert rows["256M"].differs and rows["256M"].ratio == pytest.approx(1.3, abs=0.02)
    assert rows["1G"].only_in == "A" and rows["4G"].only_in == "B" and not rows["1G"].differs


def test_a_failed_trial_does_not_count_in_a_verdict(tmp_path):
    for name, statuses in (("a", ("ok", "ok", "failed")), ("b", ("ok", "ok", "ok"))):
        for repeat, status in enumerate(statuses, start=1):
            # The failed trial ran at a tenth of the speed: counted, it would swing the verdict.
            level = 100.0 if status == "failed" else 1000.0 * (1 + 0.01 * repeat)
            write_trial(tmp_path / name, Trial(tps=steady(60, level, 0.02, seed=repeat), warmup_s=5, seed=repeat,
                                               repeat=repeat, status=status, reasons=["server died"] * (status != "ok")))
    table = stats.compare(stats.cells(frame.load(tmp_path / "a")), stats.cells(frame.load(tmp_path / "b")))
    row = table.iloc[0]
    assert (row["a_trials"], row["b_trials"]) == (2, 3)
    assert row["ratio"] == pytest.approx(1.0, abs=0.03) and row["verdict"] == "no difference"
    assert "server died" in row["a_flags"]

def test_the_noise_floor_is_pooled_over_configurations_and_says_what_cannot_show(tmp_path):
    for bp, medians in (("64M", (900.0, 1000.0, 1100.0)), ("256M", (1800.0, 2000.0, 2200.0))):
        for repeat, level in enumerate(medians, start=1):
            write_trial(tmp_path / "run", Trial(tps=[level] * 30, warmup_s=5, bp_size=bp, repeat=repeat, seed=repeat))
    floor = stats.noise_floor(stats.cells(frame.load(tmp_path / "run")))
    sd_log = float(np.std(np.log([900.0, 1000.0, 1100.0]), ddof=1))  # the same in both configurations
    assert floor.configurations == 2 and floor.repeats == 3
    assert floor.cov == pytest.approx(math.sqrt(math.exp(sd_log ** 2) - 1))
    assert floor.detectable == pytest.approx(stats.minimum_detectable_effect(sd_log, 3))
    assert floor.detectable == pytest.approx(math.exp(2.776 * sd_log * math.sqrt(2 / 3)) - 1, rel=1e-3)
    assert math.isnan(stats.minimum_detectable_effect(sd_log, 1))


def test_variance_parts_combine_by_welch_satterthwaite():
    # Two equal parts of 2 degrees of freedom each: 4 together; a part of none leaves the rest's.
    assert stats.combined([(1.0, 2), (1.0, 2)]) == (2.0, 4.0)
    assert stats.combined([(0.5, 3), (0.0, 1)]) == (0.5, 3.0)
    variance, df = stats.combined([(0.0, 2)])
    assert variance == 0.0 and math.isnan(df)

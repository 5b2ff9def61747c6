"""The stopping rules of warmup=auto and duration=auto (innomatrix_host.steady, which runs on the
host and in the report) on synthetic series, and the report's steady-state test agreeing
with the host's."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from scipy.stats import t as student_t

from innomatrix import plan, stats
from innomatrix_host import steady
from innomatrix.plan import KnobError

TRUE_MEDIAN = 1000.0


def ramp_then_plateau(seconds: int = 1200, ramp: int = 300, noise: float = 0.03, seed: int = 1):
    rng = random.Random(seed)
    times = list(range(1, seconds + 1))
    return times, [TRUE_MEDIAN * min(1.0, t / ramp) * (1 + rng.gauss(0, noise)) for t in times]


def ar1(n: int, phi: float, noise: float, rng: random.Random) -> list[float]:
    """A plateau whose neighbouring intervals are correlated, as a server's are (flushing comes in waves)."""
    values, state = [], 0.0
    for _ in range(n):
        state = phi * state + rng.gauss(0, noise)
        values.append(TRUE_MEDIAN * (1 + state))
    return values


def rules(**changes) -> steady.Rules:
    base = dict(report_interval_s=1, warmup_s=600, duration_s=600, warmup_auto=True, duration_auto=True,
                duration_min_s=60, precision=0.01)
    return steady.Rules(**{**base, **changes})


def test_the_t_constant_is_students() -> None:
    assert steady.T_STOP == pytest.approx(student_t.ppf(0.995, steady.BATCHES - 1), abs=1e-12)


def test_window_test_matches_the_least_squares_line() -> None:
    rng = np.random.default_rng(3)
    for _ in range(500):
        window = (1000 + rng.normal(0, 60, 5) + np.arange(5) * rng.normal(0, 15)).tolist()
        slope = np.polyfit(np.arange(5), window, 1)[0]
        expected = np.ptp(window) <= 0.2 * np.mean(window) and abs(slope) * 4 <= 0.1 * np.mean(window)
        assert steady.window_is_steady(window) == expected


def test_a_ramp_then_a_plateau_starts_measuring_after_the_ramp_and_stops_on_precision() -> None:
    times, values = ramp_then_plateau()
    decided = steady.replay(times, values, rules())
    assert decided.warmup_decided_by == "steady"
    assert 250 <= decided.measure_start_s <= 400 and decided.measure_start_s % 10 == 0
    assert decided.ended_by == "precision" and decided.half_width <= 0.01
    assert decided.end_s - decided.measure_start_s >= 100  # ten batches of a round at least
    full = statistics_median(values[600:])
    assert abs(statistics_median(decided.measured()) / full - 1) < 0.01


def statistics_median(values) -> float:
    return float(np.median(values))


def test_host_and_report_agree_on_where_it_settled() -> None:
    for seed in range(20):
        times, values = ramp_then_plateau(seed=seed, noise=0.05, ramp=200 + 10 * seed)
        decided = steady.replay(times, values, rules(duration_auto=False))
        report = stats.steady_state(np.array(times, float), np.array(values), 1.0, decided.measure_start_s,
                                    round_s=decided.rules.round_s)
        assert decided.warmup_decided_by == "steady"
        assert report.first_s + steady.WINDOW_ROUNDS * decided.rules.round_s == decided.measure_start_s


def test_a_plateau_with_stalls_settles_and_the_stalls_do_not_move_the_median() -> None:
    rng = random.Random(7)
    times = list(range(1, 1201))
    values = [0.0 if t % 97 == 0 else TRUE_MEDIAN * (1 + rng.gauss(0, 0.03)) for t in times]
    decided = steady.replay(times, values, rules())
    assert decided.warmup_decided_by == "steady" and decided.measure_start_s == 50
    assert decided.ended_by == "precision"
    assert abs(statistics_median(decided.measured()) / TRUE_MEDIAN - 1) < 0.01


def test_a_series_that_never_settles_runs_to_both_caps() -> None:
    times = list(range(1, 1201))
    values = [100 * 1.003 ** t for t in times]  # climbs 3 % a round for ever: 12 % across a window
    decided = steady.replay(times, values, rules())
    assert (decided.warmup_decided_by, decided.measure_start_s) == ("max", 600)
    assert (decided.ended_by, decided.end_s) == ("max", 1200)
    assert decided.windows_tested == 60 - steady.WINDOW_ROUNDS + 1


def test_noisy_plateau_never_precise_enough_runs_to_duration_max() -> None:
    rng = random.Random(11)
    times = list(range(1, 1201))
    values = ar1(1200, 0.9, 0.08, rng)
    decided = steady.replay(times, values, rules(warmup_auto=False, warmup_s=0, precision=0.001))
    assert decided.warmup_decided_by == "fixed" and decided.ended_by == "max"


def test_never_before_duration_min() -> None:
    times, values = ramp_then_plateau(noise=0.001)
    decided = steady.replay(times, values, rules(duration_min_s=400))
    assert decided.ended_by == "precision" and decided.end_s - decided.measure_start_s >= 400


def test_fixed_rules_decide_nothing() -> None:
    times, values = ramp_then_plateau()
    decided = steady.replay(times, values, rules(warmup_auto=False, duration_auto=False, warmup_s=30, duration_s=120))
    assert (decided.measure_start_s, decided.warmup_decided_by) == (30, "fixed")
    assert (decided.end_s, decided.ended_by) == (150, "duration")


def test_decisions_do_not_depend_on_how_the_intervals_arrive() -> None:
    """Live, the host feeds what it has read so far; offline, replay feeds it all: the same decisions."""
    times, values = ramp_then_plateau(seed=5)
    watcher = steady.Watcher(rules())
    for t, value in zip(times, values):
        if watcher.feed(t, value):
            break
    assert watcher.record() == steady.replay(times, values, rules()).record()
    assert watcher.feed(times[-1] + 1, 1.0)  # once decided, it stays decided


def test_batch_median_interval_covers_the_true_median_of_correlated_data() -> None:
    """The reason for batches: neighbouring intervals are correlated (phi 0.7); the interval of the
    median from 10 batch medians still covers the true median about 95 % of the time."""
    rng = random.Random(2)
    covered = 0
    trials = 400
    for _ in range(trials):
        values = ar1(600, 0.7, 0.03, rng)
        median, half = steady.batch_median_interval(values)
        covered += abs(median - TRUE_MEDIAN) <= half
    assert 0.90 <= covered / trials <= 0.99, covered / trials


def test_naive_interval_of_correlated_data_is_too_narrow() -> None:
    """Treating correlated intervals as independent (batches of one) covers far less than 95 %:
    why the rule batches."""
    rng = random.Random(2)
    covered = 0
    for _ in range(400):
        values = ar1(600, 0.7, 0.03, rng)
        half = 1.96 * math.sqrt(math.pi / 2) * float(np.std(values, ddof=1)) / math.sqrt(len(values))
        covered += abs(float(np.median(values)) - TRUE_MEDIAN) <= half
    assert covered / 400 < 0.80


def test_too_few_values_for_batches_is_refused() -> None:
    with pytest.raises(ValueError, match="cannot make 10 batches"):
        steady.batch_median_interval([1.0] * 9)


def test_short_caps_test_single_intervals() -> None:
    assert rules(warmup_s=30).per_round == 1 and rules(warmup_s=30).round_s == 1
    assert rules(warmup_s=3600).round_s == 10
    assert rules(duration_s=40).batch_intervals == 1 and rules(duration_s=3600).batch_intervals == 10
    # ten batches of a round must fit in duration_max, or the precision could never be tested
    assert rules(duration_s=99).batch_intervals == 1 and rules(duration_s=100).batch_intervals == 10


# --- the knobs --------------------------------------------------------------------------------

CTX = plan.Context(host="db1", memory_bytes=8 << 30, device_id="loop:/x", server_flavor="mariadb",
                   server_version="10.11.6", driver_version="sysbench 1.0.20", variant_digests={"A": "a"})
KNOBS = {"filesystems": ["xfs"], "workloads": ["oltp"], "variants": ["A"], "bp_sizes": ["64M"], "threads": [4],
         "warmup": 10, "duration": 30, "oltp_tables": 1, "oltp_table_size": 1000}


def expand(**changes):
    return plan.expand({**KNOBS, **changes}, CTX, {})


def test_auto_takes_the_caps_as_the_cell_time_and_its_settings_into_the_key() -> None:
    fixed = expand()["cells"][0]
    auto = expand(warmup="auto", warmup_max=120, duration="auto", duration_min=60, duration_max=240,
                  precision=0.02)["cells"][0]
    assert fixed["auto"] is None and (fixed["warmup"], fixed["duration"]) == (10, 30)
    assert (auto["warmup"], auto["duration"]) == (120, 240)
    assert auto["auto"] == {"warmup": True, "duration": True, "duration_min": 60, "precision": 0.02}
    assert auto["key"] != fixed["key"] and auto["path"] == fixed["path"]
    other_precision = expand(warmup="auto", warmup_max=120, duration="auto", duration_min=60, duration_max=240,
                             precision=0.01)["cells"][0]
    assert other_precision["key"] != auto["key"]
    assert steady.Rules.of_cell(auto) == steady.Rules(1.0, 120.0, 240.0, True, True, 60.0, 0.02)


def test_a_fixed_cell_keeps_the_key_it_always_had() -> None:
    """Adding the auto knobs changed no finished result's key: auto enters the key only when set."""
    cell = expand(warmup_max=999, duration_max=999, precision=0.5)["cells"][0]
    assert cell["key"] == expand()["cells"][0]["key"]


def test_a_finished_adaptive_cell_refuses_fixed_times_in_the_same_run() -> None:
    auto = expand(warmup="auto", warmup_max=120, duration="auto", duration_min=60, duration_max=240)["cells"][0]
    finished = {auto["path"]: {"key": auto["key"], "status": "ok"}}
    with pytest.raises(plan.PlanError, match="measured with other inputs"):
        plan.expand(KNOBS, CTX, finished)


@pytest.mark.parametrize(("changes", "message"), [
    ({"warmup": "auto", "workloads": ["oltp", "fileio"], "fileio_tests": ["seqrd"], "fileio_total_size": "64M",
      "fileio_block_size": "16K", "fileio_threads_max": 1, "fileio_block_sizes": ["16K"], "fileio_table_threads": [1],
      "fileio_step_duration": 2}, "watch sysbench OLTP and tpcc-mysql, not fileio"),
    ({"duration": "auto", "duration_min": 300, "duration_max": 60}, "duration_min=300 is longer than duration_max=60"),
    ({"duration": "auto", "duration_max": 60, "precision": 1.5}, "precision=1.5 must lie between 0 and 1"),
    ({"duration": "auto", "duration_max": 60, "precision": "tight"}, "precision='tight' is not a number"),
    ({"warmup": "auto", "warmup_max": -5}, "warmup_max=-5 must be a whole number of zero or more"),
    ({"warmup": "soon"}, "warmup='soon' is not a number"),
])
def test_bad_auto_knobs_are_refused_in_one_line(changes, message) -> None:
    with pytest.raises((plan.PlanError, KnobError), match=message.replace("(", r"\(").replace("+", r"\+")) as caught:
        expand(**changes)
    assert "\n" not in str(caught.value)


# --- the report ---------------------------------------------------------------------------------

def test_the_report_shows_what_each_trial_decided_and_the_time_saved(tmp_path) -> None:
    from innomatrix import frame
    from innomatrix.report import tables
    from trees import Trial, write_trial

    times, values = ramp_then_plateau(seconds=360, ramp=60, noise=0.02, seed=3)
    given = rules(warmup_s=120, duration_s=240, duration_min_s=30, precision=0.02)
    decided = steady.replay(times, values, given)
    assert decided.warmup_decided_by == "steady" and decided.ended_by == "precision"
    record = decided.conclude(stopped_driver=True)
    ran = values[:int(decided.end_s)]
    run = tmp_path / "run"
    write_trial(run, Trial(tps=ran, variant="A", warmup_s=int(decided.measure_start_s),
                           measured_asked_s=int(decided.end_s - decided.measure_start_s), adaptive=record))
    write_trial(run, Trial(tps=values, variant="B", warmup_s=120, seed=2))
    cells = stats.cells(frame.load(run)).set_index("variant")
    auto, fixed = cells.loc["A"], cells.loc["B"]
    # stopped by the trial: no summary in its log, and not flagged for it (nor short)
    assert auto["flags"] == "" and auto["status"] == "ok"
    assert (auto["warmup_decided_by"], auto["ended_by"], auto["planned_s"]) == ("steady", "precision", 360)
    assert auto["measured_s"] == decided.end_s - decided.measure_start_s
    assert auto["throughput_median"] == pytest.approx(float(np.median(decided.measured())))
    # the report judges the adaptive trial in the host's rounds and finds the host's window
    assert auto["ss_first_s"] + steady.WINDOW_ROUNDS * decided.rules.round_s == decided.measure_start_s
    assert (fixed["warmup_decided_by"], fixed["ended_by"], fixed["planned_s"]) == ("fixed", "fixed", 360)
    table = tables.steady_table(cells.reset_index())
    used = decided.end_s
    assert table.notes == [f"adaptive: {(360 - used) / 60:.1f} min saved of 6.0 min ({(360 - used) / 360:.0%}) over 1 trial"]
    assert list(table.display.columns[4:8]) == ["warmup by", "measured (s)", "ended by", "given (s)"]


def test_no_adaptive_trial_no_adaptive_line(tmp_path) -> None:
    from innomatrix import frame
    from innomatrix.report import tables
    from trees import Trial, write_trial

    write_trial(tmp_path / "run", Trial(tps=[1000.0] * 40, warmup_s=10))
    cells = stats.cells(frame.load(tmp_path / "run"))
    assert tables.adaptive_line(cells) is None and tables.steady_table(cells).notes == []


def test_concluded_when_the_driver_reached_its_time_without_printing_its_last_interval() -> None:
    times, values = ramp_then_plateau(seconds=899, noise=0.2)  # --time=900; the 900th line never came
    concluded = steady.replay(times, values, rules(warmup_s=300, duration_s=600, precision=0.0001)).conclude(False)
    assert concluded["ended_by"] == "max" and concluded["end_s"] == concluded["measure_start_s"] + 600
    assert concluded["stopped_driver"] is False and concluded["planned_s"] == 900


def test_concluded_when_the_driver_died_in_the_warmup_or_while_measured() -> None:
    times, values = ramp_then_plateau(seconds=40)
    early = steady.replay(times, values, rules()).conclude(False)
    assert (early["warmup_decided_by"], early["measure_start_s"]) == ("driver", 600)
    assert (early["ended_by"], early["end_s"]) == ("driver", 600)  # nothing measured
    times, values = ramp_then_plateau(seconds=450, noise=0.3)
    later = steady.replay(times, values, rules(precision=0.0001)).conclude(False)
    assert later["warmup_decided_by"] == "steady" and (later["ended_by"], later["end_s"]) == ("driver", 450)


def test_concluded_by_the_trial_itself() -> None:
    times, values = ramp_then_plateau()
    concluded = steady.replay(times, values, rules()).conclude(True)
    assert concluded["ended_by"] == "precision" and concluded["stopped_driver"] is True


def test_the_time_saved_is_said_in_hours_once_there_are_hours() -> None:
    import pandas as pd
    from innomatrix.report import tables

    cells = pd.DataFrame({"warmup_decided_by": ["steady", "fixed"], "ended_by": ["precision", "fixed"],
                          "planned_s": [7200.0, 7200.0], "warmup_s": [900.0, 3600.0], "measured_s": [1500.0, 3600.0]})
    assert tables.adaptive_line(cells) == "adaptive: 1.33 h saved of 2.00 h (67%) over 1 trial"


@pytest.mark.parametrize(("field", "value"), [("planned_s", "abc"), ("round_s", [1]), ("rules", "x")])
def test_a_corrupted_adaptive_record_is_a_one_line_error_naming_the_file(tmp_path, field, value) -> None:
    import json
    import re

    from innomatrix import frame
    from trees import Trial, write_trial

    directory = write_trial(tmp_path / "run", Trial(tps=[1000.0] * 40, warmup_s=10))
    record = json.loads((directory / "trial.json").read_text())
    record["durations"]["adaptive"] = {"planned_s": 50.0, "round_s": 1.0, "rules": {"warmup_auto": True}, field: value}
    (directory / "trial.json").write_text(json.dumps(record))
    with pytest.raises(frame.FrameError, match=rf"trial\.json: durations\.adaptive\.{field} is {re.escape(repr(value))}, not an? ") as caught:
        frame.load(tmp_path / "run")
    assert "\n" not in str(caught.value)


def test_the_demo_caps_test_the_precision() -> None:
    """inventory/demo-auto.yml's caps (30 + 60 s, duration_min 20): the interval is tested from
    20 s measured on, on single-interval batches (with 10-interval batches the first test would
    need 100 s, beyond the cap: the demo once ran to its cap untested), and again each time the
    measured part is a quarter longer: at 20, 25, 32, 40 and 50 s."""
    times, values = ramp_then_plateau(seconds=90, ramp=10, noise=0.3, seed=4)
    decided = steady.replay(times, values, rules(warmup_s=30, duration_s=60, duration_min_s=20, precision=1e-6))
    assert decided.ended_by == "max" and decided.checks == 5 and decided.last_look == 50


# --- the stop keeps its promise ----------------------------------------------------------------

def ar1_level(n: int, phi: float, rng: random.Random, cov: float = 0.05) -> list[float]:
    """A plateau whose intervals spread by `cov` around TRUE_MEDIAN, correlated with lag-1 factor phi."""
    state = rng.gauss(0, cov)
    values = []
    for _ in range(n):
        state = phi * state + rng.gauss(0, cov * math.sqrt(1 - phi * phi))
        values.append(TRUE_MEDIAN * (1 + state))
    return values


def test_where_the_rule_says_precision_reached_the_median_is_that_close() -> None:
    """AR(1) plateaus (phi 0, 0.5, 0.7, 0.9; 20 to 600 intervals measured; precision 1 and 2 %),
    replayed through the trial's own Watcher (steady.coverage): where it stops on precision, the
    median is within that precision of the true median, and its reported interval covers it.

    Per cell where the precision is within the trial's reach (it stops on precision in a third of
    the series or more): ≥ 93 %. Pooled over every stop of the grid: ≥ 97 % within the precision,
    ≥ 95 % inside the reported interval. Where a precision is at the edge of the trial's reach the
    few stops are partly lucky (a spread read low): README gives those cells, and the rule of
    before (10 batches of a round, t's 95 % point, a look every round) for comparison: 77 % pooled."""
    table = steady.coverage(phis=(0.0, 0.5, 0.7, 0.9), lengths=(20, 60, 120, 300, 600), precisions=(0.01, 0.02),
                            series=80, seed=28)
    for cell in table:
        if cell.stops >= cell.series / 3:
            assert cell.within_precision / cell.stops >= 0.93, cell
    stops = sum(cell.stops for cell in table)
    assert stops > 250
    assert sum(cell.within_precision for cell in table) / stops >= 0.97
    assert sum(cell.inside_interval for cell in table) / stops >= 0.95
    # The grid reaches its edge, and beyond: some cells stop rarely, some never (20 intervals, phi 0.9).
    assert any(0 < cell.stops < cell.series / 3 for cell in table) and any(cell.stops == 0 for cell in table)


def test_a_short_series_too_correlated_for_ten_batches_claims_nothing() -> None:
    rng = random.Random(4)
    strongly = ar1_level(200, 0.9, rng)  # reach (1 + 0.9) / (1 - 0.9) = 19: ten batches need ~570
    assert steady.correlation_reach(strongly) > 10
    assert steady.precision_interval(strongly) is None
    independent = ar1_level(200, 0.0, rng)
    assert steady.precision_interval(independent) is not None

"""A host's noise floor (`innomatrix noise`): measured from repeated trials, kept in host.json,
found by later runs of the same host and device, and used to judge 1 trial a side — with
known answers: A/A is mostly "no difference", a large effect is found with the right sign."""

from __future__ import annotations

import datetime as dt
import json
import math
import random
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from innomatrix import cli, frame, report, stats
from innomatrix.report import noise_floors
from trees import Trial, steady, write_trial

NOW = dt.datetime(2026, 11, 25, 16, 0, tzinfo=dt.timezone.utc)
DEVICE = "wwn:eui.0025388b91b2c3d4"


def host_json(run: Path, host: str, device: str = DEVICE) -> None:
    (run / host).mkdir(parents=True, exist_ok=True)
    (run / host / "host.json").write_text(json.dumps({"schema": 1, "host": host, "sessions": [
        {"started": "2026-11-25T10:00:00Z", "device": {"path": "/dev/nvme1n1", "identity": device}}]}))


def repeated_run(run: Path, level: float, repeats: int, run_to_run: float = 0.04, seed: int = 0,
                 hosts: tuple[str, ...] = ("db1",), device: str = DEVICE) -> Path:
    """One configuration per host, `repeats` trials, each moved by a lognormal run-to-run drift."""
    between = random.Random(seed)
    for host in hosts:
        for repeat in range(1, repeats + 1):
            drift = math.exp(between.gauss(0.0, run_to_run))
            write_trial(run, Trial(tps=steady(30, level * drift, 0.02, seed=seed * 100 + repeat), host=host,
                                   repeat=repeat, warmup_s=5, seed=seed * 100 + repeat))
        host_json(run, host, device)
    return run


def floor(sd_log: float = 0.04, df: int = 7, host: str = "db1", device: str = DEVICE, run: str = "noise") -> stats.HostFloor:
    return stats.HostFloor(host=host, device=device, sd_log=sd_log, df=df, trials=df + 1, run=run,
                           measured="2026-11-25T16:00:00Z")


# --- the verdict with a floor (pure) -------------------------------------------------------------

def test_one_trial_a_side_gets_a_verdict_only_with_a_floor():
    a, b = np.array([1000.0]), np.array([700.0])
    assert stats.between_runs(a, b).verdict == stats.UNKNOWN
    known = stats.between_runs(a, b, floors=(floor(), floor()))
    assert known.verdict == stats.DIFFERS and known.ratio == pytest.approx(1000 / 700)
    # The interval is t(df of the floor) x sd x sqrt(1/1 + 1/1), around the log ratio.
    half = 2.3646 * 0.04 * math.sqrt(2)
    assert math.log(known.high / known.ratio) == pytest.approx(half, rel=1e-3)
    assert math.log(known.ratio / known.low) == pytest.approx(half, rel=1e-3)


def test_a_floor_never_replaces_the_trials_own_spread():
    a, b = np.array([1000.0, 1100.0, 900.0]), np.array([990.0, 1080.0, 950.0])
    assert stats.between_runs(a, b, floors=(floor(sd_log=1e-6), floor(sd_log=1e-6))) == stats.between_runs(a, b)


def test_two_floors_combine_and_one_floor_on_both_sides_keeps_its_own_degrees_of_freedom():
    a, b = np.array([1000.0]), np.array([900.0])
    same = stats.between_runs(a, b, floors=(floor(), floor()))
    other = stats.between_runs(a, b, floors=(floor(), floor(host="db2")))
    # Equal spreads, two estimates: Welch-Satterthwaite gives 14 degrees, a narrower interval.
    assert other.high < same.high and other.low > same.low


def test_aa_with_a_floor_says_no_difference_about_95_percent_of_the_time():
    rng = np.random.default_rng(7)
    sd_log, trials = 0.05, 8
    verdicts = []
    for _ in range(2000):
        # The floor measured from its own 8 trials, then one A/A pair of the same noise judged by it.
        measured = float(np.std(rng.normal(0.0, sd_log, trials), ddof=1))
        pair = np.exp(rng.normal(math.log(1000.0), sd_log, 2))
        verdicts.append(stats.between_runs(pair[:1], pair[1:], floors=(floor(measured, trials - 1),) * 2).differs)
    assert 0.02 <= sum(verdicts) / len(verdicts) <= 0.08


def test_a_known_large_effect_is_found_every_time_with_the_right_sign():
    rng = np.random.default_rng(8)
    sd_log = 0.03
    for _ in range(200):
        measured = float(np.std(rng.normal(0.0, sd_log, 8), ddof=1))
        fast = np.exp(rng.normal(math.log(1500.0), sd_log, 1))
        slow = np.exp(rng.normal(math.log(1000.0), sd_log, 1))
        verdict = stats.between_runs(fast, slow, floors=(floor(measured),) * 2)
        assert verdict.differs and verdict.low > 1, verdict


def test_minimum_detectable_effect_at_one_trial_needs_the_floors_degrees_of_freedom():
    assert math.isnan(stats.minimum_detectable_effect(0.04, 1))
    assert stats.minimum_detectable_effect(0.04, 1, df=7) == pytest.approx(math.exp(2.3646 * 0.04 * math.sqrt(2)) - 1,
                                                                           rel=1e-3)


# --- measured, kept and found (files) ------------------------------------------------------------

def noise_runs(results: Path, name: str, runs: int, level: float = 1000.0, repeats: int = 3, seed: int = 0,
               **options) -> list[Path]:
    """`runs` unchanged runs of one configuration, as `innomatrix noise` wants them."""
    return [repeated_run(results / f"{name}-{index}", level, repeats, seed=seed * 10 + index, **options)
            for index in range(1, runs + 1)]


def test_noise_records_the_floor_in_each_runs_host_json_and_keeps_every_session(tmp_path):
    runs = noise_runs(tmp_path, "noise", 2)
    recorded = report.noise(*runs, now=NOW)
    [found] = recorded.floors
    medians = np.concatenate([stats.cells(frame.load(run))["throughput_median"].to_numpy() for run in runs])
    assert found.sd_log == pytest.approx(float(np.std(np.log(medians), ddof=1)))
    # How far a whole run moves is known from the runs only: 2 runs, 1 degree of freedom.
    assert (found.df, found.trials, found.device, found.run) == (1, 6, DEVICE, "noise-1+noise-2")
    for run in runs:
        kept = json.loads((run / "db1" / "host.json").read_text())
        assert len(kept["sessions"]) == 1 and kept["noise_floor"]["measured"] == "2026-11-25T16:00:00Z"
        assert kept["noise_floor"]["configurations"] == ["xfs/oltp/A/64M/2"]
    assert recorded.lines[0].startswith(f"db1: run-to-run CoV of the trial medians {found.cov:.1%} from 6 trials")
    assert "1 trial a side ±" in recorded.lines[1]


@pytest.mark.parametrize(("runs", "repeats", "drop_host_json", "message"), [
    (1, 5, False, "db1 ran in 1 of these runs; a floor needs two or more (a whole run moves too)"),
    (2, 1, False, "db1 has no configuration with 3 trials that ended ok (at most 2); run one configuration with repeats=3 or more in two or more runs"),
    (2, 3, True, "host.json: missing; the noise floor belongs to a host and a device"),
])
def test_runs_that_cannot_give_a_floor_are_a_one_line_error(tmp_path, capsys, runs, repeats, drop_host_json, message):
    made = noise_runs(tmp_path, "noise", runs, repeats=repeats)
    if drop_host_json:
        (made[0] / "db1" / "host.json").unlink()
    assert cli.main(["noise", *map(str, made)]) == 2
    _, err = capsys.readouterr()
    [error] = [line for line in err.splitlines() if ": loaded " not in line]  # progress aside: one line
    assert message in error, err


def test_a_floor_from_two_runs_holds_how_far_a_whole_run_moves(tmp_path):
    first = repeated_run(tmp_path / "noise-1", 1000.0, repeats=4, run_to_run=0.01, seed=1)
    second = repeated_run(tmp_path / "noise-2", 1100.0, repeats=4, run_to_run=0.01, seed=2)  # the whole run 10 % up
    across = report.noise(first, second, now=NOW).floors[0]
    within, _, _, _ = stats.pooled_spread(stats.cells(frame.load(first)))
    assert across.sd_log > 3 * within


def test_runs_of_one_host_on_two_devices_give_no_floor(tmp_path, capsys):
    first = repeated_run(tmp_path / "noise-1", 1000.0, repeats=3, seed=1)
    second = repeated_run(tmp_path / "noise-2", 1000.0, repeats=3, seed=2, device="ata:SATA-SSD-1")
    assert cli.main(["noise", str(first), str(second)]) == 2
    _, err = capsys.readouterr()
    assert (f"db1 ran on more than one device in these runs ({DEVICE} in noise-1, ata:SATA-SSD-1 in noise-2): "
            "a floor belongs to one device") in err
    assert "noise_floor" not in json.loads((first / "db1" / "host.json").read_text())


def test_later_runs_find_the_newest_floor_of_their_host_and_device_only(tmp_path):
    results = tmp_path / "results"
    report.noise(*noise_runs(results, "noise-old", 2, seed=1, run_to_run=0.10), now=NOW - dt.timedelta(days=1))
    report.noise(*noise_runs(results, "noise-new", 2, seed=2, run_to_run=0.02), now=NOW)
    report.noise(*noise_runs(results, "noise-sata", 2, seed=3, device="ata:SATA-SSD-1"), now=NOW + dt.timedelta(days=1))
    single = repeated_run(results / "single", 1000.0, repeats=1, seed=4)
    floors = noise_floors.floors_for(single, ["db1"])
    assert floors["db1"].run == "noise-new-1+noise-new-2"
    elsewhere = repeated_run(tmp_path / "elsewhere" / "single", 1000.0, repeats=1, seed=5)
    assert noise_floors.floors_for(elsewhere, ["db1"]) == {}


def test_compare_of_one_trial_runs_judges_by_the_floor_and_says_so(tmp_path, capsys):
    results = tmp_path / "results"
    report.noise(*noise_runs(results, "noise", 5, run_to_run=0.03), now=NOW)
    repeated_run(results / "fast", 1500.0, repeats=1, seed=11)
    repeated_run(results / "slow", 1000.0, repeats=1, seed=12)
    assert cli.main(["compare", str(results / "fast"), str(results / "slow")]) == 0
    out, _ = capsys.readouterr()
    lines = out.splitlines()
    assert lines[0] == "1 matching configurations, 1 differ (95 % CI excludes 1)"
    assert "host floors (innomatrix noise), which judge 1 trial a side: db1: CoV" in lines[1]
    assert "differs (host noise floor)" in out
    [row] = pd.read_csv(results / "fast" / "compare-slow" / "compare.csv").to_dict("records")
    assert row["interval_from"] == "host noise floor" and row["verdict"] == "differs"
    assert row["ratio"] == pytest.approx(1.5, rel=0.05) and row["ci_low"] > 1


def test_host_vs_host_with_one_trial_each_is_judged_by_both_hosts_floors(tmp_path, capsys):
    results = tmp_path / "results"
    report.noise(*noise_runs(results, "noise", 3, hosts=("db1", "db2")), now=NOW)
    repeated_run(results / "fleet", 1000.0, repeats=1, hosts=("db1", "db2"), seed=21)
    assert cli.main(["compare", str(results / "fleet"), "--by", "host"]) == 0
    out, _ = capsys.readouterr()
    assert out.splitlines()[0] == "host vs host db1 / db2: 1 matching configurations, 0 differ (95 % CI excludes 1)"
    [row] = pd.read_csv(results / "fleet" / "compare-hosts" / "host_compare.csv").to_dict("records")
    assert row["interval_from"] == "host noise floor" and row["verdict"] == "no difference"


def test_without_a_floor_one_trial_a_side_still_gets_no_verdict(tmp_path, capsys):
    results = tmp_path / "results"
    repeated_run(results / "fast", 1500.0, repeats=1, seed=11)
    repeated_run(results / "slow", 1000.0, repeats=1, seed=12)
    assert cli.main(["compare", str(results / "fast"), str(results / "slow")]) == 0
    out, _ = capsys.readouterr()
    assert out.splitlines()[0].endswith("1 without a verdict (1 trial on a side: run-to-run variance unknown)")

"""A host's noise floor (`innomatrix noise`): measured from repeated trials, kept in host.json,
found by later runs of the same host and device, and used to judge 1 trial a side — with
known answers: A/A is mostly "no difference", a large effect is found with the right sign."""

from __future__ import annotations

import datetime as dt
import json
import math
import random
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from innomatrix import cli, frame, report, stats
from scipy.stats import t as student_t
from innomatrix.report import noise_floors
from trees import Trial, steady, write_trial

NOW = dt.datetime(2026, 11, 25, 16, 0, tzinfo=dt.timezone.utc)
DEVICE = "wwn:eui.0025388b91b2c3d4"


# The disks of a layout run (a slow disk and a flash device), by identity, in the host's order.
MEMBERS = ("virtio:im-hdd", "nvme:im-flash")


def host_json(run: Path, host: str, device: str = DEVICE, members: tuple[str, ...] = ()) -> None:
    (run / host).mkdir(parents=True, exist_ok=True)
    # A run of layouts only names no plain device (the preflight's empty identity).
    session = {"started": "2026-11-25T10:00:00Z",
               "device": {"path": "/dev/nvme1n1", "identity": device} if not members else {"path": "", "identity": ""},
               "members": [{"path": f"/dev/disk/by-id/{identity}", "identity": identity} for identity in members]}
    (run / host / "host.json").write_text(json.dumps({"schema": 1, "host": host, "sessions": [session]}))


def repeated_run(run: Path, level: float, repeats: int, run_to_run: float = 0.04, seed: int = 0,
                 hosts: tuple[str, ...] = ("db1",), device: str = DEVICE, layout: str = stats.PLAIN,
                 members: tuple[str, ...] = ()) -> Path:
    """One configuration per host, `repeats` trials, each moved by a lognormal run-to-run drift; on
    the plain device, or on `layout` over `members` (identities)."""
    between = random.Random(seed)
    for host in hosts:
        for repeat in range(1, repeats + 1):
            drift = math.exp(between.gauss(0.0, run_to_run))
            write_trial(run, Trial(tps=steady(30, level * drift, 0.02, seed=seed * 100 + repeat), host=host,
                                   repeat=repeat, warmup_s=5, seed=seed * 100 + repeat, layout=layout,
                                   members=len(members) or 1))
        host_json(run, host, device, members)
    return run


SERVER = "mariadb 10.11"  # what synth.py's trials ran
KEY = ("db1", "oltp", SERVER, stats.PLAIN)


def floor(sd_log: float = 0.04, df: int = 7, host: str = "db1", device: str = DEVICE, run: str = "noise",
          workload: str = "oltp", server: str = SERVER) -> stats.HostFloor:
    return stats.HostFloor(host=host, device=device, sd_log=sd_log, df=df, trials=df + 1, run=run,
                           measured="2026-11-25T16:00:00Z", workload=workload, server=server)


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


def test_a_side_of_one_trial_takes_the_floor_and_the_other_side_keeps_its_own_spread():
    a, b = np.array([1000.0]), np.array([1000.0, 1100.0, 900.0])
    tiny = floor(sd_log=1e-4)
    verdict = stats.between_runs(a, b, floors=(tiny, tiny))
    own = float(np.var(np.log(b), ddof=1)) / 3
    parts = [(tiny.sd_log ** 2, tiny.df), (own, 2)]
    variance = sum(value for value, _ in parts)
    df = variance ** 2 / sum(value ** 2 / degrees for value, degrees in parts)
    half = student_t.ppf(0.975, df) * math.sqrt(variance)
    # Not the tiny floor's interval on both sides: the 3 trials' 10 % spread stays in it.
    assert math.log(verdict.high / verdict.ratio) == pytest.approx(half, rel=1e-9)
    assert verdict.verdict == stats.SAME and verdict.source == stats.FROM_FLOORS


def test_two_floors_combine_and_one_floor_on_both_sides_keeps_its_own_degrees_of_freedom():
    # Within one run, 1 trial a side: the floors are the whole interval.
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


# --- two runs: each run moves as a whole ----------------------------------------------------------

def test_two_runs_without_floors_get_no_verdict_from_their_trials_however_far_apart():
    # Three trials a side that agree within 1 %, 30 % apart: within each run that is clear, but the
    # runs themselves may have moved (two unchanged runs of the demo here: 8 %).
    a, b = np.array([1300.0, 1310.0, 1295.0]), np.array([1000.0, 1005.0, 995.0])
    verdict = stats.between_runs(a, b, across_runs=True)
    assert verdict.verdict == stats.DRIFT_UNKNOWN and not verdict.differs
    assert verdict.low > 1  # the trials' interval is shown, and is not a verdict
    assert stats.between_runs(a, b, floors=(floor(), None), across_runs=True).verdict == stats.DRIFT_UNKNOWN


def test_with_both_runs_floors_each_run_adds_its_drift_once():
    a, b = np.array([1100.0, 1120.0, 1090.0]), np.array([1000.0, 1010.0, 990.0])
    measured = floor(sd_log=0.05, df=4)
    across = stats.between_runs(a, b, floors=(measured, measured), across_runs=True)
    within = stats.between_runs(a, b)
    assert across.source == stats.FROM_DRIFT and across.high > within.high and across.low < within.low
    parts = [(float(np.var(np.log(a), ddof=1)) / 3, 2), (float(np.var(np.log(b), ddof=1)) / 3, 2),
             (2 * measured.sd_log ** 2, measured.df)]  # one floor on both sides: one estimate, counted once
    variance = sum(value for value, _ in parts)
    df = variance ** 2 / sum(value ** 2 / degrees for value, degrees in parts)
    assert math.log(across.high / across.ratio) == pytest.approx(student_t.ppf(0.975, df) * math.sqrt(variance),
                                                                rel=1e-9)


def _floor_of_runs(rng: np.random.Generator, runs: int, trials: int, run_sd: float, trial_sd: float) -> stats.HostFloor:
    """What `noise` measures from `runs` unchanged runs of one configuration: the spread of every
    trial around the configuration's mean, with runs - 1 degrees of freedom."""
    logs = np.concatenate([rng.normal(rng.normal(0, run_sd), trial_sd, trials) for _ in range(runs)])
    return floor(sd_log=float(np.std(logs, ddof=1)), df=runs - 1)


@pytest.mark.parametrize("runs", [3, 5])
def test_aa_of_two_runs_judged_with_their_drift_says_no_difference_about_95_percent_of_the_time(runs):
    # Runs move as a whole by 5 %, trials within a run by 2 %: the demo's shape (issue #28's A/A:
    # 1 of 4 configurations "differed" between two unchanged runs when drift was left out).
    rng = np.random.default_rng(28 + runs)
    run_sd, trial_sd, trials = 0.05, 0.02, 3
    verdicts, within = [], []
    for _ in range(2000):
        measured = _floor_of_runs(rng, runs, trials, run_sd, trial_sd)
        a = np.exp(rng.normal(rng.normal(0, run_sd), trial_sd, trials) + math.log(1000.0))
        b = np.exp(rng.normal(rng.normal(0, run_sd), trial_sd, trials) + math.log(1000.0))
        verdicts.append(stats.between_runs(a, b, floors=(measured, measured), across_runs=True).differs)
        within.append(stats.between_runs(a, b).differs)
    assert sum(verdicts) / len(verdicts) <= 0.06
    assert sum(within) / len(within) > 0.3  # what the trials alone would have said: drift read as a difference


def test_a_large_effect_between_two_runs_is_found_with_its_drift_and_the_right_sign():
    rng = np.random.default_rng(9)
    found = 0
    for _ in range(500):
        measured = _floor_of_runs(rng, 5, 3, 0.03, 0.02)
        fast = np.exp(rng.normal(rng.normal(0, 0.03), 0.02, 3) + math.log(1500.0))
        slow = np.exp(rng.normal(rng.normal(0, 0.03), 0.02, 3) + math.log(1000.0))
        verdict = stats.between_runs(fast, slow, floors=(measured, measured), across_runs=True)
        assert not (verdict.differs and verdict.high < 1)  # never the wrong sign
        found += verdict.differs
    assert found / 500 >= 0.95


def test_a_floor_judges_only_the_workload_and_server_it_was_measured_with():
    def one_trial(workload: str, server: str, level: float) -> pd.DataFrame:
        return pd.DataFrame([{"host": "db1", "layout": "plain", "members": 1, "filesystem": "xfs", "workload": workload,
                              "variant": "A", "bp_size": "64M", "subtest": "-", "block_size": "-", "threads": 2, "rate": 0, "status": "ok",
                              "throughput_median": level, "trial": f"{workload}-{server}-{level}", "flags": "",
                              "unit": "tps", "server": server, "bp_bytes": 64 << 20, "block_bytes": -1}])

    floors = {KEY: floor()}  # measured with OLTP on MariaDB 10.11
    for workload, server, verdict in (("oltp", SERVER, stats.DIFFERS), ("tpcc", SERVER, stats.UNKNOWN),
                                      ("oltp", "mysql 9.7", stats.UNKNOWN), ("oltp", "mariadb 11.8", stats.UNKNOWN)):
        [row] = stats.compare(one_trial(workload, server, 1500.0), one_trial(workload, server, 1000.0),
                              floors_a=floors, floors_b=floors).to_dict("records")
        assert row["verdict"] == verdict, (workload, server, row)


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
    assert (found.workload, found.server, found.layout) == ("oltp", SERVER, stats.PLAIN)
    for run in runs:
        kept = json.loads((run / "db1" / "host.json").read_text())
        [entry] = kept["noise_floors"]
        assert len(kept["sessions"]) == 1 and entry["measured"] == "2026-11-25T16:00:00Z"
        assert entry["configurations"] == ["xfs/oltp/A/64M/2"]
        assert (entry["workload"], entry["server"], entry["layout"]) == ("oltp", SERVER, "plain")
    assert recorded.lines[0].startswith(f"db1 (oltp, {SERVER}): run-to-run CoV of the trial medians {found.cov:.1%} "
                                        "from 6 trials")
    assert "1 trial a side ±" in recorded.lines[1]


def test_noise_of_a_few_transactions_a_second_says_the_step_not_the_floor_sets_what_can_show(tmp_path):
    # 4 tps at 1 s intervals: a median's step is 25 % of it, the trials' spread a few %.
    recorded = report.noise(*noise_runs(tmp_path / "slow", "noise", 3, level=4.0, run_to_run=0.02), now=NOW)
    [line] = [line for line in recorded.lines if "steps of" in line]
    shown = re.fullmatch(r"  its trial medians move in steps of (\d+\.\d)% of the median .* within ±(\d+\.\d)%", line)
    assert shown and 24 <= float(shown[1]) <= 26, line  # the medians are near 4, each step 1
    # identical medians a side, judged by the floor and half a step each: the interval's edge
    [found] = recorded.floors
    step = np.array([float(shown[1]) / 100])
    edge = stats.between_runs(np.ones(1), np.ones(1), floors=(found, found), steps=(step, step)).high - 1
    assert float(shown[2]) == pytest.approx(edge * 100, abs=0.2) and edge > 0.25
    # at 1000 tps the step is nothing beside the floor: no such line
    assert not any("steps of" in line for line in report.noise(*noise_runs(tmp_path / "fast", "noise", 3), now=NOW).lines)


def test_a_new_floor_replaces_its_own_kind_only(tmp_path):
    runs = noise_runs(tmp_path, "noise", 2)
    host_json_path = runs[0] / "db1" / "host.json"
    record = json.loads(host_json_path.read_text())
    other = {"device": DEVICE, "workload": "tpcc", "server": SERVER, "layout": "plain", "sd_log": 0.1, "df": 2,
             "trials": 9, "run": "tpcc-noise", "measured": "2026-11-20T00:00:00Z"}
    host_json_path.write_text(json.dumps({**record, "noise_floors": [other]}))
    report.noise(*runs, now=NOW)
    report.noise(*runs, now=NOW + dt.timedelta(hours=1))
    kept = json.loads(host_json_path.read_text())["noise_floors"]
    assert [entry["workload"] for entry in kept] == ["tpcc", "oltp"]
    assert kept[1]["measured"] == "2026-11-25T17:00:00Z"


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


def test_runs_whose_ok_trials_are_in_one_run_only_are_a_one_line_error(tmp_path, capsys):
    """Two runs, but every ok trial in the first: no workload and server has a floor, and noise says so
    rather than recording nothing and exiting 0."""
    first = repeated_run(tmp_path / "noise-1", 1000.0, repeats=3, seed=1)
    second = tmp_path / "noise-2"
    for repeat in range(1, 4):
        write_trial(second, Trial(tps=steady(30, 1000.0, 0.02, seed=repeat), host="db1", repeat=repeat, warmup_s=5,
                                  status="failed", reasons=("the server died",), seed=repeat))
    host_json(second, "db1")
    assert cli.main(["noise", str(first), str(second)]) == 2
    _, err = capsys.readouterr()
    [error] = [line for line in err.splitlines() if ": loaded " not in line]
    assert f"db1 has no workload and server with 3 ok trials of one configuration in two or more runs (oltp on {SERVER}: " \
           "ok in 1 run(s), at most 3 trials of one configuration)" in error, err
    assert "noise_floors" not in json.loads((first / "db1" / "host.json").read_text())


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
    assert list(floors) == [KEY] and floors[KEY].run == "noise-new-1+noise-new-2"
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
    assert (f"host floors (innomatrix noise), which judge 1 trial a side and the drift between runs: db1 (oltp, "
            f"{SERVER}): CoV") in lines[1]
    assert "differs (host noise floor: run drift)" in out
    [row] = pd.read_csv(results / "fast" / "compare-slow" / "compare.csv").to_dict("records")
    # Two runs: each side's one trial and each run's drift, both from the floor.
    assert row["interval_from"] == stats.FROM_DRIFT and row["verdict"] == "differs"
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


def test_the_floor_is_of_closed_loop_cells_only_a_fixed_rate_cells_throughput_is_its_offered_rate(tmp_path):
    runs = noise_runs(tmp_path, "noise", 2)
    for index, run in enumerate(runs):
        for repeat in (1, 2, 3):  # it completed what was offered, near enough the same every run
            write_trial(run, Trial(tps=steady(30, 500.0 + index, 0.001, seed=repeat), host="db1", rate=500, repeat=repeat,
                                   warmup_s=5, seed=900 + 10 * index + repeat))
    closed = [stats.cells(frame.load(run)) for run in runs]
    medians = np.concatenate([cells.loc[cells["rate"] == 0, "throughput_median"].to_numpy() for cells in closed])
    assert sum(len(cells) for cells in closed) == 12  # the fixed-rate trials are in the runs
    [found] = report.noise(*runs, now=NOW).floors
    assert found.sd_log == pytest.approx(float(np.std(np.log(medians), ddof=1)))
    assert found.trials == 6
    [entry] = json.loads((runs[0] / "db1" / "host.json").read_text())["noise_floors"]
    assert entry["configurations"] == ["xfs/oltp/A/64M/2"]


# --- a layout's floor: its members, not the plain device ----------------------------------------

BACKING = {"layout": "lvm-backing-only", "members": MEMBERS}


def test_a_layout_gets_its_own_floor_over_its_members_and_it_judges_that_layout_only(tmp_path, capsys):
    # bench/layouts.py cache-aa: the disk alone (a linear volume on a throttled disk) run five times;
    # noise on three, the last two compared. Before layouts had floors, noise said no configuration
    # had 3 ok trials, of 15.
    results = tmp_path / "results"
    recorded = report.noise(*noise_runs(results, "aa", 3, run_to_run=0.01, **BACKING), now=NOW)
    [found] = recorded.floors
    assert (found.layout, found.device) == ("lvm-backing-only", "members:virtio:im-hdd,nvme:im-flash")
    assert recorded.lines[0].startswith(f"db1 (oltp, {SERVER}, lvm-backing-only): run-to-run CoV")
    assert json.loads((results / "aa-1" / "db1" / "host.json").read_text())["noise_floors"][0]["layout"] == \
        "lvm-backing-only"
    # One trial a side across two runs: judged by the layout's floor (each side's spread and drift).
    repeated_run(results / "again", 1000.0, repeats=1, seed=31, **BACKING)
    repeated_run(results / "slower", 500.0, repeats=1, seed=32, **BACKING)
    repeated_run(results / "plain-again", 1000.0, repeats=1, seed=33)
    repeated_run(results / "plain-slower", 500.0, repeats=1, seed=34)
    for a, b, verdict in (("again", "slower", stats.DIFFERS), ("plain-again", "plain-slower", stats.UNKNOWN)):
        [row] = report.compare(results / a, results / b).cells.to_dict("records")
        assert row["verdict"] == verdict and row["ratio"] == pytest.approx(2, rel=0.1), (a, b, row)


def test_a_layout_in_one_run_only_gets_no_floor_and_noise_says_why(tmp_path):
    # test_vm_layouts.py's A/A: the run with the disk alone and the writeback cache, then two more
    # of the disk alone. The disk gets its floor; the cache, in one run only, none, and a line says so.
    results = tmp_path / "results"
    runs = noise_runs(results, "aa", 3, run_to_run=0.01, **BACKING)
    repeated_run(runs[0], 3000.0, repeats=3, seed=40, layout="lvm-cache-writeback", members=MEMBERS)
    recorded = report.noise(*runs, now=NOW)
    assert [found.layout for found in recorded.floors] == ["lvm-backing-only"]
    [line] = [line for line in recorded.lines if line.startswith("no floor for ")]
    assert line == (f"no floor for db1: oltp on {SERVER} (lvm-cache-writeback): ok in 1 run(s), at most 3 trials of "
                    "one configuration; a floor needs 3 ok trials of one configuration in two or more runs"), line
    assert recorded.lines[-1].startswith("Runs beside these")
    # Runs of one layout with enough of everything: no such line.
    assert not [line for line in report.noise(*runs[1:], now=NOW).lines if line.startswith("no floor")]


def test_an_unchanged_layout_compared_across_runs_by_its_floor_is_mostly_no_difference(tmp_path):
    results = tmp_path / "results"
    report.noise(*noise_runs(results, "aa", 3, run_to_run=0.03, seed=5, **BACKING), now=NOW)
    verdicts = []
    for pair in range(10):
        a, b = (repeated_run(results / f"pair{pair}-{side}", 1000.0, repeats=3, run_to_run=0.03, seed=100 + 2 * pair + side,
                             **BACKING) for side in (0, 1))
        [row] = report.compare(a, b).cells.to_dict("records")
        assert row["interval_from"] == stats.FROM_DRIFT, row
        verdicts.append(row["verdict"])
    assert verdicts.count(stats.DIFFERS) <= 2, verdicts


@pytest.mark.parametrize(("second", "message"), [
    ({"members": ("virtio:im-other", "nvme:im-flash")},
     "db1 ran lvm-backing-only on more than one device in these runs (members:virtio:im-hdd,nvme:im-flash in aa-1, "
     "members:virtio:im-other,nvme:im-flash in aa-2): a floor belongs to one device"),
    ({"members": ("virtio:im-hdd", "")}, "the latest session names no members, or a member without its identity"),
])
def test_a_layout_run_on_other_disks_or_without_its_members_gives_no_floor(tmp_path, capsys, second, message):
    first = repeated_run(tmp_path / "aa-1", 1000.0, repeats=3, seed=1, **BACKING)
    repeated_run(tmp_path / "aa-2", 1000.0, repeats=3, seed=2, **{**BACKING, **second})
    assert cli.main(["noise", str(first), str(tmp_path / "aa-2")]) == 2
    _, err = capsys.readouterr()
    [error] = [line for line in err.splitlines() if ": loaded " not in line]
    assert message in error, err
    assert "noise_floors" not in json.loads((first / "db1" / "host.json").read_text())


# --- a median that moves in whole steps -----------------------------------------------------------

def test_a_medians_step_is_one_transaction_block_or_printed_digit_in_an_interval():
    assert stats.throughput_step("tps", 1, 0) == 1.0 and stats.throughput_step("tps", 10, 0) == 0.1
    assert stats.throughput_step("tpmC", 10, 0) == 6.0
    assert stats.throughput_step("MiB/s", 1, 16384) == 1 / 64
    assert stats.throughput_step("MiB/s", 10, 4096) == stats.PRINTED_STEP  # sysbench prints 2 decimals
    assert math.isnan(stats.throughput_step("ops", 1, 0))


def _quantized_trial_medians(rng: np.random.Generator, rate: float, trials: int, spread: float = 0.08) -> np.ndarray:
    """Trials at a few transactions a second, as a throttled disk gives them: each trial's rate
    moves by `spread`, but its median of one-second counts is a whole number of transactions, so
    the movement shows only when it crosses half a step (the VM's disk alone at 150 IOPS read 13
    of 15 trial medians at 4.0 and two a step away, 3.0 and 4.98)."""
    return np.round(rate * np.exp(rng.normal(0, spread, trials)))


@pytest.mark.parametrize(("runs", "across_runs"), [(3, True), (3, False), (8, True), (8, False)])
def test_aa_of_medians_a_few_steps_wide_says_no_difference_about_95_percent_of_the_time(runs, across_runs):
    # The floor measured from `runs` runs of three such trials is often nothing at all (every median
    # 4.0: 622 of 2000 floors of three runs) or a fraction of a step. Judged by that floor alone, one
    # trial a side gets no verdict where the floor is nothing, and where it is a little more than
    # nothing, over many runs, reads a single step (25 %) as a difference: 145 of 2000 within a run
    # at eight runs. With the steps: a verdict every time, "differs" in 0.1-0.6 %.
    rng = np.random.default_rng(31)
    with_steps, floor_alone = [], []
    for _ in range(2000):
        logs = np.log(np.concatenate([_quantized_trial_medians(rng, 4.0, 3) for _ in range(runs)]))
        measured = floor(sd_log=float(np.std(logs, ddof=1)), df=runs - 1)
        a, b = _quantized_trial_medians(rng, 4.0, 1), _quantized_trial_medians(rng, 4.0, 1)
        with_steps.append(stats.between_runs(a, b, floors=(measured, measured), across_runs=across_runs,
                                             steps=(np.ones(1), np.ones(1))).verdict)
        floor_alone.append(stats.between_runs(a, b, floors=(measured, measured), across_runs=across_runs).verdict)
    print(f"A/A at 4 tps, one trial a side, floor of {runs} runs, across runs {across_runs}: differs in "
          f"{with_steps.count(stats.DIFFERS)} of 2000 with the steps; by the floor alone "
          f"{floor_alone.count(stats.DIFFERS)}, no verdict {floor_alone.count(stats.NO_SPREAD)}")
    assert with_steps.count(stats.DIFFERS) / 2000 <= 0.06 and stats.NO_SPREAD not in with_steps
    # without the steps it would not hold: no verdict for many, or a step read as a difference
    assert floor_alone.count(stats.NO_SPREAD) / 2000 > 0.03 or floor_alone.count(stats.DIFFERS) / 2000 > 0.06


def test_a_known_large_effect_a_few_steps_wide_is_still_found_with_the_right_sign():
    # The VM's cache against its slow disk: 3 × 4 tps, one trial a side, and three a side.
    rng = np.random.default_rng(32)
    for trials in (1, 3):
        found = 0
        for _ in range(500):
            logs = np.log(np.concatenate([_quantized_trial_medians(rng, 4.0, 3) for _ in range(3)]))
            measured = floor(sd_log=float(np.std(logs, ddof=1)), df=2)
            fast, slow = _quantized_trial_medians(rng, 12.0, trials), _quantized_trial_medians(rng, 4.0, trials)
            verdict = stats.between_runs(fast, slow, floors=(measured, measured), across_runs=True,
                                         steps=(np.ones(trials), np.ones(trials)))
            assert not (verdict.differs and verdict.high < 1), verdict  # never the wrong sign
            found += verdict.differs
        print(f"3x at 4 tps, {trials} trial(s) a side: found in {found} of 500")
        assert found / 500 >= 0.95, (trials, found)


def test_identical_medians_with_their_steps_get_an_interval_and_a_verdict():
    # Three trials a side of 4.0 tps: no spread of their own, but a median of 4 at 1 s intervals is
    # good to half a transaction; without steps (a unit with none) nothing can be said.
    same = np.array([4.0, 4.0, 4.0])
    assert stats.between_runs(same, same).verdict == stats.NO_SPREAD
    verdict = stats.between_runs(same, same, steps=(np.ones(3), np.ones(3)))
    assert verdict.verdict == stats.SAME and verdict.ratio == 1.0
    half = 1.959964 * math.sqrt(2 * (0.5 / 4) ** 2 / 3)  # the steps are known: infinite degrees of freedom
    assert math.log(verdict.high) == pytest.approx(half, rel=1e-5)
    assert stats.between_runs(same, same * 1.5, steps=(np.ones(3), np.ones(3))).verdict == stats.DIFFERS


def test_a_verdict_whose_interval_is_mostly_the_medians_steps_says_so(tmp_path):
    # Two runs of 4 tps at 1 s intervals, each of 3 trials a few % apart: half a transaction in each
    # median is most of the interval, and the compare table says so, with what would narrow it. At
    # 400 tps the step is nothing beside the trials' spread.
    for level, mostly in ((4.0, True), (400.0, False)):
        a = repeated_run(tmp_path / f"a-{level:g}", level, 3, run_to_run=0.02, seed=1)
        b = repeated_run(tmp_path / f"b-{level:g}", level, 3, run_to_run=0.02, seed=2)
        report.compare(a, b, say=lambda line: None)
        out = a / f"compare-{b.name}"
        [row] = pd.read_csv(out / "compare.csv").to_dict("records")
        assert (row["steps_share"] > 0.5) is mostly, row
        shown = (out / "compare.md").read_text()
        assert ("mostly steps" in shown) is mostly and ("a longer report interval makes the steps finer" in shown) is mostly
        # ... and the noise line does not promise what the steps keep from showing
        said = re.search(r"at 3 trials a side, a difference within ±(\d+\.\d)% cannot show"
                         r"(?: \(±(\d+\.\d)% where the trial medians move in steps of (\d+\.\d)%\))?", shown)
        assert said and (said[2] is not None) is mostly, shown
        if mostly:
            assert float(said[2]) > 2 * float(said[1]) and 24 <= float(said[3]) <= 26, said[0]
    # The share: each side's half steps relative to its medians, over its trials squared, against the
    # trials' own variance of the mean of the logarithms.
    a, b = np.array([4.0, 4.1, 3.9]), np.array([4.0, 4.05, 3.95])
    steps = sum(float(((0.5 / side) ** 2).sum()) / 9 for side in (a, b))
    trials = sum(float(np.log(side).var(ddof=1)) / 3 for side in (a, b))
    verdict = stats.between_runs(a, b, steps=(np.ones(3), np.ones(3)))
    assert verdict.steps_share == pytest.approx(steps / (steps + trials)) and verdict.steps_share > 0.9
    assert stats.between_runs(a, b).steps_share == 0


def test_what_can_show_with_the_steps_is_what_a_verdict_on_identical_medians_gives():
    # minimum_detectable_effect with a step is the edge of between_runs' interval around identical
    # medians: 1 trial a side judged by a floor, and 3 a side by their own spread.
    measured = floor(sd_log=0.01, df=2)
    for step in (0.0, 0.05, 0.25):
        edge = stats.between_runs(np.ones(1), np.ones(1), floors=(measured, measured),
                                  steps=(np.array([step]), np.array([step]))).high - 1
        assert stats.minimum_detectable_effect(0.01, 1, df=2, step=step) == pytest.approx(edge)
    a, b = np.exp([0.01, -0.01, 0.0]), np.exp([0.01, -0.01, 0.0])  # sd of the logs: 0.01
    edge = stats.between_runs(a, b, steps=(0.25 * a, 0.25 * b)).high - 1
    assert stats.minimum_detectable_effect(0.01, 3, step=0.25) == pytest.approx(edge)
    assert stats.minimum_detectable_effect(0.01, 3) < 0.05 < stats.minimum_detectable_effect(0.01, 3, step=0.25)
    assert stats.steps_matter(0.25, 0.01) and not stats.steps_matter(0.01, 0.04)
    assert not stats.steps_matter(float("nan"), 0.01) and not stats.steps_matter(0.25, float("nan"))

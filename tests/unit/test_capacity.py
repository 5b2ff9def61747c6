"""Capacity at the SLA, and verdicts between capacities: which side of the limit a rate surely
lies on, the bracket that makes, and when two brackets differ — within a run, and between runs
with each run's drift. Known answers by simulation: identical configurations are called different
rarely (A/A), a configuration with half the capacity is found lower, with the right sign."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from innomatrix import capacity, stats
from innomatrix.capacity import MET, MISSED, TOO_FEW, UNSURE, Bracket
from innomatrix.report import tables


def test_a_trial_is_sure_of_its_side_only_when_its_events_say_so_beyond_chance() -> None:
    def side(within: int, beyond: int, percentile: float = 99, saturated: bool = False) -> str:
        histogram = [(2.0, within), (40.0, beyond)] if within or beyond else []
        return capacity.trial_side(histogram, saturated, percentile, sla_ms=10)

    # p99: a trial right at the limit has 1 % of its events beyond it. 0.99^299 < 5 % < 0.99^298.
    assert capacity.fewest_events(99) == 299 and capacity.fewest_events(95) == 59
    assert capacity.fewest_events(100) is None
    assert side(299, 0) == MET and side(298, 0) == TOO_FEW
    # 24 events (2/s for 12 s): their "p99" is their slowest. None beyond: too few to tell; one beyond:
    # still not sure (a trial right at the limit shows one or more 21 % of the time); two: missed (2.4 %).
    assert (side(24, 0), side(23, 1), side(22, 2)) == (TOO_FEW, TOO_FEW, MISSED)
    # 720 events (60/s): at most 2 beyond (P ≤ 2.5 % at the limit) surely meets; 3 is unsure; 14 misses.
    assert (side(718, 2), side(717, 3), side(706, 14)) == (MET, UNSURE, MISSED)
    # ... though its own p99 (the 713th event) is within the limit with 3, 7 beyond.
    assert side(713, 7) == UNSURE
    assert side(1000, 0, saturated=True) == MISSED  # it fell behind: missed, whatever it measured
    assert side(0, 0) == UNSURE  # no histogram
    assert side(24, 0, percentile=100) == TOO_FEW and side(24, 1, percentile=100) == MISSED


def test_a_rate_is_sure_only_when_every_trial_is_sure_of_the_same_side() -> None:
    assert capacity.outcome([MET, MET, MET]) == MET
    assert capacity.outcome([MISSED] * 3) == MISSED
    assert capacity.outcome([MET, MISSED, MET]) == UNSURE
    assert capacity.outcome([MET, MET]) == UNSURE  # too few trials to be sure
    assert capacity.outcome([MET, UNSURE, MET]) == UNSURE
    assert capacity.outcome([TOO_FEW, TOO_FEW, TOO_FEW]) == TOO_FEW
    assert capacity.outcome([TOO_FEW, MET, MET]) == TOO_FEW  # not met, and says nothing against it
    assert capacity.outcome([TOO_FEW, MISSED, TOO_FEW]) == UNSURE  # one surely missed it


def test_each_end_of_the_bracket_stands_on_every_rate_beyond_it() -> None:
    rates = [100, 200, 400, 800]
    assert capacity.bracket(rates, [MET, MET, UNSURE, MISSED]) == Bracket(200, 800)
    assert capacity.bracket([800, 100, 400, 200], [MISSED, MET, UNSURE, MET]) == Bracket(200, 800)  # any order
    assert capacity.bracket(rates, [UNSURE] * 4) == capacity.UNKNOWN_BRACKET
    # a rate met above one missed: neither end stands beyond the disagreement
    assert capacity.bracket(rates, [MET, MISSED, MET, MISSED]) == Bracket(100, 800)
    assert capacity.bracket(rates, [UNSURE, MET, MET, MET]) == Bracket(None, None)
    # a rate of too few events says nothing of meeting: passed over by the met end, a stop for the missed one
    assert capacity.bracket(rates, [TOO_FEW, MET, MET, MISSED]) == Bracket(400, 800)
    assert capacity.bracket(rates, [TOO_FEW, MISSED, MISSED, MISSED]) == Bracket(None, 200)
    assert capacity.bracket(rates, [TOO_FEW, TOO_FEW, UNSURE, UNSURE]) == capacity.UNKNOWN_BRACKET
    assert Bracket(200, 800).describe() == "≥ 200 and < 800" and Bracket(None, 100).describe() == "< 100"


def test_within_a_run_one_surely_meeting_a_rate_the_other_surely_misses_differs() -> None:
    found = capacity.verdict(Bracket(200, 400), Bracket(100, 200), 200, 100)
    assert (found.verdict, found.ratio, found.low, found.high) == (stats.DIFFERS, 2.0, 1.0, 4.0)
    assert capacity.verdict(Bracket(100, 200), Bracket(200, None), 100, 200).high == 1.0  # the other sign
    assert capacity.verdict(Bracket(100, 200), Bracket(200, None), 100, 200).differs
    overlapping = capacity.verdict(Bracket(100, 400), Bracket(200, 800), 200, 400)
    assert overlapping.verdict == stats.SAME and overlapping.low < 1 < overlapping.high
    assert capacity.verdict(Bracket(None, None), Bracket(100, 200), None, 100).verdict == capacity.NOTHING_SURE
    unbounded = capacity.verdict(Bracket(400, None), Bracket(None, 100), 400, None)
    assert unbounded.differs and math.isnan(unbounded.ratio) and unbounded.high == math.inf


def _floor(sd_log: float, df: int = 2, host: str = "db1") -> stats.HostFloor:
    return stats.HostFloor(host=host, device="loop", sd_log=sd_log, df=df, trials=9, run="noise-1",
                           measured="2026-11-27T00:00:00Z", workload="oltp", server="mariadb 10.11")


def test_between_runs_the_bracket_must_clear_each_runs_drift_and_without_floors_there_is_no_verdict() -> None:
    a, b = Bracket(100, 200), Bracket(50, 100)  # A surely meets 100/s, B surely misses it
    assert capacity.verdict(a, b, 100, 50).differs  # in one run
    assert capacity.verdict(a, b, 100, 50, drift=None, across_runs=True).verdict == stats.DRIFT_UNKNOWN
    drift = capacity.run_drift(_floor(0.05), _floor(0.05))
    assert drift == pytest.approx(4.303 * math.sqrt(2) * 0.05, rel=1e-3)  # one floor for both: df 2
    found = capacity.verdict(a, b, 100, 50, drift, across_runs=True)
    assert found.verdict == stats.SAME and found.source == stats.FROM_DRIFT  # 100 ÷ 100 cannot clear any drift
    wide = capacity.verdict(Bracket(200, None), Bracket(None, 100), 200, None, drift, across_runs=True)
    assert wide.differs and wide.low == pytest.approx(2 / math.exp(drift))
    assert capacity.run_drift(_floor(0.05), None) is None
    assert capacity.run_drift(_floor(0.05), _floor(0.05, host="db2")) < drift  # two estimates: more df


SLA_MS, TRIALS, SECONDS = 10.0, 3, 12


def _trial(rng: np.random.Generator, capacity_tps: float, rate: int, spread: float) -> str:
    """One trial at a rate, judged by capacity.trial_side: `rate × SECONDS` events whose latency
    is exponential with its p99 growing as the rate nears the configuration's capacity (10 ms at
    `capacity_tps` exactly: 1 % of events beyond the limit there), each trial moving by `spread` on
    its own; a trial whose own capacity the rate exceeds by a fifth falls behind (saturated)."""
    own = math.exp(rng.normal(0, spread))
    load = rate / (capacity_tps * 1.25 * own)
    if load >= 0.96:
        return capacity.trial_side(None, True, 99, SLA_MS)
    p99 = 2.0 / (1 - load)  # 10 ms at load 0.8: the rate at the capacity
    share_beyond = 100 ** (-SLA_MS / p99)  # exponential: P(latency > x) = 100^(-x / p99)
    events = rate * SECONDS
    beyond = int(rng.binomial(events, share_beyond))
    return capacity.trial_side([(1.0, events - beyond), (2 * SLA_MS, beyond)], False, 99, SLA_MS)


def _bracket(rng: np.random.Generator, capacity_tps: float, rates: list[int], spread: float = 0.1) -> Bracket:
    outcomes = [capacity.outcome([_trial(rng, capacity_tps, rate, spread) for _ in range(TRIALS)]) for rate in rates]
    return capacity.bracket(rates, outcomes)


def _false_differs(rng: np.random.Generator, true: float, rates: list[int], spread: float, draws: int) -> float:
    return sum(capacity.verdict(_bracket(rng, true, rates, spread), _bracket(rng, true, rates, spread),
                                None, None).differs for _ in range(draws)) / draws


GRID = [50, 100, 150, 200, 250, 300]


def test_known_answers_identical_configurations_rarely_differ_and_half_the_capacity_is_found_lower() -> None:
    # Capacities between the grid's rates and right on one (the worst case: each trial a coin toss there).
    rng = np.random.default_rng(7)
    for true in (150.0, 175.0):
        assert _false_differs(rng, true, GRID, 0.1, 1000) <= 0.05, true
    found = [capacity.verdict(_bracket(rng, 100.0, GRID), _bracket(rng, 200.0, GRID), None, None)
             for _ in range(1000)]
    lower = sum(v.differs and v.high <= 1 for v in found) / 1000
    print(f"half the capacity found lower: {lower:.1%}")
    assert lower >= 0.95
    assert not any(v.differs and v.low >= 1 for v in found)  # never the wrong sign


def test_rates_closer_than_the_trials_spread_add_no_chance_of_a_false_difference() -> None:
    """Rates 5 % apart with trials 20 % apart put several rates in the band where trials disagree;
    judged one rate at a time, 13 % of A/A pairs differed (measured); each end of the bracket
    standing on every rate beyond it keeps them within the per-rate bound. README quotes these."""
    rng = np.random.default_rng(11)
    dense = list(range(120, 185, 7))
    sparse = _false_differs(rng, 150.0, GRID, 0.1, 2000)
    crowded = _false_differs(rng, 150.0, dense, 0.2, 2000)
    print(f"false differs: rates 50 apart, trials 10 %: {sparse:.1%}; rates 7 apart, trials 20 %: {crowded:.1%}")
    assert sparse <= 0.05 and crowded <= 0.05
    # and the dense grid still finds a capacity a third lower, with its sign
    found = [capacity.verdict(_bracket(rng, 110.0, dense, 0.2), _bracket(rng, 165.0, dense, 0.2), None, None)
             for _ in range(500)]
    print(f"dense grid, 110 ÷ 165 found lower: {sum(v.differs and v.high <= 1 for v in found) / 500:.1%}")
    assert not any(v.differs and v.low >= 1 for v in found)


def _configuration(variant: str, latency_by_rate: dict[int, float], saturated: set[int] = frozenset(),
                   storage: str = "plain", server: str = "mariadb 10.11", host: str = "db1",
                   model: str = "SAMSUNG MZQL23T8HCLS") -> pd.DataFrame:
    cells, histograms = [], {}
    for rate, latency in latency_by_rate.items():
        for repeat in (1, 2, 3):
            trial = f"{host}/{storage}/xfs/oltp/{variant}/bp-64M/t4-rate{rate}/r{repeat}"
            cells.append({"host": host, "layout": storage, "members": 1 if storage == "plain" else 2,
                          "filesystem": "xfs", "workload": "oltp", "server": server, "device_model": model,
                          "variant": variant, "bp_size": "64M", "threads": 4, "rate": rate, "repeat": repeat,
                          "status": "ok", "trial": trial, "throughput_median": rate * 0.99,
                          "flags": f"saturated at {rate}/s: completed …" if rate in saturated else "",
                          "saturated": rate in saturated, "flagged": rate in saturated})
            histograms[trial] = [(latency * (1 + repeat / 100), 990), (latency * 1.5, 10)]
    return pd.DataFrame(cells), histograms


def _capacities(*configurations: tuple[pd.DataFrame, dict]) -> tables.Table:
    cells = pd.concat([cells for cells, _ in configurations])
    histograms = {trial: h for _, hs in configurations for trial, h in hs.items()}
    return tables.capacity_at_sla(tables.fixed_rate(cells, histograms), stats.DEFAULTS)


def test_the_report_compares_configurations_that_differ_in_one_setting() -> None:
    fast = _configuration("A", {100: 2.0, 200: 4.0, 400: 30.0})
    slow = _configuration("B", {100: 6.0, 200: 40.0, 400: 90.0}, saturated={400})
    table = tables.capacity_within(_capacities(fast, slow))
    [row] = table.data.to_dict("records")
    assert (row["by"], row["a"], row["b"], row["capacity_a_tps"], row["capacity_b_tps"]) == ("variant", "A", "B", 200, 100)
    assert (row["verdict"], row["ratio"], row["ci_low"], row["ci_high"]) == (stats.DIFFERS, 2.0, 1.0, 4.0)
    assert (row["sure_a"], row["sure_b"]) == ("≥ 200 and < 400", "≥ 100 and < 200")
    assert table.display["A ÷ B"].iloc[0] == "2.00 (1.00–4.00)"
    same = tables.capacity_within(_capacities(fast, _configuration("B", {100: 2.0, 200: 4.0, 400: 30.0})))
    assert same.data["verdict"].tolist() == [stats.SAME]
    assert tables.capacity_within(_capacities(fast)) is None


def test_compare_between_runs_uses_each_hosts_floor_and_gives_no_verdict_without_one() -> None:
    run_a = _capacities(_configuration("A", {50: 2.0, 100: 4.0, 200: 6.0}))
    run_b = _capacities(_configuration("A", {50: 8.0, 100: 30.0, 200: 90.0}, saturated={200}))
    floors = {("db1", "oltp", "mariadb 10.11", "plain"): _floor(0.05),
              ("db1", "oltp", "mysql 9.7", "plain"): _floor(0.5)}  # another server's floor on the same device
    [row] = tables.capacity_between(run_a, run_b, "as-is", "slowed", floors, floors).data.to_dict("records")
    assert (row["by"], row["a"], row["b"], row["verdict"], row["interval_from"]) == (
        "run", "as-is", "slowed", stats.DIFFERS, stats.FROM_DRIFT)
    assert row["ci_low"] == pytest.approx(200 / 100 / math.exp(capacity.run_drift(_floor(0.05), _floor(0.05))))
    [row] = tables.capacity_between(run_a, run_b, "as-is", "slowed", {}, {}).data.to_dict("records")
    assert row["verdict"] == stats.DRIFT_UNKNOWN
    assert tables.capacity_between(run_a, None, "as-is", "none", {}, {}) is None


def test_a_configuration_below_every_rate_shows_no_capacity_and_the_table_keeps_whole_rates() -> None:
    fast = _configuration("A", {100: 2.0, 200: 4.0})
    below = _configuration("B", {100: 40.0, 200: 90.0})
    table = tables.capacity_within(_capacities(fast, below))
    assert table.data.to_csv(index=False).splitlines()[1] == "db1,xfs,oltp,64M,4,variant,A,B,200,,≥ 200,< 100,,2.0,inf,differs,trials"
    assert (table.display["capacity_a_tps"].iloc[0], table.display["capacity_b_tps"].iloc[0]) == ("200", "–")
    assert table.data["verdict"].iloc[0] == stats.DIFFERS and table.display["A ÷ B"].iloc[0] == "– (2.00–∞)"


def test_between_runs_a_plain_configuration_is_matched_with_the_plain_one_only() -> None:
    # Run B ran the plain device and an md-raid0 beside it; run A the plain device alone (its table
    # has no layout column). A's plain is B's plain, never B's array.
    plain = {50: 2.0, 100: 4.0, 200: 8.0}
    run_a = _capacities(_configuration("A", plain))
    run_b = _capacities(_configuration("A", plain), _configuration("A", {50: 30.0, 100: 40.0, 200: 90.0},
                                                                    storage="md-raid0"))
    assert "layout" not in run_a.data and "layout" in run_b.data
    floors = {("db1", "oltp", "mariadb 10.11", "plain"): _floor(0.05)}
    for a, b in ((run_a, run_b), (run_b, run_a)):
        [row] = tables.capacity_between(a, b, "one", "other", floors, floors).data.to_dict("records")
        assert (row["layout"], row["members"], row["verdict"]) == ("plain", 1, stats.SAME), row


def test_compare_by_host_divides_two_hosts_capacities_within_both_hosts_drift() -> None:
    # Device A ÷ device B in a fleet of a device a host: the same configuration on two hosts.
    fast = _configuration("A", {50: 2.0, 100: 4.0, 200: 6.0}, host="nvme")
    slow = _configuration("A", {50: 8.0, 100: 30.0, 200: 90.0}, saturated={200}, host="sata")
    floors = {(host, "oltp", "mariadb 10.11", "plain"): _floor(0.05) for host in ("nvme", "sata")}
    table = tables.capacity_hosts(_capacities(slow, fast), floors)
    [row] = table.data.to_dict("records")
    assert (row["by"], row["a"], row["b"], row["capacity_a_tps"], row["capacity_b_tps"]) == ("host", "nvme", "sata", 200, 50)
    assert (row["server_a"], row["server_b"]) == ("mariadb 10.11", "mariadb 10.11")
    columns = list(table.display.columns)
    assert columns[-2:] == ["A ÷ B", "verdict"] and columns.index("server_a") == columns.index("b") + 1
    assert (row["verdict"], row["interval_from"]) == (stats.DIFFERS, stats.FROM_DRIFT)
    assert row["ci_low"] == pytest.approx(200 / 100 / math.exp(capacity.run_drift(_floor(0.05), _floor(0.05))))
    assert "host" not in table.data and table.title == "Capacity at p99 ≤ 10 ms, host A ÷ host B"
    [row] = tables.capacity_hosts(_capacities(slow, fast), {}).data.to_dict("records")
    assert row["verdict"] == stats.DRIFT_UNKNOWN  # a host's drift unknown: no verdict
    same = _configuration("A", {50: 2.0, 100: 4.0, 200: 6.0}, host="nvme2")
    [row] = tables.capacity_hosts(_capacities(fast, same), {**floors, ("nvme2", "oltp", "mariadb 10.11", "plain"):
                                                           _floor(0.05)}).data.to_dict("records")
    assert row["verdict"] == stats.SAME
    assert tables.capacity_hosts(_capacities(fast), floors) is None
    assert tables.capacity_hosts(None, floors) is None


def _fleet(*configurations: tuple[pd.DataFrame, dict]) -> tuple[tables.Table | None, dict]:
    cells = pd.concat([frame for frame, _ in configurations])
    histograms = {trial: h for _, hs in configurations for trial, h in hs.items()}
    return tables.fixed_rate(cells, histograms, fleet=True), histograms


def test_like_hosts_trials_of_a_configuration_are_one_distribution_of_all_their_events() -> None:
    from innomatrix_host import sysbench

    one = _configuration("A", {50: 2.0, 100: 4.0, 200: 30.0}, host="nvme1")
    two = _configuration("A", {50: 3.0, 100: 12.0, 200: 40.0}, host="nvme2")
    alone = _configuration("B", {50: 2.0}, host="nvme1")  # one host ran it: nothing to merge
    fleet, histograms = _fleet(one, two, alone)
    assert fleet.name == "fixed_rate_fleet" and "host" not in fleet.data
    assert list(fleet.data["rate"]) == [50, 100, 200] and set(fleet.data["variant"]) == {"A"}
    row = fleet.data.set_index("rate").loc[100]
    both = [h for trial, h in histograms.items() if "-rate100/" in trial and "/A/" in trial]
    assert len(both) == 6 and row["trials"] == 6 and row["hosts"] == "nvme1, nvme2"
    assert row["device_model"] == "SAMSUNG MZQL23T8HCLS"
    # every event of both hosts, counted once: the merge's percentile, never an average of the hosts'
    assert row["p99_ms"] == sysbench.histogram_percentile(sysbench.merge_histograms(both), 99)
    assert row["events"] == sum(n for h in both for _, n in h)
    assert bool(row["meets_sla"]) is False  # nvme2's 12 ms fills the merged tail: the fleet misses 100/s
    capacities = tables.capacity_at_sla(fleet)
    assert capacities.name == "capacity_at_sla_fleet"
    assert capacities.data[["capacity_tps", "hosts"]].to_dict("records") == [{"capacity_tps": 50, "hosts": "nvme1, nvme2"}]
    assert _fleet(one, alone)[0] is None


def test_a_fleet_merges_only_rates_every_like_host_ran_and_never_unlike_devices() -> None:
    one = _configuration("A", {50: 2.0, 100: 4.0, 200: 5.0}, host="nvme1")
    two = _configuration("A", {50: 3.0, 100: 4.0}, host="nvme2")  # its search never reached 200/s
    fleet, _ = _fleet(one, two)
    # 200/s met by nvme1 alone is no fleet's: a capacity of 200 would claim nvme2 carries it too
    assert list(fleet.data["rate"]) == [50, 100]
    assert any("200/s and every rate above it left out, nvme2 without an ok trial" in note for note in fleet.notes)
    capacities = tables.capacity_at_sla(fleet)
    assert capacities.data["capacity_tps"].tolist() == [100]
    assert any("200/s and every rate above it left out" in note for note in capacities.notes)  # said beside it too
    # a rate one host has no events at is a gap the capacity must not jump: nvme2 failed at 100/s,
    # so 200/s, met by both, is no fleet's capacity either (nvme2's own stops at 50)
    failed = _configuration("A", {50: 3.0, 100: 4.0, 200: 5.0}, host="nvme2")
    failed = (failed[0].assign(status=lambda f: f["status"].where(f["rate"] != 100, "failed")), failed[1])
    fleet, _ = _fleet(one, failed)
    assert list(fleet.data["rate"]) == [50]
    assert tables.capacity_at_sla(fleet).data["capacity_tps"].tolist() == [50]
    # three hosts, one of which ran only the lowest rate: the fleet of three, at that rate only
    three = _configuration("A", {50: 1.0}, host="nvme3")
    fleet, _ = _fleet(one, _configuration("A", {50: 3.0, 100: 4.0, 200: 5.0}, host="nvme2"), three)
    assert list(fleet.data["rate"]) == [50] and set(fleet.data["hosts"]) == {"nvme1, nvme2, nvme3"}
    # an unlike device is merged apart (each model its own hosts), and a host without a model never
    sata = _configuration("A", {50: 9.0, 100: 9.0}, host="sata1", model="INTEL SSDSC2KB480G8")
    unknown = _configuration("A", {50: 1.0, 100: 1.0}, host="old1", model="")
    fleet, _ = _fleet(one, two, sata, unknown)
    assert set(fleet.data["hosts"]) == {"nvme1, nvme2"}
    notes = " ".join(fleet.notes)
    assert "old1 left out, no device model recorded" in notes and "unlike devices" in notes
    # sata1, the one host of its model, is not said to be merged
    assert ("the hosts of SAMSUNG MZQL23T8HCLS merged apart; sata1 (INTEL SSDSC2KB480G8) not merged, alone on "
            "its model") in notes, notes
    # nothing to merge, and why: a table of its notes alone, and no capacity from it
    alone, _ = _fleet(sata, unknown)
    assert "rate" not in alone.data and "old1 left out, no device model recorded" in " ".join(alone.data.iloc[:, 0])
    assert alone.data.equals(alone.display)  # the csv says why as the page does
    assert tables.capacity_at_sla(alone) is None
    # a host whose trials name two models (a disk swapped between passes) is left out whole
    swapped = _configuration("A", {50: 2.0, 100: 4.0}, host="nvme4")
    swapped = (swapped[0].assign(device_model=lambda f: f["device_model"].where(f["repeat"] != 3, "")), swapped[1])
    fleet, _ = _fleet(one, two, swapped)
    assert set(fleet.data["hosts"]) == {"nvme1, nvme2"}
    assert "nvme4 (none / SAMSUNG MZQL23T8HCLS) left out, its trials name more than one device model" in " ".join(fleet.notes)
    # a model missing from a frame (NaN) is no model: said, never dropped unsaid
    nan = (unknown[0].assign(device_model=None), unknown[1])
    assert "old1 left out, no device model recorded" in " ".join(_fleet(one, two, nan)[0].notes)
    # the same server is part of alike: another server's host is another configuration
    other = _configuration("A", {50: 2.0, 100: 4.0}, host="nvme3", server="mysql 9.7.4")
    assert _fleet(one, other)[0] is None

"""The capacity search (rates=auto): the rates it picks, found against configurations whose
capacity is known, and how it resumes, stops and fails, driven as the play drives it (a step, its
trials recorded, the next step) over an in-memory tree of trials."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from innomatrix import cli, plan, search
from trees import real_tiny
from innomatrix.search import Decision, Trial, next_rate

SLA = {"sla_percentile": 99.0, "sla_ms": 10.0, "steps": 6}
CTX = plan.context({"host": "db1", "memory_bytes": 8 << 30, "device_id": "loop:/x", "server_flavor": "mariadb",
                    "server_version": "10.11", "driver_version": "sysbench 1.0.20"}, "my.cnf.d")


def searched(repeats: int = 1) -> dict[str, Any]:
    knobs = {"filesystems": "xfs", "variants": "A", "bp_sizes": "64M", "workloads": "oltp", "threads": 4,
             "rates": "auto", "repeats": repeats, "warmup": 2, "warmup_max": 2, "duration": 10, "duration_max": 10,
             "oltp_tables": 1, "oltp_table_size": 1000, "tpcc_warehouses": 1, "tpcc_load_jobs": 1,
             "fileio_tests": "seqrd", "fileio_total_size": "1G", "fileio_block_size": "16K", "fileio_threads_max": 4,
             "fileio_block_sizes": "16K", "fileio_table_threads": 1, "fileio_step_duration": 60}
    return plan.searches(plan.expand(knobs, CTX, {})["cells"])[0]


def p99_histogram(p99_ms: float, events: int = 1000) -> list[tuple[float, int]]:
    """1000 events whose p99 (sysbench's rule: the bucket holding event round(0.99 n)) is `p99_ms`."""
    return [(0.5, 989), (p99_ms, 11)] if p99_ms > 0.5 else [(p99_ms, events)]


def capacity_of(capacity: float, closed_tps: float = 1000.0) -> Callable[[dict[str, Any]], Trial]:
    """A configuration whose p99 stays 2 ms up to `capacity` and is 40 ms beyond it; it saturates
    beyond its closed-loop throughput."""
    def measure(cell: dict[str, Any]) -> Trial:
        if cell["rate"] == 0:
            return Trial(True, throughput=closed_tps)
        return Trial(True, throughput=float(cell["rate"]), saturated=cell["rate"] >= closed_tps,
                     histogram=p99_histogram(2.0 if cell["rate"] <= capacity else 40.0))
    return measure


class Tree:
    """The trials the play has recorded, by cell path, and every cell it ran."""

    def __init__(self) -> None:
        self.trials: dict[str, Trial] = {}
        self.ran: list[str] = []

    def read(self, cell: dict[str, Any]) -> Trial | None:
        return self.trials.get(cell["path"])

    def play(self, config: dict[str, Any], measure: Callable[[dict[str, Any]], Trial], steps: int = 6,
             force: bool = False) -> dict[str, Any]:
        """One pass as roles/matrix/tasks/search.yml runs it: the closed-loop cells, then steps."""
        tried = [cell["path"] for cell in config["cells"]]
        for cell in config["cells"]:
            if force or cell["path"] not in self.trials:
                self.record(cell, measure)
        for _ in range(steps):
            found = search.step(config, {**SLA, "steps": steps}, self.read, tried, force)
            for cell in found["cells"]:
                self.record(cell, measure)
                tried.append(cell["path"])
            if not found["cells"]:
                return found
        return search.step(config, {**SLA, "steps": steps}, self.read, tried, force)

    def record(self, cell: dict[str, Any], measure: Callable[[dict[str, Any]], Trial]) -> None:
        self.trials[cell["path"]] = measure(cell)
        self.ran.append(cell["id"])


def rates_run(tree: Tree) -> list[int]:
    return [int(cell_id.split("-rate")[1].split("/")[0]) for cell_id in tree.ran if "-rate" in cell_id]


def test_each_step_halves_the_bracket_and_stops_within_a_tenth_of_its_low_end() -> None:
    tree = Tree()
    found = tree.play(searched(), capacity_of(300), steps=20)
    assert rates_run(tree) == [500, 250, 375, 312, 281, 296]
    assert found["cells"] == [] and not found["open"]
    assert found["line"].endswith("stopped: resolved to within 10%: met at 296/s, missed at 312/s")
    assert found["line"].startswith("db1/xfs/oltp/A/bp-64M/t4: closed-loop 1000.0 tps; 500/s missed (p99 40 ms); "
                                    "250/s met (p99 2 ms);")


@pytest.mark.parametrize("capacity", [1, 7, 90, 333, 640, 999, 1200])
def test_the_bracket_holds_the_known_capacity(capacity: int) -> None:
    tree = Tree()
    line = tree.play(searched(), capacity_of(capacity), steps=20)["line"]
    judged = {rate: rate <= capacity for rate in rates_run(tree)}
    met = max((rate for rate, ok in judged.items() if ok), default=0)
    missed = min((rate for rate, ok in judged.items() if not ok), default=None)
    assert met <= capacity and (missed is None or capacity < missed)
    if missed is not None and met:
        assert missed - met <= max(1, 0.1 * met)
    assert len(judged) <= 12  # halving from 1000/s to 10 % needs no more
    if capacity >= 1000:  # its threads cannot keep up with arrivals at their closed-loop throughput
        assert line.endswith("met at 937/s, missed at 1000/s")
    if capacity == 1:
        assert "met at 1/s, missed at 2/s" in line


def test_the_next_rate_rules() -> None:
    assert next_rate(1000.4, {}, 6) == Decision(500)
    assert next_rate(1.2, {}, 6) == Decision(1)
    assert next_rate(1e15, {}, 6) == Decision(plan.MAX_RATE)  # an absurd throughput recorded: no absurd rate
    assert next_rate(1e15, {plan.MAX_RATE: True}, 6).rate is None
    assert next_rate(1000, {500: True}, 6) == Decision(1000)  # doubling, up to the closed-loop throughput
    assert next_rate(1000, {400: True}, 6) == Decision(800)
    assert next_rate(1000, {500: False}, 6) == Decision(250)
    assert next_rate(1000, {500: True, 1000: True}, 6) == Decision(
        None, "met up to the closed-loop throughput (1000/s): capacity ≥ 1000/s")
    assert next_rate(1000, {1: False}, 6) == Decision(None, "missed at 1/s: capacity below 1 transaction a second")
    # A rate met above the lowest one missed is noise: the low end lies below the high one.
    assert next_rate(1000, {500: False, 250: True, 375: False, 450: True}, 6) == Decision(312)
    assert next_rate(1000, {500: False, 250: True}, 2) == Decision(
        None, "2 step(s) run, as many as search_steps allows: met at 250/s, missed at 500/s")


def test_a_search_stopped_half_way_resumes_from_its_finished_steps() -> None:
    tree, measure = Tree(), capacity_of(300)
    first = tree.play(searched(), measure, steps=2)
    assert rates_run(tree) == [500, 250]
    assert first["line"].endswith("stopped: 2 step(s) run, as many as search_steps allows: met at 250/s, missed at 500/s")
    assert not first["open"]
    # More steps asked: the finished ones are read, not run again; nothing closed-loop is rerun.
    ran_before = len(tree.ran)
    assert search.step(searched(), {**SLA, "steps": 4}, tree.read)["open"]
    tree.play(searched(), measure, steps=4)
    assert rates_run(tree)[2:] == [375, 312] and len(tree.ran) == ran_before + 2


def test_every_repeat_runs_a_step_and_a_repeat_left_unrun_is_run_on_resume() -> None:
    tree, measure = Tree(), capacity_of(300)
    config = searched(repeats=3)
    tree.play(config, measure, steps=1)
    assert sorted(cell_id for cell_id in tree.ran if "rate" in cell_id) == [
        "xfs/oltp/A/bp-64M/t4-rate500/r1", "xfs/oltp/A/bp-64M/t4-rate500/r2", "xfs/oltp/A/bp-64M/t4-rate500/r3"]
    del tree.trials["db1/xfs/oltp/A/bp-64M/t4-rate500/r2"]  # an interrupted step
    found = search.step(config, {**SLA, "steps": 2}, tree.read)
    assert [cell["id"] for cell in found["cells"]] == ["xfs/oltp/A/bp-64M/t4-rate500/r2"]


def test_a_step_that_failed_in_this_pass_stops_the_search_and_one_that_failed_before_runs_again() -> None:
    tree, measure = Tree(), capacity_of(300)

    def failing(cell: dict[str, Any]) -> Trial:
        return Trial(False, f"{cell['path']}: failed") if cell["rate"] == 250 else measure(cell)

    found = tree.play(searched(), failing)
    assert rates_run(tree) == [500, 250]
    assert found["failed"] == "db1/xfs/oltp/A/bp-64M/t4: 250/s failed (db1/xfs/oltp/A/bp-64M/t4-rate250/r1: failed)"
    assert found["line"].endswith("stopped: 250/s failed (db1/xfs/oltp/A/bp-64M/t4-rate250/r1: failed)")
    # The next run (nothing tried yet) runs it again, as any failed cell.
    again = search.step(searched(), SLA, tree.read)
    assert [cell["rate"] for cell in again["cells"]] == [250] and again["open"]


def test_a_step_without_a_histogram_stops_the_search_and_a_saturated_one_needs_none() -> None:
    tree = Tree()

    def no_histogram(cell: dict[str, Any]) -> Trial:
        if cell["rate"] == 0:
            return Trial(True, throughput=100.0)
        return Trial(True, throughput=10.0, saturated=cell["rate"] > 60)

    found = tree.play(searched(), no_histogram)
    assert rates_run(tree) == [50]
    assert found["failed"] == "db1/xfs/oltp/A/bp-64M/t4: 50/s failed (db1/xfs/oltp/A/bp-64M/t4-rate50/r1: kept no latency histogram)"
    # From an earlier run it is measured again, not a failure every rerun.
    assert [cell["rate"] for cell in search.step(searched(), SLA, tree.read)["cells"]] == [50]
    tree = Tree()
    found = tree.play(searched(), lambda cell: Trial(True, throughput=100.0, saturated=cell["rate"] > 0))
    assert rates_run(tree) == [50, 25, 12, 6, 3, 1]
    assert "50/s missed (no events, saturated)" in found["line"]


def test_a_configuration_waits_for_its_closed_loop_trials_and_does_not_search_when_they_failed() -> None:
    config = searched()
    assert search.step(config, SLA, lambda cell: None) == {
        "cells": [], "open": True,
        "line": "db1/xfs/oltp/A/bp-64M/t4: no capacity search yet: its closed-loop trials are not all ok"}
    failed = search.step(config, SLA, lambda cell: Trial(False, "failed"), tried=[config["cells"][0]["path"]])
    assert (failed["open"], failed["cells"]) == (False, [])
    assert failed["line"].endswith("no capacity search run: its closed-loop trials are not all ok")


def test_force_measures_every_step_again_once() -> None:
    tree, measure = Tree(), capacity_of(300)
    tree.play(searched(), measure, steps=3)
    before = rates_run(tree)
    tree.play(searched(), measure, steps=3, force=True)
    assert rates_run(tree) == before + before


def _plan_json(run: Path, host: str, search_spec: Any) -> None:
    (run / host).mkdir(parents=True, exist_ok=True)
    (run / host / "plan.json").write_text(json.dumps({"schema": 1, "spec": {"search": search_spec}, "cells": []}))


def test_the_sla_a_run_searched_at_is_the_one_its_plans_agree_on(tmp_path) -> None:
    run = tmp_path / "run"
    assert search.recorded_sla(run) == (None, "")
    _plan_json(run, "db1", {"sla_percentile": 95, "sla_ms": 50, "steps": 6})
    _plan_json(run, "db2", None)  # listed rates: no search, no say
    assert search.recorded_sla(run) == ((95.0, 50.0), "")
    _plan_json(run, "db3", {"sla_percentile": 99, "sla_ms": 50, "steps": 6})
    assert search.recorded_sla(run) == (None, "the run's capacity searches aimed at different SLAs: p95 ≤ 50 ms, "
                                              "p99 ≤ 50 ms")
    (run / "db3" / "plan.json").unlink()
    (run / "db3" / "plan.json").symlink_to("/etc/passwd")
    sla, note = search.recorded_sla(run)  # nothing outside the tree is read
    assert sla is None and note.startswith(f"{run / 'db3' / 'plan.json'}: a symlink")
    for absurd in ['"1' + '0' * 400 + '"', "1" + "0" * 400, '"inf"', "true", "-3", "100", "null", '"nan"']:
        (run / "db3" / "plan.json").unlink()
        (run / "db3" / "plan.json").write_text('{"spec": {"search": {"sla_percentile": %s, "sla_ms": 5}}}' % absurd)
        assert search.recorded_sla(run) == (None, f"{run / 'db3' / 'plan.json'}: its search's SLA is not a percentile "
                                                  "in (0, 100) and a limit in (0, 1e9] ms"), absurd
    (run / "db3" / "plan.json").write_text('{"spec": {"search": {"sla_percentile": 95, "sla_ms": ' + "9" * 400 + "}}}")
    assert search.recorded_sla(run)[0] is None


def test_the_report_judges_capacity_by_the_sla_the_search_aimed_at(tmp_path, capsys) -> None:
    tiny = real_tiny(tmp_path)
    host = next(path.name for path in tiny.iterdir() if path.is_dir() and not path.name.startswith("."))
    _plan_json(tiny, host, {"sla_percentile": 95, "sla_ms": 50, "steps": 6})
    assert cli.main(["report", str(tiny)]) == 0
    assert ("innomatrix: SLA: p95 ≤ 50 ms (percentile and limit as the capacity search aimed at, from plan.json)\n"
            in capsys.readouterr().err)
    assert cli.main(["report", str(tiny), "--sla-ms", "20"]) == 0  # one given: the other is the search's
    assert "innomatrix: SLA: p95 ≤ 20 ms (percentile as the capacity search aimed at" in capsys.readouterr().err
    assert cli.main(["report", str(tiny), "--sla-ms", "20", "--sla-percentile", "99"]) == 0
    assert "SLA:" not in capsys.readouterr().err  # both given: nothing read, nothing said
    (tiny / host / "plan.json").write_text("{")
    assert cli.main(["report", str(tiny)]) == 0  # a damaged plan.json: said, and the defaults stand
    err = capsys.readouterr().err
    assert f"innomatrix: SLA: {tiny / host / 'plan.json'}: cannot be read as JSON" in err


def test_a_closed_loop_trial_ok_in_the_tree_but_unreadable_stops_the_search_and_says_why() -> None:
    # The plan counts it done: an open search would plan a pass (mkfs, a load) that runs nothing, every rerun.
    found = search.step(searched(), SLA, lambda cell: Trial(False, "…/t4/r1/vmstat.log:23: cut short", unreadable=True))
    assert (found["cells"], found["open"]) == ([], False)
    assert found["failed"] == "db1/xfs/oltp/A/bp-64M/t4: …/t4/r1/vmstat.log:23: cut short"
    assert found["line"].endswith("no capacity search: a closed-loop trial cannot be read (…/t4/r1/vmstat.log:23: cut short)")


def test_runs_that_searched_at_different_slas_leave_the_defaults_and_say_so(tmp_path, capsys) -> None:
    a, b = real_tiny(tmp_path / "a"), real_tiny(tmp_path / "b")
    _plan_json(a, "localhost", {"sla_percentile": 95, "sla_ms": 50, "steps": 6})
    assert cli.main(["compare", str(a), str(b)]) == 0
    err = capsys.readouterr().err
    assert (f"innomatrix: SLA: the runs' capacity searches aimed at different SLAs ({a}: p95 ≤ 50 ms, {b}: none); "
            "the report's defaults stand where no --sla-* is given\n") in err
    (a / "localhost" / "plan.json").unlink()
    (a / "localhost" / "plan.json").mkdir()  # a directory where plan.json should be: said, never a traceback
    assert cli.main(["report", str(a)]) == 0
    assert f"innomatrix: SLA: {a / 'localhost' / 'plan.json'}: not a regular file" in capsys.readouterr().err
